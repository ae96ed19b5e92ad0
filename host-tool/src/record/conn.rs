//! One target connection: wait (bounded) for its hello, attach it to its
//! run, record what it sends, acknowledge what is stored, and give up on
//! it when it goes quiet.

use std::io::{self, Read};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use latscope_core::wire::{Ack, MAX_ACK_FRAME};

use super::fleet::{Fleet, FrameSpan, RunHold, WriteFailed};
use super::lock;
use super::split::{FrameRole, Peeker, Piece, Splitter};
use crate::budget::Budget;
use crate::console;

/// How long a read waits before the connection checks its timeouts.
const TICK: Duration = Duration::from_millis(500);
/// Read buffer per connection (a report of a few threads is 1-2 KiB).
const READ_BUF: usize = 4 * 1024;

/// The time limits of a connection.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// For the hello, from the accept.
    pub hello: Duration,
    /// Between two reads that bring bytes.
    pub idle: Duration,
}

/// A connection's state.
struct Conn {
    stream: TcpStream,
    peer: String,
    fleet: Arc<Fleet>,
    split: Splitter,
    peek: Peeker,
    /// This read's frames, copied with their delimiters.
    bytes: Vec<u8>,
    items: Vec<FrameSpan>,
    out: Vec<u8>,
    link: Option<RunHold>,
    /// Frames before the hello (not recorded).
    before_hello: u64,
    /// Frames of another protocol version or schema before the hello.
    foreign: u64,
    /// What the runs this connection opened may hold (part of the
    /// recorder's budget).
    budget: Arc<Budget>,
}

/// Serve one accepted connection until it ends.
pub(crate) fn serve(stream: TcpStream, peer: String, fleet: Arc<Fleet>, limits: Limits) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(TICK));
    let mut c = Conn {
        stream,
        peer,
        fleet: Arc::clone(&fleet),
        split: Splitter::new(),
        peek: Peeker::default(),
        bytes: Vec::new(),
        items: Vec::new(),
        out: Vec::new(),
        link: None,
        before_hello: 0,
        foreign: 0,
        budget: Budget::in_recorder(&fleet.budget),
    };
    let why = c.pump(limits);
    if let Some(link) = &c.link {
        c.fleet.detach(link);
    }
    if c.link.is_none() {
        super::targets::FleetStats::bump(&c.fleet.targets.stats.no_hello);
    }
    match (why, &c.link) {
        (Some(why), None) => console::say(format_args!("{}: nothing recorded: {why}", c.peer)),
        (Some(why), Some(_)) => console::say(format_args!("{}: {why}", c.peer)),
        (None, _) => {}
    }
}

impl Conn {
    /// Read until the end; `Some(reason)` for an end worth a line.
    fn pump(&mut self, limits: Limits) -> Option<String> {
        let start = Instant::now();
        let mut last = Instant::now();
        let mut buf = vec![0u8; READ_BUF];
        loop {
            if self.fleet.stopping.load(Ordering::Acquire) {
                return None;
            }
            match self.stream.read(&mut buf) {
                // A stream of another version says so when it ends.
                Ok(0) if self.link.is_none() && self.foreign > 0 => {
                    return Some(self.no_hello("closed without a hello"));
                }
                Ok(0) => return None,
                Ok(n) => {
                    last = Instant::now();
                    if let Err(e) = self.chunk(&buf[..n]) {
                        return e;
                    }
                    if self.detached() {
                        return None;
                    }
                }
                Err(e) if is_timeout(&e) => {
                    if let Err(e) = self.flush() {
                        return e;
                    }
                    if self.link.is_none() && start.elapsed() >= limits.hello {
                        let why = format!("no hello within {} s", limits.hello.as_secs_f64());
                        return Some(self.no_hello(&why));
                    }
                    if last.elapsed() >= limits.idle {
                        return Some(format!("idle for {} s, closed", limits.idle.as_secs()));
                    }
                    if self.detached() {
                        return self.taken_over();
                    }
                }
                Err(e) => return Some(format!("read error: {e}")),
            }
        }
    }

    /// The line for a connection that ended (`why`) without a hello.
    fn no_hello(&self, why: &str) -> String {
        let mut s = why.to_string();
        if let Some(v) = self.peek.other_version {
            s.push_str(&format!("; {}", crate::session::version_line(v)));
        } else if self.foreign > 0 {
            // frames that failed their check are damage or not latscope
            // at all; only those that passed it are of another schema
            let damaged = self.peek.damaged.min(self.foreign);
            if damaged > 0 {
                s.push_str(&format!(
                    "; not a latscope stream: {damaged} frame(s) failed their check"
                ));
            }
            if self.foreign > damaged {
                s.push_str(&format!(
                    "; {} frame(s) of another protocol version or schema (a target of another \
                     latscope version?)",
                    self.foreign - damaged
                ));
            }
        }
        if self.before_hello > 0 {
            s.push_str(&format!("; {} frame(s) before it", self.before_hello));
        }
        s
    }

    /// The line for a connection that lost its run to a newer one: a
    /// half-open connection whose target's side was reset, and that the
    /// target resumed on a new one. Nothing for a run that ended.
    fn taken_over(&self) -> Option<String> {
        let l = self.link.as_ref()?;
        let g = lock(&l.run);
        (g.session.is_some() && !g.is_gen(l.gen)).then(|| {
            format!(
                "run {:016x} resumed on a newer connection; this one closed",
                g.id
            )
        })
    }

    /// Whether a newer connection took the run over (or it ended and was
    /// retired).
    fn detached(&self) -> bool {
        self.link.as_ref().is_some_and(|l| {
            let g = lock(&l.run);
            !g.is_gen(l.gen)
        })
    }

    /// A quiet moment: make what the run wrote durable and acknowledge it.
    fn flush(&mut self) -> Result<(), Option<String>> {
        let Some(link) = &self.link else {
            return Ok(());
        };
        let mut g = lock(&link.run);
        if !g.is_gen(link.gen) || !g.dirty() {
            return Ok(());
        }
        let synced = g.sync();
        let (id, seq) = (g.id, g.durable_seq());
        drop(g);
        synced.map_err(|w| self.write_failed(w))?;
        if let Some(seq) = seq {
            self.ack_for(id, seq);
        }
        Ok(())
    }

    /// A failed write: counted; said (the run's first), and the
    /// connection closes.
    fn write_failed(&self, w: WriteFailed) -> Option<String> {
        super::targets::FleetStats::bump(&self.fleet.targets.stats.write_errors);
        w.first.then(|| {
            format!(
                "{}; not acknowledging until the recording can be written again (the target \
                 keeps what is not acknowledged, and sends it again when it reconnects)",
                w.error
            )
        })
    }

    /// One read's bytes: split, peek, attach, record, acknowledge.
    /// `Err(Some(why))` ends the connection with a line, `Err(None)`
    /// quietly.
    fn chunk(&mut self, data: &[u8]) -> Result<(), Option<String>> {
        self.bytes.clear();
        self.items.clear();
        let (bytes, items, peek) = (&mut self.bytes, &mut self.items, &mut self.peek);
        self.split.push(data, |p| {
            let start = bytes.len();
            let peeked = match p {
                Piece::Frame(seg) => {
                    bytes.push(0);
                    bytes.extend_from_slice(seg);
                    bytes.push(0);
                    peek.frame(seg)
                }
                Piece::Junk(j) => {
                    bytes.extend_from_slice(j);
                    None
                }
            };
            items.push(FrameSpan {
                range: start..bytes.len(),
                peek: peeked,
            });
        });
        let mut from = 0;
        while from < self.items.len() {
            if self.link.is_none() {
                match self.find_hello(from)? {
                    Some(next) => from = next,
                    None => return Ok(()),
                }
            }
            from = match self.take(from)? {
                Some(next) => next,
                None => break,
            };
        }
        Ok(())
    }

    /// Skip to the first hello at or after `from` and attach to its run;
    /// the index after it, or `None` if there is no hello.
    fn find_hello(&mut self, from: usize) -> Result<Option<usize>, Option<String>> {
        for i in from..self.items.len() {
            match &self.items[i].peek {
                Some(p) if matches!(p.kind, FrameRole::Hello { .. }) => {
                    let seg = &self.bytes[self.items[i].range.clone()];
                    let attached = self
                        .fleet
                        .attach(p, seg, &self.peer, &self.budget)
                        .map_err(|e| {
                            if matches!(e, crate::error::Error::Output { .. }) {
                                super::targets::FleetStats::bump(
                                    &self.fleet.targets.stats.write_errors,
                                );
                            }
                            Some(e.to_string())
                        })?;
                    let Some((link, ack)) = attached else {
                        continue;
                    };
                    self.link = Some(link);
                    if let Some(seq) = ack {
                        self.ack(seq);
                    }
                    return Ok(Some(i + 1));
                }
                Some(_) => self.before_hello += 1,
                None => self.foreign += 1,
            }
        }
        Ok(None)
    }

    /// Record items from `from` on; the index of a hello of another run
    /// that stopped it, if any.
    fn take(&mut self, from: usize) -> Result<Option<usize>, Option<String>> {
        let Some(link) = &self.link else {
            return Ok(None);
        };
        let items = &self.items[from..];
        let taken = {
            let mut g = lock(&link.run);
            g.take(link.gen, items, &self.bytes, &mut self.out)
        };
        let taken = taken.map_err(|w| self.write_failed(w))?;
        let (run, id) = (Arc::clone(&link.run), self.run_id());
        if let Some(seq) = taken.ack {
            self.ack_for(id, seq);
        }
        self.fleet.after_read(&run);
        if let Some(i) = taken.rest_from {
            // A hello of another run on the same connection.
            if let Some(link) = self.link.take() {
                self.fleet.detach(&link);
            }
            return Ok(Some(from + i));
        }
        Ok(None)
    }

    fn run_id(&self) -> u64 {
        self.link.as_ref().map(|l| lock(&l.run).id).unwrap_or(0)
    }

    fn ack(&mut self, seq: u32) {
        let id = self.run_id();
        self.ack_for(id, seq);
    }

    /// Acknowledge `seq` of run `id`. Never blocks: a target that does not
    /// read its acks (a one-way sender) just misses some, and a later ack
    /// says more anyway.
    fn ack_for(&self, id: u64, seq: u32) {
        let mut buf = [0u8; MAX_ACK_FRAME];
        if let Ok(n) = Ack::new(id, seq).encode(&mut buf) {
            let _ = crate::platform::send_nowait(&self.stream, &buf[..n]);
        }
    }
}

/// A read that timed out, or was interrupted: a read with a timeout
/// (`SO_RCVTIMEO`) is not restarted after a stop signal (signal(7)), so a
/// recorder stopped and continued (SIGSTOP, Ctrl-Z) gets `EINTR`, and its
/// connections go on.
fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}
