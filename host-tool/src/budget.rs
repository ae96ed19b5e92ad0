//! The memory a stream may cost the host, from one number: the largest
//! run a latscope target can send, [`MAX_TARGET_BUCKETS`] buckets (the
//! widest legal layout: `MAX_LINEAR_US` linear, then the log part to 60 s)
//! for each of [`MAX_THREADS`] threads.
//!
//! Everything a stream's content makes the host keep is charged to a
//! `Budget` before it is allocated: a run's fixed parts and each
//! thread's bounded lists when they appear, and every page of bucket
//! counts when a bucket in it first gets a count. Budgets nest: a run's
//! (`RUN_LIMIT`, what the largest legal run costs) is part of its
//! stream's ([`STREAM_LIMIT`], two such runs), and in a recorder every
//! stream's is part of the recorder's (`GLOBAL_LIMIT`). A charge that
//! would pass any of them is refused: the run is not kept, or its
//! histograms are incomplete, and the report says so. What is charged is
//! given back when it is freed, so a run that ended and was reported
//! costs nothing.
//!
//! No legal run comes near its limit: a legal run costs at most
//! `RUN_LIMIT`, a typical one (a few threads, latencies in a few
//! hundred buckets) well under a megabyte.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use latscope_core::cyclictest::SPIKE_NODES;
use latscope_core::layout::{MAX_LINEAR_US, MAX_TARGET_BUCKETS};
use latscope_core::wire::{SpikeSample, MAX_THREADS};

/// Buckets per page of a thread's bucket counts.
pub(crate) const PAGE: usize = 64;
/// Bytes of one page.
pub(crate) const PAGE_BYTES: usize = PAGE * 8;
/// Pages of the widest legal layout.
pub(crate) const THREAD_PAGES: usize = MAX_TARGET_BUCKETS.div_ceil(PAGE);
/// A thread's fixed parts: its max-over-time points and largest spikes at
/// their fullest, and its own struct.
pub(crate) const THREAD_FIXED: usize = 112 * 1024;
/// Entries a thread's list of overflow cycle numbers or `--spike` records
/// grows by at a time; each step is charged before it is allocated.
pub(crate) const LIST_STEP: usize = 256;
/// A thread's growing lists at their fullest: the overflow cycle numbers
/// cyclictest prints (at most `-h`, so [`MAX_LINEAR_US`]) and the
/// [`SPIKE_NODES`] `--spike` records.
pub(crate) const THREAD_LISTS: usize = (MAX_LINEAR_US as usize).div_ceil(LIST_STEP) * LIST_STEP * 8
    + SPIKE_NODES.div_ceil(LIST_STEP) * LIST_STEP * std::mem::size_of::<SpikeSample>();
/// A thread's timerlat histograms' fixed parts (protocol version 6): their
/// assemblers and page tables. Their pages are charged as the thread's
/// are, to the same run budget, which [`RUN_LIMIT`] does not size for
/// them: a run of the timerlat mode whose four histograms per thread all
/// filled the widest layout would pass it (and be reported incomplete).
pub(crate) const TIMERLAT_FIXED: usize = 4 * 1024 + 3 * THREAD_PAGES * 8;
/// A run's fixed parts at their fullest (the hello, log lines, explained
/// spikes and cause totals, the thread table).
pub(crate) const RUN_FIXED: usize = 96 * 1024;
/// A recording's decoding before any run in it: the decoder and its
/// buffers.
pub(crate) const SESSION_FIXED: usize = 32 * 1024;
/// The most a legal run costs: every page of the widest legal layout for
/// every thread, with their page tables, fixed parts and full lists.
pub(crate) const RUN_LIMIT: usize =
    RUN_FIXED + MAX_THREADS * (THREAD_FIXED + THREAD_LISTS + THREAD_PAGES * (PAGE_BYTES + 8));
/// What one stream (a file, stdin, a serial line, one connection) may hold:
/// the largest legal run and a quarter of one more (typical runs before
/// it, of a target that restarted: a run of 64 threads that fills few
/// buckets costs 7 MiB). With the program, its buffers and the
/// allocator's slack, one stream stays under 64 MiB resident.
pub const STREAM_LIMIT: usize = RUN_LIMIT + RUN_LIMIT / 4 + 2 * SESSION_FIXED;
/// What all streams of a recorder may hold together: many boards' worth,
/// so that forged peers cannot exhaust the machine, while each stream's
/// own limit keeps one peer from taking it all.
pub(crate) const GLOBAL_LIMIT: usize = 32 * STREAM_LIMIT;

const _: () = assert!(RUN_LIMIT > MAX_TARGET_BUCKETS * MAX_THREADS * 8);
// 21 482 buckets of 64 threads: 10.5 MiB of counts, 31 MiB in all
const _: () = assert!(RUN_LIMIT < 32 << 20);
const _: () = assert!(STREAM_LIMIT < 40 << 20);

/// A memory budget: a limit, what is charged against it, and the budget
/// it is part of (a run's is part of its stream's, a recorder's stream's
/// part of the recorder's). A charge must fit every budget up the chain.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: usize,
    used: AtomicUsize,
    peak: AtomicUsize,
    refused: AtomicU64,
    parent: Option<Arc<Budget>>,
}

impl Budget {
    /// A stream's budget of [`STREAM_LIMIT`], alone (a file, stdin, a
    /// serial line).
    pub(crate) fn stream() -> Arc<Budget> {
        Budget::with_limit(STREAM_LIMIT, None)
    }

    /// A recorder's budget for all its streams, [`GLOBAL_LIMIT`].
    pub(crate) fn global() -> Arc<Budget> {
        Budget::with_limit(GLOBAL_LIMIT, None)
    }

    /// A stream's budget of [`STREAM_LIMIT`] inside a recorder's `global`
    /// budget.
    pub(crate) fn in_recorder(global: &Arc<Budget>) -> Arc<Budget> {
        Budget::with_limit(STREAM_LIMIT, Some(Arc::clone(global)))
    }

    /// A run's budget of [`RUN_LIMIT`] inside its stream's.
    pub(crate) fn run(stream: &Arc<Budget>) -> Arc<Budget> {
        Budget::with_limit(RUN_LIMIT, Some(Arc::clone(stream)))
    }

    /// A budget of `limit` bytes, inside `parent` if given.
    pub(crate) fn with_limit(limit: usize, parent: Option<Arc<Budget>>) -> Arc<Budget> {
        Arc::new(Budget {
            limit,
            used: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            parent,
        })
    }

    /// Charge `bytes`; `false` (and nothing charged) if that would pass
    /// this budget's limit or one it is part of.
    pub(crate) fn charge(&self, bytes: usize) -> bool {
        if !reserve(&self.used, bytes, self.limit) {
            self.count_refusal();
            return false;
        }
        if let Some(p) = &self.parent {
            if !p.charge(bytes) {
                self.used.fetch_sub(bytes, Ordering::Relaxed);
                self.refused.fetch_add(1, Ordering::Relaxed);
                return false;
            }
        }
        let now = self.used.load(Ordering::Relaxed);
        self.peak.fetch_max(now, Ordering::Relaxed);
        true
    }

    /// Count a refusal here and in every budget this one is part of.
    fn count_refusal(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        if let Some(p) = &self.parent {
            p.count_refusal();
        }
    }

    /// Give back `bytes` charged before.
    pub(crate) fn release(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
        if let Some(p) = &self.parent {
            p.release(bytes);
        }
    }

    /// Bytes charged now.
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// The most bytes charged at once.
    #[cfg(test)]
    pub(crate) fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Charges to this budget or one inside it refused so far (by this
    /// budget, one inside it or one it is part of).
    pub(crate) fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// This budget's limit.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }
}

/// Add `bytes` to `used` unless that passes `limit`.
fn reserve(used: &AtomicUsize, bytes: usize, limit: usize) -> bool {
    used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
        u.checked_add(bytes).filter(|&n| n <= limit)
    })
    .is_ok()
}

/// A charge that is given back when dropped.
#[derive(Debug)]
pub(crate) struct Charge {
    budget: Arc<Budget>,
    bytes: usize,
}

impl Charge {
    /// Charge `bytes` to `budget`, or `None` if it is refused.
    pub(crate) fn take(budget: &Arc<Budget>, bytes: usize) -> Option<Charge> {
        budget.charge(bytes).then(|| Charge {
            budget: Arc::clone(budget),
            bytes,
        })
    }
}

impl Charge {
    /// Charge `bytes` more to the same budget; `false` (nothing charged)
    /// if it is refused.
    pub(crate) fn grow(&mut self, bytes: usize) -> bool {
        let ok = self.budget.charge(bytes);
        if ok {
            self.bytes += bytes;
        }
        ok
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_stop_at_the_stream_limit_and_come_back() {
        let b = Budget::with_limit(1000, None);
        let a = Charge::take(&b, 600).unwrap();
        assert!(Charge::take(&b, 600).is_none());
        assert_eq!(b.refused(), 1);
        let c = Charge::take(&b, 400).unwrap();
        assert_eq!(b.used(), 1000);
        drop(a);
        drop(c);
        assert_eq!((b.used(), b.peak()), (0, 1000));
    }

    #[test]
    fn one_stream_cannot_take_the_global_budget() {
        let g = Budget::with_limit(1500, None);
        let limits = |l| Budget::with_limit(l, Some(Arc::clone(&g)));
        let (a, b) = (limits(1000), limits(1000));
        let ha = Charge::take(&a, 1000).unwrap();
        assert!(Charge::take(&a, 1).is_none(), "a's own limit");
        let hb = Charge::take(&b, 500).unwrap();
        assert!(Charge::take(&b, 1).is_none(), "the global limit");
        assert_eq!((g.used(), g.refused()), (1500, 2), "a's refusal counts too");
        assert_eq!((a.refused(), b.refused()), (1, 1));
        drop(ha);
        assert!(Charge::take(&b, 500).is_some());
        drop(hb);
    }
}
