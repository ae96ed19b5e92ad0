//! Explained spikes: the attributions a run sent, the largest kept, and
//! per-cause totals over all of them, in bounded memory.

use latscope_core::explain::{
    Attribution, Cause, CauseKind, PrioClass, PRIO_UNKNOWN, UNTRACED_LOST, UNTRACED_OFF,
};

/// Explained spikes kept per run (the largest).
const KEPT: usize = 32;
/// Distinct causes totalled per run; later ones go to "other".
const CAUSES: usize = 256;

/// A cause's total over the explained spikes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CauseTotal {
    /// The cause, as the report prints it (without counts and time).
    pub label: String,
    /// What identifies it: the label, without the priority for an IRQ
    /// thread (whose priority a spike's trace may not show).
    key: String,
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

/// The scheduling class of a task cause in words.
fn prio_class(c: &Cause) -> String {
    match c.prio_class() {
        PrioClass::Deadline => "SCHED_DEADLINE".into(),
        PrioClass::RealTime(p) => format!("SCHED_FIFO/RR {p}"),
        PrioClass::Normal(0) => "SCHED_OTHER".into(),
        PrioClass::Normal(n) => format!("SCHED_OTHER nice {n}"),
        PrioClass::Unknown => "policy unknown".into(),
    }
}

/// What a cause line is called in reports (`irq 19 eth0`, `irq 13
/// irq/13-uart-pl0 (SCHED_FIFO/RR 50)` for a `PREEMPT_RT` IRQ thread,
/// `softirq NET_RX`, `task kworker/0:1 (pid 33, SCHED_OTHER)`, ...).
pub(crate) fn cause_label(c: &Cause) -> String {
    match c.kind {
        // A PREEMPT_RT IRQ thread's line: its name and priority.
        CauseKind::Irq if c.prio != PRIO_UNKNOWN => {
            format!("irq {} {} ({})", c.id, c.name, prio_class(c))
        }
        CauseKind::Irq => format!("irq {} {}", c.id, c.name),
        CauseKind::Softirq => format!("softirq {}", c.name),
        CauseKind::Vector => format!("irq {}", c.name),
        CauseKind::Task => format!("task {} (pid {}, {})", c.name, c.id, prio_class(c)),
        // What ran on the CPU while the timer interrupt was late.
        CauseKind::TimerDelay if !c.name.is_empty() => format!(
            "{}, {} running (pid {}, {})",
            c.label(),
            c.name,
            c.id,
            prio_class(c)
        ),
        _ => c.label().to_string(),
    }
}

/// The line a report prints on its own for a stretch of a spike's window
/// the trace lost or no longer held (`trace lost 12 events 1.2 ms`,
/// `beyond latscope's history 5.0 ms`, `trace paused 1.2 ms` of older
/// targets), or `None` for other lines.
pub(crate) fn gap_line(c: &Cause) -> Option<String> {
    if c.kind != CauseKind::Untraced || c.id == UNTRACED_OFF {
        return None;
    }
    let len = if c.ns >= 100_000 {
        format!("{:.1} ms", c.ns as f64 / 1e6)
    } else {
        format!("{:.1} µs", c.ns as f64 / 1e3)
    };
    if c.id == UNTRACED_LOST && c.count > 0 {
        return Some(format!("{} {} events {len}", c.label(), c.count));
    }
    Some(format!("{} {len}", c.label()))
}

/// The total a cause line adds to: its label, and its key.
fn total_label(c: &Cause) -> (String, String) {
    match c.kind {
        // Totals group tasks by name: pids differ between spikes.
        CauseKind::Task => {
            let l = format!("task {} ({})", c.name, prio_class(c));
            (l.clone(), l)
        }
        // Timer delays are one cause, whatever ran meanwhile.
        CauseKind::TimerDelay => (c.label().to_string(), c.label().to_string()),
        // An IRQ thread is one cause whether or not a spike's trace
        // showed its priority.
        CauseKind::Irq => (cause_label(c), format!("irq {} {}", c.id, c.name)),
        _ => {
            let l = cause_label(c);
            (l.clone(), l)
        }
    }
}

impl Explained {
    /// Account one attribution.
    pub(crate) fn push(&mut self, a: &Attribution) {
        self.total += 1;
        for c in &a.causes {
            let (label, key) = total_label(c);
            let at = match self.causes.iter().position(|t| t.key == key) {
                Some(i) => {
                    // The priority, once a spike shows it.
                    if c.kind == CauseKind::Irq && c.prio != PRIO_UNKNOWN {
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
                None => self.causes.iter().position(|t| t.key == "other"),
            };
            let i = match at {
                Some(i) => i,
                None => {
                    if let Some(last) = self.causes.last_mut() {
                        last.label = "other".into();
                        last.key = "other".into();
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
