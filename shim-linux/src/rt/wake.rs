//! How a measuring loop waits for each period: cyclictest's modes, one type
//! each, so that the loop is compiled once per mode and the default mode's
//! loop has no branch for the others.
//!
//! * [`Absolute`] (default): `clock_nanosleep(TIMER_ABSTIME)` to the next
//!   deadline of the fixed grid;
//! * [`Relative`] (`-r`): read the clock, `clock_nanosleep` one interval
//!   relative; the deadline is that reading plus the interval;
//! * [`Nanosleep`] (`-s`): the same with `nanosleep()`;
//! * [`PosixTimer`] (`-x`): a per-thread POSIX interval timer signals the
//!   thread, which takes the signal with `rt_sigtimedwait`.
//!
//! Latency is always the clock read after waking minus the deadline, as in
//! cyclictest's `timerthread`.

use latscope_core::cycle::{Cycle, Sample};

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use latscope_core::timerlat::Grid;

use rustix::fd::OwnedFd;
use rustix::io::Errno;

use crate::error::Error;
use crate::linux::clock::{self, timespec, LinuxClock};
use crate::linux::sys::{self, sig, sigbit, Timer};
use crate::linux::timerlat;

/// A way to wait for the next period.
pub(super) trait Wake {
    /// Wait for the cycle's next wake-up; the clock read after it.
    fn wait(&mut self, cycle: &mut Cycle, clock: &mut LinuxClock) -> Result<i64, Error>;

    /// A sample that was not plain (late, flagged, or the last): how many
    /// periods this mode counts as missed. The cycle has already moved its
    /// deadline past the wake-up as the fixed grid would.
    #[inline(always)]
    fn missed(&mut self, _cycle: &mut Cycle, sample: &Sample) -> u64 {
        sample.missed
    }
}

/// `clock_nanosleep(clock, TIMER_ABSTIME, deadline)`: the default.
pub(super) struct Absolute;

impl Wake for Absolute {
    #[inline(always)]
    fn wait(&mut self, cycle: &mut Cycle, clock: &mut LinuxClock) -> Result<i64, Error> {
        Ok(cycle.sleep(clock)?)
    }
}

/// `-r`: a relative `clock_nanosleep` of one interval.
pub(super) struct Relative;

impl Wake for Relative {
    fn wait(&mut self, cycle: &mut Cycle, clock: &mut LinuxClock) -> Result<i64, Error> {
        restart(cycle, clock);
        clock
            .sleep_relative(cycle.interval())
            .map_err(|e| Error::sys("clock_nanosleep (relative)", e))?;
        Ok(clock_now(clock))
    }

    fn missed(&mut self, _cycle: &mut Cycle, _sample: &Sample) -> u64 {
        0
    }
}

/// `-s`: a relative `nanosleep()` of one interval.
pub(super) struct Nanosleep;

impl Wake for Nanosleep {
    fn wait(&mut self, cycle: &mut Cycle, clock: &mut LinuxClock) -> Result<i64, Error> {
        restart(cycle, clock);
        clock::nanosleep(cycle.interval()).map_err(|e| Error::sys("nanosleep", e))?;
        Ok(clock_now(clock))
    }

    fn missed(&mut self, _cycle: &mut Cycle, _sample: &Sample) -> u64 {
        0
    }
}

/// A relative period starts now: the deadline is the clock plus one
/// interval.
fn restart(cycle: &mut Cycle, clock: &mut LinuxClock) {
    let now = clock_now(clock);
    cycle.set_deadline(now.saturating_add(cycle.interval()));
}

#[inline(always)]
fn clock_now(clock: &mut LinuxClock) -> i64 {
    latscope_core::cycle::Clock::now(clock)
}

/// How long a `--timerlat` thread reads without recording while it waits
/// for the kernel's grid from the trace.
const GRID_WAIT_NS: i64 = 5_000_000_000;

/// `--timerlat`: a `read()` of the CPU's `timerlat_fd`, which the kernel
/// returns after the period's timer IRQ woke the thread.
///
/// The deadline is the kernel's period start: the kernel starts a thread's
/// periods at its clock in the thread's first read, then every period,
/// and each read waits for the first start at or after the kernel's clock
/// in that read, skipping the periods a late thread missed. The trace's
/// reader publishes one start of that grid from the IRQ entries
/// ([`latscope_core::timerlat::Grid`]); before each read, the deadline is
/// the grid's first start at or after the clock read right then.
pub(super) struct Timerlat {
    fd: OwnedFd,
    buf: [u8; 1],
    start: Arc<AtomicU64>,
    period_ns: u64,
}

impl Timerlat {
    /// `open(osnoise/per_cpu/cpuN/timerlat_fd)` under `root`, by the
    /// calling thread, pinned to `cpu`; `start` is where the reader
    /// publishes the CPU's grid, of periods of `period_ns`.
    pub(super) fn open(
        root: &Path,
        cpu: usize,
        start: Arc<AtomicU64>,
        period_ns: u64,
    ) -> Result<Self, Error> {
        let fd = timerlat::open_fd(root, cpu).map_err(|e| match e {
            Errno::BUSY => Error::Unavailable(format!(
                "--timerlat: CPU {cpu}'s timerlat_fd is open in another process"
            )),
            e => Error::sys("opening timerlat_fd", e),
        })?;
        Ok(Timerlat {
            fd,
            buf: [0],
            start,
            period_ns,
        })
    }

    /// `read(timerlat_fd)`: waits for the next period.
    #[inline(always)]
    fn read(&mut self) -> Result<(), Error> {
        rustix::io::read(&self.fd, &mut self.buf)
            .map(drop)
            .map_err(|e| Error::sys("read (timerlat_fd)", e))
    }

    /// Reads without recording until the reader has published the grid,
    /// counting them in `unrecorded`: `Ok(false)` if the run stopped
    /// first.
    ///
    /// # Errors
    ///
    /// A failed read, or no grid within [`GRID_WAIT_NS`] (no timerlat
    /// entry in the trace).
    pub(super) fn find_grid(
        &mut self,
        stop: &AtomicBool,
        clock: &mut LinuxClock,
        unrecorded: &AtomicU64,
    ) -> Result<bool, Error> {
        let until = clock_now(clock).saturating_add(GRID_WAIT_NS);
        while self.start.load(Ordering::Acquire) == 0 {
            if stop.load(Ordering::Relaxed) {
                return Ok(false);
            }
            if clock_now(clock) > until {
                return Err(Error::Unavailable(
                    "--timerlat: the trace gave no grid of the kernel's periods within 5 s".into(),
                ));
            }
            self.read()?;
            unrecorded.fetch_add(1, Ordering::Relaxed);
        }
        Ok(true)
    }
}

impl Wake for Timerlat {
    #[inline(always)]
    fn wait(&mut self, cycle: &mut Cycle, clock: &mut LinuxClock) -> Result<i64, Error> {
        let start = self.start.load(Ordering::Relaxed);
        let before = u64::try_from(clock_now(clock)).unwrap_or(0);
        let next = Grid::next_at(start, self.period_ns, before);
        cycle.set_deadline(i64::try_from(next).unwrap_or(i64::MAX));
        self.read()?;
        Ok(clock_now(clock))
    }
}

/// `-x`: a POSIX timer that signals this thread every interval.
pub(super) struct PosixTimer {
    timer: Timer,
}

impl PosixTimer {
    /// Create the calling thread's timer and arm it: first expiry at the
    /// cycle's deadline (or, `relative`, one interval after the clock read
    /// just before arming, which becomes the cycle's deadline, as 2.4
    /// reads the clock right before `timer_settime`), then every interval.
    /// The thread's SIGALRM is blocked (all threads inherit the main
    /// thread's mask), so it is only ever taken by [`Wake::wait`].
    pub(super) fn arm(
        clock: &mut LinuxClock,
        cycle: &mut Cycle,
        relative: bool,
    ) -> Result<Self, Error> {
        let tid = rustix::thread::gettid().as_raw_nonzero().get();
        let timer = sys::timer_create(clock.id(), sig::ALRM, tid)
            .map_err(|e| Error::sys("timer_create (-x)", e))?;
        let interval = timespec(cycle.interval());
        let first = if relative {
            // timer_create's time is not part of the first period
            restart(cycle, clock);
            interval
        } else {
            timespec(cycle.deadline())
        };
        sys::timer_settime(&timer, !relative, &first, &interval)
            .map_err(|e| Error::sys("timer_settime (-x)", e))?;
        Ok(PosixTimer { timer })
    }
}

impl Wake for PosixTimer {
    fn wait(&mut self, _cycle: &mut Cycle, clock: &mut LinuxClock) -> Result<i64, Error> {
        loop {
            match sys::wait_signal(sigbit(sig::ALRM), None) {
                Ok(Some(_)) => return Ok(clock_now(clock)),
                Ok(None) => continue,
                Err(e) => return Err(Error::sys("rt_sigtimedwait (-x)", e)),
            }
        }
    }

    /// A wake-up a period or more late: the timer's own count of the
    /// expirations it merged decides the next deadline and the missed
    /// periods (one more system call, on late cycles only).
    fn missed(&mut self, cycle: &mut Cycle, sample: &Sample) -> u64 {
        let interval = cycle.interval();
        if sample.latency < interval {
            return 0;
        }
        let overruns = sys::timer_getoverrun(&self.timer).unwrap_or(sample.missed);
        let next = (overruns as i64)
            .saturating_add(1)
            .saturating_mul(interval)
            .saturating_add(sample.deadline);
        cycle.set_deadline(next);
        overruns
    }
}
