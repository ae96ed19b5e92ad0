//! The option table: every option of cyclictest 2.4 with the argument it
//! takes (its `getopt_long` table and short-option string), then
//! latscope's own and the hidden ones of the proof scripts, each with its
//! `--help` text. The one list of the options: the parser, `--help` and
//! the tests walk it.

/// Every option, cyclictest's, latscope's own and the hidden ones: the
/// keys of [`OPTIONS`], which has one entry for each (a variant made
/// nowhere else is dead code, which the build refuses; `--help`'s layout
/// is checked against the table by its test). The parser dispatches on it
/// with an exhaustive match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opt {
    Affinity,
    Aligned,
    Breaktrace,
    Clock,
    DefaultSystem,
    DeepestIdleState,
    Distance,
    Duration,
    Latency,
    Fifo,
    Histogram,
    Histofall,
    Histfile,
    Interval,
    Json,
    Laptop,
    Loops,
    Mainaffinity,
    Mlockall,
    RefreshOnMax,
    Nsecs,
    Oscope,
    Priority,
    Quiet,
    Priospread,
    Relative,
    Resolution,
    Secaligned,
    System,
    Smi,
    Smp,
    Spike,
    SpikeNodes,
    Threads,
    Tracemark,
    Unbuffered,
    Verbose,
    DbgCyclictest,
    Policy,
    Help,
    PosixTimers,
    Stream,
    Name,
    Slo,
    NoMlock,
    BestEffort,
    Warmup,
    ReportInterval,
    DeadlineRuntime,
    DeadlineDeadline,
    DeadlinePeriod,
    Explain,
    TraceBufferSize,
    TraceOut,
    TraceOutLimit,
    TraceOutStream,
    HistShape,
    SelfCheck,
    Timerlat,
    Version,
    #[cfg(feature = "proof")]
    SelfCheckProbe,
    #[cfg(feature = "proof")]
    NoExitDemote,
    #[cfg(feature = "proof")]
    BallastMib,
}

/// What an option takes, with the value's name in `--help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// Nothing.
    No,
    /// A value: the rest of the word (`-h3500`, `-h 3500` as one word,
    /// `--histogram=3500`) or the next word, whatever it is.
    Required(&'static str),
    /// An optional value: the rest of the word, or `--name=value`, or the
    /// next word if it passes the [`Peek`] rule.
    Optional(Peek, &'static str),
}

/// When an option with an optional value takes the next word, as
/// cyclictest 2.4 decides it (it reads `argv[optind]` itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peek {
    /// `-t`, `-A`, `--secaligned`: if `atoi()` of the word is non-zero.
    NonZero,
    /// `-a`: if `atoi()` of the word is non-zero or it starts with `0`,
    /// `!`, `+` or `a` (so `-a all` works).
    CpuSet,
}

/// What an option's entry in `--help` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Help {
    /// Its own entry: the text, its lines broken where `--help` breaks
    /// them (`{MEM}`: the histogram memory figures, filled in by
    /// [`super::help()`]).
    Text(&'static str),
    /// Named in the entry of the option before it in [`OPTIONS`], whose
    /// text describes both (the `--deadline-*` trio).
    Joined,
    /// Not listed in `--help` (the proof scripts' options, see
    /// `crate::bench`, in `proof` builds only): what it does.
    #[cfg(feature = "proof")]
    Hidden(&'static str),
}

/// One option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// Which option.
    pub opt: Opt,
    /// The long name.
    pub long: &'static str,
    /// The short letter, if any.
    pub short: Option<char>,
    /// What it takes.
    pub arg: Arg,
    /// Whether cyclictest 2.4 has it (its abbreviations take precedence).
    pub cyclictest: bool,
    /// Its entry in `--help`.
    pub help: Help,
}

const fn ct(opt: Opt, long: &'static str, short: Option<char>, arg: Arg, help: Help) -> Spec {
    Spec {
        opt,
        long,
        short,
        arg,
        cyclictest: true,
        help,
    }
}

const fn own(opt: Opt, long: &'static str, arg: Arg, help: Help) -> Spec {
    Spec {
        opt,
        long,
        short: None,
        arg,
        cyclictest: false,
        help,
    }
}

use Arg::{No, Optional, Required};
#[cfg(feature = "proof")]
use Help::Hidden;
use Help::{Joined, Text};

/// Every option latscope knows, with its `--help` text (the order of
/// `--help` is [`super::help`]'s).
pub const OPTIONS: &[Spec] = &[
    // cyclictest 2.4, in the order of its table
    ct(
        Opt::Affinity,
        "affinity",
        Some('a'),
        Optional(Peek::CpuSet, "CPUSET"),
        Text(
            "pin threads round-robin to CPUSET (0,2-3, !0, all,\n\
             +0-1 = the first two available); -a alone: all of them.\n\
             Without -a, thread N runs on the N-th available CPU\n\
             (modulo their number), as in cyclictest 2.4",
        ),
    ),
    ct(
        Opt::Aligned,
        "aligned",
        Some('A'),
        Optional(Peek::NonZero, "US"),
        Text(
            "all threads start from one common time, thread N\n\
             offset by N*US",
        ),
    ),
    ct(
        Opt::Breaktrace,
        "breaktrace",
        Some('b'),
        Required("US"),
        Text("stop when a sample exceeds US"),
    ),
    ct(
        Opt::Clock,
        "clock",
        Some('c'),
        Required("CLOCK"),
        Text("0|monotonic (default) or 1|realtime"),
    ),
    ct(
        Opt::DefaultSystem,
        "default-system",
        None,
        No,
        Text("leave /dev/cpu_dma_latency alone"),
    ),
    ct(
        Opt::DeepestIdleState,
        "deepest-idle-state",
        None,
        Required("N"),
        Text(
            "idle states deeper than N disabled on the measured CPUs\n\
             (-1: all), instead of /dev/cpu_dma_latency; restored at\n\
             exit, and after a kill at the next start (cyclictest 2.8)",
        ),
    ),
    ct(
        Opt::Distance,
        "distance",
        Some('d'),
        Required("US"),
        Text("thread N runs at interval + N*US (default 500; 0 with -h)"),
    ),
    ct(
        Opt::Duration,
        "duration",
        Some('D'),
        Required("T"),
        Text(
            "stop after T seconds (default 0: no limit); a suffix\n\
             m, h or d (either case) means minutes, hours or days\n\
             (as cyclictest: 10ms is 10 minutes)",
        ),
    ),
    ct(
        Opt::Latency,
        "latency",
        None,
        Required("US"),
        Text("value held in /dev/cpu_dma_latency (default 0)"),
    ),
    ct(
        Opt::Fifo,
        "fifo",
        Some('F'),
        Required("PATH"),
        Text(
            "make a named pipe at PATH; whoever reads it gets the\n\
             status lines",
        ),
    ),
    ct(
        Opt::Histogram,
        "histogram",
        Some('h'),
        Required("US"),
        Text(
            "print the histogram text up to US (max 20000), every\n\
             row; memory per thread: {MEM} (20 bytes a 1 us row\n\
             beyond 1000, 8 more for its overflow cycle number)",
        ),
    ),
    ct(
        Opt::Histofall,
        "histofall",
        Some('H'),
        Required("US"),
        Text("as -h, plus a column summing all threads"),
    ),
    ct(
        Opt::Histfile,
        "histfile",
        None,
        Required("PATH"),
        Text("write the histogram text to PATH instead of stdout"),
    ),
    ct(
        Opt::Interval,
        "interval",
        Some('i'),
        Required("US"),
        Text("base interval in us (default 1000)"),
    ),
    ct(
        Opt::Json,
        "json",
        None,
        Required("FILE"),
        Text(
            "write cyclictest's JSON results (plus quantiles,\n\
             missed periods, faults, early, dropped) to FILE",
        ),
    ),
    ct(
        Opt::Laptop,
        "laptop",
        None,
        No,
        Text("the same, in cyclictest's older words"),
    ),
    ct(
        Opt::Loops,
        "loops",
        Some('l'),
        Required("N"),
        Text("stop each thread after N samples (default 0: no limit)"),
    ),
    ct(
        Opt::Mainaffinity,
        "mainaffinity",
        None,
        Required("CPUSET"),
        Text("pin the non-RT sender (reporting) thread"),
    ),
    ct(
        Opt::Mlockall,
        "mlockall",
        Some('m'),
        No,
        Text("lock memory (accepted for compatibility; on by default)"),
    ),
    ct(
        Opt::RefreshOnMax,
        "refresh_on_max",
        Some('M'),
        No,
        Text("show the live status only when a maximum grew"),
    ),
    ct(
        Opt::Nsecs,
        "nsecs",
        Some('N'),
        No,
        Text("print ns instead of us"),
    ),
    ct(
        Opt::Oscope,
        "oscope",
        Some('o'),
        Required("RED"),
        Text("with -v: print only the largest of each RED samples"),
    ),
    ct(
        Opt::Priority,
        "priority",
        Some('p'),
        Required("PRIO"),
        Text(
            "real-time priority 0..99 (default 80); 0 with fifo or\n\
             rr: the number of threads plus one, as cyclictest;\n\
             with --policy other, batch or idle, -p means fifo",
        ),
    ),
    ct(
        Opt::Quiet,
        "quiet",
        Some('q'),
        No,
        Text("print only the summary at the end"),
    ),
    ct(
        Opt::Priospread,
        "priospread",
        None,
        No,
        Text("thread N gets priority PRIO-N (default: all equal)"),
    ),
    ct(
        Opt::Relative,
        "relative",
        Some('r'),
        No,
        Text(
            "relative clock_nanosleep: the period drifts by every\n\
             latency and no period counts as missed; not periodic",
        ),
    ),
    ct(
        Opt::Resolution,
        "resolution",
        Some('R'),
        No,
        Text("measure the clock's resolution at start-up (stderr)"),
    ),
    ct(
        Opt::Secaligned,
        "secaligned",
        None,
        Optional(Peek::NonZero, "US"),
        Text("all threads start at the next full second (+US)"),
    ),
    ct(
        Opt::System,
        "system",
        Some('s'),
        No,
        Text("relative nanosleep(): the drift of -r (wins over -x)"),
    ),
    ct(
        Opt::Smi,
        "smi",
        None,
        No,
        Text(
            "count SMIs: exits 1 naming why where the CPU has no\n\
             SMI counter (as cyclictest), and where it has one\n\
             (latscope does not read it yet)",
        ),
    ),
    ct(
        Opt::Smp,
        "smp",
        Some('S'),
        No,
        Text("one thread per CPU, each pinned (-t -a; overrides both)"),
    ),
    ct(
        Opt::Spike,
        "spike",
        None,
        Required("US"),
        Text("list the samples above US at the end"),
    ),
    ct(
        Opt::SpikeNodes,
        "spike-nodes",
        None,
        Required("N"),
        Text("list at most N of them (default 1024)"),
    ),
    ct(
        Opt::Threads,
        "threads",
        Some('t'),
        Optional(Peek::NonZero, "N"),
        Text(
            "N measuring threads (1..64); -t alone or -t 0: one per\n\
             available CPU (default: 1)",
        ),
    ),
    ct(
        Opt::Tracemark,
        "tracemark",
        None,
        No,
        Text("with -b: write a marker to the trace buffer and stop tracing"),
    ),
    ct(
        Opt::Unbuffered,
        "unbuffered",
        Some('u'),
        No,
        Text(
            "write each -v line as it is formatted (other output is\n\
             written at least every 100 ms anyway)",
        ),
    ),
    ct(
        Opt::Verbose,
        "verbose",
        Some('v'),
        No,
        Text("print every sample as thread:cycle:value"),
    ),
    ct(
        Opt::DbgCyclictest,
        "dbg_cyclictest",
        None,
        No,
        Text("print facts for debugging (thread plan; -R readings)"),
    ),
    ct(
        Opt::Policy,
        "policy",
        None,
        Required("NAME"),
        Text("fifo (default), rr, deadline, other|normal, batch, idle"),
    ),
    ct(Opt::Help, "help", None, No, Text("print this help")),
    ct(
        Opt::PosixTimers,
        "posix_timers",
        Some('x'),
        No,
        Text(
            "a POSIX timer signals the thread (rt_sigtimedwait):\n\
             every sample includes signal delivery; a cycle one\n\
             period or more late costs a second system call\n\
             (timer_getoverrun)",
        ),
    ),
    // latscope's own
    own(
        Opt::Stream,
        "stream",
        Required("DEST"),
        Text(
            "- (stdout; human output moves to stderr), a file path,\n\
             tcp:IP:PORT (IP literal only: a static binary cannot\n\
             resolve names; reconnects with backoff, measuring goes\n\
             on meanwhile), or serial:/dev/ttyX[:BAUD] (raw mode,\n\
             default 115200; reports keep to 7 % of the line on\n\
             average, less often if histograms are wide)",
        ),
    ),
    own(
        Opt::Name,
        "name",
        Required("NAME"),
        Text(
            "the board's name in the stream (default: host name and\n\
             a keyed hash of /etc/machine-id, never the id itself)",
        ),
    ),
    own(
        Opt::Slo,
        "slo",
        Required("GOALS"),
        Text(
            "decide latency goals per thread at the end: pass, fail or\n\
             inconclusive, e.g. 'p99.9<=80us,max<=200us,missed<=0@95%'\n\
             (exit status 5 when one fails, 6 when one is inconclusive)",
        ),
    ),
    own(
        Opt::NoMlock,
        "no-mlock",
        No,
        Text("do not lock memory (page faults then count as latency)"),
    ),
    own(
        Opt::BestEffort,
        "best-effort",
        No,
        Text(
            "without a privilege, degrade instead of stopping: run\n\
             SCHED_OTHER (timer slack 1 ns), unlocked, unpinned;\n\
             the output and the stream say what was degraded",
        ),
    ),
    own(
        Opt::Warmup,
        "warmup",
        Required("T"),
        Text("do not record the first T (units ms, s, m, h, d)"),
    ),
    own(
        Opt::ReportInterval,
        "report-interval",
        Required("T"),
        Text(
            "report period of the stream and live view (default 1s;\n\
             longer on a serial line whose budget is used up)",
        ),
    ),
    own(
        Opt::DeadlineRuntime,
        "deadline-runtime",
        Required("US"),
        Text(
            "SCHED_DEADLINE parameters (defaults: period = -i,\n\
             deadline = period, runtime = deadline/10). Deadline\n\
             threads are NOT pinned unless -a is given: the kernel\n\
             refuses SCHED_DEADLINE (EPERM) for a thread pinned to\n\
             one CPU unless that CPU is an exclusive cpuset\n\
             partition (its admission control is per root domain).",
        ),
    ),
    own(
        Opt::DeadlineDeadline,
        "deadline-deadline",
        Required("US"),
        Joined,
    ),
    own(
        Opt::DeadlinePeriod,
        "deadline-period",
        Required("US"),
        Joined,
    ),
    own(
        Opt::Explain,
        "explain",
        Required("US"),
        Text("attribute samples above US to IRQs, softirqs and tasks"),
    ),
    own(
        Opt::TraceBufferSize,
        "trace-buffer-size",
        Required("KB"),
        Text(
            "--explain: the kernel's trace buffer per measured CPU, in KiB;\n\
             latscope keeps twice as much history (default 1024, capped so\n\
             both take at most 3/64 of MemTotal; halved on ENOMEM, and said)",
        ),
    ),
    own(
        Opt::TraceOut,
        "trace-out",
        Required("DIR"),
        Text(
            "--explain: each thread's worst explained spike of a report\n\
             interval as a trace.dat (trace-cmd report, KernelShark) in DIR,\n\
             with a .json naming the spike",
        ),
    ),
    own(
        Opt::TraceOutLimit,
        "trace-out-limit",
        Required("FILES,MIB"),
        Text(
            "--trace-out: at most FILES files and MIB MiB of them (default\n\
             100,256); later windows are counted as not written",
        ),
    ),
    own(
        Opt::TraceOutStream,
        "trace-out-stream",
        No,
        Text(
            "--explain: the same windows on --stream, as frames the recorder\n\
             writes as trace.dat files; on a serial line within 5 % of it,\n\
             out of the spikes' 25 %",
        ),
    ),
    own(
        Opt::HistShape,
        "hist-shape",
        Required("VERSION"),
        Text(
            "histogram text and --json as rt-tests VERSION prints them:\n\
             2.4 (default: every row, # Total:) or 2.7 (and later:\n\
             rows with samples only, no total)",
        ),
    ),
    own(
        Opt::Timerlat,
        "timerlat",
        No,
        Text(
            "wake through the kernel's timerlat tracer (Linux 6.5 on,\n\
             needs -a): per thread the IRQ, thread and return-to-user\n\
             latency of every period, beside latscope's own",
        ),
    ),
    own(
        Opt::SelfCheck,
        "self-check",
        No,
        Text(
            "forbid process creation and exec with seccomp after\n\
             start-up; attempts are refused, counted and reported\n\
             as defects (exit status 1)",
        ),
    ),
    own(Opt::Version, "version", No, Text("print the version")),
    // the proof scripts' (see `bench`), in `proof` builds only
    #[cfg(feature = "proof")]
    own(
        Opt::SelfCheckProbe,
        "self-check-probe",
        No,
        Hidden(
            "make every forbidden process-creation request once, to prove \
             each is refused and counted (implies --self-check)",
        ),
    ),
    #[cfg(feature = "proof")]
    own(
        Opt::NoExitDemote,
        "no-exit-demote",
        No,
        Hidden(
            "the exit experiment's control: the main thread takes the \
             measuring policy and exits holding its locked memory",
        ),
    ),
    #[cfg(feature = "proof")]
    own(
        Opt::BallastMib,
        "ballast-mib",
        Required("N"),
        Hidden("lock N MiB more memory (the exit experiment)"),
    ),
];

/// The option with short letter `c`.
pub fn short(c: char) -> Option<&'static Spec> {
    OPTIONS.iter().find(|s| s.short == Some(c))
}

/// The option a long name means: the exact name, else the only option of
/// cyclictest 2.4 it abbreviates (as `getopt_long` does), else the only
/// latscope option it abbreviates. `Err` lists the candidates of an
/// ambiguous abbreviation (empty: no option at all).
pub fn long(name: &str) -> Result<&'static Spec, Vec<&'static str>> {
    if let Some(s) = OPTIONS.iter().find(|s| s.long == name) {
        return Ok(s);
    }
    if name.is_empty() {
        return Err(Vec::new());
    }
    let of = |cyclictest: bool| -> Vec<&'static Spec> {
        OPTIONS
            .iter()
            .filter(|s| s.long.starts_with(name) && (s.cyclictest || !cyclictest))
            .collect()
    };
    for candidates in [of(true), of(false)] {
        match candidates.as_slice() {
            [one] => return Ok(one),
            [] => continue,
            many => return Err(many.iter().map(|s| s.long).collect()),
        }
    }
    Err(Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_letters_are_cyclictests() {
        // cyclictest 2.4's getopt string
        let letters = "a::A::b:c:d:D:F:h:H:i:l:MNo:p:mqrRsSt::uvx";
        let mut chars = letters.chars().peekable();
        let mut n = 0;
        while let Some(c) = chars.next() {
            let mut colons = 0;
            while chars.peek() == Some(&':') {
                chars.next();
                colons += 1;
            }
            let s = short(c).unwrap_or_else(|| panic!("-{c}"));
            let want = match colons {
                0 => matches!(s.arg, No),
                1 => matches!(s.arg, Required(_)),
                _ => matches!(s.arg, Optional(..)),
            };
            assert!(want && s.cyclictest, "-{c}: {s:?}");
            n += 1;
        }
        assert_eq!(OPTIONS.iter().filter(|s| s.short.is_some()).count(), n);
    }

    #[test]
    fn abbreviations_as_getopt_long_with_cyclictests_first() {
        assert_eq!(long("dur").map(|s| s.long), Ok("duration"));
        // cyclictest has only --verbose; --version is latscope's
        assert_eq!(long("ver").map(|s| s.long), Ok("verbose"));
        assert_eq!(long("vers").map(|s| s.long), Ok("version"));
        assert_eq!(long("spike").map(|s| s.long), Ok("spike"));
        assert_eq!(
            long("hist").unwrap_err(),
            ["histogram", "histofall", "histfile"]
        );
        assert_eq!(long("str").map(|s| s.long), Ok("stream"));
        assert!(long("nope").unwrap_err().is_empty());
        assert!(long("").unwrap_err().is_empty());
    }
}
