//! Stream destinations: stdout, a file, TCP (with reconnect and backoff)
//! and a serial line (raw mode through termios).
//!
//! Only the sender thread writes here, so a slow or broken link can delay
//! reports but never a measuring thread. Frames that cannot be delivered
//! are counted in [`Sink::frames_dropped`].

use std::collections::VecDeque;
use std::net::SocketAddr;

use rustix::event::{PollFd, PollFlags};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use rustix::net::{AddressFamily, SendFlags, SocketFlags, SocketType};

use crate::config::parse::Dest;
use crate::error::Error;

/// Most bytes queued for a TCP peer before frames are dropped.
const TCP_QUEUE: usize = 512 * 1024;
/// First and longest reconnect delay.
const BACKOFF_MIN_NS: i64 = 100_000_000;
const BACKOFF_MAX_NS: i64 = 5_000_000_000;

enum Link {
    /// Blocking writes to an fd (stdout, file, serial).
    Fd {
        fd: OwnedFd,
        broken: bool,
        serial: bool,
    },
    /// Standard output, borrowed.
    Stdout { broken: bool },
    /// TCP with reconnects.
    Tcp(Tcp),
}

struct Tcp {
    addr: SocketAddr,
    state: TcpState,
    backoff_ns: i64,
    retry_at: i64,
    buf: Vec<u8>,
    sent: usize,
    /// End offsets (in `buf`) of queued frames.
    frames: VecDeque<usize>,
    /// Frames lost to a disconnect, not yet counted by the sink.
    lost: u64,
    /// Bytes sent, not yet counted by the sink.
    sent_bytes: u64,
}

enum TcpState {
    Down,
    Connecting(OwnedFd),
    Up(OwnedFd),
}

/// A stream destination.
pub struct Sink {
    link: Link,
    /// Frames that could not be delivered.
    pub frames_dropped: u64,
    /// Bytes delivered (or handed to the kernel).
    pub bytes: u64,
}

impl Sink {
    /// Open `dest`. TCP does not connect here: the sender keeps trying.
    pub fn open(dest: &Dest) -> Result<Sink, Error> {
        let link = match dest {
            Dest::Stdout => Link::Stdout { broken: false },
            Dest::File(path) => {
                let fd = rustix::fs::open(
                    path.as_str(),
                    OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC,
                    Mode::from_raw_mode(0o644),
                )
                .map_err(|e| Error::sys(format!("--stream {path}"), e))?;
                Link::Fd {
                    fd,
                    broken: false,
                    serial: false,
                }
            }
            Dest::Serial { path, baud } => Link::Fd {
                fd: open_serial(path, *baud)?,
                broken: false,
                serial: true,
            },
            Dest::Tcp(addr) => Link::Tcp(Tcp {
                addr: *addr,
                state: TcpState::Down,
                backoff_ns: BACKOFF_MIN_NS,
                retry_at: 0,
                buf: Vec::with_capacity(TCP_QUEUE),
                sent: 0,
                frames: VecDeque::with_capacity(8192),
                lost: 0,
                sent_bytes: 0,
            }),
        };
        Ok(Sink {
            link,
            frames_dropped: 0,
            bytes: 0,
        })
    }

    /// Make progress on a TCP link (connect, flush). Returns `true` when a
    /// new connection came up: the caller then starts it with a hello and a
    /// full snapshot. Other links report `true` once, at the start.
    pub fn service(&mut self, now_ns: i64, first: bool) -> bool {
        match &mut self.link {
            Link::Tcp(t) => {
                let up = t.service(now_ns);
                if let Some(lost) = t.take_lost() {
                    self.frames_dropped += lost;
                }
                self.bytes += t.take_sent_bytes();
                up
            }
            _ => first,
        }
    }

    /// Whether a TCP link is connected (always true for other links).
    pub fn is_up(&self) -> bool {
        match &self.link {
            Link::Tcp(t) => matches!(t.state, TcpState::Up(_)),
            _ => true,
        }
    }

    /// Send one frame, or count it as dropped.
    pub fn send(&mut self, frame: &[u8]) {
        match &mut self.link {
            Link::Stdout { broken } => {
                if *broken || write_all(rustix::stdio::stdout(), frame).is_err() {
                    *broken = true;
                    self.frames_dropped += 1;
                } else {
                    self.bytes += frame.len() as u64;
                }
            }
            Link::Fd { fd, broken, .. } => {
                if *broken || write_all(fd.as_fd(), frame).is_err() {
                    *broken = true;
                    self.frames_dropped += 1;
                } else {
                    self.bytes += frame.len() as u64;
                }
            }
            Link::Tcp(t) => {
                if !t.enqueue(frame) {
                    self.frames_dropped += 1;
                }
            }
        }
    }

    /// At the end: flush TCP for up to `timeout_ns`, drain a serial line.
    pub fn finish(&mut self, now_ns: i64, timeout_ns: i64) {
        match &mut self.link {
            Link::Tcp(t) => {
                let until = now_ns.saturating_add(timeout_ns);
                loop {
                    let now = crate::linux::clock::monotonic_ns();
                    t.service(now);
                    self.bytes += t.take_sent_bytes();
                    let pending = t.frames.len();
                    if pending == 0 || now >= until || matches!(t.state, TcpState::Down) {
                        break;
                    }
                    if let TcpState::Up(fd) = &t.state {
                        let mut p = [PollFd::new(fd, PollFlags::OUT)];
                        let _ = rustix::event::poll(
                            &mut p,
                            Some(&crate::linux::clock::timespec(10_000_000)),
                        );
                    } else {
                        sleep_ns(10_000_000);
                    }
                }
                self.frames_dropped += t.frames.len() as u64;
                t.frames.clear();
            }
            Link::Fd {
                fd, serial: true, ..
            } => {
                let _ = rustix::termios::tcdrain(fd.as_fd());
            }
            _ => {}
        }
    }
}

fn sleep_ns(ns: i64) {
    let _ = rustix::event::poll(&mut [], Some(&crate::linux::clock::timespec(ns)));
}

/// Write all of `buf`, retrying short writes and EINTR.
pub fn write_all(fd: impl AsFd, mut buf: &[u8]) -> Result<(), Errno> {
    while !buf.is_empty() {
        match rustix::io::write(fd.as_fd(), buf) {
            Ok(0) => return Err(Errno::IO),
            Ok(n) => buf = &buf[n..],
            Err(Errno::INTR) => {}
            Err(Errno::AGAIN) => {
                let mut p = [PollFd::new(&fd, PollFlags::OUT)];
                let _ =
                    rustix::event::poll(&mut p, Some(&crate::linux::clock::timespec(100_000_000)));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Open a serial line in raw mode at `baud`, with blocking writes.
fn open_serial(path: &str, baud: u32) -> Result<OwnedFd, Error> {
    let what = || format!("--stream serial:{path}");
    let fd = rustix::fs::open(
        path,
        OFlags::RDWR | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Error::sys(what(), e))?;
    let mut t = rustix::termios::tcgetattr(&fd).map_err(|e| Error::sys(what(), e))?;
    t.make_raw();
    t.set_speed(baud).map_err(|e| Error::sys(what(), e))?;
    rustix::termios::tcsetattr(&fd, rustix::termios::OptionalActions::Now, &t)
        .map_err(|e| Error::sys(what(), e))?;
    rustix::fs::fcntl_setfl(&fd, OFlags::RDWR).map_err(|e| Error::sys(what(), e))?;
    Ok(fd)
}

impl Tcp {
    fn service(&mut self, now: i64) -> bool {
        match std::mem::replace(&mut self.state, TcpState::Down) {
            TcpState::Down => {
                if now >= self.retry_at {
                    match self.connect() {
                        Ok(fd) => self.state = TcpState::Connecting(fd),
                        Err(_) => self.backoff(now),
                    }
                }
                false
            }
            TcpState::Connecting(fd) => {
                let mut p = [PollFd::new(&fd, PollFlags::OUT)];
                let ready = rustix::event::poll(&mut p, Some(&crate::linux::clock::timespec(0)))
                    .map(|n| n > 0)
                    .unwrap_or(false);
                if !ready {
                    if now.saturating_sub(self.retry_at) > 3_000_000_000 {
                        self.backoff(now);
                    } else {
                        self.state = TcpState::Connecting(fd);
                    }
                    return false;
                }
                match rustix::net::sockopt::socket_error(&fd) {
                    Ok(Ok(())) => {
                        let _ = rustix::net::sockopt::set_tcp_nodelay(&fd, true);
                        self.backoff_ns = BACKOFF_MIN_NS;
                        self.buf.clear();
                        self.sent = 0;
                        self.frames.clear();
                        self.state = TcpState::Up(fd);
                        true
                    }
                    _ => {
                        self.backoff(now);
                        false
                    }
                }
            }
            TcpState::Up(fd) => {
                if self.flush(&fd).is_ok() {
                    self.state = TcpState::Up(fd);
                } else {
                    self.backoff(now);
                }
                false
            }
        }
    }

    fn backoff(&mut self, now: i64) {
        self.state = TcpState::Down;
        self.retry_at = now.saturating_add(self.backoff_ns);
        self.backoff_ns = (self.backoff_ns * 2).min(BACKOFF_MAX_NS);
        self.lost = self.lost.saturating_add(self.frames.len() as u64);
        self.frames.clear();
        self.buf.clear();
        self.sent = 0;
    }

    fn connect(&self) -> Result<OwnedFd, Errno> {
        let family = match self.addr {
            SocketAddr::V4(_) => AddressFamily::INET,
            SocketAddr::V6(_) => AddressFamily::INET6,
        };
        let fd = rustix::net::socket_with(
            family,
            SocketType::STREAM,
            SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
            None,
        )?;
        match rustix::net::connect(&fd, &self.addr) {
            Ok(()) | Err(Errno::INPROGRESS) => Ok(fd),
            Err(e) => Err(e),
        }
    }

    fn enqueue(&mut self, frame: &[u8]) -> bool {
        if !matches!(self.state, TcpState::Up(_)) {
            return false;
        }
        if self.sent > 0 && self.buf.len() + frame.len() > TCP_QUEUE {
            self.buf.drain(..self.sent);
            for end in self.frames.iter_mut() {
                *end -= self.sent;
            }
            self.sent = 0;
        }
        if self.buf.len() + frame.len() > TCP_QUEUE {
            return false;
        }
        self.buf.extend_from_slice(frame);
        self.frames.push_back(self.buf.len());
        // try to send at once; errors surface on the next service()
        let state = std::mem::replace(&mut self.state, TcpState::Down);
        if let TcpState::Up(fd) = &state {
            let _ = self.flush_fd(fd.as_fd());
        }
        self.state = state;
        true
    }

    fn flush(&mut self, fd: &OwnedFd) -> Result<(), Errno> {
        self.flush_fd(fd.as_fd())
    }

    fn flush_fd(&mut self, fd: rustix::fd::BorrowedFd<'_>) -> Result<(), Errno> {
        while self.sent < self.buf.len() {
            match rustix::net::send(
                fd,
                &self.buf[self.sent..],
                SendFlags::NOSIGNAL | SendFlags::DONTWAIT,
            ) {
                Ok(n) => {
                    self.sent += n;
                    self.sent_bytes += n as u64;
                }
                Err(Errno::AGAIN) | Err(Errno::INTR) => break,
                Err(e) => return Err(e),
            }
        }
        while self.frames.front().is_some_and(|&end| end <= self.sent) {
            self.frames.pop_front();
        }
        if self.sent == self.buf.len() {
            self.buf.clear();
            self.sent = 0;
        }
        Ok(())
    }

    fn take_lost(&mut self) -> Option<u64> {
        let l = std::mem::take(&mut self.lost);
        (l > 0).then_some(l)
    }

    fn take_sent_bytes(&mut self) -> u64 {
        std::mem::take(&mut self.sent_bytes)
    }
}
