//! The command line into a [`Config`]: each option as cyclictest 2.4's
//! `process_options` reads it ([`getopt`] splits the words, [`numbers`]
//! reads the values), then the checks that need all of them
//! ([`super::checks`]).
//!
//! Rules: a bad value is one line of error and exit status 2; nothing here
//! panics on any input. Where cyclictest reads a value in a surprising way
//! (a number with trailing characters, a negative `--latency`), latscope
//! reads it the same way and adds a note.

use latscope_core::cyclictest::HistShape;
use latscope_core::layout::MAX_LINEAR_US;
use latscope_core::wire::{ClockKind, Policy};

use super::checks::{self, OptionsGiven};
use super::cpus::{parse_cpu_list, CpuList};
use super::getopt::{self, Given};
use super::numbers::{self, atoi, parse_u64};
use super::options::Opt;
use super::values::{parse_dest, parse_duration, parse_report_interval};
use super::{Action, Config, Threads};
#[cfg(feature = "proof")]
use crate::bench;
use crate::error::Error;
use crate::linux::tracefs::{Limits, MIN_BUFFER_KB};
use latscope_core::wire::MAX_THREADS;

/// Largest `-h` range: the widest 1 µs range of a histogram.
pub(super) const MAX_HIST_US: u32 = MAX_LINEAR_US;
/// Largest interval (and other times in µs): 1 hour.
const MAX_US: i64 = 3_600_000_000;

/// Largest `--trace-buffer-size`, KiB (1 GiB per CPU).
const MAX_TRACE_BUFFER_KB: u64 = 1 << 20;
/// Most `--spike` samples listed.
const MAX_SPIKE_NODES: i64 = 65_536;

/// Parse the arguments after the program name.
pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<Action, Error> {
    let given = getopt::scan(args)?;
    let mut p = Parser {
        cfg: Config::default(),
        saw: OptionsGiven::default(),
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
    saw: OptionsGiven,
}

impl Parser {
    /// Apply one option; `Some` for `--help` and `--version`. One arm per
    /// entry of the option table, none for "any other".
    fn apply(&mut self, g: &Given) -> Result<Option<Action>, Error> {
        // the getopt step gives every option of `Arg::Required` a value
        let v = g.value.as_deref().unwrap_or("");
        let us = |lo| parse_u64(&g.spelled, v, lo, MAX_US as u64);
        match g.spec.opt {
            Opt::Help => return Ok(Some(Action::Help)),
            Opt::Version => return Ok(Some(Action::Version)),
            // an optional value
            Opt::Affinity => self.affinity(g)?,
            Opt::Threads => self.threads(g)?,
            Opt::Aligned => self.saw.aligned = Some(self.optional(g, MAX_US)?),
            Opt::Secaligned => self.saw.secaligned = Some(self.optional(g, 999_999)?),
            // no value
            Opt::Mlockall => self.cfg.mlock = true,
            Opt::NoMlock => self.cfg.mlock = false,
            Opt::Nsecs => self.cfg.nsecs = true,
            Opt::Quiet => self.cfg.quiet = true,
            Opt::Smp => self.cfg.smp = true,
            Opt::Verbose => self.cfg.verbose = true,
            Opt::Priospread => self.cfg.priospread = true,
            Opt::Tracemark => self.cfg.tracemark = true,
            Opt::DefaultSystem => self.cfg.default_system = true,
            Opt::Laptop => self.cfg.laptop = true,
            Opt::RefreshOnMax => self.cfg.refresh_on_max = true,
            Opt::Relative => self.saw.relative = true,
            Opt::System => self.saw.system = true,
            Opt::PosixTimers => self.saw.posix_timers = true,
            Opt::Resolution => self.cfg.resolution = true,
            Opt::Smi => self.cfg.smi = true,
            Opt::Unbuffered => self.cfg.unbuffered = true,
            Opt::DbgCyclictest => self.cfg.debug = true,
            Opt::BestEffort => self.cfg.best_effort = true,
            Opt::SelfCheck => self.cfg.self_check = true,
            Opt::Timerlat => self.cfg.timerlat = true,
            // cyclictest's values
            Opt::Mainaffinity => self.cfg.mainaffinity = Some(cpus(g, v)?),
            Opt::Breaktrace => self.cfg.break_us = self.int(g, 0, MAX_US)? as u64,
            Opt::Clock => self.cfg.clock = self.clock(g, v)?,
            Opt::Distance => self.distance(g)?,
            Opt::Duration => self.duration(v)?,
            Opt::Histogram => self.cfg.hist_us = self.hist(g)?,
            Opt::Histofall => self.histofall(g)?,
            Opt::Interval => self.cfg.interval_us = self.int(g, 1, MAX_US)? as u64,
            Opt::Loops => self.loops(g)?,
            Opt::Oscope => self.cfg.oscope = self.int(g, 1, 1 << 30)? as u32,
            Opt::Priority => self.priority(g)?,
            Opt::Spike => self.cfg.spike_us = self.int(g, 0, MAX_US)? as u64,
            Opt::SpikeNodes => self.spike_nodes(g)?,
            Opt::Latency => self.latency(g)?,
            Opt::DeepestIdleState => self.deepest_idle_state(g)?,
            Opt::Policy => self.cfg.policy = policy(v)?,
            Opt::Fifo => self.cfg.fifo = Some(nonempty(&g.spelled, v)?),
            Opt::Histfile => self.cfg.histfile = Some(nonempty(&g.spelled, v)?),
            Opt::Json => self.cfg.json = Some(nonempty(&g.spelled, v)?),
            // latscope's values
            Opt::Stream => self.cfg.stream = Some(parse_dest(v)?),
            Opt::Name => self.cfg.name = Some(board_name(v)?),
            Opt::Slo => self.cfg.slo = Some(goals(v)?),
            Opt::Warmup => self.cfg.warmup_ns = parse_duration("--warmup", v)?,
            Opt::ReportInterval => self.cfg.report_ns = parse_report_interval(v)?,
            Opt::DeadlineRuntime => self.cfg.dl_runtime_us = us(1)?,
            Opt::DeadlineDeadline => self.cfg.dl_deadline_us = us(1)?,
            Opt::DeadlinePeriod => self.cfg.dl_period_us = us(1)?,
            Opt::Explain => self.cfg.explain_us = us(1)?,
            Opt::TraceBufferSize => self.trace_buffer_size(g, v)?,
            Opt::TraceOut => self.cfg.trace_out = Some(nonempty(&g.spelled, v)?),
            Opt::TraceOutLimit => self.cfg.trace_out_limits = trace_out_limit(&g.spelled, v)?,
            Opt::TraceOutStream => self.cfg.trace_out_stream = true,
            Opt::HistShape => self.hist_shape(g, v)?,
            // the proof scripts'
            #[cfg(feature = "proof")]
            Opt::BallastMib => {
                self.cfg.bench.ballast_mib = parse_u64(&g.spelled, v, 0, bench::MAX_BALLAST_MIB)?;
            }
            #[cfg(feature = "proof")]
            Opt::NoExitDemote => self.cfg.bench.no_exit_demote = true,
            #[cfg(feature = "proof")]
            Opt::SelfCheckProbe => self.self_check_probe(),
        }
        Ok(None)
    }

    /// `-l`: loops, 0 for no limit.
    fn loops(&mut self, g: &Given) -> Result<(), Error> {
        self.cfg.loops = self.int_meaning(g, 0, i64::MAX / 4, Some("no limit"))? as u64;
        Ok(())
    }

    /// `--deepest-idle-state N`, -1 for none.
    fn deepest_idle_state(&mut self, g: &Given) -> Result<(), Error> {
        self.cfg.deepest_idle_state = Some(self.int(g, -1, MAX_IDLE_STATE)? as i32);
        Ok(())
    }

    /// `--hist-shape 2.4|2.7`.
    fn hist_shape(&mut self, g: &Given, v: &str) -> Result<(), Error> {
        self.cfg.hist_shape = HistShape::parse(v)
            .ok_or_else(|| Error::usage(format!("{} '{v}': not 2.4 or 2.7", g.spelled)))?;
        Ok(())
    }

    /// `--self-check-probe` (the proof scripts'): the probe proves the
    /// self-check, so it turns one on.
    #[cfg(feature = "proof")]
    fn self_check_probe(&mut self) {
        self.cfg.bench.self_check_probe = true;
        self.cfg.self_check = true;
    }

    /// `-A`, `--secaligned`: the offset in µs, 0 without one.
    fn optional(&mut self, g: &Given, hi: i64) -> Result<u64, Error> {
        match g.value {
            None => Ok(0),
            Some(_) => Ok(self.int(g, 0, hi)? as u64),
        }
    }

    /// A whole number as cyclictest's `atoi` reads it, in `lo..=hi`.
    fn int(&mut self, g: &Given, lo: i64, hi: i64) -> Result<i64, Error> {
        self.int_meaning(g, lo, hi, None)
    }

    /// [`Self::int`], whose note says what 0 means (`zero`), if it was
    /// read as 0.
    fn int_meaning(
        &mut self,
        g: &Given,
        lo: i64,
        hi: i64,
        zero: Option<&str>,
    ) -> Result<i64, Error> {
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
        self.note(numbers::note(&g.spelled, word, &r, zero));
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

    /// `-a [CPUSET]`.
    fn affinity(&mut self, g: &Given) -> Result<(), Error> {
        self.cfg.affinity = Some(match g.value.as_deref() {
            None => CpuList::All,
            Some(v) => cpus(g, v)?,
        });
        self.saw.affinity = true;
        Ok(())
    }

    /// `-t [N]` (`-t0` reads as 0 threads, which cyclictest refuses too).
    fn threads(&mut self, g: &Given) -> Result<(), Error> {
        self.cfg.threads = Some(match g.value {
            None => Threads::PerCpu,
            Some(_) => {
                let n = self.int(g, 1, MAX_THREADS as i64).map_err(|e| {
                    Error::usage(format!(
                        "{e}; -t alone, or -t 0 as two words, means one thread per CPU"
                    ))
                })?;
                Threads::Count(n as usize)
            }
        });
        self.saw.threads = true;
        Ok(())
    }

    /// `-d US`.
    fn distance(&mut self, g: &Given) -> Result<(), Error> {
        self.cfg.distance_us = Some(self.int(g, 0, MAX_US)? as u64);
        self.saw.distance = true;
        Ok(())
    }

    /// `-H US`: `-h` plus the all-threads column.
    fn histofall(&mut self, g: &Given) -> Result<(), Error> {
        self.cfg.hist_us = self.hist(g)?;
        self.cfg.hist_all = true;
        Ok(())
    }

    /// `-p PRIO`.
    fn priority(&mut self, g: &Given) -> Result<(), Error> {
        self.cfg.priority = self.int(g, 0, 99)? as u32;
        self.saw.priority = true;
        Ok(())
    }

    /// `--spike-nodes N`.
    /// `--trace-buffer-size KB`.
    fn trace_buffer_size(&mut self, g: &Given, v: &str) -> Result<(), Error> {
        let kb = parse_u64(&g.spelled, v, u64::from(MIN_BUFFER_KB), MAX_TRACE_BUFFER_KB)?;
        self.cfg.trace_buffer_kb = u32::try_from(kb).ok();
        Ok(())
    }

    fn spike_nodes(&mut self, g: &Given) -> Result<(), Error> {
        self.cfg.spike_nodes = self.int(g, 1, MAX_SPIKE_NODES)? as usize;
        self.saw.spike_nodes = true;
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

/// The deepest `--deepest-idle-state` (the kernel's `CPUIDLE_STATE_MAX`
/// is 10).
const MAX_IDLE_STATE: i64 = 9;

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

/// `-a CPUSET`, `--mainaffinity CPUSET`.
fn cpus(g: &Given, v: &str) -> Result<CpuList, Error> {
    parse_cpu_list(v).map_err(|e| Error::usage(format!("{} {v}: {e}", g.spelled)))
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

/// `--slo`: a latency goal list, or core's one line on what is wrong.
fn goals(v: &str) -> Result<latscope_core::slo::Goals, Error> {
    latscope_core::slo::Goals::parse(v).map_err(|e| Error::usage(format!("--slo {v}: {e}")))
}

/// `--trace-out-limit FILES,MIB`: 1 to 100,000 files, 1 MiB to 1 TiB.
fn trace_out_limit(flag: &str, v: &str) -> Result<Limits, Error> {
    let Some((files, mib)) = v.split_once(',') else {
        return Err(Error::usage(format!(
            "{flag} '{v}': FILES,MIB (e.g. 100,256)"
        )));
    };
    Ok(Limits {
        files: parse_u64(flag, files, 1, 100_000)? as u32,
        bytes: parse_u64(flag, mib, 1, 1 << 20)? << 20,
    })
}

fn nonempty(flag: &str, v: &str) -> Result<String, Error> {
    if v.is_empty() {
        Err(Error::usage(format!("{flag}: empty path")))
    } else {
        Ok(v.to_string())
    }
}
