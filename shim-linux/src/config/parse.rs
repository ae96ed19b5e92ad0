//! The command line: cyclictest's options with their meanings, plus
//! latscope's own. A hand-written parser keeps the static binary small.
//!
//! Rules: a bad value is one line of error and exit status 2; nothing here
//! panics on any input.

use latscope_core::wire::{ClockKind, Policy};

use crate::config::cpus::{parse_cpu_list, CpuList};
use crate::error::Error;

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
    /// `-t` without a number: one per available CPU.
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
    /// `-p`.
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
    /// `--self-check`.
    pub self_check: bool,
    /// Hidden `--self-check-probe`: make every forbidden request once
    /// (clone of a process, fork, vfork, execve, execveat, clone3) to prove
    /// the self-check refuses and counts each.
    pub self_check_probe: bool,
    /// Hidden `--ballast-mib`.
    pub ballast_mib: u64,
    /// Hidden `--no-exit-demote`.
    pub no_exit_demote: bool,
    /// `--stream`.
    pub stream: Option<Dest>,
    /// The command line as given, for the hello and `--json`.
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
            histfile: None,
            json: None,
            nsecs: false,
            quiet: false,
            verbose: false,
            spike_us: 0,
            clock: ClockKind::Monotonic,
            mainaffinity: None,
            latency_us: 0,
            default_system: false,
            mlock: true,
            best_effort: false,
            warmup_ns: 0,
            report_ns: 1_000_000_000,
            dl_runtime_us: 0,
            dl_deadline_us: 0,
            dl_period_us: 0,
            explain_us: 0,
            self_check: false,
            self_check_probe: false,
            ballast_mib: 0,
            no_exit_demote: false,
            stream: None,
            cmdline: String::new(),
        }
    }
}

impl Config {
    /// The effective distance in µs: `-d`, or 500, or 0 when `-h` is given
    /// (as cyclictest does, so that every thread fills the same rows).
    pub fn distance(&self) -> u64 {
        match self.distance_us {
            Some(d) => d,
            None if self.hist_us > 0 => 0,
            None => 500,
        }
    }

    /// Whether human output goes to standard error (the stream owns stdout).
    pub fn human_to_stderr(&self) -> bool {
        self.stream == Some(Dest::Stdout)
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

/// Largest `-h` range: the histogram's linear part.
pub const MAX_HIST_US: u32 = latscope_core::layout::DEFAULT_LINEAR_US;
/// Largest interval: 1 hour.
const MAX_INTERVAL_US: u64 = 3_600_000_000;

/// The options that take a value, long name → short letter (if any).
const WITH_VALUE: &[(&str, Option<char>)] = &[
    ("breaktrace", Some('b')),
    ("clock", Some('c')),
    ("distance", Some('d')),
    ("duration", Some('D')),
    ("histogram", Some('h')),
    ("histofall", Some('H')),
    ("histfile", None),
    ("interval", Some('i')),
    ("json", None),
    ("loops", Some('l')),
    ("priority", Some('p')),
    ("policy", None),
    ("spike", None),
    ("mainaffinity", None),
    ("latency", None),
    ("stream", None),
    ("warmup", None),
    ("report-interval", None),
    ("deadline-runtime", None),
    ("deadline-deadline", None),
    ("deadline-period", None),
    ("explain", None),
    ("ballast-mib", None),
];

/// The options without a value, long name → short letter (if any).
const FLAGS: &[(&str, Option<char>)] = &[
    ("mlockall", Some('m')),
    ("nsecs", Some('N')),
    ("quiet", Some('q')),
    ("smp", Some('S')),
    ("verbose", Some('v')),
    ("priospread", None),
    ("tracemark", None),
    ("default-system", None),
    ("no-mlock", None),
    ("best-effort", None),
    ("self-check", None),
    ("self-check-probe", None),
    ("no-exit-demote", None),
    ("help", None),
    ("version", None),
];

/// Options whose value is optional (`-a [CPUSET]`, `-t [N]`).
const OPTIONAL: &[(&str, char)] = &[("affinity", 'a'), ("threads", 't')];

fn long_of(short: char, table: &[(&'static str, Option<char>)]) -> Option<&'static str> {
    table
        .iter()
        .find(|(_, s)| *s == Some(short))
        .map(|(l, _)| *l)
}

/// Parse the arguments after the program name.
pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<Action, Error> {
    let mut cfg = Config::default();
    let mut words: Vec<&str> = Vec::with_capacity(args.len() + 1);
    words.push("latscope");
    words.extend(args.iter().map(|a| a.as_ref()));
    cfg.cmdline = words.join(" ");

    let mut i = 0;
    let mut saw_p = false;
    let mut saw_policy = false;
    while i < args.len() {
        let arg = args[i].as_ref();
        i += 1;
        // (long name, inline value)
        let mut pending: Vec<(&'static str, Option<String>)> = Vec::new();
        if let Some(rest) = arg.strip_prefix("--") {
            let (name, inline) = match rest.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (rest, None),
            };
            let known = WITH_VALUE
                .iter()
                .chain(FLAGS.iter())
                .map(|(l, _)| *l)
                .chain(OPTIONAL.iter().map(|(l, _)| *l))
                .find(|l| *l == name);
            match known {
                Some(l) => pending.push((l, inline)),
                None => return Err(Error::usage(format!("unknown option --{name}"))),
            }
        } else if let Some(rest) = arg.strip_prefix('-').filter(|r| !r.is_empty()) {
            let chars: Vec<char> = rest.chars().collect();
            let mut k = 0;
            while k < chars.len() {
                let c = chars[k];
                k += 1;
                if let Some(l) = long_of(c, FLAGS) {
                    pending.push((l, None));
                } else if let Some(l) = long_of(c, WITH_VALUE)
                    .or_else(|| OPTIONAL.iter().find(|(_, s)| *s == c).map(|(l, _)| *l))
                {
                    let tail: String = chars[k..].iter().collect();
                    let tail = tail.strip_prefix('=').map(str::to_string).unwrap_or(tail);
                    pending.push((l, (!tail.is_empty()).then_some(tail)));
                    break;
                } else {
                    return Err(Error::usage(format!("unknown option -{c}")));
                }
            }
        } else {
            return Err(Error::usage(format!("unexpected argument '{arg}'")));
        }

        for (name, inline) in pending {
            if FLAGS.iter().any(|(l, _)| *l == name) {
                if inline.is_some() {
                    return Err(Error::usage(format!("--{name} takes no value")));
                }
                match name {
                    "help" => return Ok(Action::Help),
                    "version" => return Ok(Action::Version),
                    "mlockall" => cfg.mlock = true,
                    "no-mlock" => cfg.mlock = false,
                    "nsecs" => cfg.nsecs = true,
                    "quiet" => cfg.quiet = true,
                    "smp" => cfg.smp = true,
                    "verbose" => cfg.verbose = true,
                    "priospread" => cfg.priospread = true,
                    "tracemark" => cfg.tracemark = true,
                    "default-system" => cfg.default_system = true,
                    "best-effort" => cfg.best_effort = true,
                    "self-check" => cfg.self_check = true,
                    "self-check-probe" => {
                        cfg.self_check = true;
                        cfg.self_check_probe = true;
                    }
                    "no-exit-demote" => cfg.no_exit_demote = true,
                    _ => return Err(Error::usage(format!("unknown option --{name}"))),
                }
                continue;
            }
            if OPTIONAL.iter().any(|(l, _)| *l == name) {
                // cyclictest also takes the value as the next word when it
                // looks like one (`-a 0,1`, `-t 2`).
                let value = match inline {
                    Some(v) => Some(v),
                    None => match args.get(i).map(|a| a.as_ref()) {
                        Some(next)
                            if next.starts_with(|c: char| c.is_ascii_digit() || c == '!') =>
                        {
                            i += 1;
                            Some(next.to_string())
                        }
                        _ => None,
                    },
                };
                match name {
                    "affinity" => {
                        cfg.affinity = Some(match value {
                            Some(v) => parse_cpu_list(&v)
                                .map_err(|e| Error::usage(format!("-a {v}: {e}")))?,
                            None => CpuList::All,
                        })
                    }
                    _ => {
                        cfg.threads = Some(match value {
                            Some(v) => {
                                let n = parse_u64("-t", &v, 1, 1024)?;
                                Threads::Count(n as usize)
                            }
                            None => Threads::PerCpu,
                        })
                    }
                }
                continue;
            }
            let value = match inline {
                Some(v) => v,
                None => match args.get(i) {
                    Some(v) => {
                        i += 1;
                        v.as_ref().to_string()
                    }
                    None => return Err(Error::usage(format!("--{name} needs a value"))),
                },
            };
            let v = value.as_str();
            match name {
                "breaktrace" => cfg.break_us = parse_u64("-b", v, 1, MAX_INTERVAL_US)?,
                "clock" => {
                    cfg.clock = match v {
                        "0" | "monotonic" => ClockKind::Monotonic,
                        "1" | "realtime" => ClockKind::Realtime,
                        _ => {
                            return Err(Error::usage(format!(
                                "-c {v}: use 0|monotonic or 1|realtime"
                            )))
                        }
                    }
                }
                "distance" => cfg.distance_us = Some(parse_u64("-d", v, 0, MAX_INTERVAL_US)?),
                "duration" => cfg.duration_ns = parse_duration("-D", v)?,
                "histogram" | "histofall" => {
                    let flag = if name == "histogram" { "-h" } else { "-H" };
                    let us = parse_u64(flag, v, 1, u64::MAX)?;
                    if us > MAX_HIST_US as u64 {
                        return Err(Error::usage(format!(
                            "{flag} {us}: the histogram text covers at most {MAX_HIST_US} us \
                             (the build's 1 us range; larger values are kept exactly in the \
                             stream and --json)"
                        )));
                    }
                    cfg.hist_us = us as u32;
                    cfg.hist_all |= name == "histofall";
                }
                "histfile" => cfg.histfile = Some(nonempty("--histfile", v)?),
                "interval" => cfg.interval_us = parse_u64("-i", v, 1, MAX_INTERVAL_US)?,
                "json" => cfg.json = Some(nonempty("--json", v)?),
                "loops" => cfg.loops = parse_u64("-l", v, 0, u64::MAX / 4)?,
                "priority" => {
                    cfg.priority = parse_u64("-p", v, 0, 99)? as u32;
                    saw_p = true;
                }
                "policy" => {
                    cfg.policy = parse_policy(v)?;
                    saw_policy = true;
                }
                "spike" => cfg.spike_us = parse_u64("--spike", v, 1, MAX_INTERVAL_US)?,
                "mainaffinity" => {
                    cfg.mainaffinity = Some(
                        parse_cpu_list(v)
                            .map_err(|e| Error::usage(format!("--mainaffinity {v}: {e}")))?,
                    )
                }
                "latency" => cfg.latency_us = parse_u64("--latency", v, 0, i32::MAX as u64)? as i32,
                "stream" => cfg.stream = Some(parse_dest(v)?),
                "warmup" => cfg.warmup_ns = parse_duration("--warmup", v)?,
                "report-interval" => {
                    cfg.report_ns = parse_duration("--report-interval", v)?;
                    if cfg.report_ns < 100_000_000 {
                        return Err(Error::usage(format!(
                            "--report-interval {v}: must be at least 100ms"
                        )));
                    }
                }
                "deadline-runtime" => {
                    cfg.dl_runtime_us = parse_u64("--deadline-runtime", v, 1, MAX_INTERVAL_US)?
                }
                "deadline-deadline" => {
                    cfg.dl_deadline_us = parse_u64("--deadline-deadline", v, 1, MAX_INTERVAL_US)?
                }
                "deadline-period" => {
                    cfg.dl_period_us = parse_u64("--deadline-period", v, 1, MAX_INTERVAL_US)?
                }
                "explain" => cfg.explain_us = parse_u64("--explain", v, 1, MAX_INTERVAL_US)?,
                "ballast-mib" => cfg.ballast_mib = parse_u64("--ballast-mib", v, 0, 1 << 20)?,
                _ => return Err(Error::usage(format!("unknown option --{name}"))),
            }
        }
    }

    // cyclictest: -p implies SCHED_FIFO; non-RT policies have priority 0.
    match cfg.policy {
        Policy::Fifo | Policy::Rr => {
            if cfg.priority == 0 {
                return Err(Error::usage(format!(
                    "-p 0 with --policy {}: real-time priorities are 1..99",
                    cfg.policy.name()
                )));
            }
        }
        Policy::Deadline => cfg.priority = 0,
        Policy::Other | Policy::Batch | Policy::Idle => {
            if saw_p && cfg.priority > 0 {
                return Err(Error::usage(format!(
                    "-p {} needs a real-time policy (fifo or rr), not --policy {}",
                    cfg.priority,
                    cfg.policy.name()
                )));
            }
            cfg.priority = 0;
        }
    }
    let _ = saw_policy;
    if cfg.policy == Policy::Deadline {
        let period = if cfg.dl_period_us > 0 {
            cfg.dl_period_us
        } else {
            cfg.interval_us
        };
        let deadline = if cfg.dl_deadline_us > 0 {
            cfg.dl_deadline_us
        } else {
            period
        };
        let runtime = if cfg.dl_runtime_us > 0 {
            cfg.dl_runtime_us
        } else {
            (deadline / 10).max(2)
        };
        if !(runtime <= deadline && deadline <= period) {
            return Err(Error::usage(format!(
                "deadline parameters need runtime <= deadline <= period (got {runtime} <= {deadline} <= {period} us)"
            )));
        }
        cfg.dl_period_us = period;
        cfg.dl_deadline_us = deadline;
        cfg.dl_runtime_us = runtime;
    } else if cfg.dl_runtime_us + cfg.dl_deadline_us + cfg.dl_period_us > 0 {
        return Err(Error::usage("--deadline-* options need --policy deadline"));
    }
    if cfg.nsecs && cfg.hist_us > 0 {
        return Err(Error::usage(
            "-N with -h/-H: the histogram text rows are 1 us wide; drop -N (the stream and --json keep ns)",
        ));
    }
    if cfg.verbose && cfg.quiet {
        return Err(Error::usage("-v and -q exclude each other"));
    }
    if cfg.tracemark && cfg.break_us == 0 {
        return Err(Error::usage("--tracemark needs -b US"));
    }
    if cfg.histfile.is_some() && cfg.hist_us == 0 {
        return Err(Error::usage("--histfile needs -h US or -H US"));
    }
    if cfg.policy != Policy::Deadline && cfg.priospread && cfg.priority < 2 {
        return Err(Error::usage("--priospread needs -p 2 or more"));
    }
    Ok(Action::Run(Box::new(cfg)))
}

fn nonempty(flag: &str, v: &str) -> Result<String, Error> {
    if v.is_empty() {
        Err(Error::usage(format!("{flag}: empty path")))
    } else {
        Ok(v.to_string())
    }
}

/// A decimal integer in `lo..=hi`.
pub fn parse_u64(flag: &str, v: &str, lo: u64, hi: u64) -> Result<u64, Error> {
    let n: u64 = v
        .parse()
        .map_err(|_| Error::usage(format!("{flag} '{v}': not a whole number")))?;
    if n < lo || n > hi {
        return Err(Error::usage(format!(
            "{flag} {n}: must be between {lo} and {hi}"
        )));
    }
    Ok(n)
}

/// A duration: a whole number with an optional unit `ms`, `s` (the
/// default, as cyclictest's `-D`), `m`, `h` or `d`. Returns ns.
pub fn parse_duration(flag: &str, v: &str) -> Result<u64, Error> {
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let ns_per: u64 = match unit {
        "" | "s" => 1_000_000_000,
        "ms" => 1_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => {
            return Err(Error::usage(format!(
                "{flag} '{v}': unit must be ms, s, m, h or d"
            )))
        }
    };
    let n: u64 = num
        .parse()
        .map_err(|_| Error::usage(format!("{flag} '{v}': not a duration")))?;
    n.checked_mul(ns_per)
        .filter(|ns| *ns <= 100 * 365 * 86_400_000_000_000)
        .ok_or_else(|| Error::usage(format!("{flag} '{v}': too long")))
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

fn parse_policy(v: &str) -> Result<Policy, Error> {
    Ok(match v {
        "other" | "normal" => Policy::Other,
        "batch" => Policy::Batch,
        "idle" => Policy::Idle,
        "fifo" => Policy::Fifo,
        "rr" => Policy::Rr,
        "deadline" => Policy::Deadline,
        _ => {
            return Err(Error::usage(format!(
                "--policy {v}: use fifo, rr, deadline, other, batch or idle"
            )))
        }
    })
}

/// `-`, a path, `tcp:IP:PORT` or `serial:/dev/ttyX[:BAUD]`.
pub fn parse_dest(v: &str) -> Result<Dest, Error> {
    if v == "-" {
        return Ok(Dest::Stdout);
    }
    if let Some(addr) = v.strip_prefix("tcp:") {
        let sa: std::net::SocketAddr = addr.parse().map_err(|_| {
            Error::usage(format!(
                "--stream {v}: expected tcp:IP:PORT with an IP literal (e.g. tcp:192.168.1.2:5000, tcp:[::1]:5000); names are not resolved"
            ))
        })?;
        if sa.port() == 0 {
            return Err(Error::usage(format!("--stream {v}: port 0")));
        }
        return Ok(Dest::Tcp(sa));
    }
    if let Some(rest) = v.strip_prefix("serial:") {
        let (path, baud) = match rest.rsplit_once(':') {
            Some((p, b)) if !b.is_empty() && b.chars().all(|c| c.is_ascii_digit()) => (
                p,
                parse_u64("--stream serial baud", b, 50, 16_000_000)? as u32,
            ),
            _ => (rest, 115_200),
        };
        if !path.starts_with('/') {
            return Err(Error::usage(format!(
                "--stream {v}: expected serial:/dev/ttyX[:BAUD]"
            )));
        }
        return Ok(Dest::Serial {
            path: path.to_string(),
            baud,
        });
    }
    if v.is_empty() {
        return Err(Error::usage("--stream: empty destination"));
    }
    Ok(Dest::File(v.to_string()))
}

/// The `--help` text.
pub const HELP: &str = "\
latscope: real-time wake-up latency measurement (a cyclictest that is safe by default)

Usage: latscope [OPTIONS]

Each measuring thread sleeps until absolute deadlines (clock_nanosleep,
TIMER_ABSTIME) and records how late it woke. Defaults differ from cyclictest
where cyclictest's are traps: SCHED_FIFO priority 80 (not SCHED_OTHER) and
memory locked (mlockall) unless --no-mlock.

Threads and CPUs
  -t, --threads[=N]       N measuring threads; -t alone: one per available CPU
                          (default: 1)
  -a, --affinity[=CPUSET] pin threads round-robin to CPUSET (e.g. 0,2-3 or !0);
                          -a alone: all available CPUs (default: not pinned)
  -S, --smp               one thread per CPU, each pinned (= -t -a)
      --mainaffinity=CPUSET  pin the non-RT sender (reporting) thread
Timing
  -i, --interval=US       base interval in us (default 1000)
  -d, --distance=US       thread N runs at interval + N*US (default 500; 0 with -h)
  -c, --clock=CLOCK       0|monotonic (default) or 1|realtime
  -l, --loops=N           stop each thread after N samples (default 0: endless)
  -D, --duration=T        stop after T (units ms, s (default), m, h, d)
      --warmup=T          do not record the first T (default 0)
Scheduling and memory
  -p, --priority=PRIO     real-time priority 1..99 (default 80)
      --policy=NAME       fifo (default), rr, deadline, other|normal, batch, idle
      --priospread        thread N gets priority PRIO-N (default: all equal)
      --deadline-runtime=US, --deadline-deadline=US, --deadline-period=US
                          SCHED_DEADLINE parameters (defaults: period = -i,
                          deadline = period, runtime = deadline/10). Deadline
                          threads are NOT pinned unless -a is given: the kernel
                          refuses SCHED_DEADLINE (EPERM) for a thread pinned to
                          one CPU unless that CPU is an exclusive cpuset
                          partition (its admission control is per root domain).
  -m, --mlockall          lock memory (accepted for compatibility; on by default)
      --no-mlock          do not lock memory (page faults then count as latency)
      --latency=US        value held in /dev/cpu_dma_latency (default 0)
      --default-system    leave /dev/cpu_dma_latency alone
      --best-effort       without a privilege, degrade instead of stopping: run
                          SCHED_OTHER (timer slack 1 ns), unlocked, unpinned;
                          the output and the stream say what was degraded
Output (cyclictest formats)
  -q, --quiet             print only the summary at the end
  -v, --verbose           print every sample as thread:cycle:value
  -N, --nsecs             print ns instead of us
  -h, --histogram=US      print the histogram text up to US (max 1000), every row
  -H, --histofall=US      as -h, plus a column summing all threads
      --histfile=PATH     write the histogram text to PATH instead of stdout
      --json=FILE         write cyclictest's JSON results (plus quantiles,
                          missed periods, faults, early, dropped) to FILE
      --spike=US          list the samples above US at the end
  -b, --breaktrace=US     stop when a sample exceeds US
      --tracemark         with -b: write a marker to the trace buffer and stop tracing
      --explain=US        attribute samples above US to IRQs, softirqs and tasks
Stream (binary frames for latscope-host)
      --stream=DEST       - (stdout; human output moves to stderr), a file path,
                          tcp:IP:PORT (IP literal only: a static binary cannot
                          resolve names; reconnects with backoff, measuring goes
                          on meanwhile), or serial:/dev/ttyX[:BAUD] (raw mode,
                          default 115200)
      --report-interval=T  report period of the stream and live view (default 1s)
Checks
      --self-check        forbid process creation and exec with seccomp after
                          start-up; attempts are refused, counted and reported
                          as defects (exit status 1)
      --version           print the version
      --help              print this help

Signals: SIGINT, SIGTERM and SIGHUP end the run cleanly (summary, stream, exit);
SIGUSR1 prints the current status to stderr.
Exit status: 0 completed (also after -b), 1 failed run or self-check defects,
2 bad command line, 3 missing privilege (the message names the flags that run
without it).
When run as PID 1 (an init= binary), latscope mounts /dev, /proc and /sys,
takes its arguments from the kernel command line, and powers off at the end.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(args: &[&str]) -> Config {
        match parse(args) {
            Ok(Action::Run(c)) => *c,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn cyclictest_spellings() {
        let c = ok(&[
            "-t", "2", "-a", "0,1", "-d", "0", "-m", "-p", "80", "-i", "200", "-l", "20000", "-q",
        ]);
        assert_eq!(c.threads, Some(Threads::Count(2)));
        assert_eq!(c.affinity, Some(CpuList::Only(vec![0, 1])));
        assert_eq!((c.interval_us, c.distance(), c.loops), (200, 0, 20000));
        assert!(c.quiet && c.mlock);
        let c = ok(&[
            "-mq",
            "-i100",
            "--duration=1m",
            "-h",
            "50",
            "--json=/tmp/x.json",
        ]);
        assert_eq!(
            (c.interval_us, c.duration_ns, c.hist_us),
            (100, 60_000_000_000, 50)
        );
        assert_eq!(c.distance(), 0, "-h sets the distance to 0");
        assert_eq!(c.json.as_deref(), Some("/tmp/x.json"));
        let c = ok(&["-t", "-a"]);
        assert_eq!(
            (c.threads, c.affinity),
            (Some(Threads::PerCpu), Some(CpuList::All))
        );
        let c = ok(&["-S", "--policy=rr", "--priospread", "-p", "90"]);
        assert!(c.smp && c.priospread);
        assert_eq!((c.policy, c.priority), (Policy::Rr, 90));
        let c = ok(&["--policy", "other"]);
        assert_eq!((c.policy, c.priority), (Policy::Other, 0));
        let c = ok(&["--policy", "deadline", "-i", "1000"]);
        assert_eq!(
            (c.dl_runtime_us, c.dl_deadline_us, c.dl_period_us),
            (100, 1000, 1000)
        );
        let c = ok(&[
            "--no-mlock",
            "--best-effort",
            "--warmup",
            "500ms",
            "--report-interval",
            "2s",
        ]);
        assert!(!c.mlock && c.best_effort);
        assert_eq!((c.warmup_ns, c.report_ns), (500_000_000, 2_000_000_000));
        assert_eq!(ok(&["-c", "realtime"]).clock, ClockKind::Realtime);
        assert!(ok(&["--default-system", "--latency", "10"]).default_system);
        assert_eq!(parse(&["--help"]), Ok(Action::Help));
        assert_eq!(parse(&["-q", "--version"]), Ok(Action::Version));
    }

    #[test]
    fn destinations() {
        assert_eq!(parse_dest("-"), Ok(Dest::Stdout));
        assert_eq!(
            parse_dest("/tmp/r.bin"),
            Ok(Dest::File("/tmp/r.bin".into()))
        );
        assert_eq!(
            parse_dest("tcp:10.0.0.2:5000"),
            Ok(Dest::Tcp("10.0.0.2:5000".parse().unwrap()))
        );
        assert!(matches!(parse_dest("tcp:[::1]:9"), Ok(Dest::Tcp(_))));
        assert_eq!(
            parse_dest("serial:/dev/ttyAMA1"),
            Ok(Dest::Serial {
                path: "/dev/ttyAMA1".into(),
                baud: 115_200
            })
        );
        assert_eq!(
            parse_dest("serial:/dev/ttyUSB0:921600"),
            Ok(Dest::Serial {
                path: "/dev/ttyUSB0".into(),
                baud: 921_600
            })
        );
        for bad in [
            "tcp:host:1",
            "tcp:1.2.3.4:0",
            "serial:tty",
            "serial:/dev/x:1",
            "",
        ] {
            assert!(parse_dest(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("-D", "10"), Ok(10_000_000_000));
        assert_eq!(parse_duration("-D", "2h"), Ok(7_200_000_000_000));
        assert_eq!(parse_duration("-D", "1d"), Ok(86_400_000_000_000));
        for bad in ["", "s", "1.5s", "-1", "10us", "3w", "99999999999d"] {
            assert!(parse_duration("-D", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bad_inputs_are_usage_errors_never_panics() {
        let table: &[&[&str]] = &[
            &["-i", "0"],
            &["-p", "100"],
            &["-h", "1001"],
            &["-t", "x"],
            &["-a", ""],
            &["--policy"],
            &["-b", "0"],
            &["--spike", "-3"],
            &["--ballast-mib", "x"],
            &["-", "-"],
            &["--", "x"],
            &["-ï"],
            &["--=x"],
        ];
        for args in table {
            match parse(args) {
                Err(e) => assert_eq!(e.exit_status(), crate::error::EXIT_USAGE, "{args:?}"),
                Ok(a) => panic!("{args:?} accepted: {a:?}"),
            }
        }
    }
}
