//! Windows: std. Winsock has no per-call "don't wait" flag, no SIGPIPE and
//! no open-files limit of the Unix kind; the standard streams are handles.

use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::net::TcpStream;
use std::os::windows::io::AsHandle;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::console::Std;

/// A send that never waits: the socket is non-blocking for this one call
/// (Winsock has no `MSG_DONTWAIT`). Meant for the thread that owns the
/// socket; a read of another thread in that moment returns `WouldBlock`,
/// which a recorder's reads take as their timeout tick.
pub(crate) fn send_nowait(stream: &TcpStream, buf: &[u8]) -> io::Result<usize> {
    nowait(stream, |mut s| s.write(buf))
}

/// A receive that never waits, as [`send_nowait`]: what has arrived, else
/// `WouldBlock`; 0 at the end of the stream.
pub(crate) fn recv_nowait(stream: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    nowait(stream, |mut s| io::Read::read(&mut s, buf))
}

fn nowait<T>(stream: &TcpStream, f: impl FnOnce(&TcpStream) -> io::Result<T>) -> io::Result<T> {
    stream.set_nonblocking(true)?;
    let r = f(stream);
    let back = stream.set_nonblocking(false);
    let r = r?;
    back.map(|()| r)
}

/// Ctrl-C and Ctrl-Break set `flag`: the first ends the recorder cleanly; a
/// second while it is stopping ends the process at once (status 1).
/// Windows has no SIGTERM to send. A console control handler (the `ctrlc`
/// crate), not the C runtime's `signal`: `signal-hook` reads the previous
/// handler with `signal(sig, SIG_GET)`, which not every C runtime
/// implements (Wine's stores the 2 as the handler, and calls it).
pub(crate) fn on_stop(flag: Arc<AtomicBool>) {
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::AcqRel) {
            std::process::exit(i32::from(crate::error::EXIT_FAILED));
        }
    });
}

/// WSAEMFILE (no socket handles left) or WSAENOBUFS (no buffer space).
pub(crate) fn out_of_descriptors(e: &io::Error) -> bool {
    const WSAEMFILE: i32 = 10024;
    const WSAENOBUFS: i32 = 10055;
    matches!(e.raw_os_error(), Some(WSAEMFILE | WSAENOBUFS))
}

/// Nothing to do: NTFS journals its metadata, so a file's name is durable
/// with the file system's own log, and Windows opens no directory as a
/// file to flush (`File::open` of a directory is refused).
pub(crate) fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// Nothing to raise: Windows limits sockets by memory, not by a
/// per-process count.
pub(crate) fn raise_fd_limit() {}

/// One write to a standard stream, unbuffered. A console goes through
/// std's stream (it writes UTF-16 to the console), flushed at once; a pipe
/// or file through a duplicate of its handle, so that no byte waits in
/// std's buffer to be written again at exit.
pub(crate) fn write_std(s: Std, buf: &[u8]) -> io::Result<usize> {
    static OUT: OnceLock<Option<File>> = OnceLock::new();
    static ERR: OnceLock<Option<File>> = OnceLock::new();
    let raw = match s {
        Std::Out => OUT.get_or_init(|| handle(&io::stdout())),
        Std::Err => ERR.get_or_init(|| handle(&io::stderr())),
    };
    if let Some(mut f) = raw.as_ref() {
        return f.write(buf);
    }
    match s {
        Std::Out => {
            let mut o = io::stdout().lock();
            let n = o.write(buf)?;
            o.flush().map(|()| n)
        }
        Std::Err => io::stderr().lock().write(buf),
    }
}

/// The stream's own handle as a `File`, unless it is a console (or there
/// is no handle to duplicate).
fn handle(s: &(impl AsHandle + IsTerminal)) -> Option<File> {
    if s.is_terminal() {
        return None;
    }
    s.as_handle().try_clone_to_owned().ok().map(File::from)
}
