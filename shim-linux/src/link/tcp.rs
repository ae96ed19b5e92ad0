//! TCP with reconnects: the link keeps measuring going while the peer is
//! away, and reconnects with exponential backoff.

use std::collections::VecDeque;
use std::net::SocketAddr;

use rustix::event::{PollFd, PollFlags};
use rustix::fd::{AsFd, OwnedFd};
use rustix::io::Errno;
use rustix::net::{AddressFamily, SendFlags, SocketFlags, SocketType};

use crate::linux::clock::{monotonic_ns, timespec};
use crate::linux::sleep_ns;

/// Most bytes queued for a TCP peer before frames are dropped.
const TCP_QUEUE: usize = 512 * 1024;
/// First and longest reconnect delay.
const BACKOFF_MIN_NS: i64 = 100_000_000;
const BACKOFF_MAX_NS: i64 = 5_000_000_000;

pub(super) struct Tcp {
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
    /// Whether a connection was ever up.
    ever_up: bool,
    /// The last connect or send error.
    last_error: Option<Errno>,
}

enum TcpState {
    Down,
    Connecting(OwnedFd),
    Up(OwnedFd),
}

impl Tcp {
    pub(super) fn new(addr: SocketAddr) -> Tcp {
        Tcp {
            addr,
            state: TcpState::Down,
            backoff_ns: BACKOFF_MIN_NS,
            retry_at: 0,
            buf: Vec::with_capacity(TCP_QUEUE),
            sent: 0,
            frames: VecDeque::with_capacity(8192),
            lost: 0,
            ever_up: false,
            last_error: None,
        }
    }

    /// Why frames were lost, in words.
    pub(super) fn loss_reason(&self) -> String {
        let err = self
            .last_error
            .map(|e| format!(" (last error: {e})"))
            .unwrap_or_default();
        if self.ever_up {
            format!(
                "the connection to {} was down, full or slow{err}",
                self.addr
            )
        } else {
            format!("nobody accepted a connection to {}{err}", self.addr)
        }
    }

    /// Flush until every queued frame is sent, the link is down, or
    /// `until` (monotonic ns). Returns the frames not delivered.
    pub(super) fn flush_until(&mut self, until: i64) -> u64 {
        loop {
            let now = monotonic_ns();
            self.service(now);
            if self.frames.is_empty() || now >= until || matches!(self.state, TcpState::Down) {
                break;
            }
            if let TcpState::Up(fd) = &self.state {
                let mut p = [PollFd::new(fd, PollFlags::OUT)];
                let _ = rustix::event::poll(&mut p, Some(&timespec(10_000_000)));
            } else {
                sleep_ns(10_000_000);
            }
        }
        let pending = self.frames.len() as u64;
        self.frames.clear();
        pending + self.take_lost()
    }

    /// Frames lost to disconnects since the last call.
    pub(super) fn take_lost(&mut self) -> u64 {
        std::mem::take(&mut self.lost)
    }

    pub(super) fn service(&mut self, now: i64) -> bool {
        match std::mem::replace(&mut self.state, TcpState::Down) {
            TcpState::Down => {
                if now >= self.retry_at {
                    match self.connect() {
                        Ok(fd) => self.state = TcpState::Connecting(fd),
                        Err(e) => {
                            self.last_error = Some(e);
                            self.backoff(now);
                        }
                    }
                }
                false
            }
            TcpState::Connecting(fd) => {
                let mut p = [PollFd::new(&fd, PollFlags::OUT)];
                let ready = rustix::event::poll(&mut p, Some(&timespec(0)))
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
                        self.ever_up = true;
                        let _ = rustix::net::sockopt::set_tcp_nodelay(&fd, true);
                        self.backoff_ns = BACKOFF_MIN_NS;
                        self.buf.clear();
                        self.sent = 0;
                        self.frames.clear();
                        self.state = TcpState::Up(fd);
                        true
                    }
                    r => {
                        self.last_error = match r {
                            Ok(Err(e)) | Err(e) => Some(e),
                            Ok(Ok(())) => None,
                        };
                        self.backoff(now);
                        false
                    }
                }
            }
            TcpState::Up(fd) => {
                match self.flush(&fd) {
                    Ok(()) => self.state = TcpState::Up(fd),
                    Err(e) => {
                        self.last_error = Some(e);
                        self.backoff(now);
                    }
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

    pub(super) fn enqueue(&mut self, frame: &[u8]) -> bool {
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
                Ok(n) => self.sent += n,
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
}
