//! Spike attribution through tracefs: a private trace instance read
//! continuously, and cyclictest's `--tracemark`.
//!
//! * [`Tracer`] owns the trace instance `instances/latscope-PID`: it creates
//!   it (removing stale instances of dead latscope processes first), sets
//!   `trace_clock` to `mono` so event times compare with
//!   `CLOCK_MONOTONIC` deadlines, traces only the events the classifier
//!   reads on the measured CPUs only (and `sched_wakeup` only of the
//!   measuring threads, [`Tracer::filter_wakeups`]), and sizes their
//!   buffers ([`buffer_kb`]). A reader thread copies every measured
//!   CPU's `trace_pipe_raw`, binary pages, into a bounded history in
//!   memory every 100 ms, without ever blocking; nothing pauses
//!   or stops recording. The non-RT sender thread calls
//!   [`Tracer::explain`] after a spike: it reads the CPU once more and
//!   explains the window from the history with core's decoder and
//!   classifier ([`latscope_core::ringbuf`], [`latscope_core::explain`]).
//!   Closing the tracer (or dropping it) stops the reader and removes the
//!   instance. The user's top-level buffer and settings are never
//!   touched, so there is nothing else to restore.
//! * [`Tracemark`] is `--tracemark`: the top-level marker and switch, which
//!   a `-b` break writes once, as cyclictest does.
//!
//! tracefs is located in one way, [`find_tracefs`]; when a run needs it
//! and none is mounted, [`Tracefs::find_or_mount`] mounts it at
//! `/sys/kernel/tracing`. Nothing here forks, execs or needs `unsafe`.

mod instance;
mod mount;
mod reader;
#[cfg(test)]
mod tests;
pub mod trace_out;
mod tracer;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use core::fmt::Write as _;

use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};

pub use instance::remove_stale_instances;
pub use mount::{NoTracefs, Tracefs, MOUNT_POINT};
pub use reader::{RtlaShape, TimerlatCpu};
pub use trace_out::{Limits, Outputs, TraceOut};
pub use tracer::{buffer_kb, Tracer};

/// The kernel buffer of each measured CPU by default, in KiB: about 5 s
/// of the emulated board's console flood at ~200 KB/s (the six events at
/// 4,000–4,800 events/s), at least the 2 s the reader needs to fall
/// behind before anything is lost (`docs/explain.md`).
pub const DEFAULT_BUFFER_KB: u32 = 1024;

/// The smallest buffer per measured CPU, in KiB, after `ENOMEM` or when
/// memory is short; CPUs not measured get the kernel's minimum.
pub const MIN_BUFFER_KB: u32 = 64;

/// Prefix of our instances' names; the pid follows.
const INSTANCE_PREFIX: &str = "latscope-";

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

/// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds, as the trace's
/// `mono` clock counts.
fn mono_ns() -> u64 {
    u64::try_from(crate::linux::clock::monotonic_ns()).unwrap_or(0)
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
