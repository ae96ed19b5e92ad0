//! A bounded time series of the largest latency per report interval.
//!
//! When it is full, neighbouring points are merged (keeping the larger
//! maximum) and later points cover twice as many reports, so a run of any
//! length fits in a fixed number of points.

/// One point: the reports up to `epoch`, ending `elapsed_ns` into the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Point {
    /// Last report covered.
    pub epoch: u32,
    /// Run time at that report (ns).
    pub elapsed_ns: u64,
    /// Largest latency over the covered reports (ns).
    pub max_ns: u64,
    /// Samples in the histogram as of that report (cumulative), so that a
    /// plot can tell an interval without samples from one with a small
    /// maximum.
    pub count: u64,
}

/// Max latency per report interval, at most `cap` points.
#[derive(Debug, Clone)]
pub(crate) struct MaxSeries {
    points: Vec<Point>,
    cap: usize,
    stride: u32,
    pending: Option<(Point, u32)>,
}

impl MaxSeries {
    /// An empty series of at most `cap` (at least 2) points. Their room
    /// is reserved at once (it is charged as a thread's fixed part, and
    /// only the points written become resident): growing by doubling
    /// copied a long run's series over and over.
    pub(crate) fn new(cap: usize) -> Self {
        let cap = cap.max(2);
        MaxSeries {
            points: Vec::with_capacity(cap),
            cap,
            stride: 1,
            pending: None,
        }
    }

    /// Add the figures of one report.
    pub(crate) fn push(&mut self, epoch: u32, elapsed_ns: u64, max_ns: u64, count: u64) {
        let p = Point {
            epoch,
            elapsed_ns,
            max_ns,
            count,
        };
        let (acc, n) = match self.pending.take() {
            Some((acc, n)) => (
                Point {
                    max_ns: acc.max_ns.max(max_ns),
                    ..p
                },
                n + 1,
            ),
            None => (p, 1),
        };
        if n < self.stride {
            self.pending = Some((acc, n));
            return;
        }
        if self.points.len() >= self.cap {
            self.halve();
        }
        self.points.push(acc);
    }

    /// Merges neighbouring points pairwise, in place (the room reserved
    /// in [`MaxSeries::new`] stays, and nothing is allocated): point `i`
    /// is made from points `2i` and `2i + 1`, which no earlier step has
    /// overwritten.
    fn halve(&mut self) {
        let n = self.points.len().div_ceil(2);
        for i in 0..n {
            let pair = &self.points[2 * i..(2 * i + 2).min(self.points.len())];
            let last = pair[pair.len() - 1];
            let max_ns = pair.iter().map(|p| p.max_ns).max().unwrap_or(0);
            self.points[i] = Point { max_ns, ..last };
        }
        self.points.truncate(n);
        self.stride = self.stride.saturating_mul(2);
    }

    /// The points, oldest first, including a partly filled last one.
    pub(crate) fn points(&self) -> Vec<Point> {
        let mut v = self.points.clone();
        if let Some((p, _)) = self.pending {
            v.push(p);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_bounded_and_keeps_the_max() {
        let mut s = MaxSeries::new(16);
        for k in 1..=10_000u32 {
            let v = if k == 7777 {
                1_000_000
            } else {
                u64::from(k % 100)
            };
            s.push(k, u64::from(k) * 1_000_000_000, v, u64::from(k));
        }
        let pts = s.points();
        assert!(pts.len() <= 17, "{}", pts.len());
        assert_eq!(pts.iter().map(|p| p.max_ns).max(), Some(1_000_000));
        assert_eq!(pts.last().unwrap().epoch, 10_000);
        assert!(pts.windows(2).all(|w| w[0].epoch < w[1].epoch));
        // A merged point covers up to its last report, count included.
        assert!(pts.iter().all(|p| p.count == u64::from(p.epoch)));
    }
}
