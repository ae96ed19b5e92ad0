//! [`Exceedances`]: one thread's samples above each quantile goal's limit,
//! block by block, folded into the sums the verdict's spread needs.

use super::{Goals, MAX_GOALS};
use crate::layout::Layout;

/// The sums over a thread's blocks of the samples `x_b` above one limit,
/// counted one way of rounding a bucket that straddles it: the moments
/// the share's spread and skewness come from. Third moments are kept as
/// `f64` (their integers overflow in a day-long run).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Side {
    /// Σ x_b.
    pub x: u64,
    /// Σ x_b².
    pub xx: u128,
    /// Σ x_b · n_b.
    pub xn: u128,
    /// Σ x_b³.
    pub xxx: f64,
    /// Σ x_b² · n_b.
    pub xxn: f64,
    /// Σ x_b · n_b².
    pub xnn: f64,
    /// Blocks with `x_b > 0`.
    pub blocks: u32,
}

impl Side {
    const ZERO: Side = Side {
        x: 0,
        xx: 0,
        xn: 0,
        xxx: 0.0,
        xxn: 0.0,
        xnn: 0.0,
        blocks: 0,
    };

    fn add(&mut self, x: u64, n: u64) {
        let (xi, ni) = (u128::from(x), u128::from(n));
        let (xf, nf) = (x as f64, n as f64);
        self.x += x;
        self.xx += xi * xi;
        self.xn += xi * ni;
        self.xxx += xf * xf * xf;
        self.xxn += xf * xf * nf;
        self.xnn += xf * nf * nf;
        self.blocks += u32::from(x > 0);
    }
}

/// A thread's sums for one limit: samples whose bucket reaches above it
/// (`hi`) and samples whose whole bucket lies above it (`lo`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Sums {
    /// Every bucket reaching above the limit.
    pub hi: Side,
    /// Whole buckets above the limit only.
    pub lo: Side,
}

/// The block sizes' sums: Σ n_b² and Σ n_b³.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Sizes {
    /// Σ n_b².
    pub nn: u128,
    /// Σ n_b³.
    pub nnn: f64,
}

/// One thread's samples above each quantile goal's limit ([`Goals::
/// quantile_limits`], in order), block by block. A block is what one
/// report's delta covers: a report interval, or the intervals since the
/// last delta after lean reports. Fixed size, const-constructible.
#[derive(Debug, Clone, PartialEq)]
pub struct Exceedances {
    limits: [u64; MAX_GOALS],
    used: usize,
    /// The open block's epoch, if one is open.
    epoch: Option<u32>,
    cur_n: u64,
    cur: [(u64, u64); MAX_GOALS],
    samples: u64,
    blocks: u32,
    sizes: Sizes,
    sums: [Sums; MAX_GOALS],
}

impl Exceedances {
    /// Counts with no limit (it counts samples and blocks only).
    pub const fn new() -> Self {
        Exceedances {
            limits: [0; MAX_GOALS],
            used: 0,
            epoch: None,
            cur_n: 0,
            cur: [(0, 0); MAX_GOALS],
            samples: 0,
            blocks: 0,
            sizes: Sizes { nn: 0, nnn: 0.0 },
            sums: [Sums {
                hi: Side::ZERO,
                lo: Side::ZERO,
            }; MAX_GOALS],
        }
    }

    /// The counts for the quantile goals of `goals`.
    pub fn for_goals(goals: &Goals) -> Self {
        let mut t = Exceedances::new();
        for (slot, limit) in t.limits.iter_mut().zip(goals.quantile_limits()) {
            *slot = limit;
            t.used += 1;
        }
        t
    }

    /// `count` samples of report `epoch` in `bucket` of `layout` (a
    /// delta's increment). A new epoch closes the block before it; the
    /// epochs come in order (an older one is added to the open block).
    pub fn add(&mut self, epoch: u32, layout: &Layout, bucket: usize, count: u64) {
        if self.epoch.is_some_and(|e| epoch > e) {
            self.end_block();
        }
        self.epoch = Some(self.epoch.map_or(epoch, |e| e.max(epoch)));
        let lower = layout.lower_ns(bucket);
        // the largest latency the bucket holds; the open last bucket any
        let top = layout
            .upper_ns(bucket)
            .map_or(u64::MAX, |u| u.saturating_sub(1));
        self.cur_n += count;
        for (i, &limit) in self.limits[..self.used].iter().enumerate() {
            if top > limit {
                self.cur[i].0 += count;
            }
            if lower > limit {
                self.cur[i].1 += count;
            }
        }
    }

    /// Close the open block (at the run's end; [`Exceedances::add`] closes the
    /// others).
    pub fn end_block(&mut self) {
        self.epoch = None;
        if self.cur_n == 0 {
            return;
        }
        let n = self.cur_n;
        self.samples += n;
        self.blocks += 1;
        self.sizes.nn += u128::from(n) * u128::from(n);
        self.sizes.nnn += (n as f64) * (n as f64) * (n as f64);
        for (s, (hi, lo)) in self.sums.iter_mut().zip(&mut self.cur).take(self.used) {
            s.hi.add(*hi, n);
            s.lo.add(*lo, n);
            (*hi, *lo) = (0, 0);
        }
        self.cur_n = 0;
    }

    /// Samples in the closed blocks.
    pub const fn samples(&self) -> u64 {
        self.samples
    }

    /// Closed blocks (with at least one sample).
    pub const fn blocks(&self) -> u32 {
        self.blocks
    }

    /// The sums for the `i`-th quantile limit, and the block sizes'.
    pub(super) fn sums(&self, i: usize) -> Option<(Sums, Sizes)> {
        (i < self.used).then(|| (self.sums[i], self.sizes))
    }
}

impl Default for Exceedances {
    fn default() -> Self {
        Exceedances::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_split_by_epoch_and_buckets_round_both_ways() {
        let goals = Goals::parse("p99<=100us,p50<=20us").unwrap();
        let l = Layout::DEFAULT;
        let mut t = Exceedances::for_goals(&goals);
        // epoch 1: 10 samples at 10 µs, 2 in the bucket of 100 µs
        t.add(1, &l, l.bucket_of(10_000), 10);
        t.add(1, &l, l.bucket_of(100_000), 2);
        // epoch 2: 3 samples far above
        t.add(2, &l, l.bucket_of(5_000_000), 3);
        t.end_block();
        assert_eq!((t.samples(), t.blocks()), (15, 2));
        let (s, sizes) = t.sums(0).unwrap();
        // the 100 µs bucket [100, 101) µs reaches above 100 µs, but not
        // wholly: 2 + 3 possibly above, 3 surely
        assert_eq!((s.hi.x, s.lo.x), (5, 3));
        assert_eq!((s.hi.xx, s.lo.xx), (4 + 9, 9));
        assert_eq!((s.hi.xn, s.lo.xn), (2 * 12 + 3 * 3, 3 * 3));
        assert_eq!(
            (s.hi.xxx, s.hi.xxn, s.hi.xnn),
            (8.0 + 27.0, 4.0 * 12.0 + 27.0, 2.0 * 144.0 + 27.0)
        );
        assert_eq!((s.hi.blocks, s.lo.blocks), (2, 1));
        assert_eq!((sizes.nn, sizes.nnn), (144 + 9, 1728.0 + 27.0));
        let (s, _) = t.sums(1).unwrap();
        assert_eq!((s.hi.x, s.lo.x), (5, 5));
        assert!(t.sums(2).is_none());
    }

    #[test]
    fn an_empty_block_is_no_block() {
        let mut t = Exceedances::new();
        t.end_block();
        t.add(3, &Layout::DEFAULT, 0, 0);
        t.end_block();
        assert_eq!((t.samples(), t.blocks()), (0, 0));
    }
}
