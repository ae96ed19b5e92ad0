//! rtla's `timerlat top` auto-analysis (`-i 500 -T 500 -s 500`, what `-a 500` does without saving the trace), as the board image prints it
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

use latscope_core::explain::{Attribution, Culprit};

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
    /// It stopped on the timer IRQ's own latency (`IRQ latency: ... us
    /// (100%)`): the timer interrupt itself came late, and there is no
    /// thread latency to split.
    pub irq_stop: bool,
    /// The run's text, for the record.
    pub text: String,
}

impl Run {
    /// The verdict: `IRQ latency` if the run stopped on the timer IRQ's
    /// own latency, else the largest component, and for a thread component
    /// the thread with the most time (`Thread interference
    /// irq/13-uart-pl0:94`). `None` if the run did not hit its threshold.
    pub fn verdict(&self) -> Option<String> {
        if self.irq_stop {
            return Some("IRQ latency".to_string());
        }
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
        let total = line.trim_start();
        if total.starts_with("IRQ latency:") && total.ends_with("(100%)") {
            run.irq_stop = true;
        } else if let Some(c) = component(line) {
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

/// A [`Blame`] as the flood on the emulated board shows it: the late timer
/// IRQ and the IRQ's thread are both the flood's (it keeps qemu's main
/// loop busy, so the timer comes late, and its IRQ's thread preempts the
/// measuring thread). Which of the two a tool's samples show more is how
/// it samples: rtla analyses the first sample over its threshold, the
/// late timer in 2 to 5 of 5 runs from boot to boot; latscope explains
/// each interval's worst spikes first, the IRQ's thread in about three
/// quarters of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloodBlame {
    /// The late timer IRQ or the IRQ's thread.
    Flood,
    /// Anything else.
    Else(Blame),
}

/// `blames` as the flood shows them.
pub fn flood_blames(blames: &[Blame]) -> Vec<FloodBlame> {
    blames
        .iter()
        .map(|&b| match b {
            Blame::TimerLate | Blame::IrqThread => FloodBlame::Flood,
            other => FloodBlame::Else(other),
        })
        .collect()
}

/// What rtla's verdict blames, for IRQ `irq`.
pub fn rtla_blame(verdict: &str, irq: u32) -> Blame {
    if names_irq_thread(verdict, irq) {
        Blame::IrqThread
    } else if verdict.starts_with("IRQ handler delay") || verdict.starts_with("IRQ latency") {
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

/// What one of latscope's explained spikes blames, as rtla's analysis of
/// that sample would: its largest line, for IRQ `irq`. The timer's own
/// delay (whatever task was current while the timer interrupt was late,
/// or an idle CPU it came late to) is rtla's IRQ latency: the IRQ's
/// thread running then did not delay the measuring thread, the timer
/// did. Another IRQ's thread is a thread to rtla. `None` if the largest
/// line is untraced time: nothing to compare.
pub fn spike_blame(a: &Attribution, irq: u32) -> Option<Blame> {
    let top = a.causes.iter().max_by_key(|c| c.ns)?;
    let thread = |name: &str| name.starts_with(&format!("irq/{irq}-"));
    Some(match &top.culprit {
        Culprit::Untraced(_) => return None,
        Culprit::Irq { name, .. } if thread(name) => Blame::IrqThread,
        Culprit::Task(t) if thread(&t.comm) => Blame::IrqThread,
        Culprit::Irq { name, .. } if name.starts_with("irq/") => Blame::Task,
        Culprit::Irq { .. } | Culprit::Vector { .. } => Blame::HardIrq,
        Culprit::TimerDelay { .. } | Culprit::IdleExit => Blame::TimerLate,
        Culprit::Softirq(_) => Blame::Softirq,
        Culprit::Task(_) => Blame::Task,
        Culprit::Other | Culprit::Masked => Blame::Other,
    })
}

/// What latscope's explained spikes on `cpu` blame, one each (spikes
/// whose largest line is untraced, and coarse ones, left out), and how
/// many spikes were explained on `cpu`. rtla's runs measure one CPU
/// (`-c 0`): only latscope's spikes there compare with them.
pub fn spike_blames(explained: &[Attribution], cpu: u32, irq: u32) -> (Vec<Blame>, usize) {
    let on_cpu = || explained.iter().filter(|a| a.cpu == cpu);
    let blames = on_cpu()
        .filter(|a| !a.coarse)
        .filter_map(|a| spike_blame(a, irq))
        .collect();
    (blames, on_cpu().count())
}

/// What the rtla runs that hit their threshold blame, one each.
pub fn run_blames(runs: &[Run], irq: u32) -> Vec<Blame> {
    runs.iter()
        .filter_map(Run::verdict)
        .map(|v| rtla_blame(&v, irq))
        .collect()
}

/// How the blames of `sample` (rtla's few runs) fit the blames of
/// `reference` (latscope's many spikes): the exact multinomial test's
/// p-value, the probability that `sample.len()` draws from the
/// reference's distribution come out as unlikely as `sample` or less.
/// Every blame either side names gets one more count in the reference
/// (so one latscope never gave is rare, not impossible). 1.0 for an
/// empty sample.
///
/// A few one-sample runs cannot tell a 60/40 mixture from a 40/60 one,
/// and their majority flips between runs of the same board; a tool that
/// blames what the other hardly ever does gets a p-value below 1e-4.
pub fn agreement<B: Copy + PartialEq>(sample: &[B], reference: &[B]) -> f64 {
    let mut kinds: Vec<B> = Vec::new();
    for b in sample.iter().chain(reference) {
        if !kinds.contains(b) {
            kinds.push(*b);
        }
    }
    let count = |v: &[B], k: B| v.iter().filter(|&&b| b == k).count();
    let total = (reference.len() + kinds.len()) as f64;
    let p: Vec<f64> = kinds
        .iter()
        .map(|&k| (count(reference, k) + 1) as f64 / total)
        .collect();
    let observed: Vec<usize> = kinds.iter().map(|&k| count(sample, k)).collect();
    let n = sample.len();
    let prob = |ks: &[usize]| {
        let mut coef = (1..=n).map(|i| i as f64).product::<f64>();
        let mut pr = 1.0;
        for (&k, &pk) in ks.iter().zip(&p) {
            coef /= (1..=k).map(|i| i as f64).product::<f64>();
            pr *= pk.powi(i32::try_from(k).unwrap_or(i32::MAX));
        }
        coef * pr
    };
    let p_obs = prob(&observed);
    // every way of spreading n draws over the kinds
    let mut sum = 0.0;
    let mut ks = vec![0usize; kinds.len()];
    loop {
        if ks.iter().sum::<usize>() == n && prob(&ks) <= p_obs * (1.0 + 1e-9) {
            sum += prob(&ks);
        }
        let mut i = 0;
        loop {
            if i == ks.len() {
                return sum.min(1.0);
            }
            ks[i] += 1;
            if ks[i] <= n {
                break;
            }
            ks[i] = 0;
            i += 1;
        }
    }
}

/// How many of `blames` give each blame, most first.
pub fn tally(blames: &[Blame]) -> Vec<(Blame, usize)> {
    let mut n: Vec<(Blame, usize)> = Vec::new();
    for &b in blames {
        match n.iter_mut().find(|(k, _)| *k == b) {
            Some((_, c)) => *c += 1,
            None => n.push((b, 1)),
        }
    }
    n.sort_by_key(|&(_, c)| std::cmp::Reverse(c));
    n
}

/// The blame most of `blames` give (ties: each of them), and how many.
pub fn most(blames: &[Blame]) -> (Vec<Blame>, usize) {
    let n = tally(blames);
    let top = n.first().map_or(0, |&(_, c)| c);
    (
        n.into_iter()
            .filter(|&(_, c)| c == top)
            .map(|(b, _)| b)
            .collect(),
        top,
    )
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
    most(&run_blames(runs, irq))
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_core::explain::{PrioClass, Softirq, Task, Untraced};
    use latscope_core::wire::bounded;

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
        assert_eq!(rtla_blame("IRQ latency", 13), Blame::TimerLate);
        let (v, n) = majority(&r).unwrap();
        assert_eq!(n, 1);
        assert!(names_irq_thread(&v, 13));
        assert_eq!(majority(&[]), None);
    }

    #[test]
    fn a_run_stopped_on_the_timer_irq_blames_its_latency() {
        // two of the tie's runs stopped on the IRQ: no thread latency
        let r = runs(P40_TIE);
        let stops: Vec<bool> = r.iter().map(|r| r.irq_stop).collect();
        assert_eq!(stops.iter().filter(|&&s| s).count(), 2, "{stops:?}");
        for run in r.iter().filter(|r| r.irq_stop) {
            assert_eq!(run.verdict().as_deref(), Some("IRQ latency"));
        }
        assert!(runs(P40).iter().all(|r| !r.irq_stop));
    }

    fn spike(causes: &[(Culprit, u64)]) -> Attribution {
        let mut a = Attribution::new(0, 1, 0, causes.iter().map(|c| c.1).sum());
        for (culprit, ns) in causes {
            a.add(culprit.clone(), 1, *ns);
        }
        a
    }

    fn irq(irq: u32, name: &str) -> Culprit {
        let thread = PrioClass::from_kernel(49).filter(|_| name.starts_with("irq/"));
        Culprit::Irq {
            irq,
            name: bounded(name),
            thread,
        }
    }

    fn timer_delay(pid: u32, comm: &str) -> Culprit {
        let running = Some(Task {
            pid,
            comm: bounded(comm),
            prio: PrioClass::from_kernel(49),
        });
        Culprit::TimerDelay { running }
    }

    #[test]
    fn a_spike_blames_its_largest_line_as_rtla_would() {
        let b = |c: &[(Culprit, u64)]| spike_blame(&spike(c), 13);
        let thread = (irq(13, "irq/13-uart-pl0"), 2_000);
        assert_eq!(b(std::slice::from_ref(&thread)), Some(Blame::IrqThread));
        // untraced time is nothing to compare, however large
        let lost = Culprit::Untraced(Untraced::Lost { events: 9 });
        assert_eq!(b(&[(lost, 7_000), thread.clone()]), None);
        assert_eq!(
            b(&[thread.clone(), (Culprit::IdleExit, 3_000)]),
            Some(Blame::TimerLate)
        );
        assert_eq!(
            b(&[(timer_delay(7, "kworker/0:1"), 900)]),
            Some(Blame::TimerLate)
        );
        // the timer came late while the IRQ's thread ran: the timer's blame
        assert_eq!(
            b(&[(timer_delay(94, "irq/13-uart-pl0"), 900)]),
            Some(Blame::TimerLate)
        );
        assert_eq!(b(&[(irq(11, "irq/11-eth0"), 900)]), Some(Blame::Task));
        assert_eq!(b(&[(irq(13, "uart-pl011"), 900)]), Some(Blame::HardIrq));
        assert_eq!(
            b(&[(Culprit::Softirq(Softirq::Timer), 900)]),
            Some(Blame::Softirq)
        );
        let mut coarse = spike(std::slice::from_ref(&thread));
        coarse.coarse = true;
        let mut cpu1 = spike(std::slice::from_ref(&thread));
        cpu1.cpu = 1;
        assert_eq!(
            spike_blames(&[coarse, spike(&[thread]), cpu1], 0, 13),
            (vec![Blame::IrqThread], 2)
        );
    }

    #[test]
    fn agreement_tells_sampling_noise_from_disagreement() {
        use Blame::{IrqThread as I, TimerLate as T};
        let mix = |i: usize, t: usize| [vec![I; i], vec![T; t]].concat();
        // latscope 60/40; rtla's five runs 4 to 1 the other way: noise
        let p = agreement(&mix(1, 4), &mix(30, 20));
        assert!(p > 0.05, "{p}");
        // the same five runs against a tool that nearly never blames it
        let p = agreement(&mix(1, 4), &mix(49, 1));
        assert!(p < 1e-4, "{p}");
        // all five runs blame what the other never names
        let p = agreement(&[Blame::Softirq; 5], &mix(30, 20));
        assert!(p < 1e-4, "{p}");
        let p_most_likely = agreement(&mix(3, 2), &mix(30, 20));
        assert!((p_most_likely - 1.0).abs() < 1e-9, "{p_most_likely}");
        assert_eq!(agreement(&[], &mix(3, 2)), 1.0);
        assert_eq!(most(&mix(2, 2)).1, 2);
        assert_eq!(most(&mix(2, 3)), (vec![T], 3));
    }

    #[test]
    fn the_flood_view_fits_what_sampling_splits_and_not_what_differs() {
        use Blame::{HardIrq as H, IrqThread as I, Task as K, TimerLate as T};
        let of = |v: &[(Blame, usize)]| v.iter().flat_map(|&(b, n)| vec![b; n]).collect::<Vec<_>>();
        // the CI board run's latscope spikes at -p 40, and rtla's first
        // samples all the late timer (as in 1 of this stop's 5 boot sets)
        let ours = of(&[(I, 22), (T, 3), (H, 2)]);
        let theirs = [T; 5];
        assert!(agreement(&theirs, &ours) < 1e-4);
        let p = agreement(&flood_blames(&theirs), &flood_blames(&ours));
        assert!(p > 0.5, "{p}");
        // a latscope that blames tasks for the flood's time disagrees
        let tasks = of(&[(K, 30), (I, 1)]);
        let p = agreement(&flood_blames(&theirs), &flood_blames(&tasks));
        assert!(p < 1e-4, "{p}");
        // and so does an rtla that blames hard IRQs in all five runs,
        // where latscope does in 2 of 27 spikes
        let p = agreement(&flood_blames(&[H; 5]), &flood_blames(&ours));
        assert!(p < 1e-4, "{p}");
        assert_eq!(
            flood_blames(&[T, I, H]),
            [FloodBlame::Flood, FloodBlame::Flood, FloodBlame::Else(H)]
        );
    }
}
