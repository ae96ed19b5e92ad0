//! Protocol version 2, frozen: the frame types that version 3 changed,
//! exactly as version 2 sent them (same names and shapes), and their
//! upgrade to the current types.
//!
//! Version 3 added fields at the end of [`super::TargetInfo`] and the
//! [`super::Body::Aggregate`] variant after the others. Every other body
//! encodes the same in both versions (postcard numbers the variants in
//! order), so the decoder reads a version-2 stats, delta, chunk, spike,
//! log, bye or explain frame as the current type, and only the hello
//! through the frozen [`Hello`] here, whose configuration is version 5's
//! (`v5`). The types this module borrows from
//! the current ones are part of [`SCHEMA_KEY`], which a test pins to the
//! key version-2 hellos carry: if one of them changes, that pin fails, and
//! the changed type gets a frozen copy here.
//!
//! What an upgraded hello gets for the fields version 3 added (the facts
//! of every version-2 target, all Linux with nanosecond clocks):
//! * `TargetInfo::platform`: [`super::Platform::Linux`];
//! * `TargetInfo::model`: empty (unknown);
//! * `TargetInfo::clock_hz`: [`super::NS_CLOCK_HZ`];
//! * `TargetInfo::clock_resolution_ns`: 0 (unknown).
//!
//! Its schema key: version 2's [`SCHEMA_KEY`] becomes the current
//! [`super::SCHEMA_KEY`]; any other key is kept, and the host reports the
//! mismatch as before.

use heapless::String;
use postcard::experimental::max_size::MaxSize;
use postcard_schema::Schema;
use serde::{Deserialize, Serialize};

use crate::explain::{MAX_CAUSES, NAME_LEN};
use crate::wire as now;
use crate::wire::v5::{self, RunConfig};
use crate::wire::{Bye, HistDelta, LogLine, SnapshotChunk, SpikeSample, ThreadStats};

/// The schema key version-2 hellos carry.
pub const SCHEMA_KEY: [u8; 8] =
    postcard_schema::key::Key::for_path::<Frame>("latscope/frame").to_bytes();

// Every version-2 frame fits the current decoder's buffer.
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
}

/// Version 2's explanation types, for its schema key only: version 3
/// appended `CauseKind::Masked`, so a version-2 explain frame decodes as
/// version 4's (`v4::Attribution`) unchanged, and is upgraded from there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
pub struct Attribution {
    pub cpu: u32,
    pub cycle: u64,
    pub deadline_ns: u64,
    pub latency_ns: u64,
    pub coarse: bool,
    pub partial: bool,
    pub causes: heapless::Vec<Cause, MAX_CAUSES>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
pub struct Cause {
    pub kind: CauseKind,
    pub id: u32,
    pub prio: i32,
    pub name: String<NAME_LEN>,
    pub count: u32,
    pub ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
pub enum CauseKind {
    Irq,
    Softirq,
    Vector,
    TimerDelay,
    IdleExit,
    Task,
    Untraced,
    Other,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, MaxSize, Schema)]
pub struct TargetInfo {
    pub hostname: String<64>,
    pub arch: String<16>,
    pub kernel: String<64>,
    pub kernel_version: String<64>,
    pub preempt_rt: bool,
    pub preempt_model: String<16>,
    pub cpus: u16,
    pub cmdline: String<256>,
    pub clocksource: String<24>,
    pub rt_runtime_us: i64,
    pub argv: String<256>,
    pub name: String<32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
pub struct Hello {
    pub schema: [u8; 8],
    pub tool_version: String<16>,
    pub run_id: u64,
    pub target: TargetInfo,
    pub config: RunConfig,
}

/// The current hello a version-2 hello says.
pub(super) fn upgrade_hello(h: Hello) -> now::Hello {
    let t = h.target;
    now::Hello {
        schema: if h.schema == SCHEMA_KEY {
            now::SCHEMA_KEY
        } else {
            h.schema
        },
        tool_version: h.tool_version,
        run_id: h.run_id,
        target: now::TargetInfo {
            hostname: t.hostname,
            arch: t.arch,
            kernel: t.kernel,
            kernel_version: t.kernel_version,
            preempt_rt: t.preempt_rt,
            preempt_model: t.preempt_model,
            cpus: t.cpus,
            cmdline: t.cmdline,
            clocksource: t.clocksource,
            rt_runtime_us: t.rt_runtime_us,
            argv: t.argv,
            name: t.name,
            // every version-2 target was Linux, measuring in ns
            platform: now::Platform::Linux,
            model: String::new(),
            clock_hz: now::NS_CLOCK_HZ,
            clock_resolution_ns: 0,
        },
        config: v5::upgrade_config(h.config),
    }
}
