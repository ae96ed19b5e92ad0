//! Linux and macOS: rustix, the system calls themselves.

use std::fs::File;
use std::io;
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fd::BorrowedFd;
use rustix::io::Errno;
use rustix::net::{RecvFlags, SendFlags};

use crate::console::Std;

/// No SIGPIPE from a send to a closed connection. The Rust runtime ignores
/// SIGPIPE before `main` anyway; on Linux the flag makes sure of it. macOS
/// has no such flag (its socket option is `SO_NOSIGPIPE`), and the ignored
/// signal is what it relies on.
#[cfg(not(target_vendor = "apple"))]
const NO_SIGNAL: SendFlags = SendFlags::NOSIGNAL;
#[cfg(target_vendor = "apple")]
const NO_SIGNAL: SendFlags = SendFlags::empty();

/// `send(MSG_DONTWAIT)`: what fits in the socket's buffer now, else
/// `WouldBlock`. The socket itself stays blocking, for its other users.
pub(crate) fn send_nowait(stream: &TcpStream, buf: &[u8]) -> io::Result<usize> {
    Ok(rustix::net::send(
        stream,
        buf,
        SendFlags::DONTWAIT | NO_SIGNAL,
    )?)
}

/// `recv(MSG_DONTWAIT)`: what has arrived, else `WouldBlock`; 0 at the
/// end of the stream.
pub(crate) fn recv_nowait(stream: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    Ok(rustix::net::recv(stream, buf, RecvFlags::DONTWAIT)?.0)
}

/// SIGINT and SIGTERM set `flag`: the first ends the recorder cleanly; a
/// second while it is stopping ends the process at once (status 1).
pub(crate) fn on_stop(flag: Arc<AtomicBool>) {
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register_conditional_shutdown(sig, 1, Arc::clone(&flag));
        let _ = signal_hook::flag::register(sig, Arc::clone(&flag));
    }
}

/// EMFILE, ENFILE, ENOBUFS or ENOMEM.
pub(crate) fn out_of_descriptors(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error().map(Errno::from_raw_os_error),
        Some(Errno::MFILE | Errno::NFILE | Errno::NOBUFS | Errno::NOMEM)
    )
}

/// Raise the soft limit on open files to the hard limit: every connection
/// holds two descriptors. macOS refuses a soft limit above `OPEN_MAX`
/// (10240) and its hard limit is usually "unlimited" (getrlimit(2),
/// COMPATIBILITY), so there the soft limit goes to the lower of the two;
/// else it would stay at macOS's default of 256.
pub(crate) fn raise_fd_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut l = getrlimit(Resource::Nofile);
    let ceiling = ceiling(l.maximum);
    if l.current < ceiling {
        l.current = ceiling;
        let _ = setrlimit(Resource::Nofile, l);
    }
}

#[cfg(not(target_vendor = "apple"))]
fn ceiling(maximum: Option<u64>) -> Option<u64> {
    maximum
}

#[cfg(target_vendor = "apple")]
fn ceiling(maximum: Option<u64>) -> Option<u64> {
    const OPEN_MAX: u64 = 10240;
    Some(maximum.map_or(OPEN_MAX, |m| m.min(OPEN_MAX)))
}

/// `write(2)` on a standard stream's file descriptor, unbuffered. A full
/// non-blocking stream (EAGAIN) is waited for, as the target's writes do.
pub(crate) fn write_std(s: Std, buf: &[u8]) -> io::Result<usize> {
    let fd: BorrowedFd<'static> = match s {
        Std::Out => rustix::stdio::stdout(),
        Std::Err => rustix::stdio::stderr(),
    };
    loop {
        match rustix::io::write(fd, buf) {
            Err(Errno::AGAIN) => {
                let mut p = [PollFd::new(&fd, PollFlags::OUT)];
                let wait = Timespec {
                    tv_sec: 0,
                    tv_nsec: 100_000_000,
                };
                let _ = rustix::event::poll(&mut p, Some(&wait));
            }
            r => return r.map_err(io::Error::from),
        }
    }
}

/// `fsync(2)` of the directory `dir`: the entries created or renamed in it
/// (a recording's name) are on disk.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}
