//! Where the frame stream goes: standard output, a file, a serial line
//! (raw mode through termios) or TCP (with reconnect and backoff).
//!
//! Only the sender thread writes here, so a slow or broken link can delay
//! reports but never a measuring thread. Frames that cannot be delivered
//! are counted in [`Sink::frames_dropped`].

mod serial;
mod tcp;

use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::config::Dest;
use crate::error::Error;
use crate::linux::write_all;
use tcp::Tcp;

enum Link {
    /// Blocking writes to an fd (file, serial); after the first failed
    /// write (its error kept) nothing more is written.
    Fd {
        fd: OwnedFd,
        broken: Option<Errno>,
        serial: bool,
    },
    /// Standard output, borrowed.
    Stdout { broken: Option<Errno> },
    /// TCP with reconnects.
    Tcp(Tcp),
}

/// A stream destination.
pub struct Sink {
    link: Link,
    /// Frames that could not be delivered.
    pub frames_dropped: u64,
}

impl Sink {
    /// Open `dest`. TCP does not connect here: the sender keeps trying.
    pub fn open(dest: &Dest) -> Result<Sink, Error> {
        let link = match dest {
            Dest::Stdout => Link::Stdout { broken: None },
            Dest::File(path) => {
                let fd = rustix::fs::open(
                    path.as_str(),
                    OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC,
                    Mode::from_raw_mode(0o644),
                )
                .map_err(|e| Error::output(format!("--stream {path}"), e))?;
                Link::Fd {
                    fd,
                    broken: None,
                    serial: false,
                }
            }
            Dest::Serial { path, baud } => Link::Fd {
                fd: serial::open(path, *baud)?,
                broken: None,
                serial: true,
            },
            Dest::Tcp(addr) => Link::Tcp(Tcp::new(*addr)),
        };
        Ok(Sink {
            link,
            frames_dropped: 0,
        })
    }

    /// Make progress on a TCP link (connect, flush). Returns `true` when a
    /// new connection came up: the caller then starts it with a hello and a
    /// full snapshot. Other links report `true` once, at the start.
    pub fn service(&mut self, now_ns: i64, first: bool) -> bool {
        match &mut self.link {
            Link::Tcp(t) => {
                let up = t.service(now_ns);
                self.frames_dropped += t.take_lost();
                up
            }
            _ => first,
        }
    }

    /// Send one frame, or count it as dropped.
    pub fn send(&mut self, frame: &[u8]) {
        let write = |fd: rustix::fd::BorrowedFd<'_>, broken: &mut Option<Errno>| {
            if broken.is_none() {
                *broken = write_all(fd, frame).err();
            }
            broken.is_none()
        };
        let delivered = match &mut self.link {
            Link::Stdout { broken } => write(rustix::stdio::stdout(), broken),
            Link::Fd { fd, broken, .. } => write(fd.as_fd(), broken),
            Link::Tcp(t) => t.enqueue(frame),
        };
        if !delivered {
            self.frames_dropped += 1;
        }
    }

    /// Why frames were not delivered, for the message that counts them.
    pub fn loss_reason(&self) -> String {
        match &self.link {
            Link::Stdout { broken } | Link::Fd { broken, .. } => match broken {
                Some(e) => format!("a write failed: {e}"),
                None => "they could not be encoded".into(),
            },
            Link::Tcp(t) => t.loss_reason(),
        }
    }

    /// Whether nothing more can be delivered (a failed write to a file,
    /// serial line or standard output; TCP reconnects, so never).
    pub fn broken(&self) -> bool {
        match &self.link {
            Link::Stdout { broken } | Link::Fd { broken, .. } => broken.is_some(),
            Link::Tcp(_) => false,
        }
    }

    /// At the end: flush TCP for up to `timeout_ns`, drain a serial line.
    pub fn finish(&mut self, now_ns: i64, timeout_ns: i64) {
        match &mut self.link {
            Link::Tcp(t) => self.frames_dropped += t.flush_until(now_ns.saturating_add(timeout_ns)),
            Link::Fd {
                fd, serial: true, ..
            } => {
                let _ = rustix::termios::tcdrain(fd.as_fd());
            }
            _ => {}
        }
    }
}
