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
//!    ([`CauseKind::Irq`], by number and name), a softirq
//!    ([`CauseKind::Softirq`], by vector name such as `NET_RX`) or an x86
//!    interrupt vector ([`CauseKind::Vector`]: `local_timer`, `reschedule`,
//!    `call_function`, ...). An IRQ nested in a softirq counts once, for the
//!    IRQ;
//! 2. otherwise, if the idle task was current: [`CauseKind::IdleExit`];
//! 3. otherwise, before the measuring thread was runnable (woken by its
//!    timer's `sched_wakeup`, or, if its deadline had passed before it
//!    could sleep, switched out preempted, `prev_state=R`):
//!    [`CauseKind::TimerDelay`], the timer's own IRQ delay, one line per
//!    task that was current meanwhile (the last `sched_switch` before it):
//!    what ran on the CPU while the timer interrupt was late. A hard IRQ in
//!    progress then is rule 1's line;
//! 4. otherwise, while it was runnable, another task that was current:
//!    [`CauseKind::Task`] (comm, pid, kernel priority). On `PREEMPT_RT` the
//!    threads `irq/N-name` count as [`CauseKind::Irq`] N, on a line named
//!    after the thread (apart from the hard handler's) with its kernel
//!    priority in [`Cause::prio`], if they ranked at or above the measuring
//!    thread; an IRQ thread that ranked below it did not delay it but was
//!    on its way off the CPU, and that time goes to rule 5;
//! 5. whatever is left is [`CauseKind::Untraced`], by reason ([`Loss`]
//!    for the last three): recording was on and no event came (the
//!    measuring thread itself on its way back to user space, irqs or
//!    preemption off): "irqs or preemption off (untraced)",
//!    [`UNTRACED_OFF`]; the kernel lost events and stored how many:
//!    "trace lost", [`UNTRACED_LOST`], whose [`Cause::count`] is the
//!    number of events; it lost events without a count (only the page's
//!    flag, a `[LOST n EVENTS]` line of text, or a buffer that no longer
//!    reaches back to the deadline): "trace lost (count unknown)",
//!    [`UNTRACED_LOST_UNKNOWN`]; the window is older or longer than what
//!    latscope kept of the trace: "beyond latscope's history",
//!    [`UNTRACED_BEYOND`]. All but the first make the attribution
//!    `partial`. Recordings of older versions may also hold "trace
//!    paused", [`UNTRACED_PAUSED`].
//!
//! At most [`MAX_CAUSES`] lines are kept; the smallest are merged into one
//! [`CauseKind::Other`] line, so the sum stays exact.

mod classify;
mod parse;

pub use classify::{classify_text, Classifier, Window};
pub use parse::{parse_line, Event, EventKind, TaskRef};

use postcard::experimental::max_size::MaxSize;
use postcard_schema::Schema;
use serde::{Deserialize, Serialize};

use crate::wire::bounded;

/// Most cause lines one [`Attribution`] carries (the last may be "other").
pub const MAX_CAUSES: usize = 16;

/// Longest cause name kept, in bytes (IRQ action names, task comms).
pub const NAME_LEN: usize = 24;

/// An attribution fits one small frame body.
const _: () = assert!(Attribution::POSTCARD_MAX_SIZE < 1024);

/// A bounded cause name.
pub type Name = heapless::String<NAME_LEN>;

/// Kernel priority value meaning "not known" in [`Cause::prio`].
pub const PRIO_UNKNOWN: i32 = i32::MIN;

/// Label the report prints for [`CauseKind::Untraced`] time of
/// [`UNTRACED_OFF`].
pub(crate) const UNTRACED_LABEL: &str = "irqs or preemption off (untraced)";

/// [`Cause::id`] of an [`CauseKind::Untraced`] line: recording was on and
/// no event came (irqs or preemption off, or the measuring thread's own
/// way back to user space).
pub const UNTRACED_OFF: u32 = 0;

/// [`Cause::id`] of an [`CauseKind::Untraced`] line: the trace was not
/// recording (paused while an earlier window was read, or stopped by an
/// earlier spike's marker). Printed "trace paused". Only targets before
/// the continuous trace (0.9) sent it; the classifier no longer does.
pub const UNTRACED_PAUSED: u32 = 1;

/// [`Cause::id`] of an [`CauseKind::Untraced`] line: the kernel lost
/// events and stored how many; [`Cause::count`] is that number (summed
/// over the losses inside the window). Printed "trace lost".
pub const UNTRACED_LOST: u32 = 2;

/// [`Cause::id`] of an [`CauseKind::Untraced`] line: the kernel lost
/// events without storing how many (a page with only its flag set, a
/// `[LOST n EVENTS]` line of text), or the trace no longer reaches back to
/// the deadline. Printed "trace lost (count unknown)".
pub const UNTRACED_LOST_UNKNOWN: u32 = 3;

/// [`Cause::id`] of an [`CauseKind::Untraced`] line: the window is older
/// or longer than what latscope kept of the trace (its history, or the
/// text read). Printed "beyond latscope's history".
pub const UNTRACED_BEYOND: u32 = 4;

/// Why part of a spike's window is not in the trace (see
/// [`Classifier::lost`]). Ordered by how little is known: a loss that
/// prevails over another sorts after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Loss {
    /// The kernel lost this many events ([`UNTRACED_LOST`]).
    Events(u64),
    /// The kernel lost events, how many it did not say
    /// ([`UNTRACED_LOST_UNKNOWN`]).
    Unknown,
    /// latscope no longer holds that part of the trace
    /// ([`UNTRACED_BEYOND`]).
    Beyond,
}

impl Loss {
    /// The [`Cause::id`] of its untraced line.
    pub const fn id(self) -> u32 {
        match self {
            Loss::Events(_) => UNTRACED_LOST,
            Loss::Unknown => UNTRACED_LOST_UNKNOWN,
            Loss::Beyond => UNTRACED_BEYOND,
        }
    }
}

/// What kind of thing a [`Cause`] line names.
#[derive(Serialize, Deserialize, MaxSize, Schema, Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CauseKind {
    /// A hard IRQ handler; `id` is the IRQ number, `name` its action name.
    Irq,
    /// A softirq; `id` is the vector number, `name` e.g. `NET_RX`.
    Softirq,
    /// An x86 system vector; `id` is the vector, `name` e.g. `local_timer`.
    Vector,
    /// The deadline passed but the timer had not expired yet; `id`,
    /// `name` and `prio` are the task that was current on the CPU
    /// meanwhile (pid, comm, kernel priority), or 0, empty and
    /// [`PRIO_UNKNOWN`] if the trace does not show it.
    TimerDelay,
    /// The CPU was idle (or coming out of idle).
    IdleExit,
    /// Another task ran; `id` is its pid, `name` its comm, `prio` its kernel
    /// priority.
    Task,
    /// Time no event explains; `id` says why: [`UNTRACED_OFF`] (irqs or
    /// preemption off), [`UNTRACED_LOST`] and [`UNTRACED_LOST_UNKNOWN`]
    /// (its events were lost), [`UNTRACED_BEYOND`] (latscope no longer
    /// held them), or, from older targets, [`UNTRACED_PAUSED`] (the trace
    /// was not recording).
    Untraced,
    /// Everything merged because the line table was full.
    Other,
    /// Interrupts were masked (a critical section), measured by a
    /// bare-metal target; added in protocol version 3.
    Masked,
}

/// The class of scheduling a kernel priority implies, as far as the trace
/// can tell: it cannot tell `SCHED_FIFO` from `SCHED_RR`, nor
/// `SCHED_OTHER` from `SCHED_BATCH` (not a [`wire::Policy`](crate::wire::Policy)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PrioClass {
    /// `SCHED_DEADLINE` (kernel priority below 0).
    Deadline,
    /// `SCHED_FIFO` or `SCHED_RR` with this real-time priority (1..=99).
    RealTime(u8),
    /// `SCHED_OTHER`, `SCHED_BATCH` or `SCHED_IDLE` with this nice value.
    Normal(i8),
    /// The priority was not in the trace.
    Unknown,
}

/// One exclusive share of a spike.
#[derive(Serialize, Deserialize, MaxSize, Schema, Debug, Clone, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Cause {
    /// What this line is about.
    pub kind: CauseKind,
    /// IRQ number, softirq vector, x86 vector or pid, depending on `kind`.
    pub id: u32,
    /// Kernel priority (as `sched_switch` prints it) for
    /// [`CauseKind::Task`], and for [`CauseKind::Irq`] time of a
    /// `PREEMPT_RT` IRQ thread; otherwise [`PRIO_UNKNOWN`].
    pub prio: i32,
    /// IRQ action, softirq vector, x86 vector or task name; empty for the
    /// kinds with a fixed label (see [`Cause::label`]).
    pub name: Name,
    /// Episodes (IRQ invocations, task runs) that overlapped the window.
    pub count: u32,
    /// Nanoseconds of the window attributed to this line.
    pub ns: u64,
}

impl Cause {
    /// The class of scheduling [`Cause::prio`] implies.
    pub fn prio_class(&self) -> PrioClass {
        match self.prio {
            PRIO_UNKNOWN => PrioClass::Unknown,
            p if p < 0 => PrioClass::Deadline,
            p if p < 100 => PrioClass::RealTime(u8::try_from(99 - p).unwrap_or(0)),
            p if p < 140 => PrioClass::Normal(i8::try_from(p - 120).unwrap_or(0)),
            _ => PrioClass::Unknown,
        }
    }

    /// What the report prints for this line: the fixed label of
    /// [`CauseKind::TimerDelay`], [`CauseKind::IdleExit`],
    /// [`CauseKind::Untraced`], [`CauseKind::Other`] and
    /// [`CauseKind::Masked`], else `name`.
    pub fn label(&self) -> &str {
        match self.kind {
            CauseKind::TimerDelay => "timer expiry delay",
            CauseKind::IdleExit => "idle exit",
            CauseKind::Untraced => match self.id {
                UNTRACED_PAUSED => "trace paused",
                UNTRACED_LOST => "trace lost",
                UNTRACED_LOST_UNKNOWN => "trace lost (count unknown)",
                UNTRACED_BEYOND => "beyond latscope's history",
                _ => UNTRACED_LABEL,
            },
            CauseKind::Other => "other",
            CauseKind::Masked => "interrupts masked",
            _ => self.name.as_str(),
        }
    }

    /// True if this line and `kind`/`id`/`name` describe the same cause.
    /// Tasks (and the task current during a timer delay) match by pid
    /// alone (their comm changes on exec); untraced time by its reason.
    fn same(&self, kind: CauseKind, id: u32, name: &str) -> bool {
        self.kind == kind
            && match kind {
                CauseKind::Task | CauseKind::TimerDelay | CauseKind::Untraced => self.id == id,
                CauseKind::IdleExit | CauseKind::Other | CauseKind::Masked => true,
                _ => self.id == id && self.name.as_str() == name,
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
    /// [`CauseKind::Untraced`] line.
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

    /// Adds `ns` and `count` to the line for `kind`/`id`/`name`, creating it
    /// if needed. When the table is full, the last line becomes
    /// [`CauseKind::Other`] and absorbs the rest, so no time is lost.
    pub fn add(&mut self, kind: CauseKind, id: u32, prio: i32, name: &str, count: u32, ns: u64) {
        add_to(&mut self.causes, kind, id, prio, name, count, ns);
    }

    /// Sum of the `ns` of all lines (equals `latency_ns` for a traced
    /// attribution).
    pub fn total_ns(&self) -> u64 {
        self.causes
            .iter()
            .fold(0u64, |acc, c| acc.saturating_add(c.ns))
    }

    /// Time of the window the trace was not recording
    /// ([`UNTRACED_PAUSED`]).
    pub fn paused_ns(&self) -> u64 {
        self.untraced_ns(UNTRACED_PAUSED)
    }

    /// Time of the window whose events the kernel lost
    /// ([`UNTRACED_LOST`] and [`UNTRACED_LOST_UNKNOWN`]).
    pub fn lost_ns(&self) -> u64 {
        self.untraced_ns(UNTRACED_LOST)
            .saturating_add(self.untraced_ns(UNTRACED_LOST_UNKNOWN))
    }

    /// Time of the window beyond latscope's history ([`UNTRACED_BEYOND`]).
    pub fn beyond_ns(&self) -> u64 {
        self.untraced_ns(UNTRACED_BEYOND)
    }

    fn untraced_ns(&self, why: u32) -> u64 {
        self.causes
            .iter()
            .filter(|c| c.kind == CauseKind::Untraced && c.id == why)
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
            .find(|c| c.kind == kind && c.label() == label)
    }
}

/// Adds to the line for `kind`/`id`/`name` in `table`, creating it if
/// needed; a full table turns its last line into [`CauseKind::Other`].
pub(crate) fn add_to<const N: usize>(
    table: &mut heapless::Vec<Cause, N>,
    kind: CauseKind,
    id: u32,
    prio: i32,
    name: &str,
    count: u32,
    ns: u64,
) {
    if let Some(c) = table.iter_mut().find(|c| c.same(kind, id, name)) {
        c.count = c.count.saturating_add(count);
        c.ns = c.ns.saturating_add(ns);
        if matches!(kind, CauseKind::Task | CauseKind::TimerDelay) && !name.is_empty() {
            c.name = bounded(name);
        }
        // One line per IRQ thread: the priority its switch shows, even if
        // the line began while it was not known.
        if prio != PRIO_UNKNOWN {
            c.prio = prio;
        }
        return;
    }
    if table.is_full() {
        if let Some(last) = table.last_mut() {
            if last.kind != CauseKind::Other {
                last.kind = CauseKind::Other;
                last.id = 0;
                last.prio = PRIO_UNKNOWN;
                last.name = Name::new();
            }
            last.count = last.count.saturating_add(count);
            last.ns = last.ns.saturating_add(ns);
        }
    } else {
        // Cannot fail: checked `is_full` above.
        let _ = table.push(Cause {
            kind,
            id,
            prio,
            name: bounded(name),
            count,
            ns,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use postcard::experimental::max_size::MaxSize;

    #[test]
    fn max_size_fits_one_kib() {
        std::println!("Attribution max {} bytes", Attribution::POSTCARD_MAX_SIZE);
        let mut a = Attribution::new(u32::MAX, u64::MAX, u64::MAX, u64::MAX);
        for i in 0..MAX_CAUSES as u32 {
            a.add(
                CauseKind::Irq,
                u32::MAX - i,
                i32::MIN,
                "nnnnnnnnnnnnnnnnnnnnnnnn",
                u32::MAX,
                u64::MAX,
            );
        }
        let mut buf = [0u8; Attribution::POSTCARD_MAX_SIZE];
        assert!(postcard::to_slice(&a, &mut buf).is_ok());
    }

    #[test]
    fn roundtrip() {
        let mut a = Attribution::new(1, 2, 3, 4);
        a.add(CauseKind::Softirq, 3, PRIO_UNKNOWN, "NET_RX", 1, 4);
        let mut buf = [0u8; Attribution::POSTCARD_MAX_SIZE];
        let used = postcard::to_slice(&a, &mut buf).unwrap();
        let back: Attribution = postcard::from_bytes(used).unwrap();
        assert_eq!(a, back);
    }

    #[test]
    fn full_table_merges_into_other() {
        let mut a = Attribution::new(0, 0, 0, 0);
        for i in 0..40u32 {
            a.add(CauseKind::Irq, i, PRIO_UNKNOWN, "x", 1, 10);
        }
        assert_eq!(a.causes.len(), MAX_CAUSES);
        assert_eq!(a.total_ns(), 400);
        assert_eq!(a.causes.last().unwrap().kind, CauseKind::Other);
    }

    #[test]
    fn prio_class_from_prio() {
        let mut c = Cause {
            kind: CauseKind::Task,
            id: 1,
            prio: 19,
            name: bounded("t"),
            count: 1,
            ns: 1,
        };
        assert_eq!(c.prio_class(), PrioClass::RealTime(80));
        c.prio = 120;
        assert_eq!(c.prio_class(), PrioClass::Normal(0));
        c.prio = -1;
        assert_eq!(c.prio_class(), PrioClass::Deadline);
        c.prio = PRIO_UNKNOWN;
        assert_eq!(c.prio_class(), PrioClass::Unknown);
    }
}
