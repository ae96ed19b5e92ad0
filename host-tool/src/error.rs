//! The crate's one error type: a message per variant, and the exit status
//! each maps to; and every exit status of `latscope-host`, named.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Exit status: the work was done, every run read is complete, every goal
/// (or the gate) passed.
pub const EXIT_OK: u8 = 0;
/// Exit status: an error stopped the subcommand, an input could not be
/// read, or a run is incomplete.
pub const EXIT_FAILED: u8 = 1;
/// Exit status: bad usage (the parser's, or an unusable plan).
pub const EXIT_USAGE: u8 = 2;
/// Exit status: the work was done, but a write to standard output or
/// standard error failed (see [`crate::console`]).
pub const EXIT_OUTPUT_LOST: u8 = 4;
/// Exit status: a latency goal failed, or the gate found a regression
/// (over every other status but an error's).
pub const EXIT_GOAL_FAILED: u8 = 5;
/// Exit status: no goal failed, but one is inconclusive, or the gate is
/// (under an incomplete run's [`EXIT_FAILED`]).
pub const EXIT_GOAL_INCONCLUSIVE: u8 = 6;

/// Every exit status `latscope-host` can leave with, in ascending order:
/// the table of `docs/running.md` ("Exit statuses") has a row for each,
/// and `tests/tests/exit_statuses.rs` holds the two to it.
pub const EXIT_STATUSES: [u8; 6] = [
    EXIT_OK,
    EXIT_FAILED,
    EXIT_USAGE,
    EXIT_OUTPUT_LOST,
    EXIT_GOAL_FAILED,
    EXIT_GOAL_INCONCLUSIVE,
];

/// Everything that can stop a subcommand.
#[derive(Debug)]
pub enum Error {
    /// An input could not be opened or read.
    Input {
        /// What was being read (a path, `-`, a device or an address).
        what: String,
        /// The underlying error.
        source: io::Error,
    },
    /// An output could not be written.
    Output {
        /// The file or stream.
        what: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The serial port could not be opened or configured.
    Serial {
        /// The device.
        device: String,
        /// What the port driver said.
        message: String,
    },
    /// A socket could not be bound.
    Bind {
        /// The address.
        addr: String,
        /// The underlying error.
        source: io::Error,
    },
    /// A thread could not be started.
    Spawn {
        /// The thread's name.
        thread: &'static str,
        /// The underlying error.
        source: io::Error,
    },
    /// The input held no latscope frame at all.
    NotAStream {
        /// The input.
        what: String,
        /// Bytes read.
        bytes: u64,
    },
    /// The input ends inside its first frame, a hello: cut before any
    /// measurement arrived.
    TruncatedHello {
        /// The input.
        what: String,
        /// Bytes of the hello that are there.
        bytes: usize,
    },
    /// The input held no run (no hello frame) to report on.
    NoRun {
        /// The input.
        what: String,
    },
    /// The stream speaks a protocol or schema this build cannot read.
    Version {
        /// The input.
        what: String,
        /// A description of both sides' versions.
        detail: String,
    },
    /// Drawing a plot failed.
    Plot {
        /// The output file.
        file: PathBuf,
        /// What the plotting library said.
        message: String,
    },
    /// The command line was valid for the parser but not usable.
    Usage(String),
    /// A recorder's memory budget has no room for another run.
    Budget {
        /// Run id of the run refused.
        run_id: u64,
    },
    /// A trace.dat that `explain` cannot read: too large, of another
    /// version than 6, big-endian, corrupt, or without the CPU asked for.
    TraceFile {
        /// The file.
        what: String,
        /// What is wrong with it (core's message, on one line).
        detail: String,
    },
    /// A trace.dat's sidecar (its spike's window, as JSON) that does not
    /// read.
    Sidecar {
        /// The sidecar file.
        what: String,
        /// What is wrong with it.
        detail: String,
    },
}

impl Error {
    /// The process exit status for this error: [`EXIT_USAGE`] for bad
    /// usage, [`EXIT_FAILED`] otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => EXIT_USAGE,
            _ => EXIT_FAILED,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Input { what, source } => write!(f, "cannot read {what}: {source}"),
            Error::Output { what, source } => {
                write!(f, "cannot write {}: {source}", what.display())
            }
            Error::Serial { device, message } => {
                write!(f, "cannot open serial port {device}: {message}")
            }
            Error::Bind { addr, source } => write!(f, "cannot listen on {addr}: {source}"),
            Error::Spawn { thread, source } => {
                write!(f, "cannot start the {thread} thread: {source}")
            }
            Error::NotAStream { what, bytes } => write!(
                f,
                "{what}: not a latscope stream ({bytes} bytes read, no valid frame found)"
            ),
            Error::TruncatedHello { what, bytes } => write!(
                f,
                "{what}: truncated hello: the recording ends {bytes} bytes into its first frame, \
                 the run's hello, so it holds no measurement"
            ),
            Error::NoRun { what } => write!(
                f,
                "{what}: latscope frames but no hello frame, so no run to report"
            ),
            Error::Version { what, detail } => write!(f, "{what}: {detail}"),
            Error::Plot { file, message } => {
                write!(f, "cannot draw {}: {message}", file.display())
            }
            Error::Usage(msg) => f.write_str(msg),
            Error::Budget { run_id } => write!(
                f,
                "run {run_id:016x} refused: the memory budget is used up ({} MiB per \
                 connection, {} MiB for all)",
                crate::budget::STREAM_LIMIT >> 20,
                crate::budget::GLOBAL_LIMIT >> 20
            ),
            Error::TraceFile { what, detail } => write!(f, "{what}: {detail}"),
            Error::Sidecar { what, detail } => {
                write!(f, "{what}: not a spike's sidecar: {detail}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Input { source, .. }
            | Error::Output { source, .. }
            | Error::Bind { source, .. }
            | Error::Spawn { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Short form for the crate's results.
pub type Result<T> = std::result::Result<T, Error>;
