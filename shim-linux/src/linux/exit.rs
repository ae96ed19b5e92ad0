//! The exit discipline: no real-time thread outlives a run, on any path.
//!
//! An RT process that exits while holding locked memory tears its address
//! space down at RT priority, which stalls other RT tasks on that CPU for
//! milliseconds (see the field notes). So:
//!
//! 1. each measuring thread demotes itself to SCHED_OTHER before it returns;
//! 2. then the main thread demotes itself (it waited for signals at
//!    SCHED_FIFO 1 if the run answers SIGUSR2, and it demotes itself as
//!    soon as the waiting ends), calls `munlockall`, closes the
//!    `/dev/cpu_dma_latency` fd, and only then exits ([`teardown`]);
//! 3. a panic hook demotes every measuring thread by its TID and calls
//!    `munlockall` before the process aborts ([`install_panic_hook`]).
//!
//! Both ends also remove the status files other programs look for
//! (`/dev/shm/cyclictest<PID>`, the `-F` pipe).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use latscope_core::wire::MAX_THREADS;
use rustix::fd::OwnedFd;

use super::cpuidle::{self, IdleLimit};
use super::timerlat::{self, Globals};
use super::{status_files, sys};

/// TIDs of the measuring threads, for the panic hook (0 = empty slot).
static TIDS: [AtomicI32; MAX_THREADS] = [const { AtomicI32::new(0) }; MAX_THREADS];
/// TID of the main thread while it waits at a real-time priority (0: it
/// does not), for the panic hook.
static MAIN_TID: AtomicI32 = AtomicI32::new(0);
/// Whether we run as PID 1 (then the end is a power-off, never an exit).
static PID1: AtomicBool = AtomicBool::new(false);

/// Remember measuring thread `index`'s TID for the panic hook.
pub fn register_tid(index: usize, tid: i32) {
    if let Some(slot) = TIDS.get(index) {
        slot.store(tid, Ordering::SeqCst);
    }
}

/// Forget measuring thread `index` (it demoted itself and is returning).
pub fn unregister_tid(index: usize) {
    if let Some(slot) = TIDS.get(index) {
        slot.store(0, Ordering::SeqCst);
    }
}

/// Remember the main thread's TID while it waits at a real-time priority
/// (0: it no longer does).
pub fn register_main(tid: i32) {
    MAIN_TID.store(tid, Ordering::SeqCst);
}

/// Mark the process as PID 1.
pub fn set_pid1(on: bool) {
    PID1.store(on, Ordering::SeqCst);
}

/// Whether the process runs as PID 1.
pub fn is_pid1() -> bool {
    PID1.load(Ordering::SeqCst)
}

/// Demote every registered thread (by TID) to SCHED_OTHER: the measuring
/// threads, and the main thread if it waits at a real-time priority.
pub fn demote_all_registered() {
    for slot in TIDS.iter().chain([&MAIN_TID]) {
        let tid = slot.load(Ordering::SeqCst);
        if tid > 0 {
            let _ = sys::demote(tid);
        }
    }
}

/// On panic: demote every measuring thread and unlock memory first, then
/// print the usual message (the release build then aborts).
pub fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        demote_all_registered();
        let _ = sys::demote(0);
        let _ = rustix::mm::munlockall();
        cpuidle::restore_own();
        timerlat::restore_own();
        status_files::remove_all();
        default(info);
        if is_pid1() {
            power_off();
        }
    }));
}

/// What the main thread holds until the very end.
#[derive(Default)]
pub struct Held {
    /// The `/dev/cpu_dma_latency` request (closing it drops the request).
    pub dma: Option<OwnedFd>,
    /// Whether memory was locked.
    pub locked: bool,
    /// The idle states `--deepest-idle-state` limited.
    pub idle: Option<IdleLimit>,
    /// The global timerlat settings `--timerlat` changed.
    pub timerlat: Option<Globals>,
    /// Demote before exit (off only for the exit experiment).
    pub demote: bool,
    /// Ballast memory of the exit experiment.
    pub ballast: Vec<u8>,
}

/// The end of every run after set-up began: demote the main thread,
/// unlock memory, drop the latency request, write the idle states back,
/// in that order; then remove the status files (`/dev/shm/cyclictest<PID>`,
/// `-F`).
pub fn teardown(held: &mut Held) {
    if held.demote {
        demote_all_registered();
        let _ = sys::demote(0);
    }
    if held.locked {
        let _ = rustix::mm::munlockall();
        held.locked = false;
    }
    drop(held.dma.take());
    if let Some(limit) = held.idle.take() {
        if let Err(e) = limit.restore() {
            eprintln!("latscope: {e}");
        }
    }
    // the measuring threads closed their timerlat_fd and the trace
    // instance is gone by now: the tracer is stopped
    if let Some(globals) = held.timerlat.take() {
        if let Err(e) = globals.restore() {
            eprintln!("latscope: {e}");
        }
    }
    status_files::remove_all();
}

/// Leave with `status`: exit normally, or as PID 1 sync and power off.
pub fn leave(status: i32) -> ! {
    if is_pid1() {
        power_off();
    }
    std::process::exit(status)
}

/// `sync` then `reboot(POWER_OFF)`; PID 1 must never return.
pub fn power_off() -> ! {
    rustix::fs::sync();
    let _ = rustix::system::reboot(rustix::system::RebootCommand::PowerOff);
    loop {
        let _ = rustix::thread::nanosleep(&rustix::time::Timespec {
            tv_sec: 1,
            tv_nsec: 0,
        });
    }
}
