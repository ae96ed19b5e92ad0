//! TCP with reconnects and acknowledgements: measuring goes on while the
//! peer is away, the link reconnects with exponential backoff, and every
//! frame the host has not acknowledged is kept ([`Resend`]) and sent again
//! on the next connection, behind a hello that tells the host where the
//! run resumes.

use std::net::SocketAddr;

use latscope_core::wire::{
    encode, AckReader, Body, Frame, Hello, MAX_ACK_FRAME, MAX_FRAME, PROTOCOL_VERSION,
};
use rustix::event::{PollFd, PollFlags};
use rustix::fd::{AsFd, OwnedFd};
use rustix::io::Errno;
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};

use super::resend::{End, Resend};
use crate::linux::clock::{monotonic_ns, timespec};
use crate::linux::sleep_ns;

/// First and longest reconnect delay.
const BACKOFF_MIN_NS: i64 = 100_000_000;
const BACKOFF_MAX_NS: i64 = 5_000_000_000;

pub(super) struct Tcp {
    addr: SocketAddr,
    state: TcpState,
    backoff_ns: i64,
    retry_at: i64,
    resend: Resend,
    /// The hello that starts the current connection (it takes no sequence
    /// number and is not kept), and how much of it is sent.
    lead: Vec<u8>,
    lead_sent: usize,
    /// The run's hello, to start a connection that resumes it.
    hello: Option<Box<Hello>>,
    acks: AckReader,
    /// Whether a connection was ever up.
    ever_up: bool,
    /// The last connect, send or receive error.
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
            resend: Resend::new(),
            lead: Vec::with_capacity(MAX_FRAME),
            lead_sent: 0,
            hello: None,
            acks: AckReader::new(),
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
                "the connection to {} was down, full or slow: they overflowed the resend \
                 buffer, or were never sent whole{err}",
                self.addr
            )
        } else {
            format!("nobody accepted a connection to {}{err}", self.addr)
        }
    }

    /// The run's hello: its acks count, and a connection that resumes the
    /// run starts with it.
    pub(super) fn set_hello(&mut self, hello: Hello) {
        self.hello = Some(Box::new(hello));
    }

    /// Start a connection that resumes the run with its hello, carrying
    /// `seq` (the number before the first frame sent again; it takes none
    /// of its own).
    fn lead(&mut self, seq: u32) {
        self.lead.clear();
        self.lead_sent = 0;
        let Some(h) = &self.hello else {
            return;
        };
        let frame = Frame {
            version: PROTOCOL_VERSION,
            seq,
            body: Body::Hello((**h).clone()),
        };
        self.lead.resize(MAX_FRAME, 0);
        let n = encode(&frame, &mut self.lead).unwrap_or(0);
        self.lead.truncate(n);
    }

    /// Keep frame `seq` and send it when the link is up.
    pub(super) fn enqueue(&mut self, frame: &[u8], seq: u32) {
        self.resend.push(seq, frame);
        let state = std::mem::replace(&mut self.state, TcpState::Down);
        if let TcpState::Up(fd) = &state {
            // errors surface on the next service()
            let _ = self.flush(fd.as_fd());
        }
        self.state = state;
    }

    /// Frames lost since the last call.
    /// Whether the frames kept for the host leave room for a spike's
    /// evidence: it may fill a quarter of the resend buffer at most, so a
    /// slow or absent host never has reports pushed out for it.
    pub(super) fn evidence_fits(&self) -> bool {
        self.resend.held_bytes() < super::resend::RESEND_BYTES / 4
    }

    pub(super) fn take_lost(&mut self) -> u64 {
        self.resend.take_lost()
    }

    /// Service the link until every kept frame is acknowledged or `until`
    /// (monotonic ns); a link that is down is tried again at once and then
    /// with the shortest backoff, so a host that comes back meanwhile still
    /// gets the end of the run. With `give_up`, whatever is kept or
    /// unsettled then is counted ([`Resend::end`]): lost if it was never
    /// sent whole, unacknowledged if it was. Returns the frames lost, and
    /// (with `give_up`) those unacknowledged.
    pub(super) fn drain_until(&mut self, until: i64, give_up: bool) -> End {
        if matches!(self.state, TcpState::Down) {
            self.retry_at = 0;
            self.backoff_ns = BACKOFF_MIN_NS;
        }
        loop {
            let now = monotonic_ns();
            self.service(now);
            if self.resend.is_empty() || now >= until {
                break;
            }
            if matches!(self.state, TcpState::Down) {
                self.backoff_ns = BACKOFF_MIN_NS;
            }
            if let TcpState::Up(fd) = &self.state {
                let mut p = [PollFd::new(fd, PollFlags::IN | PollFlags::OUT)];
                let _ = rustix::event::poll(&mut p, Some(&timespec(10_000_000)));
            } else {
                sleep_ns(10_000_000);
            }
        }
        if give_up {
            self.resend.end()
        } else {
            End {
                lost: self.take_lost(),
                unacknowledged: 0,
            }
        }
    }

    /// Connect, read acks, send. Returns `true` when a connection came up.
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
            TcpState::Connecting(fd) => self.connecting(fd, now),
            TcpState::Up(fd) => {
                match self
                    .read_acks(fd.as_fd())
                    .and_then(|()| self.flush(fd.as_fd()))
                {
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

    fn connecting(&mut self, fd: OwnedFd, now: i64) -> bool {
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
                self.lead.clear();
                self.lead_sent = 0;
                self.acks = AckReader::new();
                if let Some(seq) = self.resend.connected() {
                    self.lead(seq);
                }
                self.state = TcpState::Up(fd);
                true
            }
            Ok(Err(e)) | Err(e) => {
                self.last_error = Some(e);
                self.backoff(now);
                false
            }
        }
    }

    fn backoff(&mut self, now: i64) {
        self.state = TcpState::Down;
        self.retry_at = now.saturating_add(self.backoff_ns);
        self.backoff_ns = (self.backoff_ns * 2).min(BACKOFF_MAX_NS);
        self.resend.disconnected();
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

    /// Take the acks that arrived; the peer closing is an error.
    fn read_acks(&mut self, fd: rustix::fd::BorrowedFd<'_>) -> Result<(), Errno> {
        let mut buf = [0u8; 8 * MAX_ACK_FRAME];
        loop {
            match rustix::net::recv(fd, &mut buf, RecvFlags::DONTWAIT) {
                Ok((0, _)) => return Err(Errno::CONNRESET),
                Ok((n, _)) => {
                    let run = self.hello.as_ref().map_or(0, |h| h.run_id);
                    let resend = &mut self.resend;
                    self.acks.feed_all(&buf[..n], |a| {
                        if a.run_id == run {
                            resend.ack(a.seq);
                        }
                    });
                }
                Err(Errno::AGAIN) | Err(Errno::INTR) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    /// Send the connection's hello, then what is kept and not yet sent.
    fn flush(&mut self, fd: rustix::fd::BorrowedFd<'_>) -> Result<(), Errno> {
        while self.lead_sent < self.lead.len() {
            match send(fd, &self.lead[self.lead_sent..])? {
                0 => return Ok(()),
                n => self.lead_sent += n,
            }
        }
        loop {
            let (a, b) = self.resend.unsent();
            let part = if a.is_empty() { b } else { a };
            if part.is_empty() {
                return Ok(());
            }
            match send(fd, part)? {
                0 => return Ok(()),
                n => self.resend.sent(n),
            }
        }
    }
}

/// One non-blocking send: the bytes taken (0 when the socket is full).
fn send(fd: rustix::fd::BorrowedFd<'_>, bytes: &[u8]) -> Result<usize, Errno> {
    match rustix::net::send(fd, bytes, SendFlags::NOSIGNAL | SendFlags::DONTWAIT) {
        Ok(n) => Ok(n),
        Err(Errno::AGAIN) | Err(Errno::INTR) => Ok(0),
        Err(e) => Err(e),
    }
}
