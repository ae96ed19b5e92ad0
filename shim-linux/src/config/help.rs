//! The `--help` text: an introduction, the options of the option table
//! in sections ([`LAYOUT`]), and what the exit statuses and signals mean.

use latscope_core::layout::Layout;

use super::options::{Arg, Help, Opt, Spec, OPTIONS};

/// The histogram memory of one measuring thread in a run with `-h
/// hist_us`: the shared histogram's counters and the sender's two snapshots (4 bytes
/// a bucket each) and cumulative histogram (8), and the cycle numbers of
/// the first overflows (8 per `-h` row). `--help` states it.
pub const fn hist_bytes_per_thread(hist_us: u32) -> usize {
    match Layout::for_hist_us(hist_us) {
        Some(l) => l.len() * (4 + 4 + 4 + 8) + hist_us as usize * 8,
        None => 0,
    }
}

/// The `--help` text, with the histogram memory each `-h` costs.
pub fn help() -> String {
    let mut text = String::from(INTRO);
    for item in LAYOUT {
        item.write(&mut text);
    }
    text.push_str(OUTRO);
    fill(&text, "\n                          ")
}

/// `text` with the histogram memory figures in place of `{MEM}`, `wrap`
/// where `--help` breaks their line.
pub fn fill(text: &str, wrap: &str) -> String {
    let kib = |us| hist_bytes_per_thread(us).div_ceil(1024);
    text.replace(
        "{MEM}",
        &format!(
            "{} KiB up to 1000, {} KiB{wrap}at 3500, {} KiB at 20000",
            kib(1000),
            kib(3500),
            kib(20_000)
        ),
    )
}

/// One item of a section of `--help`'s option list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// An option's entry (with the options joined to it).
    Opt(Opt),
    /// An entry that is no option: a label and a text.
    Row(&'static str, &'static str),
}

/// The sections of `--help`'s option list, in its order: each heading and
/// its items.
pub fn sections() -> Vec<(&'static str, Vec<Shown>)> {
    let mut out: Vec<(&'static str, Vec<Shown>)> = Vec::new();
    for item in LAYOUT {
        let shown = match *item {
            Heading(h) => {
                out.push((h, Vec::new()));
                continue;
            }
            HelpLine::Opt(o) | Wide(o) => Shown::Opt(o),
            Row(label, text) => Shown::Row(label, text),
        };
        if let Some((_, items)) = out.last_mut() {
            items.push(shown);
        }
    }
    out
}

/// What `--help` says before the option list (its first line, the usage
/// line, then the description).
pub const fn intro() -> &'static str {
    INTRO
}

/// What `--help` says after the option list (signals, exit statuses, PID 1).
pub const fn outro() -> &'static str {
    OUTRO
}

/// The column where the text of an entry starts.
const TEXT_COLUMN: usize = 26;

/// One line (or entry) of the option list of `--help`.
enum HelpLine {
    /// A section heading.
    Heading(&'static str),
    /// An option's entry: its names, then its text from column
    /// [`TEXT_COLUMN`] (at least one blank after the names).
    Opt(Opt),
    /// An entry whose names leave no room: its text two blanks after them.
    Wide(Opt),
    /// An entry that is no option: a label and a text.
    Row(&'static str, &'static str),
}

use HelpLine::{Heading, Row, Wide};

/// The option list of `--help`, in its order (the option table is in
/// cyclictest's order). Each option shown has one item; the options
/// [`Help::Joined`] to it are named in its entry.
const LAYOUT: &[HelpLine] = &[
    Heading("Threads and CPUs"),
    HelpLine::Opt(Opt::Threads),
    HelpLine::Opt(Opt::Affinity),
    HelpLine::Opt(Opt::Smp),
    Wide(Opt::Mainaffinity),
    Heading("Timing"),
    HelpLine::Opt(Opt::Interval),
    HelpLine::Opt(Opt::Distance),
    HelpLine::Opt(Opt::Clock),
    HelpLine::Opt(Opt::Loops),
    HelpLine::Opt(Opt::Duration),
    HelpLine::Opt(Opt::Aligned),
    HelpLine::Opt(Opt::Secaligned),
    HelpLine::Opt(Opt::Warmup),
    Heading("How each cycle waits (only the default keeps every guarantee of latscope)"),
    Row(
        "(default)",
        "clock_nanosleep(TIMER_ABSTIME) to the next deadline:\n\
         one system call per cycle, a fixed grid of deadlines",
    ),
    HelpLine::Opt(Opt::Relative),
    HelpLine::Opt(Opt::System),
    HelpLine::Opt(Opt::PosixTimers),
    HelpLine::Opt(Opt::Resolution),
    HelpLine::Opt(Opt::Smi),
    Heading("Scheduling and memory"),
    HelpLine::Opt(Opt::Priority),
    HelpLine::Opt(Opt::Policy),
    HelpLine::Opt(Opt::Priospread),
    HelpLine::Opt(Opt::DeadlineRuntime),
    HelpLine::Opt(Opt::Mlockall),
    HelpLine::Opt(Opt::NoMlock),
    HelpLine::Opt(Opt::Latency),
    HelpLine::Opt(Opt::DefaultSystem),
    HelpLine::Opt(Opt::DeepestIdleState),
    HelpLine::Opt(Opt::Laptop),
    HelpLine::Opt(Opt::BestEffort),
    Heading("Output (cyclictest formats)"),
    HelpLine::Opt(Opt::Quiet),
    HelpLine::Opt(Opt::Verbose),
    HelpLine::Opt(Opt::Oscope),
    HelpLine::Opt(Opt::RefreshOnMax),
    HelpLine::Opt(Opt::Unbuffered),
    HelpLine::Opt(Opt::Nsecs),
    HelpLine::Opt(Opt::Histogram),
    HelpLine::Opt(Opt::Histofall),
    HelpLine::Opt(Opt::Histfile),
    HelpLine::Opt(Opt::HistShape),
    HelpLine::Opt(Opt::Json),
    HelpLine::Opt(Opt::Spike),
    HelpLine::Opt(Opt::SpikeNodes),
    HelpLine::Opt(Opt::Breaktrace),
    HelpLine::Opt(Opt::Tracemark),
    HelpLine::Opt(Opt::Explain),
    HelpLine::Opt(Opt::TraceBufferSize),
    HelpLine::Opt(Opt::TraceOut),
    HelpLine::Opt(Opt::TraceOutLimit),
    HelpLine::Opt(Opt::TraceOutStream),
    HelpLine::Opt(Opt::Timerlat),
    HelpLine::Opt(Opt::Fifo),
    HelpLine::Opt(Opt::DbgCyclictest),
    Heading("Stream (binary frames for latscope-host)"),
    HelpLine::Opt(Opt::Stream),
    HelpLine::Opt(Opt::Name),
    Wide(Opt::ReportInterval),
    Heading("Checks"),
    HelpLine::Opt(Opt::Slo),
    HelpLine::Opt(Opt::SelfCheck),
    HelpLine::Opt(Opt::Version),
    HelpLine::Opt(Opt::Help),
];

impl HelpLine {
    /// Append this item's lines to `out`.
    fn write(&self, out: &mut String) {
        match *self {
            Heading(h) => {
                out.push_str(h);
                out.push('\n');
            }
            HelpLine::Opt(opt) => entry(out, opt, false),
            Wide(opt) => entry(out, opt, true),
            Row(label, text) => lines(out, &format!("  {label}"), text, false),
        }
    }
}

/// The entry of `opt` and of the options joined to it.
fn entry(out: &mut String, opt: Opt, wide: bool) {
    // every option of the layout is in the table (see the tests)
    let Some(at) = OPTIONS.iter().position(|s| s.opt == opt) else {
        return;
    };
    let spec = &OPTIONS[at];
    let mut label = format!("  {}", names(spec));
    let joined = OPTIONS[at + 1..]
        .iter()
        .take_while(|s| s.help == Help::Joined);
    let mut own_line = false;
    for s in joined {
        label.push_str(", ");
        label.push_str(names(s).trim_start());
        own_line = true;
    }
    match spec.help {
        Help::Text(text) if own_line => {
            out.push_str(&label);
            out.push('\n');
            lines(out, &" ".repeat(TEXT_COLUMN - 1), text, false);
        }
        Help::Text(text) => lines(out, &label, text, wide),
        // not listed
        Help::Joined => {}
        #[cfg(feature = "proof")]
        Help::Hidden(_) => {}
    }
}

/// `-t, --threads[=N]`, `    --json=FILE`.
fn names(s: &Spec) -> String {
    let short = match s.short {
        Some(c) => format!("-{c}, "),
        None => "    ".to_string(),
    };
    let value = match s.arg {
        Arg::No => String::new(),
        Arg::Required(v) => format!("={v}"),
        Arg::Optional(_, v) => format!("[={v}]"),
    };
    format!("{short}--{}{value}", s.long)
}

/// `label`, then the lines of `text`, the first after the label (from
/// [`TEXT_COLUMN`], or two blanks after it if `wide`), the others
/// indented to that column.
fn lines(out: &mut String, label: &str, text: &str, wide: bool) {
    out.push_str(label);
    let gap = if wide {
        2
    } else {
        TEXT_COLUMN.saturating_sub(label.len()).max(1)
    };
    out.push_str(&" ".repeat(gap));
    for (k, line) in text.split('\n').enumerate() {
        if k > 0 {
            out.push_str(&" ".repeat(TEXT_COLUMN));
        }
        out.push_str(line);
        out.push('\n');
    }
}

/// What `--help` says before the options.
const INTRO: &str = "\
latscope: real-time wake-up latency measurement (a cyclictest that is safe by default)

Usage: latscope [OPTIONS]

Each measuring thread sleeps until absolute deadlines (clock_nanosleep,
TIMER_ABSTIME) and measures how late it woke. Defaults differ from cyclictest
where cyclictest's are traps: SCHED_FIFO priority 80 (not SCHED_OTHER) and
memory locked (mlockall) unless --no-mlock.

Every option of cyclictest 2.4 is accepted, with its argument syntax: a value
attached (-i100) or in the next word, numbers read as C's atoi reads them
(a note says what was ignored), -t, -A and --secaligned take the next word only
if it is a non-zero number, -a also one starting with 0, !, + or a.

";

/// What `--help` says after the options.
const OUTRO: &str = "\n\
Signals: SIGINT, SIGTERM and SIGHUP end the run cleanly (summary, stream, exit);
SIGUSR1 prints the current status to stderr; SIGUSR2 writes it to
/dev/shm/cyclictest<PID> (made at start-up, removed at exit), which rt-tests'
get_cyclictest_snapshot reads.
SIGPIPE is ignored: a closed pipe is a failed write. A failed standard output
or error is not written again; the run goes on (and ends if nothing else
takes its output).
Exit status: 0 completed (also after -b), 1 failed run, self-check defects,
an output that cannot be opened or a missing facility (--smi;
--deepest-idle-state without cpuidle), 2 bad command line (also an unknown
option: cyclictest prints its help and exits 0), 3 missing privilege (the
message names the flags that run without it), 4 completed but output lost or
not confirmed (stream frames never delivered, frames sent over TCP but not
acknowledged by the end, --trace-out windows not written, or a write to
stdout, stderr, --json or --histfile failed), 5 a --slo goal failed, 6 no
--slo goal failed but one is inconclusive. When several apply, the first of:
an error's 1, 2 or 3; 5; self-check defects' 1; 6; 4.
When run as PID 1 (an init= binary), latscope mounts /dev, /dev/shm, /proc and
/sys, takes its arguments from the kernel command line, and powers off at the
end.
";

#[cfg(test)]
mod tests {
    use super::hist_bytes_per_thread;
    use super::{help, names, Help, HelpLine, LAYOUT, OPTIONS};

    /// `--help` lists every option of the table once, with its names, except
    /// the hidden ones (which it does not name at all); the joined ones in
    /// the entry they join.
    #[test]
    fn help_lists_each_option_of_the_table_once() {
        let h = help();
        for spec in OPTIONS {
            let items = LAYOUT
                .iter()
                .filter(|i| matches!(i, HelpLine::Opt(o) | HelpLine::Wide(o) if *o == spec.opt))
                .count();
            let label = names(spec);
            let label = label.trim_start();
            let lines = h
                .lines()
                .filter(|l| {
                    l.contains(&format!("{label} "))
                        || l.ends_with(label)
                        || l.contains(&format!("{label},"))
                })
                .count();
            match spec.help {
                Help::Text(_) => assert_eq!((items, lines), (1, 1), "{label}"),
                Help::Joined => assert_eq!((items, lines), (0, 1), "{label}"),
                #[cfg(feature = "proof")]
                Help::Hidden(_) => {
                    assert_eq!(items, 0, "{label}");
                    assert!(!h.contains(&format!("--{}", spec.long)), "{label}");
                }
            }
        }
        for item in LAYOUT {
            if let HelpLine::Opt(o) | HelpLine::Wide(o) = item {
                assert!(OPTIONS.iter().any(|s| s.opt == *o), "{o:?}");
            }
        }
    }

    /// The memory figures of `--help`, as `docs/histogram.md` quotes them.
    #[test]
    fn help_states_the_histogram_memory() {
        let doc = include_str!("../../../docs/histogram.md").replace('\n', " ");
        for (us, kib, words) in [(1000, 67, "up to"), (3500, 131, "at"), (20_000, 576, "at")] {
            assert_eq!(hist_bytes_per_thread(us).div_ceil(1024), kib, "-h {us}");
            let said = format!("{kib} KiB {words} `-h {us}`");
            assert!(
                doc.contains(&said),
                "docs/histogram.md does not say {said:?}"
            );
        }
        let h = help();
        assert!(h.contains("memory per thread: 67 KiB up to 1000, 131 KiB\n                          at 3500, 576 KiB at 20000 (20 bytes"), "{h}");
        // each 1 us row beyond the default: 20 bytes in the buckets, 8 in
        // the overflow cycle numbers
        assert_eq!(
            hist_bytes_per_thread(3501) - hist_bytes_per_thread(3500),
            28
        );
    }
}
