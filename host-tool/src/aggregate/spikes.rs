//! A bounded list of one thread's spike records: the largest, the first
//! `--spike` ones (as the target prints them), and the cycle numbers of
//! the first histogram-range overflows.

use latscope_core::cyclictest::{is_spike, SPIKE_NODES};
use latscope_core::wire::SpikeSample;

use crate::budget::LIST_STEP;

/// Spike records kept for reports, in bounded memory.
#[derive(Debug, Clone)]
pub(crate) struct SpikeList {
    /// Records received.
    pub total: u64,
    /// The largest records by latency, largest first.
    pub largest: Vec<SpikeSample>,
    /// Cycle numbers of the first records flagged as overflows.
    pub overflow_cycles: Vec<u64>,
    /// Records flagged as overflows.
    pub overflows: u64,
    /// The first records over the run's `--spike` threshold, in arrival
    /// order (at most [`SPIKE_NODES`], as the target keeps them).
    pub spike_lines: Vec<SpikeSample>,
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
    pub(crate) fn new(keep: usize, overflow_keep: usize, spike_ns: u64) -> Self {
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

    /// The bytes the lists must grow by to keep `r`: a step of [`LIST_STEP`]
    /// entries of each full list that keeps it (0: no growth).
    pub(crate) fn growth(&self, r: &SpikeSample) -> usize {
        let mut bytes = 0;
        if r.flags.overflow && grows(&self.overflow_cycles, self.overflow_keep) {
            bytes += LIST_STEP * std::mem::size_of::<u64>();
        }
        if is_spike(r, self.spike_ns) && grows(&self.spike_lines, SPIKE_NODES) {
            bytes += LIST_STEP * std::mem::size_of::<SpikeSample>();
        }
        bytes
    }

    /// Account one record; with `room` false, full lists are not grown
    /// for it ([`SpikeList::growth`]), and it is only counted there.
    pub(crate) fn push(&mut self, r: &SpikeSample, room: bool) {
        self.total += 1;
        if r.flags.overflow {
            self.overflows += 1;
            keep(&mut self.overflow_cycles, self.overflow_keep, r.cycle, room);
        }
        if is_spike(r, self.spike_ns) {
            self.spike_total += 1;
            keep(&mut self.spike_lines, SPIKE_NODES, *r, room);
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

/// Whether `v`, kept to `limit` entries, must grow to take one more.
fn grows<T>(v: &Vec<T>, limit: usize) -> bool {
    v.len() < limit && v.len() == v.capacity()
}

/// Append `x` to `v` if it has fewer than `limit` entries, growing it by
/// [`LIST_STEP`] entries when full and `room` allows.
fn keep<T>(v: &mut Vec<T>, limit: usize, x: T, room: bool) {
    if grows(v, limit) {
        if !room {
            return;
        }
        v.reserve_exact(LIST_STEP);
    }
    if v.len() < limit {
        v.push(x);
    }
}
