//! The measuring thread's marker.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use core::fmt::Write as _;

use rustix::fd::OwnedFd;

use super::{MARK_MIN_INTERVAL_NS, MARK_PREFIX};

/// No CPU, in [`MarkShared::first_cpu`].
pub(super) const NO_CPU: u64 = u64::MAX;

/// What the markers of one tracer share with it.
#[derive(Debug)]
pub(super) struct MarkShared {
    /// Marks written by all markers.
    pub(super) written: AtomicU64,
    /// Report intervals begun: each marker's worst starts again.
    pub(super) interval: AtomicU64,
    /// The CPU named by the first mark written since the snapshot trigger
    /// was armed (the one whose window the swap kept), or [`NO_CPU`].
    pub(super) first_cpu: AtomicU64,
}

impl MarkShared {
    pub(super) const fn new() -> MarkShared {
        MarkShared {
            written: AtomicU64::new(0),
            interval: AtomicU64::new(0),
            first_cpu: AtomicU64::new(NO_CPU),
        }
    }
}

/// A pre-opened `trace_marker` fd of the instance, for one measuring thread.
///
/// [`Marker::mark`] is the only extra syscall the hot path makes, and only
/// on a spike worse than any it marked in the report interval: one
/// `write(2)` of a line formatted on the stack, at most once per
/// [`MARK_MIN_INTERVAL_NS`]. The mark keeps the spike's window (a snapshot
/// swap, or the freeze), so the worst spikes of an interval, the ones the
/// sender explains first, are the ones kept, chosen as they happen.
#[derive(Debug)]
pub struct Marker {
    fd: OwnedFd,
    shared: Arc<MarkShared>,
    min_interval_ns: u64,
    last_ns: Option<u64>,
    /// The interval of `worst_ns`.
    interval: u64,
    /// The worst latency marked in it.
    worst_ns: u64,
}

impl Marker {
    /// A marker writing to `fd`, counting its marks in `marks`.
    pub(super) fn new(fd: OwnedFd, shared: Arc<MarkShared>) -> Marker {
        Marker {
            fd,
            shared,
            min_interval_ns: MARK_MIN_INTERVAL_NS,
            last_ns: None,
            interval: 0,
            worst_ns: 0,
        }
    }

    /// Sets the shortest time between two writes.
    #[cfg(test)]
    pub(super) fn set_min_interval_ns(&mut self, ns: u64) {
        self.min_interval_ns = ns;
    }

    /// `write(trace_marker, "latscope spike cpu=C cycle=N lat=L")`—marks a
    /// spike, unless it is no worse than one this marker wrote in the
    /// report interval ([`super::Tracer::new_interval`]) or the last mark
    /// was less than the minimum interval before `now_ns` (any monotonic
    /// time the caller already has, e.g. the wake-up). `None` if the mark
    /// was held back, else whether the line was written. Never allocates.
    pub fn mark(&mut self, cpu: usize, cycle: u64, latency_ns: u64, now_ns: u64) -> Option<bool> {
        let interval = self.shared.interval.load(Ordering::Relaxed);
        if interval != self.interval {
            self.interval = interval;
            self.worst_ns = 0;
        }
        if latency_ns <= self.worst_ns {
            return None;
        }
        if let Some(last) = self.last_ns {
            if now_ns.saturating_sub(last) < self.min_interval_ns {
                return None;
            }
        }
        self.last_ns = Some(now_ns);
        let mut line = heapless::String::<96>::new();
        let _ = write!(
            line,
            "{MARK_PREFIX} cpu={cpu} cycle={cycle} lat={latency_ns}"
        );
        let ok = rustix::io::write(&self.fd, line.as_bytes()).is_ok();
        if ok {
            self.worst_ns = latency_ns;
            let _ = self.shared.first_cpu.compare_exchange(
                NO_CPU,
                cpu as u64,
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
            // Tells the sender a new freeze or snapshot may have begun.
            self.shared.written.fetch_add(1, Ordering::Release);
        }
        Some(ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker() -> (Marker, Arc<MarkShared>) {
        let fd = rustix::fs::open(
            "/dev/null",
            rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .expect("open /dev/null");
        let shared = Arc::new(MarkShared::new());
        let mut m = Marker::new(fd, shared.clone());
        m.set_min_interval_ns(0);
        (m, shared)
    }

    #[test]
    fn only_an_intervals_new_worst_is_marked() {
        let (mut m, shared) = marker();
        assert_eq!(m.mark(3, 1, 500, 10), Some(true));
        assert_eq!(shared.first_cpu.load(Ordering::Relaxed), 3);
        assert_eq!(m.mark(1, 2, 400, 20), None, "not worse");
        assert_eq!(m.mark(1, 3, 500, 30), None, "no worse");
        assert_eq!(m.mark(1, 4, 900, 40), Some(true));
        // the first mark's CPU stays until the tracer takes it
        assert_eq!(shared.first_cpu.load(Ordering::Relaxed), 3);
        assert_eq!(shared.written.load(Ordering::Relaxed), 2);
        // a new interval marks from zero again
        shared.interval.fetch_add(1, Ordering::Relaxed);
        assert_eq!(m.mark(1, 5, 400, 50), Some(true));
    }

    #[test]
    fn the_rate_limit_still_holds() {
        let (mut m, _) = marker();
        m.set_min_interval_ns(1_000);
        assert_eq!(m.mark(0, 1, 500, 10_000), Some(true));
        assert_eq!(m.mark(0, 2, 900, 10_500), None);
        assert_eq!(m.mark(0, 3, 900, 11_000), Some(true));
    }
}
