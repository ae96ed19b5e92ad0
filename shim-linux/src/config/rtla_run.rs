//! latscope invoked as `rtla`: what an `rtla timerlat hist` command line
//! asks for, as a `--timerlat` run of latscope's own. The grammar is
//! rtla's ([`super::rtla`]); this maps its meaning, option by option, and
//! refuses by name what the run cannot honour.

use latscope_core::rtla::{Options, Unit};
use latscope_core::wire::{Policy, WakeMode};

use super::rtla::{RtlaHist, RtlaSched, RtlaThreads};
use super::{Config, CpuList, Threads};
use crate::error::Error;
use crate::linux::tracefs::RtlaShape;

/// The widest exact rtla histogram, µs (`-E` times `-b`): rteval's 3,500
/// one-µs buckets fit many times over.
const MAX_RANGE_US: u64 = 1_000_000;

/// What the end of a run invoked as `rtla` prints: rtla's histogram text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtlaText {
    /// The columns' shape (`-E`, `-b`).
    pub shape: RtlaShape,
    /// The text's options (`--no-summary`, ...).
    pub options: Options,
}

/// The run an `rtla timerlat hist` command line asks for.
///
/// * `-c` the CPUs, one pinned thread each (all CPUs without it), each
///   reading its CPU's `timerlat_fd` (`-u`; also without `-u` and `-k`,
///   as rtla 6.12 picks user-space threads where the kernel has them);
/// * `-p` the period (rtla's default, 1000 µs, without it);
/// * `-P` the policy and priority (latscope's SCHED_FIFO 80 without it);
/// * `-d` the duration (until SIGINT or SIGTERM without it);
/// * `--dma-latency` the `/dev/cpu_dma_latency` request (latscope holds 0
///   µs without it, as it always does);
/// * `-H` the CPUs of latscope's other threads; `--trace-buffer-size` the
///   trace instance's buffer per CPU;
/// * `-E`, `-b` and the `--no-*` and `--with-zeros` options shape the text.
///
/// `-t` names the file rtla saves a trace to when a threshold stops it;
/// with no threshold (they are refused) nothing stops the trace, so there
/// is nothing to save, in rtla as here.
///
/// # Errors
///
/// [`Error::Unsupported`] naming the first option the run cannot honour.
pub fn rtla_config(h: &RtlaHist) -> Result<Config, Error> {
    h.refuse_unsupported()?;
    let refuse = |what: &'static str, why: &'static str| Err(Error::Unsupported { what, why });
    if h.threads == RtlaThreads::Kernel {
        return refuse(
            "-k/--kernel-threads",
            "latscope measures from its own user-space threads (drop -k, or give -u)",
        );
    }
    if h.stop_us.is_some() || h.stop_total_us.is_some() {
        return refuse(
            "-i/-T",
            "latscope does not stop the trace on a threshold yet; its report names every spike",
        );
    }
    if h.unit == Unit::Nanos {
        return refuse(
            "-n/--nano",
            "latscope's histograms count whole microseconds",
        );
    }
    if h.warm_up_s.is_some() {
        return refuse(
            "--warm-up",
            "the kernel's timerlat entries of the warm-up would be counted",
        );
    }
    if h.debug {
        return refuse("-D/--debug", "latscope prints no rtla debug messages");
    }
    let range = (h.entries as u64).saturating_mul(h.bucket_size);
    if range > MAX_RANGE_US {
        return refuse(
            "-E/-b",
            "latscope's exact rtla histogram reaches 1 s (entries times bucket size)",
        );
    }
    let mut cfg = Config {
        timerlat: true,
        wake: WakeMode::Timerlat,
        affinity: Some(h.cpus.clone().map_or(CpuList::All, CpuList::Only)),
        threads: Some(Threads::PerCpu),
        interval_us: h.period_us.unwrap_or(1000),
        distance_us: Some(0),
        duration_ns: h.duration_s.unwrap_or(0).saturating_mul(1_000_000_000),
        quiet: true,
        latency_us: i32::try_from(h.dma_latency_us.unwrap_or(0)).unwrap_or(i32::MAX),
        trace_buffer_kb: h
            .trace_buffer_kb
            .map(|kb| u32::try_from(kb).unwrap_or(u32::MAX)),
        mainaffinity: h.house_keeping.clone().map(CpuList::Only),
        rtla: Some(RtlaText {
            shape: RtlaShape {
                entries: h.entries,
                bucket_size: h.bucket_size,
            },
            // the user columns: latscope's threads are user-space ones
            options: h.text_options(true),
        }),
        ..Config::default()
    };
    match h.sched {
        None => {}
        Some(RtlaSched::Fifo { prio }) | Some(RtlaSched::Rr { prio }) => {
            cfg.policy = h.sched.map_or(Policy::Fifo, RtlaSched::policy);
            cfg.priority = prio;
        }
        Some(RtlaSched::Other { nice: 0 }) => {
            cfg.policy = Policy::Other;
            cfg.priority = 0;
        }
        Some(RtlaSched::Other { .. }) => {
            return refuse("-P o:NICE", "latscope does not set a nice value; give o:0")
        }
        Some(RtlaSched::Deadline { .. }) => {
            return refuse(
                "-P d:RUNTIME:PERIOD",
                "a pinned SCHED_DEADLINE thread needs an exclusive cpuset partition",
            )
        }
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::rtla::{parse_rtla, RtlaRequest};

    fn config(words: &[&str]) -> Result<Config, Error> {
        match parse_rtla(words)? {
            RtlaRequest::Hist(h) => rtla_config(&h),
            RtlaRequest::Help => panic!("help"),
        }
    }

    #[test]
    fn rtevals_command_lines_are_timerlat_runs() {
        let c = config(&[
            "timerlat",
            "hist",
            "-p100",
            "-P",
            "f:95",
            "-u",
            "-c0-1",
            "-E3500",
            "--no-summary",
            "--no-aa",
            "--dma-latency=0",
        ])
        .unwrap();
        assert!(c.timerlat && c.quiet);
        assert_eq!(c.affinity, Some(CpuList::Only(vec![0, 1])));
        assert_eq!(
            (c.interval_us, c.policy, c.priority),
            (100, Policy::Fifo, 95)
        );
        assert_eq!(c.duration_ns, 0);
        let t = c.rtla.unwrap();
        assert_eq!((t.shape.entries, t.shape.bucket_size), (3500, 1));
        assert!(t.options.no_summary && t.options.user);
        // rteval without an interval: an empty word, rtla's default period
        let c = config(&[
            "timerlat", "hist", "", "-P", "f:95", "-u", "-c0", "-d", "5s", "--no-aa",
        ])
        .unwrap();
        assert_eq!((c.interval_us, c.duration_ns), (1000, 5_000_000_000));
        assert_eq!(c.affinity, Some(CpuList::Only(vec![0])));
    }

    #[test]
    fn what_the_run_cannot_honour_is_refused_by_name() {
        for (words, what) in [
            (&["-k"][..], "-k/--kernel-threads"),
            (&["-T", "100", "--no-aa"], "-i/-T"),
            (&["-T", "100"], "rtla's auto-analysis"),
            (&["-n"], "-n/--nano"),
            (&["--warm-up", "2"], "--warm-up"),
            (&["-E", "100000", "-b", "100"], "-E/-b"),
            (&["-P", "d:100us:1ms"], "-P d:RUNTIME:PERIOD"),
            (&["-P", "o:5"], "-P o:NICE"),
        ] {
            let mut all = vec!["timerlat", "hist"];
            all.extend(words);
            let e = config(&all).unwrap_err();
            assert!(e.to_string().starts_with(what), "{all:?}: {e}");
            assert_eq!(e.exit_status(), crate::error::EXIT_USAGE, "{all:?}");
        }
    }
}
