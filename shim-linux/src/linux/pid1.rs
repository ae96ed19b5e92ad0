//! PID 1 mode: latscope as the `init=` of a minimal board image.
//!
//! The kernel starts PID 1 with the words after `--` on its command line as
//! arguments and nothing mounted. latscope mounts devtmpfs on `/dev`, a
//! tmpfs on `/dev/shm` (for the snapshot file rt-tests' tools read), proc
//! on `/proc` and sysfs on `/sys`, runs as usual, and at the end syncs and
//! powers off (PID 1 must never exit: the kernel would panic; see
//! [`super::exit::leave`]).

use rustix::mount::MountFlags;

use super::exit;

/// If this process is PID 1: remember it (the end is then a power-off) and
/// mount what latscope reads.
pub fn start() {
    let pid1 = rustix::process::getpid().is_init();
    exit::set_pid1(pid1);
    if pid1 {
        mount_basics();
    }
}

/// Mount what latscope reads. Failures (already mounted, missing
/// directory) are reported and otherwise ignored.
fn mount_basics() {
    for (src, target, fs, mode) in [
        ("devtmpfs", "/dev", "devtmpfs", 0o755),
        ("tmpfs", "/dev/shm", "tmpfs", 0o1777),
        ("proc", "/proc", "proc", 0o755),
        ("sysfs", "/sys", "sysfs", 0o755),
    ] {
        let _ = rustix::fs::mkdir(target, rustix::fs::Mode::from_raw_mode(mode));
        let flags = if fs == "tmpfs" {
            MountFlags::NOSUID | MountFlags::NODEV
        } else {
            MountFlags::empty()
        };
        match rustix::mount::mount(src, target, fs, flags, None) {
            Ok(()) | Err(rustix::io::Errno::BUSY) => {}
            Err(e) => {
                let line = format!("latscope: init: mounting {fs} on {target}: {e}\n");
                let _ = crate::linux::write_all(rustix::stdio::stderr(), line.as_bytes());
            }
        }
    }
}
