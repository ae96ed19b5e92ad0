//! Plots, drawn with plotters and a bundled font (no fontconfig): the
//! latency histogram on a log latency axis, the tail (exceedance) plot
//! with p99, p99.9 and p99.99 marked, and the max latency per report
//! interval. [`data`] computes what each panel shows; [`draw`] draws it.

mod data;
mod draw;
mod trend;

pub(crate) use trend::trend;

use std::path::Path;
use std::sync::Once;

use latscope_core::layout::Layout;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::aggregate::{Point, Run};
use crate::error::{Error, Result};
use crate::summary::summarize;

/// DejaVu Sans (Bitstream Vera licence, see `assets/DejaVuSans.LICENSE`).
static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
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
    let size = size(time_series);
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

/// The drawing's size in pixels: 450 high per panel, the third the max
/// over time.
fn size(time_series: bool) -> (u32, u32) {
    (1200, if time_series { 3 * 450 } else { 2 * 450 })
}

/// The panels of [`draw`] as an SVG document in a string (for a page that
/// inlines it).
pub(crate) fn svg(title: &str, series: &[Series], time_series: bool) -> Result<String> {
    register();
    let size = size(time_series);
    let mut out = String::new();
    render(
        SVGBackend::with_string(&mut out, size),
        title,
        series,
        time_series,
    )
    .map_err(|message| Error::Plot {
        file: std::path::PathBuf::from("(the HTML page)"),
        message: plain(&message),
    })?;
    Ok(out)
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
    draw::histogram(&areas[0], series)?;
    draw::tail(&areas[1], series)?;
    if time_series {
        draw::over_time(&areas[2], series)?;
    }
    Ok(())
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

    #[test]
    fn draws_runs_without_samples_and_with_one() {
        let dir = std::env::temp_dir().join(format!("latscope-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let layout = Layout::DEFAULT;
        let mut one = vec![0u64; layout.len()];
        one[layout.bucket_of(7_000)] = 1;
        for (name, hist, max_ns) in [("none", vec![0; layout.len()], 0), ("one", one, 7_000)] {
            let s = Series {
                label: name.into(),
                layout,
                hist,
                max_ns,
                points: Vec::new(),
            };
            for ext in ["svg", "png"] {
                let file = dir.join(format!("{name}.{ext}"));
                draw(&file, name, std::slice::from_ref(&s), true).unwrap();
                assert!(std::fs::metadata(&file).unwrap().len() > 1000);
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
