//! The request side of the `/metrics` server: connections read without
//! blocking (one `poll` over all of them), each with a size limit on its
//! request line and headers and one deadline for the whole request. A
//! request is parsed only once it is complete; only then does it take one
//! of the server's workers (`metrics.rs`).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};

use super::allow::{allowed, Net};

/// The most a request line and its headers may take, in bytes.
pub(crate) const MAX_REQUEST: usize = 8 * 1024;
/// How long a client has to send its whole request.
pub(crate) const DEADLINE: Duration = Duration::from_secs(2);
/// Requests being read at once; a new connection beyond them closes the
/// oldest, so that a crowd of slow clients cannot keep a scraper out.
pub(crate) const MAX_PENDING: usize = 128;

/// Why a connection was closed before its request was complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Its peer is outside `--metrics-allow`.
    Allow,
    /// Its request line and headers passed [`MAX_REQUEST`].
    Size,
    /// Its request was not complete within [`DEADLINE`].
    Deadline,
    /// [`MAX_PENDING`] other requests were being read; it was the oldest.
    Crowded,
    /// Its request was complete, but every worker was busy and the queue
    /// full.
    Busy,
}

impl Refusal {
    /// Every refusal, in the order of the exposition.
    pub(crate) const ALL: [Refusal; 5] = [
        Refusal::Allow,
        Refusal::Size,
        Refusal::Deadline,
        Refusal::Crowded,
        Refusal::Busy,
    ];

    /// Its `why` label on `/metrics`.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Refusal::Allow => "allow",
            Refusal::Size => "size",
            Refusal::Deadline => "deadline",
            Refusal::Crowded => "crowded",
            Refusal::Busy => "busy",
        }
    }

    /// The status line sent (without blocking, at most once) before the
    /// connection closes; none to a peer outside the allow-list.
    fn status(self) -> Option<&'static str> {
        match self {
            Refusal::Allow => None,
            Refusal::Size => Some("431 Request Header Fields Too Large"),
            Refusal::Deadline | Refusal::Crowded => Some("408 Request Timeout"),
            Refusal::Busy => Some("503 Service Unavailable"),
        }
    }
}

/// A complete request, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    /// Its method, as sent.
    pub(crate) method: String,
    /// Its path, without a query.
    pub(crate) path: String,
    /// Its `Accept` headers, joined by commas (empty if it had none).
    pub(crate) accept: String,
}

/// The end of the headers in `buf`, if they are all there: the index just
/// past the empty line (`\r\n\r\n`, or a bare `\n\n`).
fn head_end(buf: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(p) = buf[i..].iter().position(|&b| b == b'\n') {
        let nl = i + p;
        let rest = &buf[nl + 1..];
        if rest.starts_with(b"\n") {
            return Some(nl + 2);
        }
        if rest.starts_with(b"\r\n") {
            return Some(nl + 3);
        }
        i = nl + 1;
    }
    None
}

/// Parse a complete request head (request line and headers).
pub(crate) fn parse(head: &[u8]) -> Request {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.lines();
    let mut parts = lines.next().unwrap_or("").split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("");
    let path = target.split(['?', '#']).next().unwrap_or("").to_string();
    let mut accept = String::new();
    for l in lines {
        let Some((name, value)) = l.split_once(':') else {
            continue;
        };
        if name.trim().eq_ignore_ascii_case("accept") {
            if !accept.is_empty() {
                accept.push(',');
            }
            accept.push_str(value.trim());
        }
    }
    Request {
        method,
        path,
        accept,
    }
}

/// A connection whose request is still arriving.
struct Pending {
    stream: TcpStream,
    buf: Vec<u8>,
    deadline: Instant,
}

/// What reading a pending connection came to.
enum Step {
    /// More to come.
    Wait,
    /// Its request is complete.
    Done(Request),
    /// Closed by its peer, or failed: nothing to answer.
    Gone,
    /// To be refused.
    Refuse(Refusal),
}

impl Pending {
    /// Read what has arrived, without blocking.
    fn read(&mut self) -> Step {
        let mut chunk = [0u8; 2048];
        loop {
            // never hold more than the limit, plus one byte to tell
            // "too large" from "exactly the limit"
            let room = (MAX_REQUEST + 1 - self.buf.len()).min(chunk.len());
            match self.stream.read(&mut chunk[..room]) {
                Ok(0) => return Step::Gone,
                Ok(n) => {
                    let from = self.buf.len().saturating_sub(3);
                    self.buf.extend_from_slice(&chunk[..n]);
                    if let Some(end) = head_end(&self.buf[from..]) {
                        return Step::Done(parse(&self.buf[..from + end]));
                    }
                    if self.buf.len() > MAX_REQUEST {
                        return Step::Refuse(Refusal::Size);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Step::Wait,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Step::Gone,
            }
        }
    }
}

/// Send `status` without blocking (what does not fit is dropped), then
/// close.
pub(crate) fn refuse(mut stream: TcpStream, why: Refusal) {
    if let Some(status) = why.status() {
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
    }
}

/// The requests of one listener: connections accepted, read without
/// blocking and refused or handed on.
pub(crate) struct Reader {
    listener: TcpListener,
    allow: Vec<Net>,
    pending: Vec<Pending>,
    backoff: Duration,
}

impl Reader {
    /// Read the requests sent to `listener`, from peers in `allow` (any,
    /// if empty).
    pub(crate) fn new(listener: TcpListener, allow: Vec<Net>) -> io::Result<Reader> {
        listener.set_nonblocking(true)?;
        Ok(Reader {
            listener,
            allow,
            pending: Vec::new(),
            backoff: Duration::ZERO,
        })
    }

    /// The address it listens on.
    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Wait (at most until the nearest deadline) for something to happen,
    /// then give every complete request to `done` and every refused
    /// connection's reason to `refused`. `done` gets the connection back
    /// in blocking mode.
    pub(crate) fn turn(
        &mut self,
        mut done: impl FnMut(TcpStream, Request),
        mut refused: impl FnMut(Refusal),
    ) {
        let now = Instant::now();
        let wait = self
            .pending
            .iter()
            .map(|p| p.deadline.saturating_duration_since(now))
            .min()
            .unwrap_or(Duration::from_secs(1))
            .min(Duration::from_secs(1));
        let ready: Vec<bool> = {
            let mut fds = Vec::with_capacity(self.pending.len() + 1);
            fds.push(PollFd::new(&self.listener, PollFlags::IN));
            for p in &self.pending {
                fds.push(PollFd::new(&p.stream, PollFlags::IN));
            }
            // the field types differ by platform (Windows: 32-bit nsec)
            let ts = Timespec {
                tv_sec: wait.as_secs() as _,
                tv_nsec: wait.subsec_nanos() as _,
            };
            if rustix::event::poll(&mut fds, Some(&ts)).is_err() {
                // EINTR: look again at once
                vec![false; fds.len()]
            } else {
                fds.iter().map(|f| !f.revents().is_empty()).collect()
            }
        };
        // the pending connections first: `ready` indexes them as they are
        let mut i = self.pending.len();
        while i > 0 {
            i -= 1;
            let step = if ready[i + 1] {
                self.pending[i].read()
            } else {
                Step::Wait
            };
            let step = match step {
                Step::Wait if Instant::now() >= self.pending[i].deadline => {
                    Step::Refuse(Refusal::Deadline)
                }
                s => s,
            };
            match step {
                Step::Wait => {}
                Step::Gone => drop(self.pending.swap_remove(i)),
                Step::Refuse(why) => {
                    refused(why);
                    refuse(self.pending.swap_remove(i).stream, why);
                }
                Step::Done(req) => {
                    let p = self.pending.swap_remove(i);
                    if p.stream.set_nonblocking(false).is_ok() {
                        done(p.stream, req);
                    }
                }
            }
        }
        if ready[0] {
            self.accept(&mut refused);
        }
    }

    /// Accept what waits in the backlog.
    fn accept(&mut self, refused: &mut impl FnMut(Refusal)) {
        for _ in 0..256 {
            let Some((stream, peer)) = super::listen::accept(&self.listener, &mut self.backoff)
            else {
                return;
            };
            if !allowed(&self.allow, peer.ip()) {
                refused(Refusal::Allow);
                continue;
            }
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            if self.pending.len() >= MAX_PENDING {
                let oldest = (0..self.pending.len())
                    .min_by_key(|&k| self.pending[k].deadline)
                    .unwrap_or(0);
                refused(Refusal::Crowded);
                refuse(self.pending.swap_remove(oldest).stream, Refusal::Crowded);
            }
            self.pending.push(Pending {
                stream,
                buf: Vec::new(),
                deadline: Instant::now() + DEADLINE,
            });
        }
    }
}

/// Write all of `bytes` to `w` by `deadline`: each write waits at most
/// until then, so a client that does not read cannot hold a worker.
pub(crate) fn write_by(w: &mut TcpStream, bytes: &[u8], deadline: Instant) -> io::Result<()> {
    let mut rest = bytes;
    while !rest.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        w.set_write_timeout(Some(left))?;
        match w.write(rest) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => rest = &rest[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_ends_at_its_empty_line_with_or_without_cr() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n\r\nbody"), Some(27));
        assert_eq!(head_end(b"GET / HTTP/1.0\n\n"), Some(16));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n"), None);
        assert_eq!(head_end(b"GET / HTTP/1.1"), None);
    }

    #[test]
    fn requests_parse_with_their_accept_headers_joined() {
        let r = parse(
            b"GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nACCEPT: text/plain\r\n\
              accept:application/openmetrics-text\r\n\r\n",
        );
        assert_eq!(r.method, "GET");
        assert_eq!(r.path, "/metrics");
        assert_eq!(r.accept, "text/plain,application/openmetrics-text");
        let none = parse(b"\r\n\r\n");
        assert_eq!((none.method.as_str(), none.accept.as_str()), ("", ""));
    }

    /// A server of the test's own on loopback: what [`Reader::turn`]
    /// hands on or refuses, turn by turn, until `until` says so.
    fn serve_until(
        reader: &mut Reader,
        limit: Duration,
        mut until: impl FnMut(&[Request], &[Refusal]) -> bool,
    ) -> (Vec<Request>, Vec<Refusal>) {
        let (mut got, mut no) = (Vec::new(), Vec::new());
        let end = Instant::now() + limit;
        while !until(&got, &no) {
            assert!(Instant::now() < end, "not within {limit:?}: {got:?} {no:?}");
            reader.turn(|_, r| got.push(r), |w| no.push(w));
        }
        (got, no)
    }

    #[test]
    fn oversized_slow_and_complete_requests_each_get_their_due() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let mut reader = Reader::new(l, Vec::new()).unwrap();
        let mut big = TcpStream::connect(addr).unwrap();
        let _slow = TcpStream::connect(addr).unwrap();
        let mut ok = TcpStream::connect(addr).unwrap();
        let _ = big.write_all(&vec![b'x'; MAX_REQUEST + 10]);
        ok.write_all(b"GET /metrics HTTP/1.1\r\nAccept: text/plain\r\n\r\n")
            .unwrap();
        let (got, no) = serve_until(&mut reader, Duration::from_secs(10), |g, n| {
            g.len() == 1 && n.len() == 2
        });
        assert_eq!(got[0].path, "/metrics");
        assert_eq!(no, [Refusal::Size, Refusal::Deadline]);
    }

    #[test]
    fn peers_outside_the_allow_list_are_closed_at_once() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let allow = vec![Net::parse("10.0.0.0/8").unwrap()];
        let mut reader = Reader::new(l, allow).unwrap();
        let mut c = TcpStream::connect(addr).unwrap();
        let _ = c.write_all(b"GET /metrics HTTP/1.1\r\n\r\n");
        let (got, no) = serve_until(&mut reader, Duration::from_secs(10), |_, n| !n.is_empty());
        assert!(got.is_empty());
        assert_eq!(no, [Refusal::Allow]);
        let mut rest = Vec::new();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert!(
            matches!(c.read_to_end(&mut rest), Ok(0) | Err(_)),
            "{rest:?}"
        );
    }

    #[test]
    fn a_crowd_of_slow_clients_cannot_keep_a_request_out() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let mut reader = Reader::new(l, Vec::new()).unwrap();
        // the crowd connects while the reader turns (the backlog is not
        // that deep), and is all pending before the request comes
        let crowd = std::thread::spawn(move || {
            (0..MAX_PENDING + 5)
                .map(|_| TcpStream::connect(addr).unwrap())
                .collect::<Vec<_>>()
        });
        serve_until(&mut reader, Duration::from_secs(10), |_, n| n.len() >= 5);
        let crowd = crowd.join().unwrap();
        let mut ok = TcpStream::connect(addr).unwrap();
        ok.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
        let (got, no) = serve_until(&mut reader, Duration::from_secs(1), |g, _| !g.is_empty());
        assert_eq!(got[0].path, "/metrics");
        assert!(no.iter().all(|&w| w == Refusal::Crowded), "{no:?}");
        drop(crowd);
    }
}
