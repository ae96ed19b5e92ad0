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

/// Writes lost per standard stream (output, error).
static LOST: [AtomicU64; 2] = [const { AtomicU64::new(0) }; 2];
/// The error number of each stream's first failed write (0: none).
static FIRST_ERRNO: [AtomicI32; 2] = [const { AtomicI32::new(0) }; 2];

/// What a standard stream lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lost {
    /// Writes that failed or were not attempted after the first failure.
    pub writes: u64,
    /// Why the first one failed.
    pub errno: Errno,
}

impl Std {
    fn fd(self) -> BorrowedFd<'static> {
        match self {
            Std::Out => rustix::stdio::stdout(),
            Std::Err => rustix::stdio::stderr(),
        }
    }

    fn slot(self) -> usize {
        match self {
            Std::Out => 0,
            Std::Err => 1,
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
        let i = self.slot();
        if LOST[i].load(Ordering::Relaxed) > 0 {
            LOST[i].fetch_add(1, Ordering::Relaxed);
            return false;
        }
        match write_all(self.fd(), bytes) {
            Ok(()) => true,
            Err(e) => {
                let _ = FIRST_ERRNO[i].compare_exchange(
                    0,
                    e.raw_os_error(),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
                LOST[i].fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    /// What this stream lost so far, if anything.
    pub fn lost(self) -> Option<Lost> {
        let i = self.slot();
        let writes = LOST[i].load(Ordering::Relaxed);
        (writes > 0).then(|| Lost {
            writes,
            errno: Errno::from_raw_os_error(FIRST_ERRNO[i].load(Ordering::Relaxed)),
        })
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
