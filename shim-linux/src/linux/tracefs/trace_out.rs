//! `--trace-out DIR`: the window of each measuring thread's worst
//! explained spike of a report interval, as a trace.dat (version 6) that
//! `trace-cmd report` and KernelShark open, with a sidecar JSON naming
//! the spike. A writer thread of its own writes them, from a bounded
//! queue, so a slow disk never delays a report or touches a measuring
//! thread; what it cannot write is counted, by reason, and the run goes
//! on.

use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use latscope_core::cyclictest::WindowCounts;
use latscope_core::tracedat::{CpuData, Format, Header, Layout};

use crate::linux::cpu_set;

/// Windows queued for the writer at most; one more is counted as
/// `queue_full`.
const QUEUE: usize = 4;

/// How far before the deadline a window begins. The classifier reads
/// from the page before the deadline's anyway (what ran before it names
/// the tasks); this is what a reader of the file sees leading up to it.
pub const LEAD_NS: u64 = 1_000_000;

/// Pages of one window at most (the newest kept): 1 MiB of 4 KiB pages.
pub const MAX_PAGES: usize = 256;

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

/// One spike's evidence: its window's pages, to be written.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// Measuring thread (`-t` order).
    pub thread: usize,
    /// Its kernel thread id (0: unknown).
    pub tid: u32,
    /// The CPU it ran on.
    pub cpu: u32,
    /// The sample's cycle.
    pub cycle: u64,
    /// Deadline and wake-up, `CLOCK_MONOTONIC` (the trace's `mono`).
    pub deadline_ns: u64,
    /// Wake-up.
    pub wake_ns: u64,
    /// When the reader last found the kernel's buffer empty.
    pub recorded_to_ns: u64,
    /// Whole pages of the CPU, oldest first.
    pub pages: Vec<u8>,
}

impl Evidence {
    /// The file's name without its extension:
    /// `latscope-t0-cpu1-c12345`.
    pub fn stem(&self) -> String {
        format!("latscope-t{}-cpu{}-c{}", self.thread, self.cpu, self.cycle)
    }

    fn latency_ns(&self) -> u64 {
        self.wake_ns.saturating_sub(self.deadline_ns)
    }

    /// The sidecar: who, where and when.
    fn sidecar(&self, clock: &str) -> String {
        format!(
            "{{\"thread\": {}, \"tid\": {}, \"cpu\": {}, \"cycle\": {}, \"deadline_ns\": {}, \
             \"wake_ns\": {}, \"latency_ns\": {}, \"recorded_to_ns\": {}, \"trace_clock\": \"{}\"}}\n",
            self.thread,
            self.tid,
            self.cpu,
            self.cycle,
            self.deadline_ns,
            self.wake_ns,
            self.latency_ns(),
            self.recorded_to_ns,
            clock
        )
    }
}

/// A file written: its name and the spike it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The trace.dat's name in the directory.
    pub name: String,
    /// Its size.
    pub bytes: u64,
    /// Measuring thread, cycle and latency of the spike.
    pub thread: usize,
    /// The spike's cycle.
    pub cycle: u64,
    /// The spike's latency.
    pub latency_ns: u64,
}

/// What the writer and the sender share.
#[derive(Debug, Default)]
struct Counters {
    written: AtomicU64,
    bytes: AtomicU64,
    limit: AtomicU64,
    queue_full: AtomicU64,
    disk_full: AtomicU64,
    failed: AtomicU64,
    files: Mutex<Vec<Written>>,
}

impl Counters {
    fn counts(&self) -> WindowCounts {
        let n = |a: &AtomicU64| a.load(Ordering::Acquire);
        WindowCounts {
            written: n(&self.written),
            bytes: n(&self.bytes),
            limit: n(&self.limit),
            queue_full: n(&self.queue_full),
            disk_full: n(&self.disk_full),
            failed: n(&self.failed),
        }
    }
}

/// What `--trace-out` did: the directory, the counts and the files.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    /// The directory, as given.
    pub dir: String,
    /// Written and not, by reason.
    pub counts: WindowCounts,
    /// The files written, in order.
    pub files: Vec<Written>,
}

/// The limits of a run's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Files at most.
    pub files: u32,
    /// Bytes of trace.dat files at most.
    pub bytes: u64,
}

/// The sender's side: each thread's worst window of the interval so far,
/// the queue, and the counts.
#[derive(Debug)]
pub struct TraceOut {
    dir: String,
    limits: Limits,
    tx: Option<SyncSender<Evidence>>,
    writer: Option<JoinHandle<()>>,
    counters: Arc<Counters>,
    /// Per thread: the interval's worst evidence so far.
    worst: Vec<Option<Evidence>>,
    /// Per thread: a spike of the interval was explained once the file
    /// limit was reached (its evidence is counted, never copied).
    over: Vec<bool>,
    /// Windows handed to the writer.
    queued: u64,
}

impl TraceOut {
    /// `mkdir -p DIR` and the writer thread (`latscope-out`,
    /// `SCHED_OTHER`, on `run_on`: the CPUs not measured), for `threads`
    /// measuring threads.
    ///
    /// # Errors
    ///
    /// The directory's or the thread's error.
    pub fn start(
        dir: &str,
        limits: Limits,
        header: DatHeader,
        run_on: Vec<usize>,
        threads: usize,
    ) -> io::Result<TraceOut> {
        fs::create_dir_all(dir)?;
        let (tx, rx) = mpsc::sync_channel::<Evidence>(QUEUE);
        let counters = Arc::new(Counters::default());
        let shared = Arc::clone(&counters);
        let path = PathBuf::from(dir);
        let writer = std::thread::Builder::new()
            .name("latscope-out".into())
            .spawn(move || {
                if !run_on.is_empty() {
                    let _ = rustix::thread::sched_setaffinity(None, &cpu_set(&run_on));
                }
                for w in rx {
                    write_one(&path, &header, limits, &shared, &w);
                }
            })?;
        Ok(TraceOut {
            dir: dir.to_string(),
            limits,
            tx: Some(tx),
            writer: Some(writer),
            counters,
            worst: vec![None; threads],
            over: vec![false; threads],
            queued: 0,
        })
    }

    /// Whether a spike of `latency_ns` of thread `t` is worse than its
    /// worst evidence of the interval so far, and may still be written.
    /// Once the file limit is reached it never is, and the interval's
    /// evidence is counted as over the limit at its report.
    pub fn wants(&mut self, t: usize, latency_ns: u64) -> bool {
        if self.queued >= u64::from(self.limits.files) {
            if let Some(o) = self.over.get_mut(t) {
                *o = true;
            }
            return false;
        }
        self.worst
            .get(t)
            .is_some_and(|w| w.as_ref().is_none_or(|w| w.latency_ns() < latency_ns))
    }

    /// Keeps `e` as thread `t`'s worst evidence of the interval (see
    /// [`TraceOut::wants`]).
    pub fn keep(&mut self, t: usize, e: Evidence) {
        if let Some(slot) = self.worst.get_mut(t) {
            *slot = Some(e);
        }
    }

    /// The report of thread `t`: its worst window of the interval goes to
    /// the writer, or is counted as not written.
    pub fn flush(&mut self, t: usize) {
        if self.over.get_mut(t).is_some_and(std::mem::take) {
            self.counters.limit.fetch_add(1, Ordering::AcqRel);
        }
        let Some(w) = self.worst.get_mut(t).and_then(Option::take) else {
            return;
        };
        if self.queued >= u64::from(self.limits.files) {
            self.counters.limit.fetch_add(1, Ordering::AcqRel);
            return;
        }
        let Some(tx) = &self.tx else { return };
        match tx.try_send(w) {
            Ok(()) => self.queued += 1,
            Err(TrySendError::Full(_)) => {
                self.counters.queue_full.fetch_add(1, Ordering::AcqRel);
            }
            Err(TrySendError::Disconnected(_)) => {
                self.counters.failed.fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    /// Flushes every thread, lets the writer finish, and says what it did.
    pub fn close(mut self) -> Totals {
        for t in 0..self.worst.len() {
            self.flush(t);
        }
        drop(self.tx.take());
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
        let files = std::mem::take(
            &mut *self
                .counters
                .files
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        Totals {
            dir: self.dir.clone(),
            counts: self.counters.counts(),
            files,
        }
    }
}

/// Writes `w` as `DIR/STEM.dat` and `DIR/STEM.json`, within the limits;
/// counts what happened. A file not wholly written is removed.
fn write_one(dir: &Path, h: &DatHeader, limits: Limits, c: &Counters, w: &Evidence) {
    let cmdlines = fs::read_to_string(h.root.join("saved_cmdlines")).unwrap_or_default();
    let formats: Vec<Format<'_>> = h
        .formats
        .iter()
        .map(|(system, text)| Format { system, text })
        .collect();
    let header = Header {
        long_size: h.long_size,
        page_size: h.page_size,
        header_page: &h.header_page,
        header_event: &h.header_event,
        formats: &formats,
        cmdlines: &cmdlines,
        trace_clock: &h.trace_clock,
        cpus: h.cpus.max(w.cpu + 1),
    };
    let data = [CpuData {
        cpu: w.cpu,
        pages: &w.pages,
    }];
    let Ok(layout) = Layout::new(header, &data) else {
        c.failed.fetch_add(1, Ordering::AcqRel);
        return;
    };
    let size = layout.size();
    if c.bytes.load(Ordering::Acquire) + size > limits.bytes {
        c.limit.fetch_add(1, Ordering::AcqRel);
        return;
    }
    let stem = w.stem();
    let dat = dir.join(format!("{stem}.dat"));
    let json = dir.join(format!("{stem}.json"));
    let result = write_dat(&dat, &layout).and_then(|()| {
        let clock = clock_name(&h.trace_clock);
        fs::write(&json, w.sidecar(clock))
    });
    match result {
        Ok(()) => {
            c.written.fetch_add(1, Ordering::AcqRel);
            c.bytes.fetch_add(size, Ordering::AcqRel);
            c.files
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Written {
                    name: format!("{stem}.dat"),
                    bytes: size,
                    thread: w.thread,
                    cycle: w.cycle,
                    latency_ns: w.latency_ns(),
                });
        }
        Err(e) => {
            let _ = fs::remove_file(&dat);
            let _ = fs::remove_file(&json);
            let full = matches!(
                e.raw_os_error(),
                Some(n) if n == rustix::io::Errno::NOSPC.raw_os_error()
                    || n == rustix::io::Errno::DQUOT.raw_os_error()
            );
            let counter = if full { &c.disk_full } else { &c.failed };
            counter.fetch_add(1, Ordering::AcqRel);
        }
    }
}

/// `open(O_CREAT | O_TRUNC)` and `write(2)` of the whole trace.dat.
fn write_dat(path: &Path, layout: &Layout<'_>) -> io::Result<()> {
    let mut f = io::BufWriter::with_capacity(64 * 1024, fs::File::create(path)?);
    layout.write(&mut |b: &[u8]| f.write_all(b))?;
    f.into_inner().map_err(io::IntoInnerError::into_error)?;
    Ok(())
}

/// The bracketed name of a `trace_clock` text (`mono`), or `unknown`.
fn clock_name(text: &str) -> &str {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
        .unwrap_or("unknown")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_is_the_bracketed_name() {
        assert_eq!(clock_name("local global [mono] boot\n"), "mono");
        assert_eq!(clock_name("local global"), "unknown");
    }
}
