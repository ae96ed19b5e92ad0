//! Step 3 of a run: the main thread handles signals (and self-check
//! notifications) until every measuring thread has returned.

use std::sync::atomic::Ordering;

use super::setup::SIGNALS;
use crate::linux::clock::timespec;
use crate::linux::seccomp::SelfCheck;
use crate::linux::sys::{self, sig};
use crate::output;
use crate::rt::Control;
use crate::sender::SnapshotAnswer;

/// Wait for the end of the `n` measuring threads. SIGUSR1 asks the sender
/// for the status on stderr; SIGUSR2 is answered here, at once, with the
/// status in the shared-memory file (`answer`; none: the run has no such
/// file); SIGINT, SIGTERM and SIGHUP stop the run.
pub fn wait_for_end(
    control: &Control,
    n: usize,
    selfcheck: Option<&SelfCheck>,
    mut answer: Option<&mut SnapshotAnswer<'_>>,
) {
    let tick = timespec(100_000_000);
    let zero = timespec(0);
    while !control.all_finished(n) {
        let got = match selfcheck {
            Some(sc) => {
                self_check(control, sc, &tick);
                sys::wait_signal(SIGNALS, Some(&zero))
            }
            None => sys::wait_signal(SIGNALS, Some(&tick)),
        };
        match got {
            Ok(Some(s)) if s == sig::USR1 => {
                control.status_requested.store(true, Ordering::SeqCst);
                control.doorbell.ring();
            }
            Ok(Some(s)) if s == sig::USR2 => match answer.as_deref_mut() {
                // get_cyclictest_snapshot reads the file as soon as its
                // `kill` has returned: written before the next wait
                Some(a) => a.write(),
                None => output::note("latscope: SIGUSR2: there is no snapshot file to write"),
            },
            Ok(Some(s)) => {
                let _ = control
                    .signal
                    .compare_exchange(0, s, Ordering::SeqCst, Ordering::SeqCst);
                control.stop.store(true, Ordering::SeqCst);
            }
            Ok(None) => {}
            Err(_) => {
                // cannot wait for signals: poll the end instead
                let _ = rustix::event::poll(&mut [], Some(&tick));
            }
        }
    }
}

/// Wait up to `tick` for a self-check notification; refuse and count it.
fn self_check(control: &Control, sc: &SelfCheck, tick: &rustix::time::Timespec) {
    let fd = sc.fd();
    let mut fds = [rustix::event::PollFd::new(
        &fd,
        rustix::event::PollFlags::IN,
    )];
    if matches!(rustix::event::poll(&mut fds, Some(tick)), Ok(k) if k > 0) {
        if let Some(msg) = sc.handle_one() {
            control.defects.fetch_add(1, Ordering::SeqCst);
            output::note(&format!("latscope: {msg}"));
        }
    }
}
