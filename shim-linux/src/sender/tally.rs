//! What became of each thread's spikes: sent on its own, explained, only
//! counted (aggregated: the link had no room), or dropped (the measuring
//! thread's queue was full). Per report interval and over the run, so that
//! every spike not sent is counted, on the target and in the stream (an
//! [`Aggregate`] per thread and report).

use latscope_core::wire::{Aggregate, SpikeSample};

/// What a report's aggregate takes from the measuring thread's exact count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Exact {
    /// Spikes so far.
    pub spikes: u64,
    /// Spike samples the queue lost so far.
    pub dropped: u64,
    /// The interval's largest spike: latency (ns) and cycle.
    pub peak: Option<(u64, u64)>,
}

/// One thread's spike accounts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// This interval.
    pub interval: Counts,
    /// Since the start.
    pub total: Counts,
    /// The largest spike sent on its own this interval (ns; -1: none).
    pub worst_sent: i64,
    /// The largest spike explained this interval (ns; -1: none).
    pub worst_explained: i64,
    /// The exact count as of the last report.
    last: Exact,
    /// The largest spike samples taken from the queue this interval and the one
    /// before (their deadlines, for the aggregate's largest spike). Several:
    /// a spike sample of an earlier interval taken late may be larger than this
    /// interval's largest.
    seen: [Seen; 2],
    /// The cycle of the last interval's largest spike if its sample was
    /// still in the queue at the report: it is sent and explained when it
    /// comes.
    awaited: Option<u64>,
}

/// How many of an interval's largest spike samples the tally keeps.
const SEEN: usize = 8;

/// An interval's largest spike samples taken, in no order.
type Seen = [Option<Kept>; SEEN];

/// A spike sample kept, and whether it was sent and explained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Kept {
    r: SpikeSample,
    sent: bool,
    explained: bool,
}

/// Spike counts of one span.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Spikes sent on their own.
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
            last: Exact {
                spikes: 0,
                dropped: 0,
                peak: None,
            },
            seen: [[None; SEEN]; 2],
            awaited: None,
        }
    }

    /// A spike sample taken from the queue.
    pub fn seen(&mut self, r: &SpikeSample) {
        let smallest = self.seen[0]
            .iter_mut()
            .min_by_key(|s| s.map_or(i64::MIN, |s| s.r.latency_ns));
        if let Some(s) = smallest.filter(|s| s.is_none_or(|s| s.r.latency_ns < r.latency_ns)) {
            *s = Some(Kept {
                r: *r,
                sent: false,
                explained: false,
            });
        }
    }

    /// The kept slot of this interval's spike sample `r`, if kept.
    fn slot(&mut self, r: &SpikeSample) -> Option<&mut Kept> {
        self.seen[0]
            .iter_mut()
            .flatten()
            .find(|k| k.r.cycle == r.cycle)
    }

    /// The spike sample of `cycle` among those kept, this interval's only or the
    /// one before's too.
    fn kept(&self, cycle: u64, before_too: bool) -> Option<Kept> {
        let spans = if before_too {
            &self.seen[..]
        } else {
            &self.seen[..1]
        };
        spans
            .iter()
            .flatten()
            .flatten()
            .find(|k| k.r.cycle == cycle)
            .copied()
    }

    /// The aggregate of the interval that ends with report `epoch` of
    /// thread `thread`, from the exact count `now`; then a new interval
    /// starts. `last`: the final report's.
    pub fn aggregate(&mut self, thread: u16, epoch: u32, now: Exact, last: bool) -> Aggregate {
        let (max_ns, max_cycle) = now.peak.unwrap_or((0, 0));
        let max_deadline_ns = now
            .peak
            .and_then(|_| self.kept(max_cycle, true))
            .map_or(0, |k| k.r.deadline_ns);
        let t = &self.total;
        let a = Aggregate {
            thread,
            epoch,
            above: now.spikes.saturating_sub(self.last.spikes),
            max_ns,
            max_cycle,
            max_deadline_ns,
            sent: self.interval.sent,
            explained: self.interval.explained,
            aggregated: self.interval.aggregated,
            dropped: now.dropped.saturating_sub(self.last.dropped),
            spikes: now.spikes,
            spikes_sent: t.sent,
            spikes_explained: t.explained,
            spikes_aggregated: t.aggregated,
            spikes_dropped: now.dropped,
            queued: now
                .spikes
                .saturating_sub(t.sent + t.aggregated + now.dropped),
            last_report: last,
        };
        self.last = now;
        self.seen = [[None; SEEN], self.seen[0]];
        self.next_interval();
        a
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

    /// A spike sent on its own.
    pub fn sent(&mut self, r: &SpikeSample) {
        self.interval.sent += 1;
        self.total.sent += 1;
        self.worst_sent = self.worst_sent.max(r.latency_ns);
        if let Some(k) = self.slot(r) {
            k.sent = true;
        }
    }

    /// The spike just sent, explained.
    pub fn explained(&mut self, r: &SpikeSample) {
        self.interval.explained += 1;
        self.total.explained += 1;
        self.worst_explained = self.worst_explained.max(r.latency_ns);
        if let Some(k) = self.slot(r) {
            k.explained = true;
        }
    }

    /// The interval's largest spike (`peak`: its latency and cycle), if
    /// the sender took its spike sample from the queue and did not explain it:
    /// the spike sample, and whether it was sent. By the sample itself, not by
    /// latency: a larger spike sample of an earlier interval, taken late and
    /// explained, does not stand for it.
    pub fn peak_unexplained(&self, peak: Option<(u64, u64)>) -> Option<(SpikeSample, bool)> {
        let (_, cycle) = peak?;
        let k = self.kept(cycle, false)?;
        (!k.explained).then_some((k.r, k.sent))
    }

    /// A spike only counted this interval, sent after all (as its
    /// interval's largest, to be explained).
    pub fn sent_after_all(&mut self, r: &SpikeSample) {
        self.interval.aggregated = self.interval.aggregated.saturating_sub(1);
        self.total.aggregated = self.total.aggregated.saturating_sub(1);
        self.sent(r);
    }

    /// At a report: the interval's largest spike (`peak`: its latency and
    /// cycle) is awaited if the sender has not taken its spike sample yet, so
    /// that it is explained when it comes. A peak awaited before and never
    /// taken (its spike sample lost to a full queue, which is counted) is
    /// forgotten.
    pub fn await_peak(&mut self, peak: Option<(u64, u64)>) {
        self.awaited = peak
            .map(|(_, cycle)| cycle)
            .filter(|&c| self.kept(c, true).is_none());
    }

    /// Whether `r` is the sample of an earlier interval's largest spike
    /// that came after that interval's report (then no longer awaited).
    pub fn take_awaited(&mut self, r: &SpikeSample) -> bool {
        let late = self.awaited == Some(r.cycle);
        if late {
            self.awaited = None;
        }
        late
    }

    /// An earlier interval's largest spike, sent late: in this interval's
    /// counts, but not its worst, which is still to come.
    pub fn sent_late(&mut self) {
        self.interval.sent += 1;
        self.total.sent += 1;
    }

    /// [`Tally::sent_late`], and explained.
    pub fn sent_and_explained_late(&mut self) {
        self.sent_late();
        self.interval.explained += 1;
        self.total.explained += 1;
    }

    /// A spike only counted.
    pub fn aggregated(&mut self) {
        self.interval.aggregated += 1;
        self.total.aggregated += 1;
    }

    /// A new interval: its counts from zero, and any spike is its worst.
    fn next_interval(&mut self) {
        self.interval = Counts::default();
        self.worst_sent = -1;
        self.worst_explained = -1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_core::wire::SpikeFlags;

    fn spike(cycle: u64, latency_ns: i64) -> SpikeSample {
        SpikeSample {
            thread: 0,
            cycle,
            deadline_ns: cycle as i64 * 1_000,
            latency_ns,
            missed: 0,
            flags: SpikeFlags {
                spike: true,
                overflow: false,
                brk: false,
            },
        }
    }

    #[test]
    fn an_aggregate_accounts_for_every_spike() {
        let mut t = Tally::new();
        for (c, lat) in [(1, 300), (2, 900), (3, 400)] {
            t.seen(&spike(c, lat));
        }
        t.sent(&spike(2, 900));
        t.explained(&spike(2, 900));
        t.aggregated();
        // five spikes: two queued spike samples lost, three taken
        let now = Exact {
            spikes: 5,
            dropped: 2,
            peak: Some((900, 2)),
        };
        let a = t.aggregate(0, 1, now, false);
        assert!(a.is_consistent(), "{a:?}");
        assert_eq!(
            (a.above, a.max_ns, a.max_cycle, a.max_deadline_ns),
            (5, 900, 2, 2_000)
        );
        assert_eq!((a.sent, a.explained, a.aggregated, a.dropped), (1, 1, 1, 2));
        assert_eq!(a.queued, 1);
        // the next interval: the one left in the queue is aggregated
        t.aggregated();
        let now = Exact { peak: None, ..now };
        let b = t.aggregate(0, 2, now, true);
        assert!(b.is_consistent() && b.last_report, "{b:?}");
        assert_eq!(
            (b.above, b.max_ns, b.aggregated, b.dropped, b.queued),
            (0, 0, 1, 0, 0)
        );
        assert_eq!(b.spikes_aggregated, 2);
    }

    #[test]
    fn the_worst_is_per_interval_and_totals_run_on() {
        let mut t = Tally::new();
        assert!(t.worst_yet(0) && t.worst_unexplained(0));
        t.sent(&spike(1, 500));
        t.explained(&spike(1, 500));
        t.aggregated();
        assert!(!t.worst_yet(400) && t.worst_yet(501));
        assert!(!t.worst_unexplained(500) && t.worst_unexplained(501));
        let _ = t.aggregate(0, 1, Exact::default(), false);
        assert!(t.worst_yet(1) && t.worst_unexplained(1));
        assert_eq!(t.interval, Counts::default());
        let want = Counts {
            sent: 1,
            explained: 1,
            aggregated: 1,
        };
        assert_eq!(t.total, want);
    }

    #[test]
    fn an_intervals_worst_not_sent_or_not_explained_is_found_and_counted_once() {
        let mut t = Tally::new();
        // 900 came when the line had no room: only counted
        t.seen(&spike(1, 300));
        t.sent(&spike(1, 300));
        t.explained(&spike(1, 300));
        t.seen(&spike(2, 900));
        t.aggregated();
        assert_eq!(t.peak_unexplained(None), None);
        assert_eq!(t.peak_unexplained(Some((900, 3))), None, "another cycle");
        let (r, sent) = t.peak_unexplained(Some((900, 2))).expect("the worst");
        assert_eq!((r.cycle, sent), (2, false));
        // sent and explained at the report: moved from aggregated to sent
        t.sent_after_all(&r);
        t.explained(&r);
        assert_eq!(t.peak_unexplained(Some((900, 2))), None);
        let now = Exact {
            spikes: 2,
            dropped: 0,
            peak: Some((900, 2)),
        };
        let a = t.aggregate(0, 1, now, false);
        assert!(a.is_consistent(), "{a:?}");
        assert_eq!((a.sent, a.explained, a.aggregated, a.queued), (2, 2, 0, 0));
        // sent but not explained: explained only
        t.seen(&spike(3, 700));
        t.sent(&spike(3, 700));
        assert_eq!(t.peak_unexplained(Some((700, 3))).map(|p| p.1), Some(true));
    }

    #[test]
    fn a_worst_whose_record_comes_after_its_report_is_awaited() {
        let mut t = Tally::new();
        t.seen(&spike(1, 300));
        t.sent(&spike(1, 300));
        t.explained(&spike(1, 300));
        // the report: the peak, cycle 2, is still in the queue
        t.await_peak(Some((900, 2)));
        let _ = t.aggregate(0, 1, Exact::default(), false);
        assert!(!t.take_awaited(&spike(3, 900)), "another cycle");
        assert!(t.take_awaited(&spike(2, 900)));
        assert!(!t.take_awaited(&spike(2, 900)), "taken once");
        // counted, but the new interval's worst is still to come
        t.sent_and_explained_late();
        assert_eq!((t.interval.sent, t.interval.explained), (1, 1));
        assert!(t.worst_yet(1) && t.worst_unexplained(1));
        // a peak whose spike sample was taken is not awaited
        t.seen(&spike(4, 500));
        t.await_peak(Some((500, 4)));
        assert!(!t.take_awaited(&spike(4, 500)));
        t.await_peak(None);
        assert!(!t.take_awaited(&spike(5, 1)));
    }

    #[test]
    fn a_larger_record_of_an_earlier_interval_does_not_hide_the_worst() {
        let mut t = Tally::new();
        // taken this interval: two late spike samples of the last one, larger
        // than this interval's worst (cycle 30), and smaller ones
        for (c, lat) in [(10, 3_900), (11, 1_700), (30, 1_600), (31, 200), (32, 300)] {
            t.seen(&spike(c, lat));
        }
        t.aggregated();
        // the late 3,900 sent and explained: it does not stand for the
        // interval's worst, which is neither
        t.sent(&spike(10, 3_900));
        t.explained(&spike(10, 3_900));
        let (r, sent) = t.peak_unexplained(Some((1_600, 30))).expect("kept");
        assert_eq!((r.cycle, sent), (30, false));
        t.await_peak(Some((1_600, 30)));
        assert!(!t.take_awaited(&spike(30, 1_600)), "taken, not awaited");
        let a = t.aggregate(
            0,
            1,
            Exact {
                spikes: 5,
                dropped: 0,
                peak: Some((1_600, 30)),
            },
            false,
        );
        assert_eq!(a.max_deadline_ns, 30_000);
        // only the SEEN largest are kept
        for c in 100..100 + SEEN as u64 + 1 {
            t.seen(&spike(c, 5_000 + c as i64));
        }
        assert!(t.kept(100, false).is_none() && t.kept(101, false).is_some());
    }
}
