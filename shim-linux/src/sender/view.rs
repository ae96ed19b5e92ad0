//! What the sender keeps about one measuring thread between reports.

use std::sync::atomic::Ordering;

use latscope_core::cyclictest::Thread;
use latscope_core::layout::Layout;
use latscope_core::protocol::SideCounts;
use latscope_core::seqlock::Counters;
use latscope_core::slo::{Exceedances, Goals};
use latscope_core::wire::SpikeSample;

use crate::config::ThreadPlan;
use crate::error::Error;
use crate::linux::procfs::{self, Faults};
use crate::rt::{touched, Log, Phase, Shared, Snap};

/// Snapshot retries (the writer holds its section for a few dozen ns).
const TRIES: u32 = 100_000;

/// What the sender keeps about one measuring thread.
pub struct View {
    /// The snapshot being taken.
    pub cur: Snap,
    /// What the stream's reports keep: the counters of the last report,
    /// the cumulative histogram (u64) and statistics as of then.
    pub log: Log,
    /// The latest statistics (of the last report, or fresher for the live
    /// view).
    pub counters: Counters,
    /// Faults since measuring started.
    pub faults: Faults,
    /// Spike samples dropped by the measuring thread.
    pub dropped: u64,
    /// Cycle numbers (from 0) of the first `-h` overflows.
    pub overflow_cycles: Vec<u64>,
    /// `--spike` samples kept for the end.
    pub spikes: Vec<SpikeSample>,
    /// All `--spike` samples seen.
    pub spikes_total: u64,
    /// `/proc/self/task/TID/stat` of the thread.
    pub stat_path: String,
    /// With `--slo`: the samples above each quantile goal's limit, block by
    /// block, and the cumulative histogram as of the last block.
    pub exceedances: Option<(Exceedances, Box<[u64]>)>,
}

impl View {
    /// Fresh view of thread `index` for a shared histogram of `layout`; its copies
    /// are sized by the layout and lists by what the run asked for (`-h`
    /// overflows, `spikes` `--spike` lines), all prefaulted, so nothing grows later.
    pub fn new(
        index: usize,
        tid: i32,
        layout: Layout,
        hist_us: u32,
        spikes: usize,
        goals: Option<&Goals>,
    ) -> Result<View, Error> {
        let n = layout.len();
        Ok(View {
            cur: Snap::with_buckets(touched(n)),
            log: Log::with_memory(index as u16, layout, touched(n), touched(n))?,
            counters: Counters::ZERO,
            faults: Faults::default(),
            dropped: 0,
            overflow_cycles: Vec::with_capacity(hist_us as usize),
            spikes: Vec::with_capacity(spikes),
            spikes_total: 0,
            stat_path: format!("/proc/self/task/{tid}/stat"),
            exceedances: goals.map(|g| (Exceedances::for_goals(g), touched(n))),
        })
    }

    /// After a report: the samples its delta added (none after a lean
    /// report: the next delta holds them), counted above the goals'
    /// limits as block `epoch`.
    pub fn count_exceedances(&mut self, epoch: u32) {
        let Some((exc, seen)) = self.exceedances.as_mut() else {
            return;
        };
        let hist = self.log.hist();
        let layout = *hist.layout();
        for (i, (&now, was)) in hist.counts().iter().zip(seen.iter_mut()).enumerate() {
            if now != *was {
                exc.add(epoch, &layout, i, now.wrapping_sub(*was));
                *was = now;
            }
        }
    }

    /// The formatter's view of this thread (`plan` as it turned out, `node`
    /// as cyclictest reports it).
    pub fn thread<'a>(
        &'a self,
        index: usize,
        plan: &ThreadPlan,
        tid: i32,
        node: i32,
    ) -> Thread<'a> {
        Thread {
            index: index as u16,
            tid,
            priority: plan.priority,
            interval_us: plan.interval_us,
            cpu: plan.cpu.map_or(-1, |c| c as i32),
            node: if plan.cpu.is_some() { node } else { -1 },
            counters: self.counters,
            minflt: self.faults.minflt,
            majflt: self.faults.majflt,
            dropped: self.dropped,
            hist: self.log.hist().counts(),
            overflow_cycles: &self.overflow_cycles,
        }
    }

    /// Take a seqlock snapshot of the thread's shared histogram into `cur`. `false` if the
    /// writer held its section too long (the previous figures stay rather
    /// than a torn copy).
    pub fn snapshot(&mut self, shared: &Shared) -> bool {
        shared.hist.snapshot(&mut self.cur, TRIES).is_ok()
    }

    /// Faults since the baseline, and the spike samples the thread dropped.
    pub fn update_losses(&mut self, shared: &Shared) {
        if let Some(f) = procfs::thread_faults(&self.stat_path) {
            let base = shared
                .faults_at_start
                .lock()
                .map(|g| *g)
                .unwrap_or_default();
            // Before measuring starts the baseline is 0: report 0.
            if shared.phase.get() >= Phase::Measuring {
                self.faults = Faults {
                    minflt: f.minflt.saturating_sub(base.minflt),
                    majflt: f.majflt.saturating_sub(base.majflt),
                };
            }
        }
        self.dropped = shared.dropped.load(Ordering::Relaxed);
    }

    /// The figures a report needs beside the shared histogram.
    pub fn extra(&self) -> SideCounts {
        SideCounts {
            minflt: self.faults.minflt,
            majflt: self.faults.majflt,
            dropped: self.dropped,
        }
    }
}
