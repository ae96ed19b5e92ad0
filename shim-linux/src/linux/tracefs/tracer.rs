//! The per-process trace instance.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use latscope_core::explain::{parse_line, Attribution, Classifier, EventKind, Window};

use super::marks::{find_mark, mono_ns, switched_in, Marks, Spike};
use super::{cpumask, write_file, Marker, BUFFER_KB, EVENTS, INSTANCE_PREFIX};
use crate::error::Error;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

/// True if `pid` is a live latscope process (its comm starts with
/// `latscope`), so its instance must be left alone.
fn latscope_alive(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.starts_with("latscope"))
}

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
    marks: Arc<AtomicU64>,
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
            marks: Arc::new(AtomicU64::new(0)),
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

    /// The text to explain a window ending at `wake_ns` on `cpu` from.
    ///
    /// Without the snapshot trigger: the CPU's live buffer. With it: the
    /// snapshot buffer, if the trigger fired, and it alone if the window
    /// ends before its newest event, so live recording is never paused;
    /// else the snapshot followed by the live buffer's events after it
    /// (the swap splits the trace there), recording paused for the read
    /// of the live buffer only (`pause-on-trace`).
    ///
    /// `tid` is the measuring thread, if known (its markers tell which
    /// spike a snapshot was taken for).
    fn read_window(&self, cpu: usize, wake_ns: u64, tid: Option<u32>) -> Read {
        if !self.snapshot {
            return Read {
                text: self.read_trace(cpu).unwrap_or_default(),
                snap_floor: None,
                snap_cycle: None,
                paused: None,
            };
        }
        let mut text = String::new();
        let mut floor = self.swap_floor_ns;
        let mut snap_floor = None;
        let mut snap_cycle = None;
        if self.snapshot_fired() {
            text = self.read_cpu_file(cpu, "snapshot").unwrap_or_default();
            floor = floor.max(last_ts(&text).unwrap_or(0));
            snap_floor = Some(floor);
            let cpu32 = u32::try_from(cpu).unwrap_or(u32::MAX);
            snap_cycle = find_mark(&text, cpu32, u64::MAX, tid).newest_cycle;
            if wake_ns <= floor {
                return Read {
                    text,
                    snap_floor,
                    snap_cycle,
                    paused: None,
                };
            }
        }
        let from = mono_ns();
        let live = self.read_trace(cpu).unwrap_or_default();
        let to = mono_ns();
        append_after(&mut text, &live, floor);
        Read {
            text,
            snap_floor,
            snap_cycle,
            paused: Some((from, to)),
        }
    }

    /// After explaining the spike of `cycle` from `reads`: the pauses of
    /// the live reads are remembered, and a snapshot taken for this spike
    /// or an earlier one is given back to the trigger. One whose newest
    /// marker is a later spike's waits for that spike (or
    /// [`Tracer::resume`]).
    fn after_reads(&mut self, reads: &[&Read], cycle: u64) {
        for r in reads {
            if let Some((from, to)) = r.paused {
                self.note_blind(from, to);
            }
        }
        let Some(floor) = reads.iter().filter_map(|r| r.snap_floor).max() else {
            return;
        };
        if reads
            .iter()
            .all(|r| r.snap_cycle.is_none_or(|c| c <= cycle))
        {
            self.rearm(floor);
        }
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
    /// buffer into the snapshot buffer and recording went on: this call
    /// reads the window from the snapshot (and the live buffer after it,
    /// pausing recording only for that read) and re-arms the trigger.
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
        let marks_before = self.marks.load(Ordering::Acquire);
        let read_start = mono_ns();
        let read = self.read_window(cpu, wake_ns, None);
        self.after_reads(&[&read], cycle);
        let marks = find_mark(&read.text, cpu32, cycle, None);
        let spike = Spike {
            cpu: cpu32,
            tid,
            deadline_ns,
            wake_ns,
            cycle,
        };
        self.attribute(&spike, &read.text, marks, marks_before, read_start)
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
        let marks_before = self.marks.load(Ordering::Acquire);
        let read_start = mono_ns();
        let reads: Vec<(u32, Read)> = self
            .cpus
            .iter()
            .map(|&c| {
                (
                    u32::try_from(c).unwrap_or(u32::MAX),
                    self.read_window(c, wake_ns, Some(tid)),
                )
            })
            .collect();
        self.after_reads(&reads.iter().map(|(_, r)| r).collect::<Vec<_>>(), cycle);
        let mut texts: Vec<(u32, String)> = reads.into_iter().map(|(c, r)| (c, r.text)).collect();
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
            None => (u32::MAX, String::new(), Marks::default()),
        };
        let spike = Spike {
            cpu,
            tid: Some(tid),
            deadline_ns,
            wake_ns,
            cycle,
        };
        self.attribute(&spike, &text, marks, marks_before, read_start)
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
    /// gave `marks`; then turns recording back on (unless a later marker
    /// froze it again) and remembers the stretch without recording.
    fn attribute(
        &mut self,
        spike: &Spike,
        text: &str,
        marks: Marks,
        marks_before: u64,
        read_start: u64,
    ) -> Attribution {
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
            || self.marks.load(Ordering::Acquire) != marks_before;
        if self.freeze_on_mark && !later_froze {
            let _ = write_file(&self.dir.join("tracing_on"), "1");
        }
        // Without snapshots recording was off from our marker (frozen) or
        // from the start of the read (paused) until now; later spikes must
        // not take that silence for a quiet CPU. (With snapshots the read
        // noted its own pause, of the live buffer's read only.) The
        // stretches before this one make this window's "trace paused".
        let mut blind_before: Vec<(u64, u64)> = self.blind.iter().copied().collect();
        if !self.snapshot {
            let from = match mark {
                Some((ts, _)) if self.mono && self.freeze_on_mark => ts.min(read_start),
                _ => read_start,
            };
            self.note_blind(from, mono_ns());
        } else {
            // This read's own pause came after the window.
            blind_before.retain(|&(f, _)| f < read_start);
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
            if self.snapshot_fired() {
                let floor = self
                    .cpus
                    .first()
                    .and_then(|&c| self.read_cpu_file(c, "snapshot").ok())
                    .and_then(|t| last_ts(&t))
                    .unwrap_or(0);
                self.rearm(floor);
            }
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

/// One CPU's text for a window (see [`Tracer::read_window`]).
struct Read {
    text: String,
    /// The newest event time of the fired snapshot that was read, if any.
    snap_floor: Option<u64>,
    /// The cycle of the newest marker in that snapshot, on this CPU: the
    /// spike it was taken for.
    snap_cycle: Option<u64>,
    /// When recording was paused to read the live buffer.
    paused: Option<(u64, u64)>,
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
