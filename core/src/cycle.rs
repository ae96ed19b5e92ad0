//! The per-thread cycle logic: deadlines, latency, missed periods, end
//! conditions, driven through a [`Clock`].
//!
//! Thread `t` sleeps until absolute deadlines `D(k) = start + k * I` with
//! `I = interval + t * distance` (cyclictest's `-i` and `-d`). On waking at
//! time `W`, the latency is `W - D`. If `W` is a whole period or more late,
//! the deadlines already passed are **missed periods**: they are counted
//! (cyclictest skips them silently), and the next deadline is the first
//! `D + m * I` that is not before `W`:
//!
//! * interval 1 ms, wake at `D + 2.4 ms`: latency 2.4 ms, 2 missed, next `D + 3 ms`;
//! * wake at exactly `D + 2.0 ms`: 1 missed, next `D + 2 ms` (due at once).
//!
//! So `cycles + missed` always equals the number of deadlines that passed;
//! with a duration, deadlines after its end are never counted as missed.

use crate::error::Error;

/// Why a [`Clock`] sleep did not reach its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SleepError {
    /// A signal interrupted the sleep (EINTR): retry with the same deadline.
    Interrupted,
    /// Any other failure, with the OS error number.
    Os(i32),
}

/// A clock that can tell the time and sleep until an absolute time.
///
/// On Linux this is `clock_gettime` plus
/// `clock_nanosleep(clock, TIMER_ABSTIME, ...)`; on a microcontroller a
/// free-running timer and a compare interrupt; tests use a simulated clock.
///
/// # Contract
///
/// * [`Clock::now`] is in nanoseconds on one time base and **monotonic**:
///   it never returns less than it returned before. (`CLOCK_REALTIME` can
///   be stepped back; [`Cycle`] then counts the wake-ups that come before
///   their deadline as early, it never fails on them.)
/// * [`Clock::sleep_until`] returns `Ok` when the deadline has passed, as
///   far as the clock can tell. It **may wake late** (that lateness is what
///   latscope measures, so a clock must never hide it) and it **may wake
///   early** (a stepped clock, a timer rounded down); [`Cycle`] reads
///   [`Clock::now`] after every sleep and accounts both.
/// * A sleep cut short by a signal returns [`SleepError::Interrupted`] and
///   is retried with the same absolute deadline; any other failure is
///   [`SleepError::Os`] and ends the thread's measuring.
/// * Neither method allocates, locks or does I/O: they run in the
///   measuring loop.
pub trait Clock {
    /// The current time in ns (monotonic; see the contract above).
    fn now(&mut self) -> i64;
    /// Sleep until the absolute time `deadline` (ns); may return late or
    /// early.
    ///
    /// # Errors
    ///
    /// [`SleepError::Interrupted`] (a signal: [`Cycle::sleep`] sleeps again)
    /// or [`SleepError::Os`] with the system's error number.
    fn sleep_until(&mut self, deadline: i64) -> Result<(), SleepError>;
}

/// When a thread stops measuring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum StopReason {
    /// The loop count (`-l`) was reached.
    Loops,
    /// The duration (`-D`) ran out.
    Duration,
    /// A latency exceeded the break threshold (`-b`).
    Break,
}

/// Settings of one thread's cycle. All times in ns; 0 disables a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CycleConfig {
    /// This thread's period (already including its distance).
    pub interval_ns: u64,
    /// Wake-ups at the start that are not recorded.
    pub warmup_cycles: u64,
    /// Time at the start whose wake-ups are not recorded.
    pub warmup_ns: u64,
    /// Recorded wake-ups after which the thread stops (`-l`).
    pub loops: u64,
    /// Time after the start at which the thread stops (`-D`).
    pub duration_ns: u64,
    /// Stop when a latency is above this (`-b`).
    pub break_ns: u64,
    /// Flag samples above this as spikes (`--spike`, `--explain`).
    pub spike_ns: u64,
    /// Flag samples at or above this as histogram overflows (`-h US`).
    pub overflow_ns: u64,
}

impl CycleConfig {
    /// A 1 ms cycle with no limits.
    pub const DEFAULT: CycleConfig = CycleConfig {
        interval_ns: 1_000_000,
        warmup_cycles: 0,
        warmup_ns: 0,
        loops: 0,
        duration_ns: 0,
        break_ns: 0,
        spike_ns: 0,
        overflow_ns: 0,
    };
}

impl Default for CycleConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Flags of a recorded sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Flags {
    /// Above the spike threshold.
    pub spike: bool,
    /// At or above the histogram-text range (a cyclictest "overflow").
    pub overflow: bool,
    /// Above the break threshold.
    pub brk: bool,
}

impl Flags {
    /// No flag set.
    pub(crate) const NONE: Flags = Flags {
        spike: false,
        overflow: false,
        brk: false,
    };

    /// Whether any flag is set (the sample must be reported individually).
    pub const fn any(&self) -> bool {
        self.spike || self.overflow || self.brk
    }
}

/// One measured wake-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Sample {
    /// Index of this recorded wake-up (0-based, after warm-up).
    pub cycle: u64,
    /// The deadline slept for (ns).
    pub deadline: i64,
    /// When the thread woke (ns).
    pub wake: i64,
    /// `wake - deadline` in ns (negative = early).
    pub latency: i64,
    /// Whole periods skipped.
    pub missed: u64,
    /// Thresholds crossed.
    pub flags: Flags,
}

/// What one cycle produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Step {
    /// A warm-up wake-up: not recorded.
    Warmup,
    /// A sample to publish; `stop` is set if it was the last one.
    Sample {
        /// The sample.
        sample: Sample,
        /// Set when the thread must stop after recording it.
        stop: Option<StopReason>,
    },
}

/// One thread's cycle state machine.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Cycle {
    cfg: CycleConfig,
    next: i64,
    wakeups: u64,
    recorded: u64,
    // Derived once, so a wake-up does little more than compare:
    /// `interval_ns` as a clock value.
    interval: i64,
    /// Deadlines after this are past the duration (`i64::MAX`: none).
    end: i64,
    /// Deadlines at or before this are warm-up (`i64::MIN`: none).
    warm_until: i64,
    /// Still inside the warm-up.
    warming: bool,
    /// Recorded wake-ups after which to stop (`u64::MAX`: none).
    loops: u64,
    /// Latencies at or above this cross some threshold (`u64::MAX`: none).
    flag_from: u64,
    /// The fast path of [`Cycle::plain_wake`] holds for deadlines before
    /// this: warm-up is over, the next deadline neither passes the end nor
    /// overflows, and the wake-up is not the last by count (`i64::MIN`
    /// while warming up). A plain wake-up advances the deadline by one
    /// interval and the count by one, so one comparison of the deadline
    /// checks both limits; [`Cycle::on_wake_full`] sets it anew.
    fast_before: i64,
    /// ... and for latencies from 0 up to this: no period missed and no
    /// threshold crossed.
    fast_max: u64,
}

impl Cycle {
    /// A cycle that starts at `start` (ns); the first deadline is
    /// `start + interval`.
    ///
    /// # Errors
    ///
    /// [`Error::BadConfig`] for an interval of 0 or beyond `i64::MAX / 4` ns.
    pub const fn new(cfg: CycleConfig, start: i64) -> Result<Cycle, Error> {
        if cfg.interval_ns == 0 || cfg.interval_ns > i64::MAX as u64 / 4 {
            return Err(Error::BadConfig(
                "interval must be between 1 ns and 2^61 ns",
            ));
        }
        /// The smaller of two thresholds, 0 meaning "off".
        const fn lower(a: u64, b: u64) -> u64 {
            if a < b {
                a
            } else {
                b
            }
        }
        /// A `>` threshold as the `>=` one it is, 0 meaning "off".
        const fn above(t: u64) -> u64 {
            if t == 0 {
                u64::MAX
            } else {
                t.saturating_add(1)
            }
        }
        let overflow = if cfg.overflow_ns == 0 {
            u64::MAX
        } else {
            cfg.overflow_ns
        };
        let flag_from = lower(lower(above(cfg.spike_ns), above(cfg.break_ns)), overflow);
        let end = if cfg.duration_ns == 0 || cfg.duration_ns > i64::MAX as u64 {
            i64::MAX
        } else {
            start.saturating_add(cfg.duration_ns as i64)
        };
        let interval = cfg.interval_ns as i64;
        let warming = cfg.warmup_cycles > 0 || cfg.warmup_ns > 0;
        let next = start.saturating_add(interval);
        let loops = if cfg.loops == 0 { u64::MAX } else { cfg.loops };
        Ok(Cycle {
            cfg,
            next,
            wakeups: 0,
            recorded: 0,
            interval,
            end,
            warm_until: if cfg.warmup_ns == 0 || cfg.warmup_ns > i64::MAX as u64 {
                i64::MIN
            } else {
                start.saturating_add(cfg.warmup_ns as i64)
            },
            warming,
            loops,
            flag_from,
            fast_before: if warming {
                i64::MIN
            } else {
                Self::fast_before(end, interval, next, 0, loops)
            },
            // flag_from >= 1: every threshold is positive or off
            fast_max: lower(cfg.interval_ns, flag_from - 1),
        })
    }

    /// The first deadline whose successor could pass `end` (or `i64::MAX`),
    /// or whose wake-up would be the last by count: `next + (loops -
    /// recorded - 1) * interval`, for the deadline `next` after `recorded`
    /// recorded wake-ups.
    const fn fast_before(end: i64, interval: i64, next: i64, recorded: u64, loops: u64) -> i64 {
        let by_end = end.saturating_sub(interval).saturating_add(1);
        let left = loops.saturating_sub(recorded).saturating_sub(1);
        let left = if left > i64::MAX as u64 {
            i64::MAX
        } else {
            left as i64
        };
        let by_count = next.saturating_add(left.saturating_mul(interval));
        if by_count < by_end {
            by_count
        } else {
            by_end
        }
    }

    /// A cycle whose first deadline is aligned to a multiple of `align_ns`
    /// plus `offset_ns` (like cyclictest's `--secaligned`), at least one
    /// interval after `now`.
    ///
    /// # Errors
    ///
    /// [`Error::BadConfig`], as [`Cycle::new`], and for an alignment of 0 or
    /// beyond `i64::MAX / 4` ns, or an offset not below it.
    pub const fn aligned(
        cfg: CycleConfig,
        now: i64,
        align_ns: u64,
        offset_ns: u64,
    ) -> Result<Cycle, Error> {
        if align_ns == 0 || align_ns > i64::MAX as u64 / 4 || offset_ns >= align_ns {
            return Err(Error::BadConfig(
                "alignment must be positive and above the offset",
            ));
        }
        let a = align_ns as i64;
        let earliest = now.saturating_add(cfg.interval_ns as i64);
        let base = earliest
            .div_euclid(a)
            .saturating_mul(a)
            .saturating_add(offset_ns as i64);
        let first = if base < earliest {
            base.saturating_add(a)
        } else {
            base
        };
        Cycle::new(cfg, first.saturating_sub(cfg.interval_ns as i64))
    }

    /// The settings.
    pub const fn config(&self) -> &CycleConfig {
        &self.cfg
    }

    /// The deadline the thread must sleep until next.
    pub const fn deadline(&self) -> i64 {
        self.next
    }

    /// Move the next deadline to `deadline` (ns), for the modes whose
    /// deadlines are not the fixed grid: a relative sleep starts each period
    /// from a fresh clock reading, and a POSIX timer skips the periods the
    /// kernel counted as overruns.
    pub fn set_deadline(&mut self, deadline: i64) {
        self.next = deadline;
        // the fast path's count bound counts from the deadline
        if !self.warming {
            self.fast_before =
                Self::fast_before(self.end, self.interval, deadline, self.recorded, self.loops);
        }
    }

    /// The period in ns.
    pub const fn interval(&self) -> i64 {
        self.interval
    }

    /// Recorded wake-ups so far.
    pub const fn recorded(&self) -> u64 {
        self.recorded
    }

    /// The common wake-up, in a few instructions: if the wake-up at `now`
    /// is a plain sample (after warm-up, 0 to one period late, under every
    /// threshold, and neither the last by count nor by duration), account
    /// it and return its latency. Otherwise change nothing and return
    /// `None`: [`Cycle::on_wake`] then accounts it in full.
    #[inline]
    pub fn plain_wake(&mut self, now: i64) -> Option<u64> {
        let deadline = self.next;
        // wraps only for far-apart times, which then fail the range check
        let latency = now.wrapping_sub(deadline) as u64;
        let recorded = self.recorded.wrapping_add(1);
        if deadline < self.fast_before && latency <= self.fast_max {
            // cannot overflow: deadline < fast_before <= i64::MAX - interval + 1;
            // not the last by count: fast_before says so
            self.next = deadline.wrapping_add(self.interval);
            self.recorded = recorded;
            Some(latency)
        } else {
            None
        }
    }

    /// Account a wake-up at `now` for the current deadline and advance it.
    #[inline]
    pub fn on_wake(&mut self, now: i64) -> Step {
        match self.plain_wake(now) {
            Some(latency) => Step::Sample {
                sample: Sample {
                    cycle: self.recorded - 1,
                    deadline: self.next - self.interval,
                    wake: now,
                    latency: latency as i64,
                    missed: 0,
                    flags: Flags::NONE,
                },
                stop: None,
            },
            None => self.on_wake_full(now),
        }
    }

    /// [`Cycle::on_wake`] for every case, including the plain one.
    #[inline(never)]
    fn on_wake_full(&mut self, now: i64) -> Step {
        let deadline = self.next;
        let latency = now.saturating_sub(deadline);
        let interval = self.interval;
        let mut missed = 0;
        if latency > interval {
            let m = (latency - 1) / interval;
            self.next = deadline.saturating_add(interval.saturating_mul(m + 1));
            // Deadlines after the end of the run were never due: a late last
            // wake-up must not count them as missed.
            let due = (self.end.saturating_sub(deadline) / interval).max(0);
            missed = m.min(due) as u64;
        } else {
            self.next = deadline.saturating_add(interval);
        }

        if self.warming {
            self.wakeups = self.wakeups.wrapping_add(1);
            if self.wakeups <= self.cfg.warmup_cycles || deadline <= self.warm_until {
                return Step::Warmup;
            }
            self.warming = false;
        }

        let lat_u = if latency > 0 { latency as u64 } else { 0 };
        let flags = if lat_u < self.flag_from {
            Flags::default()
        } else {
            let c = &self.cfg;
            Flags {
                spike: c.spike_ns > 0 && lat_u > c.spike_ns,
                overflow: c.overflow_ns > 0 && lat_u >= c.overflow_ns,
                brk: c.break_ns > 0 && lat_u > c.break_ns,
            }
        };
        let sample = Sample {
            cycle: self.recorded,
            deadline,
            wake: now,
            latency,
            missed,
            flags,
        };
        self.recorded = self.recorded.wrapping_add(1);
        self.fast_before =
            Self::fast_before(self.end, interval, self.next, self.recorded, self.loops);

        let stop = if flags.brk {
            Some(StopReason::Break)
        } else if self.recorded >= self.loops {
            Some(StopReason::Loops)
        } else if self.next > self.end {
            Some(StopReason::Duration)
        } else {
            None
        };
        Step::Sample { sample, stop }
    }

    /// Sleep until the deadline (retrying EINTR with the same deadline)
    /// and read the clock: the time of the wake-up, to account with
    /// [`Cycle::plain_wake`] or [`Cycle::on_wake`].
    ///
    /// # Errors
    ///
    /// [`Error::Sleep`] with the clock's error number; an interrupted sleep is
    /// retried.
    #[inline]
    pub fn sleep<C: Clock>(&self, clock: &mut C) -> Result<i64, Error> {
        loop {
            match clock.sleep_until(self.next) {
                Ok(()) => return Ok(clock.now()),
                Err(SleepError::Interrupted) => continue,
                Err(SleepError::Os(e)) => return Err(Error::Sleep(e)),
            }
        }
    }

    /// Sleep until the deadline, read the clock, and account the wake-up.
    #[cfg(test)]
    pub(crate) fn run_once<C: Clock>(&mut self, clock: &mut C) -> Result<Step, Error> {
        let now = self.sleep(clock)?;
        Ok(self.on_wake(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    const MS: i64 = 1_000_000;

    /// A simulated clock: each sleep wakes at the deadline plus the next
    /// scripted lateness; `eintr` sleeps fail with EINTR first.
    struct SimClock {
        now: i64,
        lateness: Vec<i64>,
        eintr: u32,
        sleeps: Vec<i64>,
    }

    impl SimClock {
        fn new(start: i64, lateness: &[i64]) -> Self {
            SimClock {
                now: start,
                lateness: lateness.iter().rev().copied().collect(),
                eintr: 0,
                sleeps: Vec::new(),
            }
        }
    }

    impl Clock for SimClock {
        fn now(&mut self) -> i64 {
            self.now
        }
        fn sleep_until(&mut self, deadline: i64) -> Result<(), SleepError> {
            self.sleeps.push(deadline);
            if self.eintr > 0 {
                self.eintr -= 1;
                self.now += 10;
                return Err(SleepError::Interrupted);
            }
            let late = self.lateness.pop().unwrap_or(0);
            self.now = self.now.max(deadline) + late;
            Ok(())
        }
    }

    fn cfg(interval: i64) -> CycleConfig {
        CycleConfig {
            interval_ns: interval as u64,
            ..CycleConfig::DEFAULT
        }
    }

    fn sample(step: Step) -> Sample {
        sample_and_stop(step).0
    }

    #[test]
    fn late_by_2_4_ms_gives_two_missed_and_realigns() {
        let mut c = Cycle::new(cfg(MS), 0).unwrap();
        let d = c.deadline();
        assert_eq!(d, MS);
        let s = sample(c.on_wake(d + 2_400_000));
        assert_eq!(s.latency, 2_400_000);
        assert_eq!(s.missed, 2);
        assert_eq!(c.deadline(), d + 3 * MS);
    }

    #[test]
    fn late_by_exactly_2_ms_gives_one_missed() {
        let mut c = Cycle::new(cfg(MS), 0).unwrap();
        let d = c.deadline();
        let s = sample(c.on_wake(d + 2 * MS));
        assert_eq!(s.missed, 1);
        assert_eq!(c.deadline(), d + 2 * MS);
        // exactly one period late: no period missed, next deadline is now
        let mut c = Cycle::new(cfg(MS), 0).unwrap();
        let s = sample(c.on_wake(c.deadline() + MS));
        assert_eq!(s.missed, 0);
    }

    /// Run steps until the duration stops them; returns (cycles, missed).
    fn until_duration_ends(mut step: impl FnMut() -> Step) -> (u64, u64) {
        let (mut cycles, mut missed) = (0, 0);
        loop {
            let s = sample_and_stop(step());
            cycles += 1;
            missed += s.0.missed;
            if let Some(stop) = s.1 {
                assert_eq!(stop, StopReason::Duration);
                return (cycles, missed);
            }
        }
    }

    fn sample_and_stop(step: Step) -> (Sample, Option<StopReason>) {
        match step {
            Step::Sample { sample, stop } => (sample, stop),
            Step::Warmup => panic!("unexpected warm-up"),
        }
    }

    #[test]
    fn cycles_plus_missed_equals_deadlines_passed() {
        let late = [0, 5_000, 3_500_000, 0, 900_000, 12_000_000, 1];
        let mut clock = SimClock::new(0, &late);
        let mut c = Cycle::new(
            CycleConfig {
                duration_ns: 40 * MS as u64,
                ..cfg(MS)
            },
            0,
        )
        .unwrap();
        let (cycles, missed) = until_duration_ends(|| c.run_once(&mut clock).unwrap());
        assert_eq!(cycles + missed, 40);
    }

    #[test]
    fn a_late_last_wakeup_does_not_count_periods_after_the_end() {
        // duration 10 ms: the wake-up for the 9 ms deadline is 5.5 ms late;
        // only the 10 ms deadline was due before the end, not 11..14 ms
        let mut c = Cycle::new(
            CycleConfig {
                duration_ns: 10 * MS as u64,
                ..cfg(MS)
            },
            0,
        )
        .unwrap();
        let (cycles, missed) = until_duration_ends(|| {
            let late = if c.deadline() == 9 * MS { 5_500_000 } else { 0 };
            c.on_wake(c.deadline() + late)
        });
        assert_eq!((cycles, missed), (9, 1));
    }

    #[test]
    fn eintr_retries_the_same_deadline() {
        let mut clock = SimClock::new(0, &[7_000]);
        clock.eintr = 3;
        let mut c = Cycle::new(cfg(MS), 0).unwrap();
        let s = sample(c.run_once(&mut clock).unwrap());
        assert_eq!(clock.sleeps, std::vec![MS, MS, MS, MS]);
        assert_eq!(s.latency, 7_000);
    }

    #[test]
    fn os_error_is_reported() {
        struct Broken;
        impl Clock for Broken {
            fn now(&mut self) -> i64 {
                0
            }
            fn sleep_until(&mut self, _: i64) -> Result<(), SleepError> {
                Err(SleepError::Os(22))
            }
        }
        let mut c = Cycle::new(cfg(MS), 0).unwrap();
        assert_eq!(c.run_once(&mut Broken), Err(Error::Sleep(22)));
    }

    #[test]
    fn negative_latency_is_early_not_huge() {
        let mut c = Cycle::new(cfg(MS), 0).unwrap();
        let s = sample(c.on_wake(c.deadline() - 40_000));
        assert_eq!(s.latency, -40_000);
        assert_eq!(s.missed, 0);
        assert!(!s.flags.any());
        assert_eq!(c.deadline(), 2 * MS);
    }

    #[test]
    fn warmup_by_cycles_and_time_is_not_recorded() {
        let mut c = Cycle::new(
            CycleConfig {
                warmup_cycles: 2,
                ..cfg(MS)
            },
            0,
        )
        .unwrap();
        assert_eq!(c.on_wake(c.deadline()), Step::Warmup);
        assert_eq!(c.on_wake(c.deadline()), Step::Warmup);
        assert_eq!(sample(c.on_wake(c.deadline())).cycle, 0);
        let mut c = Cycle::new(
            CycleConfig {
                warmup_ns: 3 * MS as u64,
                ..cfg(MS)
            },
            0,
        )
        .unwrap();
        for _ in 0..3 {
            assert_eq!(c.on_wake(c.deadline()), Step::Warmup);
        }
        assert_eq!(sample(c.on_wake(c.deadline())).deadline, 4 * MS);
    }

    #[test]
    fn loops_and_break_stop() {
        let mut c = Cycle::new(
            CycleConfig {
                loops: 2,
                ..cfg(MS)
            },
            0,
        )
        .unwrap();
        assert!(matches!(
            c.on_wake(c.deadline()),
            Step::Sample { stop: None, .. }
        ));
        assert!(matches!(
            c.on_wake(c.deadline()),
            Step::Sample {
                stop: Some(StopReason::Loops),
                ..
            }
        ));
        let mut c = Cycle::new(
            CycleConfig {
                break_ns: 100_000,
                spike_ns: 50_000,
                overflow_ns: 80_000,
                ..cfg(MS)
            },
            0,
        )
        .unwrap();
        let step = c.on_wake(c.deadline() + 60_000);
        assert!(
            matches!(step, Step::Sample { stop: None, sample } if sample.flags.spike && !sample.flags.overflow)
        );
        let step = c.on_wake(c.deadline() + 100_000);
        assert!(
            matches!(step, Step::Sample { stop: None, sample } if sample.flags.overflow && !sample.flags.brk)
        );
        let step = c.on_wake(c.deadline() + 100_001);
        assert!(
            matches!(step, Step::Sample { stop: Some(StopReason::Break), sample } if sample.flags.brk)
        );
    }

    #[test]
    fn distance_and_alignment_give_documented_deadlines() {
        // thread 2 at -i 1000 -d 500: deadlines every 2 ms from its start
        let mut c = Cycle::new(cfg(2 * MS), 10).unwrap();
        assert_eq!(c.deadline(), 10 + 2 * MS);
        c.on_wake(c.deadline() + 3);
        assert_eq!(c.deadline(), 10 + 4 * MS);
        // aligned to whole seconds plus 250 µs, at least one interval ahead
        let c = Cycle::aligned(cfg(MS), 1_999_500_000, 1_000_000_000, 250_000).unwrap();
        assert_eq!(c.deadline(), 3_000_250_000);
        let c = Cycle::aligned(cfg(MS), 1_500_000_000, 1_000_000_000, 0).unwrap();
        assert_eq!(c.deadline(), 2_000_000_000);
        assert!(Cycle::new(cfg(0), 0).is_err());
    }

    #[test]
    fn a_moved_deadline_is_the_next_one_slept_for() {
        // a relative sleep: the period restarts from the clock reading
        let mut c = Cycle::new(cfg(MS), 0).unwrap();
        c.set_deadline(5 * MS + 7 + c.interval());
        assert_eq!(c.deadline(), 6 * MS + 7);
        assert_eq!(c.plain_wake(6 * MS + 20), Some(13));
        assert_eq!(c.deadline(), 7 * MS + 7);
    }

    /// A seeded xorshift generator (no dependency, reproducible).
    fn lcg(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    #[test]
    fn the_fast_path_accounts_exactly_as_the_full_one() {
        // Two copies of each configuration see the same wake-ups: one goes
        // through on_wake (fast path first), one only through the full
        // accounting. Every step and every next deadline must agree.
        let mut seed = 0x9e37_79b9_7f4a_7c15;
        let configs = [
            cfg(MS),
            CycleConfig {
                warmup_cycles: 3,
                loops: 500,
                spike_ns: 300_000,
                ..cfg(MS)
            },
            CycleConfig {
                warmup_ns: 5 * MS as u64,
                duration_ns: 300 * MS as u64,
                break_ns: 3_900_000,
                overflow_ns: 350_000,
                ..cfg(MS)
            },
            CycleConfig {
                duration_ns: 1_000 * MS as u64,
                ..cfg(250_000)
            },
            // the count limit without warm-up, with missed periods before it
            CycleConfig {
                loops: 300,
                ..cfg(MS)
            },
        ];
        for (n, c) in configs.into_iter().enumerate() {
            let start = (lcg(&mut seed) % 1_000_000_000) as i64 - 500_000_000;
            let (mut fast, mut full) =
                (Cycle::new(c, start).unwrap(), Cycle::new(c, start).unwrap());
            let (mut plain, mut steps) = (0, 0);
            for i in 0..2_000 {
                steps += 1;
                let r = lcg(&mut seed);
                // mostly on time, some early, some late by whole periods
                let late = match r % 16 {
                    0 => -(((r >> 8) % 50_000) as i64),
                    1 => ((r >> 8) % (4 * MS as u64)) as i64,
                    _ => ((r >> 8) % 400_000) as i64,
                };
                let now = fast.deadline() + late;
                let before = fast.clone().plain_wake(now).is_some();
                plain += before as u32;
                let (a, b) = (fast.on_wake(now), full.on_wake_full(now));
                assert_eq!(a, b, "config {n}, wake-up {i}");
                assert_eq!(fast.deadline(), full.deadline(), "config {n}, wake-up {i}");
                if matches!(a, Step::Sample { stop: Some(_), .. }) {
                    break;
                }
            }
            assert!(
                plain * 2 > steps,
                "config {n}: the fast path was taken {plain} times in {steps}"
            );
        }
    }

    #[test]
    fn the_fast_path_declines_every_special_wakeup() {
        let c = CycleConfig {
            warmup_cycles: 1,
            loops: 3,
            spike_ns: 100_000,
            duration_ns: 10 * MS as u64,
            ..cfg(MS)
        };
        let mut cy = Cycle::new(c, 0).unwrap();
        // `late` after the current deadline is not plain: nothing changes
        let untouched = |cy: &mut Cycle, late: i64| {
            let now = cy.deadline() + late;
            let before = (cy.deadline(), cy.recorded());
            assert_eq!(cy.plain_wake(now), None, "at {now}");
            assert_eq!((cy.deadline(), cy.recorded()), before);
        };
        untouched(&mut cy, 0); // warm-up
        assert_eq!(cy.on_wake(cy.deadline()), Step::Warmup);
        let d = cy.deadline();
        assert!(matches!(cy.on_wake(d), Step::Sample { .. }));
        untouched(&mut cy, -1); // early
        untouched(&mut cy, MS + 1); // a period missed
        untouched(&mut cy, 100_001); // a spike
        let d = cy.deadline();
        assert_eq!(cy.plain_wake(d + 100_000), Some(100_000));
        untouched(&mut cy, 0); // the last by count
        let mut cy = Cycle::new(cfg(MS), i64::MAX - 3 * MS / 2).unwrap();
        untouched(&mut cy, 0); // the next deadline would overflow
    }

    #[test]
    fn huge_lateness_saturates_instead_of_overflowing() {
        let mut c = Cycle::new(cfg(1), i64::MAX - 10).unwrap();
        let s = sample(c.on_wake(i64::MAX));
        assert!(s.missed > 0);
        assert_eq!(c.deadline(), i64::MAX);
    }
}
