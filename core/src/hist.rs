//! A plain (single-owner) latency histogram with exact count, sum, min and max.
//!
//! This is the reader's side: the sender thread and the host accumulate into
//! it, merge the histograms of all CPUs, and take quantiles. The measuring
//! thread writes into [`crate::seqlock::SharedHistogram`] instead.

use crate::error::Error;
use crate::layout::Layout;
use crate::stats::{self, Ppm};

/// Exact summary figures that travel beside the bucket counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Totals {
    /// Number of samples in the histogram.
    pub count: u64,
    /// Sum of all samples in ns (saturating; a 10-year run at 10 kHz with a
    /// 500 µs mean uses under a tenth of the range).
    pub sum: u64,
    /// Smallest sample in ns (`u64::MAX` while empty).
    pub min: u64,
    /// Largest sample in ns, exact (0 while empty).
    pub max: u64,
}

impl Totals {
    /// No samples yet.
    pub(crate) const EMPTY: Totals = Totals {
        count: 0,
        sum: 0,
        min: u64::MAX,
        max: 0,
    };

    /// Account one sample.
    #[inline]
    pub fn add(&mut self, ns: u64) {
        self.count = self.count.saturating_add(1);
        self.sum = self.sum.saturating_add(ns);
        if ns < self.min {
            self.min = ns;
        }
        if ns > self.max {
            self.max = ns;
        }
    }

    /// Combine with another set of totals (all CPUs).
    pub fn merge(&mut self, o: &Totals) {
        self.count = self.count.saturating_add(o.count);
        self.sum = self.sum.saturating_add(o.sum);
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    /// Smallest sample, `None` while empty.
    pub fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }
}

impl Default for Totals {
    fn default() -> Self {
        Totals::EMPTY
    }
}

/// A histogram with 64-bit counters in storage `B`: an array sized at
/// compile time ([`Histogram`]) or memory the caller hands in (a boxed
/// slice sized by a run-time layout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistogramIn<B> {
    layout: Layout,
    counts: B,
    totals: Totals,
}

/// A histogram of `N` buckets, sized at compile time.
pub type Histogram<const N: usize> = HistogramIn<[u64; N]>;

impl<const N: usize> HistogramIn<[u64; N]> {
    /// An empty histogram with `N` buckets: `linear_us` linear ones, the
    /// rest log-linear (see [`crate::layout`]).
    pub const fn new(linear_us: u32) -> Self {
        const {
            assert!(N >= 2 && N <= crate::layout::MAX_BUCKETS);
        }
        HistogramIn {
            layout: Layout::new(linear_us, N),
            counts: [0; N],
            totals: Totals::EMPTY,
        }
    }
}

impl<B: AsRef<[u64]> + AsMut<[u64]>> HistogramIn<B> {
    /// An empty histogram of `layout` in the caller's `counts` (zeroed
    /// here).
    ///
    /// # Errors
    ///
    /// [`Error::BucketMemory`] unless it has exactly one counter per
    /// bucket of a valid layout.
    pub fn with_counts(layout: Layout, mut counts: B) -> Result<Self, Error> {
        if counts.as_ref().len() != layout.len() || !layout.is_valid() {
            return Err(Error::BucketMemory);
        }
        counts.as_mut().fill(0);
        Ok(HistogramIn {
            layout,
            counts,
            totals: Totals::EMPTY,
        })
    }

    /// The bucket layout.
    pub const fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Bucket counts.
    pub fn counts(&self) -> &[u64] {
        self.counts.as_ref()
    }

    /// Exact totals.
    pub const fn totals(&self) -> &Totals {
        &self.totals
    }

    /// Add one latency.
    pub fn add(&mut self, ns: u64) {
        let i = self.layout.bucket_of(ns);
        if let Some(c) = self.counts.as_mut().get_mut(i) {
            *c = c.saturating_add(1);
        }
        self.totals.add(ns);
    }

    /// Add `n` to bucket `i` (decoding a delta); fails on a bad index.
    ///
    /// # Errors
    ///
    /// [`Error::BucketOutOfRange`] for an index past the layout's buckets.
    pub fn add_bucket(&mut self, i: usize, n: u64) -> Result<(), Error> {
        let c = self
            .counts
            .as_mut()
            .get_mut(i)
            .ok_or(Error::BucketOutOfRange)?;
        *c = c.saturating_add(n);
        Ok(())
    }

    /// Replace the totals (they travel separately from the buckets).
    pub(crate) fn set_totals(&mut self, t: Totals) {
        self.totals = t;
    }

    /// The bucket counts, to be changed with the totals
    /// ([`HistogramIn::set_totals`]).
    pub(crate) fn counts_mut(&mut self) -> &mut [u64] {
        self.counts.as_mut()
    }

    /// Add another histogram of the same layout into this one.
    ///
    /// # Errors
    ///
    /// [`Error::LayoutMismatch`] if the layouts differ (nothing is added).
    pub fn merge<C: AsRef<[u64]>>(&mut self, other: &HistogramIn<C>) -> Result<(), Error> {
        if other.layout != self.layout {
            return Err(Error::LayoutMismatch);
        }
        let theirs = other.counts.as_ref();
        for (a, b) in self.counts.as_mut().iter_mut().zip(theirs) {
            *a = a.saturating_add(*b);
        }
        self.totals.merge(&other.totals);
        Ok(())
    }

    /// Add the wrap-aware difference between two raw 32-bit counter
    /// snapshots (`cur - prev` per bucket, modulo 2^32). This widens the
    /// target's u32 counters into u64 as long as no bucket gains 2^32
    /// samples between two snapshots.
    pub(crate) fn absorb_raw(&mut self, prev: &[u32], cur: &[u32]) {
        for ((c, p), n) in self.counts.as_mut().iter_mut().zip(prev).zip(cur) {
            *c = c.saturating_add(n.wrapping_sub(*p) as u64);
        }
    }

    /// Nearest-rank quantile in ns (bucket upper edge, capped at the max).
    pub fn quantile(&self, q: Ppm) -> Option<u64> {
        stats::quantile(&self.layout, self.counts(), q, self.totals.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::DEFAULT_BUCKETS;

    type H = Histogram<DEFAULT_BUCKETS>;

    #[test]
    fn record_keeps_exact_totals() {
        let mut h = H::new(1000);
        for ns in [3_400, 12_000, 999_999, 2_400_000, 75_000_000_000] {
            h.add(ns);
        }
        let t = h.totals();
        assert_eq!(t.count, 5);
        assert_eq!(t.min, 3_400);
        assert_eq!(t.max, 75_000_000_000);
        assert_eq!(t.sum, 3_400 + 12_000 + 999_999 + 2_400_000 + 75_000_000_000);
        assert_eq!(h.counts().iter().sum::<u64>(), 5);
        assert_eq!(h.counts()[3], 1);
        assert_eq!(h.counts()[999], 1);
        assert_eq!(
            *h.counts().last().unwrap(),
            1,
            "75 s lands in the open bucket"
        );
        assert_eq!(h.counts()[1000..].iter().sum::<u64>(), 2);
        assert_eq!(h.quantile(Ppm(1_000_000)), Some(75_000_000_000));
    }

    #[test]
    fn merge_adds_and_rejects_other_layouts() {
        let mut a = H::new(1000);
        let mut b = H::new(1000);
        a.add(1_000);
        b.add(9_000);
        b.add(2_000);
        a.merge(&b).unwrap();
        assert_eq!(a.totals().count, 3);
        assert_eq!(a.totals().min, 1_000);
        assert_eq!(a.totals().max, 9_000);
        let c = H::new(500);
        assert_eq!(a.merge(&c), Err(Error::LayoutMismatch));
    }

    #[test]
    fn absorb_raw_widens_across_wrap() {
        let mut h = Histogram::<4>::new(2);
        h.absorb_raw(&[u32::MAX - 1, 0, 5, 7], &[3, 0, 5, 8]);
        assert_eq!(h.counts(), &[5, 0, 0, 1]);
        assert_eq!(h.add_bucket(4, 1), Err(Error::BucketOutOfRange));
    }

    #[test]
    fn caller_memory_of_a_run_time_layout() {
        use crate::layout::{buckets_for, MIN_TOP_US};
        let layout = Layout::new(3500, buckets_for(3500, MIN_TOP_US));
        let mut h = HistogramIn::with_counts(layout, vec![7u64; layout.len()]).unwrap();
        assert!(h.counts().iter().all(|&c| c == 0), "zeroed");
        h.add(3_499_999);
        h.add(3_500_000);
        assert_eq!(h.counts()[3499], 1);
        assert_eq!(h.counts()[3500..].iter().sum::<u64>(), 1);
        let mut fixed = H::new(1000);
        assert_eq!(fixed.merge(&h), Err(Error::LayoutMismatch));
        assert_eq!(
            HistogramIn::with_counts(layout, vec![0u64; 10]).err(),
            Some(Error::BucketMemory)
        );
    }

    #[test]
    fn ten_year_sum_does_not_overflow() {
        let mut t = Totals::EMPTY;
        let ten_years_10khz: u64 = 10 * 365 * 24 * 3600 * 10_000;
        t.count = ten_years_10khz - 1;
        t.sum = (ten_years_10khz - 1) * 500_000; // 500 µs mean
        t.add(500_000);
        assert_eq!(t.count, ten_years_10khz);
        assert_eq!(t.sum, ten_years_10khz * 500_000);
    }
}
