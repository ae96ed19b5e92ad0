//! The exit discipline: no real-time thread outlives a run, on any path.
//!
//! An RT process that exits while holding locked memory tears its address
//! space down at RT priority, which stalls other RT tasks on that CPU for
//! milliseconds (see the field notes). So:
//!
//! 1. each measuring thread demotes itself to SCHED_OTHER before it returns;
//! 2. then the main thread demotes itself, calls `munlockall`, closes the
//!    `/dev/cpu_dma_latency` fd, and only then exits ([`teardown`]);
//! 3. a panic hook demotes every measuring thread by its TID and calls
//!    `munlockall` before the process aborts ([`install_panic_hook`]).
//!
//! Both ends also remove the status files other programs look for
//! (`/dev/shm/cyclictest<PID>`, the `-F` pipe).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use latscope_core::wire::MAX_THREADS;
use rustix::fd::OwnedFd;

use super::{status_files, sys};

/// TIDs of the measuring threads, for the panic hook (0 = empty slot).
static TIDS: [AtomicI32; MAX_THREADS] = [const { AtomicI32::new(0) }; MAX_THREADS];
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

/// Mark the process as PID 1.
pub fn set_pid1(on: bool) {
    PID1.store(on, Ordering::SeqCst);
}

/// Whether the process runs as PID 1.
pub fn is_pid1() -> bool {
    PID1.load(Ordering::SeqCst)
}

/// Demote every registered measuring thread (by TID) to SCHED_OTHER.
pub fn demote_all_registered() {
    for slot in TIDS.iter() {
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
    /// Demote before exit (off only for the exit experiment).
    pub demote: bool,
    /// Ballast memory of the exit experiment.
    pub ballast: Vec<u8>,
}

/// The end of every run after set-up began: demote the main thread,
/// unlock memory, drop the latency request, in that order; then remove the
/// status files (`/dev/shm/cyclictest<PID>`, `-F`).
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

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;

    use latscope_tests::{is_root, require};

    use super::*;

    /// `VmLck` of this process, in kB.
    fn locked_kib() -> u64 {
        std::fs::read_to_string("/proc/self/status")
            .expect("/proc/self/status")
            .lines()
            .find_map(|l| l.strip_prefix("VmLck:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .expect("a VmLck line")
    }

    /// Run only by [`a_panic_demotes_every_measuring_thread_and_unlocks`],
    /// in a process of its own (it locks memory and installs the hook): a
    /// registered SCHED_FIFO thread, locked memory, then a panic on
    /// another thread.
    #[test]
    #[ignore = "run by a_panic_demotes_every_measuring_thread_and_unlocks in a child process"]
    fn panics_beside_a_real_time_thread() {
        use rustix::mm::{mlockall, MlockAllFlags};
        require!(is_root(), "needs root (SCHED_FIFO, locked memory)");
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
            register_tid(0, tid);
            tid_tx.send(tid).expect("send the tid");
            let _ = end_rx.recv();
        });
        let tid = tid_rx.recv().expect("the thread's tid");
        install_panic_hook();
        let panicked = std::thread::spawn(|| panic!("a panic on purpose")).join();
        // the default hook again, for whatever this process does next
        drop(std::panic::take_hook());
        assert!(panicked.is_err());
        let policy = sys::sched_getattr(tid).expect("sched_getattr").sched_policy;
        let locked = locked_kib();
        drop(end_tx);
        rt.join().expect("the real-time thread");
        assert_eq!(policy, sys::policy::OTHER, "the hook demotes the thread");
        assert_eq!(locked, 0, "the hook unlocks memory");
    }

    #[test]
    fn a_panic_demotes_every_measuring_thread_and_unlocks() {
        require!(is_root(), "needs root (SCHED_FIFO, locked memory)");
        let out = std::process::Command::new(std::env::current_exe().expect("this test binary"))
            .args(["--ignored", "--exact", "--test-threads=1"])
            .arg("linux::exit::tests::panics_beside_a_real_time_thread")
            .output()
            .expect("run the test binary");
        let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}");
        assert!(text.contains("1 passed"), "{text}");
    }
}
