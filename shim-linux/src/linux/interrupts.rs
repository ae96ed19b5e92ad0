//! Coarse attribution from `/proc/interrupts` and `/proc/softirqs`.
//!
//! Without tracefs there is no time per cause, only counters. Two readings
//! taken a report interval apart give, per measured CPU, how many of each
//! interrupt and softirq arrived in between; [`ProcInterrupts::delta`]
//! turns that into an [`Attribution`] flagged `coarse`, whose lines carry
//! counts and no nanoseconds.

use std::fs;

use latscope_core::explain::{Attribution, Culprit, Softirq};
use latscope_core::wire::bounded;

/// One counter of one CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter {
    /// What it counts: [`Culprit::Irq`] (by number and action names),
    /// [`Culprit::Vector`] (a named system row, whose number `/proc` does
    /// not give: 0) or [`Culprit::Softirq`] (by its row, the vector).
    pub culprit: Culprit,
    /// Count since boot.
    pub count: u64,
}

/// Long names of the x86 and arm64 system interrupt rows.
fn vector_name(label: &str) -> Option<&'static str> {
    Some(match label {
        "LOC" => "local_timer",
        "RES" => "reschedule",
        "CAL" => "call_function",
        "TLB" => "tlb_shootdown",
        "IWI" => "irq_work",
        "NMI" => "nmi",
        "SPU" => "spurious",
        "PMI" => "perf",
        "TRM" => "thermal",
        "MCE" => "machine_check",
        "IPI0" => "ipi_reschedule",
        "IPI1" => "ipi_call_function",
        "IPI4" => "ipi_timer",
        "IPI5" => "ipi_irq_work",
        _ => return None,
    })
}

/// Column of each CPU in the header line (`CPU0 CPU1 ...`; offline CPUs
/// have no column).
fn columns(header: &str) -> Vec<usize> {
    header
        .split_whitespace()
        .filter_map(|t| t.strip_prefix("CPU").and_then(|n| n.parse().ok()))
        .collect()
}

/// Parses `/proc/interrupts` text: the counters of `cpu`, or `None` if the
/// text has no column for it.
pub fn parse_interrupts(text: &str, cpu: usize) -> Option<Vec<Counter>> {
    let mut lines = text.lines();
    let cols = columns(lines.next()?);
    let col = cols.iter().position(|&c| c == cpu)?;
    let mut out = Vec::new();
    for line in lines {
        let Some((label, rest)) = line.split_once(':') else {
            continue;
        };
        let label = label.trim();
        let mut toks = rest.split_whitespace();
        let counts: Vec<u64> = toks
            .by_ref()
            .take(cols.len())
            .map_while(|t| t.parse().ok())
            .collect();
        let Some(&count) = counts.get(col) else {
            continue;
        };
        let desc: Vec<&str> = toks.collect();
        if let Ok(irq) = label.parse::<u32>() {
            // "<chip> <hwirq>-<type> <action, action...>"
            let name = if desc.len() > 2 {
                desc[2..].join(" ")
            } else {
                desc.last().copied().unwrap_or("").to_string()
            };
            out.push(Counter {
                culprit: Culprit::Irq {
                    irq,
                    name: bounded(&name),
                    thread: None,
                },
                count,
            });
        } else {
            let name = bounded(vector_name(label).unwrap_or(label));
            out.push(Counter {
                culprit: Culprit::Vector { vector: 0, name },
                count,
            });
        }
    }
    Some(out)
}

/// Parses `/proc/softirqs` text: the counters of `cpu`, or `None`.
pub fn parse_softirqs(text: &str, cpu: usize) -> Option<Vec<Counter>> {
    let mut lines = text.lines();
    let cols = columns(lines.next()?);
    let col = cols.iter().position(|&c| c == cpu)?;
    let mut out = Vec::new();
    for (i, line) in lines.enumerate() {
        let Some((_, rest)) = line.split_once(':') else {
            continue;
        };
        let Some(count) = rest
            .split_whitespace()
            .nth(col)
            .and_then(|t| t.parse().ok())
        else {
            continue;
        };
        // the rows are the vectors, in order
        out.push(Counter {
            culprit: Culprit::Softirq(Softirq::from_vector(u32::try_from(i).unwrap_or(u32::MAX))),
            count,
        });
    }
    Some(out)
}

/// The interrupt and softirq counters of the measured CPUs, as read at one
/// moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcInterrupts {
    cpus: Vec<(usize, Vec<Counter>)>,
}

impl ProcInterrupts {
    /// Reads `/proc/interrupts` and `/proc/softirqs` for `cpus`; `None` if
    /// `/proc/interrupts` cannot be read (`/proc/softirqs` is optional).
    pub fn read(cpus: &[usize]) -> Option<ProcInterrupts> {
        let irqs = fs::read_to_string("/proc/interrupts").ok()?;
        let soft = fs::read_to_string("/proc/softirqs").unwrap_or_default();
        Some(Self::from_text(&irqs, &soft, cpus))
    }

    /// A reading from the texts of `/proc/interrupts` and `/proc/softirqs`.
    pub fn from_text(interrupts: &str, softirqs: &str, cpus: &[usize]) -> ProcInterrupts {
        let cpus = cpus
            .iter()
            .map(|&cpu| {
                let mut v = parse_interrupts(interrupts, cpu).unwrap_or_default();
                v.extend(parse_softirqs(softirqs, cpu).unwrap_or_default());
                (cpu, v)
            })
            .collect();
        ProcInterrupts { cpus }
    }

    /// The counters of `cpu` in this reading.
    pub fn counters(&self, cpu: usize) -> &[Counter] {
        self.cpus
            .iter()
            .find(|(c, _)| *c == cpu)
            .map_or(&[], |(_, v)| v.as_slice())
    }

    /// What arrived on `cpu` between `self` (earlier) and `later`, as a
    /// coarse attribution of the spike `cycle`/`deadline_ns`/`latency_ns`
    /// (the worst of the interval): one line per counter that moved, by
    /// count, largest first, `ns` zero, `coarse` set.
    pub fn delta(
        &self,
        later: &ProcInterrupts,
        cpu: usize,
        cycle: u64,
        deadline_ns: u64,
        latency_ns: u64,
    ) -> Attribution {
        let mut moved: Vec<(&Counter, u64, usize)> = later
            .counters(cpu)
            .iter()
            .enumerate()
            .filter_map(|(i, n)| {
                let before = self
                    .counters(cpu)
                    .iter()
                    .find(|o| o.culprit == n.culprit)
                    .map_or(0, |o| o.count);
                let d = n.count.saturating_sub(before);
                (d > 0).then_some((n, d, i))
            })
            .collect();
        // largest first, equal counts in /proc's order: the index makes
        // the key unique, so core's small unstable sort gives the stable
        // order
        latscope_core::sort::by_key(&mut moved, |m| (core::cmp::Reverse(m.1), m.2));
        let mut a = Attribution::new(
            u32::try_from(cpu).unwrap_or(u32::MAX),
            cycle,
            deadline_ns,
            latency_ns,
        );
        a.coarse = true;
        for (c, d, _) in moved {
            let count = u32::try_from(d).unwrap_or(u32::MAX);
            a.add(c.culprit.clone(), count, 0);
        }
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IRQS_A: &str = "           CPU0       CPU1       
 24:          1          0  IO-APIC   5-edge      ACPI:Ged
 41:       1201          0 PCI-MSIX-0000:00:04.0   1-edge      virtio3-rx
 42:          0       2242 PCI-MSIX-0000:00:04.0   2-edge      virtio3-tx
NMI:          0          0   Non-maskable interrupts
LOC:      13938      16022   Local timer interrupts
RES:       5081       3356   Rescheduling interrupts
ERR:          0
MIS:          0
";
    const IRQS_B: &str = "           CPU0       CPU1       
 24:          1          0  IO-APIC   5-edge      ACPI:Ged
 41:       1301          0 PCI-MSIX-0000:00:04.0   1-edge      virtio3-rx
 42:          0       2250 PCI-MSIX-0000:00:04.0   2-edge      virtio3-tx
NMI:          0          0   Non-maskable interrupts
LOC:      13948      16022   Local timer interrupts
RES:       5081       3356   Rescheduling interrupts
ERR:          0
MIS:          0
";
    const SOFT_A: &str = "                    CPU0       CPU1       
          HI:          0          0
       TIMER:       2854       3348
      NET_TX:          3          1
      NET_RX:        445        887
";
    const SOFT_B: &str = "                    CPU0       CPU1       
          HI:          0          0
       TIMER:       2860       3348
      NET_TX:          3          1
      NET_RX:       1445        887
";

    #[test]
    fn parses_irq_rows() {
        let v = parse_interrupts(IRQS_A, 0).unwrap();
        let irq = |n| move |c: &&Counter| matches!(c.culprit, Culprit::Irq { irq, .. } if irq == n);
        let rx = v.iter().find(irq(41)).unwrap();
        assert_eq!((rx.culprit.label(), rx.count), ("virtio3-rx", 1201));
        let loc = v
            .iter()
            .find(|c| c.culprit.label() == "local_timer")
            .unwrap();
        assert_eq!(loc.count, 13938);
        let v1 = parse_interrupts(IRQS_A, 1).unwrap();
        assert_eq!(v1.iter().find(irq(42)).unwrap().count, 2242);
        // ERR/MIS have one column only: not per-CPU for CPU1.
        assert!(!v1.iter().any(|c| c.culprit.label() == "ERR"));
        assert!(parse_interrupts(IRQS_A, 5).is_none());
        assert!(parse_interrupts("", 0).is_none());
    }

    #[test]
    fn delta_is_coarse_and_ordered() {
        let a = ProcInterrupts::from_text(IRQS_A, SOFT_A, &[0, 1]);
        let b = ProcInterrupts::from_text(IRQS_B, SOFT_B, &[0, 1]);
        let d = a.delta(&b, 0, 9, 100, 50);
        assert!(d.coarse);
        assert_eq!(d.latency_ns, 50);
        let names: Vec<(&str, u32)> = d.causes.iter().map(|c| (c.label(), c.count)).collect();
        assert_eq!(
            names,
            [
                ("NET_RX", 1000),
                ("virtio3-rx", 100),
                ("local_timer", 10),
                ("TIMER", 6)
            ]
        );
        let d1 = a.delta(&b, 1, 9, 100, 50);
        assert_eq!(d1.causes.len(), 1);
        assert_eq!(d1.causes[0].label(), "virtio3-tx");
    }

    #[test]
    fn garbage_never_panics() {
        for t in [
            "",
            ":",
            "CPU0\n:::",
            "CPU0 CPU1\n 1: x y z\nLOC: 1",
            "CPU99\n 7: 1 2 3 4 5",
        ] {
            let _ = parse_interrupts(t, 0);
            let _ = parse_softirqs(t, 0);
        }
    }

    #[test]
    fn live_reading() {
        let s = ProcInterrupts::read(&[0]).expect("/proc/interrupts");
        assert!(s.counters(0).iter().any(
            |c| c.culprit.label() == "local_timer" || matches!(c.culprit, Culprit::Irq { .. })
        ));
        assert!(s
            .counters(0)
            .iter()
            .any(|c| c.culprit == Culprit::Softirq(Softirq::NetRx)));
    }
}
