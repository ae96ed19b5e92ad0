//! Spike attribution: which interrupts, softirqs and tasks made a sample late.
//!
//! When a sample crosses the `--explain` threshold, the host side of the
//! target reads the kernel's trace text for the measured CPU and hands it to
//! this module. Everything here is pure and allocation-free:
//!
//! * [`parse_line`] turns one line of tracefs text
//!   (`<comm>-<pid> [cpu] flags timestamp: event: fields`) into an [`Event`];
//! * [`Classifier`] (or the one-shot [`classify_text`]) walks
//!   the events of one CPU, clips every interval to the window from the
//!   deadline to the wake-up, and produces an [`Attribution`]: exclusive
//!   [`Cause`] lines that add up exactly to the spike.
//!
//! # How time is split
//!
//! The window `[deadline, wake]` is cut at every event. Each piece goes to
//! exactly one cause:
//!
//! 1. the innermost running context, if any: a hard IRQ handler
//!    ([`Culprit::Irq`], by number and name), a softirq
//!    ([`Culprit::Softirq`], by kind such as [`Softirq::NetRx`]) or an x86
//!    interrupt vector ([`Culprit::Vector`]: `local_timer`, `reschedule`,
//!    `call_function`, ...). An IRQ nested in a softirq counts once, for the
//!    IRQ;
//! 2. otherwise, if the idle task was current: [`Culprit::IdleExit`];
//! 3. otherwise, before the measuring thread was runnable (woken by its
//!    timer's `sched_wakeup`, or, if its deadline had passed before it
//!    could sleep, switched out preempted, `prev_state=R`):
//!    [`Culprit::TimerDelay`], the timer's own IRQ delay, one line per
//!    task that was current meanwhile (the last `sched_switch` before it):
//!    what ran on the CPU while the timer interrupt was late. A hard IRQ in
//!    progress then is rule 1's line;
//! 4. otherwise, while it was runnable, another task that was current:
//!    [`Culprit::Task`] (pid, comm, policy class and priority). On
//!    `PREEMPT_RT` the threads `irq/N-name` count as [`Culprit::Irq`] N,
//!    on a line named after the thread (apart from the hard handler's)
//!    with the thread's priority, if they ranked at or above the measuring
//!    thread; an IRQ thread that ranked below it did not delay it but was
//!    on its way off the CPU, and that time goes to rule 5;
//! 5. whatever is left is [`Culprit::Untraced`], by reason ([`Loss`]
//!    for the last three): recording was on and no event came (the
//!    measuring thread itself on its way back to user space, irqs or
//!    preemption off): [`Untraced::Off`]; the kernel lost events and stored
//!    how many: [`Untraced::Lost`] with their number; it lost events
//!    without a count (only the page's flag, a `[LOST n EVENTS]` line of
//!    text, or a buffer that no longer reaches back to the deadline):
//!    [`Untraced::LostUnknown`]; the window is older or longer than what
//!    latscope kept of the trace: [`Untraced::Beyond`]. All but the first
//!    make the attribution `partial`. Recordings of older versions may
//!    also hold [`Untraced::Paused`].
//!
//! At most [`MAX_CAUSES`] lines are kept; the smallest are merged into one
//! [`Culprit::Other`] line, so the sum stays exact.

mod cause;
mod classify;
mod parse;

pub use cause::{Cause, CauseKind, Culprit, PrioClass, Softirq, Task, Untraced};
pub use classify::{classify_text, Classifier, Window};
pub use parse::{parse_line, Event, EventKind, TaskRef};

use postcard::experimental::max_size::MaxSize;
use postcard_schema::Schema;
use serde::{Deserialize, Serialize};

use crate::wire::bounded;
use cause::add_cause;

/// Most cause lines one [`Attribution`] carries (the last may be "other").
pub const MAX_CAUSES: usize = 16;

/// Longest cause name kept, in bytes (IRQ action names, task comms).
pub const NAME_LEN: usize = 24;

/// An attribution fits one small frame body.
const _: () = assert!(Attribution::POSTCARD_MAX_SIZE < 1024);

/// A bounded cause name.
pub type Name = heapless::String<NAME_LEN>;

/// Kernel priority value meaning "not known" in an [`Event`]'s priority
/// fields (a cause line says it with `None`, see [`PrioClass`]).
pub const PRIO_UNKNOWN: i32 = i32::MIN;

/// Label the report prints for [`Untraced::Off`].
pub(crate) const UNTRACED_LABEL: &str = "irqs or preemption off (untraced)";

/// Why part of a spike's window is not in the trace (see
/// [`Classifier::lost`]). Ordered by how little is known: a loss that
/// prevails over another sorts after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Loss {
    /// The kernel lost this many events ([`Untraced::Lost`]).
    Events(u64),
    /// The kernel lost events, how many it did not say
    /// ([`Untraced::LostUnknown`]).
    Unknown,
    /// latscope no longer holds that part of the trace
    /// ([`Untraced::Beyond`]).
    Beyond,
}

impl Loss {
    /// The reason of its untraced line (the events a window lost are
    /// summed by the classifier, not here).
    pub const fn untraced(self) -> Untraced {
        match self {
            Loss::Events(_) => Untraced::Lost { events: 0 },
            Loss::Unknown => Untraced::LostUnknown,
            Loss::Beyond => Untraced::Beyond,
        }
    }
}

/// The explanation of one spike: exclusive cause lines that add up to
/// `latency_ns` (unless `coarse`).
#[derive(Serialize, Deserialize, MaxSize, Schema, Debug, Clone, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Attribution {
    /// Measured CPU.
    pub cpu: u32,
    /// Cycle number of the late sample.
    pub cycle: u64,
    /// Deadline of the sample, `CLOCK_MONOTONIC` nanoseconds.
    pub deadline_ns: u64,
    /// Wake-up minus deadline, nanoseconds.
    pub latency_ns: u64,
    /// True for the `/proc/interrupts` + `/proc/softirqs` fallback: lines
    /// carry counts over a report interval, not nanoseconds of the spike.
    pub coarse: bool,
    /// True if the trace did not cover the whole window (events lost, or
    /// the buffer began after the deadline); the uncovered part is in the
    /// [`Culprit::Untraced`] lines.
    pub partial: bool,
    /// Cause lines, largest first.
    pub causes: heapless::Vec<Cause, MAX_CAUSES>,
}

impl Attribution {
    /// An attribution with no cause lines yet.
    pub const fn new(cpu: u32, cycle: u64, deadline_ns: u64, latency_ns: u64) -> Self {
        Self {
            cpu,
            cycle,
            deadline_ns,
            latency_ns,
            coarse: false,
            partial: false,
            causes: heapless::Vec::new(),
        }
    }

    /// Adds `count` and `ns` to the line for `culprit`, creating it if
    /// needed. When the table is full, the last line becomes
    /// [`Culprit::Other`] and absorbs the rest, so no time is lost.
    pub fn add(&mut self, culprit: Culprit, count: u32, ns: u64) {
        add_cause(&mut self.causes, culprit, count, ns);
    }

    /// Sum of the `ns` of all lines (equals `latency_ns` for a traced
    /// attribution).
    pub fn total_ns(&self) -> u64 {
        self.causes
            .iter()
            .fold(0u64, |acc, c| acc.saturating_add(c.ns))
    }

    /// Time of the window the trace was not recording
    /// ([`Untraced::Paused`]).
    pub fn paused_ns(&self) -> u64 {
        self.untraced_ns(|u| u == Untraced::Paused)
    }

    /// Time of the window whose events the kernel lost
    /// ([`Untraced::Lost`] and [`Untraced::LostUnknown`]).
    pub fn lost_ns(&self) -> u64 {
        self.untraced_ns(|u| matches!(u, Untraced::Lost { .. } | Untraced::LostUnknown))
    }

    /// Time of the window beyond latscope's history ([`Untraced::Beyond`]).
    pub fn beyond_ns(&self) -> u64 {
        self.untraced_ns(|u| u == Untraced::Beyond)
    }

    fn untraced_ns(&self, why: impl Fn(Untraced) -> bool) -> u64 {
        self.causes
            .iter()
            .filter(|c| matches!(c.culprit, Culprit::Untraced(u) if why(u)))
            .fold(0u64, |acc, c| acc.saturating_add(c.ns))
    }

    /// The line with the most time, if any.
    #[cfg(test)]
    pub(crate) fn top(&self) -> Option<&Cause> {
        self.causes.iter().max_by_key(|c| c.ns)
    }

    /// Finds the line of `kind` whose [`Cause::label`] is `label`.
    pub fn find(&self, kind: CauseKind, label: &str) -> Option<&Cause> {
        self.causes
            .iter()
            .find(|c| c.kind() == kind && c.label() == label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use postcard::experimental::max_size::MaxSize;

    fn task(pid: u32, comm: &str, prio: i32) -> Culprit {
        Culprit::Task(Task {
            pid,
            comm: bounded(comm),
            prio: PrioClass::from_kernel(prio),
        })
    }

    #[test]
    fn max_size_fits_one_kib() {
        std::println!("Attribution max {} bytes", Attribution::POSTCARD_MAX_SIZE);
        let mut a = Attribution::new(u32::MAX, u64::MAX, u64::MAX, u64::MAX);
        let name = "nnnnnnnnnnnnnnnnnnnnnnnn";
        for i in 0..MAX_CAUSES as u32 {
            let running = Some(Task {
                pid: u32::MAX - i,
                comm: bounded(name),
                prio: Some(PrioClass::Normal(i8::MIN)),
            });
            a.add(Culprit::TimerDelay { running }, u32::MAX, u64::MAX);
        }
        let mut buf = [0u8; Attribution::POSTCARD_MAX_SIZE];
        assert!(postcard::to_slice(&a, &mut buf).is_ok());
    }

    #[test]
    fn roundtrip() {
        let mut a = Attribution::new(1, 2, 3, 4);
        a.add(Culprit::Softirq(Softirq::NetRx), 1, 4);
        a.add(task(7, "kworker/0:1", 120), 1, 4);
        a.add(Culprit::Untraced(Untraced::Lost { events: 9 }), 1, 4);
        let mut buf = [0u8; Attribution::POSTCARD_MAX_SIZE];
        let used = postcard::to_slice(&a, &mut buf).unwrap();
        let back: Attribution = postcard::from_bytes(used).unwrap();
        assert_eq!(a, back);
    }

    #[test]
    fn full_table_merges_into_other() {
        let mut a = Attribution::new(0, 0, 0, 0);
        for irq in 0..40u32 {
            let name = bounded("x");
            a.add(
                Culprit::Irq {
                    irq,
                    name,
                    thread: None,
                },
                1,
                10,
            );
        }
        assert_eq!(a.causes.len(), MAX_CAUSES);
        assert_eq!(a.total_ns(), 400);
        assert_eq!(a.causes.last().unwrap().culprit, Culprit::Other);
    }

    #[test]
    fn lines_key_by_the_cause() {
        let mut a = Attribution::new(0, 0, 0, 0);
        // a task by pid: a new comm (exec) and a priority learnt later
        a.add(task(7, "sh", PRIO_UNKNOWN), 1, 10);
        a.add(task(7, "make", 120), 1, 10);
        // lost events add up on one line
        a.add(Culprit::Untraced(Untraced::Lost { events: 3 }), 1, 5);
        a.add(Culprit::Untraced(Untraced::Lost { events: 4 }), 1, 5);
        // an IRQ thread whose priority one stretch did not show
        let thread = |thread| Culprit::Irq {
            irq: 13,
            name: bounded("irq/13-uart"),
            thread,
        };
        a.add(thread(None), 1, 2);
        a.add(thread(Some(PrioClass::RealTime(50))), 1, 2);
        assert_eq!(a.causes.len(), 3, "{:?}", a.causes);
        assert_eq!(a.causes[0].culprit, task(7, "make", 120));
        assert_eq!((a.causes[0].count, a.causes[0].ns), (2, 20));
        assert_eq!(
            a.causes[1].culprit,
            Culprit::Untraced(Untraced::Lost { events: 7 })
        );
        assert_eq!(a.causes[2].culprit.prio(), Some(PrioClass::RealTime(50)));
        assert_eq!(a.lost_ns(), 10);
    }

    #[test]
    fn prio_class_from_kernel_prio() {
        assert_eq!(PrioClass::from_kernel(19), Some(PrioClass::RealTime(80)));
        assert_eq!(PrioClass::from_kernel(0), Some(PrioClass::RealTime(99)));
        assert_eq!(PrioClass::from_kernel(120), Some(PrioClass::Normal(0)));
        assert_eq!(PrioClass::from_kernel(139), Some(PrioClass::Normal(19)));
        assert_eq!(PrioClass::from_kernel(-1), Some(PrioClass::Deadline));
        assert_eq!(PrioClass::from_kernel(PRIO_UNKNOWN), None);
        assert_eq!(PrioClass::from_kernel(140), None);
    }

    #[test]
    fn softirqs_by_vector() {
        for v in 0..12 {
            assert_eq!(Softirq::from_vector(v).vector(), v);
        }
        assert_eq!(Softirq::from_vector(3), Softirq::NetRx);
        assert_eq!(Softirq::NetRx.name(), "NET_RX");
        assert_eq!(Softirq::from_vector(9).name(), "RCU");
        assert_eq!(Softirq::from_vector(10).name(), "softirq");
    }
}
