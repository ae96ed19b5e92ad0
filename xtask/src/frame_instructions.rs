//! `cargo xtask bench frame-instructions`: instructions per frame of
//! `latscope-host report`, counted by callgrind, on the three recordings
//! of `bench host-throughput` (synth, spikes, t64; `--inputs DIR` keeps
//! them). For each `DIR/NAME.lsr`:
//!
//! ```text
//! valgrind --tool=callgrind latscope-host report -f FMT DIR/NAME.lsr -o /dev/null
//! ```
//!
//! and instructions per frame = the profile's total Ir / the good frames
//! of the recording (`link.frames` of `latscope-host report -f json`).
//! Everything the report does is counted (start-up, decoding,
//! aggregation, writing), so the figure gates the whole decode path.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::machine::Machine;
use latscope_testkit::Scratch;

use crate::process::{cargo, command_line, first_line, log, status};
use crate::results::{self, Report};
use crate::throughput::incomplete_causes;
use crate::{root, target_dir, Error};

/// The recordings, in the table's order.
pub const RECORDINGS: [&str; 3] = ["synth", "spikes", "t64"];

/// `cargo xtask bench frame-instructions`.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct Args {
    /// The recordings of `bench host-throughput --inputs DIR`.
    #[arg(long, value_name = "DIR")]
    pub inputs: PathBuf,
    /// Measure this latscope-host instead of the release build.
    #[arg(long, value_name = "BIN")]
    pub host: Option<PathBuf>,
    /// The report's format.
    #[arg(long, value_name = "FMT", default_value = "text")]
    pub format: String,
    /// Where to write frame-instructions.json and .md [default: bench/results].
    #[arg(long, value_name = "DIR", default_value_os_t = root().join("bench/results"), hide_default_value = true)]
    pub out: PathBuf,
}

/// One recording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// synth, spikes or t64.
    pub recording: String,
    /// Its size, bytes.
    pub bytes: u64,
    /// Its good frames.
    pub frames: u64,
    /// Instructions of the whole report.
    pub ir: u64,
    /// The report's line when it called a run incomplete (records the
    /// target could not queue): it read the whole recording all the same.
    pub incomplete: Option<String>,
}

impl Row {
    /// Instructions per frame; `None` without frames.
    pub fn per_frame(&self) -> Option<f64> {
        (self.frames > 0).then(|| self.ir as f64 / self.frames as f64)
    }
}

/// The result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrameInstructions {
    /// The machine and the commit measured.
    pub machine: Machine,
    /// The report's format.
    pub format: String,
    /// `latscope-host --version`.
    pub host_version: String,
    /// Every recording.
    pub rows: Vec<Row>,
}

/// Runs the benchmark and writes its result.
///
/// # Errors
///
/// A recording missing, a build, report or callgrind that fails, or a
/// result that cannot be written.
pub fn run(args: &Args) -> Result<(), Error> {
    let host = match &args.host {
        Some(h) => fs::canonicalize(h).map_err(Error::io(h))?,
        None => {
            log("building latscope-host (release)");
            status(&mut cargo(&[
                "build",
                "-q",
                "--release",
                "-p",
                "latscope-host",
            ]))?;
            target_dir().join("release/latscope-host")
        }
    };
    let machine = Machine::now();
    let scratch =
        Scratch::try_new("frame-instructions").map_err(Error::io("a scratch directory"))?;
    let mut rows = vec![];
    for name in RECORDINGS {
        log(&format!("callgrind: report -f {} {name}.lsr", args.format));
        rows.push(measure(
            &host,
            &args.inputs,
            name,
            &args.format,
            scratch.path(),
        )?);
    }
    let r = FrameInstructions {
        machine: machine.ended(),
        format: args.format.clone(),
        host_version: first_line(Command::new(&host).arg("--version"))
            .unwrap_or_else(|| "unknown".into()),
        rows,
    };
    let md = results::write(&args.out, &r)?;
    print!("{}", fs::read_to_string(&md).map_err(Error::io(&md))?);
    Ok(())
}

fn parse_err(path: &Path, why: impl Into<String>) -> Error {
    Error::Parse {
        what: path.display().to_string(),
        why: why.into(),
    }
}

/// One recording's row.
fn measure(
    host: &Path,
    inputs: &Path,
    name: &str,
    format: &str,
    scratch: &Path,
) -> Result<Row, Error> {
    let file = inputs.join(format!("{name}.lsr"));
    let bytes = fs::metadata(&file).map_err(Error::io(&file))?.len();
    if bytes == 0 {
        return Err(parse_err(
            &file,
            "empty (make the recordings with `cargo xtask bench host-throughput --inputs DIR`)",
        ));
    }
    let json = scratch.join("report.json");
    let incomplete = report(
        Command::new(host)
            .args(["report", "-f", "json"])
            .arg(&file)
            .arg("-o")
            .arg(&json),
    )?;
    let text = fs::read_to_string(&json).map_err(Error::io(&json))?;
    let v: Value = serde_json::from_str(&text).map_err(|source| Error::Json {
        path: json.clone(),
        source,
    })?;
    let frames = v["link"]["frames"]
        .as_u64()
        .ok_or_else(|| parse_err(&json, "no link.frames"))?;
    let profile = scratch.join("callgrind.out");
    report(
        Command::new("valgrind")
            .arg("--tool=callgrind")
            .arg(format!("--callgrind-out-file={}", profile.display()))
            .arg("-q")
            .arg(host)
            .args(["report", "-f", format])
            .arg(&file)
            .args(["-o", "/dev/null"]),
    )?;
    let ir = ir_total(&fs::read_to_string(&profile).map_err(Error::io(&profile))?)
        .ok_or_else(|| parse_err(&profile, "no totals: line"))?;
    Ok(Row {
        recording: name.to_string(),
        bytes,
        frames,
        ir,
        incomplete,
    })
}

/// Runs a report; its `incomplete` line when it ended with status 1
/// because a run is incomplete, having read the whole recording.
fn report(cmd: &mut Command) -> Result<Option<String>, Error> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::Command {
            cmd: command_line(cmd),
            why: e.to_string(),
        })?;
    if out.status.success() {
        return Ok(None);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    match incomplete_causes(out.status.code(), &stderr) {
        Some(c) => Ok(Some(c)),
        None => Err(Error::Command {
            cmd: command_line(cmd),
            why: format!("{}: {}", out.status, stderr.trim()),
        }),
    }
}

/// The instructions of callgrind's `totals:` line.
pub fn ir_total(profile: &str) -> Option<u64> {
    profile
        .lines()
        .find_map(|l| l.strip_prefix("totals:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

impl Report for FrameInstructions {
    const NAME: &'static str = "frame-instructions";

    fn markdown(&self) -> String {
        let mut s = format!(
            "# Instructions per frame, latscope-host report\n\n\
             Produced by `cargo xtask bench frame-instructions --format {}` at commit {}, measuring {}.\n\n\
             `valgrind --tool=callgrind latscope-host report -f {} FILE -o /dev/null`: total Ir of the whole run / the good frames (`frames` of the report's link statistics).\n\n\
             | recording | bytes | frames | Ir | instructions per frame |\n\
             |---|---|---|---|---|\n",
            self.format, self.machine.commit, self.host_version, self.format
        );
        for r in &self.rows {
            s += &format!(
                "| {} | {} | {} | {} | {} |\n",
                r.recording,
                r.bytes,
                r.frames,
                r.ir,
                r.per_frame().map_or("-".into(), |p| format!("{p:.0}"))
            );
        }
        for r in self.rows.iter().filter(|r| r.incomplete.is_some()) {
            s += &format!(
                "\n{}: the report called a run incomplete ({}); it read the whole recording, and the figures count it all.\n",
                r.recording,
                r.incomplete.as_deref().unwrap_or("")
            );
        }
        s += "\n## Machine\n\n";
        s += &self.machine.markdown();
        s += "\n";
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_and_per_frame() {
        assert_eq!(
            ir_total("events: Ir\nfn=a\n1 2\ntotals: 1094965088\n"),
            Some(1_094_965_088)
        );
        assert_eq!(ir_total("events: Ir\n"), None);
        let r = Row {
            recording: "synth".into(),
            bytes: 29_730_239,
            frames: 498_178,
            ir: 1_094_965_088,
            incomplete: None,
        };
        assert_eq!(format!("{:.0}", r.per_frame().unwrap()), "2198");
        assert_eq!(Row { frames: 0, ..r }.per_frame(), None);
    }
}
