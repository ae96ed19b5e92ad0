//! A doorbell: the sender thread sleeps until its next deadline or until
//! another thread rings, whichever comes first.
//!
//! The main thread takes the run's signals (`sigtimedwait`). SIGUSR2 it
//! answers itself (`sender::SnapshotAnswer`); SIGUSR1, the status on
//! standard error, is served by the sender, which would otherwise see the
//! request only at its next tick, up to 100 ms later. Each measuring
//! thread rings as it returns, so the run ends when its last one does. A
//! ring changes the word the sender sleeps on (`futex(FUTEX_WAIT)`), so a
//! ring between the sender's look at its work and its sleep is never
//! lost: the sleep then returns at once.

use core::sync::atomic::{AtomicU32, Ordering};

use rustix::thread::futex;

use super::clock::timespec;

/// A futex word counting rings. Const-constructible.
#[derive(Debug, Default)]
pub struct Doorbell {
    rings: AtomicU32,
}

impl Doorbell {
    /// No ring yet.
    pub const fn new() -> Self {
        Doorbell {
            rings: AtomicU32::new(0),
        }
    }

    /// The rings so far: read it before looking at the work a ring
    /// announces, and hand it to [`Doorbell::sleep`].
    pub fn rings(&self) -> u32 {
        self.rings.load(Ordering::SeqCst)
    }

    /// `futex(FUTEX_WAKE)`: count a ring and wake the sleeper.
    pub fn ring(&self) {
        self.rings.fetch_add(1, Ordering::SeqCst);
        // nobody asleep is no error
        let _ = futex::wake(&self.rings, futex::Flags::PRIVATE, u32::MAX);
    }

    /// `futex(FUTEX_WAIT)`: sleep up to `ns`, unless the bell has rung
    /// since `seen` (from [`Doorbell::rings`]) or rings meanwhile.
    pub fn sleep(&self, seen: u32, ns: i64) {
        // EAGAIN (rung since `seen`), ETIMEDOUT and EINTR all mean: go on
        let _ = futex::wait(
            &self.rings,
            futex::Flags::PRIVATE,
            seen,
            Some(&timespec(ns)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn a_ring_wakes_the_sleeper_long_before_its_deadline() {
        let bell = Arc::new(Doorbell::new());
        let seen = bell.rings();
        let (tx, rx) = std::sync::mpsc::channel();
        let sleeper = {
            let bell = Arc::clone(&bell);
            std::thread::spawn(move || {
                tx.send(()).expect("main waits");
                let t0 = Instant::now();
                bell.sleep(seen, 10_000_000_000);
                t0.elapsed()
            })
        };
        rx.recv().expect("the sleeper started");
        bell.ring();
        let slept = sleeper.join().expect("the sleeper returns");
        assert!(slept < Duration::from_secs(5), "slept {slept:?} of 10 s");
    }

    #[test]
    fn a_ring_before_the_sleep_is_not_lost() {
        let bell = Doorbell::new();
        let seen = bell.rings();
        bell.ring();
        let t0 = Instant::now();
        bell.sleep(seen, 10_000_000_000);
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        assert_eq!(bell.rings(), seen + 1);
    }

    #[test]
    fn without_a_ring_it_sleeps_to_its_deadline() {
        let bell = Doorbell::new();
        let t0 = Instant::now();
        bell.sleep(bell.rings(), 20_000_000);
        assert!(
            t0.elapsed() >= Duration::from_millis(20),
            "{:?}",
            t0.elapsed()
        );
    }
}
