//! The plan of which measuring thread runs where, with which priority and
//! interval, as cyclictest's `-t`, `-a`, `-S`, `-d` and `--priospread`
//! define it. As in cyclictest 2.4, every thread is pinned: to the CPUs of
//! `-a` in turn, or without `-a` thread N to the N-th CPU (modulo their
//! number) this process may run on. (SCHED_DEADLINE threads stay unpinned
//! without `-a`: see `--help`.)

use latscope_core::wire::{Policy, MAX_THREADS};

use super::{Config, CpuList, Threads};
use crate::error::Error;

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

/// The measuring threads of a run on the `available` CPUs.
pub fn plan(cfg: &Config, available: &[usize]) -> Result<Vec<ThreadPlan>, Error> {
    let affinity = if cfg.smp {
        Some(cfg.affinity.clone().unwrap_or(CpuList::All))
    } else {
        cfg.affinity.clone()
    };
    let pin_set = match &affinity {
        Some(a) => Some(a.resolve(available).map_err(Error::Usage)?),
        None => None,
    };
    let per_cpu = pin_set.as_ref().map_or(available.len(), Vec::len);
    let pin_set = match pin_set {
        None if cfg.policy != Policy::Deadline => Some(available.to_vec()),
        p => p,
    };
    let n = match (cfg.threads, cfg.smp) {
        (_, true) | (Some(Threads::PerCpu), _) => per_cpu,
        (Some(Threads::Count(n)), _) => n,
        (None, false) => 1,
    };
    if n > MAX_THREADS {
        return Err(Error::usage(format!(
            "{n} threads: at most {MAX_THREADS} are supported"
        )));
    }
    let distance = cfg.distance();
    let first = first_priority(cfg, n);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let cpu = pin_set
            .as_ref()
            .and_then(|s| s.get(i % s.len().max(1)).copied());
        let priority = if cfg.priospread && cfg.policy != Policy::Deadline {
            first.saturating_sub(i as u32).max(1)
        } else {
            first
        };
        let interval_us = cfg
            .interval_us
            .checked_add(distance.saturating_mul(i as u64))
            .ok_or_else(|| Error::usage("interval + distance overflows"))?;
        out.push(ThreadPlan {
            cpu,
            priority,
            interval_us,
        });
    }
    Ok(out)
}

/// The priority of thread 0: `-p`, or for a real-time policy without one
/// (`-p 0`) the number of threads + 1, as cyclictest defaults it.
pub fn first_priority(cfg: &Config, threads: usize) -> u32 {
    match cfg.policy {
        Policy::Fifo | Policy::Rr if cfg.priority == 0 => (threads as u32 + 1).min(99),
        Policy::Fifo
        | Policy::Rr
        | Policy::Deadline
        | Policy::Other
        | Policy::Batch
        | Policy::Idle => cfg.priority,
    }
}

/// `--mainaffinity` among the `available` CPUs.
pub fn mainaffinity(cfg: &Config, available: &[usize]) -> Result<Option<Vec<usize>>, Error> {
    match &cfg.mainaffinity {
        Some(m) => m
            .resolve(available)
            .map(Some)
            .map_err(|e| Error::usage(format!("--mainaffinity: {e}"))),
        None => Ok(None),
    }
}

/// The first CPU `-a` names among the `available` ones, if any.
pub fn first_pinned_cpu(cfg: &Config, available: &[usize]) -> Option<usize> {
    let cpus = cfg.affinity.as_ref()?.resolve(available).ok()?;
    cpus.first().copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{parse, Action};

    fn cfg(args: &[&str]) -> Config {
        match parse(args).unwrap() {
            Action::Run(c) => *c,
            a @ (Action::Help | Action::Version) => panic!("{a:?}"),
        }
    }

    #[test]
    fn plans_like_cyclictest() {
        let avail = [0, 1];
        let p = plan(&cfg(&[]), &avail).unwrap();
        assert_eq!(
            p,
            vec![ThreadPlan {
                cpu: Some(0),
                priority: 80,
                interval_us: 1000
            }]
        );
        // without -a, thread N on the N-th available CPU, modulo
        let p = plan(&cfg(&["-t", "3"]), &[2, 5]).unwrap();
        assert_eq!(
            p.iter().map(|t| t.cpu).collect::<Vec<_>>(),
            [Some(2), Some(5), Some(2)]
        );
        let p = plan(&cfg(&["-t", "2", "--policy", "deadline"]), &avail).unwrap();
        assert!(p.iter().all(|t| t.cpu.is_none()), "deadline: unpinned");
        let p = plan(&cfg(&["-t", "3", "-p", "0"]), &avail).unwrap();
        assert!(p.iter().all(|t| t.priority == 4), "-p 0: threads + 1");
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
        assert!(p.iter().all(|t| t.interval_us == 1000));
        let p = plan(&cfg(&["-t", "-a", "+1"]), &avail).unwrap();
        assert_eq!(p.iter().map(|t| t.cpu).collect::<Vec<_>>(), [Some(1)]);
        let p = plan(&cfg(&["-t3", "-a1"]), &avail).unwrap();
        assert_eq!(p.iter().map(|t| t.cpu).collect::<Vec<_>>(), [Some(1); 3]);
    }

    #[test]
    fn unavailable_cpus_are_usage_errors() {
        let e = plan(&cfg(&["-a", "7"]), &[0, 1]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "CPU 7 is not available (available: 0,1) (see --help)"
        );
        let e = mainaffinity(&cfg(&["--mainaffinity", "7"]), &[0, 1]).unwrap_err();
        assert!(e.to_string().starts_with("--mainaffinity: CPU 7"), "{e}");
        assert_eq!(first_pinned_cpu(&cfg(&["-a", "1,0"]), &[0, 1]), Some(1));
    }
}
