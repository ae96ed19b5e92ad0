//! Waiting in tests: for a condition, with a timeout, never for a fixed
//! time. A test that waits for something that never comes fails, naming
//! it, instead of hanging or passing by luck.

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use latscope_core::wire::Frame;

pub use crate::poll::{holds, poll, settle, until, within};

/// Every whole frame in `bytes` that passes its check (a recording still
/// being written may end inside one).
pub fn frames_of(bytes: &[u8]) -> Vec<Frame> {
    crate::target::decode_lenient(bytes).0
}

/// Wait until the recording at `path` holds a frame for which `pred`
/// holds (e.g. a thread's statistics of report 2): the target is then
/// measuring and streaming.
#[track_caller]
pub fn frame_in(path: &Path, timeout: Duration, what: &str, pred: impl Fn(&Frame) -> bool) {
    until(timeout, what, || {
        let bytes = std::fs::read(path).ok()?;
        frames_of(&bytes).iter().any(&pred).then_some(())
    })
}

/// Whether a TCP socket listens on `port` (IPv4 or IPv6), from
/// `/proc/net/tcp*`: a listener can be waited for without connecting to
/// it (a connection would be a peer to the program under test).
pub fn listening(port: u16) -> bool {
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|t| {
            t.lines().skip(1).any(|l| {
                let mut cols = l.split_whitespace();
                let local = cols.nth(1).unwrap_or("");
                let state = cols.nth(1).unwrap_or("");
                state == "0A" && local.ends_with(&format!(":{port:04X}"))
            })
        })
    })
}

/// Whether process `pid` itself listens on TCP `port`: one of its
/// descriptors is the socket of a listening entry of `/proc/net/tcp` (or
/// `tcp6`) on that port. Unlike [`listening`], another process's socket
/// on a port that two tests were both handed does not count.
pub fn listens_on(pid: u32, port: u16) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    let inodes: Vec<String> = fds
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
        })
        .collect();
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|t| {
            t.lines().skip(1).any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                let (local, state, inode) = (cols.get(1), cols.get(3), cols.get(9));
                state == Some(&"0A")
                    && local.is_some_and(|a| a.ends_with(&format!(":{port:04X}")))
                    && inode.is_some_and(|i| inodes.iter().any(|x| x == i))
            })
        })
    })
}

/// Whether process `pid` has `path` open.
pub fn has_open(pid: u32, path: &Path) -> bool {
    let want = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
        fds.filter_map(|e| e.ok())
            .any(|e| std::fs::read_link(e.path()).is_ok_and(|l| l == want))
    })
}

/// Accept one connection on `listener` within `timeout`; the connection
/// reads with a timeout of `timeout` too, so no read hangs a test.
#[track_caller]
pub fn accept(listener: &TcpListener, timeout: Duration) -> TcpStream {
    listener
        .set_nonblocking(true)
        .expect("non-blocking listener");
    let c = until(timeout, "a connection", || match listener.accept() {
        Ok((c, _)) => Some(c),
        Err(_) => None,
    });
    listener.set_nonblocking(false).expect("blocking listener");
    c.set_nonblocking(false).expect("blocking connection");
    c.set_read_timeout(Some(timeout)).expect("read timeout");
    c
}

/// A target run that succeeded: exit status 0, or 4 when its stream lost
/// frames or could not confirm them, which it must then say in a `never
/// delivered` or `sent but not acknowledged` line (a link cut on purpose
/// may lose frames until the target reconnects).
#[track_caller]
pub fn assert_run_ok(o: &Output) {
    let err = String::from_utf8_lossy(&o.stderr);
    let said = err.contains("never delivered") || err.contains("sent but not acknowledged");
    match o.status.code() {
        Some(0) => assert!(!said, "exit 0, yet: {err}"),
        Some(4) => assert!(said, "exit 4 without saying what was lost: {err}"),
        _ => panic!("target failed ({}): {err}", o.status),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A port this process listens on is its own, not another process's;
    /// a port nobody listens on is nobody's.
    #[test]
    fn listens_on_tells_whose_port_it_is() {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("address").port();
        assert!(listens_on(std::process::id(), port));
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("run sleep");
        assert!(!listens_on(other.id(), port));
        let _ = other.kill();
        let _ = other.wait();
        drop(l);
        assert!(!listens_on(std::process::id(), port));
    }
}
