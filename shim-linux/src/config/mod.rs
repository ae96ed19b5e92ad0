//! What the command line asks for: cyclictest's options with their
//! meanings plus latscope's own ([`Config`]), and which measuring thread runs
//! where ([`plan()`]).
//!
//! Everything else reads the configuration; nothing here depends on the
//! threads that use it. Dispatch on the options is by exhaustive matches
//! on [`options::Opt`], with no arm for "any other": an option added to
//! the table but not handled does not build.

#![deny(clippy::wildcard_enum_match_arm)]

mod checks;
mod cpus;
mod getopt;
mod help;
mod name;
mod numbers;
mod options;
mod parse;
mod plan;
mod rtla;
mod rtla_run;
mod values;

use latscope_core::cyclictest::HistShape;
use latscope_core::wire::{ClockKind, Policy, StartAlign, WakeMode};

use crate::bench::Knobs;
use crate::linux::tracefs::{trace_out, Limits};

pub use cpus::CpuList;
pub use help::help;
pub(crate) use help::{fill, intro, outro, sections, Shown};
pub use name::default_name;
pub(crate) use options::{Arg, Help, OPTIONS};
pub use parse::parse;
pub use plan::{first_pinned_cpu, mainaffinity, plan, ThreadPlan};
pub use rtla::{
    invoked_as_rtla, parse_rtla, RtlaCgroup, RtlaEvent, RtlaHist, RtlaRequest, RtlaSched,
    RtlaThreads, RtlaUnsupported,
};
pub use rtla_run::{rtla_config, RtlaText};

/// Where the binary frame stream goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dest {
    /// Standard output (`-`); human output then goes to standard error.
    Stdout,
    /// A file, created or truncated.
    File(String),
    /// A TCP listener at an IP literal (no name resolution).
    Tcp(std::net::SocketAddr),
    /// A serial line in raw mode.
    Serial {
        /// Device path.
        path: String,
        /// Baud rate.
        baud: u32,
    },
}

/// How many measuring threads `-t` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// `-t N`.
    Count(usize),
    /// `-t` without a number (or `-t 0`): one per available CPU.
    PerCpu,
}

/// Everything the command line sets. Times are kept in the unit the option
/// takes (µs for cyclictest's options) or in ns (durations).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `-a`: CPUs to pin to (`Some(empty)` never happens; `-a` alone = all).
    pub affinity: Option<CpuList>,
    /// `-t`.
    pub threads: Option<Threads>,
    /// `-S`.
    pub smp: bool,
    /// `-i` in µs.
    pub interval_us: u64,
    /// `-d` in µs (`None` = cyclictest's default: 500, or 0 with `-h`).
    pub distance_us: Option<u64>,
    /// `-p` (0 with a real-time policy: the number of threads + 1, as
    /// cyclictest defaults it).
    pub priority: u32,
    /// `--policy`.
    pub policy: Policy,
    /// `--priospread`.
    pub priospread: bool,
    /// `-l` (0 = endless).
    pub loops: u64,
    /// `-D` in ns (0 = endless).
    pub duration_ns: u64,
    /// `-b` in µs (0 = off).
    pub break_us: u64,
    /// `--tracemark`.
    pub tracemark: bool,
    /// `-h`/`-H` range in µs (0 = no histogram text).
    pub hist_us: u32,
    /// `-H`: add the all-threads column.
    pub hist_all: bool,
    /// `--hist-shape`: which rt-tests release's histogram shape.
    pub hist_shape: HistShape,
    /// `--histfile`.
    pub histfile: Option<String>,
    /// `--json`.
    pub json: Option<String>,
    /// `-N`.
    pub nsecs: bool,
    /// `-q`.
    pub quiet: bool,
    /// `-v`.
    pub verbose: bool,
    /// `--spike` in µs (0 = off).
    pub spike_us: u64,
    /// `-c`.
    pub clock: ClockKind,
    /// `--mainaffinity`.
    pub mainaffinity: Option<CpuList>,
    /// `--latency`.
    pub latency_us: i32,
    /// `--deepest-idle-state`: the deepest idle state the measured CPUs
    /// may enter (-1: none), instead of holding `/dev/cpu_dma_latency`.
    pub deepest_idle_state: Option<i32>,
    /// `--default-system`.
    pub default_system: bool,
    /// mlockall (on unless `--no-mlock`).
    pub mlock: bool,
    /// `--best-effort`.
    pub best_effort: bool,
    /// `--warmup` in ns.
    pub warmup_ns: u64,
    /// `--report-interval` in ns.
    pub report_ns: u64,
    /// `--deadline-runtime` in µs (0 = default).
    pub dl_runtime_us: u64,
    /// `--deadline-deadline` in µs (0 = the period).
    pub dl_deadline_us: u64,
    /// `--deadline-period` in µs (0 = the interval).
    pub dl_period_us: u64,
    /// `--explain` in µs (0 = off).
    pub explain_us: u64,
    /// `--trace-buffer-size` in KiB (`None`: the default, see
    /// [`crate::linux::tracefs::buffer_kb`]).
    pub trace_buffer_kb: Option<u32>,
    /// `--trace-out DIR`: each thread's worst explained spike of a report
    /// interval as a trace.dat in DIR.
    pub trace_out: Option<String>,
    /// `--trace-out-limit FILES,MIB`.
    pub trace_out_limits: Limits,
    /// `--trace-out-stream`: the same windows on the stream.
    pub trace_out_stream: bool,
    /// `--self-check`.
    pub self_check: bool,
    /// `--timerlat`: wake through the kernel's timerlat tracer.
    pub timerlat: bool,
    /// Invoked as `rtla`: print rtla's histogram text at the end.
    pub rtla: Option<RtlaText>,
    /// `-r`, `-s`, `-x`: how each cycle waits.
    pub wake: WakeMode,
    /// `-A`, `--secaligned`: when the threads take their first deadline.
    pub align: StartAlign,
    /// `-F`: the named pipe that hands out the status.
    pub fifo: Option<String>,
    /// `-M`: redraw the live view only on a new maximum.
    pub refresh_on_max: bool,
    /// `-o`: with `-v`, print only the largest of each RED samples.
    pub oscope: u32,
    /// `-R`: measure the clock's resolution at start-up.
    pub resolution: bool,
    /// `--smi`: count SMIs.
    pub smi: bool,
    /// `--spike-nodes`: how many `--spike` samples are listed.
    pub spike_nodes: usize,
    /// `-u`: write each line of human output as soon as it is formatted.
    pub unbuffered: bool,
    /// `--laptop`: as `--default-system`, said as cyclictest says it.
    pub laptop: bool,
    /// `--dbg_cyclictest`: print what helps debugging (the thread plan, the
    /// `-R` readings).
    pub debug: bool,
    /// How the command line was read where cyclictest's rules surprise
    /// (ignored characters, ignored options): one line each, printed at
    /// start-up.
    pub notes: Vec<String>,
    /// The hidden options of the proof scripts and tests.
    pub bench: Knobs,
    /// `--stream`.
    pub stream: Option<Dest>,
    /// `--name`: the board's name in the hello (default: the host name and
    /// a keyed hash of `/etc/machine-id`).
    pub name: Option<String>,
    /// `--slo`: latency goals decided at the end (exit status 5 when one
    /// fails, 6 when one is inconclusive).
    pub slo: Option<latscope_core::slo::Goals>,
    /// The command line as given, from argv[0] (set by the caller of the
    /// parser), for the hello and `--json`.
    pub cmdline: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            affinity: None,
            threads: None,
            smp: false,
            interval_us: 1000,
            distance_us: None,
            priority: 80,
            policy: Policy::Fifo,
            priospread: false,
            loops: 0,
            duration_ns: 0,
            break_us: 0,
            tracemark: false,
            hist_us: 0,
            hist_all: false,
            hist_shape: HistShape::V2_4,
            histfile: None,
            json: None,
            nsecs: false,
            quiet: false,
            verbose: false,
            spike_us: 0,
            clock: ClockKind::Monotonic,
            mainaffinity: None,
            latency_us: 0,
            deepest_idle_state: None,
            default_system: false,
            mlock: true,
            best_effort: false,
            warmup_ns: 0,
            report_ns: 1_000_000_000,
            dl_runtime_us: 0,
            dl_deadline_us: 0,
            dl_period_us: 0,
            explain_us: 0,
            trace_buffer_kb: None,
            trace_out: None,
            trace_out_limits: Limits {
                files: trace_out::DEFAULT_FILES,
                bytes: trace_out::DEFAULT_BYTES,
            },
            trace_out_stream: false,
            self_check: false,
            timerlat: false,
            rtla: None,
            wake: WakeMode::Absolute,
            align: StartAlign::Own,
            fifo: None,
            refresh_on_max: false,
            oscope: 1,
            resolution: false,
            smi: false,
            spike_nodes: 1024,
            unbuffered: false,
            laptop: false,
            debug: false,
            notes: Vec::new(),
            bench: Knobs::default(),
            stream: None,
            name: None,
            slo: None,
            cmdline: String::new(),
        }
    }
}

impl Config {
    /// The effective distance in µs: 0 when `-h` is given (as cyclictest
    /// does, so that every thread fills the same rows, even with `-d`),
    /// else `-d` or 500.
    pub fn distance(&self) -> u64 {
        match self.distance_us {
            _ if self.hist_us > 0 => 0,
            Some(d) => d,
            None => 500,
        }
    }

    /// The spike threshold of the measuring loop in µs: the lower of
    /// `--spike` and `--explain` (0 = off).
    pub fn flag_us(&self) -> u64 {
        match (self.spike_us, self.explain_us) {
            (0, e) => e,
            (s, 0) => s,
            (s, e) => s.min(e),
        }
    }

    /// The flags that let this run go on without privilege, for an exit
    /// status 3 message: one for each privileged step the command line
    /// still asks for (memory locking, the root-only
    /// `/dev/cpu_dma_latency`, the root-only cpuidle files of
    /// `--deepest-idle-state`, a real-time policy), so that one retry with
    /// all of them runs as any user.
    pub fn unprivileged_flags(&self) -> String {
        let mut f = Vec::new();
        if self.mlock {
            f.push("--no-mlock");
        }
        if !self.default_system {
            f.push("--default-system");
        }
        if self.policy.is_rt() {
            // `-p` with `--policy other` is a usage error
            let gave_p = self
                .cmdline
                .split_whitespace()
                .any(|t| t.starts_with("-p") || t.starts_with("--prio"));
            f.push(if gave_p {
                "--policy other (without -p/--priospread)"
            } else {
                "--policy other"
            });
        }
        let flags = f.join(" ");
        match (self.deepest_idle_state.is_some(), flags.is_empty()) {
            (false, _) => flags,
            (true, true) => "no --deepest-idle-state".into(),
            (true, false) => format!("{flags}, and no --deepest-idle-state"),
        }
    }

    /// SCHED_DEADLINE runtime, deadline and period in ns.
    pub fn deadline_ns(&self) -> (u64, u64, u64) {
        (
            self.dl_runtime_us * 1000,
            self.dl_deadline_us * 1000,
            self.dl_period_us * 1000,
        )
    }
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Measure.
    Run(Box<Config>),
    /// Print the help.
    Help,
    /// Print the version.
    Version,
}

/// The kernel's name of a policy without the `SCHED_` prefix.
pub fn policy_upper(p: Policy) -> &'static str {
    match p {
        Policy::Other => "OTHER",
        Policy::Fifo => "FIFO",
        Policy::Rr => "RR",
        Policy::Batch => "BATCH",
        Policy::Idle => "IDLE",
        Policy::Deadline => "DEADLINE",
    }
}

#[cfg(test)]
mod tests;
