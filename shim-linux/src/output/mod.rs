//! Where what people and scripts read goes: the one place that decides
//! which standard stream the human output goes to ([`Console`]), and the
//! one writer of the standard streams ([`Std::write`]). The formats
//! themselves are cyclictest's, written by the core's formatter
//! (`latscope_core::cyclictest`) that the host uses too.
//!
//! A write to standard output or standard error never aborts the program
//! (`print!` would, under `panic = "abort"`): a failed one (EPIPE from a
//! closed pipe, ENOSPC from a full disk, EIO) is counted, that stream gets
//! no further writes, and the run goes on. SIGPIPE stays ignored, as the
//! Rust runtime sets it before `main`, so a closed pipe is such an EPIPE
//! and never kills the run. The exit status then says output was lost
//! ([`crate::error::EXIT_OUTPUT_LOST`]).
//!
//! The rule is the host's too (its `console` module); both follow
//! `docs/console.md`.

use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use rustix::fd::BorrowedFd;
use rustix::io::Errno;

use crate::config::{Config, Dest};
use crate::linux::write_all;

/// A standard stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Std {
    /// Standard output.
    Out,
    /// Standard error.
    Err,
}

/// What a standard stream lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lost {
    /// Writes that failed or were not attempted after the first failure.
    pub writes: u64,
    /// Why the first one failed.
    pub errno: Errno,
}

/// The bookkeeping of one standard stream: its writes stop at the first
/// failure.
struct Ledger {
    /// Writes that failed or were not attempted after the first failure.
    lost: AtomicU64,
    /// The error number of the first failed write (0: none).
    first_errno: AtomicI32,
}

impl Ledger {
    const fn new() -> Ledger {
        Ledger {
            lost: AtomicU64::new(0),
            first_errno: AtomicI32::new(0),
        }
    }

    /// Run `write` unless a write failed before. Returns whether it ran and
    /// succeeded; a failure, or a write not attempted because of an
    /// earlier one, is counted.
    fn write(&self, write: impl FnOnce() -> Result<(), Errno>) -> bool {
        if self.lost.load(Ordering::Relaxed) > 0 {
            self.lost.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        match write() {
            Ok(()) => true,
            Err(e) => {
                let _ = self.first_errno.compare_exchange(
                    0,
                    e.raw_os_error(),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
                self.lost.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    fn lost(&self) -> Option<Lost> {
        let writes = self.lost.load(Ordering::Relaxed);
        (writes > 0).then(|| Lost {
            writes,
            errno: Errno::from_raw_os_error(self.first_errno.load(Ordering::Relaxed)),
        })
    }
}

/// The ledgers of standard output and standard error.
static LEDGERS: [Ledger; 2] = [const { Ledger::new() }; 2];

impl Std {
    fn fd(self) -> BorrowedFd<'static> {
        match self {
            Std::Out => rustix::stdio::stdout(),
            Std::Err => rustix::stdio::stderr(),
        }
    }

    fn ledger(self) -> &'static Ledger {
        match self {
            Std::Out => &LEDGERS[0],
            Std::Err => &LEDGERS[1],
        }
    }

    /// The stream's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Std::Out => "standard output",
            Std::Err => "standard error",
        }
    }

    /// Write all of `bytes` with plain `write`s. Returns whether they were
    /// written; a failure is counted (see [`Std::lost`]) and the stream is
    /// not written again.
    pub fn write(self, bytes: &[u8]) -> bool {
        self.ledger().write(|| write_all(self.fd(), bytes))
    }

    /// What this stream lost so far, if anything.
    pub fn lost(self) -> Option<Lost> {
        self.ledger().lost()
    }
}

/// One line on standard error (`line` without its newline).
pub fn note(line: &str) {
    let mut b = String::with_capacity(line.len() + 1);
    b.push_str(line);
    b.push('\n');
    Std::Err.write(b.as_bytes());
}

/// Where the human output of a run goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Console {
    /// Standard output, or standard error when the frame stream owns
    /// standard output (`--stream -`).
    pub human: Std,
    /// Whether that is a terminal: the live view then redraws in place, and
    /// the final figures are already on screen.
    pub tty: bool,
}

impl Console {
    /// The console of a run with `cfg`.
    pub fn of(cfg: &Config) -> Console {
        let human = if cfg.stream == Some(Dest::Stdout) {
            Std::Err
        } else {
            Std::Out
        };
        Console {
            human,
            tty: rustix::termios::isatty(human.fd()),
        }
    }
}

/// Text for one standard stream, gathered in a reused buffer and written
/// with plain `write`s.
pub struct TextOut {
    std: Std,
    /// The text not yet written.
    pub buf: String,
}

impl TextOut {
    /// An empty buffer of `capacity` bytes for `std`.
    pub fn new(std: Std, capacity: usize) -> TextOut {
        TextOut {
            std,
            buf: String::with_capacity(capacity),
        }
    }

    /// Write the text and empty the buffer.
    pub fn flush(&mut self) {
        if !self.buf.is_empty() {
            let _ = self.std.write(self.buf.as_bytes());
            self.buf.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn output_stream_is_not_written_after_its_first_failed_write() {
        let l = Ledger::new();
        let calls = Cell::new(0);
        let ok = || {
            calls.set(calls.get() + 1);
            Ok(())
        };
        assert!(l.write(ok));
        assert_eq!(l.lost(), None);
        assert!(!l.write(|| {
            calls.set(calls.get() + 1);
            Err(Errno::PIPE)
        }));
        for _ in 0..3 {
            assert!(!l.write(ok));
        }
        assert_eq!(calls.get(), 2, "written again after the failure");
        let want = Lost {
            writes: 4,
            errno: Errno::PIPE,
        };
        assert_eq!(l.lost(), Some(want));
    }

    #[test]
    fn output_keeps_the_first_failures_errno() {
        let l = Ledger::new();
        assert!(!l.write(|| Err(Errno::NOSPC)));
        assert!(!l.write(|| Err(Errno::PIPE)));
        let want = Lost {
            writes: 2,
            errno: Errno::NOSPC,
        };
        assert_eq!(l.lost(), Some(want));
    }
}
