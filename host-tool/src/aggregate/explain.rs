//! Explained spikes: the attributions a run sent, the largest kept, and
//! per-cause totals over all of them, in bounded memory.

use latscope_core::explain::{Attribution, Cause, Culprit, PrioClass, Task, Untraced};

/// Explained spikes kept per run (the largest).
const KEPT: usize = 32;
/// Distinct causes totalled per run; later ones go to "other".
const CAUSES: usize = 256;

/// A cause's total over the explained spikes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CauseTotal {
    /// The cause, as the report prints it (without counts and time).
    pub label: String,
    /// What identifies it (see [`total_key`]).
    key: Culprit,
    /// Episodes over all spikes.
    pub count: u64,
    /// Time over all spikes (ns; counts only for coarse attributions).
    pub ns: u64,
    /// Spikes it took part in.
    pub spikes: u64,
}

/// The explained spikes of one run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Explained {
    /// Attributions received.
    pub total: u64,
    /// The largest attributions, largest first.
    pub largest: Vec<Attribution>,
    /// Per-cause totals, in order of first appearance.
    pub causes: Vec<CauseTotal>,
}

/// A policy class and priority in words.
fn prio_class(p: Option<PrioClass>) -> String {
    match p {
        Some(PrioClass::Deadline) => "SCHED_DEADLINE".into(),
        Some(PrioClass::RealTime(p)) => format!("SCHED_FIFO/RR {p}"),
        Some(PrioClass::Normal(0)) => "SCHED_OTHER".into(),
        Some(PrioClass::Normal(n)) => format!("SCHED_OTHER nice {n}"),
        None => "policy unknown".into(),
    }
}

/// What a cause line is called in reports (`irq 19 eth0`, `irq 13
/// irq/13-uart-pl0 (SCHED_FIFO/RR 50)` for a `PREEMPT_RT` IRQ thread,
/// `softirq NET_RX`, `task kworker/0:1 (pid 33, SCHED_OTHER)`, ...).
pub(crate) fn cause_label(c: &Cause) -> String {
    match &c.culprit {
        // A PREEMPT_RT IRQ thread's line: its name and priority.
        Culprit::Irq {
            irq,
            name,
            thread: Some(p),
        } => format!("irq {irq} {name} ({})", prio_class(Some(*p))),
        Culprit::Irq { irq, name, .. } => format!("irq {irq} {name}"),
        Culprit::Softirq(s) => format!("softirq {}", s.name()),
        Culprit::Vector { name, .. } => format!("irq {name}"),
        Culprit::Task(t) => format!("task {} (pid {}, {})", t.comm, t.pid, prio_class(t.prio)),
        // What ran on the CPU while the timer interrupt was late.
        Culprit::TimerDelay { running: Some(t) } if !t.comm.is_empty() || t.pid != 0 => {
            format!(
                "{}, {} running (pid {}, {})",
                c.label(),
                t.comm,
                t.pid,
                prio_class(t.prio)
            )
        }
        _ => c.label().to_string(),
    }
}

/// The line a report prints on its own for a stretch of a spike's window
/// the trace lost or no longer held (`trace lost 12 events 1.2 ms`,
/// `beyond latscope's history 5.0 ms`, `trace paused 1.2 ms` of older
/// targets), or `None` for other lines.
pub(crate) fn gap_line(c: &Cause) -> Option<String> {
    let Culprit::Untraced(why) = c.culprit else {
        return None;
    };
    if why == Untraced::Off {
        return None;
    }
    let len = if c.ns >= 100_000 {
        format!("{:.1} ms", c.ns as f64 / 1e6)
    } else {
        format!("{:.1} µs", c.ns as f64 / 1e3)
    };
    if let Untraced::Lost { events } = why {
        if events > 0 {
            return Some(format!("{} {events} events {len}", c.label()));
        }
    }
    Some(format!("{} {len}", c.label()))
}

/// What a line's total is keyed by: tasks by comm and policy (pids differ
/// between spikes), timer delays as one cause whatever ran meanwhile, an
/// IRQ thread whether or not a spike's trace showed its priority, lost
/// time however many events; everything else as it is.
fn total_key(c: &Culprit) -> Culprit {
    match c {
        Culprit::Task(t) => Culprit::Task(Task {
            pid: 0,
            comm: t.comm.clone(),
            prio: t.prio,
        }),
        Culprit::TimerDelay { .. } => Culprit::TimerDelay { running: None },
        Culprit::Irq { irq, name, .. } => Culprit::Irq {
            irq: *irq,
            name: name.clone(),
            thread: None,
        },
        Culprit::Untraced(Untraced::Lost { .. }) => Culprit::Untraced(Untraced::Lost { events: 0 }),
        other => other.clone(),
    }
}

/// The label a line's total prints.
fn total_label(c: &Cause) -> String {
    match &c.culprit {
        Culprit::Task(t) => format!("task {} ({})", t.comm, prio_class(t.prio)),
        Culprit::TimerDelay { .. } => c.label().to_string(),
        _ => cause_label(c),
    }
}

impl Explained {
    /// Account one attribution.
    pub(crate) fn push(&mut self, a: &Attribution) {
        self.total += 1;
        for c in &a.causes {
            let (label, key) = (total_label(c), total_key(&c.culprit));
            let at = match self.causes.iter().position(|t| t.key == key) {
                Some(i) => {
                    // The priority, once a spike shows it.
                    if matches!(
                        c.culprit,
                        Culprit::Irq {
                            thread: Some(_),
                            ..
                        }
                    ) {
                        self.causes[i].label = label;
                    }
                    Some(i)
                }
                None if self.causes.len() < CAUSES => {
                    self.causes.push(CauseTotal {
                        label,
                        key,
                        count: 0,
                        ns: 0,
                        spikes: 0,
                    });
                    Some(self.causes.len() - 1)
                }
                None => self.causes.iter().position(|t| t.key == Culprit::Other),
            };
            let i = match at {
                Some(i) => i,
                None => {
                    if let Some(last) = self.causes.last_mut() {
                        last.label = "other".into();
                        last.key = Culprit::Other;
                    }
                    self.causes.len() - 1
                }
            };
            if let Some(t) = self.causes.get_mut(i) {
                t.count += u64::from(c.count);
                t.ns = t.ns.saturating_add(c.ns);
                t.spikes += 1;
            }
        }
        if self.largest.len() < KEPT
            || self
                .largest
                .last()
                .is_some_and(|l| a.latency_ns > l.latency_ns)
        {
            let at = self
                .largest
                .partition_point(|x| x.latency_ns >= a.latency_ns);
            self.largest.insert(at, a.clone());
            self.largest.truncate(KEPT);
        }
    }

    /// Cause totals, most time first.
    pub(crate) fn ranked(&self) -> Vec<CauseTotal> {
        let mut v = self.causes.clone();
        v.sort_by(|a, b| b.ns.cmp(&a.ns).then(b.count.cmp(&a.count)));
        v
    }
}
