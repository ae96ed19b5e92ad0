//! `cargo xtask stats ...`: the statistics the launchers of `bench/` ask
//! for, one line each on standard output ("-" for a figure that cannot be
//! computed), so that no statistic is computed in shell or awk.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use clap::Subcommand;

use super::{cell, g3, mean, median, ratio_text, PairStats};
use crate::histfile::Histfile;
use crate::samples::{peaks, PrivateLocked, Stack};
use crate::windows::Windows;
use crate::Error;

/// One statistic.
#[derive(Subcommand)]
pub enum Stats {
    /// The median of the numbers on standard input, one per line ("-"
    /// lines left out).
    Median,
    /// The mean of the numbers on standard input, divided by DIVIDE,
    /// with DECIMALS decimals.
    Mean {
        /// Decimals printed.
        #[arg(default_value_t = 3)]
        decimals: usize,
        /// A divisor (1000: ns to µs).
        #[arg(long, default_value_t = 1.0)]
        divide: f64,
    },
    /// A/B with two decimals ("-" when either is "-" or B is 0).
    Ratio {
        /// A.
        a: String,
        /// B.
        b: String,
    },
    /// Paired statistics of the "A B" lines on standard input:
    /// `MEDIAN LO HI BELOW ABOVE N P RATIOS` (see `xtask::stats`).
    Pairs,
    /// `min avg p99 p99.9 max p50` (µs) of a cyclictest histogram file.
    Hist {
        /// The histogram file.
        file: PathBuf,
    },
    /// `vmlck vmrss locked minor major` of a process sample log.
    Samples {
        /// The log `sample_proc` wrote.
        file: PathBuf,
    },
    /// The attributions of a `latscope-host report --format json` on
    /// standard input: the sum of every run's `explained.total`.
    Explained,
    /// `bench/max-latency`'s expiry-to-switch windows of a trace (see
    /// `xtask::windows`).
    Windows {
        /// tracefs' text of the run.
        trace: PathBuf,
        /// The program's name in the report.
        prog: String,
        /// The run's histogram file, for its maximum.
        hist: PathBuf,
    },
    /// `rss size` (kB) of the mapping holding a thread's stack pointer,
    /// from copies of `/proc/PID/task/TID/syscall` and `/proc/PID/smaps`.
    Stack {
        /// The copy of the thread's syscall file.
        syscall: PathBuf,
        /// The copy of smaps.
        smaps: PathBuf,
    },
    /// `total code rest` (kB): private locked memory of a copy of
    /// `/proc/PID/smaps`.
    PrivateLocked {
        /// The copy of smaps.
        smaps: PathBuf,
        /// The program's path (`readlink /proc/PID/exe`).
        exe: String,
    },
}

fn stdin_text() -> Result<String, Error> {
    let mut s = String::new();
    io::stdin()
        .read_to_string(&mut s)
        .map_err(Error::io("standard input"))?;
    Ok(s)
}

fn number(v: &str) -> Option<f64> {
    v.parse::<f64>().ok().filter(|x| x.is_finite())
}

fn stdin_numbers() -> Result<Vec<f64>, Error> {
    let text = stdin_text()?;
    let mut v = Vec::new();
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && *l != "-")
    {
        v.push(number(line).ok_or_else(|| Error::Parse {
            what: "standard input".into(),
            why: format!("not a number: {line:?}"),
        })?);
    }
    Ok(v)
}

fn read(path: &PathBuf) -> Result<String, Error> {
    fs::read_to_string(path).map_err(Error::io(path))
}

/// The line of `pairs`, or eight "-" without a pair.
pub fn pairs_line(s: Option<&PairStats>) -> String {
    let Some(s) = s else {
        return "- - - - - - - -".into();
    };
    let ratios: Vec<String> = s.ratios.iter().map(|r| format!("{r:.2}")).collect();
    format!(
        "{:.2} {:.2} {:.2} {} {} {} {} {}",
        s.median,
        s.lo,
        s.hi,
        s.below,
        s.above,
        s.n,
        g3(s.p),
        ratios.join(",")
    )
}

/// Print the statistic asked for.
///
/// # Errors
///
/// An unreadable file, or input that is not numbers.
pub fn run(stat: Stats) -> Result<(), Error> {
    let line = match stat {
        Stats::Median => cell(median(&stdin_numbers()?)),
        Stats::Mean { decimals, divide } => {
            mean(&stdin_numbers()?).map_or("-".into(), |m| format!("{:.decimals$}", m / divide))
        }
        Stats::Ratio { a, b } => ratio_text(number(&a), number(&b)),
        Stats::Pairs => {
            let text = stdin_text()?;
            let pairs: Vec<(Option<f64>, Option<f64>)> = text
                .lines()
                .filter_map(|l| {
                    let mut f = l.split_whitespace();
                    Some((f.next().map(number)?, f.next().and_then(number)))
                })
                .collect();
            pairs_line(PairStats::of(&pairs).as_ref())
        }
        Stats::Hist { file } => {
            let h = Histfile::parse(&read(&file)?).map_err(|why| Error::Parse {
                what: file.display().to_string(),
                why,
            })?;
            h.summary().map_or("- - - - - -".into(), |s| s.line())
        }
        Stats::Samples { file } => peaks(&read(&file)?).map_or("- - - - -".into(), |p| p.line()),
        Stats::Explained => {
            crate::explain_overhead::explained(&stdin_text()?, Path::new("standard input"))?
                .to_string()
        }
        Stats::Windows { trace, prog, hist } => {
            let max = Histfile::parse(&read(&hist)?)
                .ok()
                .and_then(|h| h.summary())
                .map(|s| s.max);
            let report = Windows::parse(&read(&trace)?).report(&prog, max);
            print!("{report}");
            return Ok(());
        }
        Stats::Stack { syscall, smaps } => Stack::of(&read(&syscall)?, &read(&smaps)?)
            .map_or("- -".into(), |s| format!("{} {}", s.rss_kb, s.size_kb)),
        Stats::PrivateLocked { smaps, exe } => PrivateLocked::of(&read(&smaps)?, &exe).line(),
    };
    println!("{line}");
    Ok(())
}
