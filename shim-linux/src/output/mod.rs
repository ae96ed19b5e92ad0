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
//! The rule is the host's too (its `console` module): both keep their
//! books in core's `console::Ledger`, and follow `docs/console.md`.

use latscope_core::console::Ledger;

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
        self.ledger()
            .write(|| write_all(self.fd(), bytes), |e| e.raw_os_error())
            .is_ok()
    }

    /// What this stream lost so far, if anything.
    pub fn lost(self) -> Option<Lost> {
        let (writes, errno) = self.ledger().lost()?;
        Some(Lost {
            writes,
            errno: Errno::from_raw_os_error(errno),
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
    /// standard output (`--stream -`) or rtla's text does (invoked as
    /// `rtla`).
    pub human: Std,
    /// Whether that is a terminal: the live view then redraws in place, and
    /// the final figures are already on screen.
    pub tty: bool,
}

impl Console {
    /// The console of a run with `cfg`.
    pub fn of(cfg: &Config) -> Console {
        // invoked as rtla, standard output is rtla's text alone
        let human = if cfg.stream == Some(Dest::Stdout) || cfg.rtla.is_some() {
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
