//! The one writer of standard output and standard error.
//!
//! `println!` and `eprintln!` panic when the write fails, which under
//! `panic = "abort"` kills a recorder and every connection it holds. Here a
//! failed write (EPIPE from a closed pipe, ENOSPC from a full disk, EIO)
//! is counted instead, and the work goes on: recordings, `-o` files and
//! plots are still written. SIGPIPE stays ignored (the Rust runtime sets
//! that before `main`), so a closed pipe is such an EPIPE, never a kill.
//! At the end [`exit_code`] turns a success into `EXIT_OUTPUT_LOST` (4).

use std::fmt::Display;
use std::io::{self, Write};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

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

/// Failed writes per stream (output, error).
static LOST: [AtomicU64; 2] = [const { AtomicU64::new(0) }; 2];
/// The OS error of each stream's first failed write (0: none or unknown).
static FIRST_ERRNO: [AtomicI32; 2] = [const { AtomicI32::new(0) }; 2];

impl Std {
    fn slot(self) -> usize {
        match self {
            Std::Out => 0,
            Std::Err => 1,
        }
    }

    /// The stream's name in messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Std::Out => "standard output",
            Std::Err => "standard error",
        }
    }

    /// Write all of `bytes` and flush; a failure is counted. Returns
    /// whether everything was written.
    pub fn write(self, bytes: &[u8]) -> bool {
        let r = match self {
            Std::Out => {
                let mut o = io::stdout().lock();
                o.write_all(bytes).and_then(|_| o.flush())
            }
            Std::Err => io::stderr().lock().write_all(bytes),
        };
        match r {
            Ok(()) => true,
            Err(e) => {
                self.count(&e);
                false
            }
        }
    }

    fn count(self, e: &io::Error) {
        let i = self.slot();
        let code = e.raw_os_error().unwrap_or(0);
        let _ = FIRST_ERRNO[i].compare_exchange(0, code, Ordering::Relaxed, Ordering::Relaxed);
        LOST[i].fetch_add(1, Ordering::Relaxed);
    }

    /// Failed writes so far, and the first one's error.
    pub(crate) fn lost(self) -> Option<(u64, io::Error)> {
        let i = self.slot();
        let n = LOST[i].load(Ordering::Relaxed);
        (n > 0).then(|| {
            (
                n,
                io::Error::from_raw_os_error(FIRST_ERRNO[i].load(Ordering::Relaxed)),
            )
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

/// Standard output as a [`Write`] that counts its failures (for the live
/// view, which writes as it goes).
pub(crate) struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        io::stdout().write(buf).inspect_err(|e| Std::Out.count(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stdout().flush().inspect_err(|e| Std::Out.count(e))
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
