//! The per-process trace: its instance, its reader, and spikes explained
//! from each measured CPU's history.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use latscope_core::cyclictest::{TraceTotals, Wakeups};
use latscope_core::explain::{Attribution, Classifier, Loss, Window};
use latscope_core::layout::Layout;
use latscope_core::ringbuf::Decoder;
use latscope_core::timerlat::Format;
use latscope_core::wire::EvidenceHead;
use rustix::io::Errno;

use super::instance::Instance;
use super::reader::{self, CpuTrace, RtlaShape, Shared, TimerlatCpu};
use super::trace_out::{DatHeader, Evidence, LEAD_NS, MAX_WINDOW_BYTES};
use super::{DEFAULT_BUFFER_KB, MIN_BUFFER_KB};
use crate::error::Error;
use crate::linux::available_cpus;

/// The kernel buffer of each measured CPU, in KiB: `asked`
/// (`--trace-buffer-size`), else [`DEFAULT_BUFFER_KB`] capped so that
/// the kernel's buffers and latscope's history (twice as large) of every
/// measured CPU take at most 3/64 of `mem_total_kb` together; never below
/// [`MIN_BUFFER_KB`].
pub fn buffer_kb(asked: Option<u32>, mem_total_kb: Option<u64>, cpus: usize) -> u32 {
    if let Some(kb) = asked {
        return kb.max(MIN_BUFFER_KB);
    }
    let cap = mem_total_kb.map_or(u64::MAX, |m| m / 64 / cpus.max(1) as u64);
    u32::try_from(u64::from(DEFAULT_BUFFER_KB).min(cap))
        .unwrap_or(DEFAULT_BUFFER_KB)
        .max(MIN_BUFFER_KB)
}

/// The per-process trace instance `instances/latscope-PID`, read
/// continuously.
///
/// Created by [`Tracer::open`], which starts the reader thread; spikes are
/// explained by [`Tracer::explain`] on the non-RT sender thread; closed
/// by [`Tracer::close`] or on drop, which stops the reader and removes
/// the instance. After a crash the next start removes the leftover.
#[derive(Debug)]
pub struct Tracer {
    // dropped in this order: the reader's files before the instance
    reader: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
    instance: Instance,
    decoder: Box<Decoder>,
    threshold_ns: u64,
    /// The kernel buffer per CPU asked for, and set.
    asked_kb: u32,
    buffer_kb: u32,
    wakeups: Wakeups,
    /// What a trace.dat of a window says before its pages.
    dat: DatHeader,
    /// The CPUs not traced, where the reader runs.
    untraced: Vec<usize>,
}

impl Tracer {
    /// `mkdir instances/latscope-PID`—creates this process's trace
    /// instance for `cpus` with `buffer_kb` KiB per CPU (less on
    /// `ENOMEM`), a history of as much per CPU in memory, and starts the
    /// reader on the CPUs not measured. `threshold_ns` is the `--explain`
    /// threshold: [`Tracer::explain`] returns an empty attribution below
    /// it. `root` is the tracefs to use (see [`super::Tracefs`]).
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] with the step's error: an empty CPU list, no
    /// `mono` trace clock or none of the events, no root, ... On error
    /// nothing is left behind.
    pub fn open(
        root: &Path,
        cpus: &[usize],
        threshold_ns: u64,
        buffer_kb: u32,
    ) -> Result<Tracer, Error> {
        Self::open_at(root, cpus, Some(threshold_ns), buffer_kb, None)
            .map_err(|e| Error::Unavailable(e.to_string()))
    }

    /// `--timerlat`: [`Tracer::open`] with the instance's tracer set to
    /// `timerlat`, each CPU's timerlat entries taken into histograms of
    /// `layout` (and, invoked as `rtla`, into rtla's columns of `rtla`'s
    /// shape) as its pages are read ([`Tracer::timerlat`]), and the
    /// classifier's events recorded only with `explain_ns` (`--explain`).
    /// The global settings must be set before ([`crate::linux::timerlat`]).
    ///
    /// # Errors
    ///
    /// As [`Tracer::open`]; also a kernel whose timerlat format does not
    /// read, or that refuses the tracer.
    pub fn open_timerlat(
        root: &Path,
        cpus: &[usize],
        explain_ns: Option<u64>,
        buffer_kb: u32,
        layout: Layout,
        rtla: Option<RtlaShape>,
        period_ns: u64,
    ) -> Result<Tracer, Error> {
        Self::open_at(
            root,
            cpus,
            explain_ns,
            buffer_kb,
            Some((layout, rtla, period_ns)),
        )
        .map_err(|e| Error::Unavailable(format!("--timerlat: {e}")))
    }

    /// [`Tracer::open`] with the error of the step that failed: the
    /// classifier's events with `explain_ns`, the timerlat tracer with
    /// `timerlat`.
    pub(super) fn open_at(
        root: &Path,
        cpus: &[usize],
        explain_ns: Option<u64>,
        buffer_kb: u32,
        timerlat: Option<(Layout, Option<RtlaShape>, u64)>,
    ) -> io::Result<Tracer> {
        if cpus.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "no CPUs to trace",
            ));
        }
        // On error `instance` is dropped last, which removes it.
        let mut instance = Instance::create(root)?;
        let enabled = instance.arm(cpus, explain_ns.is_some())?;
        if timerlat.is_some() {
            // before any trace_pipe_raw is open: the kernel refuses to
            // change the tracer of an instance being read (EBUSY)
            instance.write("current_tracer", "timerlat")?;
        }
        let set_kb = instance.size_buffers(cpus, buffer_kb)?;
        let (header, decoder) = instance.decoder(&enabled)?;
        let machine_cpus = available_cpus().into_iter().max().map_or(1, |c| c + 1);
        let dat = instance.dat_header(root, &enabled, u32::try_from(machine_cpus).unwrap_or(1))?;
        let page = rustix::param::page_size();
        // twice the kernel's buffer: a read of a full buffer still leaves
        // as much history before it
        let buffer = usize::try_from(set_kb).unwrap_or(0) * 1024;
        let history = 2 * buffer;
        let mut traces = Vec::with_capacity(cpus.len());
        let timerlat_format = match timerlat {
            Some(_) => Some(
                Format::parse(&instance.read_once("events/ftrace/timerlat/format")?)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?,
            ),
            None => None,
        };
        for &c in cpus {
            let mut t = CpuTrace::open(instance.dir(), c, header, page, history)?;
            if let (Some(format), Some((layout, rtla, period))) = (timerlat_format, timerlat) {
                t.timerlat = TimerlatCpu::new(format, header, layout, rtla, period).map(Box::new);
            }
            traces.push(t);
        }
        instance.write("tracing_on", "1")?;
        let shared = Arc::new(Shared::new(traces, buffer / page));
        let run_on: Vec<usize> = available_cpus()
            .into_iter()
            .filter(|c| !cpus.contains(c))
            .collect();
        let reader = reader::spawn(Arc::clone(&shared), run_on.clone())?;
        Ok(Tracer {
            reader: Some(reader),
            shared,
            instance,
            decoder: Box::new(decoder),
            threshold_ns: explain_ns.unwrap_or(u64::MAX),
            asked_kb: buffer_kb,
            buffer_kb: set_kb,
            wakeups: Wakeups::All,
            dat,
            untraced: run_on,
        })
    }

    /// `--timerlat`: each traced CPU and where the reader publishes a
    /// period start of the kernel's grid for it (0 until known).
    pub fn grid_starts(&self) -> Vec<(usize, Arc<AtomicU64>)> {
        let mut out = Vec::new();
        self.shared.each(|t| {
            if let Some(tl) = &t.timerlat {
                out.push((t.cpu, Arc::clone(&tl.start)));
            }
        });
        out
    }

    /// `--timerlat`: each traced CPU's timerlat entries so far, after one
    /// more read of its buffer (empty without the timerlat tracer).
    pub fn timerlat(&self) -> Vec<(usize, TimerlatCpu)> {
        let mut out = Vec::new();
        self.shared.each(|t| {
            t.drain(None);
            if let Some(tl) = &t.timerlat {
                out.push((t.cpu, (**tl).clone()));
            }
        });
        out
    }

    /// The instance directory.
    #[cfg(test)]
    pub(super) fn instance_dir(&self) -> &Path {
        self.instance.dir()
    }

    /// Traces only the wake-ups of the measuring threads `tids`, set
    /// once they are known and before they measure. If the kernel refuses
    /// the filter every wake-up is recorded, and the totals say so.
    pub fn filter_wakeups(&mut self, tids: &[u32]) {
        self.wakeups = self.instance.filter_wakeups(tids);
    }

    /// The kernel buffer per measured CPU asked for, and the one set
    /// (smaller after `ENOMEM`), in KiB.
    pub fn buffer_kb(&self) -> (u32, u32) {
        (self.asked_kb, self.buffer_kb)
    }

    /// What the trace did so far.
    pub fn totals(&self) -> TraceTotals {
        let mut t = TraceTotals {
            buffer_kb: self.buffer_kb,
            history_kb: 0,
            pages_read: 0,
            pages_dropped: 0,
            reads_failed: 0,
            events: 0,
            events_lost: 0,
            writes_failed: self.instance.failed_writes(),
            reader_cpu_ns: self.shared.cpu_ns.load(Ordering::Relaxed),
            wakeups: self.wakeups,
        };
        self.shared.each(|c| {
            let page_kb = (c.history.capacity() * rustix::param::page_size() / 1024) as u32;
            t.history_kb = t.history_kb.max(page_kb);
            t.pages_read += c.history.kept();
            t.pages_dropped += c.history.dropped();
            t.reads_failed += c.failed_reads;
            if let Some(stats) = self.instance.buffer_stats(c.cpu) {
                t.events += stats.recorded();
                t.events_lost += stats.lost();
            }
        });
        t
    }

    /// Explains the sample of `cycle` on `cpu` that was due at
    /// `deadline_ns` and woke at `wake_ns` (both `CLOCK_MONOTONIC`, the
    /// trace's clock): reads what the kernel holds of the CPU into its
    /// history, then classifies `[deadline, wake]` from the pages that
    /// cover it into exclusive cause lines. Never fails: what the trace
    /// cannot say is an untraced line, by reason, and the result
    /// `partial`. `tid` is the measuring thread's kernel id, if known.
    pub fn explain(
        &mut self,
        cpu: usize,
        tid: Option<u32>,
        deadline_ns: u64,
        wake_ns: u64,
        cycle: u64,
    ) -> Attribution {
        let cpu32 = u32::try_from(cpu).unwrap_or(u32::MAX);
        let window = Window {
            cpu: cpu32,
            cycle,
            deadline_ns,
            wake_ns,
            pid: tid.unwrap_or(0),
        };
        if wake_ns.saturating_sub(deadline_ns) < self.threshold_ns {
            return Attribution::new(
                cpu32,
                cycle,
                deadline_ns,
                wake_ns.saturating_sub(deadline_ns),
            );
        }
        let Some(mut t) = self.shared.lock(cpu) else {
            return unknown(window);
        };
        t.drain(Some(wake_ns));
        t.history
            .explain(&mut self.decoder, window, t.recorded_to_ns)
    }

    /// [`Tracer::explain`] for a thread `tid` that is not pinned, on the
    /// CPU that switched it in between the deadline and the wake-up. If
    /// none did, the spike is one line of unknown loss on CPU
    /// `u32::MAX`, `partial`.
    pub fn explain_unpinned(
        &mut self,
        tid: u32,
        deadline_ns: u64,
        wake_ns: u64,
        cycle: u64,
    ) -> Attribution {
        let mut on = None;
        let dec = &mut self.decoder;
        self.shared.each(|t| {
            t.drain(Some(wake_ns));
            let cpu = u32::try_from(t.cpu).unwrap_or(u32::MAX);
            if on.is_none() && t.history.switched_in(dec, cpu, tid, deadline_ns, wake_ns) {
                on = Some(t.cpu);
            }
        });
        match on {
            Some(cpu) => self.explain(cpu, Some(tid), deadline_ns, wake_ns, cycle),
            None => unknown(Window {
                cpu: u32::MAX,
                cycle,
                deadline_ns,
                wake_ns,
                pid: tid,
            }),
        }
    }

    /// Whether `cpu`'s history may still hold the window from
    /// `deadline_ns` on; always true for an unpinned thread (`None`).
    /// Under a storm a spike whose window is gone would only say "beyond
    /// latscope's history".
    pub fn may_hold(&self, cpu: Option<usize>, deadline_ns: u64) -> bool {
        let Some(cpu) = cpu else { return true };
        self.shared
            .lock(cpu)
            .is_none_or(|t| t.history.may_hold(deadline_ns))
    }

    /// The CPUs not traced (not measured), where helper threads belong;
    /// empty if every CPU is.
    pub fn untraced_cpus(&self) -> Vec<usize> {
        self.untraced.clone()
    }

    /// What a trace.dat of this run's windows says before its pages.
    pub fn dat_header(&self) -> &DatHeader {
        &self.dat
    }

    /// The evidence of a spike explained on `cpu` (its attribution's CPU),
    /// due at `deadline_ns` and woken at `wake_ns`: the pages from
    /// [`LEAD_NS`] before the deadline to the wake-up, at most
    /// [`MAX_WINDOW_BYTES`] (the newest), copied into `pages` (cleared first), with
    /// `recorded_to_ns`. Empty if the CPU is not traced.
    pub fn evidence(
        &self,
        cpu: u32,
        deadline_ns: u64,
        wake_ns: u64,
        mut pages: Vec<u8>,
    ) -> Evidence {
        pages.clear();
        let mut head = EvidenceHead {
            cpu,
            deadline_ns,
            wake_ns,
            ..EvidenceHead::default()
        };
        if let Some(t) = usize::try_from(cpu).ok().and_then(|c| self.shared.lock(c)) {
            let from = deadline_ns.saturating_sub(LEAD_NS);
            let most = (MAX_WINDOW_BYTES / rustix::param::page_size()).max(1);
            for p in t.history.window(from, wake_ns, most) {
                pages.extend_from_slice(p);
            }
            head.recorded_to_ns = t.recorded_to_ns;
        }
        Evidence { head, pages }
    }

    /// Stops the reader and removes the instance; the run's totals.
    ///
    /// # Errors
    ///
    /// `rmdir(2)`'s error, e.g. `EBUSY` while a file of the instance is
    /// still open elsewhere.
    pub fn close(mut self) -> Result<TraceTotals, Error> {
        self.stop_reader();
        let totals = self.totals();
        // the last reference: the reader's files close
        self.shared = Arc::new(Shared::new(Vec::new(), 0));
        self.instance.remove().map_err(|e| {
            let errno = Errno::from_io_error(&e).unwrap_or(Errno::IO);
            Error::sys("removing the trace instance", errno)
        })?;
        Ok(totals)
    }

    fn stop_reader(&mut self) {
        if let Some(r) = self.reader.take() {
            reader::stop(&self.shared, r);
        }
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.stop_reader();
    }
}

/// A window nothing of which is known: one line of unknown loss.
fn unknown(window: Window) -> Attribution {
    let mut c = Classifier::new(window);
    c.lost(Loss::Unknown);
    c.finish()
}
