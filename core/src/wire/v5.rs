//! Protocol version 5, frozen: the hello's types that version 6 changed,
//! exactly as version 5 sent them (same names and shapes), its frame enum
//! for its schema key, and the upgrade of its hello.
//!
//! Version 6 appended [`super::WakeMode::Timerlat`] to the wake modes and
//! three bodies after the others (the timerlat histograms' statistics,
//! deltas and snapshot chunks), and changed nothing else. Postcard numbers
//! variants in order, so every version-5 body encodes the same in version
//! 6; the decoder still reads a version-5 hello through the frozen
//! [`Hello`] here, so that a version-5 frame naming a wake mode version 5
//! did not have does not decode, and upgrades it: the fields are the same,
//! and version 5's [`SCHEMA_KEY`] reads as the current
//! [`super::SCHEMA_KEY`] (any other key is kept, and the host reports the
//! mismatch as before). Every other version-5 body is read as the current
//! type.
//!
//! The hellos of versions 3 and 4 are this one (their frame enums borrow
//! it, so that their keys stay theirs), and version 2's hello carries this
//! [`RunConfig`]. The types this module borrows from the current ones are
//! part of [`SCHEMA_KEY`], which a test pins to the key version-5 hellos
//! carry (`tests/golden/v5`): if one of them changes, that pin fails, and
//! the changed type gets a frozen copy here.

use heapless::{String, Vec};
use postcard::experimental::max_size::MaxSize;
use postcard_schema::Schema;
use serde::{Deserialize, Serialize};

use crate::explain::Attribution;
use crate::layout::Layout;
use crate::wire as now;
use crate::wire::{
    Aggregate, Bye, ClockKind, Degraded, EvidenceHead, EvidencePart, HistDelta, LogLine, Policy,
    SnapshotChunk, SpikeSample, StartAlign, TargetInfo, ThreadInfo, ThreadStats, WallTime,
    MAX_THREADS,
};

/// The schema key version-5 hellos carry.
pub const SCHEMA_KEY: [u8; 8] =
    postcard_schema::key::Key::for_path::<Frame>("latscope/frame").to_bytes();

// Every version-5 frame fits the current decoder's buffer.
const _: () = assert!(Frame::POSTCARD_MAX_SIZE + 4 <= now::MAX_PAYLOAD);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
pub struct Frame {
    pub version: u8,
    pub seq: u32,
    pub body: Body,
}

#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
pub enum Body {
    Hello(Hello),
    Stats(ThreadStats),
    Delta(HistDelta),
    Chunk(SnapshotChunk),
    Spike(SpikeSample),
    Log(LogLine),
    Bye(Bye),
    Explain(Attribution),
    Aggregate(Aggregate),
    EvidenceHead(EvidenceHead),
    EvidencePart(EvidencePart),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
pub struct Hello {
    pub schema: [u8; 8],
    pub tool_version: String<16>,
    pub run_id: u64,
    pub target: TargetInfo,
    pub config: RunConfig,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
pub struct RunConfig {
    pub policy: Policy,
    pub priority: u8,
    pub interval_ns: u64,
    pub distance_ns: u64,
    pub clock: ClockKind,
    pub mlock: bool,
    pub dma_latency_us: Option<i32>,
    pub timer_slack_ns: u64,
    pub duration_ns: u64,
    pub loops: u64,
    pub warmup_cycles: u64,
    pub report_ns: u64,
    pub spike_ns: u64,
    pub break_ns: u64,
    pub hist_us: u32,
    pub hist_all: bool,
    pub nsecs: bool,
    pub started: Option<WallTime>,
    pub layout: Layout,
    pub degraded: Degraded,
    pub self_check: bool,
    pub threads: Vec<ThreadInfo, MAX_THREADS>,
    pub wake: WakeMode,
    pub align: StartAlign,
    pub smi: bool,
    pub tracefs_mounted: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
pub enum WakeMode {
    Absolute,
    Relative,
    Nanosleep,
    PosixTimer { relative: bool },
}

/// The current hello a version-5 hello says: the same, with version 5's
/// schema key read as the current one.
pub(super) fn upgrade_hello(h: Hello) -> now::Hello {
    upgrade_hello_of(h, SCHEMA_KEY)
}

/// The current hello a hello of this shape says, `key` (the schema key of
/// the version that sent it: 3, 4 or 5) read as the current one.
pub(super) fn upgrade_hello_of(h: Hello, key: [u8; 8]) -> now::Hello {
    now::Hello {
        schema: if h.schema == key {
            now::SCHEMA_KEY
        } else {
            h.schema
        },
        tool_version: h.tool_version,
        run_id: h.run_id,
        target: h.target,
        config: upgrade_config(h.config),
    }
}

/// The current configuration a version-5 (or 2 to 4) one says: the same
/// fields and values.
pub(super) fn upgrade_config(c: RunConfig) -> now::RunConfig {
    now::RunConfig {
        policy: c.policy,
        priority: c.priority,
        interval_ns: c.interval_ns,
        distance_ns: c.distance_ns,
        clock: c.clock,
        mlock: c.mlock,
        dma_latency_us: c.dma_latency_us,
        timer_slack_ns: c.timer_slack_ns,
        duration_ns: c.duration_ns,
        loops: c.loops,
        warmup_cycles: c.warmup_cycles,
        report_ns: c.report_ns,
        spike_ns: c.spike_ns,
        break_ns: c.break_ns,
        hist_us: c.hist_us,
        hist_all: c.hist_all,
        nsecs: c.nsecs,
        started: c.started,
        layout: c.layout,
        degraded: c.degraded,
        self_check: c.self_check,
        threads: c.threads,
        wake: match c.wake {
            WakeMode::Absolute => now::WakeMode::Absolute,
            WakeMode::Relative => now::WakeMode::Relative,
            WakeMode::Nanosleep => now::WakeMode::Nanosleep,
            WakeMode::PosixTimer { relative } => now::WakeMode::PosixTimer { relative },
        },
        align: c.align,
        smi: c.smi,
        tracefs_mounted: c.tracefs_mounted,
    }
}
