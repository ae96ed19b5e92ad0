//! The text of `rtla timerlat hist` (rtla 6.12), printf format by printf
//! format.

use core::fmt::{Result, Write};

use super::{Column, Cpu, Hist, Options, Stats};
use crate::tz::{civil_from_days, days_from_civil};

/// The file rtla saves the trace to when `-t` names none (and with `-a`).
pub const DEFAULT_TRACE_FILE: &str = "timerlat_trace.txt";

/// The three contexts, in the order rtla prints a CPU's columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    Irq,
    Thread,
    User,
}

impl Context {
    const ALL: [Context; 3] = [Context::Irq, Context::Thread, Context::User];

    /// Whether `o` shows the context's columns.
    const fn shown(self, o: &Options) -> bool {
        match self {
            Context::Irq => !o.no_irq,
            Context::Thread => !o.no_thread,
            Context::User => o.user,
        }
    }

    /// The column's name before its CPU number (`IRQ-000`).
    const fn label(self) -> &'static str {
        match self {
            Context::Irq => "IRQ",
            Context::Thread => "Thr",
            Context::User => "Usr",
        }
    }

    /// The column's title in the `ALL:` line, blanks included: rtla
    /// right-aligns `IRQ` in 9 places and the others in 10.
    const fn all_title(self) -> &'static str {
        match self {
            Context::Irq => "      IRQ",
            Context::Thread => "       Thr",
            Context::User => "       Usr",
        }
    }

    const fn of<'c, 'a>(self, cpu: &'c Cpu<'a>) -> &'c Column<'a> {
        match self {
            Context::Irq => &cpu.irq,
            Context::Thread => &cpu.thread,
            Context::User => &cpu.user,
        }
    }

    /// The contexts `o` shows, in order.
    fn shown_in(o: &Options) -> impl Iterator<Item = Context> + '_ {
        Context::ALL.into_iter().filter(move |c| c.shown(o))
    }
}

/// The shown columns of `h`, CPU by CPU, each CPU's in context order.
fn columns<'h>(h: &'h Hist<'_>, o: &'h Options) -> impl Iterator<Item = &'h Column<'h>> + 'h {
    h.cpus
        .iter()
        .filter(|c| c.shown())
        .flat_map(move |cpu| Context::shown_in(o).map(move |ctx| ctx.of(cpu)))
}

/// A run's duration as rtla's `get_duration()` prints it, `gmtime()` of
/// the seconds through `"%3d %02d:%02d:%02d"`: days (the day of the
/// year, so it starts again from 0 after 365 days, 1970 being the year
/// of the epoch), hours, minutes and seconds: `  0 00:01:05`.
///
/// # Errors
///
/// The writer's error (`fmt::Error`); what was written before it stays.
pub fn duration<W: Write>(w: &mut W, secs: u64) -> Result {
    let days = secs / 86_400;
    let rest = secs % 86_400;
    // a u64 of seconds has at most 2.2e14 days, well inside i64
    let days = days as i64;
    let (year, _, _) = civil_from_days(days);
    let yday = days - days_from_civil(year, 1, 1);
    write!(
        w,
        "{yday:3} {:02}:{:02}:{:02}",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// The whole text `rtla timerlat hist` prints when it stops (rtla 6.12's
/// `timerlat_print_stats()`): the header, one row per bucket (rows whose
/// shown columns are all 0 left out, unless [`Options::with_zeros`]), the
/// `over:` row, then the `count:`, `min:`, `avg:`, `max:` lines and the
/// `ALL:` block of all CPUs together, unless [`Options::no_summary`].
///
/// A CPU whose IRQ and thread columns are both empty has no columns at
/// all ([`Cpu::shown`]). Every figure is `"%9d "` or `"%9llu "` (nine
/// places and a blank, also after the last); an empty column's minimum,
/// average and maximum are `-`.
///
/// # Errors
///
/// The writer's error (`fmt::Error`); what was written before it stays.
pub fn histogram<W: Write>(w: &mut W, h: &Hist<'_>, o: &Options) -> Result {
    header(w, h, o)?;
    for row in 0..h.entries {
        let total = columns(h, o).fold(0u64, |t, c| t.saturating_add(c.bucket(row)));
        if total == 0 && !o.with_zeros {
            continue;
        }
        if !o.no_index {
            let index = (row as u64).saturating_mul(h.bucket_size);
            write!(w, "{index:<6}")?;
        }
        for c in columns(h, o) {
            write!(w, "{:9} ", c.bucket(row))?;
        }
        w.write_char('\n')?;
    }
    label(w, o, "over: ")?;
    for c in columns(h, o) {
        write!(w, "{:9} ", c.stats.over)?;
    }
    w.write_char('\n')?;
    if o.no_summary {
        return Ok(());
    }
    label(w, o, "count:")?;
    for c in columns(h, o) {
        write!(w, "{:9} ", c.stats.count)?;
    }
    w.write_char('\n')?;
    per_column(w, o, "min:  ", columns(h, o), Stats::min)?;
    per_column(w, o, "avg:  ", columns(h, o), Stats::avg)?;
    per_column(w, o, "max:  ", columns(h, o), Stats::max)?;
    all_cpus(w, h, o)
}

/// `# RTLA timerlat histogram`, the unit, the duration and the `Index`
/// line, unless [`Options::no_header`].
fn header<W: Write>(w: &mut W, h: &Hist<'_>, o: &Options) -> Result {
    if o.no_header {
        return Ok(());
    }
    let (name, symbol) = o.unit.names();
    w.write_str("# RTLA timerlat histogram\n")?;
    writeln!(w, "# Time unit is {name} ({symbol})")?;
    w.write_str("# Duration: ")?;
    duration(w, h.duration_s)?;
    w.write_char('\n')?;
    label(w, o, "Index")?;
    for cpu in h.cpus.iter().filter(|c| c.shown()) {
        for ctx in Context::shown_in(o) {
            write!(w, "   {}-{:03}", ctx.label(), cpu.cpu)?;
        }
    }
    w.write_char('\n')
}

/// A line's label, unless [`Options::no_index`].
fn label<W: Write>(w: &mut W, o: &Options, text: &str) -> Result {
    if o.no_index {
        Ok(())
    } else {
        w.write_str(text)
    }
}

/// A `min:`, `avg:` or `max:` line: `figure` of each column, `-` for an
/// empty one (rtla's `format_summary_value()`).
fn per_column<'c, W: Write>(
    w: &mut W,
    o: &Options,
    name: &str,
    cols: impl Iterator<Item = &'c Column<'c>>,
    figure: impl Fn(&Stats) -> Option<u64>,
) -> Result {
    label(w, o, name)?;
    for c in cols {
        value(w, figure(&c.stats))?;
    }
    w.write_char('\n')
}

/// One figure: `"%9llu "`, or `"%9c "` of `-` when there is none.
fn value<W: Write>(w: &mut W, v: Option<u64>) -> Result {
    match v {
        Some(v) => write!(w, "{v:9} "),
        None => w.write_str("        - "),
    }
}

/// rtla's `timerlat_print_stats_all()`: the `ALL:` line of titles, then
/// `count:` to `max:` of every shown CPU's columns of a context together
/// (counts and sums added, the least minimum, the greatest maximum).
fn all_cpus<W: Write>(w: &mut W, h: &Hist<'_>, o: &Options) -> Result {
    let mut sums = [Stats::EMPTY; 3];
    for cpu in h.cpus.iter().filter(|c| c.shown()) {
        for (sum, ctx) in sums.iter_mut().zip(Context::ALL) {
            let s = &ctx.of(cpu).stats;
            sum.count = sum.count.wrapping_add(s.count);
            sum.sum = sum.sum.wrapping_add(s.sum);
            if s.count > 0 {
                sum.min = sum.min.min(s.min);
                sum.max = sum.max.max(s.max);
            }
        }
    }
    let shown = || {
        sums.iter()
            .zip(Context::ALL)
            .filter(|(_, ctx)| ctx.shown(o))
    };
    label(w, o, "ALL:  ")?;
    for (_, ctx) in shown() {
        w.write_str(ctx.all_title())?;
    }
    w.write_char('\n')?;
    label(w, o, "count:")?;
    for (s, _) in shown() {
        write!(w, "{:9} ", s.count)?;
    }
    w.write_char('\n')?;
    for (name, figure) in [
        ("min:  ", Stats::min as fn(&Stats) -> Option<u64>),
        ("avg:  ", Stats::avg),
        ("max:  ", Stats::max),
    ] {
        label(w, o, name)?;
        for (s, _) in shown() {
            value(w, figure(s))?;
        }
        w.write_char('\n')?;
    }
    Ok(())
}

/// What rtla prints after the histogram when a stop threshold (`-i`,
/// `-T`, `-a`) stopped the trace, with `--no-aa` (rtla 6.12's
/// `timerlat_hist_main()`): `rtla timerlat hit stop tracing`, then, when
/// `-t` asked for the trace, `  Saving trace to FILE`. Without `--no-aa`
/// rtla's auto-analysis would come between the two lines.
///
/// # Errors
///
/// The writer's error (`fmt::Error`); what was written before it stays.
pub fn stop_tracing<W: Write>(w: &mut W, trace_output: Option<&str>) -> Result {
    w.write_str("rtla timerlat hit stop tracing\n")?;
    match trace_output {
        Some(file) => writeln!(w, "  Saving trace to {file}"),
        None => Ok(()),
    }
}
