//! A serial line in raw mode.

use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};

use crate::error::Error;

/// Open a serial line in raw mode at `baud`, with blocking writes.
pub(super) fn open(path: &str, baud: u32) -> Result<OwnedFd, Error> {
    let fail = |e| Error::output(format!("--stream serial:{path}"), e);
    let fd = rustix::fs::open(
        path,
        OFlags::RDWR | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(fail)?;
    let mut t = rustix::termios::tcgetattr(&fd).map_err(fail)?;
    t.make_raw();
    t.set_speed(baud).map_err(fail)?;
    rustix::termios::tcsetattr(&fd, rustix::termios::OptionalActions::Now, &t).map_err(fail)?;
    rustix::fs::fcntl_setfl(&fd, OFlags::RDWR).map_err(fail)?;
    Ok(fd)
}
