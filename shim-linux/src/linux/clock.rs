//! The Linux [`Clock`]: the vDSO `clock_gettime` and
//! `clock_nanosleep(clock, TIMER_ABSTIME, ...)` through rustix.

use latscope_core::cycle::{Clock, SleepError};
use latscope_core::wire::ClockKind;
use rustix::io::Errno;
use rustix::thread::NanosleepRelativeResult;
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

/// [`timespec`] before the clock's epoch, kept out of the hot path (not
/// inlined: inlined, the compiler computes both cases and selects one).
#[cold]
#[inline(never)]
fn negative_timespec(ns: i64) -> Timespec {
    Timespec {
        tv_sec: ns.div_euclid(NS),
        tv_nsec: ns.rem_euclid(NS),
    }
}

/// [`timespec`] of a deadline a second or more from the last one, out of
/// line: inlined, the compiler computes its division on every cycle.
#[cold]
#[inline(never)]
fn far_timespec(ns: i64) -> Timespec {
    timespec(ns)
}

/// A timespec as ns. Clock readings are below 2^63 ns (292 years) since
/// boot or the epoch, so the plain arithmetic cannot overflow for them;
/// other values wrap.
#[inline]
pub fn ns_of(t: &Timespec) -> i64 {
    t.tv_sec.wrapping_mul(NS).wrapping_add(t.tv_nsec)
}

/// A clock of the given kind.
///
/// It remembers the last deadline it slept until, as ns and as a timespec:
/// the next deadline of a measuring loop is one interval later, so its
/// timespec is the last one plus that step, without a 64-bit division.
#[derive(Debug, Clone, Copy)]
pub struct LinuxClock {
    id: ClockId,
    last_ns: i64,
    last: Timespec,
}

impl LinuxClock {
    /// The clock measured against.
    pub const fn new(kind: ClockKind) -> Self {
        LinuxClock {
            id: match kind {
                ClockKind::Monotonic => ClockId::Monotonic,
                ClockKind::Realtime => ClockId::Realtime,
            },
            last_ns: 0,
            last: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
        }
    }

    /// `deadline` as a timespec: from the last one when it is less than a
    /// second later (the measuring loop's case), else by [`timespec`].
    #[inline]
    fn deadline(&mut self, deadline: i64) -> Timespec {
        let step = deadline.wrapping_sub(self.last_ns) as u64;
        let t = if step < NS as u64 {
            // tv_nsec < NS and step < NS: no overflow, at most one carry
            let nsec = self.last.tv_nsec + step as i64;
            if nsec >= NS {
                Timespec {
                    tv_sec: self.last.tv_sec + 1,
                    tv_nsec: nsec - NS,
                }
            } else {
                Timespec {
                    tv_sec: self.last.tv_sec,
                    tv_nsec: nsec,
                }
            }
        } else {
            far_timespec(deadline)
        };
        self.last_ns = deadline;
        self.last = t;
        t
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

impl LinuxClock {
    /// The kernel's id of the clock.
    pub const fn id(&self) -> ClockId {
        self.id
    }

    /// What `clock_getres` says of this clock, in ns.
    pub fn getres_ns(&self) -> i64 {
        ns_of(&rustix::time::clock_getres(self.id))
    }

    /// `clock_nanosleep(clock, 0, ns)`: sleep `ns` on this clock, relative
    /// to now (`-r`); an interruption sleeps the rest.
    pub fn sleep_relative(&self, ns: i64) -> Result<(), Errno> {
        let mut left = timespec(ns);
        loop {
            match rustix::thread::clock_nanosleep_relative(self.id, &left) {
                NanosleepRelativeResult::Ok => return Ok(()),
                NanosleepRelativeResult::Interrupted(rest) => left = rest,
                NanosleepRelativeResult::Err(e) => return Err(e),
            }
        }
    }
}

/// `-R`: the clock's resolution as `clock_getres` reports it and as
/// consecutive readings show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// What `clock_getres` says, in ns.
    pub reported_ns: i64,
    /// The smallest non-zero step between consecutive readings, in ns (0:
    /// none seen).
    pub measured_ns: i64,
    /// The readings (about a millisecond's worth), in ns.
    pub readings: Vec<i64>,
}

impl LinuxClock {
    /// Measure the resolution as cyclictest's `-R` does: time 1000 readings
    /// to learn how many fit in a millisecond (1000 to 100000), take that
    /// many, and find the smallest step.
    pub fn resolution(&self) -> Resolution {
        let read = || ns_of(&rustix::time::clock_gettime(self.id));
        let first = read();
        let mut last = first;
        for _ in 0..1000 {
            last = read();
        }
        let per_call = (last - first) / 1000;
        let times = if per_call > 0 {
            (NS / per_call / 1000).clamp(1000, 100_000) as usize
        } else {
            100_000
        };
        let readings: Vec<i64> = (0..times).map(|_| read()).collect();
        let measured_ns = readings
            .windows(2)
            .map(|w| w[1] - w[0])
            .filter(|d| *d > 0)
            .min()
            .unwrap_or(0);
        Resolution {
            reported_ns: self.getres_ns(),
            measured_ns,
            readings,
        }
    }
}

/// `nanosleep(ns)`: sleep `ns`, relative to now, with the system call
/// cyclictest's `-s` makes; an interruption sleeps the rest.
pub fn nanosleep(ns: i64) -> Result<(), Errno> {
    let mut left = timespec(ns);
    loop {
        match rustix::thread::nanosleep(&left) {
            NanosleepRelativeResult::Ok => return Ok(()),
            NanosleepRelativeResult::Interrupted(rest) => left = rest,
            NanosleepRelativeResult::Err(e) => return Err(e),
        }
    }
}

impl Clock for LinuxClock {
    #[inline]
    fn now(&mut self) -> i64 {
        ns_of(&rustix::time::clock_gettime(self.id))
    }

    #[inline]
    fn sleep_until(&mut self, deadline: i64) -> Result<(), SleepError> {
        match rustix::thread::clock_nanosleep_absolute(self.id, &self.deadline(deadline)) {
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
    fn deadlines_in_steps_match_the_division() {
        let mut c = LinuxClock::new(ClockKind::Monotonic);
        let mut d = -3 * NS - 7;
        for step in [
            0,
            1,
            999,
            NS - 1,
            NS,
            3 * NS + 1,
            200_000,
            1_000_000,
            7,
            -5,
            -NS - 1,
        ] {
            for _ in 0..2500 {
                d += step;
                let t = c.deadline(d);
                assert_eq!(
                    (t.tv_sec, t.tv_nsec),
                    (timespec(d).tv_sec, timespec(d).tv_nsec),
                    "{d}"
                );
            }
        }
    }

    #[test]
    fn resolution_of_the_monotonic_clock() {
        let r = LinuxClock::new(ClockKind::Monotonic).resolution();
        assert!(r.reported_ns >= 1, "{}", r.reported_ns);
        assert!((1000..=100_000).contains(&r.readings.len()));
        assert!(r.readings.windows(2).all(|w| w[1] >= w[0]), "monotonic");
        assert!(r.measured_ns > 0, "the clock moved in a millisecond");
    }

    #[test]
    fn sleeping_until_the_past_returns_at_once() {
        let mut c = LinuxClock::new(ClockKind::Monotonic);
        let now = c.now();
        assert_eq!(c.sleep_until(now - 1_000), Ok(()));
        assert!(c.now() >= now);
    }
}
