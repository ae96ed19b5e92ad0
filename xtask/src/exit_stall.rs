//! exit-stall's result: latscope's exit beside cyclictest on CPU 0, with
//! and without demoting its threads before it unlocks its memory. From the
//! raw outputs the launcher (`bench/exit-stall`) keeps: `MODE-R.line`,
//! `cyclictest_max_us cyclictest_avg_us exit_ms` of repetition `R`, and
//! `meta`: `MIB`, `REPS`, `DATE`, the load averages and the commit.

use std::fs;
use std::path::{Path, PathBuf};

use clap::Args as ClapArgs;
use serde::{Deserialize, Serialize};

use crate::machine::Machine;
use crate::meta::MetaFile;
use crate::results::{self, Report};
use crate::stats::{awk_number, cell, median, ratio_text};
use crate::Error;

/// The modes, in the order they alternate.
pub const MODES: [&str; 2] = ["demote", "no-demote"];

/// `cargo xtask exit-stall-table`.
#[derive(ClapArgs)]
pub struct Args {
    /// The raw outputs of the run.
    #[arg(long)]
    pub raw: PathBuf,
    /// Where exit-stall.json and exit-stall.md are written.
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
    let r = ExitStall::from_raw(&args.raw)?;
    let md = results::write(&args.out, &r)?;
    print!("{}", fs::read_to_string(&md).map_err(Error::io(&md))?);
    Ok(())
}

/// One repetition.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rep {
    /// cyclictest's maximum, µs.
    pub cyclictest_max_us: Option<f64>,
    /// cyclictest's average, µs.
    pub cyclictest_avg_us: Option<f64>,
    /// latscope's exit, from its summary line to its reaping, ms.
    pub exit_ms: Option<f64>,
}

/// One mode over its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mode {
    /// demote or no-demote.
    pub mode: String,
    /// Each repetition, in order.
    pub reps: Vec<Rep>,
}

impl Mode {
    fn median_of(&self, f: fn(&Rep) -> Option<f64>) -> Option<f64> {
        median(&self.reps.iter().filter_map(f).collect::<Vec<_>>())
    }

    /// The median of cyclictest's maxima.
    pub fn median_max(&self) -> Option<f64> {
        self.median_of(|r| r.cyclictest_max_us)
    }
}

/// The result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExitStall {
    /// The machine and the commit measured.
    pub machine: Machine,
    /// When it started (UTC).
    pub date: String,
    /// `--ballast-mib`.
    pub mib: u64,
    /// Both modes.
    pub modes: Vec<Mode>,
}

impl ExitStall {
    /// The result of the raw outputs in `raw`.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] or [`Error::Parse`] for `meta` or a repetition's line
    /// that is missing.
    pub fn from_raw(raw: &Path) -> Result<ExitStall, Error> {
        let meta = MetaFile::read(raw)?;
        let reps: usize = meta.num("REPS")?;
        let mut modes = vec![];
        for mode in MODES {
            let mut v = vec![];
            for r in 1..=reps {
                let p = raw.join(format!("{mode}-{r}.line"));
                let text = fs::read_to_string(&p).map_err(Error::io(&p))?;
                let mut f = text.split_whitespace().map(|x| x.parse::<f64>().ok());
                v.push(Rep {
                    cyclictest_max_us: f.next().flatten(),
                    cyclictest_avg_us: f.next().flatten(),
                    exit_ms: f.next().flatten(),
                });
            }
            modes.push(Mode {
                mode: mode.to_string(),
                reps: v,
            });
        }
        Ok(ExitStall {
            machine: meta.machine()?,
            date: meta.need("DATE")?,
            mib: meta.num("MIB")?,
            modes,
        })
    }
}

impl Report for ExitStall {
    const NAME: &'static str = "exit-stall";

    fn markdown(&self) -> String {
        let (mib, reps) = (self.mib, self.modes.first().map_or(0, |m| m.reps.len()));
        let mut s = format!(
            "# Exit stall: latscope's exit beside cyclictest on CPU 0\n\n\
             Produced by `bench/exit-stall --mib {mib} --reps {reps}` on {}; figures by `cargo xtask exit-stall-table` (`exit-stall.json`).\n\n\
             Commands (per repetition, the two modes alternating):\n\n\
             - `latscope --ballast-mib {mib} --policy rr -p 80 -a 0 -t 1 -i 1000 -D 3 -q [--no-exit-demote]`\n\
             - once its VmLck reaches {mib} MiB: `cyclictest -p 10 -a 0 -t 1 -m -i 200 -D 6 -q --json F`\n\
             - exit time: from latscope's summary line to its reaping, measured by the script (includes the summary's own flush)\n\n\
             | mode | cyclictest max (us), each rep | median max | median avg | latscope exit (ms), median |\n\
             |---|---|---|---|---|\n",
            self.date
        );
        for m in &self.modes {
            let each: Vec<String> = m
                .reps
                .iter()
                .map(|r| r.cyclictest_max_us.map_or("-".into(), awk_number))
                .collect();
            s += &format!(
                "| {} | {} | {} | {} | {} |\n",
                m.mode,
                each.join(" "),
                cell(m.median_max()),
                cell(m.median_of(|r| r.cyclictest_avg_us)),
                cell(m.median_of(|r| r.exit_ms))
            );
        }
        let max = |name: &str| {
            self.modes
                .iter()
                .find(|m| m.mode == name)
                .and_then(Mode::median_max)
        };
        s += &format!(
            "\nRatio of the median maxima, no-demote / demote: {}.\n\n## Machine\n\n{}\n",
            ratio_text(max("no-demote"), max("demote")),
            self.machine.markdown()
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_the_ratio() {
        let raw = std::env::temp_dir().join(format!("xtask-exit-stall-{}", std::process::id()));
        let _ = fs::remove_dir_all(&raw);
        fs::create_dir_all(&raw).unwrap();
        fs::write(
            raw.join("meta"),
            "MIB=2048\nREPS=3\nDATE=2026-11-30T01:36:30Z\nCOMMIT=\"abc\"\n",
        )
        .unwrap();
        for (mode, lines) in [
            (
                "demote",
                ["7524 18.09 457", "4794 19.08 542", "1388 19.5 600"],
            ),
            (
                "no-demote",
                ["392244 30.21 389", "464391 31 380", "5597 29 400"],
            ),
        ] {
            for (r, l) in lines.iter().enumerate() {
                fs::write(raw.join(format!("{mode}-{}.line", r + 1)), format!("{l}\n")).unwrap();
            }
        }
        let md = ExitStall::from_raw(&raw).unwrap().markdown();
        assert!(
            md.contains("| demote | 7524 4794 1388 | 4794 | 19.08 | 542 |"),
            "{md}"
        );
        assert!(
            md.contains("| no-demote | 392244 464391 5597 | 392244 | 30.21 | 389 |"),
            "{md}"
        );
        assert!(md.contains("no-demote / demote: 81.82."), "{md}");
        let _ = fs::remove_dir_all(&raw);
    }
}
