//! Protocol version 1, frozen: the frame types exactly as version 1 sent
//! them (same names and shapes, so the same schema key), and their upgrade
//! to the current types. The decoder turns every version-1 frame into a
//! current [`super::Frame`] here, so a host reads old recordings with the
//! code that reads new ones.
//!
//! What changed in version 2, and what an upgraded frame gets:
//! * [`HistDelta`] and [`SnapshotChunk`] carry packed [`super::Runs`]
//!   instead of lists of `{bucket, count}`; a delta part loses `parts`, a
//!   chunk its `index`/`total` and gains the range `start..end` it covers
//!   (the first chunk from bucket 0, the last to the end of the layout,
//!   the others from their first bucket to their last). The pairs must be
//!   in increasing bucket order, as every version-1 sender wrote them;
//!   otherwise the frame is malformed.
//! * The hello's schema key: version 1's [`SCHEMA_KEY`] becomes the current
//!   [`super::SCHEMA_KEY`] (the upgrade is the current schema); any other
//!   key is kept, and the host reports the mismatch as before.
//!
//! Fields that later versions add to the current types get their
//! documented defaults in [`upgrade_body`]:
//! * `TargetInfo::name` (the board's name): empty; a host then goes by the
//!   host name.
//! * `TargetInfo::platform`, `model`, `clock_hz`, `clock_resolution_ns`
//!   (version 3): as for a version-2 hello (see `v2`): Linux, no model,
//!   a nanosecond clock of unknown resolution.
//! * `RunConfig::tracefs_mounted`: false (version 1 never mounted tracefs).
//! * `RunConfig::wake`: `WakeMode::Absolute`, `RunConfig::align`:
//!   `StartAlign::Own`, `RunConfig::smi`: false (version 1 had only the
//!   absolute sleep, each thread from its own clock reading, no SMI count).
//! * `Degraded::no_dma_latency_device`: false (version 1 set
//!   `no_dma_latency` for a missing device too; a host tells the two apart
//!   by `--best-effort` on the command line).
//!
//! Nothing here may change: a changed type would change [`SCHEMA_KEY`],
//! which a test pins.

use heapless::{String, Vec};
use postcard::experimental::max_size::MaxSize;
use postcard_schema::Schema;
use serde::{Deserialize, Serialize};

use super::runs::RunWriter;
use super::RUN_BYTES;
use crate::explain as now_explain;
use crate::layout as now_layout;
use crate::wire as now;

/// The schema key version-1 hellos carry.
pub const SCHEMA_KEY: [u8; 8] =
    postcard_schema::key::Key::for_path::<Frame>("latscope/frame").to_bytes();

// Every version-1 frame fits the current decoder's buffer.
const _: () = assert!(Frame::POSTCARD_MAX_SIZE + 4 <= now::MAX_PAYLOAD);

pub const MAX_THREADS: usize = 64;
pub const DELTA_ENTRIES: usize = 24;
pub const CHUNK_ENTRIES: usize = 16;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
pub enum Policy {
    Other,
    Fifo,
    Rr,
    Batch,
    Idle,
    Deadline,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
pub enum ClockKind {
    Monotonic,
    Realtime,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, MaxSize, Schema)]
pub struct TargetInfo {
    pub hostname: String<64>,
    pub arch: String<16>,
    pub kernel: String<64>,
    pub preempt_rt: bool,
    pub preempt_model: String<16>,
    pub cpus: u16,
    pub cmdline: String<256>,
    pub clocksource: String<24>,
    pub rt_runtime_us: i64,
    pub argv: String<256>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
pub struct ThreadInfo {
    pub index: u16,
    pub cpu: Option<u16>,
    pub tid: u32,
    pub priority: u8,
    pub interval_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, MaxSize, Schema)]
pub struct Degraded {
    pub no_rt_policy: bool,
    pub no_mlock: bool,
    pub no_dma_latency: bool,
    pub no_affinity: bool,
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
    pub layout: Layout,
    pub degraded: Degraded,
    pub self_check: bool,
    pub threads: Vec<ThreadInfo, MAX_THREADS>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
pub struct Hello {
    pub schema: [u8; 8],
    pub tool_version: String<16>,
    pub run_id: u64,
    pub target: TargetInfo,
    pub config: RunConfig,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, MaxSize, Schema)]
pub struct ThreadStats {
    pub thread: u16,
    pub epoch: u32,
    pub elapsed_ns: u64,
    pub cycles: u64,
    pub count: u64,
    pub sum: u64,
    pub min: u64,
    pub max: u64,
    pub interval_max: u64,
    pub last: i64,
    pub missed: u64,
    pub early: u64,
    pub minflt: u64,
    pub majflt: u64,
    pub dropped: u64,
    pub last_report: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
pub struct DeltaEntry {
    pub bucket: u16,
    pub count: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
pub struct HistDelta {
    pub thread: u16,
    pub epoch: u32,
    pub part: u16,
    pub parts: u16,
    pub entries: Vec<DeltaEntry, DELTA_ENTRIES>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
pub struct SnapshotEntry {
    pub bucket: u16,
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
pub struct SnapshotChunk {
    pub thread: u16,
    pub epoch: u32,
    pub index: u16,
    pub total: u16,
    pub entries: Vec<SnapshotEntry, CHUNK_ENTRIES>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, MaxSize, Schema)]
pub struct SpikeFlags {
    pub spike: bool,
    pub overflow: bool,
    pub brk: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
pub struct SpikeSample {
    pub thread: u16,
    pub cycle: u64,
    pub deadline_ns: i64,
    pub latency_ns: i64,
    pub missed: u64,
    pub flags: SpikeFlags,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
pub enum Level {
    Info,
    Warn,
    Error,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
pub struct LogLine {
    pub level: Level,
    pub text: String<160>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
pub enum ByeReason {
    Completed,
    Signal(u8),
    Break { thread: u16, latency_ns: u64 },
    Error,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
pub struct Bye {
    pub reason: ByeReason,
    pub epoch: u32,
    pub elapsed_ns: u64,
    pub threads: u16,
    pub cycles: u64,
    pub max_ns: u64,
    pub frames_dropped: u64,
    pub defects: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
pub struct Layout {
    pub linear_us: u32,
    pub buckets: u16,
}

#[derive(Serialize, Deserialize, MaxSize, Schema, Debug, Clone, Copy, PartialEq, Eq)]
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

#[derive(Serialize, Deserialize, MaxSize, Schema, Debug, Clone, PartialEq)]
pub struct Cause {
    pub kind: CauseKind,
    pub id: u32,
    pub prio: i32,
    pub name: String<24>,
    pub count: u32,
    pub ns: u64,
}

#[derive(Serialize, Deserialize, MaxSize, Schema, Debug, Clone, PartialEq)]
pub struct Attribution {
    pub cpu: u32,
    pub cycle: u64,
    pub deadline_ns: u64,
    pub latency_ns: u64,
    pub coarse: bool,
    pub partial: bool,
    pub causes: Vec<Cause, 16>,
}

/// The current body a version-1 body says, or `None` if it cannot be said
/// (pairs out of order).
pub(super) fn upgrade_body(b: Body) -> Option<now::Body> {
    Some(match b {
        Body::Hello(h) => now::Body::Hello(hello(h)),
        Body::Stats(s) => now::Body::Stats(stats(s)),
        Body::Delta(d) => now::Body::Delta(delta(d)?),
        Body::Chunk(c) => now::Body::Chunk(chunk(c)?),
        Body::Spike(s) => now::Body::Spike(spike(s)),
        Body::Log(l) => now::Body::Log(now::LogLine {
            level: match l.level {
                Level::Info => now::Level::Info,
                Level::Warn => now::Level::Warn,
                Level::Error => now::Level::Error,
            },
            text: l.text,
        }),
        Body::Bye(b) => now::Body::Bye(bye(b)),
        Body::Explain(a) => now::Body::Explain(attribution(a)),
    })
}

fn hello(h: Hello) -> now::Hello {
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
            // version 1 did not carry uname's version
            kernel_version: String::new(),
            preempt_rt: t.preempt_rt,
            preempt_model: t.preempt_model,
            cpus: t.cpus,
            cmdline: t.cmdline,
            clocksource: t.clocksource,
            rt_runtime_us: t.rt_runtime_us,
            argv: t.argv,
            // version 1 had no board names: a host goes by the host name
            name: String::new(),
            // every version-1 target was Linux, measuring in ns
            platform: now::Platform::Linux,
            model: String::new(),
            clock_hz: now::NS_CLOCK_HZ,
            clock_resolution_ns: 0,
        },
        config: config(h.config),
    }
}

fn config(c: RunConfig) -> now::RunConfig {
    let mut threads = Vec::new();
    for t in c.threads {
        // cannot fail: both hold MAX_THREADS
        let _ = threads.push(now::ThreadInfo {
            index: t.index,
            cpu: t.cpu,
            tid: t.tid,
            priority: t.priority,
            interval_ns: t.interval_ns,
            // what version 1 targets wrote in their --json
            node: 0,
        });
    }
    now::RunConfig {
        policy: match c.policy {
            Policy::Other => now::Policy::Other,
            Policy::Fifo => now::Policy::Fifo,
            Policy::Rr => now::Policy::Rr,
            Policy::Batch => now::Policy::Batch,
            Policy::Idle => now::Policy::Idle,
            Policy::Deadline => now::Policy::Deadline,
        },
        priority: c.priority,
        interval_ns: c.interval_ns,
        distance_ns: c.distance_ns,
        clock: match c.clock {
            ClockKind::Monotonic => now::ClockKind::Monotonic,
            ClockKind::Realtime => now::ClockKind::Realtime,
        },
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
        // version 1 did not say: no -H column, µs, no start time
        hist_all: false,
        nsecs: false,
        started: None,
        layout: now_layout::Layout {
            linear_us: c.layout.linear_us,
            buckets: c.layout.buckets,
        },
        degraded: now::Degraded {
            no_rt_policy: c.degraded.no_rt_policy,
            no_mlock: c.degraded.no_mlock,
            no_dma_latency: c.degraded.no_dma_latency,
            no_affinity: c.degraded.no_affinity,
            // version 1 did not say why the device was not held
            no_dma_latency_device: false,
        },
        self_check: c.self_check,
        threads,
        // version 1 never mounted tracefs
        tracefs_mounted: false,
        // version 1 had only the absolute sleep, each thread from its own
        // clock reading, and no SMI count
        wake: now::WakeMode::Absolute,
        align: now::StartAlign::Own,
        smi: false,
    }
}

fn stats(s: ThreadStats) -> now::ThreadStats {
    now::ThreadStats {
        thread: s.thread,
        epoch: s.epoch,
        elapsed_ns: s.elapsed_ns,
        cycles: s.cycles,
        count: s.count,
        sum: s.sum,
        min: s.min,
        max: s.max,
        interval_max: s.interval_max,
        last: s.last,
        missed: s.missed,
        early: s.early,
        minflt: s.minflt,
        majflt: s.majflt,
        dropped: s.dropped,
        last_report: s.last_report,
    }
}

/// Pack `(bucket, count)` pairs in increasing order from `start`.
fn pack(start: u16, pairs: impl Iterator<Item = (u16, u64)>) -> Option<now::Runs> {
    let mut w = RunWriter::new(start, RUN_BYTES);
    for (b, c) in pairs {
        if !w.push(b, c) {
            return None;
        }
    }
    Some(w.finish())
}

fn delta(d: HistDelta) -> Option<now::HistDelta> {
    let start = d.entries.first().map_or(0, |e| e.bucket);
    Some(now::HistDelta {
        thread: d.thread,
        epoch: d.epoch,
        part: d.part,
        start,
        runs: pack(
            start,
            d.entries.iter().map(|e| (e.bucket, u64::from(e.count))),
        )?,
    })
}

fn chunk(c: SnapshotChunk) -> Option<now::SnapshotChunk> {
    let first = c.entries.first().map(|e| e.bucket);
    let last = c.entries.last().map(|e| e.bucket);
    let start = if c.index == 0 { 0 } else { first? };
    let end = if c.index.saturating_add(1) >= c.total {
        u16::MAX
    } else {
        last?.checked_add(1)?
    };
    Some(now::SnapshotChunk {
        thread: c.thread,
        epoch: c.epoch,
        start,
        end,
        runs: pack(start, c.entries.iter().map(|e| (e.bucket, e.count)))?,
    })
}

fn spike(s: SpikeSample) -> now::SpikeSample {
    now::SpikeSample {
        thread: s.thread,
        cycle: s.cycle,
        deadline_ns: s.deadline_ns,
        latency_ns: s.latency_ns,
        missed: s.missed,
        flags: now::SpikeFlags {
            spike: s.flags.spike,
            overflow: s.flags.overflow,
            brk: s.flags.brk,
        },
    }
}

fn bye(b: Bye) -> now::Bye {
    now::Bye {
        reason: match b.reason {
            ByeReason::Completed => now::ByeReason::Completed,
            ByeReason::Signal(s) => now::ByeReason::Signal(s),
            ByeReason::Break { thread, latency_ns } => now::ByeReason::Break { thread, latency_ns },
            ByeReason::Error => now::ByeReason::Error,
        },
        epoch: b.epoch,
        elapsed_ns: b.elapsed_ns,
        threads: b.threads,
        cycles: b.cycles,
        max_ns: b.max_ns,
        frames_dropped: b.frames_dropped,
        defects: b.defects,
        // version 1 did not say when the run ended
        ended: None,
    }
}

fn attribution(a: Attribution) -> now_explain::Attribution {
    use super::v4::CauseKind as K;
    let mut causes = Vec::new();
    for c in a.causes {
        // cannot fail: both hold 16
        let _ = causes.push(super::v4::Cause {
            kind: match c.kind {
                CauseKind::Irq => K::Irq,
                CauseKind::Softirq => K::Softirq,
                CauseKind::Vector => K::Vector,
                CauseKind::TimerDelay => K::TimerDelay,
                CauseKind::IdleExit => K::IdleExit,
                CauseKind::Task => K::Task,
                CauseKind::Untraced => K::Untraced,
                CauseKind::Other => K::Other,
            },
            id: c.id,
            prio: c.prio,
            name: c.name,
            count: c.count,
            ns: c.ns,
        });
    }
    super::v4::upgrade_attribution(super::v4::Attribution {
        cpu: a.cpu,
        cycle: a.cycle,
        deadline_ns: a.deadline_ns,
        latency_ns: a.latency_ns,
        coarse: a.coarse,
        partial: a.partial,
        causes,
    })
}
