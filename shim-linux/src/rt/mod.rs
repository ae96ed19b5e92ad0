//! The measuring threads: set-up, the hot loop, and their shared state.
//!
//! The loop makes exactly one system call per cycle (`clock_nanosleep`)
//! plus the vDSO clock read. It never allocates, takes no lock, does no I/O
//! and never waits on another thread: it publishes each sample into its
//! lock-free [`ThreadRecord`] and pushes flagged samples into a wait-free
//! single-producer queue. It polls the stop flag once per cycle.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

use heapless::spsc::{Producer, Queue};
use latscope_core::cycle::{Clock, Cycle, CycleConfig, Sample, Step, StopReason};
use latscope_core::layout::{DEFAULT_BUCKETS, DEFAULT_LINEAR_US};
use latscope_core::record::ThreadRecord;
use latscope_core::wire::{Policy, SpikeFlags, SpikeRecord};
use rustix::fd::BorrowedFd;

use crate::config::cpus::{CpuList, ThreadPlan};
use crate::error::Error;
use crate::linux::clock::LinuxClock;
use crate::linux::exit;
use crate::linux::procfs::{self, Faults};
use crate::linux::sys::{self, SchedAttr};

/// Buckets of every histogram (the default layout).
pub const N: usize = DEFAULT_BUCKETS;
/// Capacity of a spike queue (one slot stays free).
pub const SPIKE_QUEUE: usize = 256;
/// Capacity of a `-v` sample queue.
pub const VERBOSE_QUEUE: usize = 8192;
/// Stack of a measuring thread: small, explicit, and prefaulted.
pub const STACK_BYTES: usize = 64 * 1024;
/// How much of that stack is touched before measuring.
const PREFAULT_BYTES: usize = 32 * 1024;

/// One `-v` sample: recorded-cycle number and latency in ns.
pub type VerboseSample = (u64, i64);
/// The queue of flagged samples of one thread.
pub type SpikeQueue = Queue<SpikeRecord, SPIKE_QUEUE>;
/// The queue of `-v` samples of one thread.
pub type VerboseQueue = Queue<VerboseSample, VERBOSE_QUEUE>;

/// A placeholder record (for prefaulting queues).
pub const EMPTY_SPIKE: SpikeRecord = SpikeRecord {
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

/// Fill a queue once and empty it again, so that its memory is touched
/// (and, without mlockall, faulted in) before any measuring thread uses it.
pub fn prefault_queue<T: Copy, const Q: usize>(q: &mut Queue<T, Q>, fill: T) {
    while q.enqueue(fill).is_ok() {}
    while q.dequeue().is_some() {}
}

/// Life cycle of a measuring thread.
pub mod state {
    /// Setting up.
    pub const STARTING: u8 = 0;
    /// Set up, waiting for the go.
    pub const READY: u8 = 1;
    /// Set-up failed (see the error).
    pub const FAILED: u8 = 2;
    /// In the loop.
    pub const MEASURING: u8 = 3;
    /// Returned (demoted).
    pub const DONE: u8 = 4;
}

/// What one measuring thread shares with the sender and main threads.
pub struct Shared {
    /// Samples and statistics (one writer, lock-free readers).
    pub rec: ThreadRecord<N>,
    /// Kernel thread id (0 until known).
    pub tid: AtomicI32,
    /// See [`state`].
    pub state: AtomicU8,
    /// Flagged samples that did not fit the queue.
    pub dropped: AtomicU64,
    /// `-v` samples that did not fit their queue.
    pub verbose_dropped: AtomicU64,
    /// Faults when measuring started.
    pub faults_at_start: Mutex<Faults>,
    /// Ran without its real-time policy (`--best-effort`).
    pub no_rt_policy: AtomicBool,
    /// Ran unpinned although a CPU was planned (`--best-effort`).
    pub no_affinity: AtomicBool,
    /// Timer slack set, in ns (0 = untouched).
    pub timer_slack_ns: AtomicU32,
    /// Why the loop ended.
    pub stop: Mutex<Option<StopReason>>,
    /// Set-up or loop error.
    pub error: Mutex<Option<Error>>,
}

impl Shared {
    /// Fresh state, boxed (its record is 12 KiB).
    pub fn new() -> Box<Shared> {
        Box::new(Shared {
            rec: ThreadRecord::new(DEFAULT_LINEAR_US),
            tid: AtomicI32::new(0),
            state: AtomicU8::new(state::STARTING),
            dropped: AtomicU64::new(0),
            verbose_dropped: AtomicU64::new(0),
            faults_at_start: Mutex::new(Faults::default()),
            no_rt_policy: AtomicBool::new(false),
            no_affinity: AtomicBool::new(false),
            timer_slack_ns: AtomicU32::new(0),
            stop: Mutex::new(None),
            error: Mutex::new(None),
        })
    }

    fn fail(&self, e: Error) {
        if let Ok(mut g) = self.error.lock() {
            g.get_or_insert(e);
        }
    }
}

/// Run-wide control shared by all threads.
pub struct Control {
    /// Set to stop every measuring thread (signal, break, error).
    pub stop: AtomicBool,
    /// Set when a signal asked for the current status (SIGUSR1).
    pub status_requested: AtomicBool,
    /// Thread index + 1 of the first break (0 = none).
    pub break_thread: AtomicU32,
    /// Its latency in ns.
    pub break_ns: AtomicU64,
    /// Signal that ended the run (0 = none).
    pub signal: AtomicU32,
    /// Measuring threads that have returned.
    pub finished: AtomicU32,
    /// Measuring threads that finished their set-up (or failed it).
    pub ready: AtomicU32,
    /// Set by main once every thread is ready: measure (unless `stop`).
    pub go: AtomicBool,
}

impl Control {
    /// Control of one run.
    pub fn new() -> Self {
        Control {
            stop: AtomicBool::new(false),
            status_requested: AtomicBool::new(false),
            break_thread: AtomicU32::new(0),
            break_ns: AtomicU64::new(0),
            signal: AtomicU32::new(0),
            finished: AtomicU32::new(0),
            ready: AtomicU32::new(0),
            go: AtomicBool::new(false),
        }
    }

    /// A measuring thread: report set-up done, then wait (before the
    /// loop, so sleeping is fine) until main says go.
    pub fn ready_and_wait(&self) {
        self.ready.fetch_add(1, Ordering::SeqCst);
        while !self.go.load(Ordering::SeqCst) {
            let _ = rustix::event::poll(&mut [], Some(&crate::linux::clock::timespec(1_000_000)));
        }
    }

    /// Main: wait until `n` measuring threads are ready.
    pub fn wait_ready(&self, n: usize) {
        while (self.ready.load(Ordering::SeqCst) as usize) < n {
            let _ = rustix::event::poll(&mut [], Some(&crate::linux::clock::timespec(1_000_000)));
        }
    }
}

impl Default for Control {
    fn default() -> Self {
        Self::new()
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
    /// The clock.
    pub clock: LinuxClock,
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
    pub spikes: Producer<'a, SpikeRecord>,
    /// Every sample goes here with `-v`.
    pub verbose: Option<Producer<'a, VerboseSample>>,
    /// Trace marker for spikes (`--explain`): one rate-limited write.
    pub marker: Option<crate::linux::tracefs::Marker>,
    /// Break handling (`--tracemark`): the marker and `tracing_on` fds.
    pub tracemark: Option<(BorrowedFd<'a>, BorrowedFd<'a>)>,
}

/// The body of a measuring thread. Whatever happens, it demotes itself to
/// SCHED_OTHER before it returns.
pub fn run(mut a: ThreadArgs<'_>) {
    let tid = rustix::thread::gettid().as_raw_nonzero().get();
    a.shared.tid.store(tid, Ordering::SeqCst);
    exit::register_tid(a.index, tid);
    match setup(&a) {
        Ok(()) => a.shared.state.store(state::READY, Ordering::SeqCst),
        Err(e) => {
            a.shared.fail(e);
            a.shared.state.store(state::FAILED, Ordering::SeqCst);
        }
    }
    a.control.ready_and_wait();
    if a.shared.state.load(Ordering::SeqCst) == state::READY
        && !a.control.stop.load(Ordering::SeqCst)
    {
        a.shared.state.store(state::MEASURING, Ordering::SeqCst);
        if let Err(e) = measure(&mut a) {
            a.shared.fail(e);
            a.control.stop.store(true, Ordering::SeqCst);
        }
    }
    if a.settings.exit_demote {
        let _ = sys::demote(0);
        exit::unregister_tid(a.index);
    }
    a.shared.state.store(state::DONE, Ordering::SeqCst);
    a.control.finished.fetch_add(1, Ordering::SeqCst);
}

/// Name, pin, policy, timer slack, prefault.
fn setup(a: &ThreadArgs<'_>) -> Result<(), Error> {
    let _ = rustix::thread::set_name(c"latscope-rt");
    let s = a.settings;
    if let Some(cpu) = a.plan.cpu {
        if let Err(e) = rustix::thread::sched_setaffinity(None, &CpuList::to_set(&[cpu])) {
            if s.best_effort {
                a.shared.no_affinity.store(true, Ordering::SeqCst);
            } else {
                return Err(Error::sys(
                    format!("pinning thread {} to CPU {cpu}", a.index),
                    e,
                ));
            }
        }
    }
    let attr = sched_attr(s.policy, a.plan.priority, s.deadline);
    if let Err(e) = sys::sched_setattr(0, &attr) {
        let what = match s.policy {
            Policy::Deadline => format!(
                "SCHED_DEADLINE (runtime {} deadline {} period {} ns) refused: {e}{}",
                s.deadline.0,
                s.deadline.1,
                s.deadline.2,
                if a.plan.cpu.is_some() {
                    " (a pinned deadline thread needs an exclusive cpuset partition; drop -a)"
                } else {
                    ""
                }
            ),
            p => format!(
                "SCHED_{} priority {} refused: {e} (needs CAP_SYS_NICE or RLIMIT_RTPRIO >= {})",
                crate::config::parse::policy_upper(p),
                a.plan.priority,
                a.plan.priority
            ),
        };
        let pinned_deadline = s.policy == Policy::Deadline && a.plan.cpu.is_some();
        if pinned_deadline && !s.best_effort {
            // not a missing privilege: the kernel's admission control
            return Err(Error::Io {
                what,
                msg: "run the deadline threads unpinned".into(),
            });
        }
        if e == rustix::io::Errno::PERM || e == rustix::io::Errno::BUSY {
            if s.best_effort {
                a.shared.no_rt_policy.store(true, Ordering::SeqCst);
                let _ = sys::demote(0);
            } else {
                return Err(Error::Privilege {
                    what,
                    hint: "--policy other (or --best-effort)",
                });
            }
        } else {
            return Err(Error::Io {
                what,
                msg: "see the kernel's sched_setattr(2) limits".into(),
            });
        }
    }
    let effective_rt = s.policy.is_rt() && !a.shared.no_rt_policy.load(Ordering::SeqCst);
    if !effective_rt {
        // The default 50 µs slack would skew every sample of a non-RT thread.
        if rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1)).is_ok() {
            a.shared.timer_slack_ns.store(1, Ordering::SeqCst);
        }
    }
    prefault_stack();
    Ok(())
}

/// The kernel attributes for a policy.
pub fn sched_attr(policy: Policy, priority: u32, deadline: (u64, u64, u64)) -> SchedAttr {
    let mut a = SchedAttr {
        sched_flags: sys::policy::RESET_ON_FORK,
        ..SchedAttr::default()
    };
    match policy {
        Policy::Fifo => {
            a.sched_policy = sys::policy::FIFO;
            a.sched_priority = priority;
        }
        Policy::Rr => {
            a.sched_policy = sys::policy::RR;
            a.sched_priority = priority;
        }
        Policy::Other => a.sched_policy = sys::policy::OTHER,
        Policy::Batch => a.sched_policy = sys::policy::BATCH,
        Policy::Idle => a.sched_policy = sys::policy::IDLE,
        Policy::Deadline => {
            a.sched_policy = sys::policy::DEADLINE;
            a.sched_runtime = deadline.0;
            a.sched_deadline = deadline.1;
            a.sched_period = deadline.2;
        }
    }
    a
}

/// Touch the part of the stack the loop can use, so it never faults.
#[inline(never)]
fn prefault_stack() {
    let mut area = [0u8; PREFAULT_BYTES];
    for i in (0..PREFAULT_BYTES).step_by(512) {
        area[i] = i as u8;
    }
    std::hint::black_box(&mut area);
}

/// The measuring loop.
fn measure(a: &mut ThreadArgs<'_>) -> Result<(), Error> {
    let mut w = a
        .shared
        .rec
        .writer()
        .ok_or_else(|| Error::usage("internal: thread record claimed twice"))?;
    let mut clock = a.settings.clock;
    let cfg = CycleConfig {
        interval_ns: a.plan.interval_us.saturating_mul(1000),
        ..a.settings.cycle
    };
    // Baseline faults right before the loop (the sender subtracts them).
    if let Some(f) = procfs::thread_faults("/proc/thread-self/stat") {
        if let Ok(mut g) = a.shared.faults_at_start.lock() {
            *g = f;
        }
    }
    let start = clock.now();
    let mut cycle = Cycle::new(cfg, start)?;
    let stop = &a.control.stop;
    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let now = cycle.sleep(&mut clock)?;
        // the common case: a plain sample, nothing else to do
        if let Some(latency) = cycle.plain_wake(now) {
            w.record_plain(latency);
            if a.verbose.is_some() {
                verbose(a, cycle.recorded() - 1, latency as i64);
            }
            continue;
        }
        let (sample, end) = match cycle.on_wake(now) {
            Step::Warmup => continue,
            Step::Sample { sample, stop } => (sample, stop),
        };
        w.record(sample.latency, sample.missed);
        if sample.flags.any() {
            flagged(a, &sample);
        }
        if a.verbose.is_some() {
            verbose(a, sample.cycle, sample.latency);
        }
        if let Some(reason) = end {
            if let Ok(mut g) = a.shared.stop.lock() {
                *g = Some(reason);
            }
            if reason == StopReason::Break {
                on_break(a, sample.latency);
            }
            break;
        }
    }
    Ok(())
}

/// A sample over a threshold: queue it for the sender (or count it as
/// dropped), and with `--explain` mark the trace.
#[cold]
fn flagged(a: &mut ThreadArgs<'_>, sample: &Sample) {
    let r = SpikeRecord {
        thread: a.index as u16,
        cycle: sample.cycle,
        deadline_ns: sample.deadline,
        latency_ns: sample.latency,
        missed: sample.missed,
        flags: SpikeFlags {
            spike: sample.flags.spike,
            overflow: sample.flags.overflow,
            brk: sample.flags.brk,
        },
    };
    if a.spikes.enqueue(r).is_err() {
        a.shared.dropped.fetch_add(1, Ordering::Relaxed);
    }
    if sample.flags.spike {
        if let Some(m) = a.marker.as_mut() {
            // an unpinned thread marks the CPU it runs on (one more
            // syscall where getcpu has no vDSO, on spikes only)
            let cpu = a.plan.cpu.unwrap_or_else(rustix::thread::sched_getcpu);
            m.mark(
                cpu,
                sample.cycle,
                sample.latency.max(0) as u64,
                sample.wake.max(0) as u64,
            );
        }
    }
}

/// `-v`: queue every sample (or count it as dropped).
#[inline(never)]
fn verbose(a: &mut ThreadArgs<'_>, cycle: u64, latency: i64) {
    if let Some(v) = a.verbose.as_mut() {
        if v.enqueue((cycle, latency)).is_err() {
            a.shared.verbose_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// `-b`: record the first break, stop everyone, and with `--tracemark`
/// write the marker and stop tracing (as cyclictest does).
fn on_break(a: &ThreadArgs<'_>, latency: i64) {
    let first = a
        .control
        .break_thread
        .compare_exchange(0, a.index as u32 + 1, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    if first {
        a.control
            .break_ns
            .store(latency.max(0) as u64, Ordering::SeqCst);
        if let Some((marker, on)) = a.tracemark {
            let us = latency.max(0) / 1000;
            let limit = a.settings.cycle.break_ns / 1000;
            let text = format!("hit latency threshold ({us} > {limit})\n");
            let _ = rustix::io::write(marker, text.as_bytes());
            let _ = rustix::io::write(on, b"0");
        }
    }
    a.control.stop.store(true, Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attrs_per_policy() {
        let a = sched_attr(Policy::Fifo, 80, (0, 0, 0));
        assert_eq!((a.sched_policy, a.sched_priority), (sys::policy::FIFO, 80));
        let a = sched_attr(Policy::Deadline, 0, (1, 2, 3));
        assert_eq!(
            (a.sched_runtime, a.sched_deadline, a.sched_period),
            (1, 2, 3)
        );
        assert_eq!(sched_attr(Policy::Idle, 0, (0, 0, 0)).sched_priority, 0);
    }
}
