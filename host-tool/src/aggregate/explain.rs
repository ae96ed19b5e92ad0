//! Explained spikes: the attributions a run sent, the largest kept, and
//! per-cause totals over all of them, in bounded memory.

use latscope_core::explain::{Attribution, Cause, CauseKind, Policy, PRIO_UNKNOWN};

/// Explained spikes kept per run (the largest).
const KEPT: usize = 32;
/// Distinct causes totalled per run; later ones go to "other".
const CAUSES: usize = 256;

/// A cause's total over the explained spikes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CauseTotal {
    /// The cause, as the report prints it (without counts and time).
    pub label: String,
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

/// The policy of a task cause in words.
fn policy(c: &Cause) -> String {
    match c.policy() {
        Policy::Deadline => "SCHED_DEADLINE".into(),
        Policy::RealTime(p) => format!("SCHED_FIFO/RR {p}"),
        Policy::Normal(0) => "SCHED_OTHER".into(),
        Policy::Normal(n) => format!("SCHED_OTHER nice {n}"),
        Policy::Unknown => "policy unknown".into(),
    }
}

/// What a cause line is called in reports (`irq 19 eth0`, `irq 13
/// irq/13-uart-pl0 (SCHED_FIFO/RR 50)` for a `PREEMPT_RT` IRQ thread,
/// `softirq NET_RX`, `task kworker/0:1 (pid 33, SCHED_OTHER)`, ...).
pub(crate) fn cause_label(c: &Cause) -> String {
    match c.kind {
        // A PREEMPT_RT IRQ thread's line: its name and priority.
        CauseKind::Irq if c.prio != PRIO_UNKNOWN => {
            format!("irq {} {} ({})", c.id, c.name, policy(c))
        }
        CauseKind::Irq => format!("irq {} {}", c.id, c.name),
        CauseKind::Softirq => format!("softirq {}", c.name),
        CauseKind::Vector => format!("irq {}", c.name),
        CauseKind::Task => format!("task {} (pid {}, {})", c.name, c.id, policy(c)),
        _ => c.label().to_string(),
    }
}

impl Explained {
    /// Account one attribution.
    pub(crate) fn push(&mut self, a: &Attribution) {
        self.total += 1;
        for c in &a.causes {
            let label = match c.kind {
                // Totals group tasks by name: pids differ between spikes.
                CauseKind::Task => format!("task {} ({})", c.name, policy(c)),
                _ => cause_label(c),
            };
            let at = match self.causes.iter().position(|t| t.label == label) {
                Some(i) => Some(i),
                None if self.causes.len() < CAUSES => {
                    self.causes.push(CauseTotal {
                        label,
                        count: 0,
                        ns: 0,
                        spikes: 0,
                    });
                    Some(self.causes.len() - 1)
                }
                None => self.causes.iter().position(|t| t.label == "other"),
            };
            let i = match at {
                Some(i) => i,
                None => {
                    if let Some(last) = self.causes.last_mut() {
                        last.label = "other".into();
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
