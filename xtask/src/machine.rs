//! The machine a result was measured on, recorded with every result.

use std::fs;
use std::process::Command;

use serde::{Deserialize, Serialize};

/// What a figure depends on besides the code: the kernel, the CPU, the
/// load, and the commit of the tree that was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    /// `uname -srvm`: kernel name, release, version and machine.
    pub kernel: String,
    /// The CPUs online (`nproc`).
    pub cpus: usize,
    /// The first `model name` of `/proc/cpuinfo`.
    pub cpu_model: String,
    /// `MemTotal`, GiB.
    pub memory_gib: f64,
    /// The 1, 5 and 15 minute load averages when the measurement began.
    pub load_start: [f64; 3],
    /// The same when it ended (None until then).
    pub load_end: Option<[f64; 3]>,
    /// `git rev-parse --short HEAD`, with ` (modified)` when the tree has
    /// uncommitted changes.
    pub commit: String,
}

impl Machine {
    /// The machine now; `load_end` is left empty.
    pub fn now() -> Machine {
        Machine {
            kernel: output("uname", &["-srvm"]).unwrap_or_else(|| "unknown".into()),
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu_model: cpu_model().unwrap_or_else(|| "unknown".into()),
            memory_gib: mem_total_kib().map_or(0.0, |k| k as f64 / 1_048_576.0),
            load_start: load_average().unwrap_or([0.0; 3]),
            load_end: None,
            commit: commit(),
        }
    }

    /// Record the load average at the end.
    pub fn ended(mut self) -> Machine {
        self.load_end = load_average();
        self
    }

    /// The markdown lines that describe it, one `- ` item each.
    pub fn markdown(&self) -> String {
        let load = |l: &[f64; 3]| format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2]);
        let mut s = format!(
            "- kernel: {}\n- CPUs: {} ({})\n- memory: {:.1} GiB\n- load average (1, 5, 15 min) at start: {}",
            self.kernel,
            self.cpus,
            self.cpu_model,
            self.memory_gib,
            load(&self.load_start)
        );
        if let Some(end) = &self.load_end {
            s.push_str(&format!("; at end: {}", load(end)));
        }
        s.push_str(&format!("\n- commit: {}\n", self.commit));
        s
    }
}

fn output(cmd: &str, args: &[&str]) -> Option<String> {
    crate::process::first_line(Command::new(cmd).args(args).current_dir(crate::root()))
}

fn cpu_model() -> Option<String> {
    let info = fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix("model name")?.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

fn mem_total_kib() -> Option<u64> {
    let info = fs::read_to_string("/proc/meminfo").ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `/proc/loadavg`'s first three fields.
pub fn load_average() -> Option<[f64; 3]> {
    let s = fs::read_to_string("/proc/loadavg").ok()?;
    let mut it = s.split_whitespace().map(|v| v.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

/// The short commit of the checkout, marked when its code is modified:
/// the results and the README the benchmarks write do not count.
pub fn commit() -> String {
    let head = output("git", &["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let clean = Command::new("git")
        .args([
            "diff",
            "--quiet",
            "HEAD",
            "--",
            ".",
            ":!bench/results",
            ":!README.md",
        ])
        .current_dir(crate::root())
        .status()
        .is_ok_and(|s| s.success());
    if clean {
        head
    } else {
        format!("{head} (modified)")
    }
}
