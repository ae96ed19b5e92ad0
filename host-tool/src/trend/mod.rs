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
use crate::error::{Error, Result};
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
    let mut csv = Out::create(&plan.out_dir, "trend.csv", &csv_header())?;
    let mut heat = Out::create(&plan.out_dir, "trend-heatmap.csv", HEAT_HEADER)?;
    let entries = index::list(&plan.paths)?;
    let mut boards: Vec<Board> = Vec::new();
    let mut t = Tally::default();
    for e in &entries {
        if let (Some(want), Some(b)) = (&plan.board, &e.board) {
            // a recording holds one board's runs
            if want != b {
                continue;
            }
        }
        t.recordings += 1;
        let name = e.path.display().to_string();
        let d = match decode(&Source::File(name.clone())) {
            Ok(d) => d,
            Err(err) => {
                console::say(&err);
                t.unreadable += 1;
                continue;
            }
        };
        if let Some(err) = d.session.fatal() {
            console::say(&err);
            t.unreadable += 1;
            continue;
        }
        let link = d.session.link();
        for run in &d.session.agg.runs {
            if run.hello_lost {
                console::say(format_args!(
                    "{name}: a run whose hello was lost is left out (its board is unknown)"
                ));
                t.without_hello += 1;
                continue;
            }
            let f = RunFigures::of(run, &link, d.end);
            if plan.board.as_ref().is_some_and(|b| *b != f.board) {
                continue;
            }
            t.runs += 1;
            csv.write(&f.csv_row(&name))?;
            heat.write(&f.heat_rows())?;
            match boards.iter().position(|b| b.name == f.board) {
                Some(i) => boards[i].push(&f),
                None if boards.len() < MAX_BOARDS => {
                    let mut b = Board::new(&f.board);
                    b.push(&f);
                    boards.push(b);
                }
                None => t.unplotted += 1,
            }
        }
    }
    let csv = csv.finish()?;
    let heat = heat.finish()?;
    let mut text = String::new();
    for b in &boards {
        let stem = format!("trend-{}", sanitize(&b.name));
        let mut files = Vec::new();
        for ext in ["png", "svg"] {
            let file = plan.out_dir.join(format!("{stem}.{ext}"));
            plot::trend(&file, b, &picks)?;
            files.push(file.display().to_string());
        }
        summary(&mut text, b, &files);
    }
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
    Ok(u8::from(failed))
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
