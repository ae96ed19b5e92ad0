//! A bounded list of one thread's spike records: the largest, the first
//! `--spike` ones (as the target prints them), and the cycle numbers of
//! the first histogram-range overflows.

use latscope_core::cyclictest::{is_spike, SPIKE_NODES};
use latscope_core::wire::SpikeRecord;

/// Spike records kept for reports, in bounded memory.
#[derive(Debug, Clone)]
pub struct SpikeList {
    /// Records received.
    pub total: u64,
    /// The largest records by latency, largest first.
    pub largest: Vec<SpikeRecord>,
    /// Cycle numbers of the first records flagged as overflows.
    pub overflow_cycles: Vec<u64>,
    /// Records flagged as overflows.
    pub overflows: u64,
    /// The first records over the run's `--spike` threshold, in arrival
    /// order (at most [`SPIKE_NODES`], as the target keeps them).
    pub spike_lines: Vec<SpikeRecord>,
    /// Records over the `--spike` threshold.
    pub spike_total: u64,
    keep: usize,
    overflow_keep: usize,
    spike_ns: u64,
}

impl SpikeList {
    /// Keep the `keep` largest records, the first `overflow_keep`
    /// overflow cycle numbers and the first records over `spike_ns` (0:
    /// no `--spike`).
    pub fn new(keep: usize, overflow_keep: usize, spike_ns: u64) -> Self {
        SpikeList {
            total: 0,
            largest: Vec::new(),
            overflow_cycles: Vec::new(),
            overflows: 0,
            spike_lines: Vec::new(),
            spike_total: 0,
            keep,
            overflow_keep,
            spike_ns,
        }
    }

    /// Account one record.
    pub fn push(&mut self, r: &SpikeRecord) {
        self.total += 1;
        if r.flags.overflow {
            self.overflows += 1;
            if self.overflow_cycles.len() < self.overflow_keep {
                self.overflow_cycles.push(r.cycle);
            }
        }
        if is_spike(r, self.spike_ns) {
            self.spike_total += 1;
            if self.spike_lines.len() < SPIKE_NODES {
                self.spike_lines.push(*r);
            }
        }
        if self.largest.len() < self.keep
            || self
                .largest
                .last()
                .is_some_and(|l| r.latency_ns > l.latency_ns)
        {
            let at = self
                .largest
                .partition_point(|x| x.latency_ns >= r.latency_ns);
            self.largest.insert(at, *r);
            self.largest.truncate(self.keep);
        }
    }
}
