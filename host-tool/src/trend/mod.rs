//! `latscope-host trend`: a board's latency over weeks of recordings.
//!
//! Every recording is read in turn, in the order its runs started
//! ([`index`]), and let go before the next: each run becomes a row of
//! `trend.csv` and of `trend-heatmap.csv` at once, and a point of its
//! board's plots (`trend-BOARD.png` and `.svg`): the maximum and the
//! chosen quantiles per run, a latency-by-time heatmap, and incomplete
//! runs marked.
//!
//! Memory: one recording's decoding (a stream's budget, as `report`), a
//! line per recording for the order (its path and start), and per board
//! at most [`MAX_POINTS`] points of about 600 bytes (beyond that many
//! runs, neighbouring runs share a point, the worst of them), for at most
//! [`MAX_BOARDS`] boards; the rows of further boards go to the CSV only.

mod figures;
mod index;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

pub use figures::MAX_POINTS;
use figures::{csv_header, iso, RunFigures, HEAT_HEADER};
pub(crate) use figures::{heat_edges_us, Board, Point, HEAT_BINS};

use crate::console;
use crate::error::{Error, Result, EXIT_FAILED, EXIT_OK};
use crate::input::Source;
use crate::plot;
use crate::record::sanitize;
use crate::report::{create_out, decode};
use crate::summary::{us, us_opt, QUANTILES};

/// Boards drawn; the runs of any further board are in the CSV only.
pub const MAX_BOARDS: usize = 32;

/// What `trend` was asked to do.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Directories of recordings (their `*.lsr`), or recordings.
    pub paths: Vec<PathBuf>,
    /// Only this board's runs (its name, else its host name).
    pub board: Option<String>,
    /// Where the CSVs and the plots go.
    pub out_dir: PathBuf,
    /// The quantiles drawn beside the maximum, by name (`p99.9`).
    pub quantiles: Vec<String>,
}

/// The quantiles a trend can draw, by name.
pub fn quantile_names() -> impl Iterator<Item = &'static str> {
    QUANTILES.iter().map(|(_, n)| *n)
}

/// An output file of the trend, created before any recording is read.
struct Out {
    path: PathBuf,
    w: BufWriter<File>,
}

impl Out {
    fn create(dir: &Path, name: &str, header: &str) -> Result<Out> {
        let path = dir.join(name);
        let f = create_out(&path)?;
        let mut out = Out {
            path,
            w: BufWriter::new(f),
        };
        out.write(header)?;
        Ok(out)
    }

    fn write(&mut self, s: &str) -> Result<()> {
        self.w
            .write_all(s.as_bytes())
            .map_err(|source| Error::Output {
                what: self.path.clone(),
                source,
            })
    }

    fn finish(mut self) -> Result<PathBuf> {
        self.w.flush().map_err(|source| Error::Output {
            what: self.path.clone(),
            source,
        })?;
        Ok(self.path)
    }
}

/// What became of the inputs.
#[derive(Debug, Default)]
struct Tally {
    recordings: u64,
    unreadable: u64,
    runs: u64,
    without_hello: u64,
    unplotted: u64,
}

/// `latscope-host trend`: the CSVs and every board's plots, a summary on
/// standard output, and the exit status: 0 when every recording was read
/// (incomplete runs are marked, not failures), 1 when one could not be
/// read, a run had lost its hello, or there was no run at all.
pub fn run(plan: &Plan) -> Result<u8> {
    let picks = picks(&plan.quantiles)?;
    std::fs::create_dir_all(&plan.out_dir).map_err(|source| Error::Output {
        what: plan.out_dir.clone(),
        source,
    })?;
    let mut trend = Trend {
        csv: Out::create(&plan.out_dir, "trend.csv", &csv_header())?,
        heat: Out::create(&plan.out_dir, "trend-heatmap.csv", HEAT_HEADER)?,
        boards: Vec::new(),
        tally: Tally::default(),
    };
    for e in &index::list(&plan.paths)? {
        if let (Some(want), Some(b)) = (&plan.board, &e.board) {
            // a recording holds one board's runs
            if want != b {
                continue;
            }
        }
        trend.recording(&e.path, plan.board.as_deref())?;
    }
    let Trend {
        csv,
        heat,
        boards,
        tally: t,
    } = trend;
    let (csv, heat) = (csv.finish()?, heat.finish()?);
    let mut text = plots(plan, &boards, &picks)?;
    text.push_str(&format!(
        "wrote {} ({} runs of {} recordings) and {}\n",
        csv.display(),
        t.runs,
        t.recordings,
        heat.display()
    ));
    console::Std::Out.write(text.as_bytes());
    if t.unplotted > 0 {
        console::warn(format_args!(
            "{} runs of boards beyond the first {MAX_BOARDS} are in the CSV only (choose one with --board)",
            t.unplotted
        ));
    }
    if t.runs == 0 {
        console::say(match &plan.board {
            Some(b) => format!("no run of board {b} in the recordings given"),
            None => "no run in the recordings given".to_string(),
        });
    }
    let failed = t.unreadable > 0 || t.without_hello > 0 || t.runs == 0;
    Ok(if failed { EXIT_FAILED } else { EXIT_OK })
}

/// A trend being read: its CSVs, its boards, its tally.
struct Trend {
    csv: Out,
    heat: Out,
    boards: Vec<Board>,
    tally: Tally,
}

impl Trend {
    /// Read the recording at `path`: each run's rows to the CSVs and its
    /// point to its board (of `board` only, when given). An unreadable
    /// recording or a run without its hello is said and counted.
    fn recording(&mut self, path: &Path, board: Option<&str>) -> Result<()> {
        self.tally.recordings += 1;
        let name = path.display().to_string();
        let d = match decode(&Source::File(name.clone())) {
            Ok(d) => d,
            Err(err) => {
                console::say(&err);
                self.tally.unreadable += 1;
                return Ok(());
            }
        };
        if let Some(err) = d.session.fatal() {
            console::say(&err);
            self.tally.unreadable += 1;
            return Ok(());
        }
        let link = d.session.link();
        for run in &d.session.agg.runs {
            if run.hello_lost {
                console::say(format_args!(
                    "{name}: a run whose hello was lost is left out (its board is unknown)"
                ));
                self.tally.without_hello += 1;
                continue;
            }
            let f = RunFigures::of(run, &link, d.end);
            if board.is_some_and(|b| b != f.board) {
                continue;
            }
            self.take(&f, &name)?;
        }
        Ok(())
    }

    /// One run's rows, and its point on its board's plots (boards past
    /// [`MAX_BOARDS`] get rows only).
    fn take(&mut self, f: &RunFigures, file: &str) -> Result<()> {
        self.tally.runs += 1;
        self.csv.write(&f.csv_row(file))?;
        self.heat.write(&f.heat_rows())?;
        match self.boards.iter().position(|b| b.name == f.board) {
            Some(i) => self.boards[i].push(f),
            None if self.boards.len() < MAX_BOARDS => {
                let mut b = Board::new(&f.board);
                b.push(f);
                self.boards.push(b);
            }
            None => self.tally.unplotted += 1,
        }
        Ok(())
    }
}

/// Every board's PNG and SVG in the plan's folder; the summary's lines.
fn plots(plan: &Plan, boards: &[Board], picks: &[usize]) -> Result<String> {
    let mut text = String::new();
    for b in boards {
        let stem = format!("trend-{}", sanitize(&b.name));
        let mut files = Vec::new();
        for ext in ["png", "svg"] {
            let file = plan.out_dir.join(format!("{stem}.{ext}"));
            plot::trend(&file, b, picks)?;
            files.push(file.display().to_string());
        }
        summary(&mut text, b, &files);
    }
    Ok(text)
}

/// The indices into [`QUANTILES`] of the quantiles named.
fn picks(names: &[String]) -> Result<Vec<usize>> {
    names
        .iter()
        .map(|n| {
            QUANTILES.iter().position(|(_, q)| q == n).ok_or_else(|| {
                let known: Vec<_> = quantile_names().collect();
                Error::Usage(format!("--quantile {n}: not one of {}", known.join(", ")))
            })
        })
        .collect()
}

/// A board's lines of the summary.
fn summary(out: &mut String, b: &Board, files: &[String]) {
    use std::fmt::Write as _;
    let span = match (b.points.first(), b.points.last()) {
        (Some(f), Some(l)) => format!(
            ", {} .. {}",
            &iso(wall(f.start_s))[..10],
            &iso(wall(l.start_s))[..10]
        ),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "board {}: {} runs{span}, {} incomplete (marked)",
        b.name, b.runs, b.incomplete
    );
    if let Some((max, id, at)) = b.worst {
        let _ = writeln!(
            out,
            "  worst: max {} µs in run {id:016x} ({})",
            us(max),
            iso(at)
        );
    }
    if let Some(l) = &b.latest {
        let p999 = QUANTILES
            .iter()
            .position(|(_, n)| *n == "p99.9")
            .and_then(|i| l.quantiles.get(i).copied().flatten());
        let _ = writeln!(
            out,
            "  latest: max {} µs, p99.9 {} µs in run {:016x} ({}){}",
            us_opt(l.max_ns),
            us_opt(p999),
            l.run_id,
            iso(l.started),
            if l.complete { "" } else { ", incomplete" }
        );
    }
    if b.stride > 1 {
        let _ = writeln!(
            out,
            "  plotted {} points of up to {} runs each (the worst of them)",
            b.points.len(),
            b.stride
        );
    }
    let _ = writeln!(out, "  plots: {}", files.join(", "));
}

/// A time in UTC.
fn wall(unix_s: i64) -> latscope_core::tz::WallTime {
    latscope_core::tz::WallTime {
        unix_s,
        utc_offset_s: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn board_names_make_plain_file_names() {
        // the recorder's own file-name rule: no separator survives
        assert_eq!(sanitize("rpi4-lab_1.a"), "rpi4-lab_1.a");
        assert_eq!(sanitize("../etc/x y"), ".._etc_x_y");
        assert_eq!(sanitize(""), "unknown");
    }

    #[test]
    fn quantiles_are_chosen_by_their_names() {
        assert_eq!(picks(&["p99".into(), "p99.99".into()]).unwrap(), [2, 4]);
        let e = picks(&["p95".into()]).unwrap_err();
        assert!(matches!(e, Error::Usage(_)), "{e}");
        assert!(e.to_string().contains("p99.9"), "{e}");
    }
}
