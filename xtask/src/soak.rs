//! soak's result and verdict: an hour of latscope streaming into one
//! recorder, the recording's totals against the target's own, and the
//! recorder's memory. From the raw outputs the launcher (`bench/soak`)
//! keeps:
//!
//! - `target.json`: the target's `--json`;
//! - `host.json`: `latscope-host report --format json` of the recording;
//! - `host-rss.log`: `SECONDS VmRSS_kB` every 10 s (`-` once the
//!   recorder is gone);
//! - `commands`: the recorder's and the target's command lines;
//! - `meta`: the load averages and the commit.

use std::fs;
use std::path::{Path, PathBuf};

use clap::Args as ClapArgs;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::machine::Machine;
use crate::meta::MetaFile;
use crate::results::{self, Report};
use crate::Error;

/// The recorder's VmRSS may grow this much after the first minute, kB.
pub const GROWTH_LIMIT_KB: u64 = 2048;

/// `cargo xtask soak-table`.
#[derive(ClapArgs)]
pub struct Args {
    /// The raw outputs of the run.
    #[arg(long)]
    pub raw: PathBuf,
    /// Where soak.json and soak.md are written.
    #[arg(long)]
    pub out: PathBuf,
}

/// Writes the result of `args.raw` and prints its markdown; the verdict
/// is the returned bool (true: pass).
///
/// # Errors
///
/// [`Error::Io`], [`Error::Json`] or [`Error::Parse`] for raw outputs that
/// cannot be read; [`Error::Io`] for results that cannot be written.
pub fn run(args: &Args) -> Result<bool, Error> {
    let r = Soak::from_raw(&args.raw)?;
    let md = results::write(&args.out, &r)?;
    print!("{}", fs::read_to_string(&md).map_err(Error::io(&md))?);
    Ok(r.pass)
}

/// One thread: the recording's totals against the target's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Totals {
    /// Cycles.
    pub cycles: u64,
    /// The minimum, ns.
    pub min_ns: u64,
    /// The maximum, ns.
    pub max_ns: u64,
}

/// One thread of both documents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thread {
    /// The thread's number.
    pub thread: u32,
    /// The recording's.
    pub host: Totals,
    /// The target's own, if its `--json` has the thread.
    pub target: Option<Totals>,
}

impl Thread {
    /// Whether both say the same.
    pub fn equal(&self) -> bool {
        self.target == Some(self.host)
    }
}

/// The recorder's memory after the first minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    /// VmRSS at the first sample from 60 s on, kB.
    pub at_one_minute_kb: u64,
    /// At the last sample, kB.
    pub at_end_kb: u64,
    /// The peak from 60 s on, kB.
    pub peak_kb: u64,
}

impl Memory {
    /// The growth from the first minute to the end, kB (negative: it
    /// shrank).
    pub fn growth_kb(&self) -> i64 {
        self.at_end_kb as i64 - self.at_one_minute_kb as i64
    }
}

/// The result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Soak {
    /// The machine and the commit measured.
    pub machine: Machine,
    /// The recorder's and the target's command lines.
    pub commands: Vec<String>,
    /// The report's `exact_at_end`.
    pub exact_at_end: Option<bool>,
    /// The report's link counters, as it wrote them.
    pub link: Value,
    /// Every thread of the recording.
    pub threads: Vec<Thread>,
    /// The recorder's memory, with samples from 60 s on.
    pub memory: Option<Memory>,
    /// Exact at the end, every thread equal, and the memory grew at most
    /// [`GROWTH_LIMIT_KB`].
    pub pass: bool,
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

fn totals(v: &Value) -> Option<Totals> {
    Some(Totals {
        cycles: v["cycles"].as_u64()?,
        min_ns: v["min_ns"].as_u64()?,
        max_ns: v["max_ns"].as_u64()?,
    })
}

/// The memory of `host-rss.log`'s samples from 60 s on.
fn memory(text: &str) -> Option<Memory> {
    let after: Vec<u64> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let s: u64 = f.next()?.parse().ok()?;
            let kb: u64 = f.next()?.parse().ok()?;
            (s >= 60).then_some(kb)
        })
        .collect();
    Some(Memory {
        at_one_minute_kb: *after.first()?,
        at_end_kb: *after.last()?,
        peak_kb: *after.iter().max()?,
    })
}

impl Soak {
    /// The result of the raw outputs in `raw`.
    ///
    /// # Errors
    ///
    /// [`Error::Io`], [`Error::Json`] or [`Error::Parse`] for a file that
    /// is missing or not what the launcher writes.
    pub fn from_raw(raw: &Path) -> Result<Soak, Error> {
        let meta = MetaFile::read(raw)?;
        let target = json(&raw.join("target.json"))?;
        let host_path = raw.join("host.json");
        let host = json(&host_path)?;
        let run = &host["runs"][0];
        let mut threads = vec![];
        for th in run["threads"]
            .as_array()
            .ok_or_else(|| parse_err(&host_path, "no threads in the first run"))?
        {
            let n = th["thread"]
                .as_u64()
                .ok_or_else(|| parse_err(&host_path, "a thread without its number"))?;
            threads.push(Thread {
                thread: n as u32,
                host: totals(th).ok_or_else(|| parse_err(&host_path, format!("thread {n}")))?,
                target: totals(&target["thread"][n.to_string()]),
            });
        }
        let rss = raw.join("host-rss.log");
        let memory = memory(&fs::read_to_string(&rss).map_err(Error::io(&rss))?);
        let commands_path = raw.join("commands");
        let commands = fs::read_to_string(&commands_path)
            .map_err(Error::io(&commands_path))?
            .lines()
            .map(str::to_string)
            .collect();
        let exact_at_end = run["exact_at_end"].as_bool();
        let pass = exact_at_end == Some(true)
            && threads.iter().all(Thread::equal)
            && memory.is_none_or(|m| m.growth_kb() <= GROWTH_LIMIT_KB as i64);
        Ok(Soak {
            machine: meta.machine()?,
            commands,
            exact_at_end,
            link: host["link"].clone(),
            threads,
            memory,
            pass,
        })
    }
}

/// The link counters as `name value` pairs, in the report's order.
fn link_text(link: &Value) -> String {
    link.as_object().map_or_else(
        || link.to_string(),
        |m| {
            m.iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        },
    )
}

impl Report for Soak {
    const NAME: &'static str = "soak";

    fn markdown(&self) -> String {
        let mut s = format!(
            "# Soak: {}\n\n- host exact at end: {}; link: {}\n",
            self.commands.join("\n"),
            self.exact_at_end.map_or("-".into(), |e| if e {
                "True".into()
            } else {
                "False".to_string()
            }),
            link_text(&self.link)
        );
        for t in &self.threads {
            let target = t.target.map_or("none".into(), |x| {
                format!("cycles {} min {} max {} ns", x.cycles, x.min_ns, x.max_ns)
            });
            s += &format!(
                "- T{}: host cycles {} min {} max {} ns; target {target}: {}\n",
                t.thread,
                t.host.cycles,
                t.host.min_ns,
                t.host.max_ns,
                if t.equal() { "equal" } else { "DIFFERENT" }
            );
        }
        if let Some(m) = self.memory {
            s += &format!(
                "- host VmRSS: {} kB at 1 min, {} kB at the end, peak {} kB, growth {} kB\n",
                m.at_one_minute_kb,
                m.at_end_kb,
                m.peak_kb,
                m.growth_kb()
            );
        }
        s += &format!("- verdict: {}\n", if self.pass { "PASS" } else { "FAIL" });
        s += "\n## Machine\n\n";
        s += &self.machine.markdown();
        s += "\n";
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(name: &str, host_max: u64, rss: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("xtask-soak-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("meta"), "COMMIT=\"abc\"\n").unwrap();
        fs::write(d.join("commands"), "host record\nlatscope -t 1\n").unwrap();
        fs::write(
            d.join("target.json"),
            r#"{"thread": {"0": {"cycles": 10, "min_ns": 5, "max_ns": 900}}}"#,
        )
        .unwrap();
        fs::write(
            d.join("host.json"),
            format!(
                r#"{{"link": {{"bytes": 10, "frames": 2}}, "runs": [{{"exact_at_end": true, "threads": [{{"thread": 0, "cycles": 10, "min_ns": 5, "max_ns": {host_max}}}]}}]}}"#
            ),
        )
        .unwrap();
        fs::write(d.join("host-rss.log"), rss).unwrap();
        d
    }

    #[test]
    fn equal_totals_and_flat_memory_pass() {
        let d = raw("pass", 900, "0 3000\n60 3640\n120 3700\n180 3896\n190 -\n");
        let s = Soak::from_raw(&d).unwrap();
        assert!(s.pass, "{s:?}");
        let m = s.memory.unwrap();
        assert_eq!(
            (m.at_one_minute_kb, m.at_end_kb, m.peak_kb, m.growth_kb()),
            (3640, 3896, 3896, 256)
        );
        let md = s.markdown();
        assert!(
            md.contains(
                "- T0: host cycles 10 min 5 max 900 ns; target cycles 10 min 5 max 900 ns: equal"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "- host VmRSS: 3640 kB at 1 min, 3896 kB at the end, peak 3896 kB, growth 256 kB"
            ),
            "{md}"
        );
        assert!(md.contains("- verdict: PASS"));
        assert!(
            md.contains("- host exact at end: True; link: bytes 10, frames 2\n"),
            "{md}"
        );
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_different_total_or_growth_fails() {
        let d = raw("differs", 901, "60 3640\n120 3700\n");
        let s = Soak::from_raw(&d).unwrap();
        assert!(!s.pass && !s.threads[0].equal());
        assert!(s.markdown().contains("DIFFERENT"));
        let d = raw("grows", 900, "60 3000\n3600 5049\n");
        assert!(!Soak::from_raw(&d).unwrap().pass);
        let _ = fs::remove_dir_all(&d);
    }
}
