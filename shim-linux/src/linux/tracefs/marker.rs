//! The measuring thread's marker.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use core::fmt::Write as _;

use rustix::fd::OwnedFd;

use super::{MARK_MIN_INTERVAL_NS, MARK_PREFIX};

/// A pre-opened `trace_marker` fd of the instance, for one measuring thread.
///
/// [`Marker::mark`] is the only extra syscall the hot path makes, and only
/// on a spike: one `write(2)` of a line formatted on the stack, at most once
/// per [`MARK_MIN_INTERVAL_NS`].
#[derive(Debug)]
pub struct Marker {
    fd: OwnedFd,
    /// Marks written by all markers of the tracer.
    marks: Arc<AtomicU64>,
    min_interval_ns: u64,
    last_ns: Option<u64>,
}

impl Marker {
    /// A marker writing to `fd`, counting its marks in `marks`.
    pub(super) fn new(fd: OwnedFd, marks: Arc<AtomicU64>) -> Marker {
        Marker {
            fd,
            marks,
            min_interval_ns: MARK_MIN_INTERVAL_NS,
            last_ns: None,
        }
    }

    /// Sets the shortest time between two writes.
    #[cfg(test)]
    pub(super) fn set_min_interval_ns(&mut self, ns: u64) {
        self.min_interval_ns = ns;
    }

    /// `write(trace_marker, "latscope spike cpu=C cycle=N lat=L")`—marks a
    /// spike, unless the last mark was less than the minimum interval
    /// before `now_ns` (any monotonic time the caller already has, e.g. the
    /// wake-up). `None` if the rate limit held the mark back, else whether
    /// the line was written. Never allocates.
    pub fn mark(&mut self, cpu: usize, cycle: u64, latency_ns: u64, now_ns: u64) -> Option<bool> {
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
            // Tells the sender a new freeze may have begun.
            self.marks.fetch_add(1, Ordering::Release);
        }
        Some(ok)
    }
}
