//! A spike's evidence: the window of each measuring thread's worst
//! explained spike of a report interval, as a trace.dat (version 6) that
//! `trace-cmd report` and KernelShark open.
//!
//! * `--trace-out DIR` writes it with a sidecar JSON naming the spike. A
//!   writer thread of its own writes them, from a bounded queue, so a slow
//!   disk never delays a report or touches a measuring thread.
//! * `--trace-out-stream` sends it on the stream, an [`EvidenceHead`] and
//!   parts, within the line's evidence share, from a bounded outbox.
//!
//! What cannot be written or sent is counted, by reason, and the run goes
//! on.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

use latscope_core::cyclictest::WindowCounts;
use latscope_core::wire::{Body, EvidenceHead};

mod outbox;
mod writer;

use outbox::Outbox;
use writer::{Built, Counters, Queue};

/// How far before the deadline a window begins. The classifier reads
/// from the page before the deadline's anyway (what ran before it names
/// the tasks); this is what a reader of the file sees leading up to it.
pub const LEAD_NS: u64 = 1_000_000;

/// Bytes of one window's pages at most (the newest kept): 256 pages of
/// 4 KiB, 16 of 64 KiB. A recorder takes a window of up to twice this
/// with its formats.
pub const MAX_WINDOW_BYTES: usize = 1 << 20;

/// `--trace-out`'s default limit on files.
pub const DEFAULT_FILES: u32 = 100;

/// `--trace-out`'s default limit on bytes (the trace.dat files together).
pub const DEFAULT_BYTES: u64 = 256 << 20;

/// What every file of a run says before its pages: this kernel's formats,
/// read once when the trace instance is made.
#[derive(Debug, Clone, Default)]
pub struct DatHeader {
    /// Bytes of a long in latscope's user space (4 on armv7).
    pub long_size: u8,
    /// The kernel's page size.
    pub page_size: u32,
    /// `events/header_page`.
    pub header_page: String,
    /// `events/header_event`.
    pub header_event: String,
    /// Each traced event's system and `format` text.
    pub formats: Vec<(String, String)>,
    /// The instance's `trace_clock` text.
    pub trace_clock: String,
    /// CPUs of the machine (the highest, plus one).
    pub cpus: u32,
    /// The tracefs root, whose `saved_cmdlines` names the pids.
    pub root: PathBuf,
}

/// One spike's evidence: who, where and when (the head of its frames on
/// the stream, its size set once built), and its window's pages.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// The spike.
    pub head: EvidenceHead,
    /// Whole pages of the CPU, oldest first.
    pub pages: Vec<u8>,
}

impl Evidence {
    /// The sidecar: who, where and when.
    pub(super) fn sidecar(&self, clock: &str) -> String {
        let mut s = String::new();
        // a String takes every write
        let _ = self.head.write_sidecar(&mut s, clock);
        s
    }
}

/// A file written: its name and the spike it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The trace.dat's name in the directory.
    pub name: String,
    /// The spike's measuring thread.
    pub thread: u16,
    /// The spike's cycle.
    pub cycle: u64,
    /// The spike's latency.
    pub latency_ns: u64,
}

/// What `--trace-out` did: the directory, the counts and the files.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    /// The directory, as given (empty: none, only the stream).
    pub dir: String,
    /// Written and not, by reason.
    pub counts: WindowCounts,
    /// The files written, in order.
    pub files: Vec<Written>,
}

/// The limits of a run's windows, written or streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Windows at most.
    pub files: u32,
    /// Bytes of their trace.dat files at most.
    pub bytes: u64,
}

/// `mkdir(DIR, 0755)`; one that exists already is fine (its parent must).
fn make_dir(dir: &str) -> io::Result<()> {
    match rustix::fs::mkdir(dir, rustix::fs::Mode::from_raw_mode(0o755)) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Where a run's evidence goes: a directory, the stream, or both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outputs {
    /// `--trace-out DIR`.
    pub dir: Option<String>,
    /// `--trace-out-stream`.
    pub stream: bool,
}

/// The sender's side: each thread's worst evidence of the interval so
/// far, the writer's queue, the stream's outbox, and the counts.
#[derive(Debug)]
pub struct TraceOut {
    outputs: Outputs,
    limits: Limits,
    header: DatHeader,
    queue: Option<Arc<Queue>>,
    writer: Option<JoinHandle<()>>,
    counters: Arc<Counters>,
    outbox: Outbox,
    /// Per thread: the interval's worst evidence so far.
    worst: Vec<Option<Evidence>>,
    /// Per thread: a spike of the interval was explained once the limit on
    /// windows was reached (its evidence is counted, never copied).
    over: Vec<bool>,
    /// Windows taken (written or streamed), and their bytes.
    taken: u64,
    taken_bytes: u64,
}

impl TraceOut {
    /// `mkdir DIR` (its parent must exist) and the writer thread (`latscope-out`,
    /// `SCHED_OTHER`, on `run_on`: the CPUs not measured) where there is
    /// a directory, for `threads` measuring threads.
    ///
    /// # Errors
    ///
    /// The directory's or the thread's error.
    pub fn start(
        outputs: Outputs,
        limits: Limits,
        header: DatHeader,
        run_on: Vec<usize>,
        threads: usize,
    ) -> io::Result<TraceOut> {
        let counters = Arc::new(Counters::default());
        let (queue, writer) = match &outputs.dir {
            Some(dir) => {
                make_dir(dir)?;
                let (tx, w) = writer::spawn(PathBuf::from(dir), run_on, Arc::clone(&counters))?;
                (Some(tx), Some(w))
            }
            None => (None, None),
        };
        Ok(TraceOut {
            outputs,
            limits,
            header,
            queue,
            writer,
            counters,
            outbox: Outbox::default(),
            worst: vec![None; threads],
            over: vec![false; threads],
            taken: 0,
            taken_bytes: 0,
        })
    }

    /// Whether a spike of `latency_ns` of thread `t` is worse than its
    /// worst evidence of the interval so far, and may still be taken.
    /// Once the limit on windows is reached it never is, and the
    /// interval's evidence is counted as over the limit at its report.
    pub fn wants(&mut self, t: usize, latency_ns: u64) -> bool {
        if self.taken >= u64::from(self.limits.files) {
            if let Some(o) = self.over.get_mut(t) {
                *o = true;
            }
            return false;
        }
        self.worst
            .get(t)
            .is_some_and(|w| w.as_ref().is_none_or(|w| w.head.latency_ns() < latency_ns))
    }

    /// Keeps `e` as thread `t`'s worst evidence of the interval (see
    /// [`TraceOut::wants`]).
    pub fn keep(&mut self, t: usize, e: Evidence) {
        if let Some(slot) = self.worst.get_mut(t) {
            *slot = Some(e);
        }
    }

    /// The report of thread `t`: its worst evidence of the interval,
    /// built into its trace.dat, goes to the writer and the outbox, or is
    /// counted as not written (not streamed).
    pub fn flush(&mut self, t: usize) {
        let c = &self.counters;
        if self.over.get_mut(t).is_some_and(std::mem::take) {
            c.add(&c.limit);
        }
        let Some(mut e) = self.worst.get_mut(t).and_then(Option::take) else {
            return;
        };
        if self.taken >= u64::from(self.limits.files) {
            c.add(&c.limit);
            return;
        }
        let Some(file) = writer::build(&self.header, &e) else {
            c.add(&c.failed);
            return;
        };
        if self.taken_bytes + file.len() as u64 > self.limits.bytes {
            c.add(&c.limit);
            return;
        }
        self.taken += 1;
        self.taken_bytes += file.len() as u64;
        e.pages = Vec::new();
        let file = Arc::new(file);
        e.head.size = u32::try_from(file.len()).unwrap_or(u32::MAX);
        if self.outputs.stream && !self.outbox.push(e.head, Arc::clone(&file)) {
            c.add(&c.not_streamed);
        }
        if let Some(queue) = &self.queue {
            let clock = latscope_core::tracedat::clock_in(&self.header.trace_clock)
                .unwrap_or("unknown")
                .to_string();
            let built = Built {
                evidence: e,
                file,
                clock,
            };
            if queue.push(built).is_err() {
                c.add(&c.queue_full);
            }
        }
    }

    /// Whether a window waits to be streamed.
    pub fn streaming(&self) -> bool {
        !self.outbox.is_empty()
    }

    /// The next frame of the windows being streamed, if any.
    pub fn next_frame(&mut self) -> Option<Body> {
        let (body, done) = self.outbox.next()?;
        if done {
            self.counters.add(&self.counters.streamed);
        }
        Some(body)
    }

    /// Flushes every thread, counts what the stream did not carry, lets
    /// the writer finish, and says what it all did.
    pub fn close(mut self) -> Totals {
        for t in 0..self.worst.len() {
            self.flush(t);
        }
        let left = self.outbox.clear() as u64;
        self.counters
            .not_streamed
            .fetch_add(left, std::sync::atomic::Ordering::AcqRel);
        if let Some(q) = self.queue.take() {
            q.close();
        }
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
        Totals {
            dir: self.outputs.dir.clone().unwrap_or_default(),
            counts: self.counters.counts(),
            files: self.counters.take_files(),
        }
    }
}
