//! Forced reclaim of one process: every PERIOD ms, ask the kernel to page
//! out every mapping of PID with `process_madvise(MADV_PAGEOUT)` through a
//! pidfd. This reproduces "page faults count as latency" deterministically
//! on a machine with far more memory than any load can exhaust: memory
//! pressure is not needed, the pages are reclaimed on request.
//!
//! With `mlockall` in the target the kernel refuses (the locked mappings
//! are skipped), which is the point of the comparison.
//!
//! Usage: evict PID [PERIOD_MS=100]
//! Runs until PID exits, then prints one line:
//! `evict: pid P rounds R advised_bytes B refused_calls E last_errno N`.
//!
//! Raw syscalls through `libc` are fine here: this is a test helper, never
//! part of the target program.

use std::time::Duration;

const MADV_PAGEOUT: libc::c_int = 21;
const IOV_BATCH: usize = 512;

fn pidfd_open(pid: libc::pid_t) -> std::io::Result<libc::c_int> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r as libc::c_int)
    }
}

/// The mappings of `pid` worth evicting: everything but the vsyscall page
/// and the kernel's special mappings.
fn mappings(pid: libc::pid_t) -> Option<Vec<(usize, usize)>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let mut out = Vec::new();
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let range = f.next()?;
        let name = line.split_whitespace().nth(5).unwrap_or("");
        if matches!(name, "[vsyscall]" | "[vvar]" | "[vdso]" | "[vvar_vclock]") {
            continue;
        }
        let (a, b) = range.split_once('-')?;
        let a = usize::from_str_radix(a, 16).ok()?;
        let b = usize::from_str_radix(b, 16).ok()?;
        if b > a {
            out.push((a, b - a));
        }
    }
    Some(out)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(pid) = args.get(1).and_then(|s| s.parse::<libc::pid_t>().ok()) else {
        eprintln!("usage: evict PID [PERIOD_MS]");
        std::process::exit(2);
    };
    let period = args
        .get(2)
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(100);
    let fd = match pidfd_open(pid) {
        Ok(fd) => fd,
        Err(e) => {
            eprintln!("evict: pidfd_open({pid}): {e}");
            std::process::exit(1);
        }
    };
    let (mut rounds, mut bytes, mut refused, mut last_errno) = (0u64, 0u64, 0u64, 0i32);
    while let Some(maps) = mappings(pid) {
        for chunk in maps.chunks(IOV_BATCH) {
            let iov: Vec<libc::iovec> = chunk
                .iter()
                .map(|&(base, len)| libc::iovec {
                    iov_base: base as *mut libc::c_void,
                    iov_len: len,
                })
                .collect();
            // SAFETY: process_madvise reads `iov.len()` iovecs from `iov`,
            // which lives across the call; the addresses are in the other
            // process and are only used as ranges by the kernel.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_process_madvise,
                    fd,
                    iov.as_ptr(),
                    iov.len(),
                    MADV_PAGEOUT,
                    0,
                )
            };
            if r < 0 {
                refused += 1;
                last_errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            } else {
                bytes += r as u64;
            }
        }
        rounds += 1;
        std::thread::sleep(Duration::from_millis(period));
    }
    println!(
        "evict: pid {pid} rounds {rounds} advised_bytes {bytes} refused_calls {refused} last_errno {last_errno}"
    );
}
