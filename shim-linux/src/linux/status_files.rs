//! The files through which other programs read a running cyclictest, and
//! so a running latscope:
//!
//! * `/dev/shm/cyclictest<PID>`, created at start-up and removed at exit;
//!   on SIGUSR2 its content is replaced by the current status. rt-tests'
//!   `get_cyclictest_snapshot` finds instances by these names, sends the
//!   signal, and prints the files;
//! * `-F PATH`: a named pipe; each time a reader has it open, the status is
//!   written to it.
//!
//! The paths are remembered for the exit discipline ([`remove_all`]),
//! which removes them on every way out, the panic hook included.

use std::sync::Mutex;

use rustix::fd::OwnedFd;
use rustix::fs::{FileType, Mode, OFlags, CWD};
use rustix::io::Errno;

/// The paths to remove at exit.
static PATHS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn remember(path: &str) {
    if let Ok(mut p) = PATHS.lock() {
        p.push(path.to_string());
    }
}

/// Remove every status file this run created (a missing one is fine).
/// Called by the exit discipline; never blocks (a poisoned or held lock
/// leaves the files).
pub fn remove_all() {
    if let Ok(mut p) = PATHS.try_lock() {
        for path in p.drain(..) {
            let _ = rustix::fs::unlink(path.as_str());
        }
    }
}

/// `/dev/shm/cyclictest<PID>`, open for writing.
#[derive(Debug)]
pub struct Snapshot {
    fd: OwnedFd,
}

impl Snapshot {
    /// The file's path for process `pid`, as cyclictest names it.
    pub fn path(pid: i32) -> String {
        format!("/dev/shm/cyclictest{pid}")
    }

    /// Create the file (replacing a stale one of the same name), readable
    /// by all, as cyclictest's `shm_open(O_CREAT | O_EXCL, 0666)` does.
    /// It starts empty. `Err` with the reason if it cannot be made.
    pub fn create() -> Result<Snapshot, Errno> {
        let path = Snapshot::path(rustix::process::getpid().as_raw_nonzero().get());
        match rustix::fs::unlink(path.as_str()) {
            Ok(()) | Err(Errno::NOENT) => {}
            Err(e) => return Err(e),
        }
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        let fd = rustix::fs::open(path.as_str(), flags | OFlags::CLOEXEC, Mode::from(0o666))?;
        remember(&path);
        Ok(Snapshot { fd })
    }

    /// `pwrite(fd, text, 0)` then `ftruncate(fd, text.len())`: the file
    /// holds `text` and nothing else. In that order a reader never finds
    /// the file empty (get_cyclictest_snapshot reads it while it may still
    /// be written): it reads the old status, the new one, or the new one
    /// over the old one's tail until the truncation.
    pub fn replace(&self, text: &[u8]) -> Result<(), Errno> {
        let mut done = 0;
        while done < text.len() {
            match rustix::io::pwrite(&self.fd, &text[done..], done as u64) {
                Ok(0) => return Err(Errno::IO),
                Ok(n) => done += n,
                Err(Errno::INTR) => {}
                Err(e) => return Err(e),
            }
        }
        rustix::fs::ftruncate(&self.fd, text.len() as u64)?;
        Ok(())
    }
}

/// `-F PATH`: remove what is at `path` and make a named pipe there, mode
/// 0666 (less the umask), as cyclictest's `mkfifo` does.
pub fn make_fifo(path: &str) -> Result<(), Errno> {
    match rustix::fs::unlink(path) {
        Ok(()) | Err(Errno::NOENT) => {}
        Err(e) => return Err(e),
    }
    rustix::fs::mknodat(CWD, path, FileType::Fifo, Mode::from(0o666), 0)?;
    remember(path);
    Ok(())
}

/// The named pipe at `path`, open for writing if a reader has it open
/// (`Ok(None)`: no reader). Non-blocking, so the caller never waits.
pub fn fifo_reader(path: &str) -> Result<Option<OwnedFd>, Errno> {
    let flags = OFlags::WRONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::NXIO) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Write `text` to a pipe from [`fifo_reader`] in one non-blocking write
/// (a reader slower than a pipe's worth misses the rest), then close it so
/// the reader sees the end of the text.
pub fn write_fifo(fd: OwnedFd, text: &[u8]) -> Result<(), Errno> {
    match rustix::io::write(&fd, text) {
        Ok(_) | Err(Errno::AGAIN) => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_hands_the_text_to_a_reader() {
        let path = std::env::temp_dir().join(format!("latscope-fifo-{}", std::process::id()));
        let p = path.to_str().unwrap();
        make_fifo(p).unwrap();
        assert!(fifo_reader(p).unwrap().is_none(), "no reader yet");
        let reader = OFlags::RDONLY | OFlags::NONBLOCK;
        let r = rustix::fs::open(p, reader, Mode::empty()).unwrap();
        let w = fifo_reader(p).unwrap().expect("a reader");
        write_fifo(w, b"T: 0\n").unwrap();
        let mut buf = [0u8; 16];
        let n = rustix::io::read(&r, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"T: 0\n");
        remove_all();
        assert!(!path.exists(), "removed at exit");
    }
}
