//! rtla 6.12's command line, for latscope invoked as `rtla` (busybox
//! style: [`invoked_as_rtla`]): `rtla timerlat hist [options]`, read as
//! rtla's `timerlat_hist_parse_args()` reads it, into an [`RtlaHist`].
//!
//! A grammar of its own, apart from cyclictest's: the same letters mean
//! other things here (`-c` CPUs, `-d` duration, `-p` period, `-t` trace
//! file, `-u` user-space threads, `-P f:95` the policy and priority).
//!
//! Every option rtla 6.12 has is read, the digits `-0` to `-9` that its
//! `getopt_long` string gives the long-only options included (`-3` is
//! `--no-summary`). Those latscope cannot honour are kept in the
//! [`RtlaHist`] like the others, and [`RtlaHist::unsupported`] names them
//! for the caller to refuse ([`RtlaHist::refuse_unsupported`]); none is
//! dropped in silence.
//!
//! Only `hist` of `rtla timerlat` is a run: `rtla timerlat top` (also what
//! `rtla timerlat` alone or followed by an option runs), `rtla osnoise` and
//! `rtla hwnoise` are refused by name.
//!
//! Deliberate differences from rtla 6.12, each a command rtla would run
//! badly or not at all:
//!
//! * an unknown option, a value given to an option that takes none, and a
//!   word that is not an option are errors (rtla prints its help and exits
//!   0, or ignores the word); an empty word is skipped, as rtla skips it
//!   (rteval passes one where it gives no interval);
//! * values are whole numbers, without the trailing characters `strtoll`
//!   would ignore, and in the range the kernel takes (rtla hands some to
//!   the kernel, which refuses them after the tracer started): `-p` 100 to
//!   1000000 µs (0 is the kernel's default, as in rtla);
//! * `-t` followed by an empty word saves to the default file (rtla would
//!   save to a file named ""); `-P o:-1` is nice -1 (rtla 6.12 refuses it:
//!   -1 is its "invalid" marker).
//!
//! # References
//!
//! `rtla-timerlat-hist(1)`; rtla 6.12's `timerlat_hist.c`
//! (`timerlat_hist_parse_args()`, `timerlat_hist_usage()`) and `utils.c`
//! (`parse_cpu_set()`, `parse_prio()`, `parse_seconds_duration()`).

use std::ffi::OsStr;
use std::path::Path;

use latscope_core::rtla::{Options, Unit, DEFAULT_TRACE_FILE};
use latscope_core::wire::Policy;

use crate::error::Error;

/// Whether latscope runs as `rtla`: the base name of `argv[0]` is `rtla`.
pub fn invoked_as_rtla(argv0: &OsStr) -> bool {
    Path::new(argv0).file_name() == Some(OsStr::new("rtla"))
}

/// What an `rtla` command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RtlaRequest {
    /// `rtla timerlat hist ...`: a run.
    Hist(Box<RtlaHist>),
    /// `-h`/`--help` of `rtla`, `rtla timerlat` or `rtla timerlat hist`
    /// (rtla stops at the first `-h`, after reading the options before it).
    Help,
}

/// Which threads measure (`-u`, `-k`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RtlaThreads {
    /// Neither: rtla takes user-space threads where the kernel has
    /// timerlat's user-space interface (`osnoise/per_cpu/cpu0/timerlat_fd`),
    /// else the kernel's threads.
    #[default]
    Auto,
    /// `-u`/`--user-threads`: rtla's user-space threads.
    User,
    /// `-k`/`--kernel-threads`: the kernel's timerlat threads.
    Kernel,
}

/// `-P`/`--priority`: the measuring threads' scheduling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtlaSched {
    /// `o:NICE`: SCHED_OTHER at nice -19 to 20 (rtla's bounds).
    Other {
        /// The nice value.
        nice: i32,
    },
    /// `f:PRIO`: SCHED_FIFO at 1 to 99.
    Fifo {
        /// The priority.
        prio: u32,
    },
    /// `r:PRIO`: SCHED_RR at 1 to 99.
    Rr {
        /// The priority.
        prio: u32,
    },
    /// `d:RUNTIME:PERIOD`, each with its unit (`ns`, `us`, `ms`, `s`):
    /// SCHED_DEADLINE, the deadline equal to the period.
    Deadline {
        /// Runtime, ns.
        runtime_ns: u64,
        /// Period (and deadline), ns.
        period_ns: u64,
    },
}

impl RtlaSched {
    /// The policy.
    pub const fn policy(self) -> Policy {
        match self {
            RtlaSched::Other { .. } => Policy::Other,
            RtlaSched::Fifo { .. } => Policy::Fifo,
            RtlaSched::Rr { .. } => Policy::Rr,
            RtlaSched::Deadline { .. } => Policy::Deadline,
        }
    }
}

/// `-C`/`--cgroup`: which cgroup the measuring threads go to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RtlaCgroup {
    /// rtla's own (`-C` alone; also `-CNAME` and `--cgroup=NAME`, whose
    /// name rtla 6.12 ignores unless it starts with `=`).
    Inherit,
    /// `-C=NAME` (or `--cgroup==NAME`).
    Named(String),
}

/// `-e SYS[:EVENT]`, with the `--filter` and `--trigger` given after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtlaEvent {
    /// The event system (`sched`).
    pub system: String,
    /// The event in it (`sched_switch`), or all of the system's.
    pub event: Option<String>,
    /// `--filter` (the last one given).
    pub filter: Option<String>,
    /// `--trigger` (the last one given).
    pub trigger: Option<String>,
}

/// `rtla timerlat hist`'s options, with rtla's defaults. Thresholds and
/// times of 0 are stored as `None`: rtla takes 0 as "not set".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtlaHist {
    /// `-p`/`--period`: the timer's period in µs (`None`: the kernel's,
    /// 1000 µs).
    pub period_us: Option<u64>,
    /// `-c`/`--cpus`: the CPUs to measure, ascending, each once (`None`:
    /// all). Not checked against the CPUs there are.
    pub cpus: Option<Vec<usize>>,
    /// `-H`/`--house-keeping`: the CPUs rtla's own threads run on.
    pub house_keeping: Option<Vec<usize>>,
    /// `-P`/`--priority`.
    pub sched: Option<RtlaSched>,
    /// `-u`, `-k`.
    pub threads: RtlaThreads,
    /// `-U`/`--user-load`: measure a user-space workload of one's own.
    pub user_load: bool,
    /// `-E`/`--entries`: buckets, 10 to 9999999 (256).
    pub entries: usize,
    /// `-b`/`--bucket-size`: bucket width in the unit, 1 to 999999 (1).
    pub bucket_size: u64,
    /// `-d`/`--duration` in seconds (`s`, `m`, `h`, `d` suffixes read).
    pub duration_s: Option<u64>,
    /// `-n`/`--nano`: the unit.
    pub unit: Unit,
    /// `--no-irq`.
    pub no_irq: bool,
    /// `--no-thread`.
    pub no_thread: bool,
    /// `--no-header`.
    pub no_header: bool,
    /// `--no-summary`.
    pub no_summary: bool,
    /// `--no-index` (only with `--with-zeros`).
    pub no_index: bool,
    /// `--with-zeros`.
    pub with_zeros: bool,
    /// `--dma-latency`: hold `/dev/cpu_dma_latency` at this many µs,
    /// 0 to 10000.
    pub dma_latency_us: Option<u32>,
    /// `-i`/`--irq` (or `-a`): stop when an IRQ latency passes this many µs.
    pub stop_us: Option<u64>,
    /// `-T`/`--thread` (or `-a`): stop when a thread latency passes this
    /// many µs.
    pub stop_total_us: Option<u64>,
    /// `-s`/`--stack` (or `-a`): save the IRQ's stack when a thread
    /// latency passes this many µs.
    pub stack_us: Option<u64>,
    /// `-a`/`--auto` as given (its effects are in `stop_us`,
    /// `stop_total_us`, `stack_us` and `trace_output`, where a later
    /// option may have changed them, as in rtla).
    pub auto_us: Option<u64>,
    /// `-t`/`--trace` (or `-a`): save the stopped trace to this file
    /// ([`DEFAULT_TRACE_FILE`] when `-t` names none).
    pub trace_output: Option<String>,
    /// `-C`/`--cgroup`.
    pub cgroup: Option<RtlaCgroup>,
    /// `-e`/`--event`, in the order given.
    pub events: Vec<RtlaEvent>,
    /// `--no-aa` as given (see [`RtlaHist::auto_analysis`]).
    pub no_aa: bool,
    /// `--dump-task` (rtla 6.12's spelling; its help says `--dump-tasks`,
    /// which its `getopt_long` does not take).
    pub dump_tasks: bool,
    /// `-D`/`--debug`.
    pub debug: bool,
    /// `--warm-up`: seconds measured before the histogram starts.
    pub warm_up_s: Option<u64>,
    /// `--trace-buffer-size`: the trace instance's buffer per CPU, KiB.
    pub trace_buffer_kb: Option<u64>,
}

impl Default for RtlaHist {
    fn default() -> Self {
        RtlaHist {
            period_us: None,
            cpus: None,
            house_keeping: None,
            sched: None,
            threads: RtlaThreads::Auto,
            user_load: false,
            entries: 256,
            bucket_size: 1,
            duration_s: None,
            unit: Unit::Micros,
            no_irq: false,
            no_thread: false,
            no_header: false,
            no_summary: false,
            no_index: false,
            with_zeros: false,
            dma_latency_us: None,
            stop_us: None,
            stop_total_us: None,
            stack_us: None,
            auto_us: None,
            trace_output: None,
            cgroup: None,
            events: Vec::new(),
            no_aa: false,
            dump_tasks: false,
            debug: false,
            warm_up_s: None,
            trace_buffer_kb: None,
        }
    }
}

/// An option of rtla 6.12 that latscope reads but cannot honour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtlaUnsupported {
    /// `-a`/`--auto`: stack traces and the auto-analysis.
    Auto,
    /// `-C`/`--cgroup`.
    Cgroup,
    /// `-s`/`--stack`.
    Stack,
    /// `-U`/`--user-load`.
    UserLoad,
    /// `-e`/`--event` (with its `--filter` and `--trigger`).
    Event,
    /// `--dump-task`.
    DumpTasks,
    /// The auto-analysis: `-i`, `-T` or `-a` without `--no-aa`.
    AutoAnalysis,
}

impl RtlaUnsupported {
    /// The option as rtla spells it.
    pub const fn option(self) -> &'static str {
        match self {
            RtlaUnsupported::Auto => "-a/--auto",
            RtlaUnsupported::Cgroup => "-C/--cgroup",
            RtlaUnsupported::Stack => "-s/--stack",
            RtlaUnsupported::UserLoad => "-U/--user-load",
            RtlaUnsupported::Event => "-e/--event",
            RtlaUnsupported::DumpTasks => "--dump-task",
            RtlaUnsupported::AutoAnalysis => "rtla's auto-analysis (-i, -T or -a without --no-aa)",
        }
    }

    /// Why latscope cannot honour it, and what to do instead.
    pub const fn why(self) -> &'static str {
        match self {
            RtlaUnsupported::Auto => {
                "it saves stack traces and runs the auto-analysis; use -T with --no-aa, and -t for the trace"
            }
            RtlaUnsupported::Cgroup => "latscope does not move its threads to another cgroup",
            RtlaUnsupported::Stack => "latscope saves no stack traces",
            RtlaUnsupported::UserLoad => "latscope measures its own threads, not a workload of yours",
            RtlaUnsupported::Event => {
                "latscope traces its own events (--filter and --trigger go with -e)"
            }
            RtlaUnsupported::DumpTasks => "it is part of the auto-analysis",
            RtlaUnsupported::AutoAnalysis => "latscope does not print it; add --no-aa",
        }
    }

    /// The refusal, one line.
    pub fn error(self) -> Error {
        Error::Unsupported {
            what: self.option(),
            why: self.why(),
        }
    }
}

impl RtlaHist {
    /// Whether rtla would run its auto-analysis: a stop threshold (`-i`,
    /// `-T`, `-a`) without `--no-aa`.
    pub fn auto_analysis(&self) -> bool {
        !self.no_aa && (self.stop_us.is_some() || self.stop_total_us.is_some())
    }

    /// The options given that latscope cannot honour, in rtla's order.
    pub fn unsupported(&self) -> Vec<RtlaUnsupported> {
        [
            (self.auto_us.is_some(), RtlaUnsupported::Auto),
            (self.cgroup.is_some(), RtlaUnsupported::Cgroup),
            (
                self.stack_us.is_some() && self.auto_us.is_none(),
                RtlaUnsupported::Stack,
            ),
            (self.user_load, RtlaUnsupported::UserLoad),
            (!self.events.is_empty(), RtlaUnsupported::Event),
            (self.dump_tasks, RtlaUnsupported::DumpTasks),
            (
                self.auto_analysis() && self.auto_us.is_none(),
                RtlaUnsupported::AutoAnalysis,
            ),
        ]
        .into_iter()
        .filter_map(|(given, u)| given.then_some(u))
        .collect()
    }

    /// The first option latscope cannot honour, as its error.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] naming it.
    pub fn refuse_unsupported(&self) -> Result<(), Error> {
        match self.unsupported().first() {
            Some(u) => Err(u.error()),
            None => Ok(()),
        }
    }

    /// Whether rtla measures with user-space threads: `-u`, or neither
    /// `-u`, `-k` nor `-U` where the kernel has timerlat's user-space
    /// interface (`user_interface`).
    pub fn user_threads(&self, user_interface: bool) -> bool {
        match self.threads {
            RtlaThreads::User => true,
            RtlaThreads::Kernel => false,
            RtlaThreads::Auto => !self.user_load && user_interface,
        }
    }

    /// The text's options. The user columns show with `-u` or `-U`, and
    /// with user-space threads rtla picked itself.
    pub fn text_options(&self, user_interface: bool) -> Options {
        Options {
            unit: self.unit,
            no_irq: self.no_irq,
            no_thread: self.no_thread,
            user: self.user_load || self.user_threads(user_interface),
            no_header: self.no_header,
            no_summary: self.no_summary,
            no_index: self.no_index,
            with_zeros: self.with_zeros,
        }
    }
}

/// Parse the words after the program name of latscope invoked as `rtla`:
/// `timerlat hist` and its options.
///
/// # Errors
///
/// [`Error::Usage`] for a command line rtla 6.12 would refuse (or that
/// latscope refuses, see the module's documentation), naming the option;
/// [`Error::Unsupported`] for another rtla command (`timerlat top`,
/// `osnoise`, `hwnoise`). Options latscope cannot honour are not refused
/// here: see [`RtlaHist::refuse_unsupported`].
pub fn parse_rtla<S: AsRef<str>>(args: &[S]) -> Result<RtlaRequest, Error> {
    let words: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    let top = Error::Unsupported {
        what: "rtla timerlat top",
        why: "latscope's rtla runs `rtla timerlat hist` only",
    };
    match words.as_slice() {
        [] => Err(Error::usage("rtla needs a command: timerlat hist")),
        ["-h" | "--help", ..] | ["timerlat", "-h" | "--help", ..] => Ok(RtlaRequest::Help),
        ["timerlat", "hist", rest @ ..] => hist(rest),
        ["timerlat"] | ["timerlat", "top", ..] => Err(top),
        ["timerlat", w, ..] if w.starts_with('-') => Err(top),
        ["timerlat", w, ..] => Err(Error::usage(format!(
            "unknown timerlat tool '{w}': latscope's rtla runs timerlat hist"
        ))),
        ["osnoise", ..] => Err(Error::Unsupported {
            what: "rtla osnoise",
            why: "latscope's rtla runs `rtla timerlat hist` only",
        }),
        ["hwnoise", ..] => Err(Error::Unsupported {
            what: "rtla hwnoise",
            why: "latscope's rtla runs `rtla timerlat hist` only",
        }),
        [w, ..] => Err(Error::usage(format!(
            "unknown rtla command '{w}': latscope's rtla runs timerlat hist"
        ))),
    }
}

/// The options of `timerlat hist`, in rtla's `getopt_long` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opt {
    Auto,
    Cpus,
    Cgroup,
    BucketSize,
    Debug,
    Entries,
    Duration,
    HouseKeeping,
    Help,
    Irq,
    Nano,
    Period,
    Priority,
    Stack,
    Thread,
    Trace,
    UserThreads,
    KernelThreads,
    UserLoad,
    Event,
    NoIrq,
    NoThread,
    NoHeader,
    NoSummary,
    NoIndex,
    WithZeros,
    Trigger,
    Filter,
    DmaLatency,
    NoAa,
    DumpTask,
    WarmUp,
    TraceBufferSize,
}

/// What an option takes after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
    Nothing,
    /// A value, attached or the next word (whatever it is).
    Value,
    /// A value only if attached (`-tFILE`, `-C=NAME`, `--trace=FILE`).
    Attached,
}

/// One option: its long name, its letter (rtla's `getopt_long` string
/// gives the long-only options the digits; the last three have control
/// characters no one types) and what it takes.
struct Spec {
    opt: Opt,
    long: &'static str,
    short: Option<char>,
    takes: Takes,
}

const fn spec(opt: Opt, long: &'static str, short: Option<char>, takes: Takes) -> Spec {
    Spec {
        opt,
        long,
        short,
        takes,
    }
}

/// rtla 6.12's `long_options` of `timerlat hist`, in its order.
const SPECS: [Spec; 33] = {
    use Opt::*;
    use Takes::{Attached, Nothing, Value};
    [
        spec(Auto, "auto", Some('a'), Value),
        spec(Cpus, "cpus", Some('c'), Value),
        spec(Cgroup, "cgroup", Some('C'), Attached),
        spec(BucketSize, "bucket-size", Some('b'), Value),
        spec(Debug, "debug", Some('D'), Nothing),
        spec(Entries, "entries", Some('E'), Value),
        spec(Duration, "duration", Some('d'), Value),
        spec(HouseKeeping, "house-keeping", Some('H'), Value),
        spec(Help, "help", Some('h'), Nothing),
        spec(Irq, "irq", Some('i'), Value),
        spec(Nano, "nano", Some('n'), Nothing),
        spec(Period, "period", Some('p'), Value),
        spec(Priority, "priority", Some('P'), Value),
        spec(Stack, "stack", Some('s'), Value),
        spec(Thread, "thread", Some('T'), Value),
        spec(Trace, "trace", Some('t'), Attached),
        spec(UserThreads, "user-threads", Some('u'), Nothing),
        spec(KernelThreads, "kernel-threads", Some('k'), Nothing),
        spec(UserLoad, "user-load", Some('U'), Nothing),
        spec(Event, "event", Some('e'), Value),
        spec(NoIrq, "no-irq", Some('0'), Nothing),
        spec(NoThread, "no-thread", Some('1'), Nothing),
        spec(NoHeader, "no-header", Some('2'), Nothing),
        spec(NoSummary, "no-summary", Some('3'), Nothing),
        spec(NoIndex, "no-index", Some('4'), Nothing),
        spec(WithZeros, "with-zeros", Some('5'), Nothing),
        spec(Trigger, "trigger", Some('6'), Value),
        spec(Filter, "filter", Some('7'), Value),
        spec(DmaLatency, "dma-latency", Some('8'), Value),
        spec(NoAa, "no-aa", Some('9'), Nothing),
        spec(DumpTask, "dump-task", None, Nothing),
        spec(WarmUp, "warm-up", None, Value),
        spec(TraceBufferSize, "trace-buffer-size", None, Value),
    ]
};

/// The option of a long name, or an unambiguous abbreviation of one (as
/// `getopt_long` takes them); else the names it could abbreviate.
fn long_spec(name: &str) -> Result<&'static Spec, Vec<&'static str>> {
    if let Some(s) = SPECS.iter().find(|s| s.long == name) {
        return Ok(s);
    }
    let candidates: Vec<&'static Spec> =
        SPECS.iter().filter(|s| s.long.starts_with(name)).collect();
    match candidates.as_slice() {
        [one] => Ok(one),
        _ => Err(candidates.iter().map(|s| s.long).collect()),
    }
}

fn short_spec(c: char) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.short == Some(c))
}

/// One option as given: which, its value, how it was spelled.
struct Given<'w> {
    spec: &'static Spec,
    value: Option<&'w str>,
    spelled: String,
}

/// `timerlat hist`'s options (the words after `hist`).
fn hist(words: &[&str]) -> Result<RtlaRequest, Error> {
    let mut h = RtlaHist::default();
    let mut seen = Seen::default();
    let mut i = 0;
    while let Some(&w) = words.get(i) {
        i += 1;
        if w.is_empty() {
            continue;
        }
        if w == "--" {
            if let Some(stray) = words[i..].iter().find(|w| !w.is_empty()) {
                return Err(stray_word(stray));
            }
            break;
        }
        let given = if let Some(body) = w.strip_prefix("--") {
            vec![long_option(body, words, &mut i)?]
        } else if w.len() > 1 && w.starts_with('-') {
            short_cluster(&w[1..], words, &mut i)?
        } else {
            return Err(stray_word(w));
        };
        for g in given {
            if apply(&mut h, &mut seen, &g)? == Flow::Help {
                return Ok(RtlaRequest::Help);
            }
        }
    }
    check(&mut h, &seen)?;
    Ok(RtlaRequest::Hist(Box::new(h)))
}

fn stray_word(w: &str) -> Error {
    Error::usage(format!("unexpected argument '{w}'"))
}

/// `--name`, `--name=value`, or `--name value` for a value it needs.
fn long_option<'w>(body: &'w str, words: &[&'w str], i: &mut usize) -> Result<Given<'w>, Error> {
    let (name, inline) = match body.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (body, None),
    };
    let spec = long_spec(name).map_err(|candidates| {
        if candidates.is_empty() {
            Error::usage(format!("unknown option --{name}"))
        } else {
            Error::usage(format!(
                "option --{name} is ambiguous (--{})",
                candidates.join(", --")
            ))
        }
    })?;
    let spelled = format!("--{}", spec.long);
    let value = match spec.takes {
        Takes::Nothing if inline.is_some() => {
            return Err(Error::usage(format!("{spelled} takes no value")))
        }
        Takes::Nothing => None,
        Takes::Value => Some(match inline {
            Some(v) => v,
            None => next_word(&spelled, words, i)?,
        }),
        Takes::Attached => inline,
    };
    Ok(Given {
        spec,
        value: peek_trace(spec, value, words, i),
        spelled,
    })
}

/// `-abc`: letters up to the first that takes a value, which takes the
/// rest of the word (or, if none is left and it needs one, the next word).
fn short_cluster<'w>(
    letters: &'w str,
    words: &[&'w str],
    i: &mut usize,
) -> Result<Vec<Given<'w>>, Error> {
    let mut out = Vec::new();
    for (k, c) in letters.char_indices() {
        let spec = short_spec(c).ok_or_else(|| Error::usage(format!("unknown option -{c}")))?;
        let spelled = format!("-{c}");
        let rest = &letters[k + c.len_utf8()..];
        let value = match spec.takes {
            Takes::Nothing => None,
            Takes::Value if rest.is_empty() => Some(next_word(&spelled, words, i)?),
            Takes::Attached if rest.is_empty() => None,
            Takes::Value | Takes::Attached => Some(rest),
        };
        let took_rest = value.is_some() && !rest.is_empty();
        out.push(Given {
            spec,
            value: peek_trace(spec, value, words, i),
            spelled,
        });
        if took_rest {
            break;
        }
    }
    Ok(out)
}

/// The next word, which a value an option needs takes whatever it is.
fn next_word<'w>(spelled: &str, words: &[&'w str], i: &mut usize) -> Result<&'w str, Error> {
    let w = words
        .get(*i)
        .ok_or_else(|| Error::usage(format!("{spelled} needs a value")))?;
    *i += 1;
    Ok(w)
}

/// `-t` without an attached file takes the next word as its file if that
/// is no option, as rtla does (`-t FILE`); an empty word is not a file.
fn peek_trace<'w>(
    spec: &Spec,
    value: Option<&'w str>,
    words: &[&'w str],
    i: &mut usize,
) -> Option<&'w str> {
    if spec.opt != Opt::Trace || value.is_some() {
        return value;
    }
    let w = *words.get(*i)?;
    if w.is_empty() || w.starts_with('-') {
        return None;
    }
    *i += 1;
    Some(w)
}

/// Options whose combinations are checked after all are read.
#[derive(Default)]
struct Seen {
    user: bool,
    kernel: bool,
}

/// What to do after an option.
#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Go,
    Help,
}

/// One option into `h`, with rtla's checks of its value.
fn apply(h: &mut RtlaHist, seen: &mut Seen, g: &Given<'_>) -> Result<Flow, Error> {
    let name = g.spelled.as_str();
    let v = g.value.unwrap_or("");
    match g.spec.opt {
        Opt::Auto => {
            let us = nonzero(whole(name, v, 0, u64::MAX)?);
            h.auto_us = us;
            h.stop_total_us = us;
            h.stop_us = us;
            h.stack_us = us;
            h.trace_output = Some(DEFAULT_TRACE_FILE.to_string());
        }
        Opt::Cpus => h.cpus = Some(cpu_set(name, v)?),
        Opt::Cgroup => {
            h.cgroup = Some(match g.value.and_then(|v| v.strip_prefix('=')) {
                Some(n) => RtlaCgroup::Named(n.to_string()),
                None => RtlaCgroup::Inherit,
            })
        }
        Opt::BucketSize => h.bucket_size = whole(name, v, 1, 999_999)?,
        Opt::Debug => h.debug = true,
        Opt::Entries => h.entries = whole(name, v, 10, 9_999_999)? as usize,
        Opt::Duration => h.duration_s = Some(seconds(name, v)?),
        Opt::HouseKeeping => h.house_keeping = Some(cpu_set(name, v)?),
        Opt::Help => return Ok(Flow::Help),
        Opt::Irq => h.stop_us = nonzero(whole(name, v, 0, u64::MAX)?),
        Opt::Nano => h.unit = Unit::Nanos,
        Opt::Period => {
            let us = whole(name, v, 0, u64::MAX)?;
            if us != 0 && !(100..=1_000_000).contains(&us) {
                return Err(Error::usage(format!(
                    "{name} {us}: the kernel's timerlat period is 100 to 1000000 µs (0: its default)"
                )));
            }
            h.period_us = nonzero(us);
        }
        Opt::Priority => h.sched = Some(priority(name, v)?),
        Opt::Stack => h.stack_us = nonzero(whole(name, v, 0, u64::MAX)?),
        Opt::Thread => h.stop_total_us = nonzero(whole(name, v, 0, u64::MAX)?),
        Opt::Trace => {
            let file = match g.value {
                Some(v) => v.strip_prefix('=').unwrap_or(v),
                None => DEFAULT_TRACE_FILE,
            };
            if file.is_empty() {
                return Err(Error::usage(format!("{name}: empty file name")));
            }
            h.trace_output = Some(file.to_string());
        }
        Opt::UserThreads => {
            seen.user = true;
            h.threads = RtlaThreads::User;
        }
        Opt::KernelThreads => {
            seen.kernel = true;
            h.threads = RtlaThreads::Kernel;
        }
        Opt::UserLoad => h.user_load = true,
        Opt::Event => {
            let (system, event) = match v.split_once(':') {
                Some((s, e)) => (s, Some(e.to_string())),
                None => (v, None),
            };
            h.events.push(RtlaEvent {
                system: system.to_string(),
                event,
                filter: None,
                trigger: None,
            });
        }
        Opt::NoIrq => h.no_irq = true,
        Opt::NoThread => h.no_thread = true,
        Opt::NoHeader => h.no_header = true,
        Opt::NoSummary => h.no_summary = true,
        Opt::NoIndex => h.no_index = true,
        Opt::WithZeros => h.with_zeros = true,
        Opt::Trigger | Opt::Filter => {
            let e = h
                .events
                .last_mut()
                .ok_or_else(|| Error::usage(format!("{name} needs an -e before it")))?;
            let slot = if g.spec.opt == Opt::Trigger {
                &mut e.trigger
            } else {
                &mut e.filter
            };
            *slot = Some(v.to_string());
        }
        Opt::DmaLatency => h.dma_latency_us = Some(whole(name, v, 0, 10_000)? as u32),
        Opt::NoAa => h.no_aa = true,
        Opt::DumpTask => h.dump_tasks = true,
        Opt::WarmUp => h.warm_up_s = nonzero(whole(name, v, 0, u64::from(u32::MAX))?),
        Opt::TraceBufferSize => h.trace_buffer_kb = nonzero(whole(name, v, 0, 1 << 30)?),
    }
    Ok(Flow::Go)
}

/// rtla's checks after its options.
fn check(h: &mut RtlaHist, seen: &Seen) -> Result<(), Error> {
    if h.no_irq && h.no_thread {
        return Err(Error::usage(
            "--no-irq with --no-thread leaves nothing to show",
        ));
    }
    if h.no_index && !h.with_zeros {
        return Err(Error::usage(
            "--no-index needs --with-zeros (without the index, rows must not be left out)",
        ));
    }
    if seen.user && seen.kernel {
        return Err(Error::usage(
            "--kernel-threads and --user-threads are mutually exclusive",
        ));
    }
    Ok(())
}

/// 0 as "not set".
fn nonzero(n: u64) -> Option<u64> {
    (n != 0).then_some(n)
}

/// A whole number in `lo..=hi`.
fn whole(name: &str, v: &str, lo: u64, hi: u64) -> Result<u64, Error> {
    let n: u64 =
        digits(v).ok_or_else(|| Error::usage(format!("{name} '{v}': not a whole number")))?;
    if n < lo || n > hi {
        return Err(Error::usage(format!(
            "{name} {n}: must be between {lo} and {hi}"
        )));
    }
    Ok(n)
}

/// Decimal digits only.
fn digits(v: &str) -> Option<u64> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

/// Largest CPU number a `cpu_set_t` holds.
const MAX_CPU: usize = 1023;

/// rtla's CPU list (`parse_cpu_set()`): `N` or `N-M`, separated by
/// commas, a trailing comma allowed; ascending, each CPU once.
fn cpu_set(name: &str, v: &str) -> Result<Vec<usize>, Error> {
    let bad = || Error::usage(format!("{name} '{v}': not a CPU list (like 0-3,5)"));
    let mut cpus = Vec::new();
    let body = v.strip_suffix(',').unwrap_or(v);
    for item in body.split(',') {
        let (a, b) = item.split_once('-').unwrap_or((item, item));
        let a = digits(a).ok_or_else(bad)?;
        let b = digits(b).ok_or_else(bad)?;
        if a > b || b > MAX_CPU as u64 {
            return Err(bad());
        }
        cpus.extend(a as usize..=b as usize);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// rtla's `parse_seconds_duration()`: a number of seconds, or of minutes,
/// hours or days with `m`, `h` or `d` (either case; `s` for seconds).
fn seconds(name: &str, v: &str) -> Result<u64, Error> {
    let bad = || {
        Error::usage(format!(
            "{name} '{v}': not a duration (like 30, 30s, 10m, 2h, 1d)"
        ))
    };
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (n, unit) = v.split_at(split);
    let factor = match unit {
        "" | "s" | "S" => 1,
        "m" | "M" => 60,
        "h" | "H" => 3600,
        "d" | "D" => 86_400,
        _ => return Err(bad()),
    };
    let secs = digits(n)
        .and_then(|n| n.checked_mul(factor))
        .ok_or_else(bad)?;
    if secs == 0 {
        return Err(Error::usage(format!(
            "{name} '{v}': the duration must not be 0"
        )));
    }
    Ok(secs)
}

/// rtla's `parse_prio()`: the policy's letter (either case), then after
/// the first `:` the priority (`f:95`, `r:50`), the nice value (`o:-5`),
/// or for `d` the runtime and the period with their units
/// (`d:100us:1ms`).
fn priority(name: &str, v: &str) -> Result<RtlaSched, Error> {
    let bad = || {
        Error::usage(format!(
            "{name} '{v}': not a priority (o:NICE, r:PRIO, f:PRIO or d:RUNTIME:PERIOD)"
        ))
    };
    let (_, after) = v.split_once(':').ok_or_else(bad)?;
    let rt_prio = || {
        digits(after)
            .filter(|p| (1..=99).contains(p))
            .map(|p| p as u32)
            .ok_or_else(bad)
    };
    match v.chars().next() {
        Some('f' | 'F') => Ok(RtlaSched::Fifo { prio: rt_prio()? }),
        Some('r' | 'R') => Ok(RtlaSched::Rr { prio: rt_prio()? }),
        Some('o' | 'O') => {
            let (neg, n) = match after.strip_prefix('-') {
                Some(n) => (true, n),
                None => (false, after),
            };
            let n = digits(n).filter(|&n| n <= 20).ok_or_else(bad)? as i32;
            let nice = if neg { -n } else { n };
            if !(-19..=20).contains(&nice) {
                return Err(bad());
            }
            Ok(RtlaSched::Other { nice })
        }
        Some('d' | 'D') => {
            let (runtime, period) = after.split_once(':').ok_or_else(bad)?;
            let runtime_ns = ns(runtime).ok_or_else(bad)?;
            let period_ns = ns(period).ok_or_else(bad)?;
            if runtime_ns == 0 || runtime_ns > period_ns {
                return Err(Error::usage(format!(
                    "{name} '{v}': the runtime must be more than 0 and at most the period"
                )));
            }
            Ok(RtlaSched::Deadline {
                runtime_ns,
                period_ns,
            })
        }
        _ => Err(bad()),
    }
}

/// rtla's `parse_ns_duration()`: a number and its unit, `ns`, `us`, `ms`
/// or `s` (the unit is required), in ns.
fn ns(v: &str) -> Option<u64> {
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (n, unit) = v.split_at(split);
    let factor = match unit {
        "ns" => 1,
        "us" => 1000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return None,
    };
    digits(n)?.checked_mul(factor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::EXIT_USAGE;

    fn hist_of(args: &[&str]) -> RtlaHist {
        let mut words = vec!["timerlat", "hist"];
        words.extend_from_slice(args);
        match parse_rtla(&words) {
            Ok(RtlaRequest::Hist(h)) => *h,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    fn error_of(words: &[&str]) -> String {
        let e = parse_rtla(words).expect_err("an error");
        assert!(!e.to_string().contains('\n'), "{words:?}: {e}");
        assert_eq!(e.exit_status(), EXIT_USAGE, "{words:?}: {e}");
        e.to_string()
    }

    fn hist_error(args: &[&str]) -> String {
        let mut words = vec!["timerlat", "hist"];
        words.extend_from_slice(args);
        error_of(&words)
    }

    #[test]
    fn rtevals_command_lines() {
        // rteval 3.10 with an interval, and its usual options
        let h = hist_of(&[
            "-p100",
            "-P",
            "f:95",
            "-u",
            "-c0-3",
            "-E3500",
            "--no-summary",
            "--no-aa",
            "--dma-latency=0",
        ]);
        let want = RtlaHist {
            period_us: Some(100),
            sched: Some(RtlaSched::Fifo { prio: 95 }),
            threads: RtlaThreads::User,
            cpus: Some(vec![0, 1, 2, 3]),
            entries: 3500,
            no_summary: true,
            no_aa: true,
            dma_latency_us: Some(0),
            ..RtlaHist::default()
        };
        assert_eq!(h, want);
        assert!(h.unsupported().is_empty());
        // without an interval rteval passes an empty word where -p was;
        // with stoptrace and trace, -T and -t=FILE
        let h = hist_of(&[
            "",
            "-P",
            "f:95",
            "-u",
            "-c1,3",
            "-E3500",
            "--no-summary",
            "--no-aa",
            "--dma-latency=0",
            "-T100",
            "-t=run1/timerlat_trace.txt",
        ]);
        assert_eq!(h.period_us, None);
        assert_eq!(h.cpus, Some(vec![1, 3]));
        assert_eq!(h.stop_total_us, Some(100));
        assert_eq!(h.trace_output.as_deref(), Some("run1/timerlat_trace.txt"));
        assert!(!h.auto_analysis());
        assert_eq!(h.refuse_unsupported(), Ok(()));
        // rteval's dma_latency of None leaves the option out
        let h = hist_of(&[
            "",
            "-P",
            "f:95",
            "-u",
            "-c0",
            "-E3500",
            "--no-summary",
            "--no-aa",
        ]);
        assert_eq!(h.dma_latency_us, None);
        // and its columns: user ones, no summary
        let o = h.text_options(true);
        assert!(o.user && o.no_summary && !o.no_irq && !o.no_thread);
    }

    /// The command lines of rtla's own output in core's fixtures
    /// (`core/src/rtla/fixtures/README.md`), and the one rtla refused.
    #[test]
    fn the_fixtures_command_lines() {
        let rteval = [
            "-P",
            "f:95",
            "-u",
            "-c0,1",
            "-E50",
            "--no-summary",
            "--no-aa",
            "--dma-latency=0",
            "-d",
            "3s",
        ];
        for (first, period) in [("-p100", Some(100)), ("", None)] {
            let mut args = vec![first];
            args.extend_from_slice(&rteval);
            let h = hist_of(&args);
            assert_eq!((h.period_us, h.duration_s), (period, Some(3)));
            assert_eq!((h.cpus.as_deref(), h.entries), (Some(&[0, 1][..]), 50));
            let o = h.text_options(true);
            assert_eq!(
                o,
                Options {
                    user: true,
                    no_summary: true,
                    ..Options::DEFAULT
                }
            );
        }
        // rtla took `-p ""` as -1 and failed ("Failed to set timerlat
        // period"); latscope refuses it before it starts
        let mut args = vec!["-p", ""];
        args.extend_from_slice(&rteval);
        assert!(hist_error(&args).starts_with("-p '': not a whole number"));
    }

    #[test]
    fn letters_mean_rtlas_things() {
        let h = hist_of(&[
            "-c", "2", "-d", "10m", "-p", "500", "-t", "-u", "-D", "-i", "40", "-H", "0", "-n",
            "-b", "2", "-E", "10",
        ]);
        assert_eq!(h.cpus, Some(vec![2]));
        assert_eq!(h.duration_s, Some(600));
        assert_eq!(h.period_us, Some(500));
        assert_eq!(h.trace_output.as_deref(), Some(DEFAULT_TRACE_FILE));
        assert_eq!(h.threads, RtlaThreads::User);
        assert!(h.debug);
        assert_eq!(h.stop_us, Some(40));
        assert_eq!(h.house_keeping, Some(vec![0]));
        assert_eq!(h.unit, Unit::Nanos);
        assert_eq!((h.bucket_size, h.entries), (2, 10));
        // -i without --no-aa would run the auto-analysis
        assert_eq!(h.unsupported(), [RtlaUnsupported::AutoAnalysis]);
        let h = hist_of(&["-k", "-P", "r:50", "-s", "30", "-d", "1D"]);
        assert_eq!(h.threads, RtlaThreads::Kernel);
        assert_eq!(h.sched, Some(RtlaSched::Rr { prio: 50 }));
        assert_eq!(h.stack_us, Some(30));
        assert_eq!(h.duration_s, Some(86_400));
        assert_eq!(h.unsupported(), [RtlaUnsupported::Stack]);
    }

    #[test]
    fn every_option_of_rtla_6_12_is_read_long_and_short() {
        for s in &SPECS {
            let value = match (s.opt, s.takes) {
                (Opt::Cpus | Opt::HouseKeeping, _) => Some("0"),
                (Opt::Priority, _) => Some("f:1"),
                (Opt::Entries, _) => Some("10"),
                (Opt::Period, _) => Some("100"),
                (_, Takes::Value) => Some("1"),
                (_, Takes::Nothing | Takes::Attached) => None,
            };
            // what the option needs beside it
            let before: &[&str] = if matches!(s.opt, Opt::Trigger | Opt::Filter) {
                &["-e", "sched"]
            } else if s.opt == Opt::NoIndex {
                &["--with-zeros"]
            } else {
                &[]
            };
            let mut spellings = vec![format!("--{}", s.long)];
            spellings.extend(s.short.map(|c| format!("-{c}")));
            for spelled in spellings {
                let mut words = vec!["timerlat", "hist"];
                words.extend_from_slice(before);
                words.push(&spelled);
                words.extend(value);
                match parse_rtla(&words) {
                    Ok(RtlaRequest::Help) => assert_eq!(s.opt, Opt::Help),
                    Ok(RtlaRequest::Hist(_)) => {}
                    Err(e) => panic!("{words:?}: {e}"),
                }
            }
        }
        // the digits are the long-only options
        let h = hist_of(&["-3", "-9", "-8", "5", "-5", "-4", "-2", "-0"]);
        assert!(h.no_summary && h.no_aa && h.with_zeros && h.no_index);
        assert!(h.no_header && h.no_irq && !h.no_thread);
        assert_eq!(h.dma_latency_us, Some(5));
    }

    #[test]
    fn long_names_take_abbreviations_as_getopt_long_does() {
        let h = hist_of(&[
            "--no-sum",
            "--dma=5",
            "--per",
            "200",
            "--dump",
            "--warm-up=3",
        ]);
        assert!(h.no_summary && h.dump_tasks);
        assert_eq!((h.dma_latency_us, h.period_us), (Some(5), Some(200)));
        assert_eq!(h.warm_up_s, Some(3));
        assert_eq!(
            hist_error(&["--no"]),
            "option --no is ambiguous (--no-irq, --no-thread, --no-header, --no-summary, \
             --no-index, --no-aa) (see --help)"
        );
        assert!(hist_error(&["--tr", "x"]).contains("ambiguous"));
        // rtla 6.12's help says --dump-tasks, its table --dump-task
        assert_eq!(
            hist_error(&["--dump-tasks"]),
            "unknown option --dump-tasks (see --help)"
        );
        // exact names win over longer ones they begin
        assert_eq!(
            hist_of(&["--trace"]).trace_output.as_deref(),
            Some(DEFAULT_TRACE_FILE)
        );
        assert_eq!(
            hist_of(&["--trace-buffer-size", "64"]).trace_buffer_kb,
            Some(64)
        );
    }

    #[test]
    fn trace_files_as_rtla_reads_them() {
        let file = |args: &[&str]| hist_of(args).trace_output;
        let s = |v: &str| Some(v.to_string());
        assert_eq!(file(&["-t"]), s(DEFAULT_TRACE_FILE));
        assert_eq!(file(&["-t", "x.txt"]), s("x.txt"));
        assert_eq!(file(&["-tx.txt"]), s("x.txt"));
        assert_eq!(file(&["-t=x.txt"]), s("x.txt"));
        assert_eq!(file(&["--trace=x.txt"]), s("x.txt"));
        assert_eq!(file(&["--trace==x.txt"]), s("x.txt"));
        assert_eq!(file(&["--trace", "x.txt"]), s("x.txt"));
        assert_eq!(file(&["-t", ""]), s(DEFAULT_TRACE_FILE));
        let h = hist_of(&["-t", "-u"]);
        assert_eq!(
            (h.trace_output, h.threads),
            (s(DEFAULT_TRACE_FILE), RtlaThreads::User)
        );
        // the rest of a cluster after -t is its file
        assert_eq!(file(&["-ut"]), s(DEFAULT_TRACE_FILE));
        assert_eq!(file(&["-tu"]), s("u"));
        assert_eq!(file(&[]), None);
        assert!(hist_error(&["-t="]).contains("-t: empty file name"));
    }

    #[test]
    fn auto_sets_what_rtla_sets_in_order() {
        let h = hist_of(&["-a", "50", "-T", "100"]);
        assert_eq!(h.auto_us, Some(50));
        assert_eq!(
            (h.stop_us, h.stop_total_us, h.stack_us),
            (Some(50), Some(100), Some(50))
        );
        assert_eq!(h.trace_output.as_deref(), Some(DEFAULT_TRACE_FILE));
        assert!(h.auto_analysis());
        assert_eq!(h.unsupported(), [RtlaUnsupported::Auto]);
        let h = hist_of(&["-T", "100", "-t", "mine.txt", "-a", "50", "--no-aa"]);
        assert_eq!(h.stop_total_us, Some(50));
        assert_eq!(h.trace_output.as_deref(), Some(DEFAULT_TRACE_FILE));
        assert!(!h.auto_analysis());
    }

    #[test]
    fn unsupported_options_are_kept_and_named() {
        let h = hist_of(&[
            "-C=grp",
            "-U",
            "-e",
            "sched:sched_switch",
            "--filter",
            "prev_pid==1",
            "--trigger",
            "stacktrace",
            "--dump-task",
            "-T",
            "10",
        ]);
        assert_eq!(h.cgroup, Some(RtlaCgroup::Named("grp".into())));
        assert_eq!(
            h.events,
            [RtlaEvent {
                system: "sched".into(),
                event: Some("sched_switch".into()),
                filter: Some("prev_pid==1".into()),
                trigger: Some("stacktrace".into()),
            }]
        );
        assert_eq!(
            h.unsupported(),
            [
                RtlaUnsupported::Cgroup,
                RtlaUnsupported::UserLoad,
                RtlaUnsupported::Event,
                RtlaUnsupported::DumpTasks,
                RtlaUnsupported::AutoAnalysis,
            ]
        );
        let e = h.refuse_unsupported().unwrap_err();
        assert_eq!(e.exit_status(), EXIT_USAGE);
        assert!(
            e.to_string().starts_with("-C/--cgroup is not supported"),
            "{e}"
        );
        // rtla 6.12 keeps a -C name only after '='
        assert_eq!(hist_of(&["-C"]).cgroup, Some(RtlaCgroup::Inherit));
        assert_eq!(hist_of(&["-Cgrp"]).cgroup, Some(RtlaCgroup::Inherit));
        assert_eq!(hist_of(&["--cgroup=grp"]).cgroup, Some(RtlaCgroup::Inherit));
        assert_eq!(
            hist_of(&["--cgroup==grp"]).cgroup,
            Some(RtlaCgroup::Named("grp".into()))
        );
        for u in [
            RtlaUnsupported::Auto,
            RtlaUnsupported::Cgroup,
            RtlaUnsupported::Stack,
            RtlaUnsupported::UserLoad,
            RtlaUnsupported::Event,
            RtlaUnsupported::DumpTasks,
            RtlaUnsupported::AutoAnalysis,
        ] {
            let text = u.error().to_string();
            assert!(text.starts_with(u.option()), "{text}");
            assert!(!text.contains('\n'), "{text}");
        }
    }

    #[test]
    fn priorities_as_parse_prio_reads_them() {
        let p = |v: &str| hist_of(&["-P", v]).sched;
        assert_eq!(p("f:95"), Some(RtlaSched::Fifo { prio: 95 }));
        assert_eq!(p("F:1"), Some(RtlaSched::Fifo { prio: 1 }));
        // rtla reads the first letter and the number after the first ':'
        assert_eq!(p("fifo:95"), Some(RtlaSched::Fifo { prio: 95 }));
        assert_eq!(p("r:50"), Some(RtlaSched::Rr { prio: 50 }));
        assert_eq!(p("o:-5"), Some(RtlaSched::Other { nice: -5 }));
        assert_eq!(p("O:20"), Some(RtlaSched::Other { nice: 20 }));
        assert_eq!(p("o:-1"), Some(RtlaSched::Other { nice: -1 }));
        assert_eq!(
            p("d:100us:1ms"),
            Some(RtlaSched::Deadline {
                runtime_ns: 100_000,
                period_ns: 1_000_000
            })
        );
        assert_eq!(
            p("D:1s:2s"),
            Some(RtlaSched::Deadline {
                runtime_ns: 1_000_000_000,
                period_ns: 2_000_000_000
            })
        );
        assert_eq!(p("f:95").map(RtlaSched::policy), Some(Policy::Fifo));
        for bad in [
            "f:0",
            "f:100",
            "f95",
            "x:5",
            "o:-20",
            "o:21",
            "d:100:1000",
            "d:1ms:100us",
            "",
            "f:",
        ] {
            let e = hist_error(&["-P", bad]);
            assert!(e.starts_with("-P "), "{bad}: {e}");
        }
    }

    #[test]
    fn cpu_lists_and_durations() {
        let c = |v: &str| hist_of(&["-c", v]).cpus;
        assert_eq!(c("0-3,5"), Some(vec![0, 1, 2, 3, 5]));
        assert_eq!(c("3,1,1"), Some(vec![1, 3]));
        assert_eq!(c("1,"), Some(vec![1]));
        for bad in ["", "1-", "x", "3-1", "0,99999", "-1", "1,,2"] {
            assert!(hist_error(&["-c", bad]).starts_with("-c "), "{bad}");
        }
        let d = |v: &str| hist_of(&["-d", v]).duration_s;
        assert_eq!(d("30"), Some(30));
        assert_eq!(d("30s"), Some(30));
        assert_eq!(d("2h"), Some(7200));
        assert_eq!(d("1d"), Some(86_400));
        for bad in ["0", "0m", "5x", "m", "5mm", ""] {
            assert!(hist_error(&["-d", bad]).starts_with("-d "), "{bad}");
        }
    }

    #[test]
    fn bad_values_are_one_line_naming_the_option() {
        for (args, name) in [
            (&["-p", "50"][..], "-p"),
            (&["-p2000000"], "-p"),
            (&["-p", ""], "-p"),
            (&["-p", "100us"], "-p"),
            (&["-E", "5"], "-E"),
            (&["--entries=10000000"], "--entries"),
            (&["-b", "0"], "-b"),
            (&["-b", "1000000"], "-b"),
            (&["--dma-latency=10001"], "--dma-latency"),
            (&["--dma-latency=-1"], "--dma-latency"),
            (&["-T", "-5"], "-T"),
            (&["--no-aa=1"], "--no-aa"),
            (&["-p"], "-p"),
            (&["--filter", "x"], "--filter"),
            (&["-Z"], "-Z"),
            (&["--bogus"], "--bogus"),
            (&["-k", "-u"], "--kernel-threads"),
            (&["--no-irq", "--no-thread"], "--no-irq"),
            (&["--no-index"], "--no-index"),
        ] {
            let e = hist_error(args);
            assert!(e.contains(name), "{args:?}: {e}");
        }
        assert_eq!(
            hist_error(&["stray"]),
            "unexpected argument 'stray' (see --help)"
        );
        assert!(hist_error(&["--", "x"]).contains("'x'"));
        assert!(hist_error(&["-"]).contains("'-'"));
        // empty words are skipped, also after --
        assert_eq!(hist_of(&["", "--", ""]), RtlaHist::default());
        // -p 0 is the kernel's default, as in rtla
        assert_eq!(hist_of(&["-p0"]).period_us, None);
    }

    #[test]
    fn commands_other_than_timerlat_hist_are_refused_by_name() {
        assert_eq!(parse_rtla(&["-h"]), Ok(RtlaRequest::Help));
        assert_eq!(parse_rtla(&["--help"]), Ok(RtlaRequest::Help));
        assert_eq!(parse_rtla(&["timerlat", "-h"]), Ok(RtlaRequest::Help));
        assert_eq!(
            parse_rtla(&["timerlat", "hist", "-h"]),
            Ok(RtlaRequest::Help)
        );
        assert_eq!(
            parse_rtla(&["timerlat", "hist", "-u", "--help", "--bogus"]),
            Ok(RtlaRequest::Help)
        );
        // rtla reads the options in order: an error before -h stops it
        assert!(hist_error(&["--bogus", "-h"]).contains("--bogus"));
        assert_eq!(
            parse_rtla(&["timerlat", "hist"]),
            Ok(RtlaRequest::Hist(Box::default()))
        );
        for words in [
            &["timerlat"][..],
            &["timerlat", "top"],
            &["timerlat", "top", "-q"],
            // rtla runs top when the tool is left out
            &["timerlat", "-p", "100"],
        ] {
            assert_eq!(
                error_of(words),
                "rtla timerlat top is not supported by latscope: \
                 latscope's rtla runs `rtla timerlat hist` only",
                "{words:?}"
            );
        }
        assert!(error_of(&["osnoise", "hist"]).starts_with("rtla osnoise is not supported"));
        assert!(error_of(&["hwnoise"]).starts_with("rtla hwnoise is not supported"));
        assert!(error_of(&[]).contains("timerlat hist"));
        assert!(error_of(&["foo"]).contains("'foo'"));
        assert!(error_of(&["timerlat", "foo"]).contains("'foo'"));
    }

    #[test]
    fn user_columns_follow_the_threads_rtla_picks() {
        let o = |args: &[&str], iface: bool| hist_of(args).text_options(iface).user;
        assert!(o(&[], true));
        assert!(!o(&[], false));
        assert!(o(&["-u"], false));
        assert!(!o(&["-k"], true));
        assert!(o(&["-U"], false));
        assert!(o(&["-k", "-U"], true));
        assert!(!hist_of(&["-U"]).user_threads(true));
        let h = hist_of(&[
            "-n",
            "--no-irq",
            "--no-header",
            "--no-index",
            "--with-zeros",
        ]);
        let t = h.text_options(false);
        assert_eq!(t.unit, Unit::Nanos);
        assert!(t.no_irq && t.no_header && t.no_index && t.with_zeros && !t.no_thread);
    }

    #[test]
    fn the_program_name_says_rtla() {
        for (argv0, yes) in [
            ("rtla", true),
            ("/usr/bin/rtla", true),
            ("./rtla", true),
            ("latscope", false),
            ("rtla-x", false),
            ("/opt/rtla/latscope", false),
        ] {
            assert_eq!(invoked_as_rtla(OsStr::new(argv0)), yes, "{argv0}");
        }
    }
}
