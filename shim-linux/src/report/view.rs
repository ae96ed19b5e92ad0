//! What the sender keeps about one measuring thread between reports.

use std::sync::atomic::Ordering;

use latscope_core::layout::DEFAULT_LINEAR_US;
use latscope_core::protocol::{Extra, ThreadLog};
use latscope_core::record::{Counters, Snapshot};
use latscope_core::wire::SpikeRecord;

use crate::config::ThreadPlan;
use crate::linux::procfs::{self, Faults};
use crate::output::text::Row;
use crate::rt::{Phase, Shared, N};

/// Snapshot retries (the writer holds its section for a few dozen ns).
const TRIES: u32 = 100_000;

/// What the sender keeps about one measuring thread.
pub struct View {
    /// The snapshot being taken.
    pub cur: Box<Snapshot<N>>,
    /// What the stream's reports keep: the counters of the last report,
    /// the cumulative histogram (u64) and statistics as of then.
    pub log: Box<ThreadLog<N>>,
    /// The latest statistics (of the last report, or fresher for the live
    /// view).
    pub counters: Counters,
    /// Faults since measuring started.
    pub faults: Faults,
    /// Spike records dropped by the measuring thread.
    pub dropped: u64,
    /// 1-based cycle numbers of the first `-h` overflows.
    pub overflow_cycles: Vec<u64>,
    /// `--spike` samples kept for the end.
    pub spikes: Vec<SpikeRecord>,
    /// All `--spike` samples seen.
    pub spikes_total: u64,
    /// `/proc/self/task/TID/stat` of the thread.
    pub stat_path: String,
}

impl View {
    /// Fresh view of thread `index`; lists are sized for what the run
    /// asked for (`-h` overflows, `spikes` `--spike` lines), so nothing
    /// grows later.
    pub fn new(index: usize, tid: i32, hist_us: u32, spikes: usize) -> View {
        View {
            cur: Box::new(Snapshot::new()),
            log: Box::new(ThreadLog::new(index as u16, DEFAULT_LINEAR_US)),
            counters: Counters::ZERO,
            faults: Faults::default(),
            dropped: 0,
            overflow_cycles: Vec::with_capacity(hist_us as usize),
            spikes: Vec::with_capacity(spikes),
            spikes_total: 0,
            stat_path: format!("/proc/self/task/{tid}/stat"),
        }
    }

    /// The formatter's view of this thread.
    pub fn row<'a>(&'a self, index: usize, plan: &ThreadPlan, tid: i32) -> Row<'a> {
        Row {
            index,
            tid,
            priority: plan.priority,
            interval_us: plan.interval_us,
            counters: &self.counters,
            hist: self.log.hist(),
            overflow_cycles: &self.overflow_cycles,
            faults: self.faults,
            dropped: self.dropped,
        }
    }

    /// Take a snapshot of the thread's record into `cur`. `false` if the
    /// writer held its section too long (the previous figures stay rather
    /// than a torn copy).
    pub fn snapshot(&mut self, shared: &Shared) -> bool {
        shared.rec.snapshot(&mut self.cur, TRIES).is_ok()
    }

    /// Faults since the baseline, and the spike records the thread dropped.
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

    /// The figures a report needs beside the record.
    pub fn extra(&self) -> Extra {
        Extra {
            minflt: self.faults.minflt,
            majflt: self.faults.majflt,
            dropped: self.dropped,
        }
    }
}
