//! The recordings a trend reads, in the order their runs started: each
//! one's first hello is read (a few kilobytes), not the whole file.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::{Error, Result};
use crate::record::board_name;
use crate::session::Session;

/// Bytes read from a recording's start in search of its first hello: a
/// hello is at most a frame, so only a damaged start needs more.
const HELLO_WITHIN: u64 = 256 * 1024;

/// A recording, with what orders it among the others.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Entry {
    /// When its first run started (s since 1970), else its modification time.
    pub start_s: i64,
    /// Its path.
    pub path: PathBuf,
    /// Its first run's board, if the start of the file names it.
    pub board: Option<String>,
}

/// The recordings at `paths`: a directory's `*.lsr` files (not its
/// subdirectories), or a file as it is, in the order their runs started.
pub(crate) fn list(paths: &[PathBuf]) -> Result<Vec<Entry>> {
    let mut files = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|source| Error::Input {
            what: p.display().to_string(),
            source,
        })?;
        if !meta.is_dir() {
            files.push(p.clone());
            continue;
        }
        let dir = std::fs::read_dir(p).map_err(|source| Error::Input {
            what: p.display().to_string(),
            source,
        })?;
        for e in dir {
            let e = e.map_err(|source| Error::Input {
                what: p.display().to_string(),
                source,
            })?;
            let path = e.path();
            let is_file = e.file_type().map(|t| t.is_file()).unwrap_or(false);
            if is_file && path.extension().is_some_and(|x| x == "lsr") {
                files.push(path);
            }
        }
    }
    let mut entries: Vec<Entry> = files.into_iter().map(|p| entry(&p)).collect();
    entries.sort();
    entries.dedup_by(|a, b| a.path == b.path);
    Ok(entries)
}

/// A recording's entry: its first hello's start time and board, or (no
/// hello near its start, or none readable) its modification time.
fn entry(path: &Path) -> Entry {
    let mtime = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (start, board) = first_hello(path).unwrap_or((None, None));
    Entry {
        start_s: start.unwrap_or(mtime),
        path: path.to_path_buf(),
        board,
    }
}

/// The start time and board of the first run in the first
/// [`HELLO_WITHIN`] bytes of `path`.
fn first_hello(path: &Path) -> Option<(Option<i64>, Option<String>)> {
    let f = File::open(path).ok()?;
    let mut r = f.take(HELLO_WITHIN);
    let mut s = Session::new(path.display().to_string());
    let mut buf = [0u8; 4096];
    loop {
        let n = r.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        s.feed(buf.get(..n)?);
        if let Some(run) = s.agg.runs.first().filter(|r| !r.hello_lost) {
            let start = run.hello.config.started.map(|w| w.unix_s);
            return Some((start, Some(board_name(&run.hello).to_string())));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{Synth, SynthConfig};

    #[test]
    fn recordings_come_in_the_order_their_runs_started() {
        let dir = std::env::temp_dir().join(format!("latscope-trend-index-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        // named against their start order; one is not a recording's name
        for (name, started) in [("c.lsr", 300), ("a.lsr", 200), ("b.lsr", 100), ("d.txt", 0)] {
            let cfg = SynthConfig {
                reports: 2,
                samples_per_report: 10,
                started_unix_s: started,
                hostname: format!("board-{name}"),
                ..SynthConfig::default()
            };
            let (bytes, _) = Synth::bytes(cfg);
            std::fs::write(dir.join(name), bytes).unwrap();
        }
        std::fs::write(dir.join("sub/e.lsr"), b"").unwrap();
        // no hello: ordered by its modification time, now
        std::fs::write(dir.join("f.lsr"), b"not a recording").unwrap();
        let got = list(std::slice::from_ref(&dir)).unwrap();
        let names: Vec<_> = got
            .iter()
            .map(|e| {
                (
                    e.start_s,
                    e.path.file_name().unwrap().to_str().unwrap().to_string(),
                )
            })
            .collect();
        let order: Vec<_> = names.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(order, ["b.lsr", "a.lsr", "c.lsr", "f.lsr"]);
        assert_eq!(names[0].0, 100);
        assert!(names[3].0 > 1_700_000_000, "{names:?}");
        assert_eq!(got[0].board.as_deref(), Some("board-b.lsr"));
        assert!(got[3].board.is_none());
        // a file given as it is counts whatever its name
        let one = list(&[dir.join("d.txt")]).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].board.as_deref(), Some("board-d.txt"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
