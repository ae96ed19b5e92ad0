//! The measuring thread's shared histogram: one RT writer, lock-free readers.
//!
//! [`SharedHistogram`] holds a thread's bucket counters and statistics as
//! atomics behind a sequence lock. The single writer (the measuring thread,
//! through the [`Writer`] it claims once) never waits; a non-RT reader takes a
//! consistent [`Snapshot`] and simply retries if the writer was active.
//!
//! # Memory ordering
//!
//! Every field is an atomic: 64-bit figures are one `AtomicU64` where the
//! target has them and two 32-bit halves where it does not (thumbv7em);
//! the seqlock makes either consistent. The protocol is the classic
//! fence-based seqlock (H. Boehm, "Can seqlocks get along with programming
//! language memory models?", 2012):
//!
//! * writer: `seq = s + 1` (Relaxed), `fence(Release)`, all data stores
//!   (Relaxed), `seq = s + 2` (Release);
//! * reader: `s1 = seq` (Acquire), retry if odd; all data loads (Relaxed),
//!   `fence(Acquire)`, `s2 = seq` (Relaxed); the copy is consistent iff
//!   `s1 == s2`.
//!
//! If a reader's load sees any store of a write section, the writer's
//! release fence and the reader's acquire fence synchronise, so the reader's
//! second load of `seq` sees at least the odd value and the copy is discarded.
//! The writer's stores are plain stores (no read-modify-write): it keeps
//! its own copy of the statistics and the sequence number, and publishes
//! only the fields a sample changed.
//!
//! Bucket counters are u32 and wrap; readers widen them wrap-aware into u64
//! (`Histogram::absorb_raw`), which is exact as long as a
//! reader looks at least once per 2^32 samples of one bucket (five days at
//! 10 kHz). Totals are 64-bit.

#[cfg(all(loom, target_has_atomic = "64"))]
use loom::sync::atomic::AtomicU64;
#[cfg(loom)]
use loom::sync::atomic::{fence, AtomicBool, AtomicU32};

#[cfg(all(not(loom), target_has_atomic = "64"))]
use core::sync::atomic::AtomicU64;
#[cfg(not(loom))]
use core::sync::atomic::{fence, AtomicBool, AtomicU32};

use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use crate::error::Error;
use crate::hist::Totals;
use crate::layout::Layout;

/// A 64-bit value published under the seqlock: one 64-bit atomic where
/// the target has them, two 32-bit halves where it does not (thumbv7em).
#[cfg(target_has_atomic = "64")]
struct Split64(AtomicU64);

#[cfg(target_has_atomic = "64")]
impl Split64 {
    #[cfg(not(loom))]
    const fn new(v: u64) -> Self {
        Split64(AtomicU64::new(v))
    }

    #[cfg(loom)]
    fn new(v: u64) -> Self {
        Split64(AtomicU64::new(v))
    }

    #[inline]
    fn store(&self, v: u64) {
        self.0.store(v, Relaxed);
    }

    #[inline]
    fn load(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

/// A 64-bit value published as two 32-bit atomics (under the seqlock).
#[cfg(not(target_has_atomic = "64"))]
struct Split64 {
    lo: AtomicU32,
    hi: AtomicU32,
}

#[cfg(not(target_has_atomic = "64"))]
impl Split64 {
    #[cfg(not(loom))]
    const fn new(v: u64) -> Self {
        Split64 {
            lo: AtomicU32::new(v as u32),
            hi: AtomicU32::new((v >> 32) as u32),
        }
    }

    #[cfg(loom)]
    fn new(v: u64) -> Self {
        Split64 {
            lo: AtomicU32::new(v as u32),
            hi: AtomicU32::new((v >> 32) as u32),
        }
    }

    #[inline]
    fn store(&self, v: u64) {
        self.lo.store(v as u32, Relaxed);
        self.hi.store((v >> 32) as u32, Relaxed);
    }

    #[inline]
    fn load(&self) -> u64 {
        (self.lo.load(Relaxed) as u64) | ((self.hi.load(Relaxed) as u64) << 32)
    }
}

/// Statistics of one measuring thread, beside its histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Counters {
    /// Count, sum, min and max of the recorded (non-early) samples.
    pub totals: Totals,
    /// Wake-ups measured: recorded plus early ones (a snapshot derives it
    /// as `totals.count + early`; the writer does not publish it).
    pub cycles: u64,
    /// Whole periods skipped because a wake-up was that late.
    pub missed: u64,
    /// Wake-ups before their deadline (possible with a stepped clock).
    pub early: u64,
    /// The latest latency in ns (negative when early).
    pub last: i64,
}

impl Counters {
    /// Nothing measured yet.
    pub const ZERO: Counters = Counters {
        totals: Totals::EMPTY,
        cycles: 0,
        missed: 0,
        early: 0,
        last: 0,
    };
}

impl Default for Counters {
    fn default() -> Self {
        Counters::ZERO
    }
}

/// A consistent copy of a [`SharedHistogramIn`], with the raw u32 bucket
/// counters in storage `B` (an array, or memory sized by the run's layout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotIn<B> {
    /// Raw, wrapping bucket counters.
    pub buckets: B,
    /// Statistics at the same instant.
    pub counters: Counters,
}

/// A snapshot of `N` buckets, sized at compile time.
pub type Snapshot<const N: usize> = SnapshotIn<[u32; N]>;

impl<const N: usize> SnapshotIn<[u32; N]> {
    /// An all-zero snapshot (the state before the first sample).
    pub const fn new() -> Self {
        SnapshotIn {
            buckets: [0; N],
            counters: Counters::ZERO,
        }
    }
}

impl<const N: usize> Default for SnapshotIn<[u32; N]> {
    fn default() -> Self {
        Self::new()
    }
}

impl<B: AsMut<[u32]>> SnapshotIn<B> {
    /// An all-zero snapshot in the caller's `buckets` (zeroed here).
    pub fn with_buckets(mut buckets: B) -> Self {
        buckets.as_mut().fill(0);
        SnapshotIn {
            buckets,
            counters: Counters::ZERO,
        }
    }
}

/// The shared, lock-free histogram of one measuring thread, its bucket
/// counters in storage `B`: an array sized at compile time
/// ([`SharedHistogram`], const-constructible, for the default layout) or
/// memory the caller allocated and prefaulted for a run-time layout
/// ([`SharedHistogramIn::with_buckets`]).
///
/// Its size at the default layout is stated and tested below: 12 KiB of
/// bucket counters plus ~60 bytes, well under the 16 KiB budget.
pub struct SharedHistogramIn<B> {
    layout: Layout,
    seq: AtomicU32,
    claimed: AtomicBool,
    count: Split64,
    sum: Split64,
    min: Split64,
    max: Split64,
    missed: Split64,
    early: Split64,
    last: Split64,
    buckets: B,
}

/// A shared histogram of `N` buckets, sized at compile time.
pub type SharedHistogram<const N: usize> = SharedHistogramIn<[AtomicU32; N]>;

/// An empty shared histogram of `layout` over the counters `buckets` (an expression
/// usable in const fns, where the loom build's atomics are not).
macro_rules! empty_histogram {
    ($layout:expr, $buckets:expr) => {
        SharedHistogramIn {
            layout: $layout,
            seq: AtomicU32::new(0),
            claimed: AtomicBool::new(false),
            count: Split64::new(0),
            sum: Split64::new(0),
            min: Split64::new(u64::MAX),
            max: Split64::new(0),
            missed: Split64::new(0),
            early: Split64::new(0),
            last: Split64::new(0),
            buckets: $buckets,
        }
    };
}

impl<const N: usize> SharedHistogramIn<[AtomicU32; N]> {
    /// An empty shared histogram with `linear_us` linear buckets (see [`crate::layout`]).
    #[cfg(not(loom))]
    pub const fn new(linear_us: u32) -> Self {
        const {
            assert!(N >= 2 && N <= crate::layout::MAX_BUCKETS);
        }
        empty_histogram!(Layout::new(linear_us, N), [const { AtomicU32::new(0) }; N])
    }

    /// An empty shared histogram (loom build: atomics are not const there).
    #[cfg(loom)]
    pub fn new(linear_us: u32) -> Self {
        empty_histogram!(
            Layout::new(linear_us, N),
            core::array::from_fn(|_| AtomicU32::new(0))
        )
    }
}

impl<B: AsRef<[AtomicU32]>> SharedHistogramIn<B> {
    /// An empty shared histogram of `layout` whose counters live in the caller's
    /// `buckets`: one zeroed counter per bucket, allocated (and touched)
    /// before measuring. Fails on any other length or a non-zero counter.
    ///
    /// # Errors
    ///
    /// [`Error::BucketMemory`] for another length, an invalid layout or a
    /// counter that is not zero.
    pub fn with_buckets(layout: Layout, buckets: B) -> Result<Self, Error> {
        let b = buckets.as_ref();
        if b.len() != layout.len() || !layout.is_valid() || b.iter().any(|c| c.load(Relaxed) != 0) {
            return Err(Error::BucketMemory);
        }
        Ok(empty_histogram!(layout, buckets))
    }

    /// The bucket layout.
    pub const fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Claim the single writer. Returns `None` if it was claimed before:
    /// there is exactly one writer per shared histogram for its whole life.
    pub fn writer(&self) -> Option<Writer<'_, B>> {
        if self.claimed.swap(true, Acquire) {
            return None;
        }
        Some(Writer {
            rec: self,
            linear: linear_part(self.buckets.as_ref(), &self.layout),
            min: self.min.load(),
            max: self.max.load(),
        })
    }

    /// Try once to copy a consistent snapshot; `false` if the writer was
    /// active (the copy in `out` is then garbage and must be retried).
    pub(crate) fn try_snapshot<C: AsMut<[u32]>>(&self, out: &mut SnapshotIn<C>) -> bool {
        let s1 = self.seq.load(Acquire);
        if s1 & 1 == 1 {
            return false;
        }
        for (o, b) in out.buckets.as_mut().iter_mut().zip(self.buckets.as_ref()) {
            *o = b.load(Relaxed);
        }
        out.counters = self.read_counters();
        fence(Acquire);
        self.seq.load(Relaxed) == s1
    }

    /// The counters as they stand (inside a read section only).
    fn read_counters(&self) -> Counters {
        let totals = Totals {
            count: self.count.load(),
            sum: self.sum.load(),
            min: self.min.load(),
            max: self.max.load(),
        };
        let early = self.early.load();
        Counters {
            totals,
            cycles: totals.count.wrapping_add(early),
            missed: self.missed.load(),
            early,
            last: self.last.load() as i64,
        }
    }

    /// Copy the counters alone, consistently, retrying up to `tries`
    /// times: what a status line needs (cycles, minimum, latest, average,
    /// maximum), without the copy of every bucket that a whole snapshot
    /// makes. The same read section as [`SharedHistogramIn::snapshot`].
    ///
    /// # Errors
    ///
    /// [`Error::SnapshotBusy`] if the writer was inside its section at
    /// every try.
    pub fn counters(&self, tries: u32) -> Result<Counters, Error> {
        for _ in 0..tries {
            let s1 = self.seq.load(Acquire);
            if s1 & 1 == 0 {
                let c = self.read_counters();
                fence(Acquire);
                if self.seq.load(Relaxed) == s1 {
                    return Ok(c);
                }
            }
            core::hint::spin_loop();
        }
        Err(Error::SnapshotBusy)
    }

    /// Copy a consistent snapshot, retrying up to `tries` times.
    ///
    /// The writer holds its section for a few dozen instructions once per
    /// period, so a handful of tries always suffices in practice.
    ///
    /// # Errors
    ///
    /// [`Error::SnapshotBusy`] if the writer was inside its section at each of
    /// the `tries`; `out` then holds no consistent copy.
    pub fn snapshot<C: AsMut<[u32]>>(
        &self,
        out: &mut SnapshotIn<C>,
        tries: u32,
    ) -> Result<(), Error> {
        for _ in 0..tries {
            if self.try_snapshot(out) {
                return Ok(());
            }
            core::hint::spin_loop();
        }
        Err(Error::SnapshotBusy)
    }
}

/// The single writer of a [`SharedHistogramIn`], owned by the measuring thread.
///
/// Being their only writer, it reads the counters back from the shared histogram
/// (each update is one read-modify-write of a field it alone writes, which
/// x86 does in one instruction) instead of keeping a copy to store twice.
/// Only the minimum and maximum have a copy here: they are compared on
/// every sample but rarely stored.
pub struct Writer<'a, B> {
    rec: &'a SharedHistogramIn<B>,
    /// The counters of the linear range (looked up once): a latency of
    /// `us` whole µs below its end counts in `linear[us]`.
    linear: &'a [AtomicU32],
    /// The published minimum and maximum.
    min: u64,
    max: u64,
}

/// Count a latency past the 1 µs range of `r` in its log-linear bucket.
#[cold]
#[inline(never)]
fn add_beyond_linear<B: AsRef<[AtomicU32]>>(r: &SharedHistogramIn<B>, ns: u64) {
    if let Some(b) = r.buckets.as_ref().get(r.layout.bucket_of(ns)) {
        bump(b);
    }
}

/// One more sample in a bucket (its single writer adds, no read-modify-write).
#[inline(always)]
fn bump(b: &AtomicU32) {
    b.store(b.load(Relaxed).wrapping_add(1), Relaxed);
}

/// The counters of the 1 µs buckets of `layout` in `buckets`.
fn linear_part<'a>(buckets: &'a [AtomicU32], layout: &Layout) -> &'a [AtomicU32] {
    let n = (layout.linear_us as usize).min(buckets.len());
    &buckets[..n]
}

impl<B: AsRef<[AtomicU32]>> Writer<'_, B> {
    /// Publish one wake-up: `latency_ns` (negative = early) and the whole
    /// periods it `missed`. Early wake-ups are counted, not put in the
    /// histogram. Never waits, never fails.
    #[inline]
    pub fn publish(&mut self, latency_ns: i64, missed: u64) {
        if latency_ns >= 0 && missed == 0 {
            self.publish_plain(latency_ns as u64);
        } else {
            self.publish_other(latency_ns, missed);
        }
    }

    /// [`Writer::publish`] of the common sample: on time or late by
    /// `latency_ns`, no period missed.
    #[inline]
    pub fn publish_plain(&mut self, latency_ns: u64) {
        self.section(|w| {
            w.add_latency(latency_ns);
            w.rec.last.store(latency_ns);
        });
    }

    /// Run `publish` as one write section of the seqlock: the sequence is
    /// odd while it runs, and a reader that overlaps it retries.
    #[inline(always)]
    fn section(&mut self, publish: impl FnOnce(&mut Self)) {
        let r = self.rec;
        r.seq.store(r.seq.load(Relaxed).wrapping_add(1), Relaxed);
        fence(Release);
        publish(self);
        r.seq.store(r.seq.load(Relaxed).wrapping_add(1), Release);
    }

    /// The rare samples: early, or late by whole periods.
    #[inline(never)]
    fn publish_other(&mut self, latency_ns: i64, missed: u64) {
        self.section(|w| {
            let r = w.rec;
            if latency_ns >= 0 {
                w.add_latency(latency_ns as u64);
            } else {
                r.early.store(r.early.load().wrapping_add(1));
            }
            if missed > 0 {
                r.missed.store(r.missed.load().saturating_add(missed));
            }
            r.last.store(latency_ns as u64);
        });
    }

    /// Count a latency in the histogram and the totals (inside the write
    /// section).
    #[inline]
    fn add_latency(&mut self, ns: u64) {
        let r = self.rec;
        r.count.store(r.count.load().wrapping_add(1));
        r.sum.store(r.sum.load().saturating_add(ns));
        // the common case: a 1 µs bucket, found with one bounds check
        match usize::try_from(ns / 1000)
            .ok()
            .and_then(|us| self.linear.get(us))
        {
            Some(b) => bump(b),
            None => add_beyond_linear(r, ns),
        }
        if ns < self.min {
            self.min = ns;
            r.min.store(ns);
        }
        if ns > self.max {
            self.max = ns;
            r.max.store(ns);
        }
    }

    /// Start from given counters instead of zero (used to test that
    /// counters seeded at their 10-year values do not overflow); publishes
    /// all of them except `cycles`, which snapshots derive from the count
    /// and the early wake-ups.
    pub fn seed(&mut self, counters: Counters) {
        self.min = counters.totals.min;
        self.max = counters.totals.max;
        self.section(|w| {
            let (r, l) = (w.rec, &counters);
            r.count.store(l.totals.count);
            r.sum.store(l.totals.sum);
            r.min.store(l.totals.min);
            r.max.store(l.totals.max);
            r.missed.store(l.missed);
            r.early.store(l.early);
            r.last.store(l.last as u64);
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::layout::DEFAULT_BUCKETS;
    use core::mem::size_of;

    /// The default shared histogram, as the target allocates it.
    type Rec = SharedHistogram<DEFAULT_BUCKETS>;

    #[test]
    fn default_histogram_fits_budget() {
        // 3028 × 4 B of counters, 8 split u64, seq, flag and layout
        let size = size_of::<Rec>();
        assert!(size <= DEFAULT_BUCKETS * 4 + 8 * 8 + 24, "{size}");
        assert!(size <= 16 * 1024);
        // as the manual states it
        let doc = include_str!("../../docs/histogram.md").replace('\n', " ");
        let said = std::format!(
            "{:.1} KiB at the default layout ({DEFAULT_BUCKETS} buckets)",
            size as f64 / 1024.0
        );
        assert!(
            doc.contains(&said),
            "docs/histogram.md does not say {said:?}"
        );
    }

    #[test]
    fn const_constructible_in_a_static() {
        static REC: Rec = Rec::new(1000);
        let mut w = REC.writer().unwrap();
        w.publish(5_000, 0);
        let mut s = Snapshot::<DEFAULT_BUCKETS>::new();
        REC.snapshot(&mut s, 4).unwrap();
        assert_eq!(s.counters.cycles, 1);
        assert_eq!(s.buckets[5], 1);
    }

    #[test]
    fn the_counters_alone_are_those_of_a_whole_snapshot() {
        let r = Rec::new(1000);
        assert_eq!(r.counters(4), Ok(Counters::ZERO));
        let mut w = r.writer().unwrap();
        for ns in [-2_000, 7_000, 3_000, 2_000_000] {
            w.publish(ns, 0);
        }
        w.publish(9_000, 3);
        let mut s = Snapshot::<DEFAULT_BUCKETS>::new();
        r.snapshot(&mut s, 4).unwrap();
        let c = r.counters(4).unwrap();
        assert_eq!(c, s.counters);
        assert_eq!((c.cycles, c.early, c.missed, c.last), (5, 1, 3, 9_000));
    }

    #[test]
    fn single_writer_is_enforced() {
        let r = Rec::new(1000);
        let _w = r.writer().unwrap();
        assert!(r.writer().is_none());
    }

    #[test]
    fn early_samples_are_counted_not_wrapped() {
        let r = Rec::new(1000);
        let mut w = r.writer().unwrap();
        w.publish(-3_000, 0);
        w.publish(4_000, 0);
        let mut s = Snapshot::<DEFAULT_BUCKETS>::new();
        r.snapshot(&mut s, 4).unwrap();
        assert_eq!(s.counters.early, 1);
        assert_eq!(s.counters.cycles, 2);
        assert_eq!(s.counters.totals.count, 1);
        assert_eq!(s.counters.totals.max, 4_000);
        assert_eq!(s.counters.last, 4_000);
        assert_eq!(*s.buckets.last().unwrap(), 0);
    }

    #[test]
    fn writer_buckets_agree_with_the_layout_at_every_edge() {
        let r = Rec::new(1000);
        let mut w = r.writer().unwrap();
        let mut s = Snapshot::<DEFAULT_BUCKETS>::new();
        let edges = [
            0,
            999,
            1_000,
            998_999,
            999_000,
            999_999,
            1_000_000,
            1_000_001,
            70e9 as u64,
        ];
        let mut want = [0u32; DEFAULT_BUCKETS];
        for &ns in &edges {
            w.publish(ns as i64, 0);
            want[r.layout().bucket_of(ns)] += 1;
            r.snapshot(&mut s, 4).unwrap();
            assert!(s.buckets == want, "after {ns} ns");
            assert_eq!(s.counters.last, ns as i64);
        }
    }

    #[test]
    fn caller_memory_holds_a_run_time_layout() {
        use crate::layout::{MAX_LINEAR_US, MAX_TARGET_BUCKETS};
        let layout = Layout::for_hist_us(MAX_LINEAR_US).unwrap();
        let mem: std::vec::Vec<AtomicU32> = (0..layout.len()).map(|_| AtomicU32::new(0)).collect();
        let r = SharedHistogramIn::with_buckets(layout, mem.into_boxed_slice()).unwrap();
        let mut w = r.writer().unwrap();
        for ns in [999_999, 19_999_999, 20_000_000, 70_000_000_000] {
            w.publish(ns, 0);
        }
        let mut s = SnapshotIn::with_buckets(vec![9u32; layout.len()]);
        r.snapshot(&mut s, 4).unwrap();
        assert_eq!(
            (s.buckets[999], s.buckets[19_999], s.buckets[20_000]),
            (1, 1, 1)
        );
        assert_eq!(s.buckets[MAX_TARGET_BUCKETS - 1], 1, "the open last bucket");
        assert_eq!(s.buckets.iter().sum::<u32>(), 4);
        assert_eq!(s.counters.totals.max, 70_000_000_000);
        // wrong length, or memory that is not zero
        let short: std::vec::Vec<AtomicU32> = (0..10).map(|_| AtomicU32::new(0)).collect();
        assert!(SharedHistogramIn::with_buckets(layout, short).is_err());
        let dirty: std::vec::Vec<AtomicU32> = (0..layout.len())
            .map(|i| AtomicU32::new(i as u32))
            .collect();
        assert!(SharedHistogramIn::with_buckets(layout, dirty).is_err());
    }

    #[test]
    fn ten_year_counters_do_not_overflow() {
        let ten_years: u64 = 10 * 365 * 24 * 3600 * 10_000;
        let r = Rec::new(1000);
        let mut w = r.writer().unwrap();
        let mut seed = Counters::ZERO;
        seed.cycles = ten_years;
        seed.missed = ten_years / 10;
        seed.totals = Totals {
            count: ten_years,
            sum: ten_years * 200_000,
            min: 1_000,
            max: 9_000_000,
        };
        w.seed(seed);
        w.publish(200_000, 3);
        let mut s = Snapshot::<DEFAULT_BUCKETS>::new();
        r.snapshot(&mut s, 4).unwrap();
        assert_eq!(s.counters.cycles, ten_years + 1);
        assert_eq!(s.counters.missed, ten_years / 10 + 3);
        assert_eq!(s.counters.totals.sum, (ten_years + 1) * 200_000);
    }

    #[test]
    fn reader_sees_consistent_copies_while_writer_runs() {
        use std::sync::atomic::AtomicBool as StdBool;
        use std::sync::Arc;
        let rec: Arc<SharedHistogram<64>> = Arc::new(SharedHistogram::new(32));
        let done = Arc::new(StdBool::new(false));
        let (r2, d2) = (rec.clone(), done.clone());
        let writer = std::thread::spawn(move || {
            let mut w = r2.writer().unwrap();
            for i in 0..200_000u64 {
                w.publish(((i * 7919) % 50_000) as i64, i % 3);
            }
            d2.store(true, Relaxed);
        });
        let mut s = Snapshot::<64>::new();
        let mut checked = 0;
        while !done.load(Relaxed) || checked == 0 {
            if rec.try_snapshot(&mut s) {
                let sum: u64 = s.buckets.iter().map(|&b| b as u64).sum();
                assert_eq!(sum, s.counters.totals.count);
                assert_eq!(s.counters.cycles, s.counters.totals.count);
                checked += 1;
            }
        }
        writer.join().unwrap();
        rec.snapshot(&mut s, 4).unwrap();
        assert_eq!(s.counters.cycles, 200_000);
        assert!(checked > 0);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// Interleavings of one write section with one reader (bounded to two
    /// preemptions, which covers a reader starting before, inside and after
    /// the section and the writer starting inside the reader's copy): a copy
    /// the reader accepts is never torn.
    #[test]
    fn snapshot_is_never_torn() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(2);
        model.check(|| {
            let rec: Arc<SharedHistogram<2>> = Arc::new(SharedHistogram::new(1));
            let r2 = rec.clone();
            let t = loom::thread::spawn(move || {
                let mut w = r2.writer().unwrap();
                w.publish(1_500, 1);
            });
            let mut s = Snapshot::<2>::new();
            if rec.try_snapshot(&mut s) {
                let sum: u64 = s.buckets.iter().map(|&b| b as u64).sum();
                assert_eq!(sum, s.counters.totals.count);
                assert_eq!(s.counters.missed, s.counters.cycles);
                if s.counters.cycles == 1 {
                    assert_eq!(s.counters.totals.max, 1_500);
                    assert_eq!(s.buckets[1], 1);
                }
            }
            t.join().unwrap();
        });
    }
}
