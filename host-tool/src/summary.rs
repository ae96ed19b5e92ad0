//! The figures every report shows, computed once from a run: per thread
//! and for all CPUs together.

use latscope_core::layout::Layout;
use latscope_core::stats::{quantile, spread, sqrt, Ppm};
use latscope_core::timerlat::Context;
use serde::Serialize;

use crate::aggregate::{Run, ThreadAgg};

/// Names and fractions of the quantiles reported.
pub(crate) const QUANTILES: [(Ppm, &str); 6] = Ppm::REPORTED;

/// The statistics of one thread, or of all threads merged.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Summary {
    /// `"T0"`.. or `"all"`.
    pub label: String,
    /// Thread index (`None` for all).
    pub thread: Option<u16>,
    /// CPU it was pinned to.
    pub cpu: Option<u16>,
    /// Priority.
    pub priority: Option<u8>,
    /// Period (ns).
    pub interval_ns: Option<u64>,
    /// Wake-ups measured.
    pub cycles: u64,
    /// Samples in the histogram.
    pub count: u64,
    /// Smallest sample (ns).
    pub min_ns: Option<u64>,
    /// Mean (ns).
    pub avg_ns: Option<f64>,
    /// Largest sample (ns), exact.
    pub max_ns: Option<u64>,
    /// Quantiles p50..p99.999 (ns, bucket upper edges capped by the max).
    pub quantiles: Vec<(String, Option<u64>)>,
    /// Median (ns) = p50.
    pub median_ns: Option<u64>,
    /// Mode: lower edge of the fullest bucket (ns).
    pub mode_ns: Option<u64>,
    /// Mean absolute deviation (ns).
    pub mad_ns: f64,
    /// Standard deviation (ns).
    pub stddev_ns: f64,
    /// Missed periods.
    pub missed: u64,
    /// Early wake-ups.
    pub early: u64,
    /// Minor faults.
    pub minflt: u64,
    /// Major faults.
    pub majflt: u64,
    /// Spike records the target dropped.
    pub dropped: u64,
    /// Spike records received.
    pub spikes: u64,
    /// Whether the histogram is exact as of the latest statistics.
    pub exact: bool,
    /// Report number of the latest statistics.
    pub epoch: u32,
    /// Run time at the latest statistics (ns).
    pub elapsed_ns: u64,
    /// Cumulative histogram counts (not serialised here; outputs pick).
    #[serde(skip)]
    pub hist: Vec<u64>,
}

fn figures(label: String, layout: &Layout, hist: Vec<u64>, t: Totals) -> Summary {
    let mean = (t.count > 0).then(|| t.sum as f64 / t.count as f64);
    let quantiles = QUANTILES
        .iter()
        .map(|(q, n)| (n.to_string(), quantile(layout, &hist, *q, t.max)))
        .collect::<Vec<_>>();
    let has = hist.iter().any(|&c| c > 0);
    let sp = spread(layout, &hist, mean.unwrap_or(0.0), t.min, t.max);
    Summary {
        label,
        thread: None,
        cpu: None,
        priority: None,
        interval_ns: None,
        cycles: t.cycles,
        count: t.count,
        min_ns: (t.count > 0).then_some(t.min),
        avg_ns: mean,
        max_ns: (t.count > 0).then_some(t.max),
        median_ns: quantiles.first().and_then(|(_, v)| *v),
        quantiles,
        mode_ns: has.then_some(sp.mode_ns),
        mad_ns: sp.mad,
        stddev_ns: sqrt(sp.variance),
        missed: t.missed,
        early: t.early,
        minflt: t.minflt,
        majflt: t.majflt,
        dropped: t.dropped,
        spikes: t.spikes,
        exact: t.exact,
        epoch: t.epoch,
        elapsed_ns: t.elapsed_ns,
        hist,
    }
}

#[derive(Debug, Clone, Copy)]
struct Totals {
    cycles: u64,
    count: u64,
    sum: u64,
    min: u64,
    max: u64,
    missed: u64,
    early: u64,
    minflt: u64,
    majflt: u64,
    dropped: u64,
    spikes: u64,
    exact: bool,
    epoch: u32,
    elapsed_ns: u64,
}

impl Totals {
    fn of(t: &ThreadAgg) -> Totals {
        let s = t.stats().unwrap_or_default();
        Totals {
            cycles: s.cycles,
            count: s.count,
            sum: s.sum,
            min: if s.count == 0 { u64::MAX } else { s.min },
            max: s.max,
            missed: s.missed,
            early: s.early,
            minflt: s.minflt,
            majflt: s.majflt,
            dropped: s.dropped,
            spikes: t.spikes.total,
            exact: t.exact_now(),
            epoch: s.epoch,
            elapsed_ns: s.elapsed_ns,
        }
    }

    fn merge(&mut self, o: &Totals) {
        self.cycles = self.cycles.saturating_add(o.cycles);
        self.count = self.count.saturating_add(o.count);
        self.sum = self.sum.saturating_add(o.sum);
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.missed += o.missed;
        self.early += o.early;
        self.minflt += o.minflt;
        self.majflt += o.majflt;
        self.dropped += o.dropped;
        self.spikes += o.spikes;
        self.exact &= o.exact;
        self.epoch = self.epoch.max(o.epoch);
        self.elapsed_ns = self.elapsed_ns.max(o.elapsed_ns);
    }
}

/// Per-thread summaries of a run (threads that sent statistics), and the
/// all-CPU summary.
pub(crate) fn summarize(run: &Run) -> (Vec<Summary>, Summary) {
    let mut per = Vec::new();
    let mut all_hist = vec![0u64; run.layout.len()];
    let mut all: Option<Totals> = None;
    for (i, t) in run.threads.iter().enumerate() {
        if t.stats().is_none() && t.hist_total() == 0 {
            continue;
        }
        let tot = Totals::of(t);
        let hist = t.hist();
        for (a, &c) in all_hist.iter_mut().zip(&hist) {
            *a = a.saturating_add(c);
        }
        match &mut all {
            Some(a) => a.merge(&tot),
            None => all = Some(tot),
        }
        let mut s = figures(format!("T{i}"), &run.layout, hist, tot);
        s.thread = Some(i as u16);
        if let Some(info) = t.info {
            s.cpu = info.cpu;
            s.priority = Some(info.priority);
            s.interval_ns = Some(info.interval_ns);
        }
        per.push(s);
    }
    let all = all.unwrap_or(Totals {
        cycles: 0,
        count: 0,
        sum: 0,
        min: u64::MAX,
        max: 0,
        missed: 0,
        early: 0,
        minflt: 0,
        majflt: 0,
        dropped: 0,
        spikes: 0,
        exact: false,
        epoch: 0,
        elapsed_ns: 0,
    });
    let all = figures("all".into(), &run.layout, all_hist, all);
    (per, all)
}

/// `ns` as µs with one decimal.
pub(crate) fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

/// An optional `ns` as µs, or `-`.
pub(crate) fn us_opt(ns: Option<u64>) -> String {
    ns.map(us).unwrap_or_else(|| "-".into())
}

/// An optional mean in ns as µs with one decimal, or `-`.
pub(crate) fn avg_us(ns: Option<f64>) -> String {
    ns.map(|a| format!("{:.1}", a / 1000.0))
        .unwrap_or_else(|| "-".into())
}

/// An optional value (a CPU, a priority), or `-`.
pub(crate) fn or_dash<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".into())
}

/// The quantiles of the timerlat histograms the reports show.
pub(crate) const TIMERLAT_QUANTILES: [(Ppm, &str); 3] =
    [(Ppm::P50, "p50"), (Ppm::P99, "p99"), (Ppm::P999, "p99.9")];

/// One context of a thread's timerlat histograms (protocol version 6).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TimerlatContextSummary {
    /// `irq`, `thread` or `user-ret`.
    pub context: &'static str,
    /// Entries in the histogram.
    pub count: u64,
    /// Their sum (ns).
    pub sum_ns: u64,
    /// Smallest (ns).
    pub min_ns: Option<u64>,
    /// Mean (ns).
    pub avg_ns: Option<f64>,
    /// Largest (ns), exact.
    pub max_ns: Option<u64>,
    /// p50, p99, p99.9 (ns, bucket upper edges capped by the max).
    pub quantiles: Vec<(String, Option<u64>)>,
    /// Entries the trace lost.
    pub lost: u64,
    /// Whether the histogram is exact as of the latest figures.
    pub exact: bool,
    /// Cumulative counts (not serialised here; outputs pick).
    #[serde(skip)]
    pub hist: Vec<u64>,
}

/// A thread's timerlat figures: its CPU's periods, how their entries
/// paired, and each context's histogram.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TimerlatSummary {
    /// `"T0"`..
    #[serde(skip)]
    pub label: String,
    /// Thread index.
    pub thread: u16,
    /// CPU it was pinned to.
    pub cpu: Option<u16>,
    /// Report number of the latest figures.
    pub epoch: u32,
    /// Whether they are the final report's.
    pub last_report: bool,
    /// Periods the IRQ context saw, read or lost.
    pub periods: u64,
    /// Thread entries whose period's IRQ entry was read.
    pub paired: u64,
    /// Of those, with the IRQ latency above the thread's (a defect).
    pub inverted: u64,
    /// Pages whose entries did not decode to the end.
    pub unreadable_pages: u64,
    /// Entries the trace lost, in all contexts.
    pub lost: u64,
    /// Each context's figures, in the kernel's order.
    pub contexts: Vec<TimerlatContextSummary>,
}

/// The timerlat figures of every thread of `run` that has them.
pub(crate) fn timerlat_summaries(run: &Run) -> Vec<TimerlatSummary> {
    let mut out = Vec::new();
    for (i, t) in run.threads.iter().enumerate() {
        let Some(s) = t.timerlat_stats() else {
            continue;
        };
        let contexts = Context::ALL
            .iter()
            .map(|&c| {
                let f = s.figures(c);
                let hist = t.timerlat_hist(c);
                let has = f.count > 0;
                TimerlatContextSummary {
                    context: c.label(),
                    count: f.count,
                    sum_ns: f.sum,
                    min_ns: has.then_some(f.min),
                    avg_ns: has.then(|| f.sum as f64 / f.count as f64),
                    max_ns: has.then_some(f.max),
                    quantiles: TIMERLAT_QUANTILES
                        .iter()
                        .map(|(q, n)| (n.to_string(), quantile(&run.layout, &hist, *q, f.max)))
                        .collect(),
                    lost: f.lost,
                    exact: t.timerlat_exact_now(c),
                    hist,
                }
            })
            .collect();
        out.push(TimerlatSummary {
            label: format!("T{i}"),
            thread: i as u16,
            cpu: t.info.and_then(|x| x.cpu),
            epoch: s.epoch,
            last_report: s.last_report,
            periods: s.periods(),
            paired: s.paired,
            inverted: s.inverted,
            unreadable_pages: s.unreadable_pages,
            lost: s.lost(),
            contexts,
        });
    }
    out
}
