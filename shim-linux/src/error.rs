//! The crate's one error type, and the exit status of each kind.

use std::fmt;

use rustix::io::Errno;

/// Exit status of a completed run (also after `-b` stopped it).
pub const EXIT_OK: i32 = 0;
/// Exit status of a run that failed after it started (or found defects).
pub const EXIT_FAILED: i32 = 1;
/// Exit status of a bad command line.
pub const EXIT_USAGE: i32 = 2;
/// Exit status when a privilege is missing (and `--best-effort` was not given).
pub const EXIT_PRIVILEGE: i32 = 3;

/// Everything that stops latscope. Each variant prints as one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The command line is wrong (the message names the option).
    Usage(String),
    /// A privilege is missing: what failed, and the flags that run without it.
    Privilege {
        /// What could not be done, and why.
        what: String,
        /// The flags that avoid the step.
        hint: &'static str,
    },
    /// A system call failed.
    Sys {
        /// What latscope was doing.
        what: String,
        /// The error number.
        errno: Errno,
    },
    /// A file or stream could not be used.
    Io {
        /// What latscope was doing.
        what: String,
        /// The error text.
        msg: String,
    },
    /// The core refused a value or failed.
    Core(latscope_core::Error),
}

impl Error {
    /// A usage error.
    pub fn usage(msg: impl Into<String>) -> Self {
        Error::Usage(msg.into())
    }

    /// A failed system call.
    pub fn sys(what: impl Into<String>, errno: Errno) -> Self {
        Error::Sys {
            what: what.into(),
            errno,
        }
    }

    /// A failed file or stream operation.
    pub fn io(what: impl Into<String>, e: impl fmt::Display) -> Self {
        Error::Io {
            what: what.into(),
            msg: e.to_string(),
        }
    }

    /// The process exit status for this error.
    pub fn exit_status(&self) -> i32 {
        match self {
            Error::Usage(_) => EXIT_USAGE,
            Error::Privilege { .. } => EXIT_PRIVILEGE,
            _ => EXIT_FAILED,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) => write!(f, "{m} (see --help)"),
            Error::Privilege { what, hint } => {
                write!(f, "{what}; run as root, or without it: {hint}")
            }
            Error::Sys { what, errno } => write!(f, "{what}: {errno}"),
            Error::Io { what, msg } => write!(f, "{what}: {msg}"),
            Error::Core(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<latscope_core::Error> for Error {
    fn from(e: latscope_core::Error) -> Self {
        Error::Core(e)
    }
}
