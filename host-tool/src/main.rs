//! `latscope-host`: records, decodes, reports and plots the frame stream of
//! the `latscope` latency measurement program.
//!
//! Exit status: 0 on success; 1 when a run failed or could not be read in
//! full (no bye, an error ending, self-check defects, not a latscope stream,
//! another protocol version, an I/O error); 2 for bad usage.
#![forbid(unsafe_code)]

mod aggregate;
mod compare;
mod error;
mod input;
mod plot;
mod record;
mod report;
mod session;
mod simulate;
mod summary;
mod synth;

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use error::{Error, Result};
use input::{pump, Source};
use report::{Decoded, Format, Options};
use session::Session;

const EXIT_HELP: &str = "Exit status: 0 success; 1 a failed or incomplete run \
(no bye frame, an error ending, self-check defects), or an input that is not \
a readable latscope stream; 2 bad usage.";

/// Records, decodes, reports and plots latscope's frame stream.
#[derive(Parser, Debug)]
#[command(name = "latscope-host", version, about, after_help = EXIT_HELP)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Record streams byte for byte, with a live view and optional metrics.
    #[command(after_help = EXIT_HELP)]
    Record(RecordArgs),
    /// Summarise recordings (or a live stream on stdin) and draw plots.
    #[command(after_help = EXIT_HELP)]
    Report(ReportArgs),
    /// Compare two recordings: quantiles side by side with ratios.
    #[command(after_help = EXIT_HELP)]
    Compare(CompareArgs),
    /// Write a synthetic recording (for benchmarks and tests).
    #[command(hide = true)]
    Synth(SynthArgs),
    /// Stream many synthetic targets into a listening recorder (for the
    /// fleet benchmark).
    #[command(hide = true)]
    Simulate(SimulateArgs),
}

#[derive(Args, Debug)]
struct SimulateArgs {
    /// The recorder's ADDR:PORT.
    addr: String,
    /// Simulated targets.
    #[arg(long, default_value_t = 16)]
    targets: u32,
    /// Reports (one per second) per run.
    #[arg(long, default_value_t = 60)]
    reports: u32,
    /// Board names are PREFIX-N.
    #[arg(long, default_value = "sim")]
    prefix: String,
    /// Where the exact figures of every run go (JSON).
    #[arg(long, value_name = "FILE")]
    truth: PathBuf,
}

#[derive(Args, Debug)]
struct SerialArgs {
    /// Read from this serial device (raw, 8N1) instead of a file.
    #[arg(long, value_name = "DEV")]
    serial: Option<String>,
    /// Baud rate of the serial device.
    #[arg(long, value_name = "N", default_value_t = 115_200, requires = "serial")]
    baud: u32,
}

#[derive(Args, Debug)]
struct RecordArgs {
    /// The stream to record: `-` for stdin (the default) or a file.
    #[arg(value_name = "INPUT", conflicts_with_all = ["serial", "listen"])]
    input: Option<String>,
    #[command(flatten)]
    serial: SerialArgs,
    /// Accept targets over TCP (`latscope --stream tcp:HOST:PORT`) on
    /// [ADDR:]PORT; ADDR defaults to 127.0.0.1. Every run gets one
    /// recording, NAME-TIME-RUNID.lsr, that it continues in when its
    /// target reconnects (also to a restarted recorder with the same
    /// --out-dir).
    #[arg(long, value_name = "[ADDR:]PORT", conflicts_with = "serial")]
    listen: Option<String>,
    /// The recording file for a single stream (default: named after the
    /// target, in --out-dir).
    #[arg(short, long, value_name = "FILE", conflicts_with = "listen")]
    output: Option<PathBuf>,
    /// Directory for recordings named after their targets.
    #[arg(long, value_name = "DIR", default_value = ".")]
    out_dir: PathBuf,
    /// Serve OpenMetrics text at http://ADDR:PORT/metrics (per target and
    /// thread: cycles, max, p99, p99.9, missed, faults, link errors).
    #[arg(long, value_name = "ADDR:PORT")]
    metrics: Option<String>,
    /// With --listen: exit after N runs have ended, with a bye or timed
    /// out (default: run until SIGINT or SIGTERM). Connections are not
    /// counted.
    #[arg(long, value_name = "N", requires = "listen")]
    exit_after: Option<u64>,
    /// With --listen: most connections open at once; more are closed at
    /// once and counted.
    #[arg(long, value_name = "N", default_value_t = record::listen::DEFAULT_MAX_CONNECTIONS,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000), requires = "listen")]
    max_connections: u64,
    /// With --listen: accept targets only from this network (ADDR or
    /// ADDR/PREFIX, IPv4 or IPv6); repeat for more. Default: any.
    #[arg(long, value_name = "NET", value_parser = parse_net, requires = "listen")]
    allow: Vec<record::allow::Net>,
    /// With --listen: close a connection that sends no hello within SECS;
    /// it leaves no recording.
    #[arg(long, value_name = "SECS", default_value_t = 10.0, value_parser = parse_secs)]
    hello_timeout: f64,
    /// With --listen: close a connection, and end its run as timed out,
    /// after SECS without a frame.
    #[arg(long, value_name = "SECS", default_value_t = 60.0, value_parser = parse_secs)]
    idle_timeout: f64,
    /// How long an ended run's metrics stay on /metrics after its final
    /// report (at least two scrape intervals, so the scraper sees it).
    #[arg(long, value_name = "SECS", default_value_t = 120.0, value_parser = parse_secs)]
    linger: f64,
    /// No live view and no final report on stdout.
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Args, Debug)]
struct ReportArgs {
    /// Recordings to report on; `-` reads stdin (e.g. `latscope --stream - |
    /// latscope-host report -`).
    #[arg(value_name = "RECORDING", required_unless_present = "serial")]
    inputs: Vec<String>,
    #[command(flatten)]
    serial: SerialArgs,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "text")]
    format: Format,
    /// Rows of the cyclictest histogram text (µs); default: the run's `-h`,
    /// else the whole 1 µs range.
    #[arg(long, value_name = "US")]
    hist_us: Option<u32>,
    /// cyclictest `-H`: add a column summing all threads.
    #[arg(long)]
    histofall: bool,
    /// Also draw the histogram, tail and max-over-time plots (.svg or .png).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// Write the report to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct CompareArgs {
    /// The "before" recording.
    a: String,
    /// The "after" recording.
    b: String,
    /// Also draw both histograms overlaid (.svg or .png).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct SynthArgs {
    /// Measuring threads.
    #[arg(long, default_value_t = 2)]
    threads: u16,
    /// Report intervals.
    #[arg(long, default_value_t = 60)]
    reports: u32,
    /// Samples per thread and report.
    #[arg(long, default_value_t = 1000)]
    samples: u32,
    /// Output file (default stdout).
    #[arg(short, long)]
    output: Option<PathBuf>,
}

fn parse_net(s: &str) -> std::result::Result<record::allow::Net, String> {
    record::allow::Net::parse(s)
}

fn parse_secs(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 1e7 => Ok(v),
        _ => Err(format!("{s}: a number of seconds above 0 is needed")),
    }
}

fn decode(source: &Source) -> Result<Decoded> {
    let mut r = source.open()?;
    let mut s = Session::new(source.name());
    let endless = source.endless();
    pump(&mut *r, |bytes| {
        s.feed(bytes);
        Ok(!(endless && s.agg.current().is_some_and(|r| r.bye.is_some())))
    })
    .map_err(|e| Error::Input {
        what: source.name(),
        source: e,
    })?;
    s.finish();
    Ok(Decoded {
        session: s,
        end: source.end_time(),
    })
}

fn write_out(path: Option<&PathBuf>, text: &str) -> Result<()> {
    match path {
        Some(p) => std::fs::write(p, text).map_err(|source| Error::Output {
            what: p.clone(),
            source,
        }),
        None => {
            let mut o = io::stdout().lock();
            o.write_all(text.as_bytes())
                .and_then(|_| o.flush())
                .or_else(|e| {
                    // A closed pipe (`| head`) is not an error of ours.
                    if e.kind() == io::ErrorKind::BrokenPipe {
                        Ok(())
                    } else {
                        Err(e)
                    }
                })
                .map_err(|source| Error::Output {
                    what: PathBuf::from("stdout"),
                    source,
                })
        }
    }
}

fn report(a: ReportArgs) -> Result<u8> {
    let sources: Vec<Source> = match &a.serial.serial {
        Some(dev) => vec![Source::Serial {
            device: dev.clone(),
            baud: a.serial.baud,
        }],
        None => a.inputs.iter().map(|i| Source::from_arg(i)).collect(),
    };
    if sources
        .iter()
        .filter(|s| matches!(s, Source::Stdin))
        .count()
        > 1
    {
        return Err(Error::Usage("`-` (stdin) can be given only once".into()));
    }
    let mut code = 0u8;
    let mut decoded = Vec::new();
    for s in &sources {
        let d = match decode(s) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("latscope-host: {e}");
                code = 1;
                continue;
            }
        };
        if let Some(e) = d.session.fatal() {
            eprintln!("latscope-host: {e}");
            code = 1;
            continue;
        }
        if a.format != Format::Text {
            for w in d.session.warnings() {
                eprintln!("latscope-host: warning: {w}");
            }
        }
        if d.session.agg.runs.iter().any(|r| !report::run_ok(r)) {
            code = 1;
        }
        decoded.push(d);
    }
    if decoded.is_empty() {
        return Ok(1);
    }
    let text = report::render(
        &decoded,
        Options {
            format: a.format,
            hist_us: a.hist_us,
            histofall: a.histofall,
        },
    )?;
    write_out(a.output.as_ref(), &text)?;
    if let Some(file) = &a.plot {
        let mut series = Vec::new();
        let mut title = Vec::new();
        for d in &decoded {
            for run in &d.session.agg.runs {
                let prefix = if decoded.len() > 1 || d.session.agg.runs.len() > 1 {
                    format!("{} ", run.hostname())
                } else {
                    String::new()
                };
                series.extend(plot::run_series(run, &prefix));
                title.push(format!(
                    "{} ({}, {})",
                    run.hostname(),
                    run.hello.target.arch,
                    run.hello.target.kernel
                ));
            }
        }
        plot::draw(
            file,
            &format!("latscope: {}", title.join(", ")),
            &series,
            true,
        )?;
        eprintln!("latscope-host: wrote {}", file.display());
    }
    Ok(code)
}

fn compare(a: CompareArgs) -> Result<u8> {
    let da = decode(&Source::from_arg(&a.a))?;
    let db = decode(&Source::from_arg(&a.b))?;
    for d in [&da, &db] {
        if let Some(e) = d.session.fatal() {
            return Err(e);
        }
        for w in d.session.warnings() {
            eprintln!("latscope-host: warning: {w}");
        }
    }
    let (Some(ra), Some(rb)) = (da.session.agg.runs.last(), db.session.agg.runs.last()) else {
        return Ok(1);
    };
    write_out(None, &compare::render(&a.a, ra, &a.b, rb))?;
    if let Some(file) = &a.plot {
        let series = [
            plot::run_all(ra, &format!("A: {}", ra.hostname())),
            plot::run_all(rb, &format!("B: {}", rb.hostname())),
        ];
        plot::draw(file, "latscope: A vs B, all CPUs", &series, false)?;
        eprintln!("latscope-host: wrote {}", file.display());
    }
    Ok(u8::from(!(report::run_ok(ra) && report::run_ok(rb))))
}

fn synth(a: SynthArgs) -> Result<u8> {
    let cfg = synth::SynthConfig {
        threads: a.threads,
        reports: a.reports,
        samples_per_report: a.samples,
        ..synth::SynthConfig::default()
    };
    let mut s = synth::Synth::new(cfg);
    let what = a.output.clone().unwrap_or_else(|| PathBuf::from("stdout"));
    let mut out: Box<dyn Write> = match &a.output {
        Some(p) => Box::new(io::BufWriter::new(std::fs::File::create(p).map_err(
            |source| Error::Output {
                what: p.clone(),
                source,
            },
        )?)),
        None => Box::new(io::BufWriter::new(io::stdout().lock())),
    };
    let mut failed = None;
    s.run(&mut |b| {
        if failed.is_none() {
            if let Err(e) = out.write_all(b) {
                failed = Some(e);
            }
        }
    });
    if let Some(source) = failed.or_else(|| out.flush().err()) {
        return Err(Error::Output { what, source });
    }
    Ok(0)
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return ExitCode::from(
                    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                        2
                    } else {
                        0
                    },
                );
            }
            // One line: clap's first line, without the usage block.
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("error: bad usage");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("latscope-host: {first} (see latscope-host --help)");
            return ExitCode::from(2);
        }
    };
    let res = match cli.cmd {
        Cmd::Record(a) => record::run(record::Plan {
            source: match (&a.serial.serial, &a.input) {
                (Some(dev), _) => Some(Source::Serial {
                    device: dev.clone(),
                    baud: a.serial.baud,
                }),
                (None, Some(i)) => Some(Source::from_arg(i)),
                (None, None) => None,
            },
            listen: a.listen,
            output: a.output,
            out_dir: a.out_dir,
            metrics: a.metrics,
            exit_after: a.exit_after,
            fleet: record::listen::Fleetwide {
                limits: record::conn::Limits {
                    hello: Duration::from_secs_f64(a.hello_timeout),
                    idle: Duration::from_secs_f64(a.idle_timeout),
                },
                linger: Duration::from_secs_f64(a.linger),
                max_connections: a.max_connections,
                allow: a.allow,
            },
            quiet: a.quiet,
        }),
        Cmd::Report(a) => report(a),
        Cmd::Compare(a) => compare(a),
        Cmd::Synth(a) => synth(a),
        Cmd::Simulate(a) => simulate::run(&simulate::SimPlan {
            addr: a.addr,
            targets: a.targets,
            reports: a.reports,
            prefix: a.prefix,
            truth: a.truth,
        }),
    };
    match res {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("latscope-host: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
