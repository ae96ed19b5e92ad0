//! rtla's `timerlat top -a` auto-analysis, as the board image prints it
//! (between `image: rtla run N` and `image: rtla end N` lines), read into
//! its latency components, and verdicts to set beside latscope's.
//!
//! rtla splits the one sample that crossed its threshold into components
//! with their share of the latency (`IRQ handler delay`, `Timerlat IRQ
//! duration`, `Blocking thread`, `IRQ interference`, `Softirq
//! interference`, `Thread interference`), each followed by what it names
//! (`irq/13-uart-pl0:94  666.35 us`) and, for the blocking thread, the
//! IRQ-context stack.

use std::collections::BTreeMap;

use latscope_core::explain::{Attribution, CauseKind};

/// One component of rtla's analysis.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    /// `Blocking thread`, `Thread interference`, `IRQ handler delay`, ...
    pub name: String,
    /// Its share of the sample's latency, percent.
    pub pct: f64,
    /// What it names (`irq/13-uart-pl0:94`, `uart-pl011:13`) and the µs
    /// of each.
    pub entries: Vec<(String, f64)>,
}

/// One rtla run's analysis (empty if it never hit its threshold).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Run {
    pub components: Vec<Component>,
    /// The run's text, for the record.
    pub text: String,
}

impl Run {
    /// The verdict: the largest component, and for a thread component the
    /// thread with the most time (`Thread interference irq/13-uart-pl0:94`).
    /// `None` if the run did not hit its threshold.
    pub fn verdict(&self) -> Option<String> {
        let top = self
            .components
            .iter()
            .max_by(|a, b| a.pct.total_cmp(&b.pct))?;
        let named = top
            .entries
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(n, _)| n.as_str());
        Some(match named {
            Some(n) if top.name.contains("thread") || top.name.contains("interference") => {
                format!("{} {n}", top.name)
            }
            _ => top.name.clone(),
        })
    }
}

/// The rtla runs in a console transcript, in order.
pub fn runs(console: &str) -> Vec<Run> {
    let mut out = Vec::new();
    let mut cur: Option<Run> = None;
    for raw in console.lines() {
        let line = raw.trim_end_matches('\r');
        if line.starts_with("image: rtla run ") {
            cur = Some(Run::default());
            continue;
        }
        if line.starts_with("image: rtla end ") {
            out.extend(cur.take());
            continue;
        }
        let Some(run) = cur.as_mut() else { continue };
        run.text.push_str(line);
        run.text.push('\n');
        if let Some(c) = component(line) {
            run.components.push(c);
        } else if let Some(e) = entry(line) {
            if let Some(c) = run.components.last_mut() {
                c.entries.push(e);
            }
        }
    }
    out
}

/// `  Thread interference      666.35 us (51.91 %)`: a component line
/// (two spaces of indent, a share in percent). The total (`Thread
/// latency`, 100 %) and `IRQ latency` (no share) are not components.
fn component(line: &str) -> Option<Component> {
    let rest = line.strip_prefix("  ")?;
    if rest.starts_with(' ') {
        return None;
    }
    let (head, tail) = rest.rsplit_once(" us (")?;
    let pct: f64 = tail.strip_suffix(" %)")?.trim().parse().ok()?;
    let mut words: Vec<&str> = head.split_whitespace().collect();
    words.pop()?; // the µs
    let name = words
        .join(" ")
        .replace("(exit from idle)", "")
        .trim()
        .trim_end_matches(':')
        .trim()
        .to_string();
    (!name.is_empty()).then_some(Component {
        name,
        pct,
        entries: Vec::new(),
    })
}

/// `           irq/13-uart-pl0:94      666.35 us`: what a component names.
fn entry(line: &str) -> Option<(String, f64)> {
    if !line.starts_with("   ") || line.contains("->") {
        return None;
    }
    let mut words = line.split_whitespace();
    let (name, us, unit) = (words.next()?, words.next()?, words.next()?);
    if unit != "us" || words.next().is_some() {
        return None;
    }
    Some((name.to_string(), us.parse().ok()?))
}

/// What a verdict blames, in terms both tools share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blame {
    /// The timer interrupt itself came late (rtla: IRQ handler delay;
    /// latscope: timer expiry delay).
    TimerLate,
    /// The `PREEMPT_RT` thread of the IRQ of interest (rtla: a blocking or
    /// interfering `irq/N-...` thread; latscope: that IRQ's thread line).
    IrqThread,
    /// A hard IRQ (rtla: IRQ interference, the timerlat IRQ's duration;
    /// latscope: an IRQ handler or vector line).
    HardIrq,
    /// A softirq.
    Softirq,
    /// Another thread or task.
    Task,
    /// Idle exit, "other".
    Other,
}

/// What rtla's verdict blames, for IRQ `irq`.
pub fn rtla_blame(verdict: &str, irq: u32) -> Blame {
    if names_irq_thread(verdict, irq) {
        Blame::IrqThread
    } else if verdict.starts_with("IRQ handler delay") {
        Blame::TimerLate
    } else if verdict.starts_with("IRQ interference") || verdict.starts_with("Timerlat IRQ") {
        Blame::HardIrq
    } else if verdict.starts_with("Softirq") {
        Blame::Softirq
    } else if verdict.contains("thread") || verdict.contains("Thread") {
        Blame::Task
    } else {
        Blame::Other
    }
}

/// What latscope's dominant cause (as [`latscope_dominant`] names it)
/// blames, for IRQ `irq`.
pub fn latscope_blame(dominant: &str, irq: u32) -> Blame {
    if dominant.starts_with(&format!("Irq {irq} irq/{irq}-")) {
        Blame::IrqThread
    } else if dominant == "TimerDelay" {
        Blame::TimerLate
    } else if dominant.starts_with("Irq ") || dominant.starts_with("Vector ") {
        Blame::HardIrq
    } else if dominant.starts_with("Softirq ") {
        Blame::Softirq
    } else if dominant.starts_with("Task ") {
        Blame::Task
    } else {
        Blame::Other
    }
}

/// True if `verdict` names the `PREEMPT_RT` thread of IRQ `irq`.
pub fn names_irq_thread(verdict: &str, irq: u32) -> bool {
    verdict.contains(&format!("irq/{irq}-"))
}

/// The verdict most runs gave (ties: the first of them), and how many
/// gave it; `None` if no run hit its threshold.
pub fn majority(runs: &[Run]) -> Option<(String, usize)> {
    let mut n: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (i, v) in runs.iter().filter_map(Run::verdict).enumerate() {
        n.entry(v).or_insert((0, i)).0 += 1;
    }
    n.into_iter()
        .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(b.1 .1.cmp(&a.1 .1)))
        .map(|(v, (c, _))| (v, c))
}

/// What most runs blame, for IRQ `irq`: every blame that as many runs
/// gave as any other (a tie keeps them all: two runs blaming the IRQ's
/// thread and two the late timer have no majority between them), and
/// how many runs gave each. Empty if no run hit its threshold.
pub fn majority_blames(runs: &[Run], irq: u32) -> (Vec<Blame>, usize) {
    let mut n: Vec<(Blame, usize)> = Vec::new();
    for b in runs
        .iter()
        .filter_map(Run::verdict)
        .map(|v| rtla_blame(&v, irq))
    {
        match n.iter_mut().find(|(k, _)| *k == b) {
            Some((_, c)) => *c += 1,
            None => n.push((b, 1)),
        }
    }
    let top = n.iter().map(|&(_, c)| c).max().unwrap_or(0);
    (
        n.into_iter()
            .filter(|&(_, c)| c == top)
            .map(|(b, _)| b)
            .collect(),
        top,
    )
}

/// latscope's dominant cause over `explained`: the cause with the most
/// time, untraced lines (of any reason) left out, as `kind name`
/// (`Irq irq/13-uart-pl0`). `None` if nothing traced was explained.
pub fn latscope_dominant(explained: &[Attribution]) -> Option<String> {
    let mut t: BTreeMap<String, u64> = BTreeMap::new();
    for a in explained.iter().filter(|a| !a.coarse) {
        for c in &a.causes {
            let key = match c.kind {
                CauseKind::Untraced => continue,
                CauseKind::Irq => format!("Irq {} {}", c.id, c.name),
                CauseKind::Task => format!("Task {}", c.name),
                CauseKind::Softirq | CauseKind::Vector => format!("{:?} {}", c.kind, c.name),
                CauseKind::TimerDelay
                | CauseKind::IdleExit
                | CauseKind::Other
                | CauseKind::Masked => format!("{:?}", c.kind),
            };
            *t.entry(key).or_default() += c.ns;
        }
    }
    t.into_iter().max_by_key(|(_, ns)| *ns).map(|(k, _)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two runs of rtla 6.12 on the PREEMPT_RT board at `-P f:40`, the
    /// console UART flooded (the image's transcript).
    const P40: &str = include_str!("fixtures/rtla_timerlat_p40_board.txt");

    /// Five runs at `-P f:40` under the flood in which two blamed the late
    /// timer IRQ, two the IRQ's thread and one hit no threshold.
    const P40_TIE: &str = include_str!("fixtures/rtla_timerlat_p40_tie.txt");

    #[test]
    fn a_tie_between_blames_keeps_both() {
        let r = runs(P40_TIE);
        assert_eq!(r.len(), 5, "{r:?}");
        let (top, n) = majority_blames(&r, 13);
        assert_eq!(n, 2);
        assert!(
            top.len() == 2 && top.contains(&Blame::TimerLate) && top.contains(&Blame::IrqThread),
            "{top:?}"
        );
        // the verdict majority picks one of the two by order alone
        assert_eq!(majority(&r).map(|(_, c)| c), Some(2));
        assert_eq!(majority_blames(&r[..1], 13), (vec![Blame::TimerLate], 1));
        assert_eq!(majority_blames(&[], 13), (vec![], 0));
    }

    #[test]
    fn reads_rtlas_analysis_of_the_board() {
        let r = runs(P40);
        assert_eq!(r.len(), 2, "{r:?}");
        let names: Vec<&str> = r[0].components.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "IRQ handler delay",
                "Timerlat IRQ duration",
                "Blocking thread",
                "IRQ interference",
                "Thread interference"
            ]
        );
        assert_eq!(r[0].components[4].pct, 51.91);
        assert_eq!(
            r[0].components[4].entries,
            [("irq/13-uart-pl0:94".to_string(), 666.35)]
        );
        assert_eq!(
            r[0].verdict().as_deref(),
            Some("Thread interference irq/13-uart-pl0:94")
        );
        // The stack is not an entry; the IRQ interference lists three.
        assert_eq!(r[1].components[2].entries.len(), 1);
        assert_eq!(r[1].components[3].entries.len(), 3);
        assert_eq!(
            r[1].verdict().as_deref(),
            Some("Blocking thread irq/13-uart-pl0:94")
        );
        assert!(names_irq_thread(&r[1].verdict().unwrap(), 13));
        assert!(!names_irq_thread("IRQ handler delay", 13));
        assert_eq!(rtla_blame(&r[1].verdict().unwrap(), 13), Blame::IrqThread);
        assert_eq!(rtla_blame("IRQ handler delay", 13), Blame::TimerLate);
        assert_eq!(
            rtla_blame("IRQ interference arch_timer:11", 13),
            Blame::HardIrq
        );
        assert_eq!(
            rtla_blame("Thread interference kworker/0:1:33", 13),
            Blame::Task
        );
        assert_eq!(
            latscope_blame("Irq 13 irq/13-uart-pl0", 13),
            Blame::IrqThread
        );
        assert_eq!(latscope_blame("Irq 13 uart-pl011", 13), Blame::HardIrq);
        assert_eq!(latscope_blame("TimerDelay", 13), Blame::TimerLate);
        assert_eq!(latscope_blame("IdleExit", 13), Blame::Other);
        let (v, n) = majority(&r).unwrap();
        assert_eq!(n, 1);
        assert!(names_irq_thread(&v, 13));
        assert_eq!(majority(&[]), None);
    }

    #[test]
    fn latscopes_dominant_cause_leaves_untraced_time_out() {
        use latscope_core::explain::{PRIO_UNKNOWN, UNTRACED_LOST};
        let mut a = Attribution::new(0, 1, 0, 10_000);
        a.add(
            CauseKind::Untraced,
            UNTRACED_LOST,
            PRIO_UNKNOWN,
            "",
            1,
            7_000,
        );
        a.add(CauseKind::Irq, 13, 49, "irq/13-uart-pl0", 1, 2_000);
        a.add(CauseKind::TimerDelay, 94, 49, "irq/13-uart-pl0", 1, 1_000);
        let mut b = Attribution::new(0, 2, 0, 1_500);
        b.add(CauseKind::TimerDelay, 7, 120, "kworker/0:1", 1, 1_500);
        assert_eq!(
            latscope_dominant(&[a.clone()]).as_deref(),
            Some("Irq 13 irq/13-uart-pl0")
        );
        // Timer delays add up across the tasks that ran meanwhile.
        assert_eq!(latscope_dominant(&[a, b]).as_deref(), Some("TimerDelay"));
        assert_eq!(latscope_dominant(&[]), None);
    }
}
