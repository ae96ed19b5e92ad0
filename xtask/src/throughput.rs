//! `cargo xtask bench host-throughput`: end-to-end throughput and peak
//! RSS of `latscope-host report` (text and JSON) on three recordings made
//! here (recordings are not committed):
//!
//! - synth: `latscope-host synth --threads 8 --reports 20000 --samples 1000`
//! - t64: `latscope-host synth --threads 64 --reports 2500 --samples 1000`
//! - spikes: `latscope -t 2 -i 100 --spike 1 -D SECS -q --stream FILE`
//!   (a real run at 10 kHz flagging every sample over 1 µs; root)
//!
//! Each report runs pinned to one CPU (`taskset -c CPU`) under
//! `/usr/bin/time -f '%e %U %S %M'` (elapsed, user and system seconds,
//! peak RSS); the figures are the median MB/s (input bytes / s / 1e6) of
//! RUNS runs, elapsed and per CPU second, and the largest peak RSS.
//! `--inputs DIR` keeps the recordings in DIR and reuses those already
//! there, so that two builds are measured on the same bytes; `--host BIN`
//! measures another latscope-host build (e.g. an earlier commit's) on
//! them.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use crate::machine::Machine;
use latscope_testkit::Scratch;

use crate::process::{command_line, log, status, stdout};
use crate::results::{self, Report};
use crate::{root, stats, target_dir, Error};

/// A time read as 0 s counts as this many seconds (the script's floor).
const MIN_SECS: f64 = 0.001;

/// `cargo xtask bench host-throughput`.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct Args {
    /// Seconds of the real run that makes the spike-heavy recording.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub secs: u64,
    /// Runs of each report; the figures are their medians.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = parse_runs)]
    pub runs: usize,
    /// The CPU the reports are pinned to (taskset -c).
    #[arg(long, value_name = "CPU", default_value_t = 1)]
    pub cpu: usize,
    /// Where to write host-throughput.json and host-throughput.md [default: bench/results].
    #[arg(long, value_name = "DIR", default_value_os_t = default_out(), hide_default_value = true)]
    pub out: PathBuf,
    /// Keep the recordings in DIR, and reuse those already there.
    #[arg(long, value_name = "DIR")]
    pub inputs: Option<PathBuf>,
    /// Measure this latscope-host instead of the release build.
    #[arg(long, value_name = "BIN")]
    pub host: Option<PathBuf>,
}

impl Default for Args {
    /// The defaults of the command line.
    fn default() -> Args {
        Args {
            secs: 60,
            runs: 5,
            cpu: 1,
            out: default_out(),
            inputs: None,
            host: None,
        }
    }
}

/// `bench/results` of the checkout.
fn default_out() -> PathBuf {
    root().join("bench/results")
}

/// `--runs`: 1 or more.
fn parse_runs(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be 1 or more".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// The recordings the reports read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Recording {
    /// `latscope-host synth --threads 8 --reports 20000 --samples 1000`.
    Synth,
    /// A real run at 10 kHz with every sample over 1 µs a spike record.
    Spikes,
    /// `latscope-host synth --threads 64 --reports 2500 --samples 1000`.
    T64,
}

impl Recording {
    /// Every recording, in the table's order.
    pub const ALL: [Recording; 3] = [Recording::Synth, Recording::Spikes, Recording::T64];

    /// Its name: `synth`, `spikes`, `t64` (the file is NAME.lsr).
    pub fn name(self) -> &'static str {
        match self {
            Recording::Synth => "synth",
            Recording::Spikes => "spikes",
            Recording::T64 => "t64",
        }
    }

    /// The command that writes it to `file`.
    fn command(self, tools: &Tools, secs: u64, file: &Path) -> Command {
        let synth = |threads: &str, reports: &str| {
            let mut cmd = Command::new(&tools.host);
            cmd.args(["synth", "--threads", threads, "--reports", reports])
                .args(["--samples", "1000", "-o"])
                .arg(file);
            cmd
        };
        match self {
            Recording::Synth => synth("8", "20000"),
            Recording::T64 => synth("64", "2500"),
            Recording::Spikes => {
                let mut cmd = Command::new(&tools.latscope);
                cmd.args(["-t", "2", "-i", "100", "--spike", "1", "-D"])
                    .arg(secs.to_string())
                    .args(["-q", "--stream"])
                    .arg(file)
                    .stdout(Stdio::null());
                cmd
            }
        }
    }
}

/// The report's output formats measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `report -f text`.
    Text,
    /// `report -f json`.
    Json,
}

impl Format {
    /// Every format, in the table's order.
    pub const ALL: [Format; 2] = [Format::Text, Format::Json];

    /// Its name, as `report -f` takes it: `text`, `json`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
        }
    }
}

/// One recording in one format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// The recording read.
    pub recording: Recording,
    /// The report's format.
    pub format: Format,
    /// The recording's size, bytes.
    pub bytes: u64,
    /// The median over the runs of bytes / elapsed seconds / 1e6.
    pub mb_per_s_elapsed: f64,
    /// The median over the runs of bytes / (user + system seconds) / 1e6.
    pub mb_per_s_cpu: f64,
    /// The largest peak RSS of the runs, kB.
    pub peak_rss_kb: u64,
}

/// `latscope-host report`'s throughput: `host-throughput.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostThroughput {
    /// Where and at which commit it was measured.
    pub machine: Machine,
    /// The first line of the measured `latscope-host --version`.
    pub host_version: String,
    /// `--secs`: the spike-heavy recording's run, seconds.
    pub secs: u64,
    /// `--runs`: the runs of each report.
    pub runs: usize,
    /// `--cpu`: the CPU the reports were pinned to.
    pub cpu: usize,
    /// Every recording in every format, in the table's order.
    pub rows: Vec<Row>,
    /// The recordings whose run is incomplete (records the target could
    /// not queue, and the like): the report read every byte of them and
    /// said so with exit status 1, as it should.
    pub incomplete: Vec<Incomplete>,
}

/// A recording the report called incomplete.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Incomplete {
    /// The recording.
    pub recording: Recording,
    /// The report's line on standard error, naming every cause.
    pub causes: String,
}

impl HostThroughput {
    /// The row of `recording` in `format`, if it was measured.
    pub fn row(&self, recording: Recording, format: Format) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.recording == recording && r.format == format)
    }
}

/// `/usr/bin/time -f '%e %U %S %M'` of one run.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Timing {
    /// %e: elapsed seconds.
    elapsed: f64,
    /// %U: user seconds.
    user: f64,
    /// %S: system seconds.
    system: f64,
    /// %M: peak RSS, kB.
    max_rss_kb: u64,
}

/// The programs measured and where the runs keep their scratch files.
struct Tools {
    latscope: PathBuf,
    host: PathBuf,
    scratch: PathBuf,
}

/// Run the benchmark and write `host-throughput.json` and
/// `host-throughput.md` into `--out`; print the markdown.
///
/// # Errors
///
/// [`Error::Usage`] when not run as root or with no runs,
/// [`Error::Missing`] when `/usr/bin/time` or taskset cannot be
/// installed, [`Error::Command`] when a build, a recording or a report
/// fails, [`Error::Parse`] when `/usr/bin/time`'s output is not what it
/// should be, [`Error::Io`] when a file cannot be read or written.
pub fn run(args: &Args) -> Result<(), Error> {
    if args.runs == 0 {
        return Err(Error::Usage("--runs must be 1 or more".into()));
    }
    let proc_status =
        fs::read_to_string("/proc/self/status").map_err(Error::io("/proc/self/status"))?;
    if effective_uid(&proc_status) != Some(0) {
        return Err(Error::Usage(
            "run as root: the spike-heavy recording needs SCHED_FIFO".into(),
        ));
    }
    need_tools()?;
    let latscope = target_dir().join("release/latscope");
    let release_host = target_dir().join("release/latscope-host");
    build(&latscope, &release_host)?;
    let host = match &args.host {
        Some(h) => fs::canonicalize(h).map_err(Error::io(h))?,
        None => release_host,
    };
    let scratch = Scratch::try_new("host-throughput").map_err(Error::io("a scratch directory"))?;
    let inputs = match &args.inputs {
        Some(d) => {
            fs::create_dir_all(d).map_err(Error::io(d))?;
            fs::canonicalize(d).map_err(Error::io(d))?
        }
        None => scratch.path().to_path_buf(),
    };
    let tools = Tools {
        latscope,
        host,
        scratch: scratch.path().to_path_buf(),
    };
    let result = measure(&tools, &inputs, args)?;
    results::write(&args.out, &result)?;
    print!("{}", result.markdown());
    Ok(())
}

/// Make the recordings missing from `inputs`, then time every report.
fn measure(tools: &Tools, inputs: &Path, args: &Args) -> Result<HostThroughput, Error> {
    log(&format!("recordings in {}", inputs.display()));
    for recording in Recording::ALL {
        let file = inputs.join(format!("{}.lsr", recording.name()));
        if !fs::metadata(&file).is_ok_and(|m| m.len() > 0) {
            status(&mut recording.command(tools, args.secs, &file))?;
        }
    }
    let machine = Machine::now();
    let version = stdout(Command::new(&tools.host).arg("--version"))?;
    let mut rows = Vec::new();
    let mut incomplete: Vec<Incomplete> = Vec::new();
    for recording in Recording::ALL {
        let file = inputs.join(format!("{}.lsr", recording.name()));
        let bytes = fs::metadata(&file).map_err(Error::io(&file))?.len();
        for format in Format::ALL {
            log(&format!("report -f {} {}", format.name(), recording.name()));
            let mut timings = Vec::with_capacity(args.runs);
            for _ in 0..args.runs {
                let (timing, causes) = time_report(tools, args.cpu, &file, format)?;
                timings.push(timing);
                if let Some(causes) =
                    causes.filter(|_| !incomplete.iter().any(|i| i.recording == recording))
                {
                    incomplete.push(Incomplete { recording, causes });
                }
            }
            let row = summarize(recording, format, bytes, &timings)
                .ok_or_else(|| Error::Usage("--runs must be 1 or more".into()))?;
            rows.push(row);
        }
    }
    Ok(HostThroughput {
        machine: machine.ended(),
        host_version: version
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_string(),
        secs: args.secs,
        runs: args.runs,
        cpu: args.cpu,
        rows,
        incomplete,
    })
}

/// One run of `taskset -c CPU latscope-host report -f FORMAT FILE -o
/// /dev/null` under `/usr/bin/time`.
fn time_report(
    tools: &Tools,
    cpu: usize,
    file: &Path,
    format: Format,
) -> Result<(Timing, Option<String>), Error> {
    let time_file = tools.scratch.join("time");
    let mut cmd = Command::new("/usr/bin/time");
    cmd.args(["-f", "%e %U %S %M", "-o"])
        .arg(&time_file)
        .args(["taskset", "-c", &cpu.to_string()])
        .arg(&tools.host)
        .args(["report", "-f", format.name()])
        .arg(file)
        .args(["-o", "/dev/null"])
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    let out = cmd.output().map_err(|e| Error::Command {
        cmd: command_line(&cmd),
        why: e.to_string(),
    })?;
    let causes = incomplete_causes(out.status.code(), &String::from_utf8_lossy(&out.stderr));
    if !out.status.success() && causes.is_none() {
        return Err(Error::Command {
            cmd: command_line(&cmd),
            why: format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    let text = fs::read_to_string(&time_file).map_err(Error::io(&time_file))?;
    let timing = parse_time(&text).map_err(|why| Error::Parse {
        what: format!("/usr/bin/time -o {}", time_file.display()),
        why,
    })?;
    Ok((timing, causes))
}

/// The report's causes when it ended with status 1 because a run is
/// incomplete (it read the whole recording): its `incomplete` line on
/// standard error, without the path. Any other failure is `None`.
pub(crate) fn incomplete_causes(code: Option<i32>, stderr: &str) -> Option<String> {
    if code != Some(1) {
        return None;
    }
    let line = stderr.lines().find(|l| l.contains(" incomplete: "))?;
    let at = line.find("run ")?;
    Some(line[at..].trim().to_string())
}

/// The last line of `/usr/bin/time -f '%e %U %S %M'`'s output (before it
/// a line "Command exited with non-zero status N" may come).
fn parse_time(text: &str) -> Result<Timing, String> {
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .ok_or("empty")?;
    let f: Vec<&str> = line.split_whitespace().collect();
    let secs = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0);
    match f[..] {
        [e, u, s, m] => Ok(Timing {
            elapsed: secs(e).ok_or(format!("elapsed {e:?} in {line:?}"))?,
            user: secs(u).ok_or(format!("user {u:?} in {line:?}"))?,
            system: secs(s).ok_or(format!("system {s:?} in {line:?}"))?,
            max_rss_kb: m
                .parse()
                .map_err(|_| format!("peak RSS {m:?} in {line:?}"))?,
        }),
        _ => Err(format!("not \"%e %U %S %M\": {line:?}")),
    }
}

/// MB/s elapsed and MB/s of CPU time (user + system) of reading `bytes`;
/// a time of 0 counts as [`MIN_SECS`].
fn rates(bytes: u64, t: &Timing) -> (f64, f64) {
    let at_least = |s: f64| if s > 0.0 { s } else { MIN_SECS };
    let b = bytes as f64;
    (
        b / at_least(t.elapsed) / 1e6,
        b / at_least(t.user + t.system) / 1e6,
    )
}

/// The row of `timings`: the medians of their rates and the largest
/// peak RSS; `None` without timings.
fn summarize(recording: Recording, format: Format, bytes: u64, timings: &[Timing]) -> Option<Row> {
    let (elapsed, cpu): (Vec<f64>, Vec<f64>) = timings.iter().map(|t| rates(bytes, t)).unzip();
    Some(Row {
        recording,
        format,
        bytes,
        mb_per_s_elapsed: stats::median(&elapsed)?,
        mb_per_s_cpu: stats::median(&cpu)?,
        peak_rss_kb: timings.iter().map(|t| t.max_rss_kb).max()?,
    })
}

/// The effective user id of `/proc/self/status`'s `Uid:` line (real,
/// effective, saved, filesystem).
fn effective_uid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Install `/usr/bin/time` (Debian's time) and taskset (util-linux) when
/// they are missing.
fn need_tools() -> Result<(), Error> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let taskset = std::env::split_paths(&path).any(|d| d.join("taskset").is_file());
    let mut missing = Vec::new();
    if !Path::new("/usr/bin/time").is_file() {
        missing.push("time");
    }
    if !taskset {
        missing.push("util-linux");
    }
    if missing.is_empty() {
        return Ok(());
    }
    log(&format!("installing {}", missing.join(" ")));
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let install = [&["install", "-y", "-q"][..], &missing].concat();
    if apt(&install) || (apt(&["update", "-q"]) && apt(&install)) {
        Ok(())
    } else {
        Err(Error::Missing(format!(
            "{}; install them (apt-get install {})",
            missing.join(" "),
            missing.join(" ")
        )))
    }
}

/// `cargo build -q --release -p latscope -p latscope-host`; with
/// `BENCH_NO_BUILD=1` the binaries already built, if they are there.
fn build(latscope: &Path, host: &Path) -> Result<(), Error> {
    let no_build = std::env::var_os("BENCH_NO_BUILD").is_some_and(|v| v == "1");
    if no_build && latscope.is_file() && host.is_file() {
        log("BENCH_NO_BUILD=1: using the binaries already built");
        return Ok(());
    }
    log("building latscope and latscope-host (release)");
    let mut cmd = Command::new("cargo");
    cmd.args([
        "build",
        "-q",
        "--release",
        "-p",
        "latscope",
        "-p",
        "latscope-host",
    ])
    .current_dir(root());
    status(&mut cmd)
}

impl Report for HostThroughput {
    const NAME: &'static str = "host-throughput";

    fn markdown(&self) -> String {
        let rows: String = self
            .rows
            .iter()
            .map(|r| {
                format!(
                    "| {} | {} | {} | {:.0} | {:.0} | {} |\n",
                    r.recording.name(),
                    r.format.name(),
                    r.bytes,
                    r.mb_per_s_elapsed,
                    r.mb_per_s_cpu,
                    r.peak_rss_kb
                )
            })
            .collect();
        let l = self.machine.load_start;
        format!(
            "# latscope-host report throughput\n\
             \n\
             Produced by `cargo xtask bench host-throughput --secs {secs} --runs {runs} --cpu {cpu}` at commit {commit}, measuring {version}.\n\
             Load average at start: {l0:.2} {l1:.2} {l2:.2} (a shared machine: other builds ran meanwhile).\n\
             \n\
             `taskset -c {cpu} latscope-host report -f FORMAT FILE -o /dev/null`, median of {runs} runs of input bytes per second elapsed, and per second of CPU time (user + system: what the report costs, whatever else ran on CPU {cpu}); peak RSS: the largest of them. \
             Elapsed, user and system seconds and peak RSS are `/usr/bin/time -f '%e %U %S %M'`'s (times in steps of 10 ms; a time of 0 counts as 1 ms).\n\
             \n\
             | recording | format | bytes | MB/s elapsed (median) | MB/s of CPU time (median) | peak RSS (kB) |\n\
             |---|---|---|---|---|---|\n\
             {rows}\
             {incomplete}\
             \n\
             ## Machine\n\
             \n\
             {machine}",
            secs = self.secs,
            runs = self.runs,
            cpu = self.cpu,
            commit = self.machine.commit,
            version = self.host_version,
            l0 = l[0],
            l1 = l[1],
            l2 = l[2],
            machine = self.machine.markdown(),
            incomplete = self
                .incomplete
                .iter()
                .map(|i| format!(
                    "\nThe {} recording is incomplete: the report read all of it and exited 1, as it should (`{}`).\n",
                    i.recording.name(),
                    i.causes
                ))
                .collect::<String>(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(elapsed: f64, user: f64, system: f64, max_rss_kb: u64) -> Timing {
        Timing {
            elapsed,
            user,
            system,
            max_rss_kb,
        }
    }

    #[test]
    fn time_output_is_parsed() {
        assert_eq!(
            parse_time("0.08 0.07 0.01 5124\n").unwrap(),
            timing(0.08, 0.07, 0.01, 5124)
        );
        // a failed command's status line comes first
        assert_eq!(
            parse_time("Command exited with non-zero status 1\n0.00 0.00 0.00 1012\n").unwrap(),
            timing(0.0, 0.0, 0.0, 1012)
        );
    }

    #[test]
    fn bad_time_output_is_an_error() {
        assert!(parse_time("").is_err());
        assert!(parse_time("0.08 0.07 0.01\n").is_err());
        assert!(parse_time("0.08 0.07 x 5124\n").is_err());
        assert!(parse_time("0.08 0.07 0.01 5.1\n").is_err());
        assert!(parse_time("0.08 -1 0.01 5124\n").is_err());
    }

    #[test]
    fn the_effective_uid_is_the_second_field() {
        let status = "Name:\tcat\nUmask:\t0022\nState:\tR (running)\nUid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\n";
        assert_eq!(effective_uid(status), Some(0));
        assert_eq!(effective_uid("Uid:\t0\t1000\t1000\t1000\n"), Some(1000));
        assert_eq!(effective_uid("Name:\tcat\n"), None);
    }

    #[test]
    fn zero_times_count_as_a_millisecond() {
        let (e, c) = rates(7_631_990, &timing(0.0, 0.0, 0.0, 1));
        assert_eq!(e, 7_631_990.0 / 0.001 / 1e6);
        assert_eq!(c, e);
        let (e, c) = rates(2_000_000, &timing(0.02, 0.01, 0.01, 1));
        assert!(
            (e - 100.0).abs() < 1e-9 && (c - 100.0).abs() < 1e-9,
            "{e} {c}"
        );
    }

    #[test]
    fn a_row_is_the_medians_and_the_largest_rss() {
        let runs = [
            timing(0.10, 0.08, 0.02, 5000),
            timing(0.08, 0.07, 0.01, 5200),
            timing(0.20, 0.09, 0.01, 5100),
            timing(0.08, 0.06, 0.02, 5150),
        ];
        let row = summarize(Recording::Synth, Format::Json, 8_000_000, &runs).unwrap();
        // elapsed rates 80, 100, 40, 100: median (80 + 100) / 2
        assert!((row.mb_per_s_elapsed - 90.0).abs() < 1e-9, "{row:?}");
        // CPU rates 80, 100, 80, 100
        assert!((row.mb_per_s_cpu - 90.0).abs() < 1e-9, "{row:?}");
        assert_eq!(row.peak_rss_kb, 5200);
        assert_eq!(
            (row.recording, row.format, row.bytes),
            (Recording::Synth, Format::Json, 8_000_000)
        );
        assert!(summarize(Recording::T64, Format::Text, 1, &[]).is_none());
    }

    #[test]
    fn the_spike_run_is_the_scripts() {
        let tools = Tools {
            latscope: "latscope".into(),
            host: "latscope-host".into(),
            scratch: "s".into(),
        };
        assert_eq!(
            command_line(&Recording::Spikes.command(&tools, 60, Path::new("in/spikes.lsr"))),
            "latscope -t 2 -i 100 --spike 1 -D 60 -q --stream in/spikes.lsr"
        );
        assert_eq!(
            command_line(&Recording::T64.command(&tools, 60, Path::new("t64.lsr"))),
            "latscope-host synth --threads 64 --reports 2500 --samples 1000 -o t64.lsr"
        );
        assert_eq!(
            command_line(&Recording::Synth.command(&tools, 60, Path::new("synth.lsr"))),
            "latscope-host synth --threads 8 --reports 20000 --samples 1000 -o synth.lsr"
        );
    }

    fn result() -> HostThroughput {
        let row = |recording, format, bytes, elapsed, cpu, rss| Row {
            recording,
            format,
            bytes,
            mb_per_s_elapsed: elapsed,
            mb_per_s_cpu: cpu,
            peak_rss_kb: rss,
        };
        HostThroughput {
            machine: Machine {
                kernel: "Linux 6.18.0 #1 SMP x86_64".into(),
                cpus: 2,
                cpu_model: "AMD EPYC".into(),
                memory_gib: 7.8,
                load_start: [0.82, 6.43, 6.21],
                load_end: None,
                commit: "e551611".into(),
            },
            host_version: "latscope-host 0.1.0".into(),
            secs: 60,
            runs: 5,
            cpu: 1,
            rows: vec![
                row(
                    Recording::Synth,
                    Format::Text,
                    29_730_239,
                    358.2,
                    363.4,
                    5124,
                ),
                row(
                    Recording::Synth,
                    Format::Json,
                    29_730_239,
                    354.0,
                    354.0,
                    5184,
                ),
                row(
                    Recording::Spikes,
                    Format::Text,
                    7_631_990,
                    381.6,
                    381.6,
                    3788,
                ),
                row(
                    Recording::T64,
                    Format::Json,
                    28_240_393,
                    316.9,
                    317.2,
                    11156,
                ),
            ],
            incomplete: vec![],
        }
    }

    #[test]
    fn the_markdown_has_the_scripts_table() {
        let md = result().markdown();
        let lines: Vec<&str> = md.lines().collect();
        for want in [
            "Produced by `cargo xtask bench host-throughput --secs 60 --runs 5 --cpu 1` at commit e551611, measuring latscope-host 0.1.0.",
            "Load average at start: 0.82 6.43 6.21 (a shared machine: other builds ran meanwhile).",
            "| recording | format | bytes | MB/s elapsed (median) | MB/s of CPU time (median) | peak RSS (kB) |",
            "| synth | text | 29730239 | 358 | 363 | 5124 |",
            "| synth | json | 29730239 | 354 | 354 | 5184 |",
            "| spikes | text | 7631990 | 382 | 382 | 3788 |",
            "| t64 | json | 28240393 | 317 | 317 | 11156 |",
            "## Machine",
            "- commit: e551611",
        ] {
            assert!(lines.contains(&want), "no line {want:?} in\n{md}");
        }
        assert!(md.contains(
            "`taskset -c 1 latscope-host report -f FORMAT FILE -o /dev/null`, median of 5 runs"
        ));
        assert!(md.contains("`/usr/bin/time -f '%e %U %S %M'`"), "{md}");
    }

    #[test]
    fn rows_are_found_by_recording_and_format() {
        let r = result();
        assert_eq!(
            r.row(Recording::Spikes, Format::Text).map(|r| r.bytes),
            Some(7_631_990)
        );
        assert_eq!(
            r.row(Recording::T64, Format::Json).map(|r| r.peak_rss_kb),
            Some(11156)
        );
        assert!(r.row(Recording::T64, Format::Text).is_none());
    }

    #[test]
    fn the_json_names_recordings_and_formats_in_lowercase() {
        let r = result();
        let json = serde_json::to_string(&r).unwrap();
        assert!(
            json.contains(r#""recording":"t64","format":"json""#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<HostThroughput>(&json).unwrap(), r);
        let extra = json.replacen('{', "{\"lines\":1,", 1);
        assert!(serde_json::from_str::<HostThroughput>(&extra).is_err());
        let names: Vec<&str> = Recording::ALL.iter().map(|r| r.name()).collect();
        assert_eq!(names, ["synth", "spikes", "t64"]);
        let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(names, ["text", "json"]);
    }

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn the_command_lines_defaults_are_the_scripts() {
        use clap::Parser;
        assert_eq!(Cli::try_parse_from(["x"]).unwrap().args, Args::default());
        let a = Cli::try_parse_from([
            "x", "--secs", "2", "--runs", "3", "--cpu", "0", "--inputs", "in",
        ])
        .unwrap()
        .args;
        assert_eq!((a.secs, a.runs, a.cpu), (2, 3, 0));
        assert_eq!(a.inputs, Some(PathBuf::from("in")));
        assert!(Cli::try_parse_from(["x", "--runs", "0"]).is_err());
    }

    #[test]
    fn an_incomplete_run_is_measured_and_named_and_other_failures_are_not() {
        let err = "latscope-host: /tmp/x/spikes.lsr: run afeb64c60f00a4e0 incomplete: 734 spike record(s) the target could not queue\n";
        assert_eq!(
            incomplete_causes(Some(1), err).as_deref(),
            Some("run afeb64c60f00a4e0 incomplete: 734 spike record(s) the target could not queue"),
            "the path left out"
        );
        assert_eq!(
            incomplete_causes(Some(2), err),
            None,
            "a usage error is a failure"
        );
        assert_eq!(
            incomplete_causes(Some(1), "latscope-host: x: No such file\n"),
            None
        );
        assert_eq!(incomplete_causes(None, err), None, "killed by a signal");
    }
}
