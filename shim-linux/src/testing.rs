//! The test interface: what the integration tests and the fuzz targets
//! drive directly, without a process in between. Not for other uses.

use std::sync::atomic::Ordering;

use latscope_core::cycle::CycleConfig;
use latscope_core::layout::Layout;
use latscope_core::wire::{ClockKind, Policy, StartAlign, WakeMode};

use crate::config::ThreadPlan;
use crate::error::Error;
use crate::linux::clock::LinuxClock;
use crate::linux::procfs;
use crate::rt::{self, Control, LoopSettings, Phase, Shared, ThreadArgs};

/// Parse a command line (the words after the program name), as the
/// program does; `Ok` for a run, `--help` or `--version`.
pub fn parse_args<S: AsRef<str>>(args: &[S]) -> Result<(), Error> {
    crate::config::parse(args).map(drop)
}

pub use crate::config::{
    invoked_as_rtla, RtlaCgroup, RtlaEvent, RtlaHist, RtlaRequest, RtlaSched, RtlaThreads,
    RtlaUnsupported,
};

/// Parse a command line of latscope invoked as `rtla` (the words after
/// the program name), as the `rtla` drop-in does.
pub fn parse_rtla_args<S: AsRef<str>>(args: &[S]) -> Result<RtlaRequest, Error> {
    crate::config::parse_rtla(args)
}

/// How to run [`measuring_thread`].
#[derive(Debug, Clone, Copy)]
pub struct OneThread {
    /// Its policy (FIFO needs the privilege).
    pub policy: Policy,
    /// Its interval in µs.
    pub interval_us: u64,
    /// Samples above this many ns are flagged (queued for the sender).
    pub spike_ns: u64,
    /// Samples above this many ns are flagged as overflows.
    pub overflow_ns: u64,
}

/// A measuring thread in its loop.
pub struct Measuring<'a> {
    shared: &'a Shared,
}

impl Measuring<'_> {
    /// `(minor, major)` faults of the thread so far.
    pub fn faults(&self) -> (u64, u64) {
        let tid = self.shared.tid.load(Ordering::SeqCst);
        let f = procfs::thread_faults(&format!("/proc/self/task/{tid}/stat")).unwrap_or_default();
        (f.minflt, f.majflt)
    }
}

/// What [`measuring_thread`] found at the end.
#[derive(Debug)]
pub struct Measured {
    /// Cycles the loop ran.
    pub cycles: u64,
    /// Flagged samples the queue took.
    pub queued: u64,
    /// Flagged samples that did not fit the queue.
    pub dropped: u64,
    /// The thread's error, if any.
    pub error: Option<Error>,
}

/// Run one measuring thread exactly as a run does (set-up, start gate, hot
/// loop, demotion), call `during` once it measures, then stop it. Nobody
/// drains its spike queue while it runs, so a full queue's drop path runs.
pub fn measuring_thread(opts: OneThread, during: impl FnOnce(&Measuring<'_>)) -> Measured {
    let clock = LinuxClock::new(ClockKind::Monotonic);
    clock.warm_up();
    let shared = Shared::new(Layout::DEFAULT).expect("a shared histogram of the default layout");
    let control = Control::new();
    let mut q = rt::spike_queue();
    let (tx, mut rx) = q.split();
    let settings = LoopSettings {
        policy: opts.policy,
        deadline: (0, 0, 0),
        best_effort: true,
        exit_demote: true,
        cycle: CycleConfig {
            spike_ns: opts.spike_ns,
            overflow_ns: opts.overflow_ns,
            ..CycleConfig::DEFAULT
        },
        wake: WakeMode::Absolute,
        align: StartAlign::Own,
        clock,
        timerlat: None,
    };
    let plan = ThreadPlan {
        cpu: None,
        priority: 80,
        interval_us: opts.interval_us,
    };
    std::thread::scope(|s| {
        let args = ThreadArgs {
            index: 0,
            plan,
            settings: &settings,
            shared: &shared,
            control: &control,
            spikes: tx,
            verbose: None,
            tracemark: None,
        };
        std::thread::Builder::new()
            .stack_size(rt::STACK_BYTES)
            .spawn_scoped(s, move || rt::run(args))
            .expect("start a measuring thread");
        control.gate.wait_for(1);
        control.gate.open();
        while shared.phase.get() < Phase::Measuring {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        during(&Measuring { shared: &shared });
        control.stop.store(true, Ordering::SeqCst);
    });
    let mut queued = 0;
    while rx.dequeue().is_some() {
        queued += 1;
    }
    let mut snap = rt::Snap::with_buckets(rt::touched(Layout::DEFAULT.len()));
    let _ = shared.hist.snapshot(&mut snap, 1000);
    Measured {
        cycles: snap.counters.cycles,
        queued,
        dropped: shared.dropped.load(Ordering::SeqCst),
        error: shared.take_error(),
    }
}

/// What the panic hook left behind, read right after a panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AfterPanic {
    /// The registered real-time thread was demoted to `SCHED_OTHER`.
    pub demoted: bool,
    /// `VmLck` of the process after the hook, in kB.
    pub locked_kib: u64,
}

/// The exit discipline's panic path, for a process of its own (it locks
/// all memory and installs the panic hook, for good): a `SCHED_FIFO`
/// thread registered as a measuring thread, memory locked, then a panic on
/// another thread. Needs root. Panics if the set-up itself fails.
pub fn panic_beside_a_real_time_thread() -> AfterPanic {
    use std::sync::mpsc::channel;

    use crate::linux::{exit, sys};
    use rustix::mm::{mlockall, MlockAllFlags};

    mlockall(MlockAllFlags::CURRENT | MlockAllFlags::FUTURE).expect("mlockall as root");
    assert!(locked_kib() > 0, "memory is locked");
    let (tid_tx, tid_rx) = channel();
    let (end_tx, end_rx) = channel::<()>();
    let rt = std::thread::spawn(move || {
        let fifo = sys::SchedAttr {
            sched_policy: sys::policy::FIFO,
            sched_priority: 1,
            ..sys::SchedAttr::default()
        };
        sys::sched_setattr(0, &fifo).expect("SCHED_FIFO 1 as root");
        let tid = rustix::thread::gettid().as_raw_nonzero().get();
        exit::register_tid(0, tid);
        tid_tx.send(tid).expect("send the tid");
        let _ = end_rx.recv();
    });
    let tid = tid_rx.recv().expect("the thread's tid");
    exit::install_panic_hook();
    let panicked = std::thread::spawn(|| panic!("a panic on purpose")).join();
    // the default hook again, for whatever this process does next
    drop(std::panic::take_hook());
    assert!(panicked.is_err(), "the thread panicked");
    let after = AfterPanic {
        demoted: policy_of(tid) == sys::policy::OTHER,
        locked_kib: locked_kib(),
    };
    drop(end_tx);
    rt.join().expect("the real-time thread");
    after
}

/// The scheduling policy of thread `tid` of this process: field 41 of its
/// `/proc` stat line.
fn policy_of(tid: i32) -> u32 {
    let stat =
        std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).expect("the thread's stat");
    // the fields after the command name, which ends at the last ')', start
    // with field 3
    let after_comm = &stat[stat.rfind(')').expect("a command name") + 1..];
    after_comm
        .split_whitespace()
        .nth(41 - 3)
        .and_then(|p| p.parse().ok())
        .expect("a policy field")
}

/// `VmLck` of this process, in kB.
fn locked_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .expect("/proc/self/status")
        .lines()
        .find_map(|l| l.strip_prefix("VmLck:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("a VmLck line")
}

#[cfg(test)]
mod tests {
    use latscope_testkit::{is_root, require};

    use super::*;
    use crate::linux::{exit, sys};

    /// The panic hook finds the measuring threads by the TIDs they
    /// register: demoting every registered thread demotes a thread that is
    /// measuring.
    #[test]
    fn a_measuring_thread_is_registered_for_the_panic_hook() {
        require!(is_root(), "needs root (SCHED_FIFO)");
        let opts = OneThread {
            policy: Policy::Fifo,
            interval_us: 1000,
            spike_ns: u64::MAX,
            overflow_ns: u64::MAX,
        };
        let mut seen = None;
        let end = measuring_thread(opts, |m| {
            let tid = m.shared.tid.load(Ordering::SeqCst);
            let policy = || sys::sched_getattr(tid).map(|a| a.sched_policy);
            let before = policy();
            exit::demote_all_registered();
            seen = Some((before, policy()));
        });
        assert!(end.error.is_none(), "{:?}", end.error);
        let (fifo, other) = (sys::policy::FIFO, sys::policy::OTHER);
        assert_eq!(seen, Some((Ok(fifo), Ok(other))));
    }
}
