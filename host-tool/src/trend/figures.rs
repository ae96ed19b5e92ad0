//! One run's figures in the trend, as the CSV gives them, and the points
//! the plots draw: one per run, or neighbouring runs merged once a board
//! has more than [`MAX_POINTS`], so that the plots' memory stays bounded
//! however many runs there are.

use std::fmt::Write;
use std::time::SystemTime;

use latscope_core::tz::{civil_from_days, WallTime};
use latscope_core::wire::LinkStats;

use crate::aggregate::Run;
use crate::record::board_name;
use crate::report::completeness;
use crate::report::csv_field;
use crate::report::cyclictest::times;
use crate::summary::{summarize, QUANTILES};

/// Bins of the heatmap per decade of latency.
pub(crate) const HEAT_PER_DECADE: u32 = 10;
/// The heatmap's lowest edge: 1 µs (lower samples count in its first bin).
pub(crate) const HEAT_LO_NS: u64 = 1_000;
/// The heatmap's bins: 1 µs to 1 s (higher samples count in its last bin).
pub(crate) const HEAT_BINS: usize = 60;
/// Points a board's plot keeps: one more run merges neighbouring points
/// two by two (each the worst of its runs).
pub const MAX_POINTS: usize = 512;

/// The heatmap bin of a latency.
pub(crate) fn heat_bin(ns: u64) -> usize {
    if ns <= HEAT_LO_NS {
        return 0;
    }
    let decades = (ns as f64 / HEAT_LO_NS as f64).log10();
    ((decades * f64::from(HEAT_PER_DECADE)).floor() as usize).min(HEAT_BINS - 1)
}

/// A heatmap bin's edges in µs (the last one is open above: its upper
/// edge is where the axis ends).
pub(crate) fn heat_edges_us(bin: usize) -> (f64, f64) {
    let edge =
        |b: usize| HEAT_LO_NS as f64 / 1000.0 * 10f64.powf(b as f64 / f64::from(HEAT_PER_DECADE));
    (edge(bin), edge(bin + 1))
}

/// The figures of one run.
#[derive(Debug, Clone)]
pub(crate) struct RunFigures {
    /// The board: its name, else its host name.
    pub board: String,
    /// The run's id.
    pub run_id: u64,
    /// When it started (as its hello says, else estimated from the
    /// recording's modification time).
    pub started: WallTime,
    /// How long it ran (ns), as its bye or last statistics say.
    pub duration_ns: u64,
    /// Nothing of it was lost (`report`'s completeness).
    pub complete: bool,
    /// Why it is incomplete, as `report` says it (empty when complete).
    pub why: String,
    /// Samples in its histograms, all threads.
    pub samples: u64,
    /// Missed periods, all threads.
    pub missed: u64,
    /// Major faults, all threads.
    pub majflt: u64,
    /// Smallest sample (ns).
    pub min_ns: Option<u64>,
    /// The reported quantiles ([`QUANTILES`]), all threads (ns).
    pub quantiles: [Option<u64>; QUANTILES.len()],
    /// Largest sample (ns), exact.
    pub max_ns: Option<u64>,
    /// Samples per heatmap bin, all threads.
    pub heat: [u64; HEAT_BINS],
}

impl RunFigures {
    /// The figures of `run`, read with link statistics `link` from a
    /// recording last modified at `end`.
    pub(crate) fn of(run: &Run, link: &LinkStats, end: SystemTime) -> Self {
        let (_, all) = summarize(run);
        let mut quantiles = [None; QUANTILES.len()];
        for (q, (_, v)) in quantiles.iter_mut().zip(&all.quantiles) {
            *q = *v;
        }
        let mut heat = [0u64; HEAT_BINS];
        for (b, &c) in all.hist.iter().enumerate().filter(|(_, &c)| c > 0) {
            heat[heat_bin(run.layout.lower_us(b).saturating_mul(1000))] += c;
        }
        let losses = completeness::losses(run, link);
        let why: Vec<String> = losses.iter().map(completeness::Loss::message).collect();
        RunFigures {
            board: board_name(&run.hello).to_string(),
            run_id: run.hello.run_id,
            started: times(run, end).0,
            duration_ns: run.bye.map(|b| b.elapsed_ns).unwrap_or(all.elapsed_ns),
            complete: losses.is_empty(),
            why: why.join("; "),
            samples: all.count,
            missed: all.missed,
            majflt: all.majflt,
            min_ns: all.min_ns,
            quantiles,
            max_ns: all.max_ns,
            heat,
        }
    }

    /// Its row of the trend's CSV ([`CSV_HEADER`]), for recording `file`.
    pub(crate) fn csv_row(&self, file: &str) -> String {
        let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        let mut row = format!(
            "{},{:016x},{},{},{:.3},{},{},{},{},{},{}",
            csv_field(&self.board),
            self.run_id,
            self.started.unix_s,
            iso(self.started),
            self.duration_ns as f64 / 1e9,
            self.complete,
            csv_field(&self.why),
            self.samples,
            self.missed,
            self.majflt,
            opt(self.min_ns),
        );
        for q in self.quantiles {
            let _ = write!(row, ",{}", opt(q));
        }
        let _ = writeln!(row, ",{},{}", opt(self.max_ns), csv_field(file));
        row
    }

    /// Its rows of the heatmap's CSV ([`HEAT_HEADER`]): one per non-empty bin.
    pub(crate) fn heat_rows(&self) -> String {
        let mut out = String::new();
        for (b, &c) in self.heat.iter().enumerate().filter(|(_, &c)| c > 0) {
            let (lo, hi) = heat_edges_us(b);
            let hi = if b + 1 == HEAT_BINS {
                String::new()
            } else {
                format!("{hi:.3}")
            };
            let _ = writeln!(
                out,
                "{},{:016x},{},{lo:.3},{hi},{c}",
                csv_field(&self.board),
                self.run_id,
                self.started.unix_s
            );
        }
        out
    }
}

/// The first line of the trend's CSV.
pub(crate) fn csv_header() -> String {
    let mut h = String::from(
        "board,run_id,started_unix_s,started,duration_s,complete,incomplete_why,samples,missed,major_faults,min_ns",
    );
    for (_, name) in QUANTILES {
        let _ = write!(h, ",{name}_ns");
    }
    h.push_str(",max_ns,file\n");
    h
}

/// The first line of the heatmap's CSV (a bin's upper edge is empty for
/// the last, open bin).
pub(crate) const HEAT_HEADER: &str =
    "board,run_id,started_unix_s,bin_lower_us,bin_upper_us,samples\n";

/// `2026-11-30T13:24:35+01:00`: a wall time in its own zone.
pub(crate) fn iso(t: WallTime) -> String {
    let local = t.unix_s + i64::from(t.utc_offset_s);
    let (y, m, d) = civil_from_days(local.div_euclid(86_400));
    let s = local.rem_euclid(86_400);
    let off = t.utc_offset_s;
    let sign = if off < 0 { '-' } else { '+' };
    let off = off.unsigned_abs();
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}{sign}{:02}:{:02}",
        s / 3600,
        s / 60 % 60,
        s % 60,
        off / 3600,
        off / 60 % 60
    )
}

/// A run, or neighbouring runs of one board merged, as the plots draw it.
#[derive(Debug, Clone)]
pub(crate) struct Point {
    /// The first run's start (s since 1970).
    pub start_s: i64,
    /// The last run's end (s since 1970).
    pub end_s: i64,
    /// Runs merged into the point.
    pub runs: u32,
    /// Of them, incomplete.
    pub incomplete: u32,
    /// The largest of their maxima (ns).
    pub max_ns: Option<u64>,
    /// The largest of each of their quantiles (ns).
    pub quantiles: [Option<u64>; QUANTILES.len()],
    /// Their samples per heatmap bin.
    pub heat: [u64; HEAT_BINS],
}

impl Point {
    fn of(f: &RunFigures) -> Self {
        let secs = i64::try_from(f.duration_ns / 1_000_000_000).unwrap_or(i64::MAX);
        Point {
            start_s: f.started.unix_s,
            end_s: f.started.unix_s.saturating_add(secs),
            runs: 1,
            incomplete: u32::from(!f.complete),
            max_ns: f.max_ns,
            quantiles: f.quantiles,
            heat: f.heat,
        }
    }

    /// `next` folded in: the later end, the worst figures, the samples summed.
    fn merge(&mut self, next: &Point) {
        self.start_s = self.start_s.min(next.start_s);
        self.end_s = self.end_s.max(next.end_s);
        self.runs += next.runs;
        self.incomplete += next.incomplete;
        self.max_ns = self.max_ns.max(next.max_ns);
        for (q, n) in self.quantiles.iter_mut().zip(next.quantiles) {
            *q = (*q).max(n);
        }
        for (h, n) in self.heat.iter_mut().zip(next.heat) {
            *h += n;
        }
    }
}

/// One board's history, in bounded memory.
#[derive(Debug, Clone)]
pub(crate) struct Board {
    /// Its name.
    pub name: String,
    /// Its points, at most [`MAX_POINTS`], each of `stride` runs (the
    /// last of fewer).
    pub points: Vec<Point>,
    /// Runs per point.
    pub stride: u32,
    /// Runs seen.
    pub runs: u64,
    /// Of them, incomplete.
    pub incomplete: u64,
    /// The worst run: its max (ns), id and start.
    pub worst: Option<(u64, u64, WallTime)>,
    /// The latest run's figures.
    pub latest: Option<RunFigures>,
}

impl Board {
    /// A board without runs yet.
    pub(crate) fn new(name: &str) -> Self {
        Board {
            name: name.to_string(),
            points: Vec::new(),
            stride: 1,
            runs: 0,
            incomplete: 0,
            worst: None,
            latest: None,
        }
    }

    /// Take one more run (runs come in the order they started).
    pub(crate) fn push(&mut self, f: &RunFigures) {
        self.runs += 1;
        self.incomplete += u64::from(!f.complete);
        if let Some(m) = f.max_ns {
            if self.worst.is_none_or(|(w, _, _)| m > w) {
                self.worst = Some((m, f.run_id, f.started));
            }
        }
        if self
            .latest
            .as_ref()
            .is_none_or(|l| f.started.unix_s >= l.started.unix_s)
        {
            self.latest = Some(f.clone());
        }
        let p = Point::of(f);
        match self.points.last_mut() {
            Some(last) if last.runs < self.stride => last.merge(&p),
            _ => {
                if self.points.len() == MAX_POINTS {
                    self.halve();
                    return self.push_point(p);
                }
                self.points.push(p);
            }
        }
    }

    /// After [`Board::halve`]: into the last point if it has room.
    fn push_point(&mut self, p: Point) {
        match self.points.last_mut() {
            Some(last) if last.runs < self.stride => last.merge(&p),
            _ => self.points.push(p),
        }
    }

    /// Merge the points two by two: half as many, each of twice the runs.
    fn halve(&mut self) {
        let old = std::mem::take(&mut self.points);
        let mut it = old.into_iter();
        while let Some(mut a) = it.next() {
            if let Some(b) = it.next() {
                a.merge(&b);
            }
            self.points.push(a);
        }
        self.stride = self.stride.saturating_mul(2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(i: i64, max_ns: u64, complete: bool) -> RunFigures {
        let mut heat = [0; HEAT_BINS];
        heat[heat_bin(max_ns)] = 1;
        RunFigures {
            board: "b".into(),
            run_id: i as u64,
            started: WallTime {
                unix_s: 1_000_000 + i * 3600,
                utc_offset_s: 0,
            },
            duration_ns: 60_000_000_000,
            complete,
            why: String::new(),
            samples: 1,
            missed: 0,
            majflt: 0,
            min_ns: Some(max_ns),
            quantiles: [Some(max_ns); QUANTILES.len()],
            max_ns: Some(max_ns),
            heat,
        }
    }

    #[test]
    fn heat_bins_are_tenths_of_decades_from_a_microsecond() {
        assert_eq!(heat_bin(0), 0);
        assert_eq!(heat_bin(1_000), 0);
        assert_eq!(heat_bin(1_200), 0);
        assert_eq!(heat_bin(1_300), 1);
        assert_eq!(heat_bin(10_000), 10);
        assert_eq!(heat_bin(999_999), 29);
        assert_eq!(heat_bin(1_000_000), 30);
        assert_eq!(heat_bin(u64::MAX), HEAT_BINS - 1);
        let (lo, hi) = heat_edges_us(10);
        assert!(
            (lo - 10.0).abs() < 1e-9 && (hi - 12.589).abs() < 1e-3,
            "{lo} {hi}"
        );
    }

    #[test]
    fn a_board_keeps_at_most_its_points_and_every_runs_worst() {
        let mut b = Board::new("b");
        let n = 3 * MAX_POINTS as i64 + 7;
        for i in 0..n {
            // one run in 1,000 is incomplete, run 1,234 is the worst
            let max = if i == 1234 {
                5_000_000
            } else {
                10_000 + i as u64
            };
            b.push(&figures(i, max, i % 1000 != 999));
        }
        assert!(b.points.len() <= MAX_POINTS, "{}", b.points.len());
        assert_eq!(b.stride, 4);
        let runs: u64 = b.points.iter().map(|p| u64::from(p.runs)).sum();
        assert_eq!(runs, n as u64);
        assert!(b.points.iter().all(|p| p.runs <= b.stride));
        let incomplete: u32 = b.points.iter().map(|p| p.incomplete).sum();
        assert_eq!((incomplete, b.incomplete), (1, 1));
        let worst = b.points.iter().filter_map(|p| p.max_ns).max();
        assert_eq!(worst, Some(5_000_000));
        assert_eq!(b.worst.map(|w| w.1), Some(1234));
        assert_eq!(b.latest.as_ref().map(|l| l.run_id), Some(n as u64 - 1));
        // in time order, each point after the one before
        assert!(b.points.windows(2).all(|w| w[0].end_s <= w[1].start_s));
        let heat: u64 = b.points.iter().flat_map(|p| p.heat).sum();
        assert_eq!(heat, n as u64);
    }

    #[test]
    fn iso_times_are_in_their_own_zone() {
        let t = WallTime {
            unix_s: 1_796_041_475,
            utc_offset_s: 3600,
        };
        assert_eq!(iso(t), "2026-11-30T13:24:35+01:00");
        let t = WallTime {
            unix_s: 0,
            utc_offset_s: -(5 * 3600 + 1800),
        };
        assert_eq!(iso(t), "1969-12-31T18:30:00-05:30");
    }

    #[test]
    fn csv_rows_quote_what_needs_it_and_have_every_column() {
        let mut f = figures(0, 20_000, false);
        f.board = "lab,\"a\"".into();
        f.why = "no bye".into();
        let row = f.csv_row("x.lsr");
        assert!(
            row.starts_with("\"lab,\"\"a\"\"\",0000000000000000,"),
            "{row}"
        );
        let cols = |s: &str| s.trim_end().split(',').count();
        // the board's quoted comma is one more split
        assert_eq!(cols(&row), cols(&csv_header()) + 1, "{row}");
        assert!(row.trim_end().ends_with(",20000,x.lsr"), "{row}");
    }
}
