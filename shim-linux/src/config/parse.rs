//! The command line into a [`Config`]: each option as cyclictest 2.4's
//! `process_options` reads it ([`getopt`] splits the words, [`numbers`]
//! reads the values), then the checks that need all of them
//! ([`super::checks`]).
//!
//! Rules: a bad value is one line of error and exit status 2; nothing here
//! panics on any input. Where cyclictest reads a value in a surprising way
//! (a number with trailing characters, a negative `--latency`), latscope
//! reads it the same way and adds a note.

use latscope_core::layout::MAX_LINEAR_US;
use latscope_core::wire::{ClockKind, Policy, StartAlign};

use super::cpus::{parse_cpu_list, CpuList};
use super::getopt::{self, Given};
use super::numbers::{self, atoi};
use super::values::{parse_dest, parse_duration, parse_report_interval};
use super::{checks, Action, Config, Threads};
use crate::bench;
use crate::error::Error;
use latscope_core::wire::MAX_THREADS;

/// Largest `-h` range: the widest 1 µs range of a histogram.
pub(super) const MAX_HIST_US: u32 = MAX_LINEAR_US;
/// Largest interval (and other times in µs): 1 hour.
const MAX_US: i64 = 3_600_000_000;
/// Most `--spike` samples listed.
const MAX_SPIKE_NODES: i64 = 65_536;

/// Which options were given, where a default depends on it.
#[derive(Debug, Default)]
pub(super) struct Saw {
    pub priority: bool,
    pub distance: bool,
    pub threads: bool,
    pub affinity: bool,
    pub relative: bool,
    pub system: bool,
    pub posix_timers: bool,
    pub aligned: Option<u64>,
    pub secaligned: Option<u64>,
    pub spike_nodes: bool,
}

/// Parse the arguments after the program name.
pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<Action, Error> {
    let given = getopt::scan(args)?;
    let mut p = Parser {
        cfg: Config::default(),
        saw: Saw::default(),
    };
    for g in &given {
        if let Some(action) = p.apply(g)? {
            return Ok(action);
        }
    }
    let Parser { mut cfg, saw } = p;
    checks::check(&mut cfg, &saw)?;
    Ok(Action::Run(Box::new(cfg)))
}

struct Parser {
    cfg: Config,
    saw: Saw,
}

impl Parser {
    /// Apply one option; `Some` for `--help` and `--version`.
    fn apply(&mut self, g: &Given) -> Result<Option<Action>, Error> {
        let name = g.spec.long;
        if let Some(&(_, max)) = bench::VALUES.iter().find(|(l, _)| *l == name) {
            let v = g.value.as_deref().unwrap_or("");
            let n = parse_u64(&g.spelled, v, 0, max)?;
            self.cfg.bench.set_value(name, n);
            return Ok(None);
        }
        match g.value.as_deref() {
            None => self.flag(g),
            Some(v) => {
                self.value(g, v)?;
                Ok(None)
            }
        }
    }

    /// An option without a value (or an optional one left out).
    fn flag(&mut self, g: &Given) -> Result<Option<Action>, Error> {
        let c = &mut self.cfg;
        match g.spec.long {
            "help" => return Ok(Some(Action::Help)),
            "version" => return Ok(Some(Action::Version)),
            "affinity" => {
                c.affinity = Some(CpuList::All);
                self.saw.affinity = true;
            }
            "threads" => {
                c.threads = Some(Threads::PerCpu);
                self.saw.threads = true;
            }
            "aligned" => self.saw.aligned = Some(0),
            "secaligned" => self.saw.secaligned = Some(0),
            "mlockall" => c.mlock = true,
            "no-mlock" => c.mlock = false,
            "nsecs" => c.nsecs = true,
            "quiet" => c.quiet = true,
            "smp" => c.smp = true,
            "verbose" => c.verbose = true,
            "priospread" => c.priospread = true,
            "tracemark" => c.tracemark = true,
            "default-system" => c.default_system = true,
            "laptop" => c.laptop = true,
            "refresh_on_max" => c.refresh_on_max = true,
            "relative" => self.saw.relative = true,
            "system" => self.saw.system = true,
            "posix_timers" => self.saw.posix_timers = true,
            "resolution" => c.resolution = true,
            "smi" => c.smi = true,
            "unbuffered" => c.unbuffered = true,
            "dbg_cyclictest" => c.debug = true,
            "best-effort" => c.best_effort = true,
            "self-check" => c.self_check = true,
            hidden => {
                c.bench.set_flag(hidden);
                // the probe proves the self-check, so it needs one
                c.self_check |= c.bench.self_check_probe;
            }
        }
        Ok(None)
    }

    /// An option with its value.
    fn value(&mut self, g: &Given, v: &str) -> Result<(), Error> {
        match g.spec.long {
            "affinity" | "mainaffinity" => self.cpus(g, v)?,
            "threads" => self.threads(g)?,
            "aligned" => self.saw.aligned = Some(self.int(g, 0, MAX_US)? as u64),
            "secaligned" => self.saw.secaligned = Some(self.int(g, 0, 999_999)? as u64),
            "breaktrace" => self.cfg.break_us = self.int(g, 0, MAX_US)? as u64,
            "clock" => self.cfg.clock = self.clock(g, v)?,
            "distance" => {
                self.cfg.distance_us = Some(self.int(g, 0, MAX_US)? as u64);
                self.saw.distance = true;
            }
            "duration" => self.duration(v)?,
            "histogram" | "histofall" => {
                self.cfg.hist_us = self.hist(g)?;
                self.cfg.hist_all |= g.spec.long == "histofall";
            }
            "interval" => self.cfg.interval_us = self.int(g, 1, MAX_US)? as u64,
            "loops" => self.cfg.loops = self.int(g, 0, i64::MAX / 4)? as u64,
            "oscope" => self.cfg.oscope = self.int(g, 1, 1 << 30)? as u32,
            "priority" => {
                self.cfg.priority = self.int(g, 0, 99)? as u32;
                self.saw.priority = true;
            }
            "spike" => self.cfg.spike_us = self.int(g, 0, MAX_US)? as u64,
            "spike-nodes" => {
                self.cfg.spike_nodes = self.int(g, 1, MAX_SPIKE_NODES)? as usize;
                self.saw.spike_nodes = true;
            }
            "latency" => self.latency(g)?,
            "policy" => self.cfg.policy = policy(v)?,
            _ => self.path_or_own(g, v)?,
        }
        Ok(())
    }

    /// The options whose value is a path, and latscope's own.
    fn path_or_own(&mut self, g: &Given, v: &str) -> Result<(), Error> {
        let c = &mut self.cfg;
        let path = || nonempty(&g.spelled, v);
        let us = |lo| parse_u64(&g.spelled, v, lo, MAX_US as u64);
        match g.spec.long {
            "fifo" => c.fifo = Some(path()?),
            "histfile" => c.histfile = Some(path()?),
            "json" => c.json = Some(path()?),
            "stream" => c.stream = Some(parse_dest(v)?),
            "name" => c.name = Some(board_name(v)?),
            "warmup" => c.warmup_ns = parse_duration("--warmup", v)?,
            "report-interval" => c.report_ns = parse_report_interval(v)?,
            "deadline-runtime" => c.dl_runtime_us = us(1)?,
            "deadline-deadline" => c.dl_deadline_us = us(1)?,
            "deadline-period" => c.dl_period_us = us(1)?,
            "explain" => c.explain_us = us(1)?,
            other => return Err(Error::usage(format!("--{other} takes no value"))),
        }
        Ok(())
    }

    /// A whole number as cyclictest's `atoi` reads it, in `lo..=hi`.
    fn int(&mut self, g: &Given, lo: i64, hi: i64) -> Result<i64, Error> {
        let word = g.value.as_deref().unwrap_or("");
        let r = atoi(&g.spelled, word)?;
        if !(lo..=hi).contains(&r.value) {
            let shown = if r.clean() {
                r.value.to_string()
            } else {
                format!("'{word}' (read as {} by cyclictest's atoi)", r.value)
            };
            return Err(Error::usage(format!(
                "{} {shown}: must be between {lo} and {hi}",
                g.spelled
            )));
        }
        self.note(numbers::note(&g.spelled, word, &r));
        Ok(r.value)
    }

    /// `-h US` or `-H US`: at least 1, at most latscope's cap (cyclictest
    /// clamps silently).
    fn hist(&mut self, g: &Given) -> Result<u32, Error> {
        let word = g.value.as_deref().unwrap_or("");
        let r = atoi(&g.spelled, word)?;
        if r.value > i64::from(MAX_HIST_US) {
            return Err(Error::usage(format!(
                "{} {}: above latscope's cap of {MAX_HIST_US} us rows \
                 (cyclictest clamps silently; latscope keeps larger latencies \
                 exactly in the stream and --json)",
                g.spelled, r.value
            )));
        }
        Ok(self.int(g, 1, i64::from(MAX_HIST_US))? as u32)
    }

    fn note(&mut self, note: Option<String>) {
        self.cfg.notes.extend(note);
    }

    /// `-a CPUSET`, `--mainaffinity CPUSET`.
    fn cpus(&mut self, g: &Given, v: &str) -> Result<(), Error> {
        let list =
            parse_cpu_list(v).map_err(|e| Error::usage(format!("{} {v}: {e}", g.spelled)))?;
        if g.spec.long == "affinity" {
            self.cfg.affinity = Some(list);
            self.saw.affinity = true;
        } else {
            self.cfg.mainaffinity = Some(list);
        }
        Ok(())
    }

    /// `-t N` (`-t0` reads as 0 threads, which cyclictest refuses too).
    fn threads(&mut self, g: &Given) -> Result<(), Error> {
        let n = self.int(g, 1, MAX_THREADS as i64).map_err(|e| {
            Error::usage(format!(
                "{e}; -t alone, or -t 0 as two words, means one thread per CPU"
            ))
        })?;
        self.cfg.threads = Some(Threads::Count(n as usize));
        self.saw.threads = true;
        Ok(())
    }

    /// `-c`: cyclictest 2.4 reads a number (0 monotonic, 1 realtime);
    /// later versions also take the names, and so does latscope.
    fn clock(&mut self, g: &Given, v: &str) -> Result<ClockKind, Error> {
        match v {
            "monotonic" => return Ok(ClockKind::Monotonic),
            "realtime" => return Ok(ClockKind::Realtime),
            _ => {}
        }
        match self.int(g, 0, 1) {
            Ok(0) => Ok(ClockKind::Monotonic),
            Ok(_) => Ok(ClockKind::Realtime),
            Err(_) => Err(Error::usage(format!(
                "-c {v}: use 0|monotonic or 1|realtime"
            ))),
        }
    }

    /// `-D`, as cyclictest's `parse_time_string` reads it.
    fn duration(&mut self, v: &str) -> Result<(), Error> {
        let (secs, note) = numbers::duration_s(v)?;
        if secs < 0 {
            return Err(Error::usage(format!(
                "-D {v}: a duration cannot be negative"
            )));
        }
        self.note(note);
        self.cfg.duration_ns = u64::try_from(secs)
            .ok()
            .and_then(|s| s.checked_mul(1_000_000_000))
            .filter(|ns| *ns <= 100 * 365 * 86_400_000_000_000)
            .ok_or_else(|| Error::usage(format!("-D {v}: too long")))?;
        Ok(())
    }

    /// `--latency`: a negative value is 0, as cyclictest makes it.
    fn latency(&mut self, g: &Given) -> Result<(), Error> {
        let us = self.int(g, i64::from(i32::MIN), i64::from(i32::MAX))?;
        if us < 0 {
            self.note(Some(format!(
                "--latency {us}: read as 0, as cyclictest does"
            )));
        }
        self.cfg.latency_us = us.max(0) as i32;
        Ok(())
    }
}

/// `--policy`: as cyclictest's `handlepolicy`, a name compared on its
/// first letters without case (`FIFO`, `fifo99`), plus `normal` and
/// latscope's `deadline`. An unknown name is an error (cyclictest falls
/// back to `other`).
fn policy(v: &str) -> Result<Policy, Error> {
    let lower = v.to_ascii_lowercase();
    let table = [
        ("other", Policy::Other),
        ("normal", Policy::Other),
        ("batch", Policy::Batch),
        ("idle", Policy::Idle),
        ("fifo", Policy::Fifo),
        ("rr", Policy::Rr),
        ("deadline", Policy::Deadline),
    ];
    table
        .iter()
        .find(|(name, _)| lower.starts_with(name))
        .map(|(_, p)| *p)
        .ok_or_else(|| {
            Error::usage(format!(
                "--policy {v}: use fifo, rr, deadline, other|normal, batch or idle"
            ))
        })
}

/// `--name`: the board's name in the stream.
fn board_name(v: &str) -> Result<String, Error> {
    if !super::name::valid_name(v) {
        return Err(Error::usage(format!(
            "--name {v}: 1 to {} letters, digits, '-', '_' or '.'",
            super::name::MAX_NAME
        )));
    }
    Ok(v.to_string())
}

fn nonempty(flag: &str, v: &str) -> Result<String, Error> {
    if v.is_empty() {
        Err(Error::usage(format!("{flag}: empty path")))
    } else {
        Ok(v.to_string())
    }
}

/// A decimal integer in `lo..=hi` (latscope's own options: no `atoi`).
pub(super) fn parse_u64(flag: &str, v: &str, lo: u64, hi: u64) -> Result<u64, Error> {
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

impl Saw {
    /// `-A` or `--secaligned` as a start alignment (offsets in µs).
    pub(super) fn align(&self) -> StartAlign {
        match (self.aligned, self.secaligned) {
            (Some(us), _) => StartAlign::Threads {
                offset_ns: us * 1000,
            },
            (None, Some(us)) => StartAlign::Second {
                offset_ns: us * 1000,
            },
            (None, None) => StartAlign::Own,
        }
    }
}
