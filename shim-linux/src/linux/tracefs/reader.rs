//! The reader: every measured CPU's `trace_pipe_raw`, copied page by
//! page into that CPU's history, on a timer, never blocking.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use latscope_core::hist::HistogramIn;
use latscope_core::layout::Layout;
use latscope_core::ringbuf::{History, Page, PageHeader};
use latscope_core::rtla::{Stats, Unit};
use latscope_core::timerlat::{Context, Format, Grid, Pairing};
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::linux::cpu_set;

/// How often the reader empties the kernel's buffers when they fill
/// slowly. A buffer of the default size holds seconds of the board's
/// console flood (see `docs/explain.md`), so a read every 100 ms leaves it
/// nearly empty. A spike's window is in the history by the time the sender
/// explains it (which reads the CPU once more first).
pub(super) const READ_PERIOD: Duration = Duration::from_millis(100);

/// The shortest wait between reads, under a flood that fills a quarter of
/// the kernel's buffer faster than [`READ_PERIOD`].
pub(super) const MIN_READ_PERIOD: Duration = Duration::from_millis(5);

/// The wait before the next read, after one that took `pages` pages of a
/// kernel buffer of `buffer_pages`: [`READ_PERIOD`], shortened so that
/// at this rate the buffer is read when it is a quarter full (never
/// shorter than [`MIN_READ_PERIOD`]). A flood never wraps the buffer
/// while it lasts a quarter-buffer's time at least.
pub(super) fn next_wait(pages: usize, buffer_pages: usize) -> Duration {
    let quarter = (buffer_pages / 4).max(1) as u128;
    let Some(pages) = core::num::NonZeroU128::new(pages as u128) else {
        return READ_PERIOD;
    };
    let ns = READ_PERIOD.as_nanos() * quarter / pages;
    let ns = ns.clamp(MIN_READ_PERIOD.as_nanos(), READ_PERIOD.as_nanos());
    Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}

/// One measured CPU: its `trace_pipe_raw` and the pages read from it.
#[derive(Debug)]
pub(super) struct CpuTrace {
    pub(super) cpu: usize,
    /// `per_cpu/cpuN/trace_pipe_raw`, non-blocking.
    pipe: OwnedFd,
    pub(super) history: History<Vec<u8>>,
    /// `CLOCK_MONOTONIC` when the last read began that emptied the
    /// kernel's buffer: events before it are in the history.
    pub(super) recorded_to_ns: u64,
    /// Reads that failed other than with `EAGAIN`.
    pub(super) failed_reads: u64,
    /// `--timerlat`: the CPU's timerlat entries, as they are read.
    pub(super) timerlat: Option<Box<TimerlatCpu>>,
}

/// One CPU's timerlat entries, taken from each page as it is read: each
/// context's histogram, and their pairing.
#[derive(Debug, Clone)]
pub struct TimerlatCpu {
    format: Format,
    header: PageHeader,
    /// Each context's latencies, in [`Context::ALL`]'s order.
    pub hists: [HistogramIn<Box<[u64]>>; 3],
    /// Sequence numbers, losses and the IRQ-below-thread check.
    pub pairing: Pairing,
    /// Pages whose entries did not decode to the end.
    pub bad_pages: u64,
    /// Latscope invoked as `rtla`: each context's columns as rtla counts
    /// them, in [`Context::ALL`]'s order.
    pub rtla: Option<Box<RtlaColumns>>,
    /// The kernel's grid of periods, from the IRQ entries.
    grid: Grid,
    /// A period start on that grid, `CLOCK_MONOTONIC` ns (0 until an IRQ
    /// entry was read), for the measuring thread.
    pub start: Arc<AtomicU64>,
}

/// rtla's shape of a histogram column: `-E` buckets of `-b` µs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtlaShape {
    /// Buckets (`-E`).
    pub entries: usize,
    /// Bucket width, µs (`-b`).
    pub bucket_size: u64,
}

/// One CPU's three columns of rtla's histogram, counted entry by entry as
/// rtla's `timerlat_hist_update()` counts them (each latency truncated to
/// µs first), so that the text is rtla's to the digit.
#[derive(Debug, Clone)]
pub(crate) struct RtlaColumns {
    /// The shape.
    pub shape: RtlaShape,
    /// Each context's buckets and figures.
    pub cols: [(Box<[u64]>, Stats); 3],
}

impl RtlaColumns {
    fn new(shape: RtlaShape) -> RtlaColumns {
        let col = || (vec![0u64; shape.entries].into_boxed_slice(), Stats::EMPTY);
        RtlaColumns {
            shape,
            cols: [col(), col(), col()],
        }
    }

    fn add(&mut self, context: Context, latency_ns: u64) {
        let (buckets, stats) = &mut self.cols[context.index()];
        stats.add(
            buckets,
            self.shape.bucket_size,
            Unit::Micros.of_ns(latency_ns),
        );
    }
}

impl TimerlatCpu {
    /// No entries yet; histograms of `layout`.
    pub(super) fn new(
        format: Format,
        header: PageHeader,
        layout: Layout,
        rtla: Option<RtlaShape>,
        period_ns: u64,
    ) -> Option<TimerlatCpu> {
        let hist =
            || HistogramIn::with_counts(layout, vec![0u64; layout.len()].into_boxed_slice()).ok();
        Some(TimerlatCpu {
            format,
            header,
            hists: [hist()?, hist()?, hist()?],
            pairing: Pairing::new(),
            bad_pages: 0,
            rtla: rtla.map(|s| Box::new(RtlaColumns::new(s))),
            grid: Grid::new(period_ns),
            start: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Takes the timerlat entries of one page, in order.
    fn take_page(&mut self, bytes: &[u8]) {
        let Ok(page) = Page::new(self.header, bytes) else {
            self.bad_pages += 1;
            return;
        };
        let mut events = page.events();
        for raw in events.by_ref() {
            let Ok(raw) = raw else {
                self.bad_pages += 1;
                break;
            };
            if let Some(e) = self.format.entry(&raw) {
                self.pairing.take(&e);
                self.hists[e.context.index()].add(e.latency_ns);
                if let Some(r) = self.rtla.as_mut() {
                    r.add(e.context, e.latency_ns);
                }
                // every entry's time less its latency is its period's
                // start, or a little after it
                self.grid.take(e.ts_ns.saturating_sub(e.latency_ns));
                if let Some(s) = self.grid.settled() {
                    self.start.store(s, Ordering::Release);
                }
            }
        }
    }

    /// The histogram of `context`.
    pub fn hist(&self, context: Context) -> &HistogramIn<Box<[u64]>> {
        &self.hists[context.index()]
    }
}

impl CpuTrace {
    /// `open(per_cpu/cpuN/trace_pipe_raw, O_RDONLY | O_NONBLOCK)` of the
    /// instance at `dir`, and a history of `history_bytes` (whole pages
    /// of `page_size`, written through once so that they are resident).
    pub(super) fn open(
        dir: &Path,
        cpu: usize,
        header: PageHeader,
        page_size: usize,
        history_bytes: usize,
    ) -> std::io::Result<CpuTrace> {
        let pipe = rustix::fs::open(
            dir.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw")),
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let pages = history_bytes.div_ceil(page_size).max(1) + 1;
        // not zero: a zeroed allocation is mapped lazily, this one is
        // touched page by page now (and locked under mlockall)
        let store = vec![0xa5u8; pages * page_size];
        let history = History::new(store, header, page_size)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
        Ok(CpuTrace {
            cpu,
            pipe,
            history,
            recorded_to_ns: 0,
            failed_reads: 0,
            timerlat: None,
        })
    }

    /// `read(trace_pipe_raw)` page by page into the history until the
    /// kernel's buffer is empty (`EAGAIN`), at most a history's worth, or
    /// (with `past_ns`) until a page begins after that time: a spike's
    /// window is then whole in the history, and no later page pushes it
    /// out. Returns the pages read. A read never blocks: a blocked reader
    /// would have the writing CPU wake it through `irq_work`, on
    /// `PREEMPT_RT` a self-IPI and a thread.
    pub(super) fn drain(&mut self, past_ns: Option<u64>) -> usize {
        let start = super::mono_ns();
        let mut pages = 0;
        while pages <= self.history.capacity() {
            match rustix::io::read(&self.pipe, self.history.slot()) {
                Ok(0) | Err(Errno::AGAIN) => {
                    self.recorded_to_ns = start;
                    break;
                }
                Ok(n) => {
                    if let Some(t) = self.timerlat.as_mut() {
                        t.take_page(&self.history.slot()[..n]);
                    }
                    self.history.keep(n);
                    pages += 1;
                    let newest = self.history.newest_ns().unwrap_or(0);
                    if past_ns.is_some_and(|p| newest > p) {
                        // what came before this page is read
                        self.recorded_to_ns = self.recorded_to_ns.max(newest);
                        break;
                    }
                }
                Err(Errno::INTR) => {}
                Err(_) => {
                    self.failed_reads += 1;
                    break;
                }
            }
        }
        pages
    }
}

/// What the reader and the sender share.
#[derive(Debug)]
pub(super) struct Shared {
    /// Each measured CPU, and its trace.
    cpus: Vec<(usize, Mutex<CpuTrace>)>,
    stop: AtomicBool,
    /// The reader thread's CPU time, nanoseconds.
    pub(super) cpu_ns: AtomicU64,
    /// Pages of each CPU's kernel buffer.
    buffer_pages: usize,
}

impl Shared {
    pub(super) fn new(cpus: Vec<CpuTrace>, buffer_pages: usize) -> Shared {
        Shared {
            buffer_pages,
            cpus: cpus.into_iter().map(|t| (t.cpu, Mutex::new(t))).collect(),
            stop: AtomicBool::new(false),
            cpu_ns: AtomicU64::new(0),
        }
    }

    /// The trace of measured CPU `cpu`, locked (the reader holds it only
    /// while it drains that CPU).
    pub(super) fn lock(&self, cpu: usize) -> Option<MutexGuard<'_, CpuTrace>> {
        let (_, m) = self.cpus.iter().find(|(c, _)| *c == cpu)?;
        Some(m.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Every measured CPU's trace, one at a time.
    pub(super) fn each(&self, mut f: impl FnMut(&mut CpuTrace)) {
        for (_, m) in &self.cpus {
            f(&mut m.lock().unwrap_or_else(PoisonError::into_inner));
        }
    }
}

/// Starts the reader thread (`latscope-trace`, `SCHED_OTHER`) on `run_on`
/// (the CPUs not measured; empty: wherever the scheduler puts it). It
/// drains every CPU each [`READ_PERIOD`], or sooner under a flood
/// ([`next_wait`]), until [`stop`].
pub(super) fn spawn(shared: Arc<Shared>, run_on: Vec<usize>) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("latscope-trace".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            if !run_on.is_empty() {
                let _ = rustix::thread::sched_setaffinity(None, &cpu_set(&run_on));
            }
            while !shared.stop.load(Ordering::Acquire) {
                let mut most = 0;
                shared.each(|t| most = most.max(t.drain(None)));
                let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
                let ns = u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000
                    + u64::try_from(t.tv_nsec).unwrap_or(0);
                shared.cpu_ns.store(ns, Ordering::Relaxed);
                std::thread::park_timeout(next_wait(most, shared.buffer_pages));
            }
        })
}

/// Stops the reader thread and waits for it.
pub(super) fn stop(shared: &Shared, reader: JoinHandle<()>) {
    shared.stop.store(true, Ordering::Release);
    reader.thread().unpark();
    let _ = reader.join();
}
