//! A board's trend: the maximum and chosen quantiles per run over time,
//! incomplete runs marked, and a latency-by-time heatmap of the runs'
//! histograms.

use std::path::Path;

use latscope_core::tz::civil_from_days;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

use super::draw::{axes, color, latency_label, legend, legend_line, panel, Chart};
use super::{err, kind, register, DrawResult};
use crate::error::{Error, Result};
use crate::summary::QUANTILES;
use crate::trend::{heat_edges_us, Board, Point, HEAT_BINS};

/// Seconds in a day: the time axis is in days.
const DAY: f64 = 86_400.0;
/// Incomplete runs are marked in this colour.
const MARK: RGBColor = RGBColor(214, 39, 40);

/// Draw `board`'s trend into `file` (`.svg` or `.png`), with the
/// quantiles `picks` (indices into [`QUANTILES`]) beside the maximum.
pub(crate) fn trend(file: &Path, board: &Board, picks: &[usize]) -> Result<()> {
    register();
    let size = (1200u32, 900u32);
    let res = if kind(file)? {
        render(SVGBackend::new(file, size), board, picks)
    } else {
        render(BitMapBackend::new(file, size), board, picks)
    };
    res.map_err(|message| Error::Plot {
        file: file.to_path_buf(),
        message: super::plain(&message),
    })
}

fn render<DB: DrawingBackend>(backend: DB, board: &Board, picks: &[usize]) -> DrawResult {
    let root = backend.into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let title = format!(
        "latscope trend: {}, {} runs ({} incomplete)",
        board.name, board.runs, board.incomplete
    );
    let root = root
        .titled(
            &title,
            ("sans-serif", 26).into_font().style(FontStyle::Bold),
        )
        .map_err(err)?;
    let areas = root.split_evenly((2, 1));
    let time = TimeAxis::of(&board.points);
    over_runs(&areas[0], board, picks, &time)?;
    heatmap(&areas[1], board, &time)?;
    root.present().map_err(err)
}

/// The time axis: in days from the first run's midnight (UTC) when the
/// runs span two days or more, else in seconds from a round time just
/// before the first run (10 s, a minute, 10 minutes or an hour, by the
/// span), so that the ticks fall on round times either way.
struct TimeAxis {
    /// Where the axis starts (s since 1970).
    origin_s: i64,
    /// Seconds in one unit of the axis: a day, or a second.
    unit_s: f64,
    /// The axis' end (units).
    end: f64,
    /// The span a point would have if the points were evenly spread (units).
    even: f64,
}

impl TimeAxis {
    fn of(points: &[Point]) -> Self {
        let first = points.first().map(|p| p.start_s).unwrap_or(0);
        let last = points.iter().map(|p| p.end_s).max().unwrap_or(first);
        let last_start = points.iter().map(|p| p.start_s).max().unwrap_or(first);
        // a minute at least
        let span_s = (last - first).max(60);
        let (origin_s, unit_s) = if span_s >= 2 * 86_400 {
            (first.div_euclid(86_400) * 86_400, DAY)
        } else {
            let grid = if span_s <= 600 {
                10
            } else if span_s <= 7_200 {
                60
            } else if span_s <= 86_400 {
                600
            } else {
                3_600
            };
            (first.div_euclid(grid) * grid, 1.0)
        };
        let span = (last - origin_s).max(span_s) as f64 / unit_s;
        let even = span / points.len().max(1) as f64;
        // room for the last point's column
        let last_column = (last_start - origin_s) as f64 / unit_s + even;
        TimeAxis {
            origin_s,
            unit_s,
            end: (span * 1.02).max(last_column),
            even,
        }
    }

    fn at(&self, unix_s: i64) -> f64 {
        (unix_s - self.origin_s) as f64 / self.unit_s
    }

    /// Point `i`'s column in the heatmap (units): its own run time, or
    /// wider, to most of the way to the next point (at most the even
    /// spread's span), so that sparse runs stay visible and never overlap.
    fn column(&self, points: &[Point], i: usize) -> (f64, f64) {
        let p = &points[i];
        let x0 = self.at(p.start_s);
        let gap = points
            .get(i + 1)
            .map(|n| self.at(n.start_s) - x0)
            .unwrap_or(self.even);
        let room = 0.8 * gap.min(self.even);
        (x0, self.at(p.end_s).max(x0 + room))
    }

    /// A tick's date over days, date and time over hours, time of day
    /// to the second over minutes.
    fn label(&self, v: &f64) -> String {
        let s = self.origin_s + (v * self.unit_s).round() as i64;
        let (y, m, d) = civil_from_days(s.div_euclid(86_400));
        let t = s.rem_euclid(86_400);
        let span_s = self.end * self.unit_s;
        if span_s > 4.0 * DAY {
            format!("{y:04}-{m:02}-{d:02}")
        } else if span_s > 7_200.0 {
            format!("{m:02}-{d:02} {:02}:{:02}", t / 3600, t / 60 % 60)
        } else {
            format!("{:02}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60)
        }
    }
}

/// The latency axis' range (µs) over every figure drawn.
fn latency_range(points: &[Point]) -> (f64, f64) {
    let all = points
        .iter()
        .flat_map(|p| p.quantiles.iter().copied().chain([p.max_ns]))
        .flatten()
        .filter(|&v| v > 0)
        .map(|v| v as f64 / 1000.0);
    let (lo, hi) = all.fold((f64::INFINITY, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    // room above the top for the legend (five rows: 1.4 decades)
    if lo.is_finite() {
        ((lo / 2.0).max(0.1), (hi * 25.0).max(lo * 50.0))
    } else {
        (1.0, 1000.0)
    }
}

/// A panel of run start (UTC) by latency `lo..hi` µs (log scale), with
/// its axes drawn.
fn time_chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    caption: &str,
    time: &TimeAxis,
    lo: f64,
    hi: f64,
) -> std::result::Result<TimeChart<'a, DB>, String> {
    let mut chart = panel(area, caption, 0f64..time.end, (lo..hi).log_scale())?;
    axes(
        &mut chart,
        "Run start (UTC)",
        Some(&|d: &f64| time.label(d)),
        "Latency (µs, log scale)",
        &latency_label,
    )?;
    Ok(chart)
}

/// A chart of [`time_chart`].
type TimeChart<'a, DB> = Chart<'a, DB, plotters::coord::types::RangedCoordf64, LogCoord<f64>>;

/// The max and the chosen quantiles of every point, joined by lines;
/// the points of incomplete runs ringed.
fn over_runs<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    board: &Board,
    picks: &[usize],
    time: &TimeAxis,
) -> DrawResult {
    let (lo, hi) = latency_range(&board.points);
    let caption = if board.stride > 1 {
        format!(
            "Max and quantiles per run, all CPUs (each point the worst of up to {} runs)",
            board.stride
        )
    } else {
        "Max and quantiles per run, all CPUs".to_string()
    };
    let mut chart = time_chart(area, &caption, time, lo, hi)?;
    // the quantiles, then the max on top of them (in a short run the
    // highest quantile is the max)
    let mut lines: Vec<(String, Vec<Option<u64>>)> = Vec::new();
    for &q in picks {
        let name = QUANTILES.get(q).map(|(_, n)| *n).unwrap_or("?");
        lines.push((
            name.to_string(),
            board
                .points
                .iter()
                .map(|p| p.quantiles.get(q).copied().flatten())
                .collect(),
        ));
    }
    lines.push((
        "max".to_string(),
        board.points.iter().map(|p| p.max_ns).collect(),
    ));
    let n = lines.len();
    for (i, (name, values)) in lines.iter().enumerate() {
        let c = color(if i + 1 == n { 0 } else { i + 2 });
        let pts: Vec<(f64, f64)> = board
            .points
            .iter()
            .zip(values)
            .filter_map(|(p, v)| v.map(|v| (time.at(p.start_s), (v as f64 / 1000.0).max(lo))))
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(err)?
            .label(name.clone())
            .legend(legend_line(c));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
            .map_err(err)?;
    }
    let marked = board.points.iter().filter(|p| p.incomplete > 0);
    let rings: Vec<(f64, f64)> = marked
        .map(|p| {
            let v = p.max_ns.map(|v| v as f64 / 1000.0).unwrap_or(lo);
            (time.at(p.start_s), v.max(lo))
        })
        .collect();
    if !rings.is_empty() {
        chart
            .draw_series(
                rings
                    .iter()
                    .map(|&p| Circle::new(p, 8, MARK.stroke_width(2))),
            )
            .map_err(err)?
            .label("incomplete run")
            .legend(|(x, y)| Circle::new((x + 12, y), 6, MARK.stroke_width(2)));
    }
    legend(&mut chart)
}

/// Every point's histogram as a column of bins, shaded by the share of
/// its samples in each (log scale); incomplete runs marked on top.
fn heatmap<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    board: &Board,
    time: &TimeAxis,
) -> DrawResult {
    let used = |b: usize| board.points.iter().any(|p| p.heat[b] > 0);
    let first = (0..HEAT_BINS).find(|&b| used(b)).unwrap_or(0);
    let last = (0..HEAT_BINS)
        .rev()
        .find(|&b| used(b))
        .unwrap_or(HEAT_BINS - 1);
    let lo = heat_edges_us(first).0;
    let hi = heat_edges_us(last).1 * 1.5;
    let caption = "Latency by time: share of each run's samples per bin (darker: more, log scale)";
    let mut chart = time_chart(area, caption, time, lo, hi)?;
    for (i, p) in board.points.iter().enumerate() {
        let total: u64 = p.heat.iter().sum();
        if total == 0 {
            continue;
        }
        let (x0, x1) = time.column(&board.points, i);
        let cells = p
            .heat
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(b, &c)| {
                let (y0, y1) = heat_edges_us(b);
                Rectangle::new(
                    [(x0, y0), (x1, y1)],
                    shade(c as f64 / total as f64).filled(),
                )
            });
        chart.draw_series(cells).map_err(err)?;
    }
    let marks = board
        .points
        .iter()
        .filter(|p| p.incomplete > 0)
        .map(|p| TriangleMarker::new((time.at(p.start_s), hi / 1.2), 6, MARK.filled()));
    chart.draw_series(marks).map_err(err)?;
    Ok(())
}

/// A share of samples (0..1] as a colour: pale yellow for one sample in
/// ten million or fewer, through teal, to dark blue for all of them
/// (ColorBrewer's YlGnBu).
fn shade(share: f64) -> RGBColor {
    const STOPS: [(u8, u8, u8); 3] = [(255, 237, 160), (65, 182, 196), (8, 48, 107)];
    let t = ((share.max(1e-7).log10() + 7.0) / 7.0).clamp(0.0, 1.0) * 2.0;
    let k = (t.floor() as usize).min(1);
    let f = t - k as f64;
    let (a, b) = (STOPS[k], STOPS[k + 1]);
    let lerp = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    RGBColor(lerp(a.0, b.0), lerp(a.1, b.1), lerp(a.2, b.2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shades_darken_with_the_share() {
        let light = shade(1e-8);
        let mid = shade(1e-3);
        let dark = shade(1.0);
        assert_eq!(light, RGBColor(255, 237, 160));
        assert_eq!(dark, RGBColor(8, 48, 107));
        assert_eq!(shade(10f64.powf(-3.5)), RGBColor(65, 182, 196));
        assert!(mid.0 < light.0 && mid.2 > light.2 && mid.0 > dark.0);
    }

    #[test]
    fn a_long_axis_labels_dates_and_a_short_one_times() {
        let p = |s: i64| Point {
            start_s: s,
            end_s: s + 60,
            runs: 1,
            incomplete: 0,
            max_ns: Some(1),
            quantiles: [None; QUANTILES.len()],
            heat: [0; HEAT_BINS],
        };
        // 2026-11-30 12:24:35 UTC and three weeks later: days from midnight
        let t = TimeAxis::of(&[p(1_796_041_475), p(1_796_041_475 + 21 * 86_400)]);
        assert_eq!(t.label(&0.0), "2026-11-30");
        assert_eq!(t.label(&7.0), "2026-12-07");
        // a day's runs: seconds from the first run's ten minutes
        let t = TimeAxis::of(&[p(1_796_041_475), p(1_796_041_475 + 20 * 3600)]);
        assert_eq!(t.label(&0.0), "11-30 12:20");
        assert_eq!(t.label(&43_200.0), "12-01 00:20");
        // runs of two minutes: an axis of seconds from the first run's
        // ten seconds, not of a day
        let t = TimeAxis::of(&[p(1_796_041_475), p(1_796_041_475 + 60)]);
        assert!(t.end < 200.0, "{}", t.end);
        assert_eq!(t.label(&0.0), "12:24:30");
        assert_eq!(t.at(1_796_041_475), 5.0);
    }
}
