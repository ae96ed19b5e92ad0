//! The measuring loop, driven through the library: no allocation and no
//! page fault while it measures.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use latscope::config::cpus::ThreadPlan;
use latscope::linux::clock::LinuxClock;
use latscope::rt::{self as measure, state, Control, LoopSettings, Shared, SpikeQueue, ThreadArgs};
use latscope_core::cycle::CycleConfig;
use latscope_core::wire::{ClockKind, Policy};

/// Counts every allocation of the process.
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn sleep_ms(ms: u64) {
    std::thread::sleep(std::time::Duration::from_millis(ms));
}

#[test]
fn measuring_loop_allocates_nothing_and_takes_no_faults() {
    let _g = common::serial();
    let root = common::is_root();
    LinuxClock::new(ClockKind::Monotonic).warm_up();
    if root {
        rustix::mm::mlockall(
            rustix::mm::MlockAllFlags::CURRENT | rustix::mm::MlockAllFlags::FUTURE,
        )
        .expect("mlockall as root");
    }
    let shared = Shared::new();
    let control = Control::new();
    let mut q = SpikeQueue::new();
    measure::prefault_queue(&mut q, measure::EMPTY_SPIKE);
    let (tx, mut rx) = q.split();
    let settings = LoopSettings {
        policy: if root { Policy::Fifo } else { Policy::Other },
        deadline: (0, 0, 0),
        best_effort: true,
        exit_demote: true,
        cycle: CycleConfig {
            // every sample is flagged: the queue fills and the drop path runs
            spike_ns: 1,
            overflow_ns: 50_000,
            ..CycleConfig::DEFAULT
        },
        clock: LinuxClock::new(ClockKind::Monotonic),
    };
    let plan = ThreadPlan {
        cpu: None,
        priority: 80,
        interval_us: 200,
    };
    let (allocs, faults, dropped, cycles) = std::thread::scope(|s| {
        let args = ThreadArgs {
            index: 0,
            plan,
            settings: &settings,
            shared: &shared,
            control: &control,
            spikes: tx,
            verbose: None,
            marker: None,
            tracemark: None,
        };
        std::thread::Builder::new()
            .stack_size(measure::STACK_BYTES)
            .spawn_scoped(s, move || measure::run(args))
            .unwrap();
        control.wait_ready(1);
        control.go.store(true, Ordering::SeqCst);
        while shared.state.load(Ordering::SeqCst) < state::MEASURING {
            sleep_ms(1);
        }
        // let it warm up, then count over a stretch of pure measuring
        sleep_ms(300);
        let tid = shared.tid.load(Ordering::SeqCst);
        let path = format!("/proc/self/task/{tid}/stat");
        let f0 = latscope::linux::procfs::thread_faults(&path).unwrap();
        let a0 = ALLOCS.load(Ordering::SeqCst);
        sleep_ms(1000);
        let a1 = ALLOCS.load(Ordering::SeqCst);
        let f1 = latscope::linux::procfs::thread_faults(&path).unwrap();
        control.stop.store(true, Ordering::SeqCst);
        while shared.state.load(Ordering::SeqCst) != state::DONE {
            sleep_ms(1);
        }
        let mut n = 0;
        while rx.dequeue().is_some() {
            n += 1;
        }
        assert!(n > 0, "flagged samples were queued");
        let mut snap = Box::new(latscope_core::record::Snapshot::new());
        shared.rec.snapshot(&mut snap, 1000).unwrap();
        (
            a1 - a0,
            (f1.minflt - f0.minflt, f1.majflt - f0.majflt),
            shared.dropped.load(Ordering::SeqCst),
            snap.counters.cycles,
        )
    });
    if root {
        let _ = rustix::mm::munlockall();
    }
    assert!(cycles > 1000, "the loop ran ({cycles} cycles)");
    assert!(dropped > 0, "the full queue's drop path ran");
    assert_eq!(allocs, 0, "allocations while measuring");
    assert_eq!(faults, (0, 0), "page faults while measuring (minor, major)");
    assert!(shared.error.lock().unwrap().is_none());
}
