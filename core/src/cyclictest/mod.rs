//! cyclictest's output formats (rt-tests 2.4), implemented once for the
//! target and the host: the live and `-q` status lines, the SIGUSR1/SIGUSR2
//! status block, the `-h`/`-H` histogram text, the `-v`, `--spike` and `-b`
//! lines, and the `--json` document. Everything formats into any
//! [`core::fmt::Write`], without an allocator and without floating point.
//!
//! The inputs are plain figures ([`Thread`], [`Options`]), so a target
//! reading its live shared histograms and a host reading a recording print the same
//! bytes for the same run.

mod json;
mod text;

pub use json::{
    json, JsonDoc, SpikeTotals, TimerlatContextJson, TimerlatCpuJson, TraceTotals, Uname, Wakeups,
    WindowCounts, WindowTotals,
};
pub use text::{
    end_text, histogram, live_header, spike_lines, status_block, status_line, verbose_line, EndText,
};

use core::fmt;

use crate::layout::Layout;
use crate::seqlock::Counters;
use crate::tz::{civil_from_days, weekday, WallTime};
use crate::wire::SpikeSample;

/// cyclictest's default number of `--spike` samples kept (`--spike-nodes`).
pub const SPIKE_NODES: usize = 1024;

/// What the formats know about one measuring thread.
#[derive(Debug, Clone, Copy)]
pub struct Thread<'a> {
    /// Thread index (`T:`).
    pub index: u16,
    /// Kernel thread id.
    pub tid: i32,
    /// Priority (`P:`).
    pub priority: u32,
    /// Interval in µs (`I:`).
    pub interval_us: u64,
    /// CPU it is pinned to, -1 if none.
    pub cpu: i32,
    /// NUMA node of that CPU, -1 if none (as cyclictest under `-S`).
    pub node: i32,
    /// Statistics.
    pub counters: Counters,
    /// Minor page faults since measuring started.
    pub minflt: u64,
    /// Major page faults since measuring started.
    pub majflt: u64,
    /// Flagged samples the target could not queue.
    pub dropped: u64,
    /// Cumulative bucket counts in [`Options::layout`].
    pub hist: &'a [u64],
    /// Cycle numbers (from 0) of the first `-h` overflows.
    pub overflow_cycles: &'a [u64],
}

/// Which rt-tests release's shape the `-h`/`-H` histogram takes, in the
/// text and in `--json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HistShape {
    /// rt-tests 2.4 to 2.6, what rteval and OSADL's scripts read: every
    /// row from 0 (zeros included), the `# Total:` line, the all-threads
    /// column (`-H`) with two threads or more, `# Thread N:` with a space
    /// before each cycle number, and a `"histogram"` object in every
    /// thread of the JSON document.
    #[default]
    V2_4,
    /// rt-tests 2.7 and later (to 2.10): only the rows some thread has
    /// samples in, no `# Total:` line, the all-threads column with `-H`
    /// even for one thread, `# Thread N: ` with the cycle numbers after
    /// it (`others` once the list is full), and no `"histogram"` object
    /// without `-h`.
    V2_7,
}

impl HistShape {
    /// The shape named as `--hist-shape` takes it: `2.4` or `2.7`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "2.4" => Some(HistShape::V2_4),
            "2.7" => Some(HistShape::V2_7),
            _ => None,
        }
    }

    /// Its name, as [`HistShape::parse`] takes it.
    pub const fn name(self) -> &'static str {
        match self {
            HistShape::V2_4 => "2.4",
            HistShape::V2_7 => "2.7",
        }
    }
}

/// The run-wide settings that shape the formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Bucket layout of [`Thread::hist`].
    pub layout: Layout,
    /// `-h`/`-H` range in µs (0 = no histogram); at most the layout's
    /// linear range.
    pub hist_us: u32,
    /// `-H`: the all-threads column.
    pub hist_all: bool,
    /// `-N`: nanoseconds instead of microseconds.
    pub nsecs: bool,
    /// Which release's histogram shape (`--hist-shape`).
    pub hist_shape: HistShape,
}

impl Thread<'_> {
    /// Smallest sample in ns (0 while empty).
    pub fn min_ns(&self) -> u64 {
        if self.counters.totals.count > 0 {
            self.counters.totals.min
        } else {
            0
        }
    }

    /// Integer average in ns (0 while empty).
    pub fn avg_ns(&self) -> u64 {
        let t = &self.counters.totals;
        t.sum.checked_div(t.count).unwrap_or(0)
    }

    /// Samples below `us` µs: the histogram rows.
    fn in_range(&self, us: u32) -> u64 {
        self.hist.iter().take(us as usize).sum()
    }

    /// Samples at or above `us` µs: cyclictest's overflows.
    fn overflows(&self, layout: &Layout, us: u32) -> u64 {
        self.hist
            .iter()
            .enumerate()
            .filter(|(i, _)| layout.lower_us(*i) >= us as u64)
            .map(|(_, c)| *c)
            .sum()
    }
}

/// rt-tests' cap of the command line in its JSON (`MAX_COMMAND_LINE`).
pub const MAX_COMMAND_LINE: usize = 4096;

/// The JSON's `"cmdline:"` as rt-tests' `rt_init` builds it: every word of
/// argv from `argv[0]` as typed, each followed by a blank except the last,
/// stopping at the first word that would reach [`MAX_COMMAND_LINE`] bytes
/// (the blank before it stays).
///
/// # Errors
///
/// The writer's error (`fmt::Error`); what was written before it stays.
pub fn cmdline<'a, W: fmt::Write>(
    w: &mut W,
    argv: impl IntoIterator<Item = &'a str>,
) -> fmt::Result {
    let mut offset = 0usize;
    let mut words = argv.into_iter().peekable();
    while let Some(word) = words.next() {
        if offset + word.len() + 1 >= MAX_COMMAND_LINE {
            break;
        }
        w.write_str(word)?;
        if words.peek().is_some() {
            w.write_char(' ')?;
        }
        offset += word.len() + 1;
    }
    Ok(())
}

/// Whether a sample belongs in the `--spike` list of a run whose threshold
/// is `spike_ns` (cyclictest: `diff > trigger`).
pub fn is_spike(r: &SpikeSample, spike_ns: u64) -> bool {
    spike_ns > 0 && r.latency_ns > 0 && r.latency_ns as u64 > spike_ns
}

/// Order `--spike` samples as they are printed: by wake-up time, then
/// thread and cycle.
pub fn sort_spikes(spikes: &mut [SpikeSample]) {
    crate::sort::by_key(spikes, |s| {
        (
            s.deadline_ns.saturating_add(s.latency_ns),
            s.thread,
            s.cycle,
        )
    });
}

/// A time as cyclictest's JSON writes it: `strftime("%a, %d %b %Y %T %z")`
/// of the local time, e.g. `Mon, 30 Nov 2026 13:24:35 +0100`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rfc2822(pub WallTime);

impl fmt::Display for Rfc2822 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const WD: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
        const MON: [&str; 12] = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        let off = self.0.utc_offset_s;
        let local = self.0.unix_s.saturating_add(off as i64);
        let days = local.div_euclid(86_400);
        let secs = local.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        let mins = (off / 60).unsigned_abs();
        write!(
            f,
            "{}, {d:02} {} {y} {:02}:{:02}:{:02} {}{:02}{:02}",
            WD[weekday(days) as usize],
            MON[(m as usize).clamp(1, 12) - 1],
            secs / 3600,
            secs / 60 % 60,
            secs % 60,
            if off < 0 { '-' } else { '+' },
            mins / 60,
            mins % 60
        )
    }
}

#[cfg(test)]
mod tests;
