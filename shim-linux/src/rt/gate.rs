//! The start of a run: each measuring thread sets itself up and reports
//! ready; the main thread waits for all of them, then opens the gate (they
//! measure) or cancels it (a set-up failed, nobody measures). Each thread's
//! own life cycle is its [`Phase`].

use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

use latscope_core::cycle::Clock;
use latscope_core::wire::StartAlign;

use crate::linux::clock::LinuxClock;
use crate::linux::sleep_ns;

/// How often a waiting side looks again (before measuring, so sleeping is
/// fine).
const POLL_NS: i64 = 1_000_000;
/// How far after the gate opens a common start lies: every thread is past
/// the gate (it looks every [`POLL_NS`]) before its first deadline.
const START_MARGIN_NS: i64 = 10 * POLL_NS;
/// A second in ns.
const SECOND: i64 = 1_000_000_000;

/// The common start of `-A` and `--secaligned` on `clock`, taken by the
/// main thread just before it opens the gate: a little ahead of now
/// ([`START_MARGIN_NS`]), and with `--secaligned` the next full second
/// after that, two if less than 0.1 s remain (as cyclictest 2.4 rounds
/// it). 0 for other runs.
pub fn common_start(align: StartAlign, mut clock: LinuxClock) -> i64 {
    let soon = clock.now().saturating_add(START_MARGIN_NS);
    match align {
        StartAlign::Own => 0,
        StartAlign::Threads { .. } => soon,
        StartAlign::Second { .. } => {
            let secs = soon.div_euclid(SECOND);
            let extra = if soon.rem_euclid(SECOND) > 900_000_000 {
                2
            } else {
                1
            };
            (secs + extra).saturating_mul(SECOND)
        }
    }
}

/// Where a measuring thread is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Phase {
    /// Setting up.
    Starting = 0,
    /// Set up, waiting at the gate.
    Ready = 1,
    /// Set-up failed (the thread's error says why).
    Failed = 2,
    /// In the loop.
    Measuring = 3,
    /// Returned (demoted).
    Done = 4,
}

/// A [`Phase`] that the measuring thread writes and others read.
#[derive(Debug)]
pub struct PhaseCell(AtomicU8);

impl PhaseCell {
    /// Starting.
    pub const fn new() -> PhaseCell {
        PhaseCell(AtomicU8::new(Phase::Starting as u8))
    }

    /// The current phase.
    pub fn get(&self) -> Phase {
        match self.0.load(Ordering::SeqCst) {
            0 => Phase::Starting,
            1 => Phase::Ready,
            2 => Phase::Failed,
            3 => Phase::Measuring,
            _ => Phase::Done,
        }
    }

    /// Move to `p`.
    pub fn set(&self, p: Phase) {
        self.0.store(p as u8, Ordering::SeqCst);
    }
}

/// The state of the [`StartGate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Gate {
    /// Threads wait.
    Closed = 0,
    /// Threads measure.
    Open = 1,
    /// Threads return without measuring.
    Cancelled = 2,
}

/// The ready/go handshake between the main thread and the measuring threads.
#[derive(Debug)]
pub struct StartGate {
    ready: AtomicU32,
    gate: AtomicU8,
}

impl StartGate {
    /// A closed gate nobody has reached.
    pub const fn new() -> StartGate {
        StartGate {
            ready: AtomicU32::new(0),
            gate: AtomicU8::new(Gate::Closed as u8),
        }
    }

    /// A measuring thread: report set-up done (or failed), then wait until
    /// the gate opens (`true`: measure) or is cancelled (`false`).
    pub fn arrive_and_wait(&self) -> bool {
        self.ready.fetch_add(1, Ordering::SeqCst);
        loop {
            match self.gate.load(Ordering::SeqCst) {
                g if g == Gate::Closed as u8 => sleep_ns(POLL_NS),
                g => return g == Gate::Open as u8,
            }
        }
    }

    /// Main: wait until `n` measuring threads have arrived.
    pub fn wait_for(&self, n: usize) {
        while (self.ready.load(Ordering::SeqCst) as usize) < n {
            sleep_ns(POLL_NS);
        }
    }

    /// Main: let every thread measure.
    pub fn open(&self) {
        self.gate.store(Gate::Open as u8, Ordering::SeqCst);
    }

    /// Main: send every thread home without measuring.
    pub fn cancel(&self) {
        self.gate.store(Gate::Cancelled as u8, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_opens_or_cancels_for_every_thread() {
        for open in [true, false] {
            let gate = StartGate::new();
            let went: Vec<bool> = std::thread::scope(|s| {
                let threads: Vec<_> = (0..3).map(|_| s.spawn(|| gate.arrive_and_wait())).collect();
                gate.wait_for(3);
                if open {
                    gate.open();
                } else {
                    gate.cancel();
                }
                threads.into_iter().map(|t| t.join().unwrap()).collect()
            });
            assert_eq!(went, [open; 3]);
        }
    }

    #[test]
    fn phases_round_trip() {
        let c = PhaseCell::new();
        for p in [
            Phase::Starting,
            Phase::Ready,
            Phase::Failed,
            Phase::Measuring,
            Phase::Done,
        ] {
            c.set(p);
            assert_eq!(c.get(), p);
        }
        assert!(Phase::Measuring > Phase::Ready);
    }
}
