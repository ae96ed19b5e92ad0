//! The `--json` document: rt-tests 2.4's `rt_write_json` header and
//! cyclictest's per-thread results, key for key and line for line, quirky
//! `"cmdline:"` and `"rt_test_version:"` keys included. latscope's extra
//! fields follow cyclictest's at each level, so cyclictest's keys keep
//! their order.

use core::fmt::{self, Result, Write};

use super::{HistShape, Options, Rfc2822, Thread};
use crate::decimal::Fixed;
use crate::hist::Totals;
use crate::layout::Layout;
use crate::stats::{quantile, Ppm};
use crate::tz::WallTime;
use crate::wire::WakeMode;

/// `uname(2)`'s fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Uname<'a> {
    /// `sysname`.
    pub sysname: &'a str,
    /// `nodename`.
    pub nodename: &'a str,
    /// `release`.
    pub release: &'a str,
    /// `version`.
    pub version: &'a str,
    /// `machine`.
    pub machine: &'a str,
}

/// The run-wide facts of the document.
#[derive(Debug, Clone, Copy)]
pub struct JsonDoc<'a> {
    /// All of argv joined by spaces (see `cmdline` in `docs/cyclictest.md`).
    pub cmdline: &'a str,
    /// latscope's version.
    pub tool_version: &'a str,
    /// Start of the run.
    pub start: WallTime,
    /// When the document was written.
    pub end: WallTime,
    /// Exit status of the run.
    pub return_code: i32,
    /// The target's uname.
    pub uname: Uname<'a>,
    /// `/sys/kernel/realtime` reads `1`.
    pub realtime: bool,
    /// How each cycle waited (`-r`, `-s`, `-x`): the `"latscope"` object
    /// names it, with what it gives up.
    pub wake: WakeMode,
    /// What became of the run's spikes (the `"latscope"` object's
    /// `"spikes"`), where the run flagged spikes.
    pub spikes: Option<SpikeTotals>,
    /// What the continuous trace of `--explain` did (the `"latscope"`
    /// object's `"trace"`), where the run traced.
    pub trace: Option<TraceTotals>,
    /// What `--trace-out` wrote (the `"latscope"` object's
    /// `"trace_out"`), where the run asked for it.
    pub windows: Option<WindowTotals<'a>>,
    /// `--timerlat`: each traced CPU's figures (the `"latscope"` object's
    /// `"timerlat"`; empty in other modes).
    pub timerlat: &'a [TimerlatCpuJson<'a>],
}

/// One context of one CPU of `--timerlat`, for `--json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerlatContextJson<'a> {
    /// Count, sum, min and max, ns.
    pub totals: Totals,
    /// Entries the trace lost.
    pub lost: u64,
    /// The histogram's layout and counts, for its quantiles.
    pub layout: Layout,
    /// Its bucket counts.
    pub counts: &'a [u64],
}

/// One traced CPU of `--timerlat`, for `--json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerlatCpuJson<'a> {
    /// The CPU.
    pub cpu: u32,
    /// Periods the IRQ context saw, read or lost.
    pub periods: u64,
    /// Thread entries paired with their IRQ entry.
    pub paired: u64,
    /// Of those, with the IRQ latency above the thread's.
    pub inverted: u64,
    /// IRQ, thread and return-to-user, in that order.
    pub contexts: [TimerlatContextJson<'a>; 3],
}

/// What became of the spikes' windows `--trace-out` was to write as
/// trace.dat files: written, or not, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowCounts {
    /// Files written.
    pub written: u64,
    /// Their bytes (the trace.dat files).
    pub bytes: u64,
    /// Not written: the limit on files or bytes was reached.
    pub limit: u64,
    /// Not written: the writer's queue was full (a slow disk).
    pub queue_full: u64,
    /// Not written: the disk was full.
    pub disk_full: u64,
    /// Not written: another write error.
    pub failed: u64,
    /// Sent whole on the stream (`--trace-out-stream`).
    pub streamed: u64,
    /// Not sent whole on the stream: the line's outbox was full, or the
    /// run ended first.
    pub not_streamed: u64,
}

impl WindowCounts {
    /// Windows not written, for any reason.
    pub fn not_written(&self) -> u64 {
        self.limit + self.lost()
    }

    /// Windows not written to the directory though the limits had room:
    /// output lost. (One the stream did not carry is counted, as a spike
    /// the line had no room for is: the stream's share is a stated
    /// bound.)
    pub fn lost(&self) -> u64 {
        self.queue_full + self.disk_full + self.failed
    }
}

/// `--trace-out`'s part of the document: where, how many, which files.
#[derive(Debug, Clone, Copy)]
pub struct WindowTotals<'a> {
    /// The directory, as given.
    pub dir: &'a str,
    /// What was written and what not.
    pub counts: WindowCounts,
    /// The trace.dat files' names, in order.
    pub files: &'a [&'a str],
}

/// What became of a run's spikes (samples above the spike threshold),
/// over all threads: each was sent on its own, aggregated (only counted:
/// the link had no room) or dropped (its queue was full).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpikeTotals {
    /// Spikes, counted exactly where they were measured.
    pub spikes: u64,
    /// Sent on its own.
    pub sent: u64,
    /// Of those, explained.
    pub explained: u64,
    /// Only counted.
    pub aggregated: u64,
    /// Not queued.
    pub dropped: u64,
}

impl SpikeTotals {
    /// Explained spikes over spikes, in percent (0 without spikes).
    pub fn coverage_pct(&self) -> f64 {
        if self.spikes == 0 {
            return 0.0;
        }
        self.explained as f64 * 100.0 / self.spikes as f64
    }
}

/// Whether the trace holds `sched_wakeup` of the measuring threads only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wakeups {
    /// Every task's (the measuring threads' ids were not known yet).
    All,
    /// Only the measuring threads', by a filter on the woken `pid`.
    Filtered,
    /// Every task's: the kernel refused the filter.
    Refused,
}

impl Wakeups {
    /// Its name in `--json` and the summary.
    pub const fn name(self) -> &'static str {
        match self {
            Wakeups::All => "all",
            Wakeups::Filtered => "measuring threads",
            Wakeups::Refused => "all (filter refused)",
        }
    }
}

/// What the continuous trace of a run did: its sizes, what was read and
/// dropped, what it cost, what failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceTotals {
    /// The kernel's buffer per measured CPU, KiB.
    pub buffer_kb: u32,
    /// latscope's history per measured CPU, KiB.
    pub history_kb: u32,
    /// Pages read from the kernel, all CPUs.
    pub pages_read: u64,
    /// Pages dropped from the history for newer ones.
    pub pages_dropped: u64,
    /// Reads of `trace_pipe_raw` that failed.
    pub reads_failed: u64,
    /// Events the kernel recorded on the measured CPUs
    /// ([`BufferStats::recorded`](crate::ringbuf::BufferStats::recorded)).
    pub events: u64,
    /// Of them, lost before they were read
    /// ([`BufferStats::lost`](crate::ringbuf::BufferStats::lost)).
    pub events_lost: u64,
    /// tracefs writes that failed (settings, filters).
    pub writes_failed: u64,
    /// The reader thread's CPU time, nanoseconds.
    pub reader_cpu_ns: u64,
    /// Whose wake-ups were recorded.
    pub wakeups: Wakeups,
}

/// Write `s` as a JSON string literal. cyclictest prints its strings raw;
/// latscope escapes `"`, `\` and control characters so the document stays
/// valid JSON (identical for every other string).
pub(crate) fn quote<W: Write>(w: &mut W, s: &str) -> Result {
    w.write_char('"')?;
    for ch in s.chars() {
        match ch {
            '"' => w.write_str("\\\"")?,
            '\\' => w.write_str("\\\\")?,
            '\n' => w.write_str("\\n")?,
            '\r' => w.write_str("\\r")?,
            '\t' => w.write_str("\\t")?,
            c if (c as u32) < 0x20 => write!(w, "\\u{:04x}", c as u32)?,
            c => w.write_char(c)?,
        }
    }
    w.write_char('"')
}

/// `num / den` with two decimals, rounded half up, without floating point
/// (cyclictest: `%.2f`).
struct Hundredths(u128);

impl Hundredths {
    fn of(num: u64, den: u64) -> Self {
        if den == 0 {
            return Hundredths(0);
        }
        let (n, d) = (num as u128 * 100, den as u128);
        Hundredths((n + d / 2) / d)
    }
}

impl fmt::Display for Hundredths {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> Result {
        write!(f, "{}.{:02}", self.0 / 100, self.0 % 100)
    }
}

/// `"key": "value"` with the separator and indentation of `rt_write_json`.
fn field<W: Write>(w: &mut W, indent: &str, key: &str, value: &str, last: bool) -> Result {
    write!(w, "{indent}\"{key}\": ")?;
    quote(w, value)?;
    w.write_str(if last { "\n" } else { ",\n" })
}

fn header<W: Write>(w: &mut W, d: &JsonDoc<'_>, shape: HistShape) -> Result {
    w.write_str("{\n  \"file_version\": 1,\n")?;
    field(w, "  ", "cmdline:", d.cmdline, false)?;
    // the release whose document this is: a reader that goes by it
    // expects the histogram shape it names
    let version = match shape {
        HistShape::V2_4 => "2.40",
        HistShape::V2_7 => "2.10",
    };
    writeln!(w, "  \"rt_test_version:\": \"{version}\",")?;
    write!(
        w,
        "  \"start_time\": \"{}\",\n  \"end_time\": \"{}\",\n",
        Rfc2822(d.start),
        Rfc2822(d.end)
    )?;
    write!(
        w,
        "  \"return_code\": {},\n  \"sysinfo\": {{\n",
        d.return_code
    )?;
    let u = &d.uname;
    field(w, "    ", "sysname", u.sysname, false)?;
    field(w, "    ", "nodename", u.nodename, false)?;
    field(w, "    ", "release", u.release, false)?;
    field(w, "    ", "version", u.version, false)?;
    field(w, "    ", "machine", u.machine, false)?;
    write!(w, "    \"realtime\": {}\n  }},\n", u8::from(d.realtime))
}

/// cyclictest's `"histogram"` object: the rows below the range with
/// samples. 2.4: `{      }` when there are none, and the object even
/// without `-h`; 2.7: a line break after the rows, none at all, and no
/// object without `-h`.
fn hist_object<W: Write>(w: &mut W, t: &Thread<'_>, opts: &Options) -> Result {
    let shape = opts.hist_shape;
    if shape == HistShape::V2_7 && opts.hist_us == 0 {
        return Ok(());
    }
    w.write_str("      \"histogram\": {")?;
    let mut first = true;
    for (i, &n) in t.hist.iter().take(opts.hist_us as usize).enumerate() {
        if n > 0 {
            w.write_str(if first { "\n" } else { ",\n" })?;
            write!(w, "        \"{i}\": {n}")?;
            first = false;
        }
    }
    if !first || shape == HistShape::V2_7 {
        w.write_char('\n')?;
    }
    w.write_str("      },\n")
}

/// latscope's per-thread fields, after cyclictest's.
fn extras<W: Write>(w: &mut W, t: &Thread<'_>, opts: &Options) -> Result {
    let c = &t.counters;
    let over = if opts.hist_us > 0 {
        t.overflows(&opts.layout, opts.hist_us)
    } else {
        0
    };
    for (k, v) in [
        ("count", c.totals.count),
        ("min_ns", t.min_ns()),
        ("max_ns", c.totals.max),
        ("avg_ns", t.avg_ns()),
        ("missed", c.missed),
        ("early", c.early),
        ("minflt", t.minflt),
        ("majflt", t.majflt),
        ("dropped", t.dropped),
        ("overflows", over),
    ] {
        writeln!(w, "      \"{k}\": {v},")?;
    }
    w.write_str("      \"quantiles_ns\": {")?;
    for (j, (q, name)) in Ppm::REPORTED.iter().enumerate() {
        w.write_str(if j == 0 { "\n" } else { ",\n" })?;
        match quantile(&opts.layout, t.hist, *q, c.totals.max) {
            Some(v) => write!(w, "        \"{name}\": {v}")?,
            None => write!(w, "        \"{name}\": null")?,
        }
    }
    w.write_str("\n      }\n")
}

fn thread<W: Write>(w: &mut W, t: &Thread<'_>, opts: &Options, last: bool) -> Result {
    let c = &t.counters;
    let scale = if opts.nsecs { 1 } else { 1000 };
    writeln!(w, "    \"{}\": {{", t.index)?;
    hist_object(w, t, opts)?;
    let avg = Hundredths::of(c.totals.sum, c.totals.count.saturating_mul(scale));
    write!(
        w,
        "      \"cycles\": {},\n      \"min\": {},\n      \"max\": {},\n      \"avg\": {avg},\n",
        c.cycles,
        t.min_ns() / scale,
        c.totals.max / scale
    )?;
    write!(
        w,
        "      \"cpu\": {},\n      \"node\": {},\n",
        t.cpu, t.node
    )?;
    extras(w, t, opts)?;
    w.write_str(if last { "    }\n" } else { "    },\n" })
}

/// The whole `--json` document, ending in a newline.
///
/// # Errors
///
/// The writer's error (`fmt::Error`); what was written before it stays.
pub fn json<W: Write>(
    w: &mut W,
    doc: &JsonDoc<'_>,
    threads: &[Thread<'_>],
    opts: &Options,
) -> Result {
    header(w, doc, opts.hist_shape)?;
    write!(
        w,
        "  \"num_threads\": {},\n  \"resolution_in_ns\": {},\n  \"thread\": {{\n",
        threads.len(),
        u8::from(opts.nsecs)
    )?;
    for (k, t) in threads.iter().enumerate() {
        thread(w, t, opts, k + 1 == threads.len())?;
    }
    w.write_str("  },\n  \"latscope\": {\n")?;
    field(w, "    ", "version", doc.tool_version, false)?;
    let caveat = doc.wake.caveat();
    let tl = !doc.timerlat.is_empty();
    let last = doc.spikes.is_none() && doc.trace.is_none() && doc.windows.is_none() && !tl;
    field(
        w,
        "    ",
        "wake_mode",
        doc.wake.name(),
        caveat.is_none() && last,
    )?;
    if let Some(c) = caveat {
        field(w, "    ", "wake_mode_caveat", c, last)?;
    }
    if let Some(t) = doc.spikes {
        writeln!(
            w,
            "    \"spikes\": {{\"spikes\": {}, \"sent\": {}, \"explained\": {}, \
             \"aggregated\": {}, \"dropped\": {}}}{}",
            t.spikes,
            t.sent,
            t.explained,
            t.aggregated,
            t.dropped,
            if doc.trace.is_some() || doc.windows.is_some() || tl {
                ","
            } else {
                ""
            }
        )?;
    }
    if let Some(t) = doc.trace {
        writeln!(
            w,
            "    \"trace\": {{\"buffer_kb\": {}, \"history_kb\": {}, \"pages_read\": {}, \
             \"pages_dropped\": {}, \"reads_failed\": {}, \"events\": {}, \"events_lost\": {}, \
             \"tracefs_writes_failed\": {}, \"reader_cpu_ms\": {}, \"wakeups\": \"{}\"}}{}",
            t.buffer_kb,
            t.history_kb,
            t.pages_read,
            t.pages_dropped,
            t.reads_failed,
            t.events,
            t.events_lost,
            t.writes_failed,
            Fixed(t.reader_cpu_ns as f64 / 1e6, 3),
            t.wakeups.name(),
            if doc.windows.is_some() || tl { "," } else { "" }
        )?;
    }
    if let Some(t) = doc.windows {
        trace_out(w, &t, tl)?;
    }
    if tl {
        timerlat(w, doc.timerlat)?;
    }
    w.write_str("  }\n}\n")
}

/// The `"timerlat"` member: each CPU's periods, pairing and contexts (µs).
fn timerlat<W: Write>(w: &mut W, cpus: &[TimerlatCpuJson<'_>]) -> Result {
    w.write_str("    \"timerlat\": [\n")?;
    for (i, c) in cpus.iter().enumerate() {
        write!(
            w,
            "      {{\"cpu\": {}, \"periods\": {}, \"paired\": {}, \"inverted\": {}",
            c.cpu, c.periods, c.paired, c.inverted
        )?;
        for (name, x) in ["irq", "thread", "user_ret"].iter().zip(&c.contexts) {
            let t = &x.totals;
            let us = |ns: u64| Fixed(ns as f64 / 1e3, 1);
            let avg = t.sum.checked_div(t.count).unwrap_or(0);
            let p99 = quantile(&x.layout, x.counts, Ppm::P99, t.max).unwrap_or(0);
            write!(
                w,
                ", \"{name}\": {{\"count\": {}, \"lost\": {}, \"min_us\": {}, \"avg_us\": {}, \
                 \"p99_us\": {}, \"max_us\": {}}}",
                t.count,
                x.lost,
                us(t.min().unwrap_or(0)),
                us(avg),
                us(p99),
                us(t.max)
            )?;
        }
        w.write_str(if i + 1 == cpus.len() { "}\n" } else { "},\n" })?;
    }
    w.write_str("    ]\n")
}

/// The `"trace_out"` member: counts, then the files' names.
fn trace_out<W: Write>(w: &mut W, t: &WindowTotals<'_>, more: bool) -> Result {
    let c = t.counts;
    w.write_str("    \"trace_out\": {\"dir\": ")?;
    quote(w, t.dir)?;
    write!(
        w,
        ", \"written\": {}, \"bytes\": {}, \"not_written\": {}, \"limit\": {}, \
         \"queue_full\": {}, \"disk_full\": {}, \"failed\": {}, \"streamed\": {}, \
         \"not_streamed\": {}, \"files\": [",
        c.written,
        c.bytes,
        c.not_written(),
        c.limit,
        c.queue_full,
        c.disk_full,
        c.failed,
        c.streamed,
        c.not_streamed
    )?;
    for (i, f) in t.files.iter().enumerate() {
        if i > 0 {
            w.write_str(", ")?;
        }
        quote(w, f)?;
    }
    w.write_str(if more { "]},\n" } else { "]}\n" })
}
