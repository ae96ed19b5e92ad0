//! Scheduling policies as the kernel takes them.

use latscope_core::wire::Policy;

use super::sys::{self, SchedAttr};

/// The kernel's `sched_attr` for `policy` at `priority` (FIFO, RR) or with
/// the SCHED_DEADLINE `(runtime, deadline, period)` in ns. A child of a
/// thread with these attributes would start as SCHED_OTHER (reset on fork).
pub fn attr(policy: Policy, priority: u32, deadline: (u64, u64, u64)) -> SchedAttr {
    let mut a = SchedAttr {
        sched_flags: sys::policy::RESET_ON_FORK,
        ..SchedAttr::default()
    };
    match policy {
        Policy::Fifo => {
            a.sched_policy = sys::policy::FIFO;
            a.sched_priority = priority;
        }
        Policy::Rr => {
            a.sched_policy = sys::policy::RR;
            a.sched_priority = priority;
        }
        Policy::Other => a.sched_policy = sys::policy::OTHER,
        Policy::Batch => a.sched_policy = sys::policy::BATCH,
        Policy::Idle => a.sched_policy = sys::policy::IDLE,
        Policy::Deadline => {
            a.sched_policy = sys::policy::DEADLINE;
            a.sched_runtime = deadline.0;
            a.sched_deadline = deadline.1;
            a.sched_period = deadline.2;
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attrs_per_policy() {
        let a = attr(Policy::Fifo, 80, (0, 0, 0));
        assert_eq!((a.sched_policy, a.sched_priority), (sys::policy::FIFO, 80));
        let a = attr(Policy::Deadline, 0, (1, 2, 3));
        assert_eq!(
            (a.sched_runtime, a.sched_deadline, a.sched_period),
            (1, 2, 3)
        );
        assert_eq!(attr(Policy::Idle, 0, (0, 0, 0)).sched_priority, 0);
    }
}
