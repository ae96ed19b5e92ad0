//! What became of each thread's spikes: sent as a record, explained, only
//! counted (aggregated: the link had no room), or dropped (the measuring
//! thread's queue was full). Per report interval and over the run, so that
//! every spike not sent is counted, on the target and in the stream.

/// One thread's spike accounts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// This interval.
    pub interval: Counts,
    /// Since the start.
    pub total: Counts,
    /// The largest spike sent as a record this interval (ns; -1: none).
    pub worst_sent: i64,
    /// The largest spike explained this interval (ns; -1: none).
    pub worst_explained: i64,
}

/// Spike counts of one span.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Spikes sent as a record.
    pub sent: u64,
    /// Of those, explained.
    pub explained: u64,
    /// Spikes the sender took from the queue but did not send.
    pub aggregated: u64,
}

impl Tally {
    /// A thread before its first spike.
    pub const fn new() -> Tally {
        Tally {
            interval: Counts {
                sent: 0,
                explained: 0,
                aggregated: 0,
            },
            total: Counts {
                sent: 0,
                explained: 0,
                aggregated: 0,
            },
            worst_sent: -1,
            worst_explained: -1,
        }
    }

    /// Whether a spike of `latency_ns` is worse than any sent this interval.
    pub fn worst_yet(&self, latency_ns: i64) -> bool {
        latency_ns > self.worst_sent
    }

    /// Whether a spike of `latency_ns` is worse than any explained this
    /// interval.
    pub fn worst_unexplained(&self, latency_ns: i64) -> bool {
        latency_ns > self.worst_explained
    }

    /// A spike sent as a record.
    pub fn sent(&mut self, latency_ns: i64) {
        self.interval.sent += 1;
        self.total.sent += 1;
        self.worst_sent = self.worst_sent.max(latency_ns);
    }

    /// The spike just sent, explained.
    pub fn explained(&mut self, latency_ns: i64) {
        self.interval.explained += 1;
        self.total.explained += 1;
        self.worst_explained = self.worst_explained.max(latency_ns);
    }

    /// A spike only counted.
    pub fn aggregated(&mut self) {
        self.interval.aggregated += 1;
        self.total.aggregated += 1;
    }

    /// A new interval: its counts from zero, and any spike is its worst.
    pub fn next_interval(&mut self) {
        self.interval = Counts::default();
        self.worst_sent = -1;
        self.worst_explained = -1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_is_per_interval_and_totals_run_on() {
        let mut t = Tally::new();
        assert!(t.worst_yet(0) && t.worst_unexplained(0));
        t.sent(500);
        t.explained(500);
        t.aggregated();
        assert!(!t.worst_yet(400) && t.worst_yet(501));
        assert!(!t.worst_unexplained(500) && t.worst_unexplained(501));
        t.next_interval();
        assert!(t.worst_yet(1) && t.worst_unexplained(1));
        assert_eq!(t.interval, Counts::default());
        let want = Counts {
            sent: 1,
            explained: 1,
            aggregated: 1,
        };
        assert_eq!(t.total, want);
    }
}
