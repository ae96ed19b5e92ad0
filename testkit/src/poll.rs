//! Polling for a state, with a timeout, never sleeping for a fixed time:
//! the one way the tests wait. Standard library only, so that the host's
//! own tests, which also run for Windows, include this file as it is.

use std::thread;
use std::time::{Duration, Instant};

/// Poll `f` every 20 ms until it gives a value, or `timeout` passes.
pub fn poll<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// Poll `f` every 20 ms until it gives a value; panic naming `what` after
/// `timeout`.
#[track_caller]
pub fn until<T>(timeout: Duration, what: &str, f: impl FnMut() -> Option<T>) -> T {
    match poll(timeout, f) {
        Some(v) => v,
        None => panic!("waited {timeout:?} for {what}, in vain"),
    }
}

/// Poll `cond` every 20 ms until it holds; panic naming `what` after
/// `timeout`.
#[track_caller]
pub fn holds(timeout: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    until(timeout, what, || cond().then_some(()))
}

/// Poll `cond` every 20 ms until it holds or `timeout` passes; whether it
/// held.
pub fn within(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    poll(timeout, || cond().then_some(())).is_some()
}

/// Observe with `f` every 20 ms until it gives `want`, or `timeout`
/// passes: the last observation, for the caller to compare with `want`
/// (so a state that never comes fails with what was seen instead).
pub fn settle<T: PartialEq>(timeout: Duration, want: &T, mut f: impl FnMut() -> T) -> T {
    let mut seen = None;
    poll(timeout, || {
        let now = f();
        let done = now == *want;
        seen = Some(now);
        done.then_some(())
    });
    seen.expect("observed at least once")
}
