//! The per-process trace instance.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::linux::procfs::latscope_alive;
use latscope_core::explain::{parse_line, Attribution, Classifier, EventKind, Window};

use super::marker::{MarkShared, NO_CPU};
use super::marks::{find_mark, mono_ns, switched_in, Marks, Spike};
use super::{cpumask, write_file, Marker, BUFFER_KB, EVENTS, INSTANCE_PREFIX};
use crate::error::Error;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

/// Reads of a CPU's trace kept for later spikes (snapshots and live
/// reads): a storm's backlog of spikes is explained from them, in memory
/// bounded by this many copies of the CPU's buffer as text.
const KEPT_READS: usize = 3;

/// Removes `instances/latscope-PID` of processes that are gone (at the
/// start of every run, and before a tracer creates its own). Returns the
/// pid and name of each removed. An instance of a live latscope is kept;
/// one named after our own pid is a leftover and goes too.
pub fn remove_stale_instances(root: &Path) -> Vec<(u32, String)> {
    let me = rustix::process::getpid()
        .as_raw_nonzero()
        .get()
        .unsigned_abs();
    let mut removed = Vec::new();
    let Ok(entries) = fs::read_dir(root.join("instances")) else {
        return removed;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(INSTANCE_PREFIX))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != me && latscope_alive(pid) {
            continue;
        }
        if fs::remove_dir(entry.path()).is_ok() {
            removed.push((pid, name.to_string_lossy().into_owned()));
        }
    }
    removed
}

/// The per-process trace instance `instances/latscope-PID`.
///
/// Created by [`Tracer::open`], read by [`Tracer::explain`] on the non-RT
/// sender thread, removed by [`Tracer::close`] or on drop. Every [`Marker`]
/// must be dropped first: the kernel refuses to remove an instance with an
/// open file (`EBUSY`). After a crash the next start removes the leftover.
#[derive(Debug)]
pub struct Tracer {
    dir: PathBuf,
    cpus: Vec<usize>,
    threshold_ns: u64,
    mono: bool,
    enabled: Vec<String>,
    freeze_on_mark: bool,
    /// A marker swaps the live buffer into the snapshot buffer (the
    /// `snapshot:1` trigger) and recording goes on.
    snapshot: bool,
    /// Newest event time of the last snapshot the trigger was re-armed
    /// after: live events up to it are left over from an earlier swap.
    swap_floor_ns: u64,
    /// Recent stretches without recording (frozen or paused), oldest first.
    blind: std::collections::VecDeque<(u64, u64)>,
    /// Marks written by all [`Marker`]s of this tracer.
    marks: Arc<MarkShared>,
    /// The latest reads of each CPU's trace, at most [`KEPT_READS`] per
    /// CPU: a spike whose window one covers is explained from it without
    /// reading again.
    reads: Vec<Read>,
    /// [`Tracer::marks`] when the snapshot trigger was last looked at.
    polled_marks: u64,
    live: bool,
}

impl Tracer {
    /// `mkdir instances/latscope-PID`—creates and arms this process's
    /// trace instance for `cpus`, after removing stale instances of dead
    /// latscope processes. `threshold_ns` is the `--explain` threshold:
    /// [`Tracer::explain`] returns an empty attribution below it.
    ///
    /// `root` is the tracefs to use (see [`super::Tracefs`]).
    ///
    /// # Errors
    ///
    /// `InvalidInput` for an empty CPU list, `Unsupported` if none of
    /// [`EVENTS`] could be enabled, or the error of creating the instance
    /// (e.g. `PermissionDenied` without root), as [`Error::Unavailable`].
    /// On error nothing is left behind.
    pub fn open(root: &Path, cpus: &[usize], threshold_ns: u64) -> Result<Tracer, Error> {
        Self::open_at(root, cpus, threshold_ns).map_err(|e| Error::Unavailable(e.to_string()))
    }

    /// [`Tracer::open`] with the error of the step that failed.
    ///
    /// # Errors
    ///
    /// As [`Tracer::open`].
    pub(super) fn open_at(root: &Path, cpus: &[usize], threshold_ns: u64) -> io::Result<Tracer> {
        if cpus.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "no CPUs to trace",
            ));
        }
        let _ = remove_stale_instances(root);
        let pid = rustix::process::getpid().as_raw_nonzero().get();
        let dir = root
            .join("instances")
            .join(format!("{INSTANCE_PREFIX}{pid}"));
        fs::create_dir(&dir)?;
        let mut t = Tracer {
            dir,
            cpus: cpus.to_vec(),
            threshold_ns,
            mono: false,
            enabled: Vec::new(),
            freeze_on_mark: false,
            snapshot: false,
            swap_floor_ns: 0,
            blind: std::collections::VecDeque::new(),
            marks: Arc::new(MarkShared::new()),
            reads: Vec::new(),
            polled_marks: 0,
            live: true,
        };
        // On error `t` is dropped, which removes the instance again.
        t.arm()?;
        Ok(t)
    }

    fn arm(&mut self) -> io::Result<()> {
        let d = self.dir.clone();
        write_file(&d.join("tracing_on"), "0")?;
        write_file(&d.join("tracing_cpumask"), &cpumask(&self.cpus))?;
        self.mono = write_file(&d.join("trace_clock"), "mono").is_ok()
            && fs::read_to_string(d.join("trace_clock")).is_ok_and(|c| c.contains("[mono]"));
        // Small buffers: the minimum everywhere, BUFFER_KB where we look.
        let _ = write_file(&d.join("buffer_size_kb"), "4");
        for &cpu in &self.cpus {
            let p = d.join(format!("per_cpu/cpu{cpu}/buffer_size_kb"));
            if write_file(&p, &BUFFER_KB.to_string()).is_err() {
                write_file(&d.join("buffer_size_kb"), &BUFFER_KB.to_string())?;
            }
        }
        // A consistent snapshot: recording pauses while `trace` is read
        // (off by default on recent kernels), and old events are overwritten.
        let _ = write_file(&d.join("options/pause-on-trace"), "1");
        let _ = write_file(&d.join("options/overwrite"), "1");
        for (sys, ev) in EVENTS {
            let p = d.join("events").join(sys).join(ev).join("enable");
            if p.exists() && write_file(&p, "1").is_ok() {
                self.enabled.push(format!("{sys}:{ev}"));
            }
        }
        // Our marker keeps the spike's window until the sender reads it.
        // Where the kernel has snapshots, its `snapshot:1` trigger on
        // `ftrace:print` swaps the live buffer into the snapshot buffer and
        // recording goes on (`explain` re-arms it). Otherwise the
        // `traceoff` trigger freezes the instance until `explain` turns
        // recording back on.
        let trigger = d.join("events/ftrace/print/trigger");
        self.snapshot =
            self.mono && d.join("snapshot").exists() && write_file(&trigger, "snapshot:1").is_ok();
        self.freeze_on_mark = !self.snapshot && write_file(&trigger, "traceoff").is_ok();
        if self.enabled.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "no irq, sched or timer trace events",
            ));
        }
        write_file(&d.join("tracing_on"), "1")
    }

    /// The instance directory.
    #[cfg(test)]
    pub(super) fn instance_dir(&self) -> &Path {
        &self.dir
    }

    /// Events that are enabled, as `system:event`.
    #[cfg(test)]
    pub(super) fn enabled_events(&self) -> &[String] {
        &self.enabled
    }

    /// True if the instance runs on the `mono` clock. Otherwise
    /// [`Tracer::explain`] anchors the window on the spike's marker and
    /// flags the result `partial`.
    #[cfg(test)]
    pub(super) fn clock_is_mono(&self) -> bool {
        self.mono
    }

    /// The latest stretch without recording.
    #[cfg(test)]
    pub(super) fn last_blind(&self) -> Option<(u64, u64)> {
        self.blind.back().copied()
    }

    /// True if a marker write stops the instance's recording (the
    /// `traceoff` trigger), keeping the spike's window until
    /// [`Tracer::explain`] has read it and turned recording back on. While
    /// frozen, later spikes (on any measured CPU) are not traced and come
    /// out `partial`.
    #[cfg(test)]
    pub(super) fn freezes_on_mark(&self) -> bool {
        self.freeze_on_mark
    }

    /// `open(instances/latscope-PID/trace_marker, O_WRONLY | O_CLOEXEC)`—the
    /// marker for a measuring thread, to be opened before it starts; `None`
    /// if it cannot be opened.
    pub fn marker(&self) -> Option<Marker> {
        let fd = rustix::fs::open(
            self.dir.join("trace_marker"),
            OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        Some(Marker::new(fd, self.marks.clone()))
    }

    /// True if a marker swaps the live buffer into the snapshot buffer
    /// instead of stopping recording.
    #[cfg(test)]
    pub(super) fn snapshots_on_mark(&self) -> bool {
        self.snapshot
    }

    /// Reads `per_cpu/cpuN/trace` of the instance: the whole buffer of one
    /// CPU as text, oldest first.
    ///
    /// # Errors
    ///
    /// The error of reading the file.
    pub(super) fn read_trace(&self, cpu: usize) -> io::Result<String> {
        self.read_cpu_file(cpu, "trace")
    }

    /// Reads `per_cpu/cpuN/<name>` as text.
    fn read_cpu_file(&self, cpu: usize, name: &str) -> io::Result<String> {
        let bytes = fs::read(self.dir.join(format!("per_cpu/cpu{cpu}/{name}")))?;
        Ok(match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    /// True if the snapshot trigger fired since it was armed
    /// (`snapshot:count=0`): the snapshot buffer holds a marked spike's
    /// window, and no swap can happen while it is read.
    fn snapshot_fired(&self) -> bool {
        fs::read_to_string(self.dir.join("events/ftrace/print/trigger"))
            .is_ok_and(|t| t.contains("snapshot:count=0"))
    }

    /// Arms the snapshot trigger again, for the next marker; the live
    /// buffer's events up to `floor_ns` belong to earlier swaps.
    fn rearm(&mut self, floor_ns: u64) {
        let trigger = self.dir.join("events/ftrace/print/trigger");
        let _ = write_file(&trigger, "!snapshot");
        let _ = write_file(&trigger, "snapshot:1");
        self.swap_floor_ns = self.swap_floor_ns.max(floor_ns);
    }

    /// Where the kernel has snapshots: if a marker was written since the
    /// last look and its `snapshot:1` trigger fired, copies the marked
    /// CPU's snapshot buffer (the window of the marked spike and the
    /// events before it) into [`Tracer::reads`] and arms the trigger again
    /// at once, so the next marker can keep the next window. Cheap when no
    /// marker was written (an atomic load). The sender calls it every
    /// drain: the window is kept while the spike waits for its turn on the
    /// line, however long.
    pub fn poll(&mut self) {
        let marks = self.marks.written.load(Ordering::Acquire);
        if !self.snapshot || marks == self.polled_marks {
            return;
        }
        self.polled_marks = marks;
        if !self.snapshot_fired() {
            return;
        }
        let start_ns = mono_ns();
        // the swap kept the window of the first mark's CPU: read that
        // one (the buffer of each CPU takes long to read on a slow board)
        let first = self.marks.first_cpu.swap(NO_CPU, Ordering::AcqRel);
        let texts: Vec<(usize, String)> = self
            .cpus
            .iter()
            .filter(|&&c| first == NO_CPU || c as u64 == first)
            .map(|&c| (c, self.read_cpu_file(c, "snapshot").unwrap_or_default()))
            .collect();
        let floor = texts
            .iter()
            .filter_map(|(_, t)| last_ts(t))
            .max()
            .unwrap_or(0)
            .max(self.swap_floor_ns);
        self.rearm(floor);
        for (cpu, text) in texts {
            self.keep(Read {
                cpu,
                first_ns: first_ts(&text).unwrap_or(u64::MAX),
                text: Arc::from(text),
                covers_ns: floor,
                start_ns,
                marks_before: marks,
                used: false,
            });
        }
    }

    /// Reads `cpu`'s live buffer: recording is paused for the read
    /// (`pause-on-trace`, noted as a stretch without recording where the
    /// kernel has snapshots; the freeze's own stretch otherwise, in
    /// [`Tracer::attribute`]). After a snapshot swap the live buffer
    /// begins with events of an earlier one, left out, and the latest
    /// snapshot comes first.
    fn read_live(&mut self, cpu: usize) -> Read {
        let start_ns = mono_ns();
        let marks_before = self.marks.written.load(Ordering::Acquire);
        let live = self.read_trace(cpu).unwrap_or_default();
        let text = if self.snapshot {
            self.note_blind(start_ns, mono_ns());
            // the latest snapshot first: a window across the swap is whole
            let floor = self.swap_floor_ns;
            let mut text = self
                .reads
                .iter()
                .rev()
                .find(|r| r.cpu == cpu && r.covers_ns == floor && r.first_ns <= floor)
                .map_or_else(String::new, |r| r.text.to_string());
            append_after(&mut text, &live, floor);
            text
        } else {
            live
        };
        Read {
            cpu,
            first_ns: first_ts(&text).unwrap_or(u64::MAX),
            text: Arc::from(text),
            covers_ns: start_ns,
            start_ns,
            marks_before,
            used: false,
        }
    }

    /// Keeps `read`, dropping the oldest of its CPU's beyond
    /// [`KEPT_READS`].
    fn keep(&mut self, read: Read) {
        let cpu = read.cpu;
        self.reads.push(read);
        while self.reads.iter().filter(|r| r.cpu == cpu).count() > KEPT_READS {
            if let Some(i) = self.reads.iter().position(|r| r.cpu == cpu) {
                self.reads.remove(i);
            }
        }
    }

    /// The index in [`Tracer::reads`] of the text to explain `cpu`'s
    /// window `[deadline_ns, wake_ns]` from: a kept read that reaches
    /// past the wake-up (the one reaching furthest back, if several),
    /// else a new read of the live buffer. Under a storm the sender
    /// explains spikes long after they happened, and several of a CPU per
    /// drain, and reading a trace buffer takes long (64 KiB, ~130 ms on
    /// an emulated board): a kept snapshot still holds the window, and
    /// one read serves every spike it covers.
    ///
    /// `None` if the live buffer's oldest event came after the wake-up:
    /// nothing of the window is left, and reading would only cost the
    /// time.
    fn read_for(&mut self, cpu: usize, deadline_ns: u64, wake_ns: u64) -> Option<usize> {
        self.poll();
        if let Some((i, _)) = self
            .kept_past(cpu, wake_ns)
            .min_by_key(|(_, r)| r.first_ns.max(deadline_ns))
        {
            return Some(i);
        }
        // (only where a marker never froze recording: a frozen buffer
        // must be read to be turned back on)
        if self.snapshot && self.mono && self.oldest_ns(cpu).is_some_and(|o| o > wake_ns) {
            return None;
        }
        let read = self.read_live(cpu);
        self.keep(read);
        Some(self.reads.len() - 1)
    }

    /// A report interval begins: each [`Marker`] marks its interval's worst
    /// spikes again from zero.
    pub fn new_interval(&self) {
        self.marks.interval.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether `cpu`'s trace may still hold the window `[deadline_ns,
    /// wake_ns]`: a kept read covers it, or it ended after the latest
    /// snapshot (the live buffer may hold it). Always true where a marker
    /// freezes recording instead, and for an unpinned thread (`cpu`
    /// `None`). Under a storm most spikes' windows are gone before their
    /// turn: their explanations would say only "trace lost".
    pub fn may_hold(&mut self, cpu: Option<usize>, deadline_ns: u64, wake_ns: u64) -> bool {
        self.poll();
        let Some(cpu) = cpu.filter(|_| self.snapshot && self.mono) else {
            return true;
        };
        wake_ns > self.swap_floor_ns
            || self
                .kept_past(cpu, wake_ns)
                .any(|(_, r)| r.first_ns <= deadline_ns)
    }

    /// The kept reads of `cpu` (with their indices in [`Tracer::reads`])
    /// that cover events up to `wake_ns` or later.
    fn kept_past(&self, cpu: usize, wake_ns: u64) -> impl Iterator<Item = (usize, &Read)> {
        self.reads
            .iter()
            .enumerate()
            .filter(move |(_, r)| r.cpu == cpu && wake_ns <= r.covers_ns)
    }

    /// The oldest event's time in `cpu`'s live buffer, from
    /// `per_cpu/cpuN/stats` (`oldest event ts: 3.669057`, seconds of the
    /// trace clock), a read far cheaper than the buffer's.
    fn oldest_ns(&self, cpu: usize) -> Option<u64> {
        oldest_event_ns(&self.read_cpu_file(cpu, "stats").ok()?)
    }

    /// Explains the sample of `cycle` on `cpu` that was due at
    /// `deadline_ns` and woke at `wake_ns` (both `CLOCK_MONOTONIC`): reads
    /// the CPU's trace and classifies `[deadline, wake]` into exclusive cause
    /// lines. Never fails: without a readable trace the whole spike is one
    /// "untraced" line and the result is `partial`.
    ///
    /// `tid` is the measuring thread's kernel id, if known. The classifier
    /// needs it to tell when the thread became runnable, and so whom the
    /// window's time went to; without it the writer of the spike's marker,
    /// or else of the newest of our markers for `cpu` in the trace, is
    /// taken (markers are rate-limited: most spikes under a storm have
    /// none of their own).
    ///
    /// Call it from the sender thread for the spikes the [`Marker`] marked,
    /// oldest first (or call [`Tracer::resume`] for a marked spike it
    /// skips). Where the kernel has snapshots, the marker swapped the live
    /// buffer into the snapshot buffer and recording went on:
    /// [`Tracer::poll`] (which this call makes first) copied the snapshot
    /// and re-armed the trigger, and the window is explained from that
    /// copy, or from the live buffer after it (recording paused only for
    /// that read).
    /// Elsewhere the marker froze the instance (the `traceoff` trigger) and
    /// this call turns recording back on. Stretches in which recording was
    /// off are remembered and come out as "trace paused", `partial`, in
    /// later spikes; events the buffer lost as "trace lost".
    pub fn explain(
        &mut self,
        cpu: usize,
        tid: Option<u32>,
        deadline_ns: u64,
        wake_ns: u64,
        cycle: u64,
    ) -> Attribution {
        let cpu32 = u32::try_from(cpu).unwrap_or(u32::MAX);
        let latency = wake_ns.saturating_sub(deadline_ns);
        if latency < self.threshold_ns {
            return Attribution::new(cpu32, cycle, deadline_ns, latency);
        }
        if let Some(a) = self.wholly_blind(cpu32, cycle, deadline_ns, wake_ns) {
            return a;
        }
        let (text, from) = match self.read_for(cpu, deadline_ns, wake_ns) {
            Some(i) => {
                let read = &mut self.reads[i];
                (Arc::clone(&read.text), read.origin())
            }
            None => (Arc::from(""), self.no_read()),
        };
        let marks = find_mark(&text, cpu32, cycle, None);
        let spike = Spike {
            cpu: cpu32,
            tid,
            deadline_ns,
            wake_ns,
            cycle,
        };
        self.attribute(&spike, &text, marks, from)
    }

    /// [`Tracer::explain`] for a thread `tid` that is not pinned: it reads
    /// every traced CPU and explains the spike on the CPU the thread woke
    /// on. That is the CPU whose buffer holds the thread's marker for
    /// `cycle` (the thread writes it on the CPU it runs on), or else, on
    /// the `mono` trace clock, the CPU that switched the thread in between
    /// the deadline and the wake-up. If neither is found the spike is one
    /// "untraced" line on CPU `u32::MAX`, `partial`.
    pub fn explain_unpinned(
        &mut self,
        tid: u32,
        deadline_ns: u64,
        wake_ns: u64,
        cycle: u64,
    ) -> Attribution {
        let latency = wake_ns.saturating_sub(deadline_ns);
        if latency < self.threshold_ns {
            return Attribution::new(u32::MAX, cycle, deadline_ns, latency);
        }
        if let Some(a) = self.wholly_blind(u32::MAX, cycle, deadline_ns, wake_ns) {
            return a;
        }
        let mut texts: Vec<(u32, Arc<str>)> = Vec::new();
        let mut from: Option<Origin> = None;
        for c in self.cpus.clone() {
            let Some(i) = self.read_for(c, deadline_ns, wake_ns) else {
                continue;
            };
            let read = &mut self.reads[i];
            let o = read.origin();
            texts.push((u32::try_from(c).unwrap_or(u32::MAX), Arc::clone(&read.text)));
            from = Some(from.map_or(o, |f| f.merge(o)));
        }
        let from = from.unwrap_or_else(|| self.no_read());
        let by_mark = texts.iter().enumerate().find_map(|(i, (cpu, t))| {
            let m = find_mark(t, *cpu, cycle, Some(tid));
            m.ours.map(|_| (i, m))
        });
        let found = by_mark.or_else(|| {
            let i = self
                .mono
                .then(|| switched_in(&texts, tid, deadline_ns, wake_ns))
                .flatten()?;
            Some((i, find_mark(&texts[i].1, texts[i].0, cycle, Some(tid))))
        });
        let (cpu, text, marks) = match found {
            Some((i, m)) => (texts[i].0, texts.swap_remove(i).1, m),
            None => (u32::MAX, Arc::from(""), Marks::default()),
        };
        let spike = Spike {
            cpu,
            tid: Some(tid),
            deadline_ns,
            wake_ns,
            cycle,
        };
        self.attribute(&spike, &text, marks, from)
    }

    /// The origin of an explanation made without reading: as of now, and
    /// not fresh (recording was not paused or turned back on for it).
    fn no_read(&self) -> Origin {
        Origin {
            start_ns: mono_ns(),
            marks_before: self.marks.written.load(Ordering::Acquire),
            fresh: false,
        }
    }

    /// True if the window `[deadline_ns, wake_ns]` fell wholly in a
    /// stretch without recording that has ended (frozen for an earlier
    /// spike, or paused while one was read): its explanation can only say
    /// "trace paused". Needs the `mono` trace clock.
    pub fn wholly_paused(&self, deadline_ns: u64, wake_ns: u64) -> bool {
        self.mono
            && self
                .blind
                .iter()
                .any(|&(f, t)| f <= deadline_ns && t >= wake_ns)
    }

    /// The attribution of a spike whose whole window fell in a stretch
    /// without recording (frozen for an earlier spike, or paused while one
    /// was read): one untraced line, `partial`, without reading the trace,
    /// which cannot hold it. Recording is left as it is: if it is still
    /// frozen, the next spike read turns it back on. `None` if any of the
    /// window may be in the trace.
    fn wholly_blind(
        &self,
        cpu: u32,
        cycle: u64,
        deadline_ns: u64,
        wake_ns: u64,
    ) -> Option<Attribution> {
        if !self.mono {
            return None;
        }
        let &(from, to) = self
            .blind
            .iter()
            .find(|&&(f, t)| f <= deadline_ns && t >= wake_ns)?;
        let window = Window {
            cpu,
            cycle,
            deadline_ns,
            wake_ns,
            pid: 0,
        };
        let mut c = Classifier::new(window);
        c.set_blind(from, to);
        Some(c.finish())
    }

    /// Classifies one CPU's trace `text` for `spike`, whose marker search
    /// gave `marks`, read as `from` says; then, after a read's first use,
    /// turns recording back on (unless a later marker froze it again) and
    /// remembers the stretch without recording.
    fn attribute(&mut self, spike: &Spike, text: &str, marks: Marks, from: Origin) -> Attribution {
        let Spike {
            cpu,
            tid,
            deadline_ns,
            wake_ns,
            cycle,
        } = *spike;
        let mark = marks.ours;
        // Unfreeze, unless a later spike's marker froze the buffer, before
        // or during our read: its own explain will.
        let later_froze = marks.newest_cycle.is_some_and(|c| c > cycle)
            || self.marks.written.load(Ordering::Acquire) != from.marks_before;
        if self.freeze_on_mark && !later_froze && from.fresh {
            let _ = write_file(&self.dir.join("tracing_on"), "1");
        }
        // Without snapshots recording was off from our marker (frozen) or
        // from the start of the read (paused) until now; later spikes must
        // not take that silence for a quiet CPU. (With snapshots the read
        // noted its own pause, of the live buffer's read only.) The
        // stretches before this one make this window's "trace paused".
        let mut blind_before: Vec<(u64, u64)> = self.blind.iter().copied().collect();
        if !self.snapshot {
            if from.fresh {
                let off = match mark {
                    Some((ts, _)) if self.mono && self.freeze_on_mark => ts.min(from.start_ns),
                    _ => from.start_ns,
                };
                self.note_blind(off, mono_ns());
            }
        } else {
            // This read's own pause came after the window.
            blind_before.retain(|&(f, _)| f < from.start_ns);
        }

        // the measuring thread, else the writer of its marker, else of
        // the CPU's newest marker (one pinned thread per measured CPU)
        let pid = tid
            .or(mark.map(|(_, pid)| pid))
            .or(marks.writer)
            .unwrap_or(0);
        let mut window = Window {
            cpu,
            cycle,
            deadline_ns,
            wake_ns,
            pid,
        };
        if !self.mono {
            // Anchor: the marker was written right after the wake-up.
            let Some((ts, _)) = mark else {
                let mut a = Classifier::new(window).finish();
                a.partial = true;
                return a;
            };
            let off = i128::from(ts) - i128::from(wake_ns);
            let shift = |t: u64| u64::try_from(i128::from(t) + off).unwrap_or(0);
            window.deadline_ns = shift(deadline_ns);
            window.wake_ns = shift(wake_ns);
        }
        let mut c = Classifier::new(window);
        if self.mono {
            for (f, t) in blind_before {
                if f < wake_ns && t > deadline_ns {
                    c.set_blind(f, t);
                }
            }
        }
        for e in text.lines().filter_map(parse_line) {
            c.feed(&e);
            if c.done() {
                break;
            }
        }
        let mut a = c.finish();
        a.deadline_ns = deadline_ns;
        a.partial |= !self.mono || cpu == u32::MAX;
        a
    }

    /// Turns recording back on after a marker froze it, without explaining
    /// (for spikes the sender decides to skip). [`Tracer::explain`] does this
    /// itself.
    pub fn resume(&mut self) {
        if self.snapshot {
            self.poll();
            return;
        }
        if self.freeze_on_mark {
            let from = self.blind.back().map_or_else(mono_ns, |&(_, t)| t);
            let _ = write_file(&self.dir.join("tracing_on"), "1");
            self.note_blind(from, mono_ns());
        }
    }

    /// Remembers a stretch without recording (the last 16).
    fn note_blind(&mut self, from: u64, to: u64) {
        if self.blind.len() == 16 {
            self.blind.pop_front();
        }
        self.blind.push_back((from, to));
    }

    /// Stops tracing and removes the instance.
    ///
    /// # Errors
    ///
    /// `rmdir(2)`'s error, e.g. `EBUSY` while a [`Marker`] or another file
    /// of the instance is still open.
    pub fn close(mut self) -> Result<(), Error> {
        self.remove().map_err(|e| {
            let errno = Errno::from_io_error(&e).unwrap_or(Errno::IO);
            Error::sys("removing the trace instance", errno)
        })
    }

    fn remove(&mut self) -> io::Result<()> {
        if !self.live {
            return Ok(());
        }
        let _ = write_file(&self.dir.join("tracing_on"), "0");
        if self.freeze_on_mark {
            let _ = write_file(&self.dir.join("events/ftrace/print/trigger"), "!traceoff");
        }
        if self.snapshot {
            let _ = write_file(&self.dir.join("events/ftrace/print/trigger"), "!snapshot");
        }
        let mut last = Ok(());
        for _ in 0..3 {
            last = fs::remove_dir(&self.dir);
            match &last {
                Ok(()) => break,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    last = Ok(());
                    break;
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
        if last.is_ok() {
            self.live = false;
        }
        last
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// One CPU's trace text, kept for the spikes it covers (see
/// [`Tracer::read_for`]).
#[derive(Debug)]
struct Read {
    cpu: usize,
    text: Arc<str>,
    /// Its oldest event's time (`u64::MAX` if it has none).
    first_ns: u64,
    /// Events up to this time are in `text`: the start of a live read,
    /// the newest event of a snapshot.
    covers_ns: u64,
    /// When the read began, and how many markers had been written then.
    start_ns: u64,
    marks_before: u64,
    /// A spike was explained from it.
    used: bool,
}

impl Read {
    /// Where the read came from; from now on it is no longer fresh.
    fn origin(&mut self) -> Origin {
        let o = Origin {
            start_ns: self.start_ns,
            marks_before: self.marks_before,
            fresh: !self.used,
        };
        self.used = true;
        o
    }
}

/// Where the text a spike is explained from came from.
#[derive(Debug, Clone, Copy)]
struct Origin {
    /// When its read began.
    start_ns: u64,
    /// Markers written before it.
    marks_before: u64,
    /// No spike was explained from it before.
    fresh: bool,
}

impl Origin {
    /// The origin of an explanation drawn from the reads of both: the
    /// earlier start, the fewer markers, fresh if either is.
    fn merge(self, other: Origin) -> Origin {
        Origin {
            start_ns: self.start_ns.min(other.start_ns),
            marks_before: self.marks_before.min(other.marks_before),
            fresh: self.fresh || other.fresh,
        }
    }
}

/// `oldest event ts:     3.669057` of a CPU's `stats`, in nanoseconds.
pub(super) fn oldest_event_ns(stats: &str) -> Option<u64> {
    let v = stats
        .lines()
        .find_map(|l| l.strip_prefix("oldest event ts:"))?
        .trim();
    let (secs, frac) = v.split_once('.').unwrap_or((v, ""));
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac: String = frac
        .chars()
        .chain(core::iter::repeat('0'))
        .take(9)
        .collect();
    secs.parse::<u64>()
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(frac.parse::<u64>().ok()?)
}

/// The time of the oldest event in a CPU's trace `text`.
fn first_ts(text: &str) -> Option<u64> {
    text.lines()
        .filter_map(parse_line)
        .find(|e| e.kind != EventKind::Lost)
        .map(|e| e.ts_ns)
}

/// The time of the newest event in a CPU's trace `text`.
pub(super) fn last_ts(text: &str) -> Option<u64> {
    text.lines()
        .rev()
        .filter_map(parse_line)
        .find(|e| e.kind != EventKind::Lost)
        .map(|e| e.ts_ns)
}

/// Appends to `text` the lines of `live` from its first event after
/// `floor_ns` on (the live buffer after a swap begins with events of an
/// earlier one).
pub(super) fn append_after(text: &mut String, live: &str, floor_ns: u64) {
    let mut on = false;
    for line in live.lines() {
        let Some(e) = parse_line(line) else { continue };
        on |= e.kind != EventKind::Lost && e.ts_ns > floor_ns;
        if on {
            text.push_str(line);
            text.push('\n');
        }
    }
}
