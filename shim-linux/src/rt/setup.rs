//! A measuring thread's set-up, before the gate opens: name, pin, policy,
//! timer slack, prefaulted stack.

use std::sync::atomic::Ordering;

use latscope_core::wire::Policy;
use rustix::io::Errno;

use super::ThreadArgs;
use crate::config::policy_upper;
use crate::error::Error;
use crate::linux::{self, sched, sys};

/// How much of the stack is touched before measuring.
const PREFAULT_BYTES: usize = 32 * 1024;

/// Name, pin, policy, timer slack, prefault.
pub(super) fn setup(a: &ThreadArgs<'_>) -> Result<(), Error> {
    let _ = rustix::thread::set_name(c"latscope-rt");
    pin(a)?;
    set_policy(a)?;
    let effective_rt = a.settings.policy.is_rt() && !a.shared.no_rt_policy.load(Ordering::SeqCst);
    if !effective_rt {
        // The default 50 µs slack would skew every sample of a non-RT thread.
        if rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1)).is_ok() {
            a.shared.timer_slack_ns.store(1, Ordering::SeqCst);
        }
    }
    prefault_stack();
    Ok(())
}

/// Pin the thread to its planned CPU (or, best effort, run unpinned).
fn pin(a: &ThreadArgs<'_>) -> Result<(), Error> {
    let Some(cpu) = a.plan.cpu else {
        return Ok(());
    };
    match rustix::thread::sched_setaffinity(None, &linux::cpu_set(&[cpu])) {
        Ok(()) => Ok(()),
        Err(_) if a.settings.best_effort => {
            a.shared.no_affinity.store(true, Ordering::SeqCst);
            Ok(())
        }
        Err(e) => Err(Error::sys(
            format!("pinning thread {} to CPU {cpu}", a.index),
            e,
        )),
    }
}

/// Take the measuring policy (or, best effort without the privilege, stay
/// at SCHED_OTHER).
fn set_policy(a: &ThreadArgs<'_>) -> Result<(), Error> {
    let s = a.settings;
    let attr = sched::attr(s.policy, a.plan.priority, s.deadline);
    let Err(e) = sys::sched_setattr(0, &attr) else {
        return Ok(());
    };
    let what = refusal(a, e);
    let pinned_deadline = s.policy == Policy::Deadline && a.plan.cpu.is_some();
    if pinned_deadline && !s.best_effort {
        // not a missing privilege: the kernel's admission control
        return Err(Error::Refused {
            what,
            advice: "run the deadline threads unpinned",
        });
    }
    if e != Errno::PERM && e != Errno::BUSY {
        return Err(Error::Refused {
            what,
            advice: "see the kernel's sched_setattr(2) limits",
        });
    }
    if !s.best_effort {
        return Err(Error::privilege(what, "--policy other (or --best-effort)"));
    }
    a.shared.no_rt_policy.store(true, Ordering::SeqCst);
    let _ = sys::demote(0);
    Ok(())
}

/// What the kernel refused, and what it needs.
fn refusal(a: &ThreadArgs<'_>, e: Errno) -> String {
    let s = a.settings;
    match s.policy {
        Policy::Deadline => format!(
            "SCHED_DEADLINE (runtime {} deadline {} period {} ns) refused: {e}{}",
            s.deadline.0,
            s.deadline.1,
            s.deadline.2,
            if a.plan.cpu.is_some() {
                " (a pinned deadline thread needs an exclusive cpuset partition; drop -a)"
            } else {
                ""
            }
        ),
        p => format!(
            "SCHED_{} priority {} refused: {e} (needs CAP_SYS_NICE or RLIMIT_RTPRIO >= {})",
            policy_upper(p),
            a.plan.priority,
            a.plan.priority
        ),
    }
}

/// Touch the part of the stack the loop can use, so it never faults.
#[inline(never)]
fn prefault_stack() {
    let mut area = [0u8; PREFAULT_BYTES];
    for i in (0..PREFAULT_BYTES).step_by(512) {
        area[i] = i as u8;
    }
    std::hint::black_box(&mut area);
}
