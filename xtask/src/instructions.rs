//! instructions' result: user-space instructions per loop iteration of
//! the measuring thread, latscope against cyclictest, from callgrind's
//! per-thread profiles at two run lengths (`bench/instructions`). Each
//! thread's count is the difference of its `totals:` between the long and
//! the short run, over the difference of their lengths: start-up, exit
//! and fixed work cancel. The measuring thread is the one with the most
//! system calls per iteration, at least one.
//!
//! The raw directory holds `NAME/lL-T`: callgrind's profile of thread `T`
//! of program `NAME` (`latscope`, `cyclictest`) at `-l L`, and `meta`:
//! `LONG`, `SHORT`, `FLAGS`, `CYCLICTEST_VERSION` and the machine's lines.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use clap::Args as ClapArgs;
use serde::{Deserialize, Serialize};

use crate::machine::Machine;
use crate::meta::MetaFile;
use crate::results::{self, Report};
use crate::stats::ratio_text;
use crate::Error;

/// The programs, in the table's order.
pub const PROGRAMS: [&str; 2] = ["latscope", "cyclictest"];

/// `cargo xtask instructions-table`.
#[derive(ClapArgs)]
pub struct Args {
    /// The raw outputs of the run (the callgrind profiles).
    #[arg(long)]
    pub raw: PathBuf,
    /// Where instructions.json and instructions.md are written.
    #[arg(long)]
    pub out: PathBuf,
}

/// Writes the result of `args.raw` and prints its markdown.
///
/// # Errors
///
/// [`Error::Io`] or [`Error::Parse`] for raw outputs that cannot be read,
/// or a program without a measuring thread; [`Error::Io`] for results that
/// cannot be written.
pub fn run(args: &Args) -> Result<(), Error> {
    let r = Instructions::from_raw(&args.raw)?;
    let md = results::write(&args.out, &r)?;
    print!("{}", fs::read_to_string(&md).map_err(Error::io(&md))?);
    Ok(())
}

/// One thread of one program.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thread {
    /// Callgrind's thread number (creation order).
    pub thread: u32,
    /// Instructions at the long run.
    pub ir_long: u64,
    /// Instructions at the short run.
    pub ir_short: u64,
    /// Instructions per iteration.
    pub per_iteration: f64,
    /// System calls per iteration.
    pub syscalls_per_iteration: f64,
    /// Whether it is the measuring thread.
    pub measuring: bool,
}

/// One program's threads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Program {
    /// `latscope` or `cyclictest`.
    pub name: String,
    /// Its threads present in both runs, by number.
    pub threads: Vec<Thread>,
}

impl Program {
    /// The measuring thread's instructions per iteration.
    pub fn measuring(&self) -> Option<f64> {
        self.threads
            .iter()
            .find(|t| t.measuring)
            .map(|t| t.per_iteration)
    }
}

/// The result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instructions {
    /// The machine and the commit measured.
    pub machine: Machine,
    /// `-l` of the long runs.
    pub long: u64,
    /// `-l` of the short runs.
    pub short: u64,
    /// Both programs' flags.
    pub flags: String,
    /// Debian's rt-tests version.
    pub cyclictest_version: String,
    /// latscope, then cyclictest.
    pub programs: Vec<Program>,
}

impl Instructions {
    /// The measuring thread's instructions per iteration of `name`.
    pub fn measuring(&self, name: &str) -> Option<f64> {
        self.programs
            .iter()
            .find(|p| p.name == name)
            .and_then(Program::measuring)
    }
}

/// Callgrind's `totals:` line: instructions and, with
/// `--collect-systime=yes`, system calls.
fn totals(path: &Path) -> Result<(u64, u64), Error> {
    let text = fs::read_to_string(path).map_err(Error::io(path))?;
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("totals:"))
        .ok_or_else(|| Error::Parse {
            what: path.display().to_string(),
            why: "no totals: line".into(),
        })?;
    let mut f = line.split_whitespace().map(str::parse::<u64>);
    match (f.next(), f.next()) {
        (Some(Ok(ir)), Some(Ok(sys))) => Ok((ir, sys)),
        _ => Err(Error::Parse {
            what: path.display().to_string(),
            why: format!("totals: {line:?} is not instructions and system calls"),
        }),
    }
}

/// The threads of `dir`'s profiles at `long` and `short`, matched by
/// number, the measuring one marked.
fn threads(dir: &Path, long: u64, short: u64) -> Result<Vec<Thread>, Error> {
    let prefix = format!("l{long}-");
    // callgrind's suffix as it wrote it (`-01`), by number
    let mut numbers: BTreeMap<u32, String> = BTreeMap::new();
    for e in fs::read_dir(dir).map_err(Error::io(dir))? {
        let e = e.map_err(Error::io(dir))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(suffix) = name.strip_prefix(&prefix) {
            if let Ok(t) = suffix.parse() {
                numbers.insert(t, suffix.to_string());
            }
        }
    }
    let n = (long - short) as f64;
    let mut out = vec![];
    for (t, suffix) in numbers {
        let long_path = dir.join(format!("l{long}-{suffix}"));
        let short_path = dir.join(format!("l{short}-{suffix}"));
        if !short_path.exists() {
            continue;
        }
        let (a, sa) = totals(&long_path)?;
        let (b, sb) = totals(&short_path)?;
        out.push(Thread {
            thread: t,
            ir_long: a,
            ir_short: b,
            per_iteration: (a as f64 - b as f64) / n,
            syscalls_per_iteration: (sa as f64 - sb as f64) / n,
            measuring: false,
        });
    }
    // the most system calls per iteration, at least one; the first of equals
    let mut best: Option<usize> = None;
    for (i, t) in out.iter().enumerate() {
        if t.syscalls_per_iteration >= 1.0
            && best.is_none_or(|b| t.syscalls_per_iteration > out[b].syscalls_per_iteration)
        {
            best = Some(i);
        }
    }
    let Some(best) = best else {
        return Err(Error::Parse {
            what: dir.display().to_string(),
            why: "no thread makes a system call per iteration: no measuring thread".into(),
        });
    };
    out[best].measuring = true;
    Ok(out)
}

impl Instructions {
    /// The result of the raw outputs in `raw`.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] or [`Error::Parse`] for a profile or `meta` that is
    /// missing or not what the launcher writes, or a program without a
    /// measuring thread.
    pub fn from_raw(raw: &Path) -> Result<Instructions, Error> {
        let meta = MetaFile::read(raw)?;
        let (long, short): (u64, u64) = (meta.num("LONG")?, meta.num("SHORT")?);
        if long <= short {
            return Err(Error::Parse {
                what: raw.join("meta").display().to_string(),
                why: format!("LONG {long} is not above SHORT {short}"),
            });
        }
        let programs = PROGRAMS
            .iter()
            .map(|name| {
                Ok(Program {
                    name: name.to_string(),
                    threads: threads(&raw.join(name), long, short)?,
                })
            })
            .collect::<Result<_, Error>>()?;
        Ok(Instructions {
            machine: meta.machine()?,
            long,
            short,
            flags: meta.need("FLAGS")?,
            cyclictest_version: meta.need("CYCLICTEST_VERSION")?,
            programs,
        })
    }
}

impl Report for Instructions {
    const NAME: &'static str = "instructions";

    fn markdown(&self) -> String {
        let (l, s) = (self.long, self.short);
        let mut md = format!(
            "# Instructions per loop iteration, measuring thread\n\n\
             Produced by `bench/instructions` at commit {}; figures by `cargo xtask instructions-table` (`instructions.json`).\n\n\
             `valgrind --tool=callgrind --separate-threads=yes PROG {} -l N`, N = {l} and {s};\n\
             per thread (matched by callgrind's thread number): (Ir at -l {l} - Ir at -l {s}) / {}.\n\
             The measuring thread is the thread with the most system calls per iteration (its clock_nanosleep, and its\n\
             clock_gettime, which is a system call under valgrind), at least 1; both binaries are stripped.\n\
             latscope: `cargo build --release -p latscope --features valgrind`; cyclictest: {}.\n\n\
             | program | thread | Ir -l {l} | Ir -l {s} | instructions per iteration | system calls per iteration | measuring |\n\
             |---|---|---|---|---|---|---|\n",
            self.machine.commit,
            self.flags,
            l - s,
            self.cyclictest_version
        );
        for p in &self.programs {
            for t in &p.threads {
                md += &format!(
                    "| {} | {} | {} | {} | {:.1} | {:.2} | {} |\n",
                    p.name,
                    t.thread,
                    t.ir_long,
                    t.ir_short,
                    t.per_iteration,
                    t.syscalls_per_iteration,
                    if t.measuring { "yes" } else { "" }
                );
            }
        }
        let (a, b) = (self.measuring("latscope"), self.measuring("cyclictest"));
        let one = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.1}"));
        md += &format!(
            "\nMeasuring thread: latscope {}, cyclictest {}, ratio {}.\n\n## Machine\n\n{}\n",
            one(a),
            one(b),
            ratio_text(a, b),
            self.machine.markdown()
        );
        md
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(dir: &Path, name: &str, ir: u64, sys: u64) {
        fs::write(
            dir.join(name),
            format!("version: 1\nevents: Ir sysCount sysTime\nfn=x\n0 1\ntotals: {ir} {sys} 99\n"),
        )
        .unwrap();
    }

    #[test]
    fn per_iteration_differences_and_the_measuring_thread() {
        let raw = std::env::temp_dir().join(format!("xtask-instructions-{}", std::process::id()));
        let _ = fs::remove_dir_all(&raw);
        for (name, rows) in [
            // main, measuring, sender
            (
                "latscope",
                [(825121, 100), (1049627, 30000), (1559170, 600)],
            ),
            ("cyclictest", [(724605, 1100), (2281094, 30010), (10, 0)]),
        ] {
            let d = raw.join(name);
            fs::create_dir_all(&d).unwrap();
            for (t, (ir, sys)) in rows.iter().enumerate() {
                let t = t + 1;
                // callgrind pads the thread numbers
                profile(&d, &format!("l13000-{t:02}"), *ir, *sys);
                profile(&d, &format!("l3000-{t:02}"), ir / 3, sys / 4);
            }
        }
        // cyclictest's third thread only ran in the long run
        fs::remove_file(raw.join("cyclictest/l3000-03")).unwrap();
        fs::write(
            raw.join("meta"),
            "LONG=13000\nSHORT=3000\nFLAGS=\"-t 1 -i 1000\"\nCYCLICTEST_VERSION=\"rt-tests 2.4-1\"\nCOMMIT=\"abc\"\n",
        )
        .unwrap();
        let r = Instructions::from_raw(&raw).unwrap();
        let ls = &r.programs[0].threads;
        assert_eq!(ls.len(), 3);
        assert!(ls[1].measuring && !ls[0].measuring && !ls[2].measuring);
        // (1049627 - 349875) / 10000
        assert!((ls[1].per_iteration - 69.9752).abs() < 1e-9, "{:?}", ls[1]);
        assert_eq!(r.programs[1].threads.len(), 2);
        let md = r.markdown();
        assert!(
            md.contains("| latscope | 2 | 1049627 | 349875 | 70.0 | 2.25 | yes |"),
            "{md}"
        );
        assert!(
            md.contains("Measuring thread: latscope 70.0, cyclictest"),
            "{md}"
        );
        // without a thread making a call per iteration there is no figure
        for t in 1..=3 {
            profile(&raw.join("latscope"), &format!("l13000-{t:02}"), 10, 0);
        }
        let e = Instructions::from_raw(&raw).unwrap_err().to_string();
        assert!(e.contains("no measuring thread"), "{e}");
        let _ = fs::remove_dir_all(&raw);
    }
}
