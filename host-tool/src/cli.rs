//! The command line of `latscope-host` (clap): the arguments, each
//! subcommand's plan for the library (`record::run`, `report::run`,
//! `compare::run`, `synth::run`, `simulate::run`, `explain::run`), and the
//! exit status of the outcome. The binary is [`main`]; [`command`] is the same parser for
//! the man pages and shell completions.
//!
//! Exit status: 0 on success; 1 when a run failed, was incomplete or could
//! not be read in full (every cause of `report::completeness`, not a latscope
//! stream, another protocol version, an I/O error); 2 for bad
//! usage; 4 when the work was done but a write to standard output or
//! standard error failed (see [`console`]); 5 and 6 a failed and an
//! inconclusive goal or gate. The statuses are named in [`crate::error`];
//! `docs/running.md` ("Exit statuses") has them all, and their precedence.

use crate::error::{EXIT_OK, EXIT_USAGE};
use crate::{compare, console, explain, gate, record, report, simulate, synth, trend};

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, CommandFactory, Parser, Subcommand};
use latscope_core::cyclictest::HistShape;
use latscope_core::slo::Goals;

use crate::input::Source;
use report::Format;

/// What every `--help` says at its end.
macro_rules! exit_help {
    () => {
        "Exit status: 0 success: every run complete; 1 a failed or incomplete run, \
or an input that is not a readable latscope stream. A run is incomplete when \
its hello was lost; it has no bye; it ended with an error; it has self-check \
defects; its histograms are not exact at the end; frames are missing by the \
sequence numbers (never delivered later); the target could not send frames; \
spike records were dropped by the target's queue, or sent (by its aggregates) \
but not received; explanations were sent but not received; its counts did not \
fit the memory budget; frames name unknown threads; or (--timerlat) the \
target's trace lost timerlat entries or pages, or paired a period's IRQ \
latency above its thread's. Each such run gets a \
line on standard error, `complete: false` and `return_code` 1 in the JSON \
formats, and `false` in the CSV's `complete` column. `record` stopped by \
SIGINT or SIGTERM exits 0 whatever its runs. 2 bad usage; 4 the work was done \
(recordings, -o files, plots are complete) but a write to standard output or \
standard error failed (SIGPIPE is ignored: a closed pipe is such a failed \
write); 5 (report --slo, compare --gate) a goal failed, or the gate found a \
regression; 6 no goal failed but one is inconclusive, or the gate is. When \
several apply, the first of: an error's 1 or 2; 5; 1; 6; 4."
    };
}

const EXIT_HELP: &str = exit_help!();

/// `trend --help`'s end: its exit statuses.
const TREND_EXIT_HELP: &str = "Exit status: 0 every recording was read (incomplete \
runs are marked in the plots and have `complete` false in the CSV, and are no \
failure here); 1 a recording could not be read, a run had lost its hello (its \
board is unknown), or there was no run; 2 bad usage; 4 the files were written \
but a write to standard output or standard error failed.";

/// `explain --help`'s end: its exit statuses.
const EXPLAIN_EXIT_HELP: &str = "Exit status: 0 the window was explained (a \
trace that does not cover all of it is said in the spike's lines, `trace \
partial`, and is no failure here); 1 the file could not be read: over 256 MiB, \
of another version than 6 (trace-cmd writes version 7 by default; `trace-cmd \
convert --file-version 6 --compression none` writes a 6), big-endian, corrupt, \
without the sidecar's CPU, or its sidecar does not read; 2 bad usage, no \
window (no sidecar and not all of --cpu, --from and --to), a window that ends \
before it starts, or a --cpu the file does not have; 4 the explanation was \
made but a write to standard output or standard error failed.";

/// `latscope-host --help`'s end: the commands a newcomer runs first, then
/// the exit statuses.
const QUICK_START: &str = concat!(
    "Quick start (latscope as root, on the machine it measures):
  latscope -D 10s --stream run.lsr      measure 10 s, record the stream
  latscope-host report run.lsr          the summary of the recording
  latscope-host report run.lsr --plot run.png
                                        ... and its plots (.png or .svg)
  latscope -q --stream - | latscope-host record -o live.lsr
                                        a live view while it records
  latscope-host compare a.lsr b.lsr     two recordings side by side
  latscope-host explain spike.dat       a spike's causes from its trace.dat

",
    exit_help!()
);

/// Records, decodes, reports and plots latscope's frame stream.
#[derive(Parser, Debug)]
#[command(name = "latscope-host", version, about, after_help = QUICK_START)]
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
    /// A board's latency over many recordings: the maximum and quantiles
    /// per run, a heatmap, incomplete runs marked (PNG, SVG and CSV).
    #[command(after_help = TREND_EXIT_HELP)]
    Trend(TrendArgs),
    /// Write a synthetic recording (for benchmarks and tests).
    #[command(after_help = EXIT_HELP)]
    Synth(SynthArgs),
    /// Stream many synthetic targets into a listening recorder (for the
    /// fleet benchmark).
    #[command(after_help = EXIT_HELP)]
    Simulate(SimulateArgs),
    /// A spike's causes from its trace.dat (version 6): the target's
    /// `latscope-tT-cpuC-cK.dat` with its sidecar `.json`, or any
    /// trace.dat with the window given by --cpu, --from and --to.
    #[command(after_help = EXPLAIN_EXIT_HELP)]
    Explain(ExplainArgs),
}

#[derive(Args, Debug)]
struct ExplainArgs {
    /// The trace.dat, version 6 (at most 256 MiB). A sidecar FILE.json
    /// beside FILE.dat, as the target writes, gives the window; the
    /// options below override it.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// The CPU whose pages hold the spike.
    #[arg(long, value_name = "N")]
    cpu: Option<u32>,
    /// The measuring thread's id (default: the sidecar's tid, else 0,
    /// unknown).
    #[arg(long, value_name = "P")]
    pid: Option<u32>,
    /// The window's start, the deadline: seconds with up to 9 decimals
    /// as `trace-cmd report` prints them (22534.727720), or nanoseconds
    /// (22534727720000ns), in the file's own trace clock (trace-cmd's
    /// default is `local`; the target's files are `mono`).
    #[arg(long, value_name = "T", value_parser = time_arg)]
    from: Option<u64>,
    /// The window's end, the wake-up; as --from.
    #[arg(long, value_name = "T", value_parser = time_arg)]
    to: Option<u64>,
    /// The explanation as one JSON object (its causes with their kind,
    /// id, name, priority, count and time) instead of text.
    #[arg(long)]
    json: bool,
}

impl ExplainArgs {
    fn plan(self) -> explain::Plan {
        explain::Plan {
            file: self.file,
            json: self.json,
            window: explain::WindowOptions {
                cpu: self.cpu,
                pid: self.pid,
                from_ns: self.from,
                to_ns: self.to,
            },
        }
    }
}

/// `--from`, `--to`: a time in seconds or nanoseconds, exactly.
fn time_arg(s: &str) -> std::result::Result<u64, String> {
    explain::parse_time(s).ok_or_else(|| {
        format!(
            "{s} is not a time: seconds with up to 9 decimals (22534.727720) \
             or nanoseconds (22534727720000ns)"
        )
    })
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
    /// Serve metrics at http://ADDR:PORT/metrics (per target and thread:
    /// cycles, max, p99, p99.9, missed, faults, link errors): OpenMetrics
    /// when the request's Accept header asks for it, else the classic
    /// Prometheus text format 0.0.4. A request has 2 s and 8 KiB.
    #[arg(long, value_name = "ADDR:PORT", value_parser = socket_arg)]
    metrics: Option<String>,
    /// With --metrics: answer only peers in this network (ADDR or
    /// ADDR/PREFIX, IPv4 or IPv6); repeat for more. Default: any.
    #[arg(long, value_name = "NET", value_parser = parse_metrics_net, requires = "metrics")]
    metrics_allow: Vec<record::Net>,
    /// With --listen: exit after N runs have ended, with a bye or timed
    /// out (default: run until SIGINT or SIGTERM). Connections are not
    /// counted.
    #[arg(long, value_name = "N", requires = "listen")]
    exit_after: Option<u64>,
    /// With --listen: most connections open at once; more are closed at
    /// once and counted.
    #[arg(long, value_name = "N", default_value_t = record::DEFAULT_MAX_CONNECTIONS,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000), requires = "listen")]
    max_connections: u64,
    /// With --listen: accept targets only from this network (ADDR or
    /// ADDR/PREFIX, IPv4 or IPv6); repeat for more. Default: any.
    #[arg(long, value_name = "NET", value_parser = parse_net, requires = "listen")]
    allow: Vec<record::Net>,
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
    /// Shape of the cyclictest histogram (`-f cyclictest-hist`,
    /// `cyclictest-json`): `2.4` as rt-tests 2.4 to 2.6 print it (every
    /// row, `# Total:`), or `2.7` as 2.7 and later (rows with samples
    /// only, no total).
    #[arg(long, value_name = "VERSION", default_value = "2.4", value_parser = hist_shape)]
    hist_shape: HistShape,
    /// Also draw the histogram, tail and max-over-time plots (.svg or .png).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// Also write one self-contained HTML page of every run (completeness,
    /// identity, summary, plots, spikes and their causes) to FILE.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Write the report to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Decide latency goals for every thread: pass, fail or inconclusive,
    /// e.g. `p99.9<=80us,max<=200us,missed<=0,majflt<=0@95%` (grammar in
    /// docs/running.md). Exit status 5 when one fails, 6 when none fails
    /// but one is inconclusive.
    #[arg(long, value_name = "GOALS", value_parser = goals_arg)]
    slo: Option<Goals>,
    /// Also write the verdicts as JUnit XML (a test case per thread and
    /// goal) to FILE.
    #[arg(long, value_name = "FILE", requires = "slo")]
    junit: Option<PathBuf>,
    /// Also write the verdicts as LAVA result lines (`NAME pass|fail|skip
    /// VALUE UNITS`) to FILE.
    #[arg(long, value_name = "FILE", requires = "slo")]
    lava: Option<PathBuf>,
    /// Also write the verdicts as a JSON document to FILE.
    #[arg(long, value_name = "FILE", requires = "slo")]
    verdicts: Option<PathBuf>,
}

/// `--slo`: a goal list, or core's one line on what is wrong with it.
fn goals_arg(s: &str) -> std::result::Result<Goals, String> {
    Goals::parse(s).map_err(|e| e.to_string())
}

#[derive(Args, Debug)]
struct CompareArgs {
    /// The "before" recording.
    #[arg(required_unless_present = "gate")]
    a: Option<String>,
    /// The "after" recording.
    #[arg(required_unless_present = "gate")]
    b: Option<String>,
    /// Also draw both histograms overlaid (.svg or .png).
    #[arg(long, value_name = "FILE", conflicts_with = "gate")]
    plot: Option<PathBuf>,
    /// A regression gate: the candidate runs against the baseline runs,
    /// quantile by quantile (p50, p90, p99, p99.9 of all CPUs), runs as
    /// the unit: pass, fail (a regression beyond --tolerance) or
    /// inconclusive. Exit status 5 when it fails, 6 when inconclusive.
    #[arg(long, requires_all = ["baseline", "candidate"], conflicts_with_all = ["a", "b"])]
    gate: bool,
    /// The gate's baseline recordings (every complete run in them).
    #[arg(long, value_name = "RECORDING", num_args = 1.., requires = "gate")]
    baseline: Vec<String>,
    /// The gate's candidate recordings.
    #[arg(long, value_name = "RECORDING", num_args = 1.., requires = "gate")]
    candidate: Vec<String>,
    /// The regression the gate allows, in percent.
    #[arg(long, value_name = "PERCENT", default_value_t = 10.0, requires = "gate",
          value_parser = tolerance_arg)]
    tolerance: f64,
    /// The gate's confidence, in percent, for all its quantiles together.
    #[arg(long, value_name = "PERCENT", default_value_t = 95.0, requires = "gate",
          value_parser = confidence_arg)]
    confidence: f64,
    /// Also write the gate's verdict as a JSON document to FILE.
    #[arg(long, value_name = "FILE", requires = "gate")]
    verdicts: Option<PathBuf>,
}

/// `--tolerance`: a percentage from 0 up.
fn tolerance_arg(s: &str) -> std::result::Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(p) if p.is_finite() && p >= 0.0 => Ok(p),
        _ => Err("a tolerance is a percentage, 0 or more, e.g. 10".into()),
    }
}

/// `--confidence`: a percentage strictly between 0 and 100.
fn confidence_arg(s: &str) -> std::result::Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(p) if p > 0.0 && p < 100.0 => Ok(p),
        _ => Err("a confidence of 0 or 100 % decides nothing: give one between, e.g. 95".into()),
    }
}

#[derive(Args, Debug)]
struct TrendArgs {
    /// Directories of recordings (their *.lsr files, not their
    /// subdirectories), or recordings.
    #[arg(value_name = "DIR", required = true)]
    paths: Vec<PathBuf>,
    /// Only the runs of this board (its --name, else its host name); by
    /// default every board gets its own plots.
    #[arg(long, value_name = "NAME")]
    board: Option<String>,
    /// Where trend.csv, trend-heatmap.csv and trend-BOARD.png and .svg go.
    #[arg(long, value_name = "DIR", default_value = ".")]
    out_dir: PathBuf,
    /// A quantile drawn beside the maximum (repeat for more).
    #[arg(long, value_name = "Q", default_values = ["p99", "p99.9", "p99.99"],
          value_parser = clap::builder::PossibleValuesParser::new(trend::quantile_names()))]
    quantile: Vec<String>,
}

impl TrendArgs {
    fn plan(self) -> trend::Plan {
        trend::Plan {
            paths: self.paths,
            board: self.board,
            out_dir: self.out_dir,
            quantiles: self.quantile,
        }
    }
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
    /// The board's name (and host name) in the hello.
    #[arg(long, default_value = "synth")]
    name: String,
    /// The run's id.
    #[arg(long, default_value_t = 42)]
    run_id: u64,
    /// Seed of the sample generator.
    #[arg(long, default_value_t = 0x5eed)]
    seed: u64,
    /// When the run started, in seconds since 1970 (default 2026-11-30
    /// 12:24:35 UTC).
    #[arg(long, value_name = "UNIX_S")]
    started: Option<i64>,
    /// Every sample scaled by this many percent.
    #[arg(long, value_name = "PERCENT", default_value_t = 100)]
    scale: u32,
    /// End without a bye: an incomplete run.
    #[arg(long)]
    no_bye: bool,
    /// How the samples follow one another: independent, or bursty (storms
    /// of 100 to 400 µs samples, about 1 % of the time).
    #[arg(long, value_enum, default_value = "independent")]
    model: synth::SampleModel,
    /// The timerlat mode: each thread's CPU's kernel timerlat histograms
    /// (IRQ, thread, return to user space) streamed beside its own.
    #[arg(long)]
    timerlat: bool,
    /// With --timerlat: the trace loses one period in every N (0: none).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "timerlat")]
    timerlat_lost_every: u32,
    /// Output file (default stdout).
    #[arg(short, long)]
    output: Option<PathBuf>,
}

impl SerialArgs {
    /// The serial line to read, if one was given.
    fn source(&self) -> Option<Source> {
        self.serial.as_ref().map(|dev| Source::Serial {
            device: dev.clone(),
            baud: self.baud,
        })
    }
}

impl RecordArgs {
    fn plan(self) -> record::Plan {
        record::Plan {
            source: self
                .serial
                .source()
                .or_else(|| self.input.as_deref().map(Source::from_arg)),
            listen: self.listen,
            output: self.output,
            out_dir: self.out_dir,
            metrics: self.metrics,
            metrics_allow: self.metrics_allow,
            exit_after: self.exit_after,
            fleet: record::Fleetwide {
                limits: record::Limits {
                    hello: Duration::from_secs_f64(self.hello_timeout),
                    idle: Duration::from_secs_f64(self.idle_timeout),
                },
                linger: Duration::from_secs_f64(self.linger),
                max_connections: self.max_connections,
                allow: self.allow,
            },
            quiet: self.quiet,
        }
    }
}

impl ReportArgs {
    fn plan(self) -> report::Plan {
        report::Plan {
            sources: match self.serial.source() {
                Some(serial) => vec![serial],
                None => self.inputs.iter().map(|i| Source::from_arg(i)).collect(),
            },
            options: report::Options {
                format: self.format,
                hist_us: self.hist_us,
                histofall: self.histofall,
                hist_shape: self.hist_shape,
            },
            plot: self.plot,
            html: self.html,
            output: self.output,
            slo: self.slo.map(|goals| report::SloPlan {
                goals: std::sync::Arc::new(goals),
                junit: self.junit,
                lava: self.lava,
                verdicts: self.verdicts,
            }),
        }
    }
}

impl CompareArgs {
    fn plan(self) -> compare::Plan {
        compare::Plan {
            a: self.a.unwrap_or_default(),
            b: self.b.unwrap_or_default(),
            plot: self.plot,
        }
    }

    fn gate_plan(self) -> gate::GatePlan {
        gate::GatePlan {
            baseline: self.baseline,
            candidate: self.candidate,
            tolerance: self.tolerance / 100.0,
            confidence: latscope_core::stats::Ppm((self.confidence * 1e4).round() as u32),
            verdicts: self.verdicts,
        }
    }
}

impl SynthArgs {
    fn config(&self) -> synth::SynthConfig {
        let d = synth::SynthConfig::default();
        synth::SynthConfig {
            threads: self.threads,
            reports: self.reports,
            samples_per_report: self.samples,
            hostname: self.name.clone(),
            run_id: self.run_id,
            seed: self.seed,
            started_unix_s: self.started.unwrap_or(d.started_unix_s),
            scale_pct: self.scale,
            bye: !self.no_bye,
            model: self.model,
            timerlat: self.timerlat,
            timerlat_lost_every: self.timerlat_lost_every,
            ..d
        }
    }
}

impl SimulateArgs {
    fn plan(self) -> simulate::SimPlan {
        simulate::SimPlan {
            addr: self.addr,
            targets: self.targets,
            reports: self.reports,
            prefix: self.prefix,
            truth: self.truth,
        }
    }
}

fn parse_net(s: &str) -> std::result::Result<record::Net, String> {
    record::Net::parse(s)
}

fn parse_metrics_net(s: &str) -> std::result::Result<record::Net, String> {
    record::Net::parse(s).map_err(|e| format!("--metrics-{}", e.trim_start_matches("--")))
}

/// `--hist-shape`: `2.4` or `2.7`.
fn hist_shape(s: &str) -> std::result::Result<HistShape, String> {
    HistShape::parse(s).ok_or_else(|| format!("{s:?} is not 2.4 or 2.7"))
}

fn parse_secs(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 1e7 => Ok(v),
        _ => Err(format!("{s}: a number of seconds above 0 is needed")),
    }
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

/// The clap command of `latscope-host`, with its subcommands: what
/// [`main`] parses, for the man pages and the shell completions.
pub fn command() -> clap::Command {
    Cli::command()
}

/// `latscope-host` itself: parse the command line, run the subcommand,
/// its exit status.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return ExitCode::from(console::exit_code(usage(&e))),
    };
    let res = match cli.cmd {
        Cmd::Record(a) => record::run(a.plan()),
        Cmd::Report(a) => report::run(&a.plan()),
        Cmd::Compare(a) if a.gate => gate::run(&a.gate_plan()),
        Cmd::Compare(a) => compare::run(&a.plan()),
        Cmd::Trend(a) => trend::run(&a.plan()),
        Cmd::Synth(a) => synth::run(a.config(), a.output.as_deref()),
        Cmd::Simulate(a) => simulate::run(&a.plan()),
        Cmd::Explain(a) => explain::run(&a.plan()),
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
/// that names what is wrong and keeps clap's tips, without its usage
/// block.
fn usage(e: &clap::Error) -> u8 {
    use clap::error::ErrorKind;
    let text = e.render().to_string();
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            console::Std::Out.write(text.as_bytes());
            EXIT_OK
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            console::Std::Err.write(text.as_bytes());
            EXIT_USAGE
        }
        _ => {
            console::say(format_args!(
                "{} (see latscope-host --help)",
                usage_line(&text)
            ));
            EXIT_USAGE
        }
    }
}

/// clap's error text up to its usage block, as one line: the error, then
/// clap's tips ("a similar argument exists: '--format'"), each after a
/// semicolon.
fn usage_line(text: &str) -> String {
    let before_usage = text.lines().take_while(|l| !l.starts_with("Usage:"));
    let mut error = Vec::new();
    let mut tips = Vec::new();
    let mut in_error = true;
    for l in before_usage.map(str::trim) {
        if l.is_empty() {
            in_error = false;
        } else if in_error {
            error.push(l);
        } else if l.starts_with("tip:") {
            tips.push(l);
        }
    }
    let error = error.join(" ");
    let error = error.strip_prefix("error: ").unwrap_or(&error);
    let error = if error.is_empty() { "bad usage" } else { error };
    std::iter::once(error)
        .chain(tips)
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(args: &[&str]) -> String {
        let e = Cli::try_parse_from(args).expect_err("a usage error");
        usage_line(&e.render().to_string())
    }

    #[test]
    fn a_misspelt_option_keeps_clap_s_tip() {
        let l = line(&["latscope-host", "report", "--formt", "json", "x.lsr"]);
        assert!(
            l.starts_with("unexpected argument '--formt' found; tip: "),
            "{l}"
        );
        assert!(l.contains("'--format'"), "{l}");
        assert!(!l.contains('\n'), "{l}");
    }

    #[test]
    fn a_misspelt_subcommand_keeps_clap_s_tip() {
        let l = line(&["latscope-host", "reprot", "x.lsr"]);
        assert!(l.contains("tip: ") && l.contains("'report'"), "{l}");
    }

    #[test]
    fn explain_s_times_are_checked_by_the_parser() {
        let l = line(&["latscope-host", "explain", "f.dat", "--from", "1e3"]);
        assert!(l.contains("1e3 is not a time"), "{l}");
        let Ok(Cli {
            cmd: Cmd::Explain(a),
        }) = Cli::try_parse_from([
            "latscope-host",
            "explain",
            "f.dat",
            "--cpu",
            "1",
            "--from",
            "22534.727720",
            "--to",
            "22534727820000ns",
        ])
        else {
            panic!("explain's options do not parse");
        };
        let w = a.plan().window;
        assert_eq!(w.from_ns, Some(22_534_727_720_000));
        assert_eq!(w.to_ns, Some(22_534_727_820_000));
        assert_eq!((w.cpu, w.pid), (Some(1), None));
    }

    #[test]
    fn an_error_without_tips_is_its_first_paragraph() {
        let l = line(&["latscope-host", "report", "--format", "nope", "x.lsr"]);
        assert!(l.starts_with("invalid value 'nope' for '--format"), "{l}");
        assert!(!l.contains("Usage") && !l.contains("--help"), "{l}");
    }
}
