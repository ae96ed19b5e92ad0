//! The launchers' process samples (`sample_proc` of `bench/lib.sh`, every
//! 0.1 s until the process exits):
//!
//! ```text
//! t_ms M vmlck_kB vmrss_kB locked_kB
//! t_ms T tid policy minflt majflt        (one line per thread)
//! ```
//!
//! and `/proc/PID/smaps` read once, for the private locked bytes; and
//! `strace -c`'s table of calls.

use serde::{Deserialize, Serialize};

/// What a sample log says after the first second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Peaks {
    /// Peak VmLck, kB.
    pub vmlck_kb: u64,
    /// Peak VmRSS, kB.
    pub vmrss_kb: u64,
    /// Peak `Locked` of smaps_rollup, kB (0 when not sampled).
    pub locked_kb: u64,
    /// Minor faults of the threads that were ever real-time (the
    /// measuring threads), from their first sample after 1 s to their
    /// last.
    pub minor_faults: u64,
    /// Their major faults, likewise.
    pub major_faults: u64,
}

impl Peaks {
    /// The line the launchers keep: `vmlck vmrss locked minor major`.
    pub fn line(&self) -> String {
        format!(
            "{} {} {} {} {}",
            self.vmlck_kb, self.vmrss_kb, self.locked_kb, self.minor_faults, self.major_faults
        )
    }
}

#[derive(Default)]
struct Thread {
    realtime: bool,
    first: (u64, u64),
    last: (u64, u64),
}

fn field(f: &[&str], i: usize) -> u64 {
    f.get(i).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// The peaks of a sample log; `None` without a memory sample after the
/// first second. Lines that are not samples are skipped (a log cut by
/// the process's exit ends in a partial line).
pub fn peaks(log: &str) -> Option<Peaks> {
    let mut p = Peaks {
        vmlck_kb: 0,
        vmrss_kb: 0,
        locked_kb: 0,
        minor_faults: 0,
        major_faults: 0,
    };
    let mut memory_samples = 0;
    let mut threads: std::collections::BTreeMap<u64, Thread> = Default::default();
    for line in log.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let Some(t) = f.first().and_then(|t| t.parse::<u64>().ok()) else {
            continue;
        };
        if t < 1000 {
            continue;
        }
        match f.get(1).copied() {
            Some("M") => {
                memory_samples += 1;
                p.vmlck_kb = p.vmlck_kb.max(field(&f, 2));
                p.vmrss_kb = p.vmrss_kb.max(field(&f, 3));
                p.locked_kb = p.locked_kb.max(field(&f, 4));
            }
            Some("T") => {
                let faults = (field(&f, 4), field(&f, 5));
                let th = threads.entry(field(&f, 2)).or_insert_with(|| Thread {
                    first: faults,
                    ..Thread::default()
                });
                th.realtime |= field(&f, 3) != 0;
                th.last = faults;
            }
            _ => {}
        }
    }
    for th in threads.values().filter(|t| t.realtime) {
        p.minor_faults += th.last.0.saturating_sub(th.first.0);
        p.major_faults += th.last.1.saturating_sub(th.first.1);
    }
    (memory_samples > 0).then_some(p)
}

/// Private locked memory, kB: `Private_Clean` + `Private_Dirty` of the
/// mappings of a `/proc/PID/smaps` whose `Locked` is not 0, and of it the
/// code: the program's own file `exe` and the libraries it loads other
/// than libc and ld.so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrivateLocked {
    /// All of it, kB.
    pub total_kb: u64,
    /// The code's share, kB.
    pub code_kb: u64,
}

impl PrivateLocked {
    /// From the text of `/proc/PID/smaps` and the program's path.
    pub fn of(smaps: &str, exe: &str) -> PrivateLocked {
        let (mut total, mut code, mut private, mut is_code) = (0, 0, 0, false);
        for line in smaps.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let header = f.first().is_some_and(|r| {
                r.split_once('-').is_some_and(|(a, b)| {
                    [a, b]
                        .iter()
                        .all(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
                })
            });
            if header {
                let file = f.get(5).copied().unwrap_or("");
                is_code = file == exe
                    || (file.contains(".so")
                        && !file.contains("/libc.so")
                        && !file.contains("/ld-linux"));
                private = 0;
                continue;
            }
            match f.first().copied() {
                Some("Private_Clean:" | "Private_Dirty:") => private += field(&f, 1),
                Some("Locked:") if field(&f, 1) > 0 => {
                    total += private;
                    if is_code {
                        code += private;
                    }
                }
                _ => {}
            }
        }
        PrivateLocked {
            total_kb: total,
            code_kb: code,
        }
    }

    /// The line the launchers keep: `total code rest`.
    pub fn line(&self) -> String {
        format!(
            "{} {} {}",
            self.total_kb,
            self.code_kb,
            self.total_kb - self.code_kb
        )
    }
}

/// The mapping that holds a thread's stack pointer: its resident and
/// whole size, kB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stack {
    /// `Rss:`, kB.
    pub rss_kb: u64,
    /// `Size:`, kB.
    pub size_kb: u64,
}

impl Stack {
    /// From `/proc/PID/task/TID/syscall` (its next-to-last field is the
    /// stack pointer) and `/proc/PID/smaps`; `None` when no mapping holds
    /// it, or the thread was not in a system call.
    pub fn of(syscall: &str, smaps: &str) -> Option<Stack> {
        let f: Vec<&str> = syscall.split_whitespace().collect();
        let sp_text = f.get(f.len().checked_sub(2)?)?;
        let sp = u64::from_str_radix(sp_text.trim_start_matches("0x"), 16).ok()?;
        let (mut inside, mut size) = (false, None);
        for line in smaps.lines() {
            let w: Vec<&str> = line.split_whitespace().collect();
            let range = w.first().and_then(|r| {
                let (a, b) = r.split_once('-')?;
                Some((
                    u64::from_str_radix(a, 16).ok()?,
                    u64::from_str_radix(b, 16).ok()?,
                ))
            });
            if let Some((lo, hi)) = range {
                inside = lo <= sp && sp < hi;
                size = None;
            } else if inside && w.first() == Some(&"Size:") {
                size = Some(field(&w, 1));
            } else if inside && w.first() == Some(&"Rss:") {
                return Some(Stack {
                    rss_kb: field(&w, 1),
                    size_kb: size?,
                });
            }
        }
        None
    }
}

/// The calls of `strace -c`'s row named `name` (`total` for all).
pub fn strace_calls(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.last() == Some(&name)).then(|| f.get(3)?.parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stack_is_the_mapping_of_the_stack_pointer() {
        let syscall = "230 0x1 0x7f0000001000 0x0 0x0 0x0 0x0 0x7f1000000f00 0x7f00aa\n";
        let smaps = "7f0000000000-7f0000100000 rw-p 00000000 00:00 0\n\
                     Size:               1024 kB\n\
                     Rss:                   8 kB\n\
                     7f1000000000-7f1000200000 rw-p 00000000 00:00 0\n\
                     Size:               2048 kB\n\
                     KernelPageSize:        4 kB\n\
                     Rss:                  16 kB\n";
        assert_eq!(
            Stack::of(syscall, smaps),
            Some(Stack {
                rss_kb: 16,
                size_kb: 2048
            })
        );
        assert_eq!(Stack::of("running\n", smaps), None);
        assert_eq!(Stack::of("230 0x1 0x7f2000000000 0x1\n", smaps), None);
    }

    #[test]
    fn peaks_after_the_first_second_and_realtime_threads_faults() {
        let log = "500 M 9999 9999 9999\n500 T 10 0 1 0\n\
                   1000 M 100 200 90\n1000 T 10 0 50 1\n1000 T 11 1 7 2\n\
                   1100 M 120 180 95\n1100 T 10 0 80 1\n1100 T 11 1 9 2\n\
                   1200 M 110 210 0\n1200 T 10 0 90 3\n1200 T 11 1 12 5\n1200 T 1";
        let p = peaks(log).expect("peaks");
        assert_eq!(
            (p.vmlck_kb, p.vmrss_kb, p.locked_kb),
            (120, 210, 95),
            "the 500 ms sample left out"
        );
        // only thread 11 was real-time: 12 - 7 minor, 5 - 2 major
        assert_eq!((p.minor_faults, p.major_faults), (5, 3));
        assert_eq!(p.line(), "120 210 95 5 3");
        assert_eq!(
            peaks("500 M 1 1 1\n"),
            None,
            "nothing after the first second"
        );
    }

    #[test]
    fn private_locked_of_locked_mappings_split_by_code() {
        let smaps = "\
55d0-55e0 r-xp 00000000 08:01 1 /usr/bin/prog
Private_Clean:        40 kB
Private_Dirty:         8 kB
Locked:               48 kB
7f00-7f10 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/libc.so.6
Private_Clean:         4 kB
Private_Dirty:         4 kB
Locked:              100 kB
7f20-7f30 r-xp 00000000 08:01 3 /usr/lib/x86_64-linux-gnu/libm.so.6
Private_Clean:        16 kB
Private_Dirty:         0 kB
Locked:               16 kB
7f40-7f50 rw-p 00000000 00:00 0
Private_Clean:         0 kB
Private_Dirty:        32 kB
Locked:                0 kB
7ffc-7ffd rw-p 00000000 00:00 0 [stack]
Private_Clean:         0 kB
Private_Dirty:        12 kB
Locked:               12 kB
";
        let p = PrivateLocked::of(smaps, "/usr/bin/prog");
        // locked: prog 48, libc 8, libm 16, stack 12; the unlocked heap left out
        assert_eq!(p.total_kb, 84);
        assert_eq!(p.code_kb, 64, "prog and libm, not libc");
        assert_eq!(p.line(), "84 64 20");
    }
}
