//! Where what people and scripts read goes: the one place that decides
//! which standard stream the human output goes to ([`Console`]). The
//! formats themselves are cyclictest's, written by the core's formatter
//! (`latscope_core::cyclictest`) that the host uses too.

use rustix::fd::BorrowedFd;

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

impl Std {
    fn fd(self) -> BorrowedFd<'static> {
        match self {
            Std::Out => rustix::stdio::stdout(),
            Std::Err => rustix::stdio::stderr(),
        }
    }

    /// Write all of `bytes` with plain `write`s (a failure is ignored: the
    /// run goes on, and the stream and exit status still tell the result).
    pub fn write(self, bytes: &[u8]) {
        let _ = write_all(self.fd(), bytes);
    }
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
            self.std.write(self.buf.as_bytes());
            self.buf.clear();
        }
    }
}
