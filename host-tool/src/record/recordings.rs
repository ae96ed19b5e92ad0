//! The recordings of a listening recorder: one file per run, named
//! `NAME-STAMP-RUNID.lsr`, found again by its run id when the run's target
//! reconnects, also after the recorder restarted.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::budget::Budget;

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
    sync_dir(dir).map_err(out_err(dir))?;
    Ok((file, path))
}

/// Make a new or renamed entry of `dir` durable: without it, a host crash
/// can lose the recording's name with its acknowledged frames.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    let d = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    crate::platform::sync_dir(d)
}

/// A recording reopened to go on with its run: every frame decoded into a
/// session (so figures and link counters continue), a frame cut short by a
/// killed recorder removed, and the sequence number of the last frame.
pub(super) struct Resumed {
    /// Open for appending, everything in it durable.
    pub store: RecordingFile,
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
    // What an earlier recorder wrote may still sit in the page cache; the
    // resume is answered with this sequence number, so it must be on disk.
    file.sync_data().map_err(out_err(path))?;
    Ok(Resumed {
        store: RecordingFile::durable(file, path.to_path_buf(), good_end, last_seq),
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

/// Sync at most this often per recording while frames keep coming: the
/// cost of durable acknowledgements, a few syncs a second per run rather
/// than one per frame.
pub(crate) const SYNC_EVERY: Duration = Duration::from_millis(250);
/// Or as soon as this much waits for a sync.
const SYNC_BYTES: usize = 256 * 1024;

/// A recording open for appending, and how much of it is durable. Frames
/// are written as they come (a killed recorder leaves them to the page
/// cache) and synced in batches (`fdatasync`); only a synced frame is
/// acknowledged. A write that fails part way (ENOSPC) is cut back to the
/// last frame boundary; a failed sync is written again from memory, and
/// if that fails too, cut back to the last synced frame.
pub(crate) struct RecordingFile {
    file: File,
    path: PathBuf,
    /// Bytes in the file: whole frames only.
    len: u64,
    /// Bytes of it that are durable.
    synced_len: u64,
    /// What was written since the last sync, to write again if it fails.
    unsynced: Vec<u8>,
    /// Sequence number of the last frame written, and of the last durable
    /// one.
    written_seq: Option<u32>,
    synced_seq: Option<u32>,
    last_sync: Instant,
}

impl RecordingFile {
    /// `file` of `len` bytes, all of them durable, ending with frame `seq`.
    pub(crate) fn durable(file: File, path: PathBuf, len: u64, seq: Option<u32>) -> RecordingFile {
        RecordingFile {
            file,
            path,
            len,
            synced_len: len,
            unsynced: Vec::new(),
            written_seq: seq,
            synced_seq: seq,
            last_sync: Instant::now(),
        }
    }

    /// The recording's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Sequence number of the last frame written (durable or not).
    pub(crate) fn written_seq(&self) -> Option<u32> {
        self.written_seq
    }

    /// Sequence number of the last durable frame: what may be acknowledged.
    pub(crate) fn synced_seq(&self) -> Option<u32> {
        self.synced_seq
    }

    /// Whether written frames wait for a sync.
    pub(crate) fn dirty(&self) -> bool {
        !self.unsynced.is_empty()
    }

    /// Whether a sync is due: something waits, and the last sync is
    /// [`SYNC_EVERY`] ago (or much waits).
    pub(crate) fn due(&self) -> bool {
        self.dirty()
            && (self.last_sync.elapsed() >= SYNC_EVERY || self.unsynced.len() >= SYNC_BYTES)
    }

    /// Append whole frames `bytes`, the last of them frame `seq` (if they
    /// hold one). On an error the file is cut back to where it was, so it
    /// never ends in a torn frame.
    pub(crate) fn append(&mut self, bytes: &[u8], seq: Option<u32>) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.file.write_all(bytes) {
            self.cut(self.len)?;
            return Err(e);
        }
        self.len += bytes.len() as u64;
        self.unsynced.extend_from_slice(bytes);
        if seq.is_some() {
            self.written_seq = seq;
        }
        Ok(())
    }

    /// Make what was written durable; the bytes that became so (to decode
    /// them). After a failed sync, the pages it covered may be gone while
    /// the next sync succeeds: so the unsynced part is cut and written
    /// again from memory, and synced once more. If that fails too, the
    /// file is cut back to its last durable frame, everything written
    /// since is forgotten (the target still holds it, unacknowledged), and
    /// the first error returned.
    pub(crate) fn sync(&mut self) -> io::Result<Vec<u8>> {
        if self.unsynced.is_empty() {
            return Ok(Vec::new());
        }
        self.last_sync = Instant::now();
        let first = match self.file.sync_data() {
            Ok(()) => return Ok(self.synced()),
            Err(e) => e,
        };
        let again = self
            .cut(self.synced_len)
            .and_then(|()| self.file.write_all(&self.unsynced))
            .and_then(|()| self.file.sync_data());
        if again.is_ok() {
            return Ok(self.synced());
        }
        self.unsynced.clear();
        self.len = self.synced_len;
        self.written_seq = self.synced_seq;
        self.cut(self.synced_len)?;
        Err(first)
    }

    fn synced(&mut self) -> Vec<u8> {
        self.synced_len = self.len;
        self.synced_seq = self.written_seq;
        std::mem::take(&mut self.unsynced)
    }

    /// Cut the file to `len` bytes and go on writing there.
    fn cut(&mut self, len: u64) -> io::Result<()> {
        self.file.set_len(len)?;
        self.file.seek(SeekFrom::Start(len))?;
        Ok(())
    }
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
    fn only_synced_frames_are_acknowledgeable_and_decoded() {
        let dir = std::env::temp_dir().join(format!("latscope-sync-{}", std::process::id()));
        let _ = fs::create_dir_all(&dir);
        let (file, path) = create(&dir, "b", 7).unwrap();
        let mut st = RecordingFile::durable(file, path.clone(), 0, None);
        st.append(&[0, 1, 2, 0], Some(0)).unwrap();
        st.append(&[0, 3, 0], Some(1)).unwrap();
        assert!(st.dirty());
        assert_eq!((st.written_seq(), st.synced_seq()), (Some(1), None));
        assert_eq!(st.sync().unwrap(), vec![0, 1, 2, 0, 0, 3, 0]);
        assert_eq!(st.synced_seq(), Some(1));
        assert!(!st.dirty() && st.sync().unwrap().is_empty());
        assert_eq!(fs::metadata(&path).unwrap().len(), 7);
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
