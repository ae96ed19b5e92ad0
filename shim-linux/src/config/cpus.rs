//! CPU sets on the command line, and the plan of which thread runs where.

use rustix::thread::CpuSet;

use crate::config::parse::{Config, Threads};
use latscope_core::wire::Policy;

/// A CPU set as written on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuList {
    /// Every available CPU.
    All,
    /// These CPUs.
    Only(Vec<usize>),
    /// Every available CPU except these (`!` prefix).
    Except(Vec<usize>),
}

/// Highest CPU number accepted.
pub const MAX_CPU: usize = 1023;

/// Parse `0,2-3`, `!1` or `all`.
pub fn parse_cpu_list(s: &str) -> Result<CpuList, String> {
    if s == "all" {
        return Ok(CpuList::All);
    }
    let (neg, body) = match s.strip_prefix('!') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let mut cpus = Vec::new();
    for item in body.split(',') {
        let (a, b) = match item.split_once('-') {
            Some((a, b)) => (a, b),
            None => (item, item),
        };
        let a: usize = a.parse().map_err(|_| format!("bad CPU '{item}'"))?;
        let b: usize = b.parse().map_err(|_| format!("bad CPU '{item}'"))?;
        if a > b || b > MAX_CPU {
            return Err(format!("bad CPU range '{item}'"));
        }
        for c in a..=b {
            if !cpus.contains(&c) {
                cpus.push(c);
            }
        }
    }
    if cpus.is_empty() {
        return Err("empty CPU list".into());
    }
    Ok(if neg {
        CpuList::Except(cpus)
    } else {
        CpuList::Only(cpus)
    })
}

impl CpuList {
    /// The CPUs this list selects among `available`. CPUs named but not
    /// available are an error (cyclictest silently skips them).
    pub fn resolve(&self, available: &[usize]) -> Result<Vec<usize>, String> {
        let v: Vec<usize> = match self {
            CpuList::All => available.to_vec(),
            CpuList::Only(c) => {
                if let Some(bad) = c.iter().find(|c| !available.contains(c)) {
                    return Err(format!(
                        "CPU {bad} is not available (available: {})",
                        list_text(available)
                    ));
                }
                c.clone()
            }
            CpuList::Except(c) => available
                .iter()
                .copied()
                .filter(|a| !c.contains(a))
                .collect(),
        };
        if v.is_empty() {
            return Err("the CPU set selects no available CPU".into());
        }
        Ok(v)
    }

    /// As a rustix CPU set.
    pub fn to_set(cpus: &[usize]) -> CpuSet {
        let mut set = CpuSet::new();
        for &c in cpus {
            if c < CpuSet::MAX_CPU {
                set.set(c);
            }
        }
        set
    }
}

/// `0,1,4` for messages.
pub fn list_text(cpus: &[usize]) -> String {
    cpus.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// The CPUs this process may run on.
pub fn available() -> Vec<usize> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..CpuSet::MAX_CPU.min(MAX_CPU + 1))
            .filter(|&c| set.is_set(c))
            .collect(),
        Err(_) => vec![0],
    }
}

/// One measuring thread of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadPlan {
    /// The CPU to pin to, if any.
    pub cpu: Option<usize>,
    /// Its priority.
    pub priority: u32,
    /// Its interval in µs.
    pub interval_us: u64,
}

/// Which threads run where, as cyclictest's `-t`, `-a`, `-S`, `-d` and
/// `--priospread` define it.
pub fn plan(cfg: &Config, available: &[usize]) -> Result<Vec<ThreadPlan>, String> {
    let affinity = if cfg.smp {
        Some(cfg.affinity.clone().unwrap_or(CpuList::All))
    } else {
        cfg.affinity.clone()
    };
    let pin_set = match &affinity {
        Some(a) => Some(a.resolve(available)?),
        None => None,
    };
    let per_cpu = pin_set.as_deref().unwrap_or(available);
    let n = match (cfg.threads, cfg.smp) {
        (_, true) | (Some(Threads::PerCpu), _) => per_cpu.len(),
        (Some(Threads::Count(n)), _) => n,
        (None, false) => 1,
    };
    if n > latscope_core::wire::MAX_THREADS {
        return Err(format!(
            "{n} threads: at most {} are supported",
            latscope_core::wire::MAX_THREADS
        ));
    }
    let distance = cfg.distance();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let cpu = pin_set
            .as_ref()
            .and_then(|s| s.get(i % s.len().max(1)).copied());
        let priority = if cfg.priospread && cfg.policy != Policy::Deadline {
            cfg.priority.saturating_sub(i as u32).max(1)
        } else {
            cfg.priority
        };
        let interval_us = cfg
            .interval_us
            .checked_add(distance.saturating_mul(i as u64))
            .ok_or("interval + distance overflows")?;
        out.push(ThreadPlan {
            cpu,
            priority,
            interval_us,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse::{parse, Action};

    fn cfg(args: &[&str]) -> Config {
        match parse(args).unwrap() {
            Action::Run(c) => *c,
            a => panic!("{a:?}"),
        }
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0,2-3"), Ok(CpuList::Only(vec![0, 2, 3])));
        assert_eq!(parse_cpu_list("!1"), Ok(CpuList::Except(vec![1])));
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("").is_err());
        assert!(parse_cpu_list("x").is_err());
        assert!(parse_cpu_list("0,99999").is_err());
        let avail = [0, 1, 2, 3];
        assert_eq!(CpuList::Except(vec![1]).resolve(&avail), Ok(vec![0, 2, 3]));
        assert!(CpuList::Only(vec![7]).resolve(&avail).is_err());
    }

    #[test]
    fn plans_like_cyclictest() {
        let avail = [0, 1];
        let p = plan(&cfg(&[]), &avail).unwrap();
        assert_eq!(
            p,
            vec![ThreadPlan {
                cpu: None,
                priority: 80,
                interval_us: 1000
            }]
        );
        let p = plan(&cfg(&["-t", "2", "-a", "0,1", "-d", "0"]), &avail).unwrap();
        assert_eq!(
            p.iter().map(|t| t.cpu).collect::<Vec<_>>(),
            [Some(0), Some(1)]
        );
        assert!(p.iter().all(|t| t.interval_us == 1000));
        let p = plan(&cfg(&["-S", "-p", "90", "--priospread"]), &avail).unwrap();
        assert_eq!(p.iter().map(|t| t.priority).collect::<Vec<_>>(), [90, 89]);
        assert_eq!(p[1].interval_us, 1500);
        let p = plan(&cfg(&["-t", "-h", "50"]), &avail).unwrap();
        assert_eq!(p.len(), 2);
        assert!(p.iter().all(|t| t.cpu.is_none() && t.interval_us == 1000));
        let p = plan(&cfg(&["-t3", "-a1"]), &avail).unwrap();
        assert_eq!(p.iter().map(|t| t.cpu).collect::<Vec<_>>(), [Some(1); 3]);
    }
}
