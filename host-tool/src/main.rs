//! `latscope-host`: records, decodes, reports and plots the frame stream of
//! the `latscope` latency measurement program.
//!
//! Exit status: 0 on success; 1 when a run failed or could not be read in
//! full (no bye, an error ending, self-check defects, a lost hello, not a
//! latscope stream, another protocol version, an I/O error); 2 for bad
//! usage; 4 when the work was done but a write to standard output or
//! standard error failed (see [`console`]).
#![forbid(unsafe_code)]

use latscope_host::{
    compare, console, error, input, plot, record, report, session, simulate, synth,
};

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use error::{Error, Result};
use input::{pump, Source};
use report::{Decoded, Format, Options};
use session::Session;

const EXIT_HELP: &str = "Exit status: 0 success; 1 a failed or incomplete run \
(no bye frame, an error ending, self-check defects, a lost hello), or an input \
that is not a readable latscope stream; 2 bad usage; 4 the work was done \
(recordings, -o files, plots are complete) but a write to standard output or \
standard error failed. SIGPIPE is ignored: a closed pipe is such a failed write.";

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
    #[arg(long, value_name = "[ADDR:]PORT", conflicts_with = "serial", value_parser = listen_arg)]
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
    #[arg(long, value_name = "ADDR:PORT", value_parser = socket_arg)]
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

/// `--listen [ADDR:]PORT`: a port alone listens on 127.0.0.1.
fn listen_arg(v: &str) -> std::result::Result<String, String> {
    if v.parse::<u16>().is_ok() {
        return Ok(format!("127.0.0.1:{v}"));
    }
    socket_arg(v)
        .map_err(|_| format!("{v} is not [ADDR:]PORT (e.g. 5555 or 0.0.0.0:5555; an IP literal)"))
}

/// An `ADDR:PORT` with an IP literal.
fn socket_arg(v: &str) -> std::result::Result<String, String> {
    v.parse::<std::net::SocketAddr>()
        .map(|_| v.to_string())
        .map_err(|_| {
            format!("{v} is not ADDR:PORT (an IP literal and a port, e.g. 127.0.0.1:9464)")
        })
}

/// An output file, created before the inputs are read (a bad path stops
/// the command at once, not after a long input).
fn create_out(path: &Path) -> Result<std::fs::File> {
    std::fs::File::create(path).map_err(|source| Error::Output {
        what: path.to_path_buf(),
        source,
    })
}

/// The report's text to `file` (created by [`create_out`]) or standard
/// output (a failure there is counted by [`console`]).
fn write_out(file: Option<(&PathBuf, std::fs::File)>, text: &str) -> Result<()> {
    match file {
        Some((p, mut f)) => f
            .write_all(text.as_bytes())
            .map_err(|source| Error::Output {
                what: p.clone(),
                source,
            }),
        None => {
            console::Std::Out.write(text.as_bytes());
            Ok(())
        }
    }
}

/// The JSON report to `file` (created by [`create_out`]) or standard
/// output, written as it is serialised (a failure on standard output is
/// counted by [`console`]).
fn write_json(file: Option<(&PathBuf, std::fs::File)>, decoded: &[Decoded]) -> Result<()> {
    match file {
        Some((p, f)) => {
            let mut w = std::io::BufWriter::with_capacity(64 * 1024, f);
            report::write_json(decoded, &mut w)
                .and_then(|()| w.flush())
                .map_err(|source| Error::Output {
                    what: p.clone(),
                    source,
                })
        }
        None => {
            let mut w = std::io::BufWriter::with_capacity(64 * 1024, console::Stdout);
            // a failed write is counted by console::Stdout, once: what is
            // still buffered is dropped, not written again
            if report::write_json(decoded, &mut w)
                .and_then(|()| w.flush())
                .is_err()
            {
                drop(w.into_parts());
            }
            Ok(())
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
    // the outputs before the inputs: a bad path fails at once
    let out = match &a.output {
        Some(p) => Some((p, create_out(p)?)),
        None => None,
    };
    if let Some(file) = &a.plot {
        plot::check(file)?;
    }
    let (decoded, mut code) = decode_all(&sources, a.format);
    if decoded.is_empty() {
        return Ok(1);
    }
    if a.format == Format::Json {
        write_json(out, &decoded)?;
    } else {
        let text = report::render(
            &decoded,
            Options {
                format: a.format,
                hist_us: a.hist_us,
                histofall: a.histofall,
            },
        )?;
        write_out(out, &text)?;
    }
    if let Some(file) = &a.plot {
        plot_runs(file, &decoded)?;
    }
    if decoded
        .iter()
        .any(|d| d.session.agg.runs.iter().any(|r| !report::run_ok(r)))
    {
        code = 1;
    }
    Ok(code)
}

/// Decode every input; the readable ones, and 1 if any was not.
fn decode_all(sources: &[Source], format: Format) -> (Vec<Decoded>, u8) {
    let mut code = 0u8;
    let mut decoded = Vec::new();
    for s in sources {
        let d = match decode(s) {
            Ok(d) => d,
            Err(e) => {
                console::say(&e);
                code = 1;
                continue;
            }
        };
        if let Some(e) = d.session.fatal() {
            console::say(&e);
            code = 1;
            continue;
        }
        if format != Format::Text {
            for w in d.session.warnings() {
                console::warn(&w);
            }
        }
        decoded.push(d);
    }
    (decoded, code)
}

/// `report --plot`: every run of every input in one figure.
fn plot_runs(file: &Path, decoded: &[Decoded]) -> Result<()> {
    let mut series = Vec::new();
    let mut title = Vec::new();
    for d in decoded {
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
    console::say(format_args!("wrote {}", file.display()));
    Ok(())
}

fn compare(a: CompareArgs) -> Result<u8> {
    if let Some(file) = &a.plot {
        plot::check(file)?;
    }
    let da = decode(&Source::from_arg(&a.a))?;
    let db = decode(&Source::from_arg(&a.b))?;
    for d in [&da, &db] {
        if let Some(e) = d.session.fatal() {
            return Err(e);
        }
        for w in d.session.warnings() {
            console::warn(&w);
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
        console::say(format_args!("wrote {}", file.display()));
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
        Err(e) => return ExitCode::from(console::exit_code(usage(&e))),
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
    let code = match res {
        Ok(code) => code,
        Err(e) => {
            console::say(&e);
            e.exit_code()
        }
    };
    ExitCode::from(console::exit_code(code))
}

/// What clap could not parse: help and version go to standard output
/// (status 0); a usage error is one line on standard error (status 2)
/// that names what is wrong, without clap's usage block.
fn usage(e: &clap::Error) -> u8 {
    use clap::error::ErrorKind;
    let text = e.render().to_string();
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            console::Std::Out.write(text.as_bytes());
            0
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            console::Std::Err.write(text.as_bytes());
            2
        }
        _ => {
            console::say(format_args!(
                "{} (see latscope-host --help)",
                usage_line(&text)
            ));
            2
        }
    }
}

/// clap's error text up to its usage block, as one line.
fn usage_line(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty() && !l.starts_with("Usage:"))
        .map(str::trim)
        .collect();
    let line = lines.join(" ");
    let line = line.strip_prefix("error: ").unwrap_or(&line);
    if line.is_empty() {
        "bad usage".into()
    } else {
        line.to_string()
    }
}
