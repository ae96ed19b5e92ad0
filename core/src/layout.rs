//! Bucket layout of the latency histogram: explicit, documented edges.
//!
//! A latency in nanoseconds is first truncated to whole microseconds
//! (`us = ns / 1000`, as cyclictest does), then placed in a bucket:
//!
//! * **Linear part**: for `us < linear_us`, bucket `i = us` covers
//!   `[i µs, i + 1 µs)`. These are the rows of cyclictest's `-h` output.
//! * **Log part**: for `us >= linear_us`, buckets follow a log-linear
//!   ("HDR") grid with `SUB_BUCKETS` = 128 sub-buckets per power of two.
//!   A bucket that starts at `lo` µs is at most `lo / 128` wide, i.e. under
//!   0.79 % of its lower edge (the grid is exact for `linear_us >= 100`).
//! * The **last** bucket is open-ended: it holds every value from its lower
//!   edge upwards, so no latency is ever dropped. With the default layout the
//!   last bucket starts above 60 s; the exact maximum is always kept beside
//!   the histogram anyway.
//!
//! Every lower edge is inclusive and every upper edge exclusive.

use serde::{Deserialize, Serialize};

/// Number of sub-buckets per power of two in the log part (2^7).
pub(crate) const SUB_BUCKETS: u64 = 128;
const SUB_BITS: u32 = 7;

/// Default width of the linear, 1 µs resolution range.
pub const DEFAULT_LINEAR_US: u32 = 1000;
/// The layout must resolve at least this many microseconds with ≤ 1 % buckets.
pub const MIN_TOP_US: u64 = 60_000_000;
/// Number of buckets of the default layout ([`DEFAULT_LINEAR_US`] linear, up to 60 s).
pub const DEFAULT_BUCKETS: usize = buckets_for(DEFAULT_LINEAR_US, MIN_TOP_US);
/// Largest bucket count a layout may have (indices travel as `u16`).
pub const MAX_BUCKETS: usize = u16::MAX as usize;
/// Widest 1 µs linear range a latscope target uses (`-h`/`-H` up to this).
pub const MAX_LINEAR_US: u32 = 20_000;
/// Most buckets a latscope target's layout has: [`MAX_LINEAR_US`] linear
/// buckets and the log part up to 60 s. A receiver sizes everything from
/// this number (times [`crate::wire::MAX_THREADS`]) and rejects larger
/// layouts: no target can produce them.
pub const MAX_TARGET_BUCKETS: usize = buckets_for(MAX_LINEAR_US, MIN_TOP_US);

/// Index of `us` on the unbounded log-linear grid.
const fn grid_index(us: u64) -> u64 {
    if us < 2 * SUB_BUCKETS {
        us
    } else {
        let k = 63 - us.leading_zeros() as u64; // k >= 8
        (k - 6) * SUB_BUCKETS + (us >> (k - SUB_BITS as u64)) - SUB_BUCKETS
    }
}

/// Lower edge (µs) of grid index `g`.
const fn grid_lower(g: u64) -> u64 {
    if g < 2 * SUB_BUCKETS {
        g
    } else {
        let group = g / SUB_BUCKETS - 1; // >= 1
        let sub = g % SUB_BUCKETS + SUB_BUCKETS;
        if group > 64 - 1 - SUB_BITS as u64 {
            return u64::MAX;
        }
        sub << group
    }
}

/// Number of buckets for a layout with `linear_us` 1 µs buckets whose
/// bounded buckets reach past `top_us`; the bucket after that one is the
/// open-ended last bucket.
pub const fn buckets_for(linear_us: u32, top_us: u64) -> usize {
    let l = linear_us as u64;
    let top = if top_us < l { l } else { top_us };
    (l + grid_index(top) - grid_index(l) + 2) as usize
}

/// The bucket layout of a histogram, sent in the hello so a host can decode
/// histograms from targets built with other layouts.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    postcard::experimental::max_size::MaxSize,
    postcard_schema::Schema,
)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Layout {
    /// Width of the linear part in µs (1 µs buckets below this).
    pub linear_us: u32,
    /// Total number of buckets, the last one open-ended.
    pub buckets: u16,
}

impl Layout {
    /// The default layout: 1000 × 1 µs, then log-linear up to 60 s.
    pub const DEFAULT: Layout = Layout::new(DEFAULT_LINEAR_US, DEFAULT_BUCKETS);

    /// A layout with `linear_us` linear buckets and `buckets` buckets in all.
    ///
    /// Out-of-range arguments are clamped: at least `linear_us + 1` buckets
    /// (so the open last bucket exists) and at most [`MAX_BUCKETS`].
    pub const fn new(linear_us: u32, buckets: usize) -> Layout {
        let min = linear_us as usize + 1;
        let b = if buckets < min { min } else { buckets };
        let b = if b > MAX_BUCKETS { MAX_BUCKETS } else { b };
        let l = if linear_us as usize >= MAX_BUCKETS {
            (MAX_BUCKETS - 1) as u32
        } else {
            linear_us
        };
        Layout {
            linear_us: l,
            buckets: b as u16,
        }
    }

    /// The layout a run uses for a `-h`/`-H` range of `hist_us` µs: the
    /// default up to [`DEFAULT_LINEAR_US`], else `hist_us` 1 µs buckets and
    /// the log part to past 60 s. `None` above [`MAX_LINEAR_US`].
    pub const fn for_hist_us(hist_us: u32) -> Option<Layout> {
        if hist_us > MAX_LINEAR_US {
            None
        } else if hist_us <= DEFAULT_LINEAR_US {
            Some(Layout::DEFAULT)
        } else {
            Some(Layout::new(hist_us, buckets_for(hist_us, MIN_TOP_US)))
        }
    }

    /// Whether this layout is self-consistent (as a decoded hello must be).
    pub(crate) const fn is_valid(&self) -> bool {
        self.linear_us > 0 && (self.buckets as u32) > self.linear_us
    }

    /// Whether a latscope target can produce this layout: valid, a linear
    /// range of at most [`MAX_LINEAR_US`] and at most
    /// [`MAX_TARGET_BUCKETS`] buckets.
    pub const fn is_legal(&self) -> bool {
        self.is_valid()
            && self.linear_us <= MAX_LINEAR_US
            && self.buckets as usize <= MAX_TARGET_BUCKETS
    }

    /// Number of buckets.
    pub const fn len(&self) -> usize {
        self.buckets as usize
    }

    /// Always false: a layout has at least one bucket.
    pub const fn is_empty(&self) -> bool {
        self.buckets == 0
    }

    /// The bucket that holds a latency of `ns` nanoseconds.
    #[inline]
    pub const fn bucket_of(&self, ns: u64) -> usize {
        let us = ns / 1000;
        let l = self.linear_us as u64;
        let last = self.buckets as u64 - 1;
        let idx = if us < l {
            us
        } else {
            l + grid_index(us) - grid_index(l)
        };
        if idx > last {
            last as usize
        } else {
            idx as usize
        }
    }

    /// Inclusive lower edge of bucket `i`, in µs (`u64::MAX` past the end).
    pub const fn lower_us(&self, i: usize) -> u64 {
        let l = self.linear_us as u64;
        let i = i as u64;
        if i >= self.buckets as u64 {
            u64::MAX
        } else if i < l {
            i
        } else {
            let lo = grid_lower(i - l + grid_index(l));
            if lo < l {
                l
            } else {
                lo
            }
        }
    }

    /// Exclusive upper edge of bucket `i`, in µs; `None` for the open last bucket.
    pub const fn upper_us(&self, i: usize) -> Option<u64> {
        if i + 1 >= self.buckets as usize {
            None
        } else {
            Some(self.lower_us(i + 1))
        }
    }

    /// Lower edge of bucket `i` in ns.
    pub(crate) const fn lower_ns(&self, i: usize) -> u64 {
        self.lower_us(i).saturating_mul(1000)
    }

    /// Upper edge of bucket `i` in ns; `None` for the open last bucket.
    pub(crate) const fn upper_ns(&self, i: usize) -> Option<u64> {
        match self.upper_us(i) {
            Some(u) => Some(u.saturating_mul(1000)),
            None => None,
        }
    }
}

impl Default for Layout {
    fn default() -> Self {
        Layout::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_layout_size() {
        assert_eq!(DEFAULT_BUCKETS, 3028);
        assert!(Layout::DEFAULT.is_valid());
    }

    #[test]
    fn linear_part_is_one_us_wide() {
        let l = Layout::DEFAULT;
        for us in 0..1000u64 {
            assert_eq!(l.bucket_of(us * 1000), us as usize);
            assert_eq!(l.bucket_of(us * 1000 + 999), us as usize);
            assert_eq!(l.lower_us(us as usize), us);
            assert_eq!(l.upper_us(us as usize), Some(us + 1));
        }
    }

    #[test]
    fn edges_are_contiguous_and_monotonic_and_within_one_percent() {
        for layout in [
            Layout::DEFAULT,
            Layout::new(100, buckets_for(100, MIN_TOP_US)),
            Layout::new(777, buckets_for(777, MIN_TOP_US)),
        ] {
            let mut prev_hi = 0;
            for i in 0..layout.len() {
                let lo = layout.lower_us(i);
                assert_eq!(lo, prev_hi, "bucket {i} of {layout:?}");
                match layout.upper_us(i) {
                    Some(hi) => {
                        assert!(hi > lo);
                        if lo >= layout.linear_us as u64 {
                            // width at most 1 % of the lower edge
                            assert!((hi - lo) * 100 <= lo, "bucket {i}: [{lo},{hi})");
                        }
                        // both edges map back into this bucket
                        assert_eq!(layout.bucket_of(lo * 1000), i);
                        assert_eq!(layout.bucket_of(hi * 1000 - 1), i);
                        prev_hi = hi;
                    }
                    None => {
                        assert_eq!(i, layout.len() - 1);
                        assert!(lo > MIN_TOP_US, "last bucket starts at {lo}");
                    }
                }
            }
        }
    }

    #[test]
    fn everything_lands_in_a_bucket() {
        let l = Layout::DEFAULT;
        assert_eq!(l.bucket_of(u64::MAX), l.len() - 1);
        assert_eq!(l.bucket_of(0), 0);
        let s60 = l.bucket_of(60_000_000_000);
        assert!(s60 < l.len() - 1);
        assert!(l.lower_ns(s60) <= 60_000_000_000);
        assert!(l.upper_ns(s60).unwrap() > 60_000_000_000);
    }

    #[test]
    fn run_time_layouts_from_hist_us() {
        assert_eq!(Layout::for_hist_us(0), Some(Layout::DEFAULT));
        assert_eq!(Layout::for_hist_us(1000), Some(Layout::DEFAULT));
        let l = Layout::for_hist_us(3500).unwrap();
        assert_eq!((l.linear_us, l.len()), (3500, 5304));
        let max = Layout::for_hist_us(MAX_LINEAR_US).unwrap();
        assert_eq!((max.linear_us, max.len()), (20_000, MAX_TARGET_BUCKETS));
        assert!(l.is_legal() && max.is_legal());
        assert_eq!(Layout::for_hist_us(MAX_LINEAR_US + 1), None);
        for us in [1001, 3500, 19_999, 20_000] {
            let l = Layout::for_hist_us(us).unwrap();
            assert_eq!(l.bucket_of(us as u64 * 1000 - 1), us as usize - 1);
            assert_eq!(l.bucket_of(us as u64 * 1000), us as usize);
            assert!(l.lower_us(l.len() - 1) > MIN_TOP_US);
        }
    }

    #[test]
    fn legal_layouts_are_capped_by_the_widest_linear_range() {
        assert_eq!(MAX_TARGET_BUCKETS, 21_482);
        assert!(Layout::DEFAULT.is_legal());
        let widest = Layout::new(MAX_LINEAR_US, MAX_TARGET_BUCKETS);
        assert!(widest.is_legal());
        assert!(!Layout::new(MAX_LINEAR_US, MAX_TARGET_BUCKETS + 1).is_legal());
        assert!(!Layout::new(MAX_LINEAR_US + 1, MAX_TARGET_BUCKETS).is_legal());
        assert!(!Layout::new(1000, MAX_BUCKETS).is_legal());
    }

    #[test]
    fn clamps_bad_arguments() {
        let l = Layout::new(10, 3);
        assert_eq!(l.buckets, 11);
        let big = Layout::new(100_000, 1 << 20);
        assert!(big.len() <= MAX_BUCKETS);
        assert!(!Layout {
            linear_us: 5,
            buckets: 5
        }
        .is_valid());
    }
}
