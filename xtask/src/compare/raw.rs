//! The raw outputs of a compare-cyclictest run, read into [`Compare`].

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{
    Compare, Condition, Conditions, Cost, Eviction, Figure, Latency, MuslMemory, Other, Unlocked,
};
use crate::histfile::Summary;
use crate::instructions::Instructions;
use crate::meta::MetaFile;
use crate::results;
use crate::samples::{peaks, strace_calls, Peaks};
use crate::stats::median;
use crate::Error;

/// The run's settings, from its `meta` file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// When it started (UTC, ISO 8601).
    pub started: String,
    /// How long it took, s.
    pub elapsed_s: u64,
    /// `--quick`: 1 s runs, no callgrind.
    pub quick: bool,
    /// Alternating pairs.
    pub pairs: usize,
    /// Seconds per latency run.
    pub secs: u64,
    /// `--explain US`, if given.
    pub explain_us: Option<u64>,
    /// Whether the static musl build was measured.
    pub musl: bool,
}

impl Meta {
    /// `-l` of the long runs: 5000 cycles of 200 µs per second.
    pub fn loops(&self) -> u64 {
        self.secs * 5000
    }

    /// `-l` of the short runs, whose cost is subtracted.
    pub fn short(&self) -> u64 {
        self.secs * 1250
    }

    /// The cycles between the long and the short run, both threads.
    pub fn cycles(&self) -> u64 {
        2 * (self.loops() - self.short())
    }

    /// `-l` of the memory runs.
    pub fn memory_loops(&self) -> u64 {
        self.secs * 1000 + 1500
    }
}

/// `meta`'s settings.
fn meta(m: &MetaFile) -> Result<Meta, Error> {
    Ok(Meta {
        started: m.need("START")?,
        elapsed_s: m.num("ELAPSED")?,
        quick: m.num::<u8>("QUICK")? == 1,
        pairs: m.num("PAIRS")?,
        secs: m.num("SECS")?,
        explain_us: m
            .get("EXPLAIN")
            .filter(|v| !v.is_empty())
            .and_then(|v| v.parse().ok()),
        musl: m.num::<u8>("MUSL")? == 1,
    })
}

fn read_opt(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok()
}

/// The numbers of a one-line raw file; `None` for a missing file.
fn line(path: &Path) -> Option<Vec<Option<f64>>> {
    let text = read_opt(path)?;
    Some(text.split_whitespace().map(|v| v.parse().ok()).collect())
}

/// One resources run: per cycle, and the samples' faults.
#[derive(Default, Clone, Copy)]
struct Res {
    cpu_us: Option<f64>,
    syscalls: Option<f64>,
    nanosleep: Option<f64>,
    other: Option<f64>,
    peaks: Option<Peaks>,
}

/// `/usr/bin/time -f '%U %S'`: user + system seconds of its last line.
fn cpu_seconds(text: &str) -> Option<f64> {
    let mut f = text.lines().last()?.split_whitespace();
    Some(f.next()?.parse::<f64>().ok()? + f.next()?.parse::<f64>().ok()?)
}

fn round(x: f64, decimals: i32) -> f64 {
    let m = 10f64.powi(decimals);
    (x * m).round() / m
}

fn res(raw: &Path, name: &str, pair: usize, m: &Meta) -> Res {
    let base = |ext: String| raw.join(format!("res-{name}-{pair}.{ext}"));
    let (l, s) = (m.loops(), m.short());
    let d = m.cycles() as f64;
    let cpu = |n: u64| read_opt(&base(format!("time{n}"))).and_then(|t| cpu_seconds(&t));
    // each strace table read once, both of its rows taken from it
    let (long, short) = (
        read_opt(&base(format!("strace{l}"))).unwrap_or_default(),
        read_opt(&base(format!("strace{s}"))).unwrap_or_default(),
    );
    let diff = |sc: &str| {
        Some(strace_calls(&long, sc).unwrap_or(0.0) - strace_calls(&short, sc).unwrap_or(0.0))
    };
    // the figures as the launcher's lines kept them: 3 and 4 decimals
    let (all, ns) = (diff("total"), diff("clock_nanosleep"));
    Res {
        cpu_us: cpu(l).zip(cpu(s)).map(|(a, b)| round((a - b) * 1e6 / d, 3)),
        syscalls: all.map(|v| round(v / d, 4)),
        nanosleep: ns.map(|v| round(v / d, 4)),
        other: all.zip(ns).map(|(a, n)| round((a - n) / d, 4)),
        peaks: read_opt(&base("samples".into())).and_then(|t| peaks(&t)),
    }
}

/// One memory run: the samples' peaks and the private locked memory.
#[derive(Default, Clone)]
struct Mem {
    peaks: Option<Peaks>,
    private: Option<Vec<Option<f64>>>,
}

fn mem(raw: &Path, name: &str, pair: usize) -> Mem {
    let base = |ext: &str| raw.join(format!("mem-{name}-{pair}.{ext}"));
    Mem {
        peaks: read_opt(&base("samples")).and_then(|t| peaks(&t)),
        private: line(&base("private")),
    }
}

impl Mem {
    fn vmlck(&self) -> Option<f64> {
        self.peaks.map(|p| p.vmlck_kb as f64)
    }
    fn vmrss(&self) -> Option<f64> {
        self.peaks.map(|p| p.vmrss_kb as f64)
    }
    fn locked(&self) -> Option<f64> {
        self.peaks.map(|p| p.locked_kb as f64)
    }
    fn private(&self, i: usize) -> Option<f64> {
        self.private.as_ref()?.get(i).copied().flatten()
    }
}

/// One latency run: its histogram figures and the samples' faults.
#[derive(Default, Clone, Copy)]
struct Lat {
    hist: Option<Summary>,
    peaks: Option<Peaks>,
}

fn lat(raw: &Path, cond: Condition, name: &str, pair: usize) -> Lat {
    let base = |ext: &str| raw.join(format!("lat-{}-{name}-{pair}.{ext}", cond.name()));
    let hist = line(&base("line")).and_then(|v| {
        let f = |i: usize| v.get(i).copied().flatten();
        Some(Summary {
            min: f(0)?,
            avg: f(1)?,
            p99: f(2)?,
            p999: f(3)?,
            max: f(4)?,
            p50: f(5)?,
        })
    });
    Lat {
        hist,
        peaks: read_opt(&base("samples")).and_then(|t| peaks(&t)),
    }
}

/// The figure of a value of latscope's runs against cyclictest's.
fn figure<T>(a: &[T], b: &[T], f: impl Fn(&T) -> Option<f64>) -> Figure {
    let pairs: Vec<_> = a.iter().zip(b).map(|(x, y)| (f(x), f(y))).collect();
    Figure::of(&pairs)
}

fn faults(p: &Option<Peaks>, major: bool) -> Option<f64> {
    p.map(|p| if major { p.major_faults } else { p.minor_faults } as f64)
}

fn latency(raw: &Path, cond: Condition, pairs: usize) -> Latency {
    let runs = |name: &str| {
        (1..=pairs)
            .map(|p| lat(raw, cond, name, p))
            .collect::<Vec<_>>()
    };
    let (l, c) = (runs("latscope"), runs("cyclictest"));
    let h = |f: fn(&Summary) -> f64| move |r: &Lat| r.hist.as_ref().map(f);
    let unlocked = (cond == Condition::Reclaim).then(|| {
        let (l, c) = (runs("latscope-nomlock"), runs("cyclictest-nomlock"));
        Unlocked {
            p99: figure(&l, &c, h(|s| s.p99)),
            p999: figure(&l, &c, h(|s| s.p999)),
            max: figure(&l, &c, h(|s| s.max)),
            major_faults: figure(&l, &c, |r| faults(&r.peaks, true)),
        }
    });
    Latency {
        min: figure(&l, &c, h(|s| s.min)),
        avg: figure(&l, &c, h(|s| s.avg)),
        p50: figure(&l, &c, h(|s| s.p50)),
        p99: figure(&l, &c, h(|s| s.p99)),
        p999: figure(&l, &c, h(|s| s.p999)),
        max: figure(&l, &c, h(|s| s.max)),
        minor_faults: figure(&l, &c, |r| faults(&r.peaks, false)),
        major_faults: figure(&l, &c, |r| faults(&r.peaks, true)),
        unlocked,
    }
}

fn cost(raw: &Path, m: &Meta) -> (Cost, [Option<f64>; 2]) {
    let n = m.pairs;
    let res_runs = |name: &str| (1..=n).map(|p| res(raw, name, p, m)).collect::<Vec<_>>();
    let mem_runs = |name: &str| (1..=n).map(|p| mem(raw, name, p)).collect::<Vec<_>>();
    let (rl, rc) = (res_runs("latscope"), res_runs("cyclictest"));
    let (ml, mc, mf) = (
        mem_runs("latscope"),
        mem_runs("cyclictest"),
        mem_runs("std-floor"),
    );
    let musl = m.musl.then(|| {
        let mm = mem_runs("latscope-musl");
        MuslMemory {
            locked_kb: figure(&mm, &mc, Mem::locked),
            private_locked_kb: figure(&mm, &mc, |r| r.private(0)),
            vmrss_kb: figure(&mm, &mc, Mem::vmrss),
        }
    });
    let other = |runs: &[Res]| median(&runs.iter().filter_map(|r| r.other).collect::<Vec<_>>());
    let cost = Cost {
        syscalls_per_cycle: figure(&rl, &rc, |r| r.syscalls),
        clock_nanosleep_per_cycle: figure(&rl, &rc, |r| r.nanosleep),
        cpu_us_per_cycle: figure(&rl, &rc, |r| r.cpu_us),
        vmlck_kb: figure(&ml, &mc, Mem::vmlck),
        locked_kb: figure(&ml, &mc, Mem::locked),
        private_locked_kb: figure(&ml, &mc, |r| r.private(0)),
        private_locked_code_kb: figure(&ml, &mc, |r| r.private(1)),
        private_locked_rest_kb: figure(&ml, &mc, |r| r.private(2)),
        vmrss_kb: figure(&ml, &mc, Mem::vmrss),
        std_floor_locked_kb: figure(&mf, &mc, Mem::locked),
        std_floor_private_locked_kb: figure(&mf, &mc, |r| r.private(0)),
        std_floor_private_locked_code_kb: figure(&mf, &mc, |r| r.private(1)),
        std_floor_vmrss_kb: figure(&mf, &mc, Mem::vmrss),
        musl,
        minor_faults: figure(&rl, &rc, |r| faults(&r.peaks, false)),
        major_faults: figure(&rl, &rc, |r| faults(&r.peaks, true)),
    };
    (cost, [other(&rl), other(&rc)])
}

/// Read the raw outputs of a run.
pub(super) fn load(raw: &Path) -> Result<Compare, Error> {
    let file = MetaFile::read(raw)?;
    let machine = file.machine()?;
    let meta = meta(&file)?;
    let (cost, other_syscalls) = cost(raw, &meta);
    let latency = |c| latency(raw, c, meta.pairs);
    // bench/instructions' typed result, when the run was not --quick
    let instr = results::read::<Instructions>(raw)
        .ok()
        .and_then(|i| i.measuring("latscope").zip(i.measuring("cyclictest")));
    let evictions = [
        "latscope",
        "cyclictest",
        "latscope-nomlock",
        "cyclictest-nomlock",
    ]
    .iter()
    .map(|run| Eviction {
        run: run.to_string(),
        output: read_opt(&raw.join(format!("lat-reclaim-{run}-1.evict")))
            .unwrap_or_default()
            .trim()
            .to_string(),
    })
    .collect();
    let bytes = |k: &str| file.get(k).and_then(|v| v.parse().ok());
    let version = |k: &str| file.get(k).unwrap_or_else(|| "unknown".into());
    Ok(Compare {
        cyclictest_version: version("CYCLICTEST_VERSION"),
        latscope_version: version("LATSCOPE_VERSION"),
        other: Other {
            other_syscalls_per_cycle: other_syscalls,
            instructions_per_loop: instr.map(|(a, b)| [a, b]),
            binary_bytes: [bytes("LATSCOPE_BYTES"), bytes("CYCLICTEST_BYTES")],
            musl_binary_bytes: bytes("MUSL_BYTES"),
        },
        latency: Conditions {
            idle: latency(Condition::Idle),
            cpu: latency(Condition::Cpu),
            hackbench: latency(Condition::Hackbench),
            reclaim: latency(Condition::Reclaim),
        },
        evictions,
        cost,
        meta,
        machine,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_and_strace_outputs() {
        let s = cpu_seconds("Command exited with non-zero status 1\n0.10 0.71\n").expect("seconds");
        assert!((s - 0.81).abs() < 1e-12, "{s}");
        let strace = "\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ------------------
 99.20   11.106032         113     97975      1949 clock_nanosleep
  0.00    0.000000           0         1         1 ioctl
------ ----------- ----------- --------- --------- ------------------
100.00   11.196032         114     98002      1950 total
";
        assert_eq!(strace_calls(strace, "total"), Some(98002.0));
        assert_eq!(strace_calls(strace, "clock_nanosleep"), Some(97975.0));
        assert_eq!(strace_calls(strace, "mmap"), None);
    }

    #[test]
    fn cycles_of_a_run() {
        let m = Meta {
            started: String::new(),
            elapsed_s: 0,
            quick: false,
            pairs: 1,
            secs: 4,
            explain_us: None,
            musl: false,
        };
        assert_eq!(
            (m.loops(), m.short(), m.cycles(), m.memory_loops()),
            (20000, 5000, 30000, 5500)
        );
    }
}
