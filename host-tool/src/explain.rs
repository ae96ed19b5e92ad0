//! `latscope-host explain FILE.dat`: a spike's causes from a trace.dat
//! (version 6), by the computation the target runs on the pages it keeps
//! in memory: core's [`History::explain`] over the pages of the spike's
//! CPU, with the decoder and classifier the target uses.
//!
//! The target writes, for each thread's worst spike per report interval,
//! `latscope-tT-cpuC-cK.dat` (the CPU's pages from before the deadline to
//! past the wake-up) and beside it `latscope-tT-cpuC-cK.json`, the
//! [`Sidecar`]: the window and how far the trace was read, in
//! `CLOCK_MONOTONIC` nanoseconds, the trace's `mono` clock. A trace.dat
//! without a sidecar (one `trace-cmd record` wrote, converted to version
//! 6) needs the window from the command line ([`WindowOptions`]), in the
//! file's own clock: trace-cmd's default clock is `local`, and whatever
//! clock the file has, its times are what `trace-cmd report` prints.
//! Options override the sidecar.
//!
//! Nothing in the file can make it panic: core bounds-checks every
//! section on parsing, a page or event that does not decode is a loss of
//! unknown count in the attribution, and the file is refused above
//! [`FILE_LIMIT`] bytes.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use latscope_core::explain::{Attribution, Window};
use latscope_core::ringbuf::{Decoder, EventFormats, History, Page, PageHeader};
use latscope_core::tracedat::TraceDat;
use serde::Deserialize;

use crate::console;
use crate::error::{Error, Result, EXIT_OK};

/// Largest trace.dat read, in bytes: the file and a copy of one CPU's
/// pages are in memory at once.
pub const FILE_LIMIT: u64 = 256 << 20;

/// Largest sidecar read, in bytes (the target's are about 200).
const SIDECAR_LIMIT: u64 = 64 << 10;

/// Largest page size read: kernels use 4 to 64 KiB, and a ring buffer's
/// sub-buffers go up to 1 MiB; a larger one is a corrupt file, and the
/// history holds one page more than the file.
const PAGE_LIMIT: u32 = 1 << 20;

/// The window as the command line gives it; each overrides the
/// sidecar's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowOptions {
    /// `--cpu`: the CPU whose pages hold the spike.
    pub cpu: Option<u32>,
    /// `--pid`: the measuring thread's id (0: unknown).
    pub pid: Option<u32>,
    /// `--from`: the deadline, nanoseconds of the file's clock.
    pub from_ns: Option<u64>,
    /// `--to`: the wake-up, same clock.
    pub to_ns: Option<u64>,
}

/// What `explain` was asked to do.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The trace.dat.
    pub file: PathBuf,
    /// `--json`: the explanation as JSON.
    pub json: bool,
    /// The window's options.
    pub window: WindowOptions,
}

/// The sidecar the target writes beside a spike's trace.dat: the
/// window, in `CLOCK_MONOTONIC` nanoseconds (the trace's `mono` clock).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Sidecar {
    /// The measuring thread's index (`T0`, `T1`, ...).
    #[serde(default)]
    pub thread: u32,
    /// Its kernel thread id.
    pub tid: u32,
    /// The CPU it was late on.
    pub cpu: u32,
    /// The late sample's cycle.
    pub cycle: u64,
    /// The sample's deadline.
    pub deadline_ns: u64,
    /// When the thread woke.
    pub wake_ns: u64,
    /// Wake-up minus deadline.
    #[serde(default)]
    pub latency_ns: u64,
    /// Up to when the target had read the kernel's buffer (a wake-up
    /// before it with no event since the last one was untraced time).
    pub recorded_to_ns: u64,
    /// The trace clock of its times.
    #[serde(default)]
    pub trace_clock: String,
}

impl Sidecar {
    /// Reads a sidecar's JSON.
    ///
    /// # Errors
    ///
    /// [`Error::Sidecar`] (naming `what`) if it is not the sidecar's
    /// JSON, or its wake-up is before its deadline.
    pub fn parse(what: &str, bytes: &[u8]) -> Result<Self> {
        let bad = |detail: String| Error::Sidecar {
            what: what.to_string(),
            detail,
        };
        let s: Self = serde_json::from_slice(bytes)
            .map_err(|e| bad(e.to_string().replace(['\n', '\r'], " ")))?;
        if s.wake_ns < s.deadline_ns {
            return Err(bad("wake_ns is before deadline_ns".into()));
        }
        Ok(s)
    }
}

/// A trace.dat's window explained: what `explain` prints.
#[derive(Debug, Clone)]
pub struct Explanation {
    /// The file's trace clock, if it says.
    pub clock: Option<String>,
    /// Pages of the window's CPU in the file.
    pub pages: usize,
    /// The window explained.
    pub window: Window,
    /// Up to when the trace was recorded (the sidecar's, or the file's
    /// last event).
    pub recorded_to_ns: u64,
    /// The spike's causes.
    pub attribution: Attribution,
}

/// `latscope-host explain FILE.dat`: the explanation on standard output,
/// and exit status 0 (a partial trace is said in its lines, not a
/// failure).
///
/// # Errors
///
/// [`Error::Input`] if the file or its sidecar cannot be read,
/// [`Error::TraceFile`] or [`Error::Sidecar`] if either does not read as
/// one, [`Error::Usage`] if no window is given.
pub fn run(plan: &Plan) -> Result<u8> {
    let what = plan.file.display().to_string();
    let bytes = read_at_most(&plan.file, FILE_LIMIT)
        .map_err(|source| Error::Input {
            what: what.clone(),
            source,
        })?
        .ok_or_else(|| Error::TraceFile {
            what: what.clone(),
            detail: format!(
                "over {} MiB: explain reads a spike's window, not a whole recording",
                FILE_LIMIT >> 20
            ),
        })?;
    let sidecar = read_sidecar(&plan.file)?;
    let e = explain(&what, &bytes, sidecar.as_ref(), plan.window)?;
    if let (Some(s), Some(clock)) = (&sidecar, &e.clock) {
        if !s.trace_clock.is_empty() && s.trace_clock != *clock {
            console::warn(format_args!(
                "{what}: the sidecar's times are of the {} clock, the file's of {clock}",
                s.trace_clock
            ));
        }
    }
    let out = if plan.json {
        render_json(&what, &e)
    } else {
        render(&what, &e)
    };
    console::Std::Out.write(out.as_bytes());
    Ok(EXIT_OK)
}

/// The sidecar beside `file` (`FILE.json` for `FILE.dat`), if there is
/// one.
fn read_sidecar(file: &Path) -> Result<Option<Sidecar>> {
    if file.extension().is_none_or(|x| x != "dat") {
        return Ok(None);
    }
    let path = file.with_extension("json");
    let what = path.display().to_string();
    match read_at_most(&path, SIDECAR_LIMIT) {
        Ok(Some(bytes)) => Sidecar::parse(&what, &bytes).map(Some),
        Ok(None) => Err(Error::Sidecar {
            what,
            detail: format!("over {} KiB", SIDECAR_LIMIT >> 10),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::Input { what, source }),
    }
}

/// The bytes of `path`, or `None` if it holds more than `limit`.
fn read_at_most(path: &Path, limit: u64) -> io::Result<Option<Vec<u8>>> {
    let f = File::open(path)?;
    if f.metadata()?.len() > limit {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    // a file that grows meanwhile, or a FIFO, is still bounded
    f.take(limit + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

/// The window: the options', else the sidecar's.
fn window(what: &str, sidecar: Option<&Sidecar>, given: WindowOptions) -> Result<Window> {
    let cpu = given.cpu.or(sidecar.map(|s| s.cpu));
    let from = given.from_ns.or(sidecar.map(|s| s.deadline_ns));
    let to = given.to_ns.or(sidecar.map(|s| s.wake_ns));
    let (Some(cpu), Some(deadline_ns), Some(wake_ns)) = (cpu, from, to) else {
        return Err(Error::Usage(format!(
            "{what}: no spike window: give --cpu N --from T --to T (and --pid P), \
             or keep the target's sidecar FILE.json beside FILE.dat \
             (see latscope-host explain --help)"
        )));
    };
    if wake_ns < deadline_ns {
        return Err(Error::Usage(format!(
            "{what}: the window ends before it starts (--to before --from)"
        )));
    }
    Ok(Window {
        cpu,
        cycle: sidecar.map_or(0, |s| s.cycle),
        deadline_ns,
        wake_ns,
        pid: given.pid.or(sidecar.map(|s| s.tid)).unwrap_or(0),
    })
}

/// Explains the window (the options', else the sidecar's) from the
/// pages of its CPU in the trace.dat `bytes`, named `what` in errors.
///
/// # Errors
///
/// [`Error::TraceFile`] if the bytes are not a trace.dat of version 6
/// that core reads (its message names the conversion of another
/// version), its page header or an event format the classifier reads
/// does not read, or it has no such CPU (with `--cpu`, [`Error::Usage`]);
/// [`Error::Usage`] if no window is given.
pub fn explain(
    what: &str,
    bytes: &[u8],
    sidecar: Option<&Sidecar>,
    given: WindowOptions,
) -> Result<Explanation> {
    let bad = |detail: String| Error::TraceFile {
        what: what.to_string(),
        detail,
    };
    let t = TraceDat::parse(bytes).map_err(|e| bad(e.to_string()))?;
    let window = window(what, sidecar, given)?;
    let Some(pages) = t.cpu(window.cpu) else {
        let msg = format!("no CPU {} (the file has {})", window.cpu, t.cpus());
        return Err(match given.cpu {
            Some(_) => Error::Usage(format!("{what}: --cpu: {msg}")),
            None => bad(msg),
        });
    };
    let header = PageHeader::parse(t.header_page()).map_err(|e| bad(e.to_string()))?;
    let mut formats = EventFormats::new();
    for f in t.formats() {
        formats
            .add(f.text)
            .map_err(|e| bad(format!("a format of system {:?}: {e}", f.system)))?;
    }
    if t.page_size() > PAGE_LIMIT {
        return Err(bad(format!(
            "page size {} over {} KiB",
            t.page_size(),
            PAGE_LIMIT >> 10
        )));
    }
    let page_size = t.page_size() as usize;
    let count = pages.len().div_ceil(page_size);
    // one slot more than the pages: the history's free slot
    let store = vec![0u8; (count.max(1) + 1) * page_size];
    let mut history = History::new(store, header, page_size).map_err(|e| bad(e.to_string()))?;
    for p in pages.chunks(page_size) {
        history.slot()[..p.len()].copy_from_slice(p);
        history.keep(p.len());
    }
    let recorded_to_ns =
        sidecar.map_or_else(|| last_ns(header, pages, page_size), |s| s.recorded_to_ns);
    let mut dec = Box::new(Decoder::new(formats));
    let attribution = history.explain(&mut dec, window, recorded_to_ns);
    Ok(Explanation {
        clock: t.trace_clock().map(str::to_string),
        pages: count,
        window,
        recorded_to_ns,
        attribution,
    })
}

/// The latest time in `pages`: of their events, or a page's own
/// timestamp if later. Everything up to it was recorded; what came after
/// the file does not say.
fn last_ns(header: PageHeader, pages: &[u8], page_size: usize) -> u64 {
    let mut last = 0;
    for p in pages.chunks(page_size) {
        let Ok(page) = Page::new(header, p) else {
            continue;
        };
        last = last.max(page.timestamp_ns());
        for e in page.events().map_while(|e| e.ok()) {
            last = last.max(e.ts_ns);
        }
    }
    last
}

/// What `explain` prints: a line naming the file, its version, clock,
/// CPU and pages, then the spike as `report` prints an explained one.
pub fn render(what: &str, e: &Explanation) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{what}: trace.dat version 6, clock {}, CPU{}, {} page{}",
        e.clock.as_deref().unwrap_or("unknown"),
        e.window.cpu,
        e.pages,
        if e.pages == 1 { "" } else { "s" }
    );
    crate::report::text::attribution(&mut out, &e.attribution);
    out
}

/// `explain --json`: the explanation as one JSON object, each cause with
/// its kind (`Irq`, `Softirq`, `Vector`, `TimerDelay`, `IdleExit`,
/// `Task`, `Untraced`, `Other`, `Masked`), its culprit as the wire types
/// it (`{"Irq": {"irq": 13, "name": "irq/13-uart", "thread": {"RealTime":
/// 50}}}`, `{"Softirq": "NetRx"}`, ...), count, nanoseconds and the label
/// `report` gives it.
pub fn render_json(what: &str, e: &Explanation) -> String {
    let a = &e.attribution;
    let causes: Vec<serde_json::Value> = a
        .causes
        .iter()
        .map(|c| {
            serde_json::json!({
                "kind": format!("{:?}", c.kind()),
                "culprit": serde_json::to_value(&c.culprit).unwrap_or_default(),
                "count": c.count,
                "ns": c.ns,
                "label": crate::aggregate::cause_label(c),
            })
        })
        .collect();
    let doc = serde_json::json!({
        "file": what,
        "clock": e.clock,
        "pages": e.pages,
        "cpu": a.cpu,
        "cycle": a.cycle,
        "deadline_ns": a.deadline_ns,
        "latency_ns": a.latency_ns,
        "recorded_to_ns": e.recorded_to_ns,
        "partial": a.partial,
        "total_ns": a.total_ns(),
        "causes": causes,
    });
    format!("{doc}\n")
}

/// A time of `--from` or `--to`: seconds with up to 9 decimals, as
/// `trace-cmd report` prints them (`22534.727720`), or nanoseconds with
/// an `ns` suffix (`22534727720000ns`), read exactly (no floats); `None`
/// for anything else, or a time past `u64` nanoseconds.
pub fn parse_time(s: &str) -> Option<u64> {
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    if let Some(ns) = s.strip_suffix("ns") {
        return if digits(ns) { ns.parse().ok() } else { None };
    }
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if !digits(whole) || frac.len() > 9 || (s.contains('.') && !digits(frac)) {
        return None;
    }
    let frac_ns = match frac {
        "" => 0,
        f => f.parse::<u64>().ok()? * 10u64.pow(9 - f.len() as u32),
    };
    whole
        .parse::<u64>()
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(frac_ns)
}

#[cfg(test)]
mod tests;
