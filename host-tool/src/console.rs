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
//! The rule is the target's too (its `output` module): both keep their
//! books in core's `console::Ledger`, and follow `docs/console.md`.

use std::fmt::Display;
use std::io::{self, Write};

use latscope_core::console::Ledger;

use crate::error::{EXIT_OK, EXIT_OUTPUT_LOST};

/// A standard stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Std {
    /// Standard output.
    Out,
    /// Standard error.
    Err,
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

    /// Write all of `bytes` with plain `write`s. Returns whether everything
    /// was written; a failure is counted (see [`Std::lost`]) and the stream
    /// is not written again.
    pub fn write(self, bytes: &[u8]) -> bool {
        self.write_with(|| Raw(self).write_all(bytes)).is_ok()
    }

    /// Writes lost so far (failed, or not attempted after the first
    /// failure), and the first failure's error.
    pub(crate) fn lost(self) -> Option<(u64, io::Error)> {
        let (n, errno) = self.ledger().lost()?;
        Some((n, io::Error::from_raw_os_error(errno)))
    }

    /// Run `write` under the rule: not at all after a failure (the first
    /// failure's error is returned instead), and a failure counted.
    fn write_with<T>(self, write: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        let ledger = self.ledger();
        ledger
            .write(write, |e| e.raw_os_error().unwrap_or(0))
            .map_err(|e| {
                e.unwrap_or_else(|| {
                    let errno = ledger.lost().map_or(0, |(_, errno)| errno);
                    io::Error::from_raw_os_error(errno)
                })
            })
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
        Std::Out.write_with(|| Raw(Std::Out).write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `write(2)` on a standard stream's file descriptor (on Windows its
/// handle), unbuffered: no byte is kept to be written again later (std's
/// `Stdout` buffers, and retries its buffer at exit). A full non-blocking
/// stream (EAGAIN) is waited for, as the target's writes do.
struct Raw(Std);

impl Write for Raw {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        crate::platform::write_std(self.0, buf)
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
    if lost && code == EXIT_OK {
        EXIT_OUTPUT_LOST
    } else {
        code
    }
}
