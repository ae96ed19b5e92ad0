//! The panels, drawn from what [`super::data`] computes.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::data::{self, LatencyAxis, Marker};
use super::{err, DrawResult, Series};
use crate::summary::us;

/// A panel's chart, drawing on `DB` with `X` by `Y` coordinates.
pub(super) type Chart<'a, DB, X, Y> = ChartContext<'a, DB, Cartesian2d<X, Y>>;

/// The floor of a log count axis: a bucket of 1 sample stands above it.
const FLOOR: f64 = 0.8;

/// The markers that get a line across the histogram (all are in the legend).
const LINED: [&str; 3] = ["p99", "p99.9", "max"];

/// The histogram's count axis goes this far above the fullest bucket: the
/// legend and the marker labels sit in that room, above every bar.
const HEADROOM: f64 = 40.0;

/// Series beyond this many get no marker lines (the legend still has the figures).
const MAX_LINED_SERIES: usize = 3;

pub(super) fn color(i: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
    ];
    C[i % C.len()]
}

/// A panel's chart: its caption above, the axis label areas, and the
/// coordinates `x` by `y`.
pub(super) fn panel<'a, DB: DrawingBackend, X: AsRangedCoord, Y: AsRangedCoord>(
    area: &'a DrawingArea<DB, Shift>,
    caption: &str,
    x: X,
    y: Y,
) -> std::result::Result<Chart<'a, DB, X::CoordDescType, Y::CoordDescType>, String> {
    ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20).into_font())
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(x, y)
        .map_err(err)
}

/// A label formatter for an axis.
pub(super) type Labels<'f> = &'f dyn Fn(&f64) -> String;

/// The grid and the axes: their descriptions and tick labels (`x_labels`
/// `None`: plotters' own).
pub(super) fn axes<'a, DB, X, Y>(
    chart: &mut Chart<'a, DB, X, Y>,
    x_desc: &str,
    x_labels: Option<Labels<'_>>,
    y_desc: &str,
    y_labels: Labels<'_>,
) -> DrawResult
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(x_desc)
        .y_desc(y_desc)
        .y_label_formatter(y_labels)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16));
    if let Some(f) = x_labels {
        mesh.x_label_formatter(f);
    }
    mesh.draw().map_err(err)
}

/// A legend entry drawn as a short line of colour `c`.
pub(super) fn legend_line(c: RGBColor) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(3))
}

/// The legend box, top right.
pub(super) fn legend<'a, DB, X, Y>(chart: &mut Chart<'a, DB, X, Y>) -> DrawResult
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(("sans-serif", 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

/// Latency tick labels: whole µs, or ms from 10 ms on.
pub(super) fn latency_label(v: &f64) -> String {
    if *v >= 10_000.0 {
        format!("{:.0} ms", v / 1000.0)
    } else {
        format!("{v:.0}")
    }
}

/// A series' legend text: its label and its markers' figures.
fn marker_text(label: &str, markers: &[Marker]) -> String {
    let figures: Vec<String> = markers
        .iter()
        .map(|m| format!("{} {}", m.name, us(m.ns)))
        .collect();
    format!("{label}: {} µs", figures.join(" · "))
}

/// A dashed vertical line at `x` over a log y axis `y0..y1`.
fn vdash<'a, DB, X, Y>(
    chart: &mut Chart<'a, DB, X, Y>,
    x: f64,
    y0: f64,
    y1: f64,
    c: RGBColor,
) -> DrawResult
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let dashes = (0..24).map(|k| {
        let a = y0 * (y1 / y0).powf(f64::from(k) / 24.0);
        let b = y0 * (y1 / y0).powf((f64::from(k) + 0.5) / 24.0);
        PathElement::new(vec![(x, a), (x, b)], c.stroke_width(1))
    });
    chart.draw_series(dashes).map_err(err)?;
    Ok(())
}

/// The histogram: one bar per non-empty bucket on a log latency axis, a
/// dot on every bar too narrow to see, and the quantiles marked.
pub(super) fn histogram<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[Series],
) -> DrawResult {
    let axis = data::latency_axis(series);
    let ymax = series
        .iter()
        .flat_map(|s| s.hist.iter().copied())
        .max()
        .unwrap_or(1)
        .max(1) as f64
        * HEADROOM;
    let total: u64 = series.iter().map(Series::total).sum();
    let linear = series.first().map(|s| s.layout.linear_us).unwrap_or(1000);
    let mut chart = panel(
        area,
        &format!("Latency histogram, {total} samples (empty buckets not drawn)"),
        (axis.lo_us..axis.hi_us).log_scale(),
        (FLOOR..ymax).log_scale(),
    )?;
    axes(
        &mut chart,
        &format!("Latency (µs, log scale); buckets 1 µs wide up to {linear} µs, ≤1 % wide above"),
        Some(&latency_label),
        "Samples per bucket (log scale)",
        &|v| format!("{v:.0}"),
    )?;
    let lined = series.len() <= MAX_LINED_SERIES;
    for (i, s) in series.iter().enumerate() {
        let c = color(i);
        let bars = data::bars(s, &axis);
        chart
            .draw_series(bars.iter().map(|b| {
                Rectangle::new(
                    [(b.lo_us, FLOOR), (b.hi_us, b.count as f64)],
                    c.mix(0.5).filled(),
                )
            }))
            .map_err(err)?;
        let markers = data::markers(s);
        chart
            .draw_series(
                bars.iter()
                    .filter(|b| axis.share(b.lo_us, b.hi_us) < 0.004)
                    .map(|b| {
                        Circle::new(((b.lo_us * b.hi_us).sqrt(), b.count as f64), 3, c.filled())
                    }),
            )
            .map_err(err)?
            .label(marker_text(&s.label, &markers))
            .legend(legend_line(c));
        if lined {
            mark(&mut chart, &axis, &markers, i, ymax, c)?;
        }
    }
    legend(&mut chart)
}

/// The lined markers of series `i`: a dashed line, and its name and value
/// beside it, staggered so that neighbouring labels do not overlap.
fn mark<'a, DB, X, Y>(
    chart: &mut Chart<'a, DB, X, Y>,
    axis: &LatencyAxis,
    markers: &[Marker],
    i: usize,
    ymax: f64,
    c: RGBColor,
) -> DrawResult
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let lined = markers.iter().filter(|m| LINED.contains(&m.name));
    for (k, m) in lined.enumerate() {
        let x = (m.ns as f64 / 1000.0).clamp(axis.lo_us, axis.hi_us);
        vdash(chart, x, FLOOR, ymax, c)?;
        let level = (i * LINED.len() + k) as i32;
        // Below the legend (the top 0.9 decades), 0.28 decades apart.
        let y = ymax / 10f64.powf(0.9 + 0.28 * f64::from(level));
        // Right of the line, or left of it near the right edge.
        let at = if axis.share(x, axis.hi_us) < 0.12 {
            x / 1.45
        } else {
            x * 1.03
        };
        chart
            .draw_series(std::iter::once(Text::new(
                format!("{} {}", m.name, us(m.ns)),
                (at, y),
                ("sans-serif", 13).into_font().color(&c),
            )))
            .map_err(err)?;
    }
    Ok(())
}

/// Exceedance: the fraction of samples at or above each latency.
pub(super) fn tail<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[Series],
) -> DrawResult {
    let axis = data::latency_axis(series);
    let min_frac = series
        .iter()
        .map(|s| 1.0 / s.total().max(1) as f64)
        .fold(1.0f64, f64::min)
        .min(1e-4)
        / 2.0;
    let mut chart = panel(
        area,
        "Tail: fraction of samples ≥ latency (p99, p99.9, p99.99 marked)",
        (axis.lo_us..axis.hi_us).log_scale(),
        (min_frac..1.5f64).log_scale(),
    )?;
    axes(
        &mut chart,
        "Latency (µs, log scale)",
        Some(&latency_label),
        "Fraction of samples ≥ latency",
        &|v| format!("{v:.0e}"),
    )?;
    for (i, s) in series.iter().enumerate() {
        let c = color(i);
        let total = s.total();
        if total == 0 {
            continue;
        }
        let mut above = total;
        let mut pts = Vec::new();
        for b in data::bars(s, &axis) {
            pts.push((b.lo_us, above as f64 / total as f64));
            above -= b.count;
            let hi = b.hi_us.min(s.max_ns as f64 / 1000.0).max(b.lo_us);
            pts.push((hi, (above as f64 / total as f64).max(min_frac)));
        }
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(err)?
            .label(s.label.clone())
            .legend(legend_line(c));
        let quantiles = data::markers(s);
        for (k, (name, frac)) in [("p99", 1e-2), ("p99.9", 1e-3), ("p99.99", 1e-4)]
            .into_iter()
            .enumerate()
        {
            let Some(m) = quantiles.iter().find(|m| m.name == name) else {
                continue;
            };
            let x = (m.ns as f64 / 1000.0).max(axis.lo_us);
            chart
                .draw_series(std::iter::once(Circle::new((x, frac), 5, c.filled())))
                .map_err(err)?;
            // The first series labels below its line, the others above.
            let dy = 1.6f64.powf(2.0 * i as f64 - 1.0) * (1.0 + 0.1 * k as f64);
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("{name} {} µs", us(m.ns)),
                    (x * 1.05, frac * dy),
                    ("sans-serif", 13).into_font().color(&c),
                )))
                .map_err(err)?;
        }
    }
    legend(&mut chart)
}

/// The max latency per report interval: intervals without samples are
/// left out (the line breaks there), and a partial last interval is drawn
/// hollow and labelled.
pub(super) fn over_time<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[Series],
) -> DrawResult {
    let all: Vec<Vec<data::Interval>> = series.iter().map(|s| data::intervals(&s.points)).collect();
    let drawn = || all.iter().flatten().filter(|i| i.samples > 0);
    let tmax = all.iter().flatten().map(|i| i.end_s).fold(1.0, f64::max);
    let ymax = drawn().map(|i| i.max_us).fold(10.0, f64::max) * 2.0;
    let ymin = drawn().map(|i| i.max_us).fold(f64::INFINITY, f64::min);
    let ymin = if ymin.is_finite() {
        (ymin / 2.0).max(1.0)
    } else {
        1.0
    };
    let empty = all.iter().flatten().filter(|i| i.samples == 0).count();
    let caption = match empty {
        0 => "Max latency per report interval".to_string(),
        n => format!("Max latency per report interval ({n} without samples, not drawn)"),
    };
    let mut chart = panel(area, &caption, 0f64..tmax, (ymin..ymax).log_scale())?;
    axes(
        &mut chart,
        "Run time (s), at the end of each interval",
        None,
        "Max latency (µs, log scale)",
        &latency_label,
    )?;
    for (i, (s, iv)) in series.iter().zip(&all).enumerate() {
        let c = color(i);
        for (k, seg) in data::segments(iv).into_iter().enumerate() {
            let drawn = chart
                .draw_series(LineSeries::new(seg.clone(), c.stroke_width(2)))
                .map_err(err)?;
            if k == 0 {
                drawn.label(s.label.clone()).legend(legend_line(c));
            }
        }
        let full = iv.iter().filter(|i| i.samples > 0 && !i.partial);
        chart
            .draw_series(full.map(|i| Circle::new((i.end_s, i.max_us), 3, c.filled())))
            .map_err(err)?;
        for p in iv.iter().filter(|i| i.samples > 0 && i.partial) {
            chart
                .draw_series([EmptyElement::at((p.end_s, p.max_us))
                    + Circle::new((0, 0), 6, c.stroke_width(2))])
                .map_err(err)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("partial interval ({:.2} s)", p.end_s - p.start_s),
                    (p.end_s - 0.12 * tmax, p.max_us * 1.5),
                    ("sans-serif", 13).into_font().color(&c),
                )))
                .map_err(err)?;
        }
    }
    legend(&mut chart)
}
