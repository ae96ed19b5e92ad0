//! The wire protocol: frames from the target to the host.
//!
//! Every frame is `00 ‖ COBS(postcard(Frame) ‖ CRC-32 LE) ‖ 00`. The 0x00
//! delimiter on both sides lets a receiver that joins mid-stream, or that
//! lost a delimiter to corruption, resynchronise at once. The CRC-32
//! (ISO-HDLC) covers the postcard payload, so a corrupted frame is rejected.
//! The first payload byte is the protocol version, checked before anything
//! else is decoded, and every frame carries a sequence number, so loss is
//! counted.
//!
//! A run streams: a [`Hello`] (resent periodically and on every new
//! connection), then per report interval and thread a [`HistDelta`] (one or
//! more parts) and a [`ThreadStats`], and snapshot chunks of the cumulative
//! histogram ([`SnapshotChunk`]); any [`SpikeSample`]s, explained spikes
//! ([`Body::Explain`]) and [`LogLine`]s, per report interval and thread an
//! [`Aggregate`] of its spikes and, in the timerlat mode, the kernel's
//! timerlat histograms ([`TimerlatStats`]); and at the end a [`Bye`]. Which
//! frames go when, and how a receiver turns them back into exact
//! histograms, is [`crate::protocol`]'s.
//!
//! # Versions
//!
//! * **1**: deltas and chunks as lists of `{bucket, count}` structs, a full
//!   snapshot every 5th report. Still decoded: [`Decoder`] upgrades every
//!   version-1 frame to the current types (deltas and chunks get packed
//!   runs, chunks the bucket range they cover; a version-1 hello's schema
//!   key reads as [`SCHEMA_KEY`]; fields added since get documented
//!   defaults).
//! * **2**: deltas and chunks carry packed [`Runs`]; a chunk names the
//!   bucket range it covers, so a snapshot can roll through the histogram
//!   a chunk per report; delta parts fill a small frame. Still decoded:
//!   its hello is upgraded (the version-3 fields get the defaults of a
//!   Linux target: see `v2`), every other body is the same in version 3.
//! * **3**: the hello's [`TargetInfo`] says the
//!   [`Platform`], the hardware's `model`, and the measuring clock's rate
//!   and resolution (`clock_hz`, `clock_resolution_ns`), so a
//!   microcontroller target can say what it is; the [`Aggregate`] frame
//!   accounts for every sample above the spike threshold (sent,
//!   explained, aggregated, dropped). Still decoded: every body is the
//!   same in version 4, and its hello's schema key reads as the current
//!   one (see `v3`).
//! * **4**: a spike's evidence, its window as a trace.dat
//!   ([`crate::tracedat`]), travels as an [`EvidenceHead`] and
//!   [`EvidencePart`]s where the target was asked to send it
//!   ([`crate::protocol::parts`], [`crate::protocol::EvidenceAssembler`]).
//!   Still decoded: its explanations (and those of versions 2 and 3) are
//!   upgraded from the frozen version-4 cause lines, its hello's schema
//!   key reads as the current one (see `v4`).
//! * **5**: an explanation's cause line is typed
//!   ([`crate::explain::Culprit`]): an IRQ by number and name, an x86
//!   vector, a softirq by kind, a task by pid, comm, policy class and
//!   priority, the late timer with the task that ran, an idle exit, a
//!   masked section, merged lines, or untraced time by its reason, with
//!   `Option` where the trace may not show a value. Its hello's types are
//!   frozen in `v5` (the hellos of versions 3 and 4 are the same, and
//!   version 2's carries its configuration), so that the next version can
//!   change them and every older key stays what its recordings carry.
//!   Still decoded: every body is the same in version 6; its hello is
//!   read through `v5` (the same fields, its key read as the current one).
//! * **6** (this build): the timerlat wake mode ([`WakeMode::Timerlat`],
//!   `--timerlat`) and, per thread and report, the kernel's three timerlat
//!   histograms (IRQ, thread and return-to-user latency) as
//!   [`TimerlatDelta`] parts, a [`TimerlatStats`] and a [`TimerlatChunk`]
//!   of a rolling snapshot, on the schedule of the thread's own histogram
//!   ([`crate::protocol`]).

mod ack;
mod cobs_fast;
mod decode;
mod encode;
mod runs;
mod types;
mod v1;
mod v2;
mod v3;
mod v4;
mod v5;

pub use ack::{Ack, AckReader, MAX_ACK_FRAME};
pub use decode::{DecodeError, Decoder, Frames, LinkStats};
pub use encode::{encode, Encoder, MAX_FRAME, MAX_PAYLOAD};
pub use runs::{RunWriter, Runs, RUN_BYTES};
pub use types::{
    bounded, Aggregate, Body, Bye, ByeReason, ClockKind, Degraded, EvidenceHead, EvidencePart,
    Frame, Hello, HistDelta, Level, LogLine, Platform, Policy, RunConfig, SnapshotChunk,
    SpikeFlags, SpikeSample, StartAlign, TargetInfo, ThreadInfo, ThreadStats, TimerlatChunk,
    TimerlatDelta, TimerlatFigures, TimerlatStats, WakeMode, WallTime, EVIDENCE_PART, MAX_THREADS,
    NS_CLOCK_HZ,
};

/// The protocol version this build speaks (the first payload byte).
pub const PROTOCOL_VERSION: u8 = 6;

/// The oldest protocol version this build still decodes.
pub(crate) const OLDEST_VERSION: u8 = 1;

/// The largest encoded size (delimiters included) of the frames that must
/// get through a noisy line often: snapshot chunks, deltas and stats.
pub const MAX_SMALL_FRAME: usize = 256;

/// An 8-byte hash of the frame schema (names and types of every field).
/// The hello carries it; a host refuses a stream whose schema differs.
///
/// It changes whenever any type inside [`Frame`] changes: a field added,
/// removed, renamed or retyped, a variant added, a type renamed. A test
/// pins its value; update the pin in the same change, and keep the
/// version-1 and -2 upgrades filling the new field.
pub const SCHEMA_KEY: [u8; 8] =
    postcard_schema::key::Key::for_path::<Frame>("latscope/frame").to_bytes();

#[cfg(test)]
pub(crate) mod tests;
