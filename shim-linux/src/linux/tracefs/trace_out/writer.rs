//! The writer thread of `--trace-out DIR`: each window's trace.dat and
//! sidecar, written from a bounded queue; what it cannot write counted.

use std::collections::VecDeque;
use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use latscope_core::cyclictest::WindowCounts;
use latscope_core::ringbuf::{Page, PageHeader};
use latscope_core::tracedat::{CpuData, Format, Header, Layout};

use super::{DatHeader, Evidence, Written};
use crate::linux::cpu_set;

/// Windows queued for the writer at most; one more is counted as
/// `queue_full`.
pub(super) const QUEUE: usize = 4;

/// What the writer and the sender count, by reason.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) written: AtomicU64,
    pub(super) bytes: AtomicU64,
    pub(super) limit: AtomicU64,
    pub(super) queue_full: AtomicU64,
    pub(super) disk_full: AtomicU64,
    pub(super) failed: AtomicU64,
    pub(super) streamed: AtomicU64,
    pub(super) not_streamed: AtomicU64,
    pub(super) files: Mutex<Vec<Written>>,
}

impl Counters {
    pub(super) fn counts(&self) -> WindowCounts {
        let n = |a: &AtomicU64| a.load(Ordering::Acquire);
        WindowCounts {
            written: n(&self.written),
            bytes: n(&self.bytes),
            limit: n(&self.limit),
            queue_full: n(&self.queue_full),
            disk_full: n(&self.disk_full),
            failed: n(&self.failed),
            streamed: n(&self.streamed),
            not_streamed: n(&self.not_streamed),
        }
    }

    pub(super) fn add(&self, counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::AcqRel);
    }

    pub(super) fn take_files(&self) -> Vec<Written> {
        std::mem::take(&mut *self.files.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// A window built into its file's bytes, to be written.
#[derive(Debug)]
pub(super) struct Built {
    /// Who, where and when (its pages moved into `file`).
    pub(super) evidence: Evidence,
    /// The trace.dat.
    pub(super) file: Arc<Vec<u8>>,
    /// The trace clock's name, for the sidecar.
    pub(super) clock: String,
}

/// The writer's queue: at most [`QUEUE`] windows, and whether the sender
/// is done with it.
#[derive(Debug, Default)]
pub(super) struct Queue {
    items: Mutex<(VecDeque<Built>, bool)>,
    ready: Condvar,
}

impl Queue {
    /// Queues `b`; gives it back if the queue is full. Never waits.
    pub(super) fn push(&self, b: Built) -> Result<(), Built> {
        let mut q = self.items.lock().unwrap_or_else(PoisonError::into_inner);
        if q.0.len() >= QUEUE {
            return Err(b);
        }
        q.0.push_back(b);
        self.ready.notify_one();
        Ok(())
    }

    /// No more windows come: the writer ends once the queue is empty.
    pub(super) fn close(&self) {
        self.items.lock().unwrap_or_else(PoisonError::into_inner).1 = true;
        self.ready.notify_one();
    }

    /// The next window, waiting for one; `None` once closed and empty.
    fn pop(&self) -> Option<Built> {
        let mut q = self.items.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(b) = q.0.pop_front() {
                return Some(b);
            }
            if q.1 {
                return None;
            }
            q = self.ready.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Starts the writer (`latscope-out`, `SCHED_OTHER`, on `run_on`: the CPUs
/// not measured) of files into `dir`; the queue to it.
pub(super) fn spawn(
    dir: PathBuf,
    run_on: Vec<usize>,
    counters: Arc<Counters>,
) -> io::Result<(Arc<Queue>, JoinHandle<()>)> {
    let queue = Arc::new(Queue::default());
    let from = Arc::clone(&queue);
    let writer = std::thread::Builder::new()
        .name("latscope-out".into())
        .spawn(move || {
            if !run_on.is_empty() {
                let _ = rustix::thread::sched_setaffinity(None, &cpu_set(&run_on));
            }
            while let Some(b) = from.pop() {
                write_one(&dir, &counters, &b);
            }
        })?;
    Ok((queue, writer))
}

/// The trace.dat of `e` (this kernel's header `h`, the pids of its events
/// named from `saved_cmdlines` now), or `None` if it cannot be laid out.
pub(super) fn build(h: &DatHeader, e: &Evidence) -> Option<Vec<u8>> {
    let all = fs::read_to_string(h.root.join("saved_cmdlines")).unwrap_or_default();
    let cmdlines = cmdlines_of(&all, &pids_of(h, &e.pages));
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
        cpus: h.cpus.max(e.head.cpu + 1),
    };
    let data = [CpuData {
        cpu: e.head.cpu,
        pages: &e.pages,
    }];
    let layout = Layout::new(header, &data).ok()?;
    let mut file = Vec::with_capacity(usize::try_from(layout.size()).ok()?);
    layout
        .write(&mut |b: &[u8]| {
            file.extend_from_slice(b);
            Ok::<(), ()>(())
        })
        .ok()?;
    Some(file)
}

/// The pids that were current in the events of `pages` (`common_pid`,
/// where every kernel puts it: bytes 4 to 8 of the payload).
fn pids_of(h: &DatHeader, pages: &[u8]) -> Vec<u32> {
    let mut pids = Vec::new();
    let Ok(header) = PageHeader::parse(&h.header_page) else {
        return pids;
    };
    for p in pages.chunks(h.page_size.max(1) as usize) {
        let Ok(page) = Page::new(header, p) else {
            continue;
        };
        for raw in page.events().map_while(Result::ok) {
            if let Some(b) = raw.payload.get(4..8) {
                let pid = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                // a window's tasks are few: a list, not a set
                if !pids.contains(&pid) {
                    pids.push(pid);
                }
            }
        }
    }
    pids
}

/// The lines of `saved_cmdlines` (`PID COMM`) of `pids`: a machine keeps
/// thousands, a window needs the few that ran in it.
fn cmdlines_of(all: &str, pids: &[u32]) -> String {
    all.lines()
        .filter(|l| {
            l.split_whitespace()
                .next()
                .and_then(|p| p.parse::<u32>().ok())
                .is_some_and(|p| pids.contains(&p))
        })
        .flat_map(|l| [l, "\n"])
        .collect()
}

/// Writes `b` as `DIR/STEM.dat` and `DIR/STEM.json`; counts what
/// happened. A file not wholly written is removed.
fn write_one(dir: &Path, c: &Counters, b: &Built) {
    let e = &b.evidence;
    let stem = e.head.stem().to_string();
    let dat = dir.join(format!("{stem}.dat"));
    let json = dir.join(format!("{stem}.json"));
    let result = write_file(&dat, &b.file).and_then(|()| fs::write(&json, e.sidecar(&b.clock)));
    match result {
        Ok(()) => {
            c.add(&c.written);
            c.bytes.fetch_add(b.file.len() as u64, Ordering::AcqRel);
            c.files
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Written {
                    name: format!("{stem}.dat"),
                    thread: e.head.thread,
                    cycle: e.head.cycle,
                    latency_ns: e.head.latency_ns(),
                });
        }
        Err(err) => {
            let _ = fs::remove_file(&dat);
            let _ = fs::remove_file(&json);
            let full = matches!(
                err.raw_os_error(),
                Some(n) if n == rustix::io::Errno::NOSPC.raw_os_error()
                    || n == rustix::io::Errno::DQUOT.raw_os_error()
            );
            c.add(if full { &c.disk_full } else { &c.failed });
        }
    }
}

/// `open(O_CREAT | O_TRUNC)` and `write(2)` of the whole file.
fn write_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = fs::File::create(path)?;
    f.write_all(bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_pids_of_the_window_are_named() {
        let all = "1 systemd\n7 kthreadd\n42 latscope-rt\n420 other\n";
        assert_eq!(cmdlines_of(all, &[1, 42]), "1 systemd\n42 latscope-rt\n");
        assert_eq!(cmdlines_of(all, &[]), "");
    }
}
