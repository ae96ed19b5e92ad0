//! The trace instance's life: created, armed, filtered, removed; every
//! tracefs write it makes that fails is counted.

use std::fs;
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};

use latscope_core::cyclictest::Wakeups;
use latscope_core::ringbuf::{BufferStats, Decoder, EventFormats, PageHeader};
use rustix::io::Errno;

use super::trace_out::DatHeader;
use super::{cpumask, INSTANCE_PREFIX, MIN_BUFFER_KB};
use crate::linux::procfs::latscope_alive;

/// Removes `instances/latscope-PID` of processes that are gone (at the
/// start of every run, and before a tracer creates its own). Returns the
/// pid and name of each removed. An instance of a live latscope is kept;
/// one named after our own pid is a leftover and goes too. A killed run's
/// instance still holds its buffers until then.
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

/// `instances/latscope-PID`, removed on drop.
#[derive(Debug)]
pub(super) struct Instance {
    dir: PathBuf,
    /// tracefs writes that failed.
    failed: u64,
    live: bool,
}

impl Instance {
    /// `mkdir instances/latscope-PID`, after removing stale instances.
    pub(super) fn create(root: &Path) -> io::Result<Instance> {
        let _ = remove_stale_instances(root);
        let pid = rustix::process::getpid().as_raw_nonzero().get();
        let dir = root
            .join("instances")
            .join(format!("{INSTANCE_PREFIX}{pid}"));
        fs::create_dir(&dir)?;
        Ok(Instance {
            dir,
            failed: 0,
            live: true,
        })
    }

    /// The instance directory.
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// tracefs writes that failed so far.
    pub(super) fn failed_writes(&self) -> u64 {
        self.failed
    }

    /// `write(2)` of `value` to the instance's file `rel`; a failure is
    /// counted.
    pub(super) fn write(&mut self, rel: &str, value: &str) -> io::Result<()> {
        let r = fs::write(self.dir.join(rel), value);
        if r.is_err() {
            self.failed += 1;
        }
        r
    }

    /// The instance's file `rel` in one `read(2)` of 64 KiB:
    /// `events/header_page` gives its text to the first read only.
    pub(super) fn read_once(&self, rel: &str) -> io::Result<String> {
        let mut b = vec![0u8; 65536];
        let n = fs::File::open(self.dir.join(rel))?.read(&mut b)?;
        b.truncate(n);
        String::from_utf8(b).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }

    /// Arms the instance for `cpus`: recording off, only those CPUs, the
    /// `mono` clock (refused: `Unsupported`), old events overwritten, and
    /// with `events` the classifier's events on (none of them:
    /// `Unsupported`). Returns the events enabled.
    pub(super) fn arm(&mut self, cpus: &[usize], events: bool) -> io::Result<Vec<String>> {
        self.write("tracing_on", "0")?;
        self.write("tracing_cpumask", &cpumask(cpus))?;
        let mono = self.write("trace_clock", "mono").is_ok()
            && fs::read_to_string(self.dir.join("trace_clock")).is_ok_and(|c| c.contains("[mono]"));
        if !mono {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "no mono trace clock",
            ));
        }
        let _ = self.write("options/overwrite", "1");
        let mut enabled = Vec::new();
        if !events {
            return Ok(enabled);
        }
        for e in self::events(&self.dir) {
            let p = format!("events/{e}/enable");
            if self.dir.join(&p).exists() && self.write(&p, "1").is_ok() {
                enabled.push(e);
            }
        }
        if enabled.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "no irq or sched trace events",
            ));
        }
        Ok(enabled)
    }

    /// Sizes the buffer of each of `cpus` to `kb` KiB (the other CPUs of
    /// the instance get the minimum). On `ENOMEM` it halves the size,
    /// down to [`MIN_BUFFER_KB`]; returns the size set.
    pub(super) fn size_buffers(&mut self, cpus: &[usize], kb: u32) -> io::Result<u32> {
        let _ = self.write("buffer_size_kb", &MIN_BUFFER_KB.to_string());
        let mut kb = kb.max(MIN_BUFFER_KB);
        loop {
            let mut result = Ok(());
            for &cpu in cpus {
                result = self.write(&format!("per_cpu/cpu{cpu}/buffer_size_kb"), &kb.to_string());
                if result.is_err() {
                    break;
                }
            }
            match result {
                Ok(()) => return Ok(kb),
                Err(e) if Errno::from_io_error(&e) == Some(Errno::NOMEM) && kb > MIN_BUFFER_KB => {
                    kb = (kb / 2).max(MIN_BUFFER_KB);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// `events/sched/sched_wakeup/filter`: only wake-ups of `tids` (on the
    /// woken task's `pid`; `set_event_pid` would filter on the waker).
    pub(super) fn filter_wakeups(&mut self, tids: &[u32]) -> Wakeups {
        if tids.is_empty() {
            return Wakeups::All;
        }
        let mut filter = String::new();
        for t in tids {
            let or = if filter.is_empty() { "" } else { " || " };
            filter += &format!("{or}pid=={t}");
        }
        match self.write("events/sched/sched_wakeup/filter", &filter) {
            Ok(()) => Wakeups::Filtered,
            Err(_) => Wakeups::Refused,
        }
    }

    /// `per_cpu/cpuN/stats`: CPU `cpu`'s ring-buffer counters, if they
    /// read.
    pub(super) fn buffer_stats(&self, cpu: usize) -> Option<BufferStats> {
        let text = self.read_once(&format!("per_cpu/cpu{cpu}/stats")).ok()?;
        Some(BufferStats::parse(&text))
    }

    /// The page layout and the decoder of this kernel's events, from
    /// `events/header_page` and the events' `format` files.
    pub(super) fn decoder(&self, enabled: &[String]) -> io::Result<(PageHeader, Decoder)> {
        let bad =
            |e: latscope_core::Error| io::Error::new(io::ErrorKind::InvalidData, e.to_string());
        let header = PageHeader::parse(&self.read_once("events/header_page")?).map_err(bad)?;
        let mut formats = EventFormats::new();
        for e in enabled
            .iter()
            .map(String::as_str)
            .chain([EventFormats::MARKER])
        {
            let text = self.read_once(&format!("events/{e}/format"))?;
            formats.add(&text).map_err(bad)?;
        }
        Ok((header, Decoder::new(formats)))
    }

    /// What a trace.dat of this instance says before its pages:
    /// `events/header_page`, `events/header_event`, the `format` of each of
    /// `enabled` and of the marker, and `trace_clock`. `root` is the
    /// tracefs, `cpus` the machine's CPU count.
    pub(super) fn dat_header(
        &self,
        root: &Path,
        enabled: &[String],
        cpus: u32,
    ) -> io::Result<DatHeader> {
        let mut formats = Vec::with_capacity(enabled.len() + 1);
        for e in enabled
            .iter()
            .map(String::as_str)
            .chain([EventFormats::MARKER])
        {
            let system = e.split('/').next().unwrap_or(e).to_string();
            formats.push((system, self.read_once(&format!("events/{e}/format"))?));
        }
        Ok(DatHeader {
            long_size: std::mem::size_of::<usize>() as u8,
            page_size: u32::try_from(rustix::param::page_size()).unwrap_or(4096),
            header_page: self.read_once("events/header_page")?,
            header_event: self.read_once("events/header_event")?,
            formats,
            trace_clock: self.read_once("trace_clock")?,
            cpus,
            root: root.to_path_buf(),
        })
    }

    /// Stops recording and removes the instance (`rmdir(2)`), retrying
    /// briefly while the reader's files are still closing (`EBUSY`).
    pub(super) fn remove(&mut self) -> io::Result<()> {
        if !self.live {
            return Ok(());
        }
        let _ = self.write("tracing_on", "0");
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

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// The events to trace, as paths under `events/`: what the classifier
/// reads ([`EventFormats::ENABLE`]) and, where the kernel has them (x86),
/// the interrupt vectors' entries and exits, in the directory's order.
/// Nothing else.
fn events(dir: &Path) -> Vec<String> {
    let mut all: Vec<String> = EventFormats::ENABLE.iter().map(|e| e.to_string()).collect();
    if let Ok(rd) = fs::read_dir(dir.join("events/irq_vectors")) {
        all.extend(
            rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.ends_with("_entry") || n.ends_with("_exit"))
                .map(|n| format!("irq_vectors/{n}")),
        );
    }
    all
}
