//! The recordings of a listening recorder: one file per run, named
//! `NAME-STAMP-RUNID.lsr`, found again by its run id when the run's target
//! reconnects, also after the recorder restarted.

use std::sync::Arc;

use crate::budget::Budget;
use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::split::{Peeker, Piece, Splitter};
use super::{sanitize, stamp};
use crate::error::{Error, Result};
use crate::session::Session;

/// The run id in a recording's file name, if it has one.
fn run_id_of(path: &Path) -> Option<u64> {
    let stem = path.file_name()?.to_str()?.strip_suffix(".lsr")?;
    let (_, hex) = stem.rsplit_once('-')?;
    (hex.len() == 16)
        .then(|| u64::from_str_radix(hex, 16).ok())
        .flatten()
}

/// Every recording in `dir` by its run id.
pub(super) fn index(dir: &Path) -> HashMap<u64, PathBuf> {
    let mut map = HashMap::new();
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if let Some(id) = run_id_of(&p) {
                map.insert(id, p);
            }
        }
    }
    map
}

fn out_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Output {
        what: path.to_path_buf(),
        source,
    }
}

/// A new recording for run `id` of board `name`.
pub(super) fn create(dir: &Path, name: &str, id: u64) -> Result<(File, PathBuf)> {
    let path = dir.join(format!(
        "{}-{}-{id:016x}.lsr",
        sanitize(name),
        stamp(SystemTime::now())
    ));
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(out_err(&path))?;
    Ok((file, path))
}

/// A recording reopened to go on with its run: every frame decoded into a
/// session (so figures and link counters continue), a frame cut short by a
/// killed recorder removed, and the sequence number of the last frame.
pub(super) struct Resumed {
    /// Open for appending.
    pub file: File,
    /// The decoded recording.
    pub session: Session,
    /// Sequence number of its last frame.
    pub last_seq: Option<u32>,
}

/// Reopen `path` to append to it; its decoding is charged to `budget`.
pub(super) fn resume(path: &Path, budget: Arc<Budget>) -> Result<Resumed> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(out_err(path))?;
    // First the frame boundaries and the last sequence number...
    let mut split = Splitter::new();
    let mut peek = Peeker::default();
    let mut last_seq = None;
    let (mut offset, mut good_end) = (0u64, 0u64);
    each_chunk(&mut file, path, u64::MAX, |chunk| {
        split.push(chunk, |p| {
            if let Piece::Frame(seg) = p {
                if let Some(f) = peek.frame(seg) {
                    last_seq = Some(f.seq);
                }
            }
        });
        if let Some(i) = chunk.iter().rposition(|&b| b == 0) {
            good_end = offset + i as u64 + 1;
        }
        offset += chunk.len() as u64;
    })?;
    if good_end < offset {
        // The recorder was killed inside a frame: that frame was never
        // acknowledged, so the target sends it again.
        file.set_len(good_end).map_err(out_err(path))?;
    }
    // ... then the figures.
    let mut session = Session::with_budget(path.display().to_string(), budget);
    file.seek(SeekFrom::Start(0)).map_err(out_err(path))?;
    each_chunk(&mut file, path, good_end, |chunk| session.feed(chunk))?;
    file.seek(SeekFrom::End(0)).map_err(out_err(path))?;
    Ok(Resumed {
        file,
        session,
        last_seq,
    })
}

/// Read `file` in chunks up to `limit` bytes.
fn each_chunk(file: &mut File, path: &Path, limit: u64, mut f: impl FnMut(&[u8])) -> Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut left = limit;
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        match file.read(&mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => {
                f(&buf[..n]);
                left -= n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(out_err(path)(e)),
        }
    }
    Ok(())
}

/// Append `bytes` to a recording; no buffering, so a killed recorder
/// leaves everything it acknowledged on disk.
pub(super) fn append(file: &mut File, path: &Path, bytes: &[u8]) -> Result<()> {
    file.write_all(bytes).map_err(out_err(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{Synth, SynthConfig};

    #[test]
    fn a_recording_cut_inside_a_frame_resumes_after_its_last_whole_frame() {
        let (bytes, _) = Synth::bytes(SynthConfig {
            reports: 6,
            ..SynthConfig::default()
        });
        let dir = std::env::temp_dir().join(format!("latscope-store-{}", std::process::id()));
        let _ = fs::create_dir_all(&dir);
        let path = dir.join("x-20261130T000000Z-000000000000002a.lsr");
        // The last frame written only in part, as by a killed recorder.
        let cut = bytes.len() - 3;
        fs::write(&path, &bytes[..cut]).unwrap();
        let r = resume(&path, crate::budget::Budget::stream()).unwrap();
        let whole = bytes[..cut].iter().rposition(|&b| b == 0).unwrap() + 1;
        assert_eq!(fs::metadata(&path).unwrap().len(), whole as u64);
        let frames = r.session.link().frames;
        assert_eq!(
            r.last_seq,
            Some(frames as u32 - 1),
            "sequence numbers 0..frames"
        );
        assert_eq!(r.session.link().crc_errors, 0);
        assert_eq!(index(&dir).get(&42), Some(&path));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn run_ids_come_from_file_names() {
        assert_eq!(
            run_id_of(Path::new("d/board-7-20261130T120000Z-00000000deadbeef.lsr")),
            Some(0xdead_beef)
        );
        assert_eq!(run_id_of(Path::new("d/vm-20261130T120000Z.lsr")), None);
        assert_eq!(run_id_of(Path::new("d/x-0123456789abcdeg.lsr")), None);
        assert_eq!(run_id_of(Path::new("d/x-00000000deadbeef.txt")), None);
    }
}
