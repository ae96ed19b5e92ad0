//! Finding our markers and the measuring thread in a CPU's trace text.

use latscope_core::explain::{parse_line, EventKind};

use super::MARK_PREFIX;

/// The spike a tracer explains.
#[derive(Debug, Clone, Copy)]
pub(super) struct Spike {
    /// The CPU whose trace is read (`u32::MAX`: none found).
    pub(super) cpu: u32,
    /// The measuring thread, when known.
    pub(super) tid: Option<u32>,
    pub(super) deadline_ns: u64,
    pub(super) wake_ns: u64,
    pub(super) cycle: u64,
}

/// Which of the `(cpu, trace)` texts shows `tid` switched in between
/// `deadline_ns` and `wake_ns` (mono trace clock): the CPU it woke on.
pub(super) fn switched_in<T: AsRef<str>>(
    texts: &[(u32, T)],
    tid: u32,
    deadline_ns: u64,
    wake_ns: u64,
) -> Option<usize> {
    texts.iter().position(|(_, t)| {
        t.as_ref().lines().filter_map(parse_line).any(|e| {
            matches!(e.kind, EventKind::Switch { next, .. } if next.pid == tid)
                && e.ts_ns >= deadline_ns
                && e.ts_ns <= wake_ns
        })
    })
}

/// What the trace says about our markers on one CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Marks {
    /// Trace time and writer pid of the marker of the cycle asked for.
    pub(super) ours: Option<(u64, u32)>,
    /// Cycle of the newest marker in the text (the one that froze it).
    pub(super) newest_cycle: Option<u64>,
    /// Writer pid of that newest marker: the measuring thread of the CPU,
    /// for spikes whose own marker the rate limit left out.
    pub(super) writer: Option<u32>,
}

/// Finds our marker for `cycle` on `cpu` (written by thread `tid`, if
/// given), searching from the end, where a freezing marker is.
pub(super) fn find_mark(text: &str, cpu: u32, cycle: u64, tid: Option<u32>) -> Marks {
    let mut marks = Marks::default();
    for line in text.lines().rev() {
        if !line.contains(MARK_PREFIX) {
            continue;
        }
        let Some(e) = parse_line(line) else { continue };
        let EventKind::Marker { text: m } = e.kind else {
            continue;
        };
        let Some(fields) = m.strip_prefix(MARK_PREFIX) else {
            continue;
        };
        let mut c = None;
        let mut y = None;
        for kv in fields.split(' ') {
            if let Some(v) = kv.strip_prefix("cpu=") {
                c = v.parse::<u32>().ok();
            } else if let Some(v) = kv.strip_prefix("cycle=") {
                y = v.parse::<u64>().ok();
            }
        }
        if c != Some(cpu) || tid.is_some_and(|t| t != e.task.pid) {
            continue;
        }
        if marks.newest_cycle.is_none() {
            marks.newest_cycle = y;
            marks.writer = Some(e.task.pid);
        }
        if y == Some(cycle) {
            marks.ours = Some((e.ts_ns, e.task.pid));
            break;
        }
    }
    marks
}

/// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds.
pub(super) fn mono_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    let s = u64::try_from(t.tv_sec).unwrap_or(0);
    let n = u64::try_from(t.tv_nsec).unwrap_or(0);
    s.saturating_mul(1_000_000_000).saturating_add(n)
}
