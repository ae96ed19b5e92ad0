//! fork-repro's result: an RT thread beside a fork loop in the same
//! process, against a separate process and no fork at all. From the raw
//! outputs the launcher (`bench/fork-repro`) keeps: `MODE-R.out`, the
//! `key value ...` line `fork_repro MODE SECS 200 0 1` printed (run `R`),
//! and `meta`: `SECS`, `REPS`, `DATE`, the load averages and the commit.

use std::fs;
use std::path::{Path, PathBuf};

use clap::Args as ClapArgs;
use serde::{Deserialize, Serialize};

use crate::machine::Machine;
use crate::meta::MetaFile;
use crate::results::{self, Report};
use crate::stats::{cell, median, ratio_text};
use crate::Error;

/// The modes, in the order they alternate.
pub const MODES: [&str; 3] = ["none", "separate", "inproc"];

/// `cargo xtask fork-table`.
#[derive(ClapArgs)]
pub struct Args {
    /// The raw outputs of the run.
    #[arg(long)]
    pub raw: PathBuf,
    /// Where fork.json and fork.md are written.
    #[arg(long)]
    pub out: PathBuf,
}

/// Writes the result of `args.raw` and prints its markdown.
///
/// # Errors
///
/// [`Error::Io`] or [`Error::Parse`] for raw outputs that cannot be read;
/// [`Error::Io`] for results that cannot be written.
pub fn run(args: &Args) -> Result<(), Error> {
    let r = Fork::from_raw(&args.raw)?;
    let md = results::write(&args.out, &r)?;
    print!("{}", fs::read_to_string(&md).map_err(Error::io(&md))?);
    Ok(())
}

/// One mode over its runs: medians, µs, and each run's forks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mode {
    /// none, separate or inproc.
    pub mode: String,
    /// The median of the runs' averages.
    pub avg: Option<f64>,
    /// Of their p99.
    pub p99: Option<f64>,
    /// Of their p99.9.
    pub p999: Option<f64>,
    /// Of their maxima.
    pub max: Option<f64>,
    /// Of the RT thread's minor faults.
    pub minflt: Option<f64>,
    /// Each run's `forks` word, in run order (a count, or
    /// `separate-process`).
    pub forks: Vec<String>,
}

/// The result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fork {
    /// The machine and the commit measured.
    pub machine: Machine,
    /// When it started (UTC).
    pub date: String,
    /// Seconds per run.
    pub secs: u64,
    /// Runs per mode.
    pub reps: usize,
    /// The modes.
    pub modes: Vec<Mode>,
}

/// The value after the word `key` in a `key value ...` line.
pub fn value_of<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let f: Vec<&str> = line.split_whitespace().collect();
    f.windows(2).find(|w| w[0] == key).map(|w| w[1])
}

impl Fork {
    /// The result of the raw outputs in `raw`.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] or [`Error::Parse`] for `meta` or a run's output that
    /// is missing.
    pub fn from_raw(raw: &Path) -> Result<Fork, Error> {
        let meta = MetaFile::read(raw)?;
        let reps: usize = meta.num("REPS")?;
        let mut modes = vec![];
        for mode in MODES {
            let mut lines = vec![];
            for r in 1..=reps {
                let p = raw.join(format!("{mode}-{r}.out"));
                lines.push(fs::read_to_string(&p).map_err(Error::io(&p))?);
            }
            let med = |key: &str| {
                let v: Vec<f64> = lines
                    .iter()
                    .filter_map(|l| value_of(l, key)?.parse().ok())
                    .collect();
                median(&v)
            };
            modes.push(Mode {
                mode: mode.to_string(),
                avg: med("avg"),
                p99: med("p99"),
                p999: med("p99.9"),
                max: med("max"),
                minflt: med("minflt"),
                forks: lines
                    .iter()
                    .map(|l| value_of(l, "forks").unwrap_or("-").to_string())
                    .collect(),
            });
        }
        Ok(Fork {
            machine: meta.machine()?,
            date: meta.need("DATE")?,
            secs: meta.num("SECS")?,
            reps,
            modes,
        })
    }

    fn mode(&self, name: &str) -> Option<&Mode> {
        self.modes.iter().find(|m| m.mode == name)
    }
}

impl Report for Fork {
    const NAME: &'static str = "fork";

    fn markdown(&self) -> String {
        let (secs, reps) = (self.secs, self.reps);
        let mut s = format!(
            "# fork beside an RT thread: same process vs separate process\n\n\
             Produced by `bench/fork-repro --secs {secs} --reps {reps}` on {}; figures by `cargo xtask fork-table` (`fork.json`).\n\
             Each run: `fork_repro MODE {secs} 200 0 1` (tests/src/bin/fork_repro.rs): the RT thread\n\
             at SCHED_FIFO 80 on CPU 0, interval 200 us, mlockall; the fork loop (fork, child _exit,\n\
             waitpid) on CPU 1. Medians over {reps} runs per mode, modes alternating; latencies in us.\n\n\
             | mode | avg | p99 | p99.9 | max | RT thread minor faults | forks |\n\
             |---|---|---|---|---|---|---|\n",
            self.date
        );
        for m in &self.modes {
            s += &format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                m.mode,
                cell(m.avg),
                cell(m.p99),
                cell(m.p999),
                cell(m.max),
                cell(m.minflt),
                m.forks.join(" ")
            );
        }
        let ratio = |f: fn(&Mode) -> Option<f64>| {
            ratio_text(
                self.mode("inproc").and_then(f),
                self.mode("separate").and_then(f),
            )
        };
        s += &format!(
            "\nRatios inproc / separate: p99 {}, p99.9 {}, max {}.\n\n## Machine\n\n{}\n",
            ratio(|m| m.p99),
            ratio(|m| m.p999),
            ratio(|m| m.max),
            self.machine.markdown()
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_forks_and_ratios() {
        let raw = std::env::temp_dir().join(format!("xtask-fork-{}", std::process::id()));
        let _ = fs::remove_dir_all(&raw);
        fs::create_dir_all(&raw).unwrap();
        fs::write(
            raw.join("meta"),
            "SECS=5\nREPS=2\nDATE=2026-11-30T01:36:35Z\nCOMMIT=\"abc\"\n",
        )
        .unwrap();
        let line = |mode: &str, p99: u32, forks: &str| {
            format!("fork_repro mode {mode} samples 25000 min 4 avg 10 p99 {p99} p99.9 300 max 900 minflt 1 forks {forks}\n")
        };
        for (mode, p99s, forks) in [
            ("none", [30, 40], ["0", "0"]),
            (
                "separate",
                [40, 44],
                ["separate-process", "separate-process"],
            ),
            ("inproc", [160, 180], ["9815", "9999"]),
        ] {
            for r in 0..2 {
                fs::write(
                    raw.join(format!("{mode}-{}.out", r + 1)),
                    line(mode, p99s[r], forks[r]),
                )
                .unwrap();
            }
        }
        let f = Fork::from_raw(&raw).unwrap();
        assert_eq!(f.modes[2].p99, Some(170.0));
        let md = f.markdown();
        assert!(
            md.contains("| inproc | 10 | 170 | 300 | 900 | 1 | 9815 9999 |"),
            "{md}"
        );
        assert!(
            md.contains(
                "| separate | 10 | 42 | 300 | 900 | 1 | separate-process separate-process |"
            ),
            "{md}"
        );
        // 170 / 42
        assert!(
            md.contains("Ratios inproc / separate: p99 4.05, p99.9 1.00, max 1.00."),
            "{md}"
        );
        assert_eq!(value_of("a 1 b 2", "b"), Some("2"));
        assert_eq!(value_of("a 1 b", "b"), None);
        let _ = fs::remove_dir_all(&raw);
    }
}
