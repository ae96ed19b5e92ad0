//! The measuring threads: their set-up, the start handshake, the hot loop,
//! and what they share with the sender and main threads.
//!
//! In the default mode the loop makes exactly one system call per cycle
//! (`clock_nanosleep`) plus the vDSO clock read; cyclictest's other modes
//! (`-r`, `-s`, `-x`) have loops of their own (see `wake`). No loop
//! allocates, takes a lock, does I/O or waits on another thread: each
//! publishes every sample into its lock-free [`SharedHistogram`] and pushes
//! flagged samples into a wait-free single-producer queue. It polls the
//! stop flag once per cycle.

mod gate;
mod measure;
mod setup;
mod wake;

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use heapless::spsc::{Producer, Queue};
use latscope_core::cycle::{CycleConfig, StopReason};
use latscope_core::layout::Layout;
use latscope_core::protocol::ThreadLogIn;
use latscope_core::seqlock::{SharedHistogramIn, SnapshotIn};
use latscope_core::wire::{Policy, SpikeFlags, SpikeSample, StartAlign, WakeMode};

use crate::config::ThreadPlan;
use crate::error::Error;
use crate::linux::clock::LinuxClock;
use crate::linux::doorbell::Doorbell;
use crate::linux::procfs::Faults;
use crate::linux::tracefs::Tracemark;
use crate::linux::{exit, sys};

pub use gate::{common_start, Phase, PhaseCell, StartGate};

/// A thread's shared histogram: its counters in memory sized by the
/// run's layout.
pub type SharedHistogram = SharedHistogramIn<Box<[AtomicU32]>>;
/// A copy of a shared histogram's counters, sized as it.
pub type Snap = SnapshotIn<Box<[u32]>>;
/// What the stream's reports keep about a thread, sized as its shared
/// histogram.
pub type Log = ThreadLogIn<Box<[u32]>, Box<[u64]>>;

/// Capacity of a spike queue (one slot stays free).
pub const SPIKE_QUEUE: usize = 256;
/// Capacity of a `-v` sample queue.
const VERBOSE_QUEUE: usize = 8192;
/// Stack of a measuring thread: small, explicit, and prefaulted.
pub const STACK_BYTES: usize = 64 * 1024;

/// One `-v` sample: recorded-cycle number and latency in ns.
pub type VerboseSample = (u64, i64);
/// The queue of flagged samples of one thread.
pub type SpikeQueue = Queue<SpikeSample, SPIKE_QUEUE>;
/// The queue of `-v` samples of one thread.
pub type VerboseQueue = Queue<VerboseSample, VERBOSE_QUEUE>;

/// A placeholder spike sample (for prefaulting queues).
const EMPTY_SPIKE: SpikeSample = SpikeSample {
    thread: 0,
    cycle: 0,
    deadline_ns: 0,
    latency_ns: 0,
    missed: 0,
    flags: SpikeFlags {
        spike: false,
        overflow: false,
        brk: false,
    },
};

/// A spike queue whose memory is touched (and, without mlockall, faulted
/// in) before any measuring thread uses it.
pub fn spike_queue() -> SpikeQueue {
    let mut q = SpikeQueue::new();
    prefault_queue(&mut q, EMPTY_SPIKE);
    q
}

/// A `-v` queue, prefaulted as [`spike_queue`].
pub fn verbose_queue() -> Box<VerboseQueue> {
    let mut q = Box::new(VerboseQueue::new());
    prefault_queue(&mut q, (0, 0));
    q
}

/// The page size assumed for prefaulting (a smaller stride than a larger
/// page only writes more often).
const PAGE: usize = 4096;

/// `n` zeros, written page by page so that their memory is faulted in now
/// (an allocator may hand out zero pages that nothing has touched yet).
pub fn touched<T: Copy + Default>(n: usize) -> Box<[T]> {
    let mut v = vec![T::default(); n].into_boxed_slice();
    let step = (PAGE / std::mem::size_of::<T>().max(1)).max(1);
    for i in (0..n).step_by(step) {
        v[i] = std::hint::black_box(T::default());
    }
    v
}

/// Fill a queue once and empty it again.
fn prefault_queue<T: Copy, const Q: usize>(q: &mut Queue<T, Q>, fill: T) {
    while q.enqueue(fill).is_ok() {}
    while q.dequeue().is_some() {}
}

/// A measuring thread's exact count of its spikes, beside the lossy queue
/// that carries them: how many there were, how many did not fit the
/// queue, and the largest since the sender last looked. The measuring
/// thread only adds (three atomic operations a spike); the sender reads.
pub struct SpikeCount {
    /// Spikes so far.
    all: AtomicU64,
    /// Spike samples that did not fit the queue.
    dropped: AtomicU64,
    /// The largest spike since the last [`SpikeCount::take_peak`]:
    /// latency in ns in the upper 40 bits, the cycle's low 24 bits below.
    peak: AtomicU64,
}

/// Bits of the cycle number in [`SpikeCount`]'s peak.
const PEAK_CYCLE_BITS: u32 = 24;

impl SpikeCount {
    const fn new() -> SpikeCount {
        SpikeCount {
            all: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            peak: AtomicU64::new(0),
        }
    }

    /// A spike of `latency_ns` at `cycle` (measuring thread, before it is
    /// queued).
    pub fn count(&self, latency_ns: u64, cycle: u64) {
        self.all.fetch_add(1, Ordering::Release);
        let lat = latency_ns.min((1 << (64 - PEAK_CYCLE_BITS)) - 1);
        let packed = (lat << PEAK_CYCLE_BITS) | (cycle & ((1 << PEAK_CYCLE_BITS) - 1));
        self.peak.fetch_max(packed, Ordering::Relaxed);
    }

    /// The spike just counted did not fit the queue.
    pub fn lost(&self) {
        self.dropped.fetch_add(1, Ordering::Release);
    }

    /// (dropped, all) so far, read in that order: every dropped spike sample
    /// is in `all`, and so is every one the sender has dequeued.
    pub fn totals(&self) -> (u64, u64) {
        let dropped = self.dropped.load(Ordering::Acquire);
        (dropped, self.all.load(Ordering::Acquire))
    }

    /// The largest spike since the last call, as (latency in ns, cycle),
    /// the cycle completed from `recorded`, about the cycles recorded by
    /// now (within 2^23 of it); `None` without one. Its latency is exact up
    /// to about 12 days.
    pub fn take_peak(&self, recorded: u64) -> Option<(u64, u64)> {
        let p = self.peak.swap(0, Ordering::Relaxed);
        if p == 0 {
            return None;
        }
        Some((p >> PEAK_CYCLE_BITS, complete_cycle(p, recorded)))
    }
}

/// The cycle number whose low [`PEAK_CYCLE_BITS`] bits `packed` holds: the
/// one nearest to `recorded` (the spike may be a little later than the
/// count the caller has).
fn complete_cycle(packed: u64, recorded: u64) -> u64 {
    let span = 1u64 << PEAK_CYCLE_BITS;
    let cycle = (recorded & !(span - 1)) | (packed & (span - 1));
    if cycle > recorded.saturating_add(span / 2) && cycle >= span {
        cycle - span
    } else if cycle.saturating_add(span / 2) < recorded {
        cycle.saturating_add(span)
    } else {
        cycle
    }
}

/// What one measuring thread shares with the sender and main threads.
pub struct Shared {
    /// Samples and statistics (one writer, lock-free readers).
    pub hist: SharedHistogram,
    /// Kernel thread id (0 until known).
    pub tid: AtomicI32,
    /// Where the thread is in its life.
    pub phase: PhaseCell,
    /// Flagged samples that did not fit the queue.
    pub dropped: AtomicU64,
    /// The exact count of spikes (samples above the spike threshold),
    /// counted before each is queued, so never behind the queue.
    pub spikes: SpikeCount,
    /// `-v` samples that did not fit their queue.
    pub verbose_dropped: AtomicU64,
    /// Faults when measuring started.
    pub faults_at_start: Mutex<Faults>,
    /// Ran without its real-time policy (`--best-effort`).
    pub no_rt_policy: AtomicBool,
    /// Ran unpinned although a CPU was planned (`--best-effort`).
    pub no_affinity: AtomicBool,
    /// `--timerlat`: reads not recorded while the kernel's grid was not
    /// yet known.
    pub unrecorded: AtomicU64,
    /// Timer slack set, in ns (0 = untouched).
    pub timer_slack_ns: AtomicU32,
    /// Why the loop ended.
    pub stop: Mutex<Option<StopReason>>,
    /// Set-up or loop error.
    pub error: Mutex<Option<Error>>,
}

impl Shared {
    /// Fresh state for a shared histogram of `layout`, its counters allocated and
    /// written (so touched, and without mlockall faulted in) here, before
    /// any measuring starts: 12 KiB at the default layout.
    pub fn new(layout: Layout) -> Result<Shared, Error> {
        let counters: Box<[AtomicU32]> = (0..layout.len()).map(|_| AtomicU32::new(0)).collect();
        for c in counters.iter().step_by(PAGE / 4) {
            c.store(std::hint::black_box(0), Ordering::Relaxed);
        }
        let hist = SharedHistogram::with_buckets(layout, counters).map_err(Error::Core)?;
        Ok(Shared {
            hist,
            tid: AtomicI32::new(0),
            phase: PhaseCell::new(),
            dropped: AtomicU64::new(0),
            spikes: SpikeCount::new(),
            verbose_dropped: AtomicU64::new(0),
            faults_at_start: Mutex::new(Faults::default()),
            no_rt_policy: AtomicBool::new(false),
            no_affinity: AtomicBool::new(false),
            timer_slack_ns: AtomicU32::new(0),
            unrecorded: AtomicU64::new(0),
            stop: Mutex::new(None),
            error: Mutex::new(None),
        })
    }

    fn fail(&self, e: Error) {
        if let Ok(mut g) = self.error.lock() {
            g.get_or_insert(e);
        }
    }

    /// The thread's error, taken (the first one it met).
    pub fn take_error(&self) -> Option<Error> {
        self.error.lock().ok().and_then(|mut g| g.take())
    }

    /// Whether the thread met an error.
    pub fn failed(&self) -> bool {
        self.error.lock().map(|g| g.is_some()).unwrap_or(true)
    }
}

/// Run-wide control shared by all threads.
pub struct Control {
    /// The start handshake.
    pub gate: StartGate,
    /// Set to stop every measuring thread (signal, break, error).
    pub stop: AtomicBool,
    /// Set when a signal asked for the current status (SIGUSR1).
    pub status_requested: AtomicBool,
    /// Rung by the main thread after it sets a request above, so that the
    /// sender serves it now, not at its next tick.
    pub doorbell: Doorbell,
    /// The common start of `-A`/`--secaligned` (clock ns), set before the
    /// gate opens.
    pub start: AtomicI64,
    /// Thread index + 1 of the first break (0 = none).
    pub break_thread: AtomicU32,
    /// Its latency in ns.
    pub break_ns: AtomicU64,
    /// Signal that ended the run (0 = none).
    pub signal: AtomicU32,
    /// Measuring threads that have returned.
    pub finished: AtomicU32,
    /// `--self-check` defects: refused process-creation attempts.
    pub defects: AtomicU32,
}

impl Control {
    /// Control of one run.
    pub const fn new() -> Self {
        Control {
            gate: StartGate::new(),
            stop: AtomicBool::new(false),
            status_requested: AtomicBool::new(false),
            doorbell: Doorbell::new(),
            start: AtomicI64::new(0),
            break_thread: AtomicU32::new(0),
            break_ns: AtomicU64::new(0),
            signal: AtomicU32::new(0),
            finished: AtomicU32::new(0),
            defects: AtomicU32::new(0),
        }
    }

    /// Whether all `n` measuring threads have returned.
    pub fn all_finished(&self, n: usize) -> bool {
        self.finished.load(Ordering::SeqCst) as usize >= n
    }
}

/// Settings every measuring thread shares.
#[derive(Debug, Clone)]
pub struct LoopSettings {
    /// Scheduling policy.
    pub policy: Policy,
    /// SCHED_DEADLINE runtime, deadline, period in ns.
    pub deadline: (u64, u64, u64),
    /// Degrade instead of failing.
    pub best_effort: bool,
    /// Demote before returning (off only for the exit experiment).
    pub exit_demote: bool,
    /// Cycle settings except the interval.
    pub cycle: CycleConfig,
    /// How each cycle waits.
    pub wake: WakeMode,
    /// When the first period starts.
    pub align: StartAlign,
    /// The clock.
    pub clock: LinuxClock,
    /// `--timerlat`: how each thread waits instead of
    /// [`LoopSettings::wake`].
    pub timerlat: Option<TimerlatLoop>,
}

/// `--timerlat`: where the measuring threads' files are, and the kernel's
/// grid of periods per CPU as the trace's reader publishes it.
#[derive(Debug, Clone)]
pub struct TimerlatLoop {
    /// The tracefs whose `osnoise/per_cpu/cpuN/timerlat_fd` each thread
    /// reads.
    pub root: std::path::PathBuf,
    /// Each traced CPU and a period start of its grid (0 until known).
    pub starts: Vec<(usize, std::sync::Arc<AtomicU64>)>,
}

/// Everything one measuring thread gets.
pub struct ThreadArgs<'a> {
    /// Thread index.
    pub index: usize,
    /// Where and how it runs.
    pub plan: ThreadPlan,
    /// Run-wide settings.
    pub settings: &'a LoopSettings,
    /// Its shared state.
    pub shared: &'a Shared,
    /// Run control.
    pub control: &'a Control,
    /// Flagged samples go here.
    pub spikes: Producer<'a, SpikeSample>,
    /// Every sample goes here with `-v`.
    pub verbose: Option<Producer<'a, VerboseSample>>,
    /// `--tracemark`: written once on a break.
    pub tracemark: Option<&'a Tracemark>,
}

/// The body of a measuring thread. Whatever happens, it demotes itself to
/// SCHED_OTHER before it returns.
pub fn run(mut a: ThreadArgs<'_>) {
    let tid = rustix::thread::gettid().as_raw_nonzero().get();
    a.shared.tid.store(tid, Ordering::SeqCst);
    exit::register_tid(a.index, tid);
    match setup::setup(&a) {
        Ok(()) => a.shared.phase.set(Phase::Ready),
        Err(e) => {
            a.shared.fail(e);
            a.shared.phase.set(Phase::Failed);
        }
    }
    let go = a.control.gate.arrive_and_wait();
    if go && a.shared.phase.get() == Phase::Ready && !a.control.stop.load(Ordering::SeqCst) {
        a.shared.phase.set(Phase::Measuring);
        if let Err(e) = measure::measure(&mut a) {
            a.shared.fail(e);
            a.control.stop.store(true, Ordering::SeqCst);
        }
    }
    if a.settings.exit_demote {
        let _ = sys::demote(0);
        exit::unregister_tid(a.index);
    }
    a.shared.phase.set(Phase::Done);
    a.control.finished.fetch_add(1, Ordering::SeqCst);
    // out of the loop and demoted: the sender ends the run now, not at
    // its next tick up to 100 ms later (the run's `elapsed` with it)
    a.control.doorbell.ring();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spike_count_keeps_the_largest_with_its_cycle() {
        let c = SpikeCount::new();
        assert_eq!(c.take_peak(0), None);
        c.count(500_000, 7);
        c.count(900_000, (1 << 24) + 3);
        c.count(600_000, (1 << 24) + 4);
        c.lost();
        assert_eq!(c.totals(), (1, 3));
        assert_eq!(c.take_peak((1 << 24) + 10), Some((900_000, (1 << 24) + 3)));
        // taken: the next interval starts empty
        assert_eq!(c.take_peak((1 << 24) + 10), None);
        // the nearest cycle with those low bits, before or after the count
        c.count(1, (1 << 24) - 2);
        assert_eq!(c.take_peak(1 << 24), Some((1, (1 << 24) - 2)));
        c.count(1, (1 << 25) + 1);
        assert_eq!(c.take_peak((1 << 25) - 5), Some((1, (1 << 25) + 1)));
    }
}
