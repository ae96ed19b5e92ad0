//! The frame types. All sizes are bounded, so every frame has a maximum
//! encoded size known at compile time.

use heapless::{String, Vec};
use postcard::experimental::max_size::MaxSize;
use postcard_schema::Schema;
use serde::{Deserialize, Serialize};

use super::runs::Runs;
use crate::explain::Attribution;
use crate::layout::Layout;
use crate::timerlat::Context;
pub use crate::tz::WallTime;

/// Most measuring threads one run can describe.
pub const MAX_THREADS: usize = 64;

/// One frame: protocol version, sequence number, body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Frame {
    /// [`super::PROTOCOL_VERSION`]; the first byte of the payload.
    pub version: u8,
    /// Per-run sequence number, +1 per frame.
    pub seq: u32,
    /// What the frame says.
    pub body: Body,
}

/// The frame bodies.
///
/// The hello is much larger than the others; that is fine here: frames are
/// decoded into a fixed buffer, never stored in bulk, and there is no
/// allocator to box it with.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Body {
    /// Who is measuring what, and how.
    Hello(Hello),
    /// Cumulative statistics of one thread.
    Stats(ThreadStats),
    /// Histogram change of one thread over one report interval.
    Delta(HistDelta),
    /// Part of a cumulative histogram snapshot of one thread.
    Chunk(SnapshotChunk),
    /// A sample above a threshold.
    Spike(SpikeSample),
    /// A log line or warning.
    Log(LogLine),
    /// The end of the run.
    Bye(Bye),
    /// A spike explained: where its time went.
    Explain(Attribution),
    /// What became of one thread's spikes in one report interval, and in
    /// the run so far (version 3).
    Aggregate(Aggregate),
    /// A spike's evidence (a trace.dat) follows (version 4).
    EvidenceHead(EvidenceHead),
    /// Part of a spike's evidence (version 4).
    EvidencePart(EvidencePart),
    /// The kernel's timerlat figures of one thread's CPU (version 6).
    TimerlatStats(TimerlatStats),
    /// The change of one of a thread's timerlat histograms over one report
    /// interval (version 6).
    TimerlatDelta(TimerlatDelta),
    /// Part of a cumulative snapshot of one of a thread's timerlat
    /// histograms (version 6).
    TimerlatChunk(TimerlatChunk),
}

/// Scheduling policy of the measuring threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Policy {
    /// SCHED_OTHER.
    Other,
    /// SCHED_FIFO.
    Fifo,
    /// SCHED_RR.
    Rr,
    /// SCHED_BATCH.
    Batch,
    /// SCHED_IDLE.
    Idle,
    /// SCHED_DEADLINE.
    Deadline,
}

impl Policy {
    /// The name used on the command line and in cyclictest's output.
    pub const fn name(self) -> &'static str {
        match self {
            Policy::Other => "other",
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
            Policy::Batch => "batch",
            Policy::Idle => "idle",
            Policy::Deadline => "deadline",
        }
    }

    /// The kernel's name of the policy, as `chrt` and the scheduler's
    /// headers spell it: `SCHED_FIFO`, ...
    pub const fn kernel_name(self) -> &'static str {
        match self {
            Policy::Other => "SCHED_OTHER",
            Policy::Fifo => "SCHED_FIFO",
            Policy::Rr => "SCHED_RR",
            Policy::Batch => "SCHED_BATCH",
            Policy::Idle => "SCHED_IDLE",
            Policy::Deadline => "SCHED_DEADLINE",
        }
    }

    /// The kernel's number of the policy (`sched_setattr`'s
    /// `sched_policy`, Linux's `SCHED_*` constants).
    pub const fn number(self) -> u32 {
        match self {
            Policy::Other => 0,
            Policy::Fifo => 1,
            Policy::Rr => 2,
            Policy::Batch => 3,
            Policy::Idle => 5,
            Policy::Deadline => 6,
        }
    }

    /// The policy with the kernel's number `n`, if latscope knows it.
    pub const fn from_number(n: u32) -> Option<Policy> {
        Some(match n {
            0 => Policy::Other,
            1 => Policy::Fifo,
            2 => Policy::Rr,
            3 => Policy::Batch,
            5 => Policy::Idle,
            6 => Policy::Deadline,
            _ => return None,
        })
    }

    /// Whether this is a real-time policy.
    pub const fn is_rt(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr | Policy::Deadline)
    }
}

/// The clock measured against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ClockKind {
    /// CLOCK_MONOTONIC.
    Monotonic,
    /// CLOCK_REALTIME (can be stepped: early wake-ups are counted).
    Realtime,
}

/// How a measuring thread waits for each period: cyclictest's `-r`, `-s`
/// and `-x`. Only [`WakeMode::Absolute`] keeps every guarantee of latscope;
/// [`WakeMode::caveat`] says what each other mode gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WakeMode {
    /// `clock_nanosleep(TIMER_ABSTIME)` until the next absolute deadline:
    /// one system call per cycle, a fixed grid of deadlines (the default).
    #[default]
    Absolute,
    /// `-r`: a relative `clock_nanosleep` of one interval, from the time read
    /// just before it.
    Relative,
    /// `-s`: a relative `nanosleep()` of one interval (cyclictest's
    /// "sys_nanosleep").
    Nanosleep,
    /// `-x`: a POSIX interval timer that signals the thread, which waits for
    /// the signal with `rt_sigtimedwait`; `relative` (`-x -r`) arms the
    /// first expiry relative to the arming call.
    PosixTimer {
        /// The first expiry is relative (`-r`).
        relative: bool,
    },
    /// `--timerlat`: a `read()` of the CPU's `osnoise/per_cpu/cpuN/timerlat_fd`,
    /// which the kernel's timerlat tracer returns when its timer's IRQ has
    /// woken the thread; the kernel's own latencies of each period travel
    /// as [`TimerlatStats`], [`TimerlatDelta`] and [`TimerlatChunk`]
    /// (version 6).
    Timerlat,
}

impl WakeMode {
    /// A short name for reports and `--json`.
    pub const fn name(self) -> &'static str {
        match self {
            WakeMode::Absolute => "clock_nanosleep_abstime",
            WakeMode::Relative => "clock_nanosleep_relative",
            WakeMode::Nanosleep => "nanosleep",
            WakeMode::PosixTimer { relative: false } => "posix_timer",
            WakeMode::PosixTimer { relative: true } => "posix_timer_relative",
            WakeMode::Timerlat => "timerlat",
        }
    }

    /// What this mode gives up of latscope's guarantees, in one sentence
    /// (`None` for the default mode, which keeps them all).
    pub const fn caveat(self) -> Option<&'static str> {
        match self {
            WakeMode::Absolute => None,
            WakeMode::Relative | WakeMode::Nanosleep => Some(
                "relative sleep: each period starts when the previous wake-up was read, so the period drifts by every latency and no period is ever counted as missed; not a periodic test",
            ),
            WakeMode::PosixTimer { .. } => Some(
                "POSIX timer: each wake-up is a timer signal taken with rt_sigtimedwait, so every sample includes signal delivery, and a cycle more than one period late costs a second system call (timer_getoverrun)",
            ),
            WakeMode::Timerlat => Some(
                "the kernel's timerlat tracer: each wake-up is the return of a read() of timerlat_fd, so every sample is the user-space wake latency, above the kernel's by up to the first read()'s way into the kernel; the kernel's own IRQ, thread and return-to-user latencies of every period are in the timerlat section",
            ),
        }
    }
}

/// When the measuring threads take their first deadline: cyclictest's
/// `-A`/`--aligned` and `--secaligned`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum StartAlign {
    /// Each thread starts from its own clock reading (the default).
    #[default]
    Own,
    /// `-A [US]`: all threads start from one common time; thread N is
    /// offset by N times `offset_ns`.
    Threads {
        /// Offset per thread index in ns.
        offset_ns: u64,
    },
    /// `--secaligned [US]`: all threads start at the next full second of
    /// the clock plus `offset_ns`.
    Second {
        /// Offset after the full second in ns.
        offset_ns: u64,
    },
}

/// What kind of system the target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Platform {
    /// A Linux system (`shim-linux`): the kernel fields of [`TargetInfo`]
    /// are its own. Every recording of versions 1 and 2 is one.
    #[default]
    Linux,
    /// A microcontroller without an operating system: [`TargetInfo`]'s
    /// kernel, preemption, cmdline, clocksource and `rt_runtime_us` fields
    /// say nothing (empty, false, 0) and a report leaves them out.
    BareMetal,
}

impl Platform {
    /// A short name for reports and `--json`: `linux`, `bare-metal`.
    pub const fn name(self) -> &'static str {
        match self {
            Platform::Linux => "linux",
            Platform::BareMetal => "bare-metal",
        }
    }
}

/// Facts about the target system.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TargetInfo {
    /// Host name (uname nodename).
    pub hostname: String<64>,
    /// CPU architecture (uname machine), e.g. `aarch64`.
    pub arch: String<16>,
    /// Kernel release.
    pub kernel: String<64>,
    /// Kernel build (uname version, `#1 SMP PREEMPT_RT ...`); empty in
    /// version 1 recordings.
    pub kernel_version: String<64>,
    /// Whether the kernel is PREEMPT_RT (`/sys/kernel/realtime`).
    pub preempt_rt: bool,
    /// Preemption model from the kernel version string (`PREEMPT_RT`, `PREEMPT`, ...).
    pub preempt_model: String<16>,
    /// Online CPUs.
    pub cpus: u16,
    /// `/proc/cmdline`, truncated.
    pub cmdline: String<256>,
    /// Current clocksource.
    pub clocksource: String<24>,
    /// `/proc/sys/kernel/sched_rt_runtime_us` (-1 = unlimited).
    pub rt_runtime_us: i64,
    /// latscope's own command line, truncated.
    pub argv: String<256>,
    /// The board's name: `latscope --name`, by default the host name and a
    /// keyed hash of `/etc/machine-id`. Empty in version-1 streams (a host
    /// then goes by the host name).
    pub name: String<32>,
    /// What kind of system this is (version 3; [`Platform::Linux`] in
    /// versions 1 and 2).
    pub platform: Platform,
    /// The hardware, as its maker names it: Linux's device-tree model or
    /// DMI product name, a microcontroller's board and core
    /// (`mps2-an386 (Cortex-M4F, bare metal)`); empty if unknown, and in
    /// versions 1 and 2. Not [`TargetInfo::name`], the user's name for
    /// this one board.
    pub model: String<64>,
    /// Rate of the clock the samples are measured with, in Hz:
    /// 1,000,000,000 for Linux's nanosecond clocks (and in versions 1 and
    /// 2), 25,000,000 for the AN386's 25 MHz timers. Samples are in ns
    /// whatever the rate.
    pub clock_hz: u64,
    /// Resolution of that clock in ns: Linux's `clock_getres` of the
    /// measuring clock, 40 for a 25 MHz timer; 0 if unknown (versions 1
    /// and 2).
    pub clock_resolution_ns: u32,
}

/// The clock rate of a Linux target, and of every version-1 and -2
/// recording: its clocks count nanoseconds.
pub const NS_CLOCK_HZ: u64 = 1_000_000_000;

/// One measuring thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ThreadInfo {
    /// Thread index (`T:` in cyclictest's output).
    pub index: u16,
    /// The CPU it is pinned to, if any.
    pub cpu: Option<u16>,
    /// Its kernel thread id.
    pub tid: u32,
    /// Its priority.
    pub priority: u8,
    /// Its period in ns.
    pub interval_ns: u64,
    /// NUMA node of its CPU as cyclictest reports it (-1: none, as under
    /// `-S` or without NUMA); 0 in version 1 recordings (what their
    /// `--json` said).
    pub node: i16,
}

/// What a run had to give up (`--best-effort`) or was told to skip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Degraded {
    /// Ran without the requested real-time policy.
    pub no_rt_policy: bool,
    /// Ran without locked memory.
    pub no_mlock: bool,
    /// Could not hold /dev/cpu_dma_latency.
    pub no_dma_latency: bool,
    /// Could not pin threads to their CPUs.
    pub no_affinity: bool,
    /// The kernel has no /dev/cpu_dma_latency (`no_dma_latency` is set
    /// too): a missing device, not something given up. Recordings of
    /// version 1 lack it (false).
    pub no_dma_latency_device: bool,
}

impl Degraded {
    /// Whether anything was given up (a missing device is not).
    pub const fn any(&self) -> bool {
        self.no_rt_policy
            || self.no_mlock
            || (self.no_dma_latency && !self.no_dma_latency_device)
            || self.no_affinity
    }
}

/// The effective configuration of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RunConfig {
    /// Scheduling policy.
    pub policy: Policy,
    /// Priority of thread 0.
    pub priority: u8,
    /// Base interval in ns (`-i`).
    pub interval_ns: u64,
    /// Distance in ns (`-d`).
    pub distance_ns: u64,
    /// Clock.
    pub clock: ClockKind,
    /// Memory locked with mlockall.
    pub mlock: bool,
    /// Value held in /dev/cpu_dma_latency, if any.
    pub dma_latency_us: Option<i32>,
    /// Timer slack of the measuring threads in ns (0 = untouched).
    pub timer_slack_ns: u64,
    /// Duration in ns (0 = none).
    pub duration_ns: u64,
    /// Loops per thread (0 = none).
    pub loops: u64,
    /// Warm-up cycles not recorded.
    pub warmup_cycles: u64,
    /// Report interval in ns.
    pub report_ns: u64,
    /// Spike threshold in ns (0 = off).
    pub spike_ns: u64,
    /// Break threshold in ns (0 = off).
    pub break_ns: u64,
    /// Range of the cyclictest histogram text in µs (`-h`, 0 = none).
    pub hist_us: u32,
    /// `-H`: the histogram text has an all-threads column (false in
    /// version 1 recordings).
    pub hist_all: bool,
    /// `-N`: figures in ns (false in version 1 recordings).
    pub nsecs: bool,
    /// When the run started, in local time (`None` in version 1 recordings).
    pub started: Option<WallTime>,
    /// Histogram bucket layout.
    pub layout: Layout,
    /// What was degraded.
    pub degraded: Degraded,
    /// Whether the seccomp self-check is active.
    pub self_check: bool,
    /// The measuring threads.
    pub threads: Vec<ThreadInfo, MAX_THREADS>,
    /// How each cycle waits (`-r`, `-s`, `-x`); see [`WakeMode::caveat`].
    pub wake: WakeMode,
    /// When the threads take their first deadline (`-A`, `--secaligned`).
    pub align: StartAlign,
    /// `--smi`: SMIs are counted, one MSR read (a second system call) per
    /// cycle.
    pub smi: bool,
    /// latscope mounted tracefs at `/sys/kernel/tracing` for `--explain`
    /// or `--tracemark` (none was mounted; the mount stays). Recordings of
    /// version 1 lack it (false).
    pub tracefs_mounted: bool,
}

impl RunConfig {
    /// A configuration that says nothing of the run: policy `Other` at
    /// priority 0, every time, count and threshold 0, nothing locked, held
    /// or degraded, no thread, the default layout. What a host shows
    /// before a hello, and what tests build on with struct update syntax.
    pub const fn unknown() -> RunConfig {
        RunConfig {
            policy: Policy::Other,
            priority: 0,
            interval_ns: 0,
            distance_ns: 0,
            clock: ClockKind::Monotonic,
            mlock: false,
            dma_latency_us: None,
            timer_slack_ns: 0,
            duration_ns: 0,
            loops: 0,
            warmup_cycles: 0,
            report_ns: 0,
            spike_ns: 0,
            break_ns: 0,
            hist_us: 0,
            hist_all: false,
            nsecs: false,
            started: None,
            layout: Layout::DEFAULT,
            degraded: Degraded {
                no_rt_policy: false,
                no_mlock: false,
                no_dma_latency: false,
                no_affinity: false,
                no_dma_latency_device: false,
            },
            self_check: false,
            threads: Vec::new(),
            wake: WakeMode::Absolute,
            align: StartAlign::Own,
            smi: false,
            tracefs_mounted: false,
        }
    }
}

impl Default for RunConfig {
    /// [`RunConfig::unknown`].
    fn default() -> RunConfig {
        RunConfig::unknown()
    }
}

/// The first frame of a run and of every connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Hello {
    /// [`super::SCHEMA_KEY`] of the sender.
    pub schema: [u8; 8],
    /// latscope version.
    pub tool_version: String<16>,
    /// Random id of the run; sequence numbers are per run.
    pub run_id: u64,
    /// The target system.
    pub target: TargetInfo,
    /// The run's settings.
    pub config: RunConfig,
}

impl Hello {
    /// Whether a latscope target can have sent this hello: its layout is
    /// legal ([`crate::layout::Layout::is_legal`]: the widest `-h` a
    /// target accepts, log part to 60 s) and its threads have distinct
    /// indices below [`MAX_THREADS`]. A receiver sizes its memory from
    /// these bounds, so it rejects any other hello.
    pub fn is_possible(&self) -> bool {
        let mut seen = [false; MAX_THREADS];
        self.config.layout.is_legal()
            && self
                .config
                .threads
                .iter()
                .all(|t| match seen.get_mut(usize::from(t.index)) {
                    Some(s) if !*s => {
                        *s = true;
                        true
                    }
                    _ => false,
                })
    }
}

/// Cumulative statistics of one thread, as of report `epoch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ThreadStats {
    /// Thread index.
    pub thread: u16,
    /// Report number these figures belong to.
    pub epoch: u32,
    /// Time since the start of the run (ns).
    pub elapsed_ns: u64,
    /// Wake-ups measured.
    pub cycles: u64,
    /// Samples in the histogram (cycles minus early ones).
    pub count: u64,
    /// Sum of the samples (ns).
    pub sum: u64,
    /// Smallest sample (ns; `u64::MAX` while empty).
    pub min: u64,
    /// Largest sample (ns), exact.
    pub max: u64,
    /// Largest sample of this report interval (ns, bucket upper edge capped
    /// by `max`); after a lean report (statistics only, see
    /// [`crate::protocol::Reporter::with_budget`]) of the intervals since
    /// the thread's last delta.
    pub interval_max: u64,
    /// Latest sample (ns; negative if early).
    pub last: i64,
    /// Missed periods.
    pub missed: u64,
    /// Early wake-ups.
    pub early: u64,
    /// Minor page faults of the thread since measuring started.
    pub minflt: u64,
    /// Major page faults of the thread since measuring started.
    pub majflt: u64,
    /// Spike samples that could not be queued (counted, not lost silently).
    pub dropped: u64,
    /// Set on the final statistics, just before the bye.
    pub last_report: bool,
}

/// The histogram change of one thread in report `epoch`: part `part` of
/// the buckets whose count changed since the report before (or, after a
/// lean report, which has no delta, since the last one with a delta), with
/// how much (the raw 32-bit counter difference). A report but a lean one
/// has at least one part, and its parts cover increasing, disjoint bucket
/// ranges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HistDelta {
    /// Thread index.
    pub thread: u16,
    /// Report number.
    pub epoch: u32,
    /// This part (0-based).
    pub part: u16,
    /// Base bucket of `runs`.
    pub start: u16,
    /// Changed buckets and their increments.
    pub runs: Runs,
}

/// The cumulative histogram of one thread as of report `epoch`, for the
/// buckets `start..end`: every bucket of that range that `runs` does not
/// name is empty. An `end` at or past the layout's length covers the rest
/// of it. A full snapshot is a sequence of chunks from bucket 0 to the end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SnapshotChunk {
    /// Thread index.
    pub thread: u16,
    /// Report number of the snapshot.
    pub epoch: u32,
    /// First bucket covered (and the base bucket of `runs`).
    pub start: u16,
    /// End of the buckets covered (exclusive).
    pub end: u16,
    /// Non-empty buckets of the range and their cumulative counts.
    pub runs: Runs,
}

/// Why a sample was reported individually (bit set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SpikeFlags {
    /// Above the spike threshold.
    pub spike: bool,
    /// At or above the histogram-text range (`-h`).
    pub overflow: bool,
    /// Above the break threshold.
    pub brk: bool,
}

/// A sample reported individually.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SpikeSample {
    /// Thread index.
    pub thread: u16,
    /// Recorded-cycle number.
    pub cycle: u64,
    /// Deadline (clock ns).
    pub deadline_ns: i64,
    /// Latency in ns.
    pub latency_ns: i64,
    /// Periods missed by this wake-up.
    pub missed: u64,
    /// Why it was reported.
    pub flags: SpikeFlags,
}

/// Severity of a [`LogLine`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Level {
    /// Information.
    Info,
    /// Something the user should know (e.g. a degradation).
    Warn,
    /// Something failed.
    Error,
}

/// A bounded text line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LogLine {
    /// Severity.
    pub level: Level,
    /// Text, truncated to 160 bytes.
    pub text: String<160>,
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ByeReason {
    /// Loops or duration completed.
    Completed,
    /// A signal (number) stopped it.
    Signal(u8),
    /// A thread exceeded the break threshold.
    Break {
        /// Thread index.
        thread: u16,
        /// The latency (ns).
        latency_ns: u64,
    },
    /// A setup or runtime error stopped it.
    Error,
}

/// The last frame of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Bye {
    /// Why it ended.
    pub reason: ByeReason,
    /// Report number of the final statistics sent just before.
    pub epoch: u32,
    /// Run time (ns).
    pub elapsed_ns: u64,
    /// Number of threads.
    pub threads: u16,
    /// Cycles of all threads.
    pub cycles: u64,
    /// Largest latency of all threads (ns).
    pub max_ns: u64,
    /// Frames the target could not deliver (link down or too slow).
    pub frames_dropped: u64,
    /// Self-check defects (forbidden syscalls attempted).
    pub defects: u32,
    /// When the run ended, in local time: the `end_time` of its `--json`
    /// (`None` in version 1 recordings).
    pub ended: Option<WallTime>,
}

/// What became of one thread's samples above the spike threshold
/// ([`RunConfig::spike_ns`]): per report interval, and as running totals
/// since measuring started. Version 3; a target sends one per thread and
/// report, after the thread's [`ThreadStats`] of the same `epoch`, when
/// the spike threshold is on.
///
/// Each such sample is, once the sender has dealt with it, exactly one of
/// *sent* (its [`SpikeSample`] frame went to the link), *aggregated* (the
/// sender chose not to send it, the link's share going to worse spikes:
/// it is counted here only) or *dropped* (its spike sample was lost before the
/// sender saw it: the target's queue was full). *Explained* ones are sent
/// ones whose [`Body::Explain`] frame went too. Until then it is *queued*.
/// So every frame satisfies
/// `spikes == spikes_sent + spikes_aggregated + spikes_dropped + queued`,
/// and `spikes_explained <= spikes_sent`; at the final report (`queued`
/// 0) nothing is unaccounted for. A host that received fewer spike or
/// explain frames than `spikes_sent` or `spikes_explained` lost them on
/// the link (its sequence gaps say so too).
///
/// The interval fields count what happened in this report interval: the
/// samples above the threshold the thread took in it (`above`, `max_*`:
/// from the thread's exact count, not from the lossy queue), and the
/// spike samples the sender sent, explained, aggregated in it or the queue
/// dropped in it (which may be samples of an earlier interval).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Aggregate {
    /// Thread index.
    pub thread: u16,
    /// Report number, as in [`ThreadStats::epoch`].
    pub epoch: u32,
    /// Samples above the spike threshold in this interval (exact).
    pub above: u64,
    /// Largest of them in ns (0 if `above` is 0).
    pub max_ns: u64,
    /// Recorded-cycle number of that largest one.
    pub max_cycle: u64,
    /// Its deadline (clock ns).
    pub max_deadline_ns: i64,
    /// Spike samples sent in this interval.
    pub sent: u64,
    /// Explanations sent in this interval.
    pub explained: u64,
    /// Spike samples aggregated (not sent) in this interval.
    pub aggregated: u64,
    /// Spike samples dropped in this interval.
    pub dropped: u64,
    /// Running total: samples above the spike threshold.
    pub spikes: u64,
    /// Running total: spike samples sent.
    pub spikes_sent: u64,
    /// Running total: spikes explained.
    pub spikes_explained: u64,
    /// Running total: spike samples aggregated.
    pub spikes_aggregated: u64,
    /// Running total: spike samples dropped.
    pub spikes_dropped: u64,
    /// Spike samples still waiting for the sender (0 in the final report).
    pub queued: u64,
    /// Set on the final report's aggregate, as [`ThreadStats::last_report`].
    pub last_report: bool,
}

impl Aggregate {
    /// Whether the running totals add up: every sample above the
    /// threshold is sent, aggregated, dropped or still queued, and only
    /// sent ones are explained.
    pub fn is_consistent(&self) -> bool {
        let dealt = [self.spikes_aggregated, self.spikes_dropped, self.queued]
            .iter()
            .try_fold(self.spikes_sent, |n, &m| n.checked_add(m));
        dealt == Some(self.spikes) && self.spikes_explained <= self.spikes_sent
    }

    /// Explained spikes over spikes, or `None` before the first spike.
    pub fn coverage(&self) -> Option<f64> {
        (self.spikes > 0).then(|| self.spikes_explained as f64 / self.spikes as f64)
    }
}

/// Truncate `s` at a char boundary into a bounded string.
pub fn bounded<const N: usize>(s: &str) -> String<N> {
    let mut out = String::new();
    // never fails: at most N bytes
    let _ = out.push_str(cut(s, N));
    out
}

/// The longest start of `s` of at most `max` bytes that ends on a char
/// boundary (one function for every `N` of [`bounded`]).
fn cut(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_keeps_the_longest_start_that_ends_on_a_char_boundary() {
        let s = "aé€😀b";
        for max in 0..=s.len() + 1 {
            let want = (0..=max.min(s.len()))
                .rev()
                .find(|&e| s.is_char_boundary(e))
                .unwrap();
            assert_eq!(cut(s, max), &s[..want], "max {max}");
        }
        assert_eq!(bounded::<4>(s).as_str(), "aé");
        assert_eq!(bounded::<3>(s).as_str(), "aé");
        assert_eq!(bounded::<2>(s).as_str(), "a");
        assert_eq!(bounded::<32>(s).as_str(), s);
    }
}

/// Bytes of a trace.dat one [`EvidencePart`] carries at most: the grid
/// its parts lie on.
pub const EVIDENCE_PART: usize = 512;

/// A spike's evidence (its window as a trace.dat, see
/// [`crate::tracedat`]) about to follow in [`EvidencePart`]s: who, where,
/// when, and the file's size. Version 4; sent only where the target was
/// asked to (`--trace-out-stream`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EvidenceHead {
    /// Measuring thread.
    pub thread: u16,
    /// Its kernel thread id (0: unknown).
    pub tid: u32,
    /// The CPU whose pages the file holds.
    pub cpu: u32,
    /// The spike's cycle: with `thread`, what names the evidence.
    pub cycle: u64,
    /// The spike's deadline and wake-up, `CLOCK_MONOTONIC` ns (the
    /// trace's `mono` clock).
    pub deadline_ns: u64,
    /// Its wake-up.
    pub wake_ns: u64,
    /// When the target's reader last found the kernel's buffer empty.
    pub recorded_to_ns: u64,
    /// The trace.dat's size in bytes.
    pub size: u32,
}

/// Part of a spike's evidence: the trace.dat's bytes from `offset` (a
/// multiple of [`EVIDENCE_PART`]), and zeros from their end up to `next`
/// (the next part's offset, or the file's size). Parts that would be all
/// zeros are not sent, so a mostly empty page costs little. Version 4.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EvidencePart {
    /// Measuring thread (of the [`EvidenceHead`]).
    pub thread: u16,
    /// The spike's cycle (of the [`EvidenceHead`]).
    pub cycle: u64,
    /// Where the bytes go.
    pub offset: u32,
    /// Where the next part begins; zeros up to there.
    pub next: u32,
    /// The bytes.
    pub data: Vec<u8, EVIDENCE_PART>,
}

impl EvidenceHead {
    /// The spike's latency: wake-up minus deadline.
    pub const fn latency_ns(&self) -> u64 {
        self.wake_ns.saturating_sub(self.deadline_ns)
    }

    /// The name of its trace.dat without the extension, as the target
    /// writes it and a recorder too: `latscope-t0-cpu1-c1609`.
    pub fn stem(&self) -> impl core::fmt::Display + '_ {
        Stem(self)
    }

    /// Writes the sidecar that goes beside its trace.dat: the spike's
    /// thread, kernel id, CPU, cycle, deadline, wake-up, latency and how
    /// far the trace was read, one JSON object on a line (`clock`: the
    /// trace clock's name, `mono`).
    ///
    /// # Errors
    ///
    /// `w`'s.
    pub fn write_sidecar(&self, w: &mut impl core::fmt::Write, clock: &str) -> core::fmt::Result {
        writeln!(
            w,
            "{{\"thread\": {}, \"tid\": {}, \"cpu\": {}, \"cycle\": {}, \"deadline_ns\": {}, \
             \"wake_ns\": {}, \"latency_ns\": {}, \"recorded_to_ns\": {}, \"trace_clock\": \"{}\"}}",
            self.thread,
            self.tid,
            self.cpu,
            self.cycle,
            self.deadline_ns,
            self.wake_ns,
            self.latency_ns(),
            self.recorded_to_ns,
            clock
        )
    }
}

/// [`EvidenceHead::stem`].
struct Stem<'a>(&'a EvidenceHead);

impl core::fmt::Display for Stem<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let h = self.0;
        write!(f, "latscope-t{}-cpu{}-c{}", h.thread, h.cpu, h.cycle)
    }
}

/// One timerlat context's figures of one thread's CPU (version 6): its
/// histogram's exact count, sum, min and max, and the entries of the
/// context the kernel's trace lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TimerlatFigures {
    /// Entries read: samples in the context's histogram.
    pub count: u64,
    /// Sum of their latencies (ns, saturating).
    pub sum: u64,
    /// Smallest latency (ns; `u64::MAX` while empty).
    pub min: u64,
    /// Largest latency (ns), exact.
    pub max: u64,
    /// Entries the ring buffer lost: sequence numbers skipped.
    pub lost: u64,
}

impl TimerlatFigures {
    /// No entries.
    pub const EMPTY: TimerlatFigures = TimerlatFigures {
        count: 0,
        sum: 0,
        min: u64::MAX,
        max: 0,
        lost: 0,
    };
}

impl Default for TimerlatFigures {
    fn default() -> Self {
        TimerlatFigures::EMPTY
    }
}

/// What the kernel's timerlat tracer said of one measuring thread's CPU
/// as of report `epoch` (version 6; `--timerlat`, see
/// [`WakeMode::Timerlat`]): per context (the timer's IRQ, the woken
/// thread, its return to user space) the figures of its histogram, and
/// how the entries paired. A target sends one per thread and report,
/// after the thread's [`ThreadStats`], with the context histograms'
/// [`TimerlatDelta`] parts before it and a [`TimerlatChunk`] after, as
/// [`HistDelta`], [`ThreadStats`] and [`SnapshotChunk`] go for the
/// thread's own histogram ([`crate::protocol`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TimerlatStats {
    /// Thread index.
    pub thread: u16,
    /// Report number, as in [`ThreadStats::epoch`].
    pub epoch: u32,
    /// Each context's figures, in [`Context::ALL`]'s order.
    pub figures: [TimerlatFigures; 3],
    /// Thread entries whose period's IRQ entry was read.
    pub paired: u64,
    /// Of those, the ones whose IRQ latency was above the thread's (never,
    /// from a sound kernel and a sound reader: a defect).
    pub inverted: u64,
    /// Pages of the trace whose entries did not decode to the end: entries
    /// lost without a count.
    pub unreadable_pages: u64,
    /// Set on the final report's, as [`ThreadStats::last_report`].
    pub last_report: bool,
}

impl TimerlatStats {
    /// The figures of `context`.
    pub const fn figures(&self, context: Context) -> &TimerlatFigures {
        &self.figures[context.index()]
    }

    /// Periods the IRQ context saw, read or lost.
    pub const fn periods(&self) -> u64 {
        let irq = self.figures(Context::Irq);
        irq.count.saturating_add(irq.lost)
    }

    /// Entries the trace lost, in all contexts.
    pub fn lost(&self) -> u64 {
        self.figures
            .iter()
            .fold(0u64, |n, f| n.saturating_add(f.lost))
    }
}

/// The change of one thread's timerlat histogram of `context` in report
/// `epoch` (version 6): as a [`HistDelta`] is for the thread's own
/// histogram, part `part` of the buckets whose count changed since the
/// last report with deltas, with how much. A report but a lean one has at
/// least one part per context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TimerlatDelta {
    /// Thread index.
    pub thread: u16,
    /// Report number.
    pub epoch: u32,
    /// Which of the thread's timerlat histograms.
    pub context: Context,
    /// This part (0-based).
    pub part: u16,
    /// Base bucket of `runs`.
    pub start: u16,
    /// Changed buckets and their increments.
    pub runs: Runs,
}

/// The cumulative timerlat histogram of `context` of one thread as of
/// report `epoch`, for the buckets `start..end` (version 6): as a
/// [`SnapshotChunk`] is for the thread's own histogram.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TimerlatChunk {
    /// Thread index.
    pub thread: u16,
    /// Report number of the snapshot.
    pub epoch: u32,
    /// Which of the thread's timerlat histograms.
    pub context: Context,
    /// First bucket covered (and the base bucket of `runs`).
    pub start: u16,
    /// End of the buckets covered (exclusive).
    pub end: u16,
    /// Non-empty buckets of the range and their cumulative counts.
    pub runs: Runs,
}
