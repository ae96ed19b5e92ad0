//! What the plots show, computed apart from the drawing: the latency axis,
//! the histogram's bars, the quantile markers and the report intervals.
//! The tests check a plot by these figures, not by its pixels.

use latscope_core::stats::{quantile, Ppm};

use super::Series;
use crate::aggregate::Point;

/// The latency axis, log scale, in µs: from the first non-empty bucket to
/// past the largest sample, so that the body (tens of µs) and the tail
/// (milliseconds) both get room.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LatencyAxis {
    /// Left end (µs, at least 1).
    pub lo_us: f64,
    /// Right end (µs).
    pub hi_us: f64,
}

impl LatencyAxis {
    /// The share of the axis' width that `a..b` µs takes.
    pub(crate) fn share(&self, a: f64, b: f64) -> f64 {
        let f = |x: f64| x.clamp(self.lo_us, self.hi_us).ln();
        (f(b) - f(a)) / (self.hi_us.ln() - self.lo_us.ln())
    }
}

/// `x` rounded down (`up` false) or up to 1, 2 or 5 times a power of ten.
fn nice(x: f64, up: bool) -> f64 {
    let x = x.max(1.0);
    let p = 10f64.powf(x.log10().floor());
    let steps = [1.0, 2.0, 5.0, 10.0];
    if up {
        steps
            .iter()
            .map(|s| s * p)
            .find(|&v| v >= x)
            .unwrap_or(10.0 * p)
    } else {
        steps
            .iter()
            .rev()
            .map(|s| s * p)
            .find(|&v| v <= x)
            .unwrap_or(p)
    }
}

/// The axis that shows every sample of `series`.
pub(crate) fn latency_axis(series: &[Series]) -> LatencyAxis {
    let first = series
        .iter()
        .filter_map(|s| {
            let b = s.hist.iter().position(|&n| n > 0)?;
            Some(s.layout.lower_us(b) as f64)
        })
        .fold(f64::INFINITY, f64::min);
    let lo = if first.is_finite() {
        nice(first, false)
    } else {
        1.0
    };
    let max = series.iter().map(|s| s.max_ns).max().unwrap_or(0) as f64 / 1000.0;
    let hi = nice(max * 1.25, true).max(lo * 10.0);
    LatencyAxis {
        lo_us: lo,
        hi_us: hi,
    }
}

/// One non-empty histogram bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Bar {
    /// Lower edge (µs), at least the axis' left end.
    pub lo_us: f64,
    /// Upper edge (µs).
    pub hi_us: f64,
    /// Samples in the bucket.
    pub count: u64,
}

/// The non-empty buckets of `s`: empty buckets are not drawn at all, so
/// nothing along the floor looks like data.
pub(crate) fn bars(s: &Series, axis: &LatencyAxis) -> Vec<Bar> {
    s.hist
        .iter()
        .enumerate()
        .filter(|&(_, &n)| n > 0)
        .map(|(b, &count)| {
            let lo = s.layout.lower_us(b) as f64;
            let hi = s.layout.upper_us(b).map_or(lo + 1.0, |u| u as f64);
            Bar {
                lo_us: lo.max(axis.lo_us),
                hi_us: hi.max(axis.lo_us),
                count,
            }
        })
        .collect()
}

/// A marked latency of a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Marker {
    /// What it is: `p50`, `p99`, `p99.9`, `p99.99` or `max`.
    pub name: &'static str,
    /// Its value (ns).
    pub ns: u64,
}

/// The quantiles that the series' sample count supports (a p99.9 of fewer
/// than 1,000 samples is its maximum), and the exact maximum.
pub(crate) fn markers(s: &Series) -> Vec<Marker> {
    let total = s.total();
    if total == 0 {
        return Vec::new();
    }
    let mut v: Vec<Marker> = [
        (Ppm::P50, "p50", 1),
        (Ppm::P99, "p99", 100),
        (Ppm::P999, "p99.9", 1_000),
        (Ppm::P9999, "p99.99", 10_000),
    ]
    .into_iter()
    .filter(|&(_, _, need)| total >= need)
    .filter_map(|(q, name, _)| {
        quantile(&s.layout, &s.hist, q, s.max_ns).map(|ns| Marker { name, ns })
    })
    .collect();
    v.push(Marker {
        name: "max",
        ns: s.max_ns,
    });
    v
}

/// One report interval of a series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Interval {
    /// Its start (s into the run).
    pub start_s: f64,
    /// Its end (s into the run).
    pub end_s: f64,
    /// Samples measured in it.
    pub samples: u64,
    /// Its largest sample (µs); meaningless without samples.
    pub max_us: f64,
    /// Shorter than the intervals before it (the run ended inside it).
    pub partial: bool,
}

/// An end interval shorter than this share of the usual one says nothing
/// of an interval (a run that ended just after a report leaves a sliver
/// of a few samples): it is folded into the interval before it.
const FOLD_SHARE: f64 = 0.1;

/// An end interval shorter than this share of the usual one is partial.
const PARTIAL_SHARE: f64 = 0.75;

/// The report intervals of `points`. With three or more, the last one is
/// folded into the one before when it is shorter than [`FOLD_SHARE`] of
/// the usual (median) interval, else partial when it is shorter than
/// [`PARTIAL_SHARE`] of it.
pub(crate) fn intervals(points: &[Point]) -> Vec<Interval> {
    let mut start_ns = 0u64;
    let mut count = 0u64;
    let mut v = Vec::new();
    for p in points {
        if p.epoch > 0 {
            v.push(Interval {
                start_s: start_ns as f64 / 1e9,
                end_s: p.elapsed_ns as f64 / 1e9,
                samples: p.count.saturating_sub(count),
                max_us: p.max_ns as f64 / 1000.0,
                partial: false,
            });
        }
        start_ns = p.elapsed_ns;
        count = p.count;
    }
    if v.len() >= 3 {
        let mut lengths: Vec<f64> = v[..v.len() - 1]
            .iter()
            .map(|i| i.end_s - i.start_s)
            .collect();
        lengths.sort_by(f64::total_cmp);
        let usual = lengths[lengths.len() / 2];
        if let Some(last) = v.pop() {
            let length = last.end_s - last.start_s;
            match v.last_mut() {
                Some(before) if length < FOLD_SHARE * usual => {
                    if last.samples > 0 && (before.samples == 0 || last.max_us > before.max_us) {
                        before.max_us = last.max_us;
                    }
                    before.end_s = last.end_s;
                    before.samples += last.samples;
                }
                _ => v.push(Interval {
                    partial: length < PARTIAL_SHARE * usual,
                    ..last
                }),
            }
        }
    }
    v
}

/// The lines to draw through `intervals`: an interval without samples
/// breaks the line and is not drawn (it has no maximum).
pub(crate) fn segments(intervals: &[Interval]) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut cur = Vec::new();
    for i in intervals {
        if i.samples == 0 {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        } else {
            cur.push((i.end_s, i.max_us));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use latscope_core::layout::Layout;

    use super::*;

    /// A series of `samples` (µs) in the default layout.
    fn series(samples: &[u64]) -> Series {
        let layout = Layout::DEFAULT;
        let mut hist = vec![0u64; layout.len()];
        for &us in samples {
            hist[layout.bucket_of(us * 1000)] += 1;
        }
        Series {
            label: "CPU0".into(),
            layout,
            hist,
            max_ns: samples.iter().max().copied().unwrap_or(0) * 1000,
            points: Vec::new(),
        }
    }

    /// A body of 8–50 µs and a few spikes out to 4 ms.
    fn body_and_tail() -> Vec<u64> {
        let mut v: Vec<u64> = (0..10_000).map(|k| 8 + (k * 7919) % 43).collect();
        v.extend([900, 1_200, 2_900, 3_000, 4_000]);
        v
    }

    #[test]
    fn the_axis_gives_body_and_tail_room() {
        let s = series(&body_and_tail());
        let axis = latency_axis(std::slice::from_ref(&s));
        assert!(axis.lo_us <= 8.0 && axis.hi_us >= 4_000.0, "{axis:?}");
        // On the old linear axis to 4,320 µs the body took 1 %.
        let body = axis.share(8.0, 50.0);
        assert!(
            body > 0.2,
            "the body takes {:.1} % of the axis",
            body * 100.0
        );
        let tail = axis.share(900.0, 4_000.0);
        assert!(
            tail > 0.15,
            "the tail takes {:.1} % of the axis",
            tail * 100.0
        );
    }

    #[test]
    fn every_bar_is_a_non_empty_bucket_and_every_sample_is_in_a_bar() {
        let samples = body_and_tail();
        let s = series(&samples);
        let axis = latency_axis(std::slice::from_ref(&s));
        let b = bars(&s, &axis);
        assert!(b.iter().all(|b| b.count > 0));
        assert_eq!(b.len(), s.hist.iter().filter(|&&n| n > 0).count());
        assert_eq!(b.iter().map(|b| b.count).sum::<u64>(), samples.len() as u64);
        // No bar bridges the empty stretch between the body and the spikes.
        assert!(
            b.iter().all(|b| b.hi_us <= 51.0 || b.lo_us >= 900.0),
            "{b:?}"
        );
        assert!(b.iter().all(|b| b.lo_us < b.hi_us && b.lo_us >= axis.lo_us));
    }

    #[test]
    fn markers_follow_the_quantiles_the_count_supports() {
        let s = series(&body_and_tail());
        let m = markers(&s);
        let names: Vec<_> = m.iter().map(|m| m.name).collect();
        assert_eq!(names, ["p50", "p99", "p99.9", "p99.99", "max"]);
        assert_eq!(m[4].ns, 4_000_000);
        assert_eq!(
            m[1].ns,
            quantile(&s.layout, &s.hist, Ppm::P99, s.max_ns).unwrap()
        );
        assert!(m.windows(2).all(|w| w[0].ns <= w[1].ns));
        let few = series(&[10, 20, 30]);
        let names: Vec<_> = markers(&few).iter().map(|m| m.name).collect();
        assert_eq!(names, ["p50", "max"]);
        assert!(markers(&series(&[])).is_empty());
    }

    fn point(epoch: u32, elapsed_ms: u64, max_us: u64, count: u64) -> Point {
        Point {
            epoch,
            elapsed_ns: elapsed_ms * 1_000_000,
            max_ns: max_us * 1000,
            count,
        }
    }

    #[test]
    fn the_short_last_interval_is_partial_and_an_empty_one_is_not_drawn() {
        // Hello stats at 0, reports every second, the bye at 10.27 s with
        // no sample after the last report (as a real run's end gives).
        let mut pts = vec![point(0, 0, 0, 0)];
        for k in 1..=10 {
            pts.push(point(
                k,
                u64::from(k) * 1000,
                40 + u64::from(k),
                u64::from(k) * 1000,
            ));
        }
        pts.push(point(11, 10_270, 0, 10_000));
        let iv = intervals(&pts);
        assert_eq!(iv.len(), 11);
        assert!(iv[..10].iter().all(|i| !i.partial && i.samples == 1000));
        let last = iv[10];
        assert!(last.partial && last.samples == 0, "{last:?}");
        let seg = segments(&iv);
        assert_eq!(seg.len(), 1);
        assert_eq!(seg[0].len(), 10);
        // The old plot drew that interval as a 1 µs maximum at 10.27 s.
        assert!(seg[0].iter().all(|&(t, m)| m >= 41.0 && t <= 10.0));

        // A gap in the middle breaks the line; a partial last interval
        // with samples is drawn, and flagged.
        pts[5] = point(5, 5000, 0, 4000);
        pts[11] = point(11, 10_300, 77, 10_200);
        let iv = intervals(&pts);
        assert!(iv[10].partial && iv[10].samples == 200);
        let seg = segments(&iv);
        assert_eq!(seg.iter().map(Vec::len).collect::<Vec<_>>(), [4, 6]);
        assert_eq!(seg[1].last(), Some(&(10.3, 77.0)));
    }

    /// The README's first command ended its plot in a "partial interval
    /// (0.00 s)": one sample of about 30 µs, CPU 0's line plunging to it
    /// from 1.5 ms. Such a sliver joins the interval before it.
    #[test]
    fn an_end_sliver_is_folded_into_the_interval_before_it() {
        let mut pts = vec![point(0, 0, 0, 0)];
        for k in 1..=10 {
            pts.push(point(k, u64::from(k) * 1000, 1500, u64::from(k) * 1000));
        }
        pts.push(point(11, 10_002, 30, 10_001));
        let iv = intervals(&pts);
        assert_eq!(iv.len(), 10, "{iv:?}");
        let last = iv[9];
        assert!(!last.partial, "{last:?}");
        assert_eq!(
            (last.start_s, last.end_s, last.samples, last.max_us),
            (9.0, 10.002, 1001, 1500.0)
        );
        let seg = segments(&iv);
        assert_eq!(seg[0].last(), Some(&(10.002, 1500.0)));

        // A sliver's larger maximum is the folded interval's.
        pts[11] = point(11, 10_002, 2_000, 10_001);
        assert_eq!(intervals(&pts)[9].max_us, 2_000.0);
        // A tenth of an interval or more is drawn, as partial.
        pts[11] = point(11, 10_150, 30, 10_100);
        let iv = intervals(&pts);
        assert_eq!(iv.len(), 11);
        assert!(iv[10].partial && iv[10].max_us == 30.0, "{:?}", iv[10]);
    }

    #[test]
    fn a_full_last_interval_is_not_partial() {
        let pts: Vec<Point> = (0..=5)
            .map(|k| point(k, u64::from(k) * 1000, 50, u64::from(k) * 10))
            .collect();
        assert!(intervals(&pts).iter().all(|i| !i.partial));
    }
}
