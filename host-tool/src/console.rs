//! The one writer of standard output and standard error.
//!
//! `println!` and `eprintln!` panic when the write fails, which under
//! `panic = "abort"` kills a recorder and every connection it holds. Here a
//! failed write (EPIPE from a closed pipe, ENOSPC from a full disk, EIO)
//! is counted instead, that stream gets no further writes, and the work
//! goes on: recordings, `-o` files and plots are still written. SIGPIPE
//! stays ignored (the Rust runtime sets that before `main`), so a closed
//! pipe is such an EPIPE, never a kill. At the end [`exit_code`] turns a
//! success into `EXIT_OUTPUT_LOST` (4).
//!
//! The rule is the target's too (its `output` module); both follow
//! `docs/console.md`.

use std::fmt::Display;
use std::io::{self, Write};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fd::BorrowedFd;
use rustix::io::Errno;

/// Exit status of a command that did its work but could not write all of
/// its standard output or standard error.
pub(crate) const EXIT_OUTPUT_LOST: u8 = 4;

/// A standard stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Std {
    /// Standard output.
    Out,
    /// Standard error.
    Err,
}

/// What one standard stream lost: its writes stop at the first failure.
struct Ledger {
    /// Writes that failed or were not attempted after the first failure.
    lost: AtomicU64,
    /// The OS error of the first failed write (0: none or unknown).
    first_errno: AtomicI32,
}

impl Ledger {
    const fn new() -> Ledger {
        Ledger {
            lost: AtomicU64::new(0),
            first_errno: AtomicI32::new(0),
        }
    }

    /// Run `write` unless a write failed before; a failure, or a write not
    /// attempted because of an earlier one, is counted.
    fn write<T>(&self, write: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        if self.lost.load(Ordering::Relaxed) > 0 {
            self.lost.fetch_add(1, Ordering::Relaxed);
            return Err(self.first_error());
        }
        write().inspect_err(|e| {
            let code = e.raw_os_error().unwrap_or(0);
            let _ =
                self.first_errno
                    .compare_exchange(0, code, Ordering::Relaxed, Ordering::Relaxed);
            self.lost.fetch_add(1, Ordering::Relaxed);
        })
    }

    fn first_error(&self) -> io::Error {
        io::Error::from_raw_os_error(self.first_errno.load(Ordering::Relaxed))
    }

    /// Writes lost so far, and the first failure's error.
    fn lost(&self) -> Option<(u64, io::Error)> {
        let n = self.lost.load(Ordering::Relaxed);
        (n > 0).then(|| (n, self.first_error()))
    }
}

/// The ledgers of standard output and standard error.
static LEDGERS: [Ledger; 2] = [const { Ledger::new() }; 2];

impl Std {
    fn ledger(self) -> &'static Ledger {
        match self {
            Std::Out => &LEDGERS[0],
            Std::Err => &LEDGERS[1],
        }
    }

    /// The stream's name in messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Std::Out => "standard output",
            Std::Err => "standard error",
        }
    }

    fn fd(self) -> BorrowedFd<'static> {
        match self {
            Std::Out => rustix::stdio::stdout(),
            Std::Err => rustix::stdio::stderr(),
        }
    }

    /// Write all of `bytes` with plain `write`s. Returns whether everything
    /// was written; a failure is counted (see [`Std::lost`]) and the stream
    /// is not written again.
    pub fn write(self, bytes: &[u8]) -> bool {
        self.ledger().write(|| Raw(self).write_all(bytes)).is_ok()
    }

    /// Writes lost so far (failed, or not attempted after the first
    /// failure), and the first failure's error.
    pub(crate) fn lost(self) -> Option<(u64, io::Error)> {
        self.ledger().lost()
    }
}

/// One line `latscope-host: MSG` on standard error.
pub fn say(msg: impl Display) {
    Std::Err.write(format!("latscope-host: {msg}\n").as_bytes());
}

/// One line `latscope-host: warning: MSG` on standard error.
pub(crate) fn warn(msg: impl Display) {
    say(format_args!("warning: {msg}"));
}

/// Standard output as a [`Write`] under the same rule as [`Std::write`]
/// (for the live view, which writes as it goes, and the JSON report, which
/// is written as it is serialised): after a failure every call fails.
pub(crate) struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Std::Out.ledger().write(|| Raw(Std::Out).write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `write(2)` on a standard stream's file descriptor, unbuffered: no byte
/// is kept to be written again later (std's `Stdout` buffers, and retries
/// its buffer at exit). A full non-blocking stream (EAGAIN) is waited for,
/// as the target's writes do.
struct Raw(Std);

impl Write for Raw {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let fd = self.0.fd();
        loop {
            match rustix::io::write(fd, buf) {
                Err(Errno::AGAIN) => {
                    let mut p = [PollFd::new(&fd, PollFlags::OUT)];
                    let wait = Timespec {
                        tv_sec: 0,
                        tv_nsec: 100_000_000,
                    };
                    let _ = rustix::event::poll(&mut p, Some(&wait));
                }
                r => return r.map_err(io::Error::from),
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The exit status: `code`, or `EXIT_OUTPUT_LOST` (4) instead of success
/// when a write to standard output or standard error failed (said on
/// standard error when that still works).
pub fn exit_code(code: u8) -> u8 {
    if let Some((n, e)) = Std::Out.lost() {
        say(format_args!("{}: {n} write(s) lost ({e})", Std::Out.name()));
    }
    let lost = Std::Out.lost().is_some() || Std::Err.lost().is_some();
    if lost && code == 0 {
        EXIT_OUTPUT_LOST
    } else {
        code
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    const EPIPE: i32 = 32;

    #[test]
    fn console_stream_is_not_written_after_its_first_failed_write() {
        let l = Ledger::new();
        let calls = Cell::new(0);
        let ok = || {
            calls.set(calls.get() + 1);
            Ok(())
        };
        assert!(l.write(ok).is_ok());
        assert!(l.lost().is_none());
        let failed = l.write(|| {
            calls.set(calls.get() + 1);
            Err::<(), _>(io::Error::from_raw_os_error(EPIPE))
        });
        assert_eq!(failed.unwrap_err().raw_os_error(), Some(EPIPE));
        for _ in 0..3 {
            let skipped = l.write(ok);
            assert_eq!(skipped.unwrap_err().raw_os_error(), Some(EPIPE));
        }
        assert_eq!(calls.get(), 2, "written again after the failure");
        let (n, e) = l.lost().expect("lost");
        assert_eq!((n, e.raw_os_error()), (4, Some(EPIPE)));
    }

    #[test]
    fn console_keeps_the_first_failures_error() {
        let l = Ledger::new();
        let fail = |code| move || Err::<(), _>(io::Error::from_raw_os_error(code));
        assert!(l.write(fail(EPIPE)).is_err());
        assert!(l.write(fail(28)).is_err());
        let (n, e) = l.lost().expect("lost");
        assert_eq!((n, e.raw_os_error()), (2, Some(EPIPE)));
    }
}
