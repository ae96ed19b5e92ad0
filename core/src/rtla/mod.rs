//! rtla's `timerlat hist` text (rtla 6.12, Linux's
//! `tools/tracing/rtla/src/timerlat_hist.c`), for latscope invoked as
//! `rtla timerlat hist`: scripts that read rtla's histogram (rteval's
//! timerlat module) read latscope's unchanged. Everything formats into any
//! [`core::fmt::Write`], without an allocator and without floating point.
//!
//! The input is what rtla keeps per CPU: for each of the three contexts
//! (timer IRQ, thread, user-space thread) the bucket counts, the samples
//! past the last bucket, and the count, minimum, sum and maximum of the
//! samples, all in the printed unit ([`Unit`]). rtla divides each sample
//! by the unit first (µs: `ns / 1000`, truncated) and only then buckets
//! and sums it, so its averages are averages of truncated samples:
//! [`Stats::add`] does the same, and [`Unit::of_ns`] is the division.
//!
//! # References
//!
//! * `rtla-timerlat-hist(1)`;
//! * rtla 6.12's `timerlat_print_stats()`, `timerlat_print_summary()`,
//!   `timerlat_print_stats_all()` and `get_duration()` (`utils.c`).

mod text;

#[cfg(test)]
mod tests;

pub use text::{duration, histogram, stop_tracing, DEFAULT_TRACE_FILE};

/// The unit rtla prints latencies in (`-n`/`--nano`: nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Unit {
    /// Microseconds, rtla's default: `# Time unit is microseconds (us)`.
    #[default]
    Micros,
    /// Nanoseconds (`-n`): `# Time unit is nanoseconds (ns)`.
    Nanos,
}

impl Unit {
    /// What rtla divides a sample in ns by (its `output_divisor`).
    pub const fn divisor(self) -> u64 {
        match self {
            Unit::Micros => 1000,
            Unit::Nanos => 1,
        }
    }

    /// A sample in ns in this unit, truncated as rtla's integer division
    /// truncates it.
    pub const fn of_ns(self, ns: u64) -> u64 {
        ns / self.divisor()
    }

    /// The unit's name and symbol in the header.
    const fn names(self) -> (&'static str, &'static str) {
        match self {
            Unit::Micros => ("microseconds", "us"),
            Unit::Nanos => ("nanoseconds", "ns"),
        }
    }
}

/// The figures of one histogram column (one context of one CPU), in the
/// printed unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Stats {
    /// Samples (`count:`).
    pub count: u64,
    /// Smallest sample (`min:`); [`u64::MAX`] while empty, as rtla
    /// starts it (empty columns print `-` whatever it holds).
    pub min: u64,
    /// Sum of the samples (`avg:` is `sum / count`, truncated).
    pub sum: u64,
    /// Largest sample (`max:`).
    pub max: u64,
    /// Samples past the last bucket (`over:`).
    pub over: u64,
}

impl Stats {
    /// No sample yet.
    pub const EMPTY: Stats = Stats {
        count: 0,
        min: u64::MAX,
        sum: 0,
        max: 0,
        over: 0,
    };

    /// Count `value` (in the printed unit: [`Unit::of_ns`]) as rtla's
    /// `timerlat_hist_update()` does: into bucket `value / bucket_size` of
    /// `buckets` (one per entry, `-E`), or into [`Stats::over`] past the
    /// last; the sum wraps as rtla's `unsigned long long` does. A
    /// `bucket_size` of 0 counts everything as over.
    pub fn add(&mut self, buckets: &mut [u64], bucket_size: u64, value: u64) {
        self.count += 1;
        self.min = self.min.min(value);
        self.sum = self.sum.wrapping_add(value);
        self.max = self.max.max(value);
        let slot = value
            .checked_div(bucket_size)
            .and_then(|b| usize::try_from(b).ok())
            .and_then(|b| buckets.get_mut(b));
        match slot {
            Some(n) => *n += 1,
            None => self.over += 1,
        }
    }

    /// The smallest sample, `None` while empty.
    pub const fn min(&self) -> Option<u64> {
        if self.count == 0 {
            None
        } else {
            Some(self.min)
        }
    }

    /// The average as rtla prints it (`sum / count`, truncated), `None`
    /// while empty.
    pub const fn avg(&self) -> Option<u64> {
        self.sum.checked_div(self.count)
    }

    /// The largest sample, `None` while empty.
    pub const fn max(&self) -> Option<u64> {
        if self.count == 0 {
            None
        } else {
            Some(self.max)
        }
    }
}

/// One histogram column: one context of one CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column<'a> {
    /// Bucket counts: bucket `i` holds the samples from
    /// `i * bucket_size` to below `(i + 1) * bucket_size`. Rows past its
    /// end print 0.
    pub buckets: &'a [u64],
    /// Its figures.
    pub stats: Stats,
}

impl Column<'_> {
    /// A column without samples.
    pub const EMPTY: Column<'static> = Column {
        buckets: &[],
        stats: Stats::EMPTY,
    };

    /// Bucket `i`'s count (0 past the end of [`Column::buckets`]).
    fn bucket(&self, i: usize) -> u64 {
        self.buckets.get(i).copied().unwrap_or(0)
    }
}

/// The three columns of one CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cpu<'a> {
    /// The CPU's number (`IRQ-003`).
    pub cpu: u32,
    /// Timer IRQ context (`IRQ-`).
    pub irq: Column<'a>,
    /// Thread context (`Thr-`).
    pub thread: Column<'a>,
    /// User-space thread context (`Usr-`, shown with `-u`/`-U`).
    pub user: Column<'a>,
}

impl Cpu<'_> {
    /// Whether rtla shows the CPU: it leaves out a CPU whose IRQ and
    /// thread columns are both empty (whatever its user column holds).
    pub const fn shown(&self) -> bool {
        self.irq.stats.count != 0 || self.thread.stats.count != 0
    }
}

/// A run's histograms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hist<'a> {
    /// The measured CPUs (`-c`), in ascending order as rtla prints them
    /// (a column's place is its rank among the shown CPUs, not its place
    /// in `-c`).
    pub cpus: &'a [Cpu<'a>],
    /// Number of buckets (`-E`, rtla's default 256): rows `0..entries`.
    pub entries: usize,
    /// Bucket width in the printed unit (`-b`, default 1): a row's index
    /// is `row * bucket_size`.
    pub bucket_size: u64,
    /// Whole seconds from the start of measuring to the print
    /// (`# Duration:`).
    pub duration_s: u64,
}

/// What the command line changes in the text: rtla's options of the
/// same names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Options {
    /// `-n`: the unit.
    pub unit: Unit,
    /// `--no-irq`: no IRQ columns.
    pub no_irq: bool,
    /// `--no-thread`: no thread columns.
    pub no_thread: bool,
    /// User columns: rtla shows them with `-u` or `-U`, and when it picked
    /// user-space threads by itself (neither `-u` nor `-k`).
    pub user: bool,
    /// `--no-header`: no `#` lines and no `Index` line.
    pub no_header: bool,
    /// `--no-summary`: no `count:` to `max:` lines and no `ALL:` block.
    pub no_summary: bool,
    /// `--no-index`: no index column (rtla asks for `--with-zeros` with
    /// it: without the index, only every row tells which row is which).
    pub no_index: bool,
    /// `--with-zeros`: rows whose shown columns are all 0 too.
    pub with_zeros: bool,
}

impl Options {
    /// rtla's defaults: µs, IRQ and thread columns, header and summary.
    pub const DEFAULT: Options = Options {
        unit: Unit::Micros,
        no_irq: false,
        no_thread: false,
        user: false,
        no_header: false,
        no_summary: false,
        no_index: false,
        with_zeros: false,
    };
}
