//! The measuring loop, driven through the library: no allocation and no
//! page fault while it measures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use latscope::testing::{measuring_thread, OneThread};
use latscope_core::wire::Policy;
use latscope_testkit::target::serial;
use latscope_testkit::{is_root, missing};

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
    let _g = serial();
    let root = is_root();
    if !root {
        // the part that runs is the SCHED_OTHER, unlocked loop
        missing("the SCHED_FIFO loop under mlockall needs root");
    }
    if root {
        rustix::mm::mlockall(
            rustix::mm::MlockAllFlags::CURRENT | rustix::mm::MlockAllFlags::FUTURE,
        )
        .expect("mlockall as root");
    }
    let opts = OneThread {
        policy: if root { Policy::Fifo } else { Policy::Other },
        interval_us: 200,
        // every sample is flagged: the queue fills and the drop path runs
        spike_ns: 1,
        overflow_ns: 50_000,
    };
    let mut allocs = 0;
    let mut faults = (0, 0);
    let end = measuring_thread(opts, |m| {
        // let it warm up, then count over a stretch of pure measuring
        sleep_ms(300);
        let f0 = m.faults();
        let a0 = ALLOCS.load(Ordering::SeqCst);
        sleep_ms(1000);
        allocs = ALLOCS.load(Ordering::SeqCst) - a0;
        let f1 = m.faults();
        faults = (f1.0 - f0.0, f1.1 - f0.1);
    });
    if root {
        let _ = rustix::mm::munlockall();
    }
    assert!(end.cycles > 1000, "the loop ran ({} cycles)", end.cycles);
    assert!(end.queued > 0, "flagged samples were queued");
    assert!(end.dropped > 0, "the full queue's drop path ran");
    assert_eq!(allocs, 0, "allocations while measuring");
    assert_eq!(faults, (0, 0), "page faults while measuring (minor, major)");
    assert!(end.error.is_none(), "{:?}", end.error);
}
