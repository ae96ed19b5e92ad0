//! The Linux [`Clock`]: the vDSO `clock_gettime` and
//! `clock_nanosleep(clock, TIMER_ABSTIME, ...)` through rustix.

use latscope_core::cycle::{Clock, SleepError};
use latscope_core::wire::ClockKind;
use rustix::io::Errno;
use rustix::time::{ClockId, Timespec};

const NS: i64 = 1_000_000_000;

/// `ns` as a timespec (`ns` may be negative).
#[inline]
pub fn timespec(ns: i64) -> Timespec {
    if ns >= 0 {
        // the only case in the measuring loop: one unsigned division
        let u = ns as u64;
        Timespec {
            tv_sec: (u / NS as u64) as i64,
            tv_nsec: (u % NS as u64) as i64,
        }
    } else {
        negative_timespec(ns)
    }
}

/// [`timespec`] before the clock's epoch, kept out of the hot path.
#[cold]
fn negative_timespec(ns: i64) -> Timespec {
    Timespec {
        tv_sec: ns.div_euclid(NS),
        tv_nsec: ns.rem_euclid(NS),
    }
}

/// A timespec as ns. Clock readings are below 2^63 ns (292 years) since
/// boot or the epoch, so the plain arithmetic cannot overflow for them;
/// other values wrap.
#[inline]
pub fn ns_of(t: &Timespec) -> i64 {
    t.tv_sec.wrapping_mul(NS).wrapping_add(t.tv_nsec)
}

/// A clock of the given kind.
#[derive(Debug, Clone, Copy)]
pub struct LinuxClock {
    id: ClockId,
}

impl LinuxClock {
    /// The clock measured against.
    pub const fn new(kind: ClockKind) -> Self {
        LinuxClock {
            id: match kind {
                ClockKind::Monotonic => ClockId::Monotonic,
                ClockKind::Realtime => ClockId::Realtime,
            },
        }
    }

    /// Warm the vDSO: its first use can allocate (rustix reads the auxv),
    /// so latscope calls this before locking memory and starting threads.
    pub fn warm_up(&self) {
        let _ = rustix::time::clock_gettime(self.id);
        let _ = rustix::time::clock_gettime(ClockId::Monotonic);
        let now = rustix::time::clock_gettime(self.id);
        let _ = rustix::thread::clock_nanosleep_absolute(self.id, &now);
    }
}

impl Clock for LinuxClock {
    #[inline]
    fn now(&mut self) -> i64 {
        ns_of(&rustix::time::clock_gettime(self.id))
    }

    #[inline]
    fn sleep_until(&mut self, deadline: i64) -> Result<(), SleepError> {
        match rustix::thread::clock_nanosleep_absolute(self.id, &timespec(deadline)) {
            Ok(()) => Ok(()),
            Err(Errno::INTR) => Err(SleepError::Interrupted),
            Err(e) => Err(SleepError::Os(e.raw_os_error())),
        }
    }
}

/// The monotonic time in ns (for the sender thread and timestamps).
pub fn monotonic_ns() -> i64 {
    ns_of(&rustix::time::clock_gettime(ClockId::Monotonic))
}

/// The wall-clock time in seconds since the epoch.
pub fn realtime_s() -> i64 {
    rustix::time::clock_gettime(ClockId::Realtime).tv_sec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timespec_round_trips_negative_and_positive() {
        for ns in [0, 1, -1, NS - 1, NS, -NS - 1, 12_345_678_901] {
            let t = timespec(ns);
            assert!((0..NS).contains(&t.tv_nsec));
            assert_eq!(ns_of(&t), ns);
        }
    }

    #[test]
    fn sleeping_until_the_past_returns_at_once() {
        let mut c = LinuxClock::new(ClockKind::Monotonic);
        let now = c.now();
        assert_eq!(c.sleep_until(now - 1_000), Ok(()));
        assert!(c.now() >= now);
    }
}
