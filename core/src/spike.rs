//! A bounded spike log: the first `N` and the largest `N` spikes.
//!
//! The measuring thread only flags a spike and queues its record; the
//! reader (sender thread or host) keeps this log. Records that could not be
//! kept are counted, never dropped silently.

use heapless::Vec;

use crate::wire::SpikeRecord;

/// The first `N` and the largest `N` spike records seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpikeLog<const N: usize> {
    first: Vec<SpikeRecord, N>,
    largest: Vec<SpikeRecord, N>,
    seen: u64,
}

impl<const N: usize> SpikeLog<N> {
    /// An empty log.
    pub const fn new() -> Self {
        SpikeLog {
            first: Vec::new(),
            largest: Vec::new(),
            seen: 0,
        }
    }

    /// Account one spike.
    pub fn add(&mut self, s: SpikeRecord) {
        self.seen = self.seen.saturating_add(1);
        let _ = self.first.push(s);
        if self.largest.push(s).is_err() {
            // replace the smallest kept one if this one is larger
            let smallest = self.largest.iter_mut().min_by_key(|r| r.latency_ns);
            if let Some(slot) = smallest {
                if s.latency_ns > slot.latency_ns {
                    *slot = s;
                }
            }
        }
    }

    /// The first spikes, in arrival order.
    pub fn first(&self) -> &[SpikeRecord] {
        &self.first
    }

    /// The largest spikes, largest first.
    pub fn largest(&mut self) -> &[SpikeRecord] {
        self.largest
            .sort_unstable_by(|a, b| b.latency_ns.cmp(&a.latency_ns).then(a.cycle.cmp(&b.cycle)));
        &self.largest
    }

    /// All spikes seen, kept or not.
    pub const fn seen(&self) -> u64 {
        self.seen
    }
}

impl<const N: usize> Default for SpikeLog<N> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::SpikeFlags;

    fn rec(cycle: u64, lat: i64) -> SpikeRecord {
        SpikeRecord {
            thread: 0,
            cycle,
            deadline_ns: cycle as i64 * 1_000_000,
            latency_ns: lat,
            missed: 0,
            flags: SpikeFlags {
                spike: true,
                ..SpikeFlags::default()
            },
        }
    }

    #[test]
    fn keeps_first_and_largest() {
        let mut log = SpikeLog::<3>::new();
        for (c, l) in [(1, 50), (2, 10), (3, 70), (4, 20), (5, 90), (6, 60)] {
            log.add(rec(c, l));
        }
        assert_eq!(log.seen(), 6);
        let first: heapless::Vec<u64, 3> = log.first().iter().map(|r| r.cycle).collect();
        assert_eq!(&first[..], &[1, 2, 3]);
        let largest: heapless::Vec<i64, 3> = log.largest().iter().map(|r| r.latency_ns).collect();
        assert_eq!(&largest[..], &[90, 70, 60]);
    }
}
