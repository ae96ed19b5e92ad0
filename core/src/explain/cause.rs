//! What a cause line names, typed: an IRQ, an x86 vector, a softirq, a
//! task, the late timer, an idle exit, a masked section, merged lines, or
//! time no event explains and why (protocol version 5).

use postcard::experimental::max_size::MaxSize;
use postcard_schema::Schema;
use serde::{Deserialize, Serialize};

use super::Name;

/// The scheduling class and priority a kernel priority (as `sched_switch`
/// prints it) implies, as far as the trace can tell: it cannot tell
/// `SCHED_FIFO` from `SCHED_RR`, nor `SCHED_OTHER` from `SCHED_BATCH`
/// (not a [`wire::Policy`](crate::wire::Policy)).
#[derive(
    Serialize,
    Deserialize,
    MaxSize,
    Schema,
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PrioClass {
    /// `SCHED_DEADLINE` (kernel priority below 0).
    Deadline,
    /// `SCHED_FIFO` or `SCHED_RR` with this real-time priority (1..=99).
    RealTime(u8),
    /// `SCHED_OTHER`, `SCHED_BATCH` or `SCHED_IDLE` with this nice value.
    Normal(i8),
}

impl PrioClass {
    /// The class of kernel priority `prio`, or `None` for a value no task
    /// has (the trace did not show it).
    pub const fn from_kernel(prio: i32) -> Option<Self> {
        match prio {
            i32::MIN..=-1 if prio != super::PRIO_UNKNOWN => Some(PrioClass::Deadline),
            0..=99 => Some(PrioClass::RealTime((99 - prio) as u8)),
            100..=139 => Some(PrioClass::Normal((prio - 120) as i8)),
            _ => None,
        }
    }
}

/// A task, as the trace shows it.
#[derive(Serialize, Deserialize, MaxSize, Schema, Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Task {
    /// Its pid (a thread id).
    pub pid: u32,
    /// Its comm.
    pub comm: Name,
    /// Its policy class and priority, if the trace showed them.
    pub prio: Option<PrioClass>,
}

/// A softirq, by kind (the kernel's softirq vectors, the same on every
/// architecture).
#[derive(Serialize, Deserialize, MaxSize, Schema, Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Softirq {
    /// `HI` (0).
    Hi,
    /// `TIMER` (1).
    Timer,
    /// `NET_TX` (2).
    NetTx,
    /// `NET_RX` (3).
    NetRx,
    /// `BLOCK` (4).
    Block,
    /// `IRQ_POLL` (5).
    IrqPoll,
    /// `TASKLET` (6).
    Tasklet,
    /// `SCHED` (7).
    Sched,
    /// `HRTIMER` (8).
    Hrtimer,
    /// `RCU` (9).
    Rcu,
    /// A vector this build does not know.
    Unknown(u32),
}

/// The kinds of [`Softirq`] in vector order.
const SOFTIRQS: [(Softirq, &str); 10] = [
    (Softirq::Hi, "HI"),
    (Softirq::Timer, "TIMER"),
    (Softirq::NetTx, "NET_TX"),
    (Softirq::NetRx, "NET_RX"),
    (Softirq::Block, "BLOCK"),
    (Softirq::IrqPoll, "IRQ_POLL"),
    (Softirq::Tasklet, "TASKLET"),
    (Softirq::Sched, "SCHED"),
    (Softirq::Hrtimer, "HRTIMER"),
    (Softirq::Rcu, "RCU"),
];

impl Softirq {
    /// The softirq of vector `vec`.
    pub fn from_vector(vec: u32) -> Self {
        usize::try_from(vec)
            .ok()
            .and_then(|i| SOFTIRQS.get(i))
            .map_or(Softirq::Unknown(vec), |(s, _)| *s)
    }

    /// Its vector number.
    pub fn vector(self) -> u32 {
        match self {
            Softirq::Unknown(v) => v,
            known => SOFTIRQS
                .iter()
                .position(|(s, _)| *s == known)
                .and_then(|i| u32::try_from(i).ok())
                .unwrap_or(u32::MAX),
        }
    }

    /// Its name as the kernel prints it (`NET_RX`), or `softirq` for one
    /// this build does not know.
    pub fn name(self) -> &'static str {
        SOFTIRQS
            .iter()
            .find(|(s, _)| *s == self)
            .map_or("softirq", |(_, n)| n)
    }
}

/// Why part of a spike's window is explained by no event.
#[derive(Serialize, Deserialize, MaxSize, Schema, Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Untraced {
    /// Recording was on and no event came: irqs or preemption off, or the
    /// measuring thread's own way back to user space.
    Off,
    /// The trace was not recording (paused while an earlier window was
    /// read). Only targets before the continuous trace (0.9) sent it.
    Paused,
    /// The kernel lost events and stored how many: `events` in all.
    Lost {
        /// Events lost inside the window (summed over the losses).
        events: u32,
    },
    /// The kernel lost events without storing how many (a page with only
    /// its flag set, a `[LOST n EVENTS]` line of text), or the trace no
    /// longer reaches back to the deadline.
    LostUnknown,
    /// The window is older or longer than what latscope kept of the trace
    /// (its history, or the text read).
    Beyond,
}

impl Untraced {
    /// What the report prints for it.
    pub const fn label(self) -> &'static str {
        match self {
            Untraced::Off => super::UNTRACED_LABEL,
            Untraced::Paused => "trace paused",
            Untraced::Lost { .. } => "trace lost",
            Untraced::LostUnknown => "trace lost (count unknown)",
            Untraced::Beyond => "beyond latscope's history",
        }
    }

    /// True if both are the same reason (however many events were lost).
    pub fn same_reason(self, other: Untraced) -> bool {
        core::mem::discriminant(&self) == core::mem::discriminant(&other)
    }
}

/// What one cause line is about.
#[derive(Serialize, Deserialize, MaxSize, Schema, Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Culprit {
    /// A hard IRQ handler, by number and action name; or, on
    /// `PREEMPT_RT`, its IRQ thread (`name` is the thread's, `irq/13-uart`),
    /// with the thread's priority when the trace showed it.
    Irq {
        /// The IRQ number.
        irq: u32,
        /// The action's name, or the IRQ thread's comm.
        name: Name,
        /// The IRQ thread's priority, if the line is its thread's and the
        /// trace showed it.
        thread: Option<PrioClass>,
    },
    /// An x86 system vector, by number and name (`local_timer`).
    Vector {
        /// The vector number.
        vector: u32,
        /// Its name.
        name: Name,
    },
    /// A softirq.
    Softirq(Softirq),
    /// Another task ran while the measuring thread was runnable.
    Task(Task),
    /// The deadline passed but the timer had not expired yet; the task
    /// that was current on the CPU meanwhile, if the trace shows it.
    TimerDelay {
        /// The task that was running.
        running: Option<Task>,
    },
    /// The CPU was idle (or coming out of idle).
    IdleExit,
    /// Interrupts were masked (a critical section), measured by a
    /// bare-metal target.
    Masked,
    /// Lines merged because the table was full.
    Other,
    /// Time no event explains, and why.
    Untraced(Untraced),
}

/// What kind of thing a [`Culprit`] is, without its particulars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CauseKind {
    /// [`Culprit::Irq`].
    Irq,
    /// [`Culprit::Softirq`].
    Softirq,
    /// [`Culprit::Vector`].
    Vector,
    /// [`Culprit::TimerDelay`].
    TimerDelay,
    /// [`Culprit::IdleExit`].
    IdleExit,
    /// [`Culprit::Task`].
    Task,
    /// [`Culprit::Untraced`].
    Untraced,
    /// [`Culprit::Other`].
    Other,
    /// [`Culprit::Masked`].
    Masked,
}

impl Culprit {
    /// Its kind.
    pub const fn kind(&self) -> CauseKind {
        match self {
            Culprit::Irq { .. } => CauseKind::Irq,
            Culprit::Vector { .. } => CauseKind::Vector,
            Culprit::Softirq(_) => CauseKind::Softirq,
            Culprit::Task(_) => CauseKind::Task,
            Culprit::TimerDelay { .. } => CauseKind::TimerDelay,
            Culprit::IdleExit => CauseKind::IdleExit,
            Culprit::Masked => CauseKind::Masked,
            Culprit::Other => CauseKind::Other,
            Culprit::Untraced(_) => CauseKind::Untraced,
        }
    }

    /// What the report prints for it on its own: the fixed label of the
    /// kinds that have one, else its name (IRQ action or thread, vector,
    /// softirq, task comm).
    pub fn label(&self) -> &str {
        match self {
            Culprit::Irq { name, .. } | Culprit::Vector { name, .. } => name.as_str(),
            Culprit::Softirq(s) => s.name(),
            Culprit::Task(t) => t.comm.as_str(),
            Culprit::TimerDelay { .. } => "timer expiry delay",
            Culprit::IdleExit => "idle exit",
            Culprit::Masked => "interrupts masked",
            Culprit::Other => "other",
            Culprit::Untraced(u) => u.label(),
        }
    }

    /// The policy class and priority of the task it names (a task, the
    /// task running during a timer delay, an IRQ thread), if known.
    pub fn prio(&self) -> Option<PrioClass> {
        match self {
            Culprit::Task(t) | Culprit::TimerDelay { running: Some(t) } => t.prio,
            Culprit::Irq { thread, .. } => *thread,
            _ => None,
        }
    }

    /// True if both name the same cause: tasks (and the task current
    /// during a timer delay) by pid alone (a comm changes on exec), an
    /// IRQ by number and name whatever priority its thread showed,
    /// untraced time by its reason.
    pub fn same(&self, other: &Culprit) -> bool {
        match (self, other) {
            (Culprit::Task(a), Culprit::Task(b)) => a.pid == b.pid,
            (Culprit::TimerDelay { running: a }, Culprit::TimerDelay { running: b }) => {
                a.as_ref().map(|t| t.pid) == b.as_ref().map(|t| t.pid)
            }
            (
                Culprit::Irq {
                    irq: a, name: na, ..
                },
                Culprit::Irq {
                    irq: b, name: nb, ..
                },
            ) => a == b && na == nb,
            (Culprit::Untraced(a), Culprit::Untraced(b)) => a.same_reason(*b),
            _ => self == other,
        }
    }

    /// Takes in what `newer`, the same cause met again, says that this
    /// does not: a task's comm after exec, a priority the trace showed
    /// later, more lost events.
    fn merge(&mut self, newer: &Culprit) {
        match (self, newer) {
            (Culprit::Task(a), Culprit::Task(b))
            | (
                Culprit::TimerDelay { running: Some(a) },
                Culprit::TimerDelay { running: Some(b) },
            ) => {
                if !b.comm.is_empty() {
                    a.comm = b.comm.clone();
                }
                if b.prio.is_some() {
                    a.prio = b.prio;
                }
            }
            (
                Culprit::Irq { thread: a, .. },
                Culprit::Irq {
                    thread: Some(b), ..
                },
            ) => {
                *a = Some(*b);
            }
            (
                Culprit::Untraced(Untraced::Lost { events: a }),
                Culprit::Untraced(Untraced::Lost { events: b }),
            ) => *a = a.saturating_add(*b),
            _ => {}
        }
    }
}

/// One exclusive share of a spike.
#[derive(Serialize, Deserialize, MaxSize, Schema, Debug, Clone, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Cause {
    /// What this line is about.
    pub culprit: Culprit,
    /// Episodes (IRQ invocations, task runs, stretches) that overlapped
    /// the window.
    pub count: u32,
    /// Nanoseconds of the window attributed to this line.
    pub ns: u64,
}

impl Cause {
    /// Its kind.
    pub const fn kind(&self) -> CauseKind {
        self.culprit.kind()
    }

    /// See [`Culprit::label`].
    pub fn label(&self) -> &str {
        self.culprit.label()
    }
}

/// Adds `count` and `ns` to the line of `table` for `culprit`, creating it
/// if needed. When the table is full, the last line becomes
/// [`Culprit::Other`] and absorbs the rest, so no time is lost.
pub(crate) fn add_cause<const N: usize>(
    table: &mut heapless::Vec<Cause, N>,
    culprit: Culprit,
    count: u32,
    ns: u64,
) {
    if let Some(c) = table.iter_mut().find(|c| c.culprit.same(&culprit)) {
        c.culprit.merge(&culprit);
        c.count = c.count.saturating_add(count);
        c.ns = c.ns.saturating_add(ns);
        return;
    }
    if table.is_full() {
        if let Some(last) = table.last_mut() {
            last.culprit = Culprit::Other;
            last.count = last.count.saturating_add(count);
            last.ns = last.ns.saturating_add(ns);
        }
    } else {
        // Cannot fail: checked `is_full` above.
        let _ = table.push(Cause { culprit, count, ns });
    }
}
