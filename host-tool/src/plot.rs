//! Plots, drawn with plotters and a bundled font (no fontconfig): the
//! OSADL-style latency histogram, the tail (exceedance) plot with p99,
//! p99.9 and p99.99 marked, and the max latency per report interval.

use std::path::Path;
use std::sync::Once;

use latscope_core::layout::Layout;
use latscope_core::stats::{quantile, Ppm};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::aggregate::{Point, Run};
use crate::error::{Error, Result};
use crate::summary::{summarize, us};

/// DejaVu Sans (Bitstream Vera licence, see `assets/DejaVuSans.LICENSE`).
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
static FONT_ONCE: Once = Once::new();

fn register() {
    FONT_ONCE.call_once(|| {
        for style in [FontStyle::Normal, FontStyle::Bold] {
            let _ = plotters::style::register_font("sans-serif", style, FONT);
        }
    });
}

/// One histogram series to draw.
pub(crate) struct Series {
    /// Legend label.
    pub label: String,
    /// Layout of `hist`.
    pub layout: Layout,
    /// Cumulative counts.
    pub hist: Vec<u64>,
    /// Exact max (ns).
    pub max_ns: u64,
    /// Max per report interval.
    pub points: Vec<Point>,
}

impl Series {
    fn total(&self) -> u64 {
        self.hist.iter().sum()
    }
}

/// The series of a run: one per thread (labelled by CPU).
pub(crate) fn run_series(run: &Run, prefix: &str) -> Vec<Series> {
    let (per, _) = summarize(run);
    per.into_iter()
        .map(|s| {
            let t = s.thread.and_then(|i| run.threads.get(usize::from(i)));
            Series {
                label: format!(
                    "{prefix}{}",
                    match s.cpu {
                        Some(c) => format!("CPU{c}"),
                        None => s.label.clone(),
                    }
                ),
                layout: run.layout,
                max_ns: s.max_ns.unwrap_or(0),
                points: t.map(|t| t.series.points()).unwrap_or_default(),
                hist: s.hist,
            }
        })
        .collect()
}

/// The all-CPU series of a run.
pub(crate) fn run_all(run: &Run, label: &str) -> Series {
    let (_, all) = summarize(run);
    Series {
        label: label.to_string(),
        layout: run.layout,
        max_ns: all.max_ns.unwrap_or(0),
        points: Vec::new(),
        hist: all.hist,
    }
}

type DrawResult = std::result::Result<(), String>;

/// A panel's chart, drawing on `DB` with `X` by `Y` coordinates.
type Chart<'a, DB, X, Y> = ChartContext<'a, DB, Cartesian2d<X, Y>>;

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Check a plot's file before any input is read: its name ends in `.svg`
/// or `.png` and it can be created (the drawing later overwrites it).
pub(crate) fn check(file: &Path) -> Result<()> {
    kind(file)?;
    std::fs::File::create(file)
        .map(drop)
        .map_err(|source| Error::Output {
            what: file.to_path_buf(),
            source,
        })
}

/// Whether `file` is an SVG (else a PNG).
fn kind(file: &Path) -> Result<bool> {
    let ext = file
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("svg") => Ok(true),
        Some("png") => Ok(false),
        _ => Err(Error::Usage(format!(
            "--plot {}: the file name must end in .svg or .png",
            file.display()
        ))),
    }
}

/// Draw `series` into `file` (`.svg` or `.png`): histogram, tail plot and,
/// when `time_series`, max per report interval.
pub(crate) fn draw(file: &Path, title: &str, series: &[Series], time_series: bool) -> Result<()> {
    register();
    let panels = if time_series { 3 } else { 2 };
    let size = (1200u32, 450 * panels as u32);
    let res = if kind(file)? {
        render(SVGBackend::new(file, size), title, series, time_series)
    } else {
        render(BitMapBackend::new(file, size), title, series, time_series)
    };
    res.map_err(|message| Error::Plot {
        file: file.to_path_buf(),
        message: plain(&message),
    })
}

/// The plotting library's error text without Rust debug formatting: an
/// OS error as the OS says it, else only the text before any `(` or `{`.
fn plain(message: &str) -> String {
    if let Some(code) = message
        .split("Os { code: ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse::<i32>().ok())
    {
        return std::io::Error::from_raw_os_error(code).to_string();
    }
    if message.contains(['{', '}']) {
        let head = message.split(['(', '{']).next().unwrap_or("").trim();
        return head.trim_end_matches(':').to_string();
    }
    message.to_string()
}

/// Draw the panels on `backend` and write the file out.
fn render<DB: DrawingBackend>(
    backend: DB,
    title: &str,
    series: &[Series],
    time_series: bool,
) -> DrawResult {
    let root = backend.into_drawing_area();
    panels_on(&root, title, series, time_series)?;
    root.present().map_err(err)
}

fn panels_on<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    series: &[Series],
    time_series: bool,
) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let root = root
        .titled(title, ("sans-serif", 26).into_font().style(FontStyle::Bold))
        .map_err(err)?;
    let n = if time_series { 3 } else { 2 };
    let areas = root.split_evenly((n, 1));
    histogram(&areas[0], series)?;
    tail(&areas[1], series)?;
    if time_series {
        over_time(&areas[2], series)?;
    }
    Ok(())
}

fn color(i: usize) -> RGBColor {
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
fn panel<'a, DB: DrawingBackend, X: AsRangedCoord, Y: AsRangedCoord>(
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
type Labels<'f> = &'f dyn Fn(&f64) -> String;

/// The grid and the axes: their descriptions and tick labels (`x_labels`
/// `None`: plotters' own).
fn axes<'a, DB, X, Y>(
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

/// One series' line in colour `c`, with its entry in the legend.
fn line<'a, DB, X, Y>(
    chart: &mut Chart<'a, DB, X, Y>,
    pts: Vec<(f64, f64)>,
    c: RGBColor,
    label: String,
) -> DrawResult
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart
        .draw_series(LineSeries::new(pts, c.stroke_width(2)))
        .map_err(err)?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(3)));
    Ok(())
}

/// The legend box, top right.
fn legend<'a, DB, X, Y>(chart: &mut Chart<'a, DB, X, Y>) -> DrawResult
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

/// The x range in µs that shows every sample.
fn x_max_us(series: &[Series]) -> f64 {
    let m = series.iter().map(|s| s.max_ns).max().unwrap_or(0) as f64 / 1000.0;
    (m * 1.08).max(10.0).ceil()
}

fn histogram<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, series: &[Series]) -> DrawResult {
    let xmax = x_max_us(series);
    let ymax = series
        .iter()
        .flat_map(|s| s.hist.iter().copied())
        .max()
        .unwrap_or(1)
        .max(1) as f64
        * 3.0;
    let linear = series.first().map(|s| s.layout.linear_us).unwrap_or(1000);
    let mut chart = panel(
        area,
        "Latency histogram (OSADL style)",
        0f64..xmax,
        (0.8f64..ymax).log_scale(),
    )?;
    axes(
        &mut chart,
        &format!("Latency (µs); buckets 1 µs wide up to {linear} µs, ≤1 % wide above"),
        Some(&|v| format!("{v:.0}")),
        "Number of latency samples",
        &|v| format!("{v:.0}"),
    )?;
    for (i, s) in series.iter().enumerate() {
        let c = color(i);
        let last = s.hist.iter().rposition(|&x| x > 0).unwrap_or(0);
        let mut pts = Vec::with_capacity(2 * last + 4);
        for b in 0..=last {
            let lo = s.layout.lower_us(b) as f64;
            let hi = s.layout.upper_us(b).map(|u| u as f64).unwrap_or(lo + 1.0);
            let y = (s.hist[b] as f64).max(0.8);
            pts.push((lo, y));
            pts.push((hi, y));
        }
        if let Some(&(x, _)) = pts.last() {
            pts.push((x, 0.8));
        }
        let max_us = s.max_ns as f64 / 1000.0;
        line(
            &mut chart,
            pts,
            c,
            format!("{}  max {} µs", s.label, us(s.max_ns)),
        )?;
        // The max, marked with a dashed vertical line and a label.
        let dashes: Vec<_> = (0..24)
            .map(|k| {
                let y0 = 0.8 * (ymax / 0.8).powf(k as f64 / 24.0);
                let y1 = 0.8 * (ymax / 0.8).powf((k as f64 + 0.5) / 24.0);
                PathElement::new(vec![(max_us, y0), (max_us, y1)], c.stroke_width(1))
            })
            .collect();
        chart.draw_series(dashes).map_err(err)?;
        chart
            .draw_series(std::iter::once(Text::new(
                format!("max {} µs", us(s.max_ns)),
                (
                    if max_us > xmax * 0.8 {
                        max_us - xmax * 0.13
                    } else {
                        max_us + xmax * 0.005
                    },
                    ymax / 10f64.powi(i as i32 + 2),
                ),
                ("sans-serif", 14).into_font().color(&c),
            )))
            .map_err(err)?;
    }
    legend(&mut chart)
}

/// Exceedance: the fraction of samples at or above each latency.
fn tail<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, series: &[Series]) -> DrawResult {
    let xmax = x_max_us(series).max(2.0);
    let min_frac = series
        .iter()
        .map(|s| 1.0 / s.total().max(1) as f64)
        .fold(1.0f64, f64::min)
        .min(1e-4)
        / 2.0;
    let mut chart = panel(
        area,
        "Tail: fraction of samples ≥ latency (p99, p99.9, p99.99 marked)",
        (1f64..xmax).log_scale(),
        (min_frac..1.5f64).log_scale(),
    )?;
    axes(
        &mut chart,
        "Latency (µs, log scale)",
        Some(&|v| format!("{v:.0}")),
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
        for (b, &n) in s.hist.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let lo = (s.layout.lower_us(b) as f64).max(1.0);
            pts.push((lo, above as f64 / total as f64));
            above -= n;
            let hi = s
                .layout
                .upper_us(b)
                .map(|u| u as f64)
                .unwrap_or(lo + 1.0)
                .min(s.max_ns as f64 / 1000.0)
                .max(lo);
            pts.push((hi, (above as f64 / total as f64).max(min_frac)));
        }
        line(&mut chart, pts, c, s.label.clone())?;
        for (k, (q, name, frac)) in [
            (Ppm::P99, "p99", 1e-2),
            (Ppm::P999, "p99.9", 1e-3),
            (Ppm::P9999, "p99.99", 1e-4),
        ]
        .into_iter()
        .enumerate()
        {
            if 1.0 / (total as f64) > frac {
                continue;
            }
            if let Some(v) = quantile(&s.layout, &s.hist, q, s.max_ns) {
                let x = (v as f64 / 1000.0).max(1.0);
                chart
                    .draw_series(std::iter::once(Circle::new((x, frac), 5, c.filled())))
                    .map_err(err)?;
                let dy = 1.0 + 0.6 * i as f64 + 0.1 * k as f64;
                chart
                    .draw_series(std::iter::once(Text::new(
                        format!("{name} {} µs", us(v)),
                        (x * 1.05, frac * dy),
                        ("sans-serif", 13).into_font().color(&c),
                    )))
                    .map_err(err)?;
            }
        }
    }
    legend(&mut chart)
}

fn over_time<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, series: &[Series]) -> DrawResult {
    let tmax = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.elapsed_ns))
        .max()
        .unwrap_or(1) as f64
        / 1e9;
    let ymax = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.max_ns))
        .max()
        .unwrap_or(1)
        .max(1) as f64
        / 1000.0
        * 2.0;
    let mut chart = panel(
        area,
        "Max latency per report interval",
        0f64..tmax.max(1.0),
        (1f64..ymax.max(10.0)).log_scale(),
    )?;
    axes(
        &mut chart,
        "Run time (s)",
        None,
        "Max latency (µs, log scale)",
        &|v| format!("{v:.0}"),
    )?;
    for (i, s) in series.iter().enumerate() {
        let c = color(i);
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter(|p| p.epoch > 0)
            .map(|p| {
                (
                    p.elapsed_ns as f64 / 1e9,
                    (p.max_ns as f64 / 1000.0).max(1.0),
                )
            })
            .collect();
        line(&mut chart, pts.clone(), c, s.label.clone())?;
        chart
            .draw_series(pts.into_iter().map(|p| Circle::new(p, 2, c.filled())))
            .map_err(err)?;
    }
    legend(&mut chart)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plot_errors_read_without_debug_text() {
        let png = r#"backend error: Drawing backend error: ImageError(IoError(Os { code: 2, kind: NotFound, message: "No such file or directory" }))"#;
        assert_eq!(plain(png), std::io::Error::from_raw_os_error(2).to_string());
        assert_eq!(
            plain("backend error: Drawing backend error: Not a directory (os error 20)"),
            "backend error: Drawing backend error: Not a directory (os error 20)"
        );
        let other = plain("backend error: Font { name: \"x\" }");
        assert_eq!(other, "backend error: Font");
        assert!(!other.contains(['{', '(']));
    }

    #[test]
    fn check_needs_a_known_extension_and_a_folder() {
        assert!(matches!(check(Path::new("x.jpg")), Err(Error::Usage(_))));
        let e = check(Path::new("/nonexistent-latscope/x.png")).unwrap_err();
        assert!(matches!(e, Error::Output { .. }), "{e}");
        assert!(!e.to_string().contains('{'), "{e}");
    }
}
