//! Step 3 of a run: the main thread handles signals (and self-check
//! notifications) until every measuring thread has returned.

use std::sync::atomic::Ordering;

use latscope_core::wire::Policy;

use super::setup::SIGNALS;
use crate::config::ThreadPlan;
use crate::linux::clock::timespec;
use crate::linux::seccomp::SelfCheck;
use crate::linux::sys::{self, sig};
use crate::linux::{exit, sched};
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

/// The priority the main thread waits at, below every measuring thread.
const WAIT_PRIORITY: u32 = 1;

/// `sched_setattr(0, {SCHED_FIFO, 1})`: the main thread waits for signals
/// at the lowest real-time priority, if the run answers SIGUSR2 and every
/// measuring thread runs above it (`policy` FIFO or RR, each of the
/// `plans`, as they turned out, at 2 or more). Woken by the signal, it
/// preempts every SCHED_OTHER task, rt-tests' snapshot tool among them,
/// and has the file written before the tool reads it: at SCHED_OTHER it
/// lost that race in 2 calls of 12 on a busy machine. It never delays a
/// measuring thread, and the hook and the exit discipline demote it as
/// they demote those. Whether it took effect (it may be refused).
pub fn wait_at_rt_priority(policy: Policy, plans: &[ThreadPlan]) -> bool {
    if !below_every_measuring_thread(policy, plans) {
        return false;
    }
    let attr = sched::attr(Policy::Fifo, WAIT_PRIORITY, (0, 0, 0));
    if sys::sched_setattr(0, &attr).is_err() {
        return false;
    }
    exit::register_main(rustix::thread::gettid().as_raw_nonzero().get());
    true
}

/// Whether [`WAIT_PRIORITY`] is below every measuring thread of `plans`
/// (FIFO or RR at 2 or more; SCHED_DEADLINE threads run above it anyway,
/// but the main thread of such a run waits as cyclictest's does).
fn below_every_measuring_thread(policy: Policy, plans: &[ThreadPlan]) -> bool {
    matches!(policy, Policy::Fifo | Policy::Rr)
        && !plans.is_empty()
        && plans.iter().all(|p| p.priority > WAIT_PRIORITY)
}

/// `sched_setattr(0, {SCHED_OTHER})`: the waiting is over; the main
/// thread finishes the run at the normal policy.
pub fn end_rt_wait() {
    let _ = sys::demote(0);
    exit::register_main(0);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn plans(priorities: &[u32]) -> Vec<ThreadPlan> {
        priorities
            .iter()
            .map(|&priority| ThreadPlan {
                cpu: None,
                priority,
                interval_us: 1000,
            })
            .collect()
    }

    #[test]
    fn the_main_thread_waits_at_fifo_1_only_below_every_measuring_thread() {
        assert!(below_every_measuring_thread(
            Policy::Fifo,
            &plans(&[80, 79])
        ));
        assert!(below_every_measuring_thread(Policy::Rr, &plans(&[2])));
        // a measuring thread at 1 (or degraded to 0) would share its level
        assert!(!below_every_measuring_thread(
            Policy::Fifo,
            &plans(&[80, 1])
        ));
        assert!(!below_every_measuring_thread(Policy::Fifo, &plans(&[0])));
        for p in [Policy::Other, Policy::Batch, Policy::Idle, Policy::Deadline] {
            assert!(!below_every_measuring_thread(p, &plans(&[80])), "{p:?}");
        }
        assert!(!below_every_measuring_thread(Policy::Fifo, &[]));
    }
}
