//! The core's one error type.

use core::fmt;

/// Everything that can go wrong in the core. Each variant has a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// Two histograms with different bucket layouts cannot be combined.
    LayoutMismatch,
    /// A bucket index beyond the layout (a corrupt or foreign delta).
    BucketOutOfRange,
    /// The writer was active on every snapshot attempt.
    SnapshotBusy,
    /// An encode buffer was too small for the frame (a sizing bug).
    BufferTooSmall,
    /// postcard could not serialise the frame.
    Encode,
    /// The clock could not sleep until the deadline (errno from the OS).
    Sleep(i32),
    /// A configuration value is out of range (named).
    BadConfig(&'static str),
    /// A latency goal list (`--slo`) that does not read: why.
    BadGoal(&'static str),
    /// Time zone data or a `TZ` rule that cannot be read (why).
    BadTimeZone(&'static str),
    /// Bucket memory handed in does not match the layout.
    BucketMemory,
    /// A histogram layout no latscope target can produce.
    IllegalLayout,
    /// The bucket runs of a delta or snapshot frame do not decode.
    BadRuns,
    /// A page of the kernel's binary trace does not decode: the byte
    /// offset in the page, and why.
    BadTracePage {
        /// Where in the page.
        offset: u32,
        /// What is wrong there.
        why: &'static str,
    },
    /// A trace format file (`events/header_page`, an event's `format`)
    /// does not read (why).
    BadTraceFormat(&'static str),
    /// A trace.dat that does not read: the byte offset in the file, and
    /// why.
    BadTraceFile {
        /// Where in the file.
        offset: u64,
        /// What is wrong there.
        why: &'static str,
    },
    /// A trace.dat of another version than 6 (the version).
    TraceFileVersion(u32),
    /// A part of a spike's evidence that does not fit its file (why).
    BadEvidence(&'static str),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::LayoutMismatch => f.write_str("histograms have different bucket layouts"),
            Error::BucketOutOfRange => f.write_str("bucket index out of range for the layout"),
            Error::SnapshotBusy => f.write_str("could not take a consistent snapshot: writer busy"),
            Error::BufferTooSmall => f.write_str("encode buffer too small for the frame"),
            Error::Encode => f.write_str("frame could not be serialised"),
            Error::Sleep(e) => write!(f, "clock_nanosleep failed (errno {e})"),
            Error::BadConfig(what) => write!(f, "invalid configuration: {what}"),
            Error::BadGoal(why) => write!(f, "latency goals: {why}"),
            Error::BadTimeZone(why) => write!(f, "time zone: {why}"),
            Error::BucketMemory => {
                f.write_str("bucket memory does not match the layout (length or not zeroed)")
            }
            Error::IllegalLayout => {
                f.write_str("histogram layout larger than any latscope target produces")
            }
            Error::BadRuns => f.write_str("malformed bucket runs in a histogram frame"),
            Error::BadTracePage { offset, why } => {
                write!(f, "trace page: {why} (at byte {offset})")
            }
            Error::BadTraceFormat(why) => write!(f, "trace format: {why}"),
            Error::BadTraceFile { offset, why } => {
                write!(f, "trace.dat: {why} (at byte {offset})")
            }
            Error::BadEvidence(why) => write!(f, "evidence: {why}"),
            Error::TraceFileVersion(v) => write!(
                f,
                "trace.dat version {v}: only version 6 is read; \
                 `trace-cmd convert --file-version 6 --compression none` writes one"
            ),
        }
    }
}

impl core::error::Error for Error {}
