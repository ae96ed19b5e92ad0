//! Spike attribution through tracefs: a private trace instance, the
//! measuring thread's marker, and cyclictest's `--tracemark`.
//!
//! * [`Tracer`] owns the trace instance `instances/latscope-PID`: it creates
//!   it (removing stale instances of dead latscope processes first), enables
//!   the irq, softirq, irq_vectors, hrtimer, idle and sched events for the
//!   measured CPUs only, sets `trace_clock` to `mono` so event times compare
//!   with `CLOCK_MONOTONIC` deadlines, and sizes the buffers small. A
//!   marker keeps its spike's window: by the `snapshot:1` trigger (live
//!   recording goes on; the sender copies the snapshot at its next drain
//!   and arms the trigger again) where the kernel has snapshots, else by
//!   the `traceoff` trigger (recording stops until the window is read).
//!   The non-RT sender thread calls [`Tracer::explain`] after a spike; it
//!   explains the window from a kept copy that covers it or reads
//!   `per_cpu/cpuN/trace`, and runs the core classifier
//!   ([`latscope_core::explain`]). Dropping the tracer (or
//!   [`Tracer::close`]) removes the instance. The user's top-level buffer
//!   and settings are never touched, so there is nothing else to restore.
//! * [`Marker`] is the pre-opened `trace_marker` fd of the instance. The
//!   measuring thread owns it and, on a spike, makes its one rate-limited
//!   `write(2)`: no allocation, no other syscall.
//! * [`Tracemark`] is `--tracemark`: the top-level marker and switch, which
//!   a `-b` break writes once, as cyclictest does.
//!
//! tracefs is located in one way, [`find_tracefs`]; when a run needs it
//! and none is mounted, [`Tracefs::find_or_mount`] mounts it at
//! `/sys/kernel/tracing`. Nothing here forks, execs or needs `unsafe`.

mod marker;
mod marks;
mod mount;
#[cfg(test)]
mod tests;
mod tracer;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use core::fmt::Write as _;

use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};

pub use marker::Marker;
pub use mount::{NoTracefs, Tracefs, MOUNT_POINT};
pub use tracer::{remove_stale_instances, Tracer};

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
    candidates()
        .into_iter()
        .find(|p| p.join("instances").is_dir() && p.join("trace_marker").exists())
}

/// A tracefs mount this process may not enter (tracefs is root's by
/// default), when [`find_tracefs`] found none it may use: such a tracefs
/// is not a missing one.
pub fn denied_tracefs() -> Option<PathBuf> {
    candidates().into_iter().find(|p| {
        fs::metadata(p.join("instances"))
            .is_err_and(|e| e.kind() == io::ErrorKind::PermissionDenied)
    })
}

/// Where tracefs may be: its usual place, every tracefs mount, `tracing/`
/// under every debugfs mount, debugfs's usual place.
fn candidates() -> Vec<PathBuf> {
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

/// cyclictest's `--tracemark`: the top-level `trace_marker` and
/// `tracing_on` of tracefs, opened before measuring. On a `-b` break the
/// measuring thread writes the marker and stops the user's tracing.
#[derive(Debug)]
pub struct Tracemark {
    marker: OwnedFd,
    tracing_on: OwnedFd,
}

impl Tracemark {
    /// `open(trace_marker)` and `open(tracing_on)` at the top of the
    /// tracefs at `root`; `None` if either cannot be opened.
    pub fn open(root: &Path) -> Option<Tracemark> {
        let open = |name: &str| {
            rustix::fs::open(
                root.join(name),
                OFlags::WRONLY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .ok()
        };
        Some(Tracemark {
            marker: open("trace_marker")?,
            tracing_on: open("tracing_on")?,
        })
    }

    /// `write(trace_marker, text)` then `write(tracing_on, "0")`.
    pub fn hit(&self, text: &str) {
        let _ = rustix::io::write(&self.marker, text.as_bytes());
        let _ = rustix::io::write(&self.tracing_on, b"0");
    }
}
