//! The private trace instance and the measuring thread's marker.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use core::fmt::Write as _;

use latscope_core::explain::{parse_line, Attribution, Classifier, EventKind, Window};
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};

/// Per-CPU buffer of the instance for each measured CPU, in KiB. At a
/// loopback flood's ~250 000 events/s this holds about 6 ms of history
/// before the marker froze it (a spike's window plus what was running at
/// its deadline), and reads in a few milliseconds; unmeasured CPUs get the
/// minimum.
pub const BUFFER_KB: u32 = 64;

/// Default shortest time between two marker writes (100 per second).
pub const MARK_MIN_INTERVAL_NS: u64 = 10_000_000;

/// The events enabled in the instance, as `(system, event)`; the ones the
/// kernel lacks are skipped.
pub const EVENTS: &[(&str, &str)] = &[
    ("irq", "irq_handler_entry"),
    ("irq", "irq_handler_exit"),
    ("irq", "softirq_entry"),
    ("irq", "softirq_exit"),
    ("irq_vectors", "local_timer_entry"),
    ("irq_vectors", "local_timer_exit"),
    ("irq_vectors", "reschedule_entry"),
    ("irq_vectors", "reschedule_exit"),
    ("irq_vectors", "call_function_entry"),
    ("irq_vectors", "call_function_exit"),
    ("irq_vectors", "call_function_single_entry"),
    ("irq_vectors", "call_function_single_exit"),
    ("irq_vectors", "irq_work_entry"),
    ("irq_vectors", "irq_work_exit"),
    ("timer", "hrtimer_expire_entry"),
    ("power", "cpu_idle"),
    ("sched", "sched_switch"),
    ("sched", "sched_wakeup"),
];

/// Prefix of our instances' names; the pid follows.
const INSTANCE_PREFIX: &str = "latscope-";

/// Text the marker starts with.
const MARK_PREFIX: &str = "latscope spike";

/// Where tracefs is mounted: `/sys/kernel/tracing`, another tracefs mount
/// from `/proc/mounts`, or `tracing/` under a debugfs mount. `None` if
/// none of them has an `instances` directory.
pub fn find_tracefs() -> Option<PathBuf> {
    let mut candidates = vec![PathBuf::from("/sys/kernel/tracing")];
    if let Ok(mounts) = fs::read_to_string("/proc/mounts") {
        for line in mounts.lines() {
            let mut f = line.split(' ');
            let (_, Some(dir), Some(kind)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            let dir = unescape_mount(dir);
            match kind {
                "tracefs" => candidates.push(PathBuf::from(dir)),
                "debugfs" => candidates.push(Path::new(&dir).join("tracing")),
                _ => {}
            }
        }
    }
    candidates.push(PathBuf::from("/sys/kernel/debug/tracing"));
    candidates
        .into_iter()
        .find(|p| p.join("instances").is_dir() && p.join("trace_marker").exists())
}

/// `/proc/mounts` escapes space, tab, newline and backslash as `\ooo`.
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c == b'\\' {
            if let Some(v) = s
                .get(i + 1..i + 4)
                .and_then(|o| u8::from_str_radix(o, 8).ok())
            {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The hex CPU mask tracefs expects (`tracing_cpumask`): 32-bit groups,
/// most significant first, separated by commas.
fn cpumask(cpus: &[usize]) -> String {
    let max = cpus.iter().copied().max().unwrap_or(0);
    let mut words = vec![0u32; max / 32 + 1];
    for &c in cpus {
        words[c / 32] |= 1 << (c % 32);
    }
    let mut s = String::new();
    for (i, w) in words.iter().rev().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "{w:08x}");
    }
    s
}

fn write_file(path: &Path, value: &str) -> io::Result<()> {
    fs::write(path, value)
}

/// True if `pid` is a live latscope process (its comm starts with
/// `latscope`), so its instance must be left alone.
fn latscope_alive(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.starts_with("latscope"))
}

/// Removes `instances/latscope-PID` of processes that are gone. Returns
/// how many were removed. An instance of a live latscope is kept; one
/// named after our own pid is a leftover and goes too.
pub(crate) fn remove_stale(root: &Path) -> io::Result<usize> {
    let me = rustix::process::getpid()
        .as_raw_nonzero()
        .get()
        .unsigned_abs();
    let mut removed = 0;
    for entry in fs::read_dir(root.join("instances"))? {
        let entry = entry?;
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
            removed += 1;
        }
    }
    Ok(removed)
}

/// The per-process trace instance `instances/latscope-PID`.
///
/// Created by [`Tracer::open`], read by [`Tracer::explain`] on the non-RT
/// sender thread, removed by [`Tracer::close`] or on drop. Every [`Marker`]
/// must be dropped first: the kernel refuses to remove an instance with an
/// open file (`EBUSY`). After a crash the next start removes the leftover.
#[derive(Debug)]
pub struct Tracer {
    root: PathBuf,
    dir: PathBuf,
    cpus: Vec<usize>,
    threshold_ns: u64,
    mono: bool,
    tids: Vec<(usize, u32)>,
    enabled: Vec<String>,
    removed_stale: usize,
    freeze_on_mark: bool,
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
    /// # Errors
    ///
    /// `NotFound` if no tracefs is mounted, `InvalidInput` for an empty CPU
    /// list, `Unsupported` if none of [`EVENTS`] could be enabled, or the
    /// error of creating the instance (e.g. `PermissionDenied` without
    /// root). On error nothing is left behind.
    pub fn open(cpus: &[usize], threshold_ns: u64) -> io::Result<Tracer> {
        let root = find_tracefs()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "tracefs is not mounted"))?;
        Self::open_at(&root, cpus, threshold_ns)
    }

    /// [`Tracer::open`] with an explicit tracefs root.
    ///
    /// # Errors
    ///
    /// As [`Tracer::open`].
    pub fn open_at(root: &Path, cpus: &[usize], threshold_ns: u64) -> io::Result<Tracer> {
        if cpus.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "no CPUs to trace",
            ));
        }
        let removed_stale = remove_stale(root).unwrap_or(0);
        let pid = rustix::process::getpid().as_raw_nonzero().get();
        let dir = root
            .join("instances")
            .join(format!("{INSTANCE_PREFIX}{pid}"));
        fs::create_dir(&dir)?;
        let mut t = Tracer {
            root: root.to_path_buf(),
            dir,
            cpus: cpus.to_vec(),
            threshold_ns,
            mono: false,
            tids: Vec::new(),
            enabled: Vec::new(),
            removed_stale,
            freeze_on_mark: false,
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
        // Our marker freezes the instance (the kernel's `traceoff` trigger
        // on `ftrace:print`), so the spike's window survives until the
        // sender has read it; `explain` turns tracing back on.
        self.freeze_on_mark =
            write_file(&d.join("events/ftrace/print/trigger"), "traceoff").is_ok();
        if self.enabled.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "no irq, sched or timer trace events",
            ));
        }
        write_file(&d.join("tracing_on"), "1")
    }

    /// The instance directory.
    pub fn instance_dir(&self) -> &Path {
        &self.dir
    }

    /// The tracefs root the instance lives in.
    pub fn tracefs_root(&self) -> &Path {
        &self.root
    }

    /// Events that are enabled, as `system:event`.
    pub fn enabled_events(&self) -> &[String] {
        &self.enabled
    }

    /// True if the instance runs on the `mono` clock. Otherwise
    /// [`Tracer::explain`] anchors the window on the spike's marker and
    /// flags the result `partial`.
    pub fn clock_is_mono(&self) -> bool {
        self.mono
    }

    /// True if a marker write stops the instance's recording (the
    /// `traceoff` trigger), keeping the spike's window until
    /// [`Tracer::explain`] has read it and turned recording back on. While
    /// frozen, later spikes (on any measured CPU) are not traced and come
    /// out `partial`.
    pub fn freezes_on_mark(&self) -> bool {
        self.freeze_on_mark
    }

    /// How many stale instances [`Tracer::open`] removed.
    pub fn removed_stale(&self) -> usize {
        self.removed_stale
    }

    /// Registers the thread id of the measuring thread on `cpu`, so the
    /// classifier can tell its own wake-up and run from other tasks. Without
    /// it, the thread is recognised by its marker.
    pub fn set_thread(&mut self, cpu: usize, tid: u32) {
        self.tids.retain(|&(c, _)| c != cpu);
        self.tids.push((cpu, tid));
    }

    /// `open(instances/latscope-PID/trace_marker, O_WRONLY | O_CLOEXEC)`—the
    /// marker for the measuring thread, to be opened before it starts.
    ///
    /// # Errors
    ///
    /// The error of `open(2)`.
    pub fn marker(&self) -> io::Result<Marker> {
        let mut m = Marker::open(&self.dir.join("trace_marker"))?;
        m.marks = Some(self.marks.clone());
        Ok(m)
    }

    /// Reads `per_cpu/cpuN/trace` of the instance: the whole buffer of one
    /// CPU as text, oldest first.
    ///
    /// # Errors
    ///
    /// The error of reading the file.
    pub fn read_trace(&self, cpu: usize) -> io::Result<String> {
        let bytes = fs::read(self.dir.join(format!("per_cpu/cpu{cpu}/trace")))?;
        Ok(match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    /// Explains the sample of `cycle` on `cpu` that was due at
    /// `deadline_ns` and woke at `wake_ns` (both `CLOCK_MONOTONIC`): reads
    /// the CPU's trace and classifies `[deadline, wake]` into exclusive cause
    /// lines. Never fails: without a readable trace the whole spike is one
    /// "untraced" line and the result is `partial`.
    ///
    /// Call it from the sender thread for every spike the [`Marker`] marked,
    /// in order: the marker froze the instance (see
    /// [`Tracer::freezes_on_mark`]) and this call turns recording back on
    /// (or call [`Tracer::resume`] to skip a spike). Stretches in which
    /// recording was off (frozen, or paused while an earlier spike was read)
    /// are remembered and come out as untraced, `partial`, in later spikes.
    pub fn explain(
        &mut self,
        cpu: usize,
        deadline_ns: u64,
        wake_ns: u64,
        cycle: u64,
    ) -> Attribution {
        let cpu32 = u32::try_from(cpu).unwrap_or(u32::MAX);
        let latency = wake_ns.saturating_sub(deadline_ns);
        if latency < self.threshold_ns {
            return Attribution::new(cpu32, cycle, deadline_ns, latency);
        }
        let marks_before = self.marks.load(Ordering::Acquire);
        let read_start = mono_ns();
        let text = self.read_trace(cpu).unwrap_or_default();
        let marks = find_mark(&text, cpu32, cycle, None);
        let spike = Spike {
            cpu: cpu32,
            tid: None,
            deadline_ns,
            wake_ns,
            cycle,
        };
        self.attribute(&spike, &text, marks, marks_before, read_start)
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
        let marks_before = self.marks.load(Ordering::Acquire);
        let read_start = mono_ns();
        let mut texts: Vec<(u32, String)> = Vec::with_capacity(self.cpus.len());
        for &c in &self.cpus {
            let cpu = u32::try_from(c).unwrap_or(u32::MAX);
            texts.push((cpu, self.read_trace(c).unwrap_or_default()));
        }
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
        // Recording was off from our marker (frozen) or from the start of
        // the read (paused) until now; later spikes must not take that
        // silence for a quiet CPU.
        let blind_before: Vec<(u64, u64)> = self.blind.iter().copied().collect();
        let from = match mark {
            Some((ts, _)) if self.mono && self.freeze_on_mark => ts.min(read_start),
            _ => read_start,
        };
        self.note_blind(from, mono_ns());

        let pid = tid
            .or_else(|| {
                self.tids
                    .iter()
                    .find(|&&(c, _)| c as u32 == cpu)
                    .map(|&(_, t)| t)
            })
            .or(mark.map(|(_, pid)| pid))
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
    /// `rmdir(2)`'s error, e.g. `ResourceBusy` while a [`Marker`] or another
    /// file of the instance is still open.
    pub fn close(mut self) -> io::Result<()> {
        self.remove()
    }

    fn remove(&mut self) -> io::Result<()> {
        if !self.live {
            return Ok(());
        }
        let _ = write_file(&self.dir.join("tracing_on"), "0");
        if self.freeze_on_mark {
            let _ = write_file(&self.dir.join("events/ftrace/print/trigger"), "!traceoff");
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

/// The spike [`Tracer::attribute`] explains.
#[derive(Debug, Clone, Copy)]
struct Spike {
    /// The CPU whose trace is read (`u32::MAX`: none found).
    cpu: u32,
    /// The measuring thread, when known (unpinned threads).
    tid: Option<u32>,
    deadline_ns: u64,
    wake_ns: u64,
    cycle: u64,
}

/// Which of the `(cpu, trace)` texts shows `tid` switched in between
/// `deadline_ns` and `wake_ns` (mono trace clock): the CPU it woke on.
fn switched_in(texts: &[(u32, String)], tid: u32, deadline_ns: u64, wake_ns: u64) -> Option<usize> {
    texts.iter().position(|(_, t)| {
        t.lines().filter_map(parse_line).any(|e| {
            matches!(e.kind, EventKind::Switch { next, .. } if next.pid == tid)
                && e.ts_ns >= deadline_ns
                && e.ts_ns <= wake_ns
        })
    })
}

/// What the trace says about our markers on one CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Marks {
    /// Trace time and writer pid of the marker of the cycle asked for.
    ours: Option<(u64, u32)>,
    /// Cycle of the newest marker in the text (the one that froze it).
    newest_cycle: Option<u64>,
}

/// Finds our marker for `cycle` on `cpu` (written by thread `tid`, if
/// given), searching from the end, where a freezing marker is.
fn find_mark(text: &str, cpu: u32, cycle: u64, tid: Option<u32>) -> Marks {
    let mut marks = Marks::default();
    for line in text.lines().rev() {
        if !line.contains(MARK_PREFIX) {
            continue;
        }
        let Some(e) = parse_line(line) else { continue };
        let EventKind::Marker { text: m } = e.kind else {
            continue;
        };
        let Some(fields) = m.strip_prefix(MARK_PREFIX) else {
            continue;
        };
        let mut c = None;
        let mut y = None;
        for kv in fields.split(' ') {
            if let Some(v) = kv.strip_prefix("cpu=") {
                c = v.parse::<u32>().ok();
            } else if let Some(v) = kv.strip_prefix("cycle=") {
                y = v.parse::<u64>().ok();
            }
        }
        if c != Some(cpu) || tid.is_some_and(|t| t != e.task.pid) {
            continue;
        }
        if marks.newest_cycle.is_none() {
            marks.newest_cycle = y;
        }
        if y == Some(cycle) {
            marks.ours = Some((e.ts_ns, e.task.pid));
            break;
        }
    }
    marks
}

/// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds.
fn mono_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    let s = u64::try_from(t.tv_sec).unwrap_or(0);
    let n = u64::try_from(t.tv_nsec).unwrap_or(0);
    s.saturating_mul(1_000_000_000).saturating_add(n)
}

/// A pre-opened `trace_marker` fd for the measuring thread.
///
/// [`Marker::mark`] is the only extra syscall the hot path makes, and only
/// on a spike: one `write(2)` of a line formatted on the stack, at most once
/// per [`Marker::min_interval_ns`].
#[derive(Debug)]
pub struct Marker {
    fd: OwnedFd,
    stop: Option<OwnedFd>,
    marks: Option<Arc<AtomicU64>>,
    min_interval_ns: u64,
    last_ns: Option<u64>,
    dropped: u32,
}

impl Marker {
    /// `open(path, O_WRONLY | O_CLOEXEC)`—a marker writing to `path`.
    ///
    /// # Errors
    ///
    /// The error of `open(2)`.
    pub fn open(path: &Path) -> io::Result<Marker> {
        let fd = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
        Ok(Marker {
            fd,
            stop: None,
            marks: None,
            min_interval_ns: MARK_MIN_INTERVAL_NS,
            last_ns: None,
            dropped: 0,
        })
    }

    /// The cyclictest `--tracemark` marker: writes to the top-level
    /// `trace_marker` of `root` and then `0` to the top-level `tracing_on`,
    /// so the user's own tracing stops at the spike. Not rate-limited
    /// beyond the first spike: tracing is off afterwards.
    ///
    /// # Errors
    ///
    /// The error of `open(2)` on either file.
    pub fn open_tracemark(root: &Path) -> io::Result<Marker> {
        let mut m = Marker::open(&root.join("trace_marker"))?;
        m.stop = Some(rustix::fs::open(
            root.join("tracing_on"),
            OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )?);
        Ok(m)
    }

    /// Shortest time between two writes, in nanoseconds.
    pub fn min_interval_ns(&self) -> u64 {
        self.min_interval_ns
    }

    /// Sets the shortest time between two writes.
    pub fn set_min_interval_ns(&mut self, ns: u64) {
        self.min_interval_ns = ns;
    }

    /// Marks caught by the rate limit so far.
    pub fn dropped(&self) -> u32 {
        self.dropped
    }

    /// `write(trace_marker, "latscope spike cpu=C cycle=N lat=L")`—marks a
    /// spike, unless the last mark was less than the minimum interval
    /// before `now_ns` (any monotonic time the caller already has, e.g. the
    /// wake-up). Returns true if the line was written. Never allocates.
    pub fn mark(&mut self, cpu: usize, cycle: u64, latency_ns: u64, now_ns: u64) -> bool {
        if let Some(last) = self.last_ns {
            if now_ns.saturating_sub(last) < self.min_interval_ns {
                self.dropped = self.dropped.saturating_add(1);
                return false;
            }
        }
        self.last_ns = Some(now_ns);
        let mut line = heapless::String::<96>::new();
        let _ = write!(
            line,
            "{MARK_PREFIX} cpu={cpu} cycle={cycle} lat={latency_ns}"
        );
        let ok = rustix::io::write(&self.fd, line.as_bytes()).is_ok();
        if let (true, Some(marks)) = (ok, &self.marks) {
            // Tells the sender a new freeze may have begun.
            marks.fetch_add(1, Ordering::Release);
        }
        if let Some(stop) = &self.stop {
            let _ = rustix::io::write(stop, b"0");
        }
        ok
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use latscope_core::explain::CauseKind;
    use std::sync::atomic::AtomicBool;

    /// Serialises the tests that use tracefs (across test binaries too).
    pub(crate) struct TraceLock(#[allow(dead_code)] OwnedFd);

    pub(crate) fn trace_lock() -> TraceLock {
        let path = std::env::temp_dir().join("latscope-tracefs-test.lock");
        let fd = rustix::fs::open(
            &path,
            OFlags::CREATE | OFlags::RDWR | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .expect("lock file");
        rustix::fs::flock(&fd, rustix::fs::FlockOperation::LockExclusive).expect("flock");
        TraceLock(fd)
    }

    fn pin(cpu: usize) {
        let mut set = rustix::thread::CpuSet::new();
        set.set(cpu);
        rustix::thread::sched_setaffinity(None, &set).unwrap();
    }

    #[test]
    fn cpumask_format() {
        assert_eq!(cpumask(&[0]), "00000001");
        assert_eq!(cpumask(&[1, 3]), "0000000a");
        assert_eq!(cpumask(&[0, 33]), "00000002,00000001");
    }

    #[test]
    fn mount_unescape() {
        assert_eq!(unescape_mount("/a\\040b"), "/a b");
        assert_eq!(unescape_mount("/a\\"), "/a\\");
        assert_eq!(unescape_mount("/a\\04"), "/a\\04");
    }

    #[test]
    fn find_mark_matches_cpu_and_cycle() {
        let t = "  x-5 [000] ...1. 1.000010: tracing_mark_write: latscope spike cpu=0 cycle=7 lat=5\n\
                 x-6 [000] ...1. 1.000020: tracing_mark_write: latscope spike cpu=0 cycle=8 lat=5\n";
        let m = find_mark(t, 0, 7, None);
        assert_eq!(m.ours, Some((1_000_010_000, 5)));
        assert_eq!(m.newest_cycle, Some(8));
        assert_eq!(find_mark(t, 1, 8, None), Marks::default());
        // a thread's own marker only
        assert_eq!(find_mark(t, 0, 7, Some(6)).ours, None);
        assert_eq!(find_mark(t, 0, 8, Some(6)).ours, Some((1_000_020_000, 6)));
    }

    #[test]
    fn an_unpinned_thread_is_found_where_it_was_switched_in() {
        let switch = |cpu: u32, ts: &str, pid: u32| {
            format!(
                " t-9 [{cpu:03}] d..2. {ts}: sched_switch: prev_comm=t prev_pid=9 prev_prio=120 \
                 prev_state=R ==> next_comm=me next_pid={pid} next_prio=19\n"
            )
        };
        let texts = vec![
            (0, switch(0, "0.010060", 8)),
            (1, switch(1, "0.009000", 7) + &switch(1, "0.010050", 7)),
            (2, switch(2, "0.010040", 7)),
        ];
        // thread 7, due at 10.000 ms, woke at 10.055 ms: CPU 1 (the first
        // text with a switch-in inside the window)
        assert_eq!(switched_in(&texts, 7, 10_000_000, 10_055_000), Some(1));
        // before the window only, or another thread only: not found
        assert_eq!(switched_in(&texts[..1], 7, 10_000_000, 10_055_000), None);
        assert_eq!(switched_in(&texts, 7, 10_000_000, 10_030_000), None);
        assert_eq!(switched_in(&texts, 8, 10_000_000, 10_070_000), Some(0));
    }

    /// Live: needs root and tracefs; skipped (with a note) otherwise.
    /// One function, under a file lock, so it never races another test
    /// that uses tracefs.
    #[test]
    fn live_instance_flood_and_cleanup() {
        let _lock = trace_lock();
        let Some(root) = find_tracefs() else {
            eprintln!("skipped: no tracefs");
            return;
        };
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped: not root");
            return;
        }
        // A stale instance of a dead process goes away on open.
        let stale = root.join("instances/latscope-2147483646");
        let _ = fs::create_dir(&stale);
        let cpu = 0usize;
        let mut tracer = Tracer::open_at(&root, &[cpu], 0).expect("open tracer");
        assert!(!stale.exists(), "stale instance removed");
        assert!(tracer.removed_stale() >= 1);
        let dir = tracer.instance_dir().to_path_buf();
        assert!(dir.is_dir());
        assert!(tracer.clock_is_mono());
        assert!(fs::read_to_string(dir.join("trace_clock"))
            .unwrap()
            .contains("[mono]"));
        assert_eq!(
            fs::read_to_string(dir.join("tracing_cpumask"))
                .unwrap()
                .trim_start_matches('0')
                .trim(),
            "1"
        );
        for ev in [
            "irq:softirq_entry",
            "sched:sched_switch",
            "sched:sched_wakeup",
        ] {
            assert!(tracer.enabled_events().iter().any(|e| e == ev), "{ev}");
        }
        // The user's top-level settings are untouched.
        let top_clock = fs::read_to_string(root.join("trace_clock")).unwrap();

        let procs_before = crate::linux::interrupts::ProcInterrupts::snapshot(&[cpu]).unwrap();
        // Loopback UDP flood pinned to the measured CPU, at the lowest
        // priority: NET_RX softirqs.
        let stop = Arc::new(AtomicBool::new(false));
        let flood = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                pin(cpu);
                let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19);
                let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
                rx.set_nonblocking(true).unwrap();
                let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
                let to = rx.local_addr().unwrap();
                let msg = [0x5au8; 1400];
                let mut buf = [0u8; 2048];
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..64 {
                        let _ = tx.send_to(&msg, to);
                    }
                    while rx.recv_from(&mut buf).is_ok() {}
                }
            })
        };

        // The measuring thread: a 1 ms sleeper at nice -20 on the same CPU.
        // It only marks spikes and hands them over, like the real one.
        let (spikes_tx, spikes_rx) = std::sync::mpsc::channel::<(u64, u64, u64)>();
        let mut marker = tracer.marker().expect("marker");
        marker.set_min_interval_ns(2_000_000);
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let measure = std::thread::spawn(move || {
            pin(cpu);
            let me = rustix::thread::gettid();
            let _ = rustix::process::setpriority_process(Some(me), -20);
            // No 50 us timer slack (SCHED_FIFO threads have none either).
            let _ = rustix::thread::set_current_timer_slack(core::num::NonZeroU64::new(1));
            tid_tx
                .send(me.as_raw_nonzero().get().unsigned_abs())
                .unwrap();
            let mut next = mono_ns() + 1_000_000;
            let end = next + 1_500_000_000;
            let mut cycle = 0u64;
            let mut last = (0, next, next);
            while next < end {
                let ts = rustix::time::Timespec {
                    tv_sec: i64::try_from(next / 1_000_000_000).unwrap(),
                    tv_nsec: i64::try_from(next % 1_000_000_000).unwrap(),
                };
                let _ = rustix::thread::clock_nanosleep_absolute(
                    rustix::thread::ClockId::Monotonic,
                    &ts,
                );
                let wake = mono_ns();
                let lat = wake.saturating_sub(next);
                last = (cycle, next, wake);
                if lat > 30_000 {
                    // Written, or refused while the instance is frozen by
                    // an earlier mark; rate-limited marks are not sent.
                    let before = marker.dropped();
                    marker.mark(cpu, cycle, lat, wake);
                    if marker.dropped() == before {
                        let _ = spikes_tx.send(last);
                    }
                }
                cycle += 1;
                next += 1_000_000;
                if next < wake {
                    next = wake + 1_000_000;
                }
            }
            (marker, last)
        });
        tracer.set_thread(cpu, tid_rx.recv().unwrap());

        // The sender's part, on this (unpinned) thread.
        let mut explained = Vec::new();
        for (cycle, due, wake) in spikes_rx.iter().take(40) {
            explained.push(tracer.explain(cpu, due, wake, cycle));
        }
        let (mut marker, last) = measure.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        flood.join().unwrap();

        // A quiet machine may give no spike: explain the last sample then.
        if explained.is_empty() {
            let (cycle, due, wake) = last;
            marker.set_min_interval_ns(0);
            assert!(marker.mark(cpu, cycle, wake - due, wake));
            explained.push(tracer.explain(cpu, due, wake, cycle));
        }
        eprintln!("{} spikes explained", explained.len());
        let mut net_rx = 0u64;
        let mut whole = 0;
        for a in &explained {
            // The machinery: the window is right and the lines add up,
            // whatever the load on this machine did to the sample.
            assert_eq!(a.cpu, 0);
            assert!(!a.coarse);
            assert!(!a.causes.is_empty());
            assert_eq!(a.total_ns(), a.latency_ns, "{a:?}");
            whole += usize::from(!a.partial);
            net_rx += a.find(CauseKind::Softirq, "NET_RX").map_or(0, |c| c.ns);
            eprintln!(
                "spike {} ns cycle {} partial {}",
                a.latency_ns, a.cycle, a.partial
            );
            for c in &a.causes {
                eprintln!(
                    "  {:?} {} {} x{} {} ns",
                    c.kind,
                    c.id,
                    c.label(),
                    c.count,
                    c.ns
                );
            }
        }
        eprintln!("NET_RX inside spikes: {net_rx} ns; {whole} fully traced");
        // The first marked spike froze the buffer with its window inside,
        // unless the spike was longer than the buffer holds.
        assert!(
            explained
                .iter()
                .any(|a| !a.partial || a.latency_ns > 2_000_000),
            "no spike fully traced"
        );
        // The trace is readable and the flood raised NET_RX on the CPU
        // (the /proc fallback sees it too, as a coarse attribution).
        let text = tracer.read_trace(cpu).unwrap();
        assert!(text.lines().filter_map(parse_line).count() > 0);
        assert!(tracer.freezes_on_mark());
        let coarse = procs_before.delta(
            &crate::linux::interrupts::ProcInterrupts::snapshot(&[cpu]).unwrap(),
            cpu,
            0,
            0,
            0,
        );
        assert!(coarse.coarse);
        let rx = coarse
            .find(CauseKind::Softirq, "NET_RX")
            .expect("NET_RX counted");
        eprintln!("coarse: NET_RX x{} on CPU{cpu}", rx.count);
        assert!(rx.count > 100);

        // Cleanup: the instance goes once the marker is closed.
        drop(marker);
        tracer.close().expect("close");
        assert!(!dir.exists(), "instance removed");
        assert_eq!(
            fs::read_to_string(root.join("trace_clock")).unwrap(),
            top_clock
        );
    }
}
