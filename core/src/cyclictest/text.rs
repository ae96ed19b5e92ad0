//! The text formats: status lines, histogram, `-v`, `--spike`, `-b`.

use core::fmt::{Result, Write};

use super::{HistShape, Options, Thread};
use crate::stats::{quantile, Ppm};
use crate::wire::SpikeSample;

/// The live view's header and blank line:
/// `policy: fifo: loadavg: 0.40 0.18 0.07 1/98 5206          `.
///
/// # Errors
///
/// The writer's error (`fmt::Error`); what was written before it stays.
pub fn live_header<W: Write>(w: &mut W, policy: &str, loadavg: &str) -> Result {
    write!(w, "policy: {policy}: loadavg: {loadavg}          \n\n")
}

/// One `T:` status line with its newline, in µs (or ns with `nsecs`):
/// `T: 0 (13913) P:80 I:1000 C:      3 Min:     12 Act:   22 Avg:   21 Max:      30`.
///
/// # Errors
///
/// The writer's error (`fmt::Error`); what was written before it stays.
pub fn status_line<W: Write>(w: &mut W, t: &Thread<'_>, nsecs: bool) -> Result {
    let c = &t.counters;
    write!(
        w,
        "T:{:2} ({:5}) P:{:2} I:{} C:{:7} ",
        t.index, t.tid, t.priority, t.interval_us, c.cycles
    )?;
    if nsecs {
        writeln!(
            w,
            "Min:{:7} Act:{:8} Avg:{:8} Max:{:8}",
            t.min_ns(),
            c.last,
            t.avg_ns(),
            c.totals.max
        )
    } else {
        writeln!(
            w,
            "Min:{:7} Act:{:5} Avg:{:5} Max:{:8}",
            t.min_ns() / 1000,
            c.last / 1000,
            t.avg_ns() / 1000,
            c.totals.max / 1000
        )
    }
}

/// The status block cyclictest writes on SIGUSR1 (to stderr) and on
/// SIGUSR2 (into `/dev/shm/cyclictest<PID>`).
///
/// # Errors
///
/// The writer's error (`fmt::Error`); what was written before it stays.
pub fn status_block<W: Write>(w: &mut W, threads: &[Thread<'_>], nsecs: bool) -> Result {
    const RULE: &str = "#---------------------------\n";
    w.write_str(RULE)?;
    w.write_str("# cyclictest current status:\n")?;
    for t in threads {
        status_line(w, t, nsecs)?;
    }
    w.write_str(RULE)
}

/// latscope's own summary of a thread, a `#` comment line (scripts that
/// parse cyclictest's lines skip it): missed periods, early wake-ups,
/// faults, dropped spike samples and the quantiles in µs.
pub(crate) fn extra_line<W: Write>(w: &mut W, t: &Thread<'_>, opts: &Options) -> Result {
    let c = &t.counters;
    write!(
        w,
        "# T:{:2} missed: {} early: {} minflt: {} majflt: {} dropped: {}",
        t.index, c.missed, c.early, t.minflt, t.majflt, t.dropped
    )?;
    for (q, name) in Ppm::REPORTED {
        match quantile(&opts.layout, t.hist, q, c.totals.max) {
            Some(v) => write!(w, " {name}: {}", v / 1000)?,
            None => write!(w, " {name}: -")?,
        }
    }
    w.write_char('\n')
}

/// One row per thread and the optional all-threads figure, each with
/// `" "` before it: `# Max Latencies: 00231 00214 00231`.
fn summary_row<W: Write>(
    w: &mut W,
    label: &str,
    values: impl Iterator<Item = u64>,
    all: Option<u64>,
    width: usize,
) -> Result {
    w.write_str(label)?;
    for v in values {
        write!(w, " {v:0width$}")?;
    }
    if let Some(a) = all {
        write!(w, " {a:0width$}")?;
    }
    w.write_char('\n')
}

/// The `-h`/`-H` histogram text as rt-tests prints it, in the shape of
/// [`Options::hist_shape`]. 2.4: every row `0..hist_us` (zeros included),
/// `# Total:`, the min/avg/max lines, the overflow counts and the cycle
/// numbers of the first overflows, then a blank line; the all-threads
/// column (`-H`) needs more than one thread. 2.7: the rows with samples
/// only, no `# Total:`, the rows' all-threads column with `-H` alone.
///
/// # Errors
///
/// The writer's error (`fmt::Error`); what was written before it stays.
pub fn histogram<W: Write>(w: &mut W, threads: &[Thread<'_>], opts: &Options) -> Result {
    let us = opts.hist_us;
    let shape = opts.hist_shape;
    let all = opts.hist_all && threads.len() > 1;
    let row_all = match shape {
        HistShape::V2_4 => all,
        HistShape::V2_7 => opts.hist_all,
    };
    w.write_str("# Histogram\n")?;
    for i in 0..us as usize {
        let row = || {
            threads
                .iter()
                .map(move |t| t.hist.get(i).copied().unwrap_or(0))
        };
        let sum = row().fold(0u64, u64::saturating_add);
        if shape == HistShape::V2_7 && sum == 0 {
            continue;
        }
        write!(w, "{i:06} ")?;
        for (j, n) in row().enumerate() {
            if j > 0 {
                w.write_char('\t')?;
            }
            write!(w, "{n:06}")?;
        }
        if row_all {
            write!(w, "\t{sum:06}")?;
        }
        w.write_char('\n')?;
    }
    let sum = |f: &dyn Fn(&Thread<'_>) -> u64| threads.iter().map(f).sum::<u64>();
    if shape == HistShape::V2_4 {
        let total = all.then(|| sum(&|t| t.in_range(us)));
        summary_row(
            w,
            "# Total:",
            threads.iter().map(|t| t.in_range(us)),
            total,
            9,
        )?;
    }
    let mins = threads.iter().map(|t| t.min_ns() / 1000);
    summary_row(w, "# Min Latencies:", mins, None, 5)?;
    let avgs = threads.iter().map(|t| t.avg_ns() / 1000);
    summary_row(w, "# Avg Latencies:", avgs, None, 5)?;
    let max = threads.iter().map(|t| t.counters.totals.max / 1000);
    let maxmax = all.then(|| max.clone().max().unwrap_or(0));
    summary_row(w, "# Max Latencies:", max, maxmax, 5)?;
    let over = |t: &Thread<'_>| t.overflows(&opts.layout, us);
    let all_over = all.then(|| sum(&over));
    summary_row(
        w,
        "# Histogram Overflows:",
        threads.iter().map(over),
        all_over,
        5,
    )?;
    overflow_lines(w, threads, opts)?;
    w.write_char('\n')
}

/// The histogram's `# Histogram Overflow at cycle number:` and `# Thread N:`
/// lines, in the shape of [`Options::hist_shape`].
fn overflow_lines<W: Write>(w: &mut W, threads: &[Thread<'_>], opts: &Options) -> Result {
    let us = opts.hist_us;
    let shape = opts.hist_shape;
    w.write_str("# Histogram Overflow at cycle number:\n")?;
    for t in threads {
        let shown = t.overflow_cycles.len().min(us as usize);
        let cycles = &t.overflow_cycles[..shown];
        let o = t.overflows(&opts.layout, us);
        match shape {
            HistShape::V2_4 => {
                write!(w, "# Thread {}:", t.index)?;
                for c in cycles {
                    write!(w, " {c:05}")?;
                }
            }
            HistShape::V2_7 => {
                write!(w, "# Thread {}: ", t.index)?;
                for (k, c) in cycles.iter().enumerate() {
                    if k > 0 {
                        w.write_char(' ')?;
                    }
                    write!(w, "{c:05}")?;
                }
            }
        }
        // 2.7 says `others` as soon as its list of `hist_us` is full
        let full = shape == HistShape::V2_7 && o >= u64::from(us);
        if o > shown as u64 || full {
            write!(w, " # {:05} others", o - shown as u64)?;
        }
        w.write_char('\n')?;
    }
    Ok(())
}

/// One `-v` line: `thread:cycle:value`, value in µs (ns with `nsecs`).
///
/// # Errors
///
/// The writer's error (`fmt::Error`); what was written before it stays.
pub fn verbose_line<W: Write>(
    w: &mut W,
    thread: u16,
    cycle: u64,
    latency_ns: i64,
    nsecs: bool,
) -> Result {
    let v = if nsecs { latency_ns } else { latency_ns / 1000 };
    writeln!(w, "{thread:8}:{cycle:8}:{v:8}")
}

/// The `--spike` list: a blank line, one line per kept spike sample (latency in
/// µs, or ns with `nsecs`; the wake-up time stamp always in µs of the
/// clock), and `spikes = N` with a blank line. Nothing at all when no
/// sample was over the threshold, as cyclictest.
///
/// # Errors
///
/// The writer's error (`fmt::Error`); what was written before it stays.
pub fn spike_lines<W: Write>(w: &mut W, spikes: &[SpikeSample], total: u64, nsecs: bool) -> Result {
    if total == 0 {
        return Ok(());
    }
    w.write_char('\n')?;
    for s in spikes {
        let v = if nsecs {
            s.latency_ns
        } else {
            s.latency_ns / 1000
        };
        let ts = s.deadline_ns.saturating_add(s.latency_ns) / 1000;
        writeln!(w, "T:{:2} Spike:{v:8}: TS: {ts:12}", s.thread)?;
    }
    write!(w, "spikes = {total}\n\n")
}

/// The `-b` lines: the thread ids, and the thread and value (µs, ns with
/// `nsecs`) of the break if one happened.
pub(crate) fn break_lines<W: Write>(
    w: &mut W,
    threads: &[Thread<'_>],
    broke: Option<(u16, u64)>,
    nsecs: bool,
) -> Result {
    w.write_str("# Thread Ids:")?;
    for t in threads {
        write!(w, " {:05}", t.tid)?;
    }
    w.write_char('\n')?;
    if let Some((thread, ns)) = broke {
        let tid = threads
            .iter()
            .find(|t| t.index == thread)
            .map_or(0, |t| t.tid);
        let v = if nsecs { ns } else { ns / 1000 };
        write!(w, "# Break thread: {tid}\n# Break value: {v}\n")?;
    }
    Ok(())
}

/// Everything printed when a run ends (besides a `--json=-` document,
/// which comes first).
#[derive(Debug, Clone, Copy)]
pub struct EndText<'a> {
    /// The threads.
    pub threads: &'a [Thread<'a>],
    /// Formats.
    pub opts: Options,
    /// The `T:` lines (cyclictest: `-q` without `-h`).
    pub status_lines: bool,
    /// latscope's `# T:` lines.
    pub extras: bool,
    /// `--spike`: the spike samples in print order and how many there were.
    pub spikes: Option<(&'a [SpikeSample], u64)>,
    /// `-b` was given.
    pub break_armed: bool,
    /// The break, if one happened: thread index and latency in ns.
    pub broke: Option<(u16, u64)>,
}

/// The end-of-run text in cyclictest's order: status lines, (latscope's
/// `#` lines), spikes, histogram, break lines.
///
/// # Errors
///
/// The writer's error (`fmt::Error`); what was written before it stays.
pub fn end_text<W: Write>(w: &mut W, e: &EndText<'_>) -> Result {
    let nsecs = e.opts.nsecs;
    if e.status_lines {
        for t in e.threads {
            status_line(w, t, nsecs)?;
        }
    }
    if e.extras {
        for t in e.threads {
            extra_line(w, t, &e.opts)?;
        }
    }
    if let Some((spikes, total)) = e.spikes {
        spike_lines(w, spikes, total, nsecs)?;
    }
    if e.opts.hist_us > 0 {
        histogram(w, e.threads, &e.opts)?;
    }
    if e.break_armed {
        break_lines(w, e.threads, e.broke, nsecs)?;
    }
    Ok(())
}
