//! What cyclictest 2.4 decides after reading every option (the end of its
//! `process_options`): the wake-up mode, `-S` over `-a` and `-t`, `-h`
//! over `-d`, policy and priority, and the combinations that make no
//! sense. Each surprise is a note; each impossibility an error.

use latscope_core::wire::{Policy, StartAlign, WakeMode};

use crate::linux::timerlat;

use super::{Config, Dest};
use crate::error::Error;

/// Which options were given, where a default depends on it.
#[derive(Debug, Default)]
pub(super) struct OptionsGiven {
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

impl OptionsGiven {
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

/// The checks and settings that need the whole command line.
pub(super) fn check(cfg: &mut Config, saw: &OptionsGiven) -> Result<(), Error> {
    wake_mode(cfg, saw);
    smp(cfg, saw);
    if saw.distance && cfg.hist_us > 0 && cfg.distance_us != Some(0) {
        cfg.notes.push(
            "distance is ignored and set to 0, if histogram enabled (-d with -h/-H, as cyclictest)"
                .into(),
        );
    }
    if saw.spike_nodes && cfg.spike_us == 0 {
        cfg.notes
            .push("--spike-nodes has no effect without --spike".into());
    }
    if cfg.laptop {
        cfg.default_system = true;
    }
    if (cfg.trace_out.is_some() || cfg.trace_out_stream) && cfg.explain_us == 0 {
        return Err(Error::usage(
            "--trace-out and --trace-out-stream need --explain",
        ));
    }
    if cfg.trace_out_stream && cfg.stream.is_none() {
        return Err(Error::usage("--trace-out-stream needs --stream"));
    }
    cfg.align = saw.align();
    if saw.aligned.is_some() && saw.secaligned.is_some() {
        return Err(Error::usage("-A and --secaligned exclude each other"));
    }
    check_policy(cfg, saw);
    check_deadline(cfg)?;
    check_timerlat(cfg, saw)?;
    check_combinations(cfg)
}

/// `-r`, `-s` and `-x` as cyclictest combines them: `-s` wins over `-x`
/// (with cyclictest's three warning lines) and ignores `-r`.
fn wake_mode(cfg: &mut Config, saw: &OptionsGiven) {
    cfg.wake = if saw.system {
        if saw.posix_timers {
            cfg.notes.extend([
                "The system option requires clock_nanosleep".to_string(),
                "and is not compatible with posix_timers".to_string(),
                "Using clock_nanosleep".to_string(),
            ]);
        }
        if saw.relative {
            cfg.notes
                .push("-r has no effect with -s (nanosleep() is always relative)".into());
        }
        WakeMode::Nanosleep
    } else if saw.posix_timers {
        WakeMode::PosixTimer {
            relative: saw.relative,
        }
    } else if saw.relative {
        WakeMode::Relative
    } else {
        WakeMode::Absolute
    };
}

/// `--timerlat`: every thread pinned (the kernel opens a CPU's
/// `timerlat_fd` only to a thread on exactly that CPU), one period for all
/// (the kernel's is global, 100 µs to 1 s), and the tracer as the only
/// way to wake. Without `-d`, the distance is 0.
fn check_timerlat(cfg: &mut Config, saw: &OptionsGiven) -> Result<(), Error> {
    if !cfg.timerlat {
        return Ok(());
    }
    let refuse = |why: &str| Err(Error::usage(format!("--timerlat: {why}")));
    if cfg.affinity.is_none() && !cfg.smp {
        return refuse(
            "needs -a (or -S): the kernel opens a CPU's timerlat_fd only to a thread pinned there",
        );
    }
    match cfg.distance_us {
        Some(d) if d != 0 => {
            return refuse(&format!(
                "-d {d}: the kernel's timerlat period is one for all threads; drop -d"
            ))
        }
        _ => cfg.distance_us = Some(0),
    }
    cfg.wake = WakeMode::Timerlat;
    let (lo, hi) = (timerlat::MIN_PERIOD_US, timerlat::MAX_PERIOD_US);
    if !(lo..=hi).contains(&cfg.interval_us) {
        return refuse(&format!(
            "-i {}: the kernel's timerlat period is {lo} us to {hi} us",
            cfg.interval_us
        ));
    }
    if saw.relative || saw.system || saw.posix_timers {
        return refuse("it is the wake-up mode; drop -r, -s and -x");
    }
    if saw.aligned.is_some() || saw.secaligned.is_some() {
        return refuse(
            "the kernel starts each thread's periods at its first read; drop -A and --secaligned",
        );
    }
    if cfg.stream.is_some() {
        return refuse(
            "the stream's protocol has no timerlat histograms yet; drop --stream \
             (the run's text and --json have them)",
        );
    }
    Ok(())
}

/// `-S`: one thread per CPU, pinned; it overrides `-a` and `-t`.
fn smp(cfg: &mut Config, saw: &OptionsGiven) {
    if !cfg.smp {
        return;
    }
    if saw.affinity {
        cfg.notes.push("-a ignored due to smp mode".into());
        cfg.affinity = None;
    }
    if saw.threads {
        cfg.notes.push("-t ignored due to smp mode".into());
        cfg.threads = None;
    }
}

/// cyclictest: a priority makes the policy SCHED_FIFO unless it is
/// SCHED_RR (saying so if `--policy` named another); non-RT policies
/// have priority 0. latscope's default (no `-p`) is FIFO 80.
fn check_policy(cfg: &mut Config, saw: &OptionsGiven) {
    match cfg.policy {
        Policy::Fifo | Policy::Rr => {}
        Policy::Deadline => {
            if saw.priority {
                cfg.notes
                    .push("-p has no effect with --policy deadline".into());
            }
            cfg.priority = 0;
        }
        Policy::Other | Policy::Batch | Policy::Idle => {
            if saw.priority && cfg.priority > 0 {
                cfg.notes
                    .push("policy and priority don't match: setting policy to SCHED_FIFO".into());
                cfg.policy = Policy::Fifo;
            } else {
                cfg.priority = 0;
            }
        }
    }
}

/// SCHED_DEADLINE's defaults (period = interval, deadline = period,
/// runtime = deadline / 10) and its rule runtime <= deadline <= period.
fn check_deadline(cfg: &mut Config) -> Result<(), Error> {
    if cfg.policy != Policy::Deadline {
        if cfg.dl_runtime_us + cfg.dl_deadline_us + cfg.dl_period_us > 0 {
            return Err(Error::usage("--deadline-* options need --policy deadline"));
        }
        return Ok(());
    }
    let or = |v: u64, default: u64| if v > 0 { v } else { default };
    let period = or(cfg.dl_period_us, cfg.interval_us);
    let deadline = or(cfg.dl_deadline_us, period);
    let runtime = or(cfg.dl_runtime_us, (deadline / 10).max(2));
    if !(runtime <= deadline && deadline <= period) {
        return Err(Error::usage(format!(
            "deadline parameters need runtime <= deadline <= period (got {runtime} <= {deadline} <= {period} us)"
        )));
    }
    cfg.dl_period_us = period;
    cfg.dl_deadline_us = deadline;
    cfg.dl_runtime_us = runtime;
    Ok(())
}

/// Options that exclude or need each other.
fn check_combinations(cfg: &Config) -> Result<(), Error> {
    if cfg.oscope > 1 && !cfg.verbose {
        return Err(Error::usage(
            "-o RED needs -v (cyclictest: -o option only meaningful, if verbose)",
        ));
    }
    if cfg.nsecs && cfg.hist_us > 0 {
        return Err(Error::usage(
            "-N with -h/-H: the histogram text rows are 1 us wide; drop -N (the stream and --json keep ns)",
        ));
    }
    if cfg.tracemark && cfg.break_us == 0 {
        return Err(Error::usage("--tracemark needs -b US"));
    }
    if cfg.histfile.is_some() && cfg.hist_us == 0 {
        return Err(Error::usage("--histfile needs -h US or -H US"));
    }
    // the frame stream owns standard output; nothing else may write there
    if cfg.stream == Some(Dest::Stdout) && cfg.json.as_deref() == Some("-") {
        return Err(Error::usage(
            "--stream - and --json - both write to standard output; give one of them a file",
        ));
    }
    if cfg.policy != Policy::Deadline && cfg.priospread && cfg.priority == 1 {
        return Err(Error::usage("--priospread needs -p 2 or more"));
    }
    Ok(())
}
