//! Where the frame stream goes: standard output, a file, a serial line
//! (raw mode through termios) or TCP (with reconnect and backoff, and the
//! frames the host has not acknowledged kept to send again).
//!
//! Only the sender thread writes here, so a slow or broken link can delay
//! reports but never a measuring thread. Frames that cannot be delivered
//! are counted in [`Sink::frames_dropped`]; over TCP, frames sent but not
//! acknowledged by the end of the run, whose fate only the host knows, in
//! [`Sink::frames_unacknowledged`].
//!
//! A serial line is paced ([`Pacer`]): no second carries more than half of
//! what the line can (the pacer keeps to 45 %, a margin for the bunching
//! between sender and receiver), so the one large burst of a run, its final report
//! with every thread's full histogram, is spread over the next seconds
//! rather than filling the line. Its reports keep to a byte budget
//! ([`Sink::byte_budget`]) and its spikes and explanations to a share of
//! their own ([`Sink::spike_share`]), both enforced by the sender's
//! reporter; a spike frame also goes only where the pacer would not make
//! it wait ([`Sink::spike_fits`]), so spikes never stall the sender.

mod resend;
mod serial;
mod tcp;

use latscope_core::protocol::{evidence_share, line_budget, spike_share, Pacer};
use latscope_core::wire::{Hello, MAX_FRAME};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::config::Dest;
use crate::error::Error;
use crate::linux::clock::monotonic_ns;
use crate::linux::{sleep_ns, sys, write_all};
use tcp::Tcp;

enum Link {
    /// Blocking writes to an fd (file; serial, paced); after the first
    /// failed write (its error kept) nothing more is written.
    Fd {
        fd: OwnedFd,
        broken: Option<Errno>,
        pacer: Option<Pacer>,
        /// The tty did not drain within [`DRAIN_WAIT_NS`]: frames are not
        /// held for it again until it has ([`pace`]).
        stalled: bool,
    },
    /// Standard output, borrowed.
    Stdout { broken: Option<Errno> },
    /// TCP with reconnects.
    Tcp(Box<Tcp>),
}

/// A stream destination.
pub struct Sink {
    link: Link,
    /// Bytes per second the stream's reports may average (0: no limit).
    budget: u32,
    /// Bytes per second spikes and explanations may average (0: no limit).
    spike_share: u32,
    /// Bytes per second a spike's evidence may average (0: no limit).
    evidence_share: u32,
    /// Frames that could not be delivered.
    pub frames_dropped: u64,
    /// Over TCP, at the end: frames sent on some connection that the host
    /// did not acknowledge in time (it may have stored them; its recording
    /// says).
    pub frames_unacknowledged: u64,
}

impl Sink {
    /// Open `dest`. TCP does not connect here: the sender keeps trying.
    pub fn open(dest: &Dest) -> Result<Sink, Error> {
        let (budget, spike_share, evidence_share) = match dest {
            Dest::Serial { baud, .. } => (
                line_budget(*baud),
                spike_share(*baud),
                evidence_share(*baud),
            ),
            _ => (0, 0, 0),
        };
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
                    pacer: None,
                    stalled: false,
                }
            }
            Dest::Serial { path, baud } => Link::Fd {
                fd: serial::open(path, *baud)?,
                broken: None,
                pacer: Some(Pacer::for_line(*baud)),
                stalled: false,
            },
            Dest::Tcp(addr) => Link::Tcp(Box::new(Tcp::new(*addr))),
        };
        Ok(Sink {
            link,
            budget,
            spike_share,
            evidence_share,
            frames_dropped: 0,
            frames_unacknowledged: 0,
        })
    }

    /// Bytes per second the stream's reports keep to on average (0: no
    /// limit): on a serial line 7 % of it, the rest of the 10 % left for
    /// the final report.
    pub fn byte_budget(&self) -> u32 {
        self.budget
    }

    /// Bytes per second spike samples and explanations keep to (0: no
    /// limit): on a serial line 25 % of it.
    pub fn spike_share(&self) -> u32 {
        self.spike_share
    }

    /// Bytes per second a spike's evidence keeps to (0: no limit of its
    /// own): on a serial line 5 %, out of the spikes' share.
    pub fn evidence_share(&self) -> u32 {
        self.evidence_share
    }

    /// Whether a part of a spike's evidence may leave at `now`: where the
    /// pacer would not make it wait, and over TCP while the frames kept
    /// for the host fill a quarter of the resend buffer at most.
    pub fn evidence_fits(&mut self, now: i64) -> bool {
        match &self.link {
            Link::Tcp(t) => t.evidence_fits(),
            _ => self.spike_fits(now, MAX_FRAME),
        }
    }

    /// Whether a spike frame of about `len` bytes may leave at `now`
    /// without the pacer making it wait.
    pub fn spike_fits(&mut self, now: i64, len: usize) -> bool {
        match &mut self.link {
            Link::Fd {
                pacer: Some(p),
                broken: None,
                ..
            } => p.ready_at(now, len) <= now,
            _ => true,
        }
    }

    /// Make progress on a TCP link (connect, read acks, send). Returns
    /// `true` when a new connection came up: the caller then sends a full
    /// snapshot. Other links report `true` once, at the start.
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

    /// The run's hello: over TCP its acknowledgements count, and a
    /// connection that resumes the run starts with it.
    pub fn set_hello(&mut self, hello: &Hello) {
        if let Link::Tcp(t) = &mut self.link {
            t.set_hello(hello.clone());
        }
    }

    /// Wait up to `timeout_ns` for the host to acknowledge every frame sent
    /// over TCP, so that [`Sink::frames_dropped`] is final.
    pub fn settle(&mut self, now_ns: i64, timeout_ns: i64) {
        if let Link::Tcp(t) = &mut self.link {
            self.frames_dropped += t.drain_until(now_ns.saturating_add(timeout_ns), false).lost;
        }
    }

    /// Send frame `seq`, or count it as dropped.
    pub fn send(&mut self, frame: &[u8], seq: u32) {
        let write = |fd: rustix::fd::BorrowedFd<'_>, broken: &mut Option<Errno>| {
            if broken.is_none() {
                *broken = write_all(fd, frame).err();
            }
            broken.is_none()
        };
        let delivered = match &mut self.link {
            Link::Stdout { broken } => write(rustix::stdio::stdout(), broken),
            Link::Fd {
                fd,
                broken,
                pacer,
                stalled,
            } => {
                if let (Some(p), None) = (pacer, &broken) {
                    pace(fd.as_fd(), p, frame.len(), stalled);
                }
                write(fd.as_fd(), broken)
            }
            Link::Tcp(t) => {
                t.enqueue(frame, seq);
                true
            }
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

    /// At the end: wait up to `timeout_ns` for TCP's last frames to be
    /// acknowledged (what is not counts as dropped if it was never sent
    /// whole, else as unacknowledged), drain a serial line.
    pub fn finish(&mut self, now_ns: i64, timeout_ns: i64) {
        match &mut self.link {
            Link::Tcp(t) => {
                let end = t.drain_until(now_ns.saturating_add(timeout_ns), true);
                self.frames_dropped += end.lost;
                self.frames_unacknowledged += end.unacknowledged;
            }
            Link::Fd {
                fd, pacer: Some(_), ..
            } => {
                let _ = rustix::termios::tcdrain(fd.as_fd());
            }
            _ => {}
        }
    }
}

/// The most bytes the serial line's tty may still hold when a paced frame
/// is written: 256 B, 22 ms of a 115200-baud line.
const QUEUED_MAX: usize = 256;

/// How long a paced frame waits at most for the tty to drain to
/// [`QUEUED_MAX`]. A line that does not drain in that time (a stopped
/// reader, flow control held) is no reason to hold every frame: later
/// frames are written at once, and block as they would have, until the
/// tty has drained again.
const DRAIN_WAIT_NS: i64 = 2_000_000_000;

/// Wait until `len` bytes may leave within the line's budget, and count
/// them.
///
/// The pacer counts bytes as they are written, and a write returns once
/// they are in the tty's buffer: on a line that drains more slowly than
/// the pacer lets bytes in (an emulated UART on a loaded host, which
/// moves bytes only when its guest gets the CPU), a backlog would build up
/// in the kernel and leave in one burst, the pacing lost. So a frame also
/// waits until the tty holds no more than [`QUEUED_MAX`] bytes
/// (`TIOCOUTQ`), and is counted when it really goes; `stalled` remembers a
/// line that did not drain within [`DRAIN_WAIT_NS`]. On a real UART that
/// drains at the line's rate this is at most one frame's transmission.
fn pace(fd: BorrowedFd<'_>, p: &mut Pacer, len: usize, stalled: &mut bool) {
    let now = monotonic_ns();
    let at = p.ready_at(now, len);
    if at > now {
        sleep_ns(at - now);
    }
    let backlog = |fd| matches!(sys::tty_output_queued(fd), Ok(q) if q > QUEUED_MAX);
    if *stalled {
        *stalled = backlog(fd);
    } else {
        let start = monotonic_ns();
        while backlog(fd) {
            if monotonic_ns().saturating_sub(start) >= DRAIN_WAIT_NS {
                *stalled = true;
                break;
            }
            sleep_ns(2_000_000);
        }
    }
    p.sent(monotonic_ns().max(at), len);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_frame_after_a_failed_write_is_counted_once() {
        let mut s = Sink::open(&Dest::File("/dev/full".into())).expect("open /dev/full");
        for seq in 0..5 {
            s.send(&[1, 2, 3, 0], seq);
        }
        assert_eq!(s.frames_dropped, 5);
        assert!(s.broken());
        let why = s.loss_reason();
        assert!(why.starts_with("a write failed: "), "{why}");
    }

    #[test]
    fn a_file_takes_every_frame() {
        let path = std::env::temp_dir().join(format!("latscope-sink-{}", std::process::id()));
        let name = path.to_str().expect("utf-8 temp path").to_string();
        let mut s = Sink::open(&Dest::File(name)).expect("open a file");
        for seq in 0..5 {
            s.send(&[1, 2, 3, 0], seq);
        }
        let len = std::fs::metadata(&path).map(|m| m.len());
        let _ = std::fs::remove_file(&path);
        assert_eq!((s.frames_dropped, s.broken()), (0, false));
        assert_eq!(len.ok(), Some(20));
    }

    #[test]
    fn tcp_frames_nobody_acknowledged_count_as_lost_at_the_end() {
        // a port nobody listens on
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port");
        let mut s = Sink::open(&Dest::Tcp(addr)).expect("a TCP sink");
        // more than the resend buffer keeps: the oldest are dropped while
        // the link is down, the rest are kept to the end
        let frame = [7u8; 1000];
        let n = 600;
        assert!(n * frame.len() > resend::RESEND_BYTES);
        for seq in 0..n {
            s.send(&frame, seq as u32);
        }
        s.finish(monotonic_ns(), 0);
        assert_eq!(s.frames_dropped, n as u64, "{}", s.loss_reason());
        assert_eq!(s.frames_unacknowledged, 0, "none was ever sent");
        assert!(s.loss_reason().starts_with("nobody accepted a connection"));
    }

    #[test]
    fn tcp_frames_sent_to_a_reader_that_never_acknowledges_are_unacknowledged_not_lost() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
        let addr = l.local_addr().expect("its address");
        let reader = std::thread::spawn(move || {
            let (mut c, _) = l.accept().expect("accept");
            let mut got = Vec::new();
            let _ = std::io::Read::read_to_end(&mut c, &mut got);
            got.len()
        });
        let mut s = Sink::open(&Dest::Tcp(addr)).expect("a TCP sink");
        let start = monotonic_ns();
        while !s.service(monotonic_ns(), false) {
            assert!(monotonic_ns() - start < 10_000_000_000, "never connected");
            sleep_ns(1_000_000);
        }
        let frame = [7u8; 100];
        for seq in 0..20 {
            s.send(&frame, seq);
        }
        s.finish(monotonic_ns(), 200_000_000);
        let counts = (s.frames_dropped, s.frames_unacknowledged);
        // closing the link ends the reader
        drop(s);
        assert_eq!(reader.join().expect("the reader"), 2000, "all sent");
        assert_eq!(counts, (0, 20), "sent whole, never acknowledged");
    }
}
