//! The xtask's one error type.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why a task failed; each variant has its own message.
#[derive(Debug)]
pub enum Error {
    /// A file or directory could not be read or written.
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// A results file is not the JSON of its typed result: a field
    /// renamed, missing or of another type.
    Json {
        /// The file.
        path: PathBuf,
        /// serde_json's message (it names the field and the line).
        source: serde_json::Error,
    },
    /// A line of a tool's output or of a raw output file is not what it
    /// should be.
    Parse {
        /// The file or stream.
        what: String,
        /// What was wrong, with the line.
        why: String,
    },
    /// A program could not be started or ended with a failure status.
    Command {
        /// The command line.
        cmd: String,
        /// Its status or why it did not start.
        why: String,
    },
    /// Something a task needs is not there: a results file, a marker, a
    /// release artefact.
    Missing(String),
    /// A check of the release failed.
    Check(String),
    /// A usage error: a bad argument.
    Usage(String),
}

impl Error {
    /// An [`Error::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Json { path, source } => {
                write!(f, "{}: not a typed result: {source}", path.display())
            }
            Error::Parse { what, why } => write!(f, "{what}: {why}"),
            Error::Command { cmd, why } => write!(f, "`{cmd}`: {why}"),
            Error::Missing(what) => write!(f, "missing: {what}"),
            Error::Check(what) => write!(f, "release check failed: {what}"),
            Error::Usage(what) => write!(f, "usage: {what}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Json { source, .. } => Some(source),
            _ => None,
        }
    }
}
