//! storm's result: a spike storm on a 115200-baud line, what gets
//! through. Every figure from the raw outputs the launcher (`bench/storm`)
//! keeps, per run `tI-rR/` (target `I`, run `R`):
//!
//! - `t.json`: the target's `--json`;
//! - `line.lsr`: what crossed the paced line (the relay's recording);
//! - `report.json`: `latscope-host report -f json` of that recording;
//! - `meta` (top): `SECS`, `TARGETS` and `LABEL_I` (each target's label),
//!   the load averages and the commit.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use clap::Args as ClapArgs;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::machine::Machine;
use crate::meta::MetaFile;
use crate::results::{self, Report};
use crate::tool::frame_kinds;
use crate::Error;

/// A spike: a sample of at least this many µs (`--explain 200`).
pub const THRESHOLD_US: u64 = 200;

/// `cargo xtask storm-table`.
#[derive(ClapArgs)]
pub struct Args {
    /// The raw outputs of the run.
    #[arg(long)]
    pub raw: PathBuf,
    /// Where storm.json and storm.md are written.
    #[arg(long)]
    pub out: PathBuf,
}

/// Writes the result of `args.raw` and prints its markdown.
///
/// # Errors
///
/// [`Error::Io`], [`Error::Json`] or [`Error::Parse`] for raw outputs that
/// cannot be read; [`Error::Io`] for results that cannot be written.
pub fn run(args: &Args) -> Result<(), Error> {
    let r = Storm::from_raw(&args.raw)?;
    let md = results::write(&args.out, &r)?;
    print!("{}", fs::read_to_string(&md).map_err(Error::io(&md))?);
    Ok(())
}

/// One run's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// The target's label.
    pub target: String,
    /// The run's number, from 1.
    pub run: u32,
    /// Statistics reports per second on the line (the initial resend
    /// and the final report left out).
    pub reports_per_s: f64,
    /// Samples of at least [`THRESHOLD_US`]: the target's own count
    /// where its `--json` has one, else its histogram's.
    pub spikes: u64,
    /// Spike records on the line.
    pub records_sent: u64,
    /// Explanations on the line.
    pub explained: u64,
    /// Spike records the target aggregated, where it says.
    pub aggregated: Option<u64>,
    /// Spike records the target dropped.
    pub dropped: u64,
    /// Explained over spikes, %.
    pub coverage_percent: f64,
    /// Of the explained time, the untraced lines' share, %.
    pub untraced_percent: f64,
    /// Of the explained time, the burster's share, %.
    pub burster_percent: f64,
}

/// The result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Storm {
    /// The machine and the commit measured.
    pub machine: Machine,
    /// Seconds per run.
    pub secs: u64,
    /// Every run, target by target.
    pub runs: Vec<Run>,
}

fn parse_err(path: &Path, why: impl Into<String>) -> Error {
    Error::Parse {
        what: path.display().to_string(),
        why: why.into(),
    }
}

fn json(path: &Path) -> Result<Value, Error> {
    let text = fs::read_to_string(path).map_err(Error::io(path))?;
    serde_json::from_str(&text).map_err(|source| Error::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// The figures of one run directory.
fn run_of(dir: &Path, secs: u64, target: &str, run: u32) -> Result<Run, Error> {
    let t_path = dir.join("t.json");
    let t = json(&t_path)?;
    let th = &t["thread"]["0"];
    let hist = th["histogram"]
        .as_object()
        .ok_or_else(|| parse_err(&t_path, "thread 0 has no histogram"))?;
    let mut from_hist = th["overflows"].as_u64().unwrap_or(0);
    for (us, c) in hist {
        let us: u64 = us
            .parse()
            .map_err(|_| parse_err(&t_path, format!("histogram row {us:?}")))?;
        if us >= THRESHOLD_US {
            from_hist += c.as_u64().unwrap_or(0);
        }
    }
    let own = &t["latscope"]["spikes"];
    let spikes = own["spikes"].as_u64().unwrap_or(from_hist);
    let line = dir.join("line.lsr");
    let kinds = frame_kinds(&fs::read(&line).map_err(Error::io(&line))?);
    let count = |k: &str| kinds.get(k).copied().unwrap_or(0);
    let r_path = dir.join("report.json");
    let report = json(&r_path)?;
    let causes = report["runs"][0]["explained"]["causes"]
        .as_array()
        .ok_or_else(|| parse_err(&r_path, "no explained causes"))?;
    let ns = |want: &str| -> u64 {
        causes
            .iter()
            .filter(|c| c["cause"].as_str().is_some_and(|s| s.contains(want)))
            .filter_map(|c| c["ns"].as_u64())
            .sum()
    };
    let total = ns("").max(1) as f64;
    Ok(Run {
        target: target.to_string(),
        run,
        reports_per_s: count("stats").saturating_sub(2) as f64 / secs as f64,
        spikes,
        records_sent: count("spike"),
        explained: count("explain"),
        aggregated: own["aggregated"].as_u64(),
        dropped: th["dropped"]
            .as_u64()
            .ok_or_else(|| parse_err(&t_path, "thread 0 has no dropped"))?,
        coverage_percent: 100.0 * count("explain") as f64 / spikes.max(1) as f64,
        untraced_percent: 100.0 * ns("untraced") as f64 / total,
        burster_percent: 100.0 * ns("burster") as f64 / total,
    })
}

impl Storm {
    /// The result of the raw outputs in `raw`.
    ///
    /// # Errors
    ///
    /// [`Error::Io`], [`Error::Json`] or [`Error::Parse`] for a file that
    /// is missing or not what the launcher writes.
    pub fn from_raw(raw: &Path) -> Result<Storm, Error> {
        let meta = MetaFile::read(raw)?;
        let secs: u64 = meta.num("SECS")?;
        let targets: usize = meta.num("TARGETS")?;
        let mut runs = vec![];
        for i in 0..targets {
            let label = meta.need(&format!("LABEL_{i}"))?;
            // tI-r1, tI-r2, ..., in the order of their numbers
            let mut numbered: BTreeMap<u32, PathBuf> = BTreeMap::new();
            for e in fs::read_dir(raw).map_err(Error::io(raw))? {
                let e = e.map_err(Error::io(raw))?;
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(r) = name.strip_prefix(&format!("t{i}-r")) {
                    if let Ok(r) = r.parse() {
                        numbered.insert(r, e.path());
                    }
                }
            }
            for (r, dir) in numbered {
                runs.push(run_of(&dir, secs, &label, r)?);
            }
        }
        Ok(Storm {
            machine: meta.machine()?,
            secs,
            runs,
        })
    }
}

impl Report for Storm {
    const NAME: &'static str = "storm";

    fn markdown(&self) -> String {
        let secs = self.secs;
        let mut s = format!(
            "# A storm on a 115200-baud line\n\n\
             `bench/storm --secs {secs}`: `latscope -t 1 -a 0 -i 1000 -p 80 -h 1000 -D {secs} -q --explain 200` over a pty pair paced at 11,520 B/s, a SCHED_FIFO 95 burster on CPU 0 (600-900 µs bursts, 200 a second).\n\
             Spikes: samples above 200 µs (the target's own count where it has one, else its --json histogram). Untraced and burster: shares of the explained time (host report).\n\n\
             | target | run | reports/s | spikes | records sent | explained | aggregated | dropped | coverage | untraced | burster |\n\
             |---|---|---|---|---|---|---|---|---|---|---|\n"
        );
        for r in &self.runs {
            s += &format!(
                "| {} | {} | {:.2} | {} | {} | {} | {} | {} | {:.1} % | {:.0} % | {:.0} % |\n",
                r.target,
                r.run,
                r.reports_per_s,
                r.spikes,
                r.records_sent,
                r.explained,
                r.aggregated.map_or("-".into(), |a| a.to_string()),
                r.dropped,
                r.coverage_percent,
                r.untraced_percent,
                r.burster_percent
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
    use latscope_core::wire::{self, Body, Frame, Level, LogLine, MAX_FRAME, PROTOCOL_VERSION};

    fn log_frame(seq: u32) -> Vec<u8> {
        let frame = Frame {
            version: PROTOCOL_VERSION,
            seq,
            body: Body::Log(LogLine {
                level: Level::Info,
                text: wire::bounded("x"),
            }),
        };
        let mut buf = [0u8; MAX_FRAME];
        let n = wire::encode(&frame, &mut buf).expect("encode");
        buf[..n].to_vec()
    }

    #[test]
    fn the_figures_of_a_run_directory() {
        let dir = std::env::temp_dir().join(format!("xtask-storm-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let run = dir.join("t0-r1");
        fs::create_dir_all(&run).unwrap();
        fs::write(
            dir.join("meta"),
            "SECS=10\nTARGETS=1\nLABEL_0=\"this build\"\nCOMMIT=\"abc\"\n",
        )
        .unwrap();
        // 150 µs is not a spike; 200 and 900 are, and the overflow
        fs::write(
            run.join("t.json"),
            r#"{"thread": {"0": {"histogram": {"150": 5, "200": 3, "900": 1}, "overflows": 2, "dropped": 0}}}"#,
        )
        .unwrap();
        let mut line = Vec::new();
        for seq in 0..4 {
            line.extend(log_frame(seq));
        }
        assert_eq!(frame_kinds(&line).get("log"), Some(&4));
        fs::write(run.join("line.lsr"), &line).unwrap();
        fs::write(
            run.join("report.json"),
            r#"{"runs": [{"explained": {"causes": [
                {"cause": "untraced (trace paused)", "ns": 100},
                {"cause": "task burster/123", "ns": 300}]}}]}"#,
        )
        .unwrap();
        let s = Storm::from_raw(&dir).unwrap();
        let r = &s.runs[0];
        assert_eq!((r.target.as_str(), r.run, r.spikes), ("this build", 1, 6));
        assert_eq!((r.records_sent, r.explained, r.aggregated), (0, 0, None));
        assert_eq!((r.untraced_percent, r.burster_percent), (25.0, 75.0));
        assert_eq!(r.reports_per_s, 0.0);
        let md = s.markdown();
        assert!(
            md.contains("| this build | 1 | 0.00 | 6 | 0 | 0 | - | 0 | 0.0 % | 25 % | 75 % |"),
            "{md}"
        );
        // the target's own count wins over its histogram's
        fs::write(
            run.join("t.json"),
            r#"{"thread": {"0": {"histogram": {"200": 3}, "dropped": 1}}, "latscope": {"spikes": {"spikes": 40, "aggregated": 30}}}"#,
        )
        .unwrap();
        let r = &Storm::from_raw(&dir).unwrap().runs[0];
        assert_eq!((r.spikes, r.aggregated, r.dropped), (40, Some(30), 1));
        let _ = fs::remove_dir_all(&dir);
    }
}
