//! Linux, below everything else: the raw system calls ([`sys`], the only
//! `unsafe` code of the crate), the clock, `/proc` and `/sys`, scheduling
//! attributes, seccomp, PID 1 mode, the exit discipline and tracefs.
//!
//! Nothing here knows the command line or the threads of a run.

pub mod clock;
pub mod cpuidle;
pub mod doorbell;
pub mod exit;
pub mod interrupts;
pub mod leftovers;
pub mod localtime;
pub mod pid1;
pub mod procfs;
pub mod sched;
pub mod seccomp;
pub mod smi;
pub mod status_files;
pub mod sys;
pub mod timerlat;
pub mod tracefs;

use rustix::event::{PollFd, PollFlags};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use rustix::thread::CpuSet;

use clock::timespec;

/// The CPUs this process may run on.
pub fn available_cpus() -> Vec<usize> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect(),
        Err(_) => vec![0],
    }
}

/// Most NUMA nodes looked for.
const MAX_NODES: usize = 1024;

/// The NUMA node of `cpu`, as libnuma's `numa_node_of_cpu` finds it (the
/// `nodeM` entry of `/sys/devices/system/cpu/cpuN`); `None` on a kernel
/// without NUMA (no `/sys/devices/system/node`, where libnuma's
/// `numa_available` fails too) or when the CPU names no node.
pub fn numa_node(cpu: usize) -> Option<i32> {
    let exists = |p: &str| rustix::fs::access(p, rustix::fs::Access::EXISTS).is_ok();
    if !exists("/sys/devices/system/node") {
        return None;
    }
    (0..MAX_NODES)
        .find(|m| exists(&format!("/sys/devices/system/cpu/cpu{cpu}/node{m}")))
        .map(|m| m as i32)
}

/// `cpus` in ascending order, each once. CPU lists are short: an
/// insertion keeps the binary free of a sort routine for them.
pub fn ascending(cpus: impl IntoIterator<Item = usize>) -> Vec<usize> {
    let mut v: Vec<usize> = Vec::new();
    for c in cpus {
        if let Err(at) = v.binary_search(&c) {
            v.insert(at, c);
        }
    }
    v
}

/// `cpus` as a kernel CPU set (CPUs beyond its size are left out).
pub fn cpu_set(cpus: &[usize]) -> CpuSet {
    let mut set = CpuSet::new();
    for &c in cpus {
        if c < CpuSet::MAX_CPU {
            set.set(c);
        }
    }
    set
}

/// `poll(NULL, 0, ns)`: sleep for `ns` (never on a measuring thread's loop).
pub fn sleep_ns(ns: i64) {
    let _ = rustix::event::poll(&mut [], Some(&timespec(ns)));
}

/// `write(fd, buf)` until all of `buf` is written, retrying short writes
/// and EINTR, and waiting for a non-blocking fd to take more.
pub fn write_all(fd: impl AsFd, mut buf: &[u8]) -> Result<(), Errno> {
    while !buf.is_empty() {
        match rustix::io::write(fd.as_fd(), buf) {
            Ok(0) => return Err(Errno::IO),
            Ok(n) => buf = &buf[n..],
            Err(Errno::INTR) => {}
            Err(Errno::AGAIN) => {
                let mut p = [PollFd::new(&fd, PollFlags::OUT)];
                let _ = rustix::event::poll(&mut p, Some(&timespec(100_000_000)));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `open("/dev/cpu_dma_latency")` and write `us` to it: the CPUs keep out
/// of idle states slower to leave than `us` for as long as the returned fd
/// is open.
pub fn hold_dma_latency(us: i32) -> Result<OwnedFd, Errno> {
    let fd = rustix::fs::open(
        "/dev/cpu_dma_latency",
        OFlags::WRONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    rustix::io::write(&fd, &us.to_ne_bytes())?;
    Ok(fd)
}

/// A random number from the kernel's entropy (`/dev/urandom`), or from the
/// clocks if that cannot be read.
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    let read = rustix::fs::open(
        "/dev/urandom",
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .and_then(|fd| rustix::io::read(&fd, &mut b));
    if read == Ok(8) {
        return u64::from_ne_bytes(b);
    }
    (clock::monotonic_ns() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ clock::realtime_s() as u64
}

#[cfg(test)]
mod tests {
    #[test]
    fn ascending_sorts_and_keeps_each_cpu_once() {
        assert_eq!(super::ascending([3, 1, 3, 0, 2, 1]), [0, 1, 2, 3]);
        assert_eq!(super::ascending([]), Vec::<usize>::new());
    }
}
