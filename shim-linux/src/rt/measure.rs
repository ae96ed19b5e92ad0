//! The hot loop of a measuring thread, and its rare paths (flagged
//! samples, `-v`, `-b`), kept out of line. The loop is generic over how it
//! waits ([`Wake`]): each mode gets its own copy, and the default mode's
//! is the same code as if it were the only one.

use std::sync::atomic::{AtomicU32, Ordering};

use latscope_core::cycle::{Clock, Cycle, CycleConfig, Sample, Step, StopReason};
use latscope_core::seqlock::Writer;
use latscope_core::wire::{SpikeFlags, SpikeSample, StartAlign, WakeMode};

use super::wake::{Absolute, Nanosleep, PosixTimer, Relative, Timerlat, Wake};
use super::ThreadArgs;
use crate::error::Error;
use crate::linux::clock::LinuxClock;
use crate::linux::procfs;

/// Set up the cycle and run the loop of the run's wake-up mode.
pub(super) fn measure(a: &mut ThreadArgs<'_>) -> Result<(), Error> {
    let mut w = a
        .shared
        .hist
        .writer()
        .ok_or(Error::Internal("a shared histogram was claimed twice"))?;
    let mut clock = a.settings.clock;
    let cfg = CycleConfig {
        interval_ns: a.plan.interval_us.saturating_mul(1000),
        ..a.settings.cycle
    };
    // Baseline faults right before the loop (the sender subtracts them).
    if let Some(f) = procfs::thread_faults("/proc/thread-self/stat") {
        if let Ok(mut g) = a.shared.faults_at_start.lock() {
            *g = f;
        }
    }
    if let Some(t) = a.settings.timerlat.as_ref() {
        let cpu = a
            .plan
            .cpu
            .ok_or(Error::Internal("--timerlat with an unpinned thread"))?;
        let start = t
            .starts
            .iter()
            .find(|(c, _)| *c == cpu)
            .map(|(_, s)| std::sync::Arc::clone(s))
            .ok_or(Error::Internal("--timerlat on a CPU not traced"))?;
        let mut wake = Timerlat::open(&t.root, cpu, start, cfg.interval_ns)?;
        // reads not recorded, until the trace's reader has the kernel's
        // grid (its first read of the buffer, within about 100 ms)
        if !wake.find_grid(&a.control.stop, &mut clock, &a.shared.unrecorded)? {
            return Ok(());
        }
        let cycle = Cycle::new(cfg, clock.now())?;
        return run(a, &mut w, clock, cycle, wake);
    }
    let start = start_time(a, &mut clock);
    let mut cycle = Cycle::new(cfg, start)?;
    match a.settings.wake {
        WakeMode::Absolute => run(a, &mut w, clock, cycle, Absolute),
        WakeMode::Relative => run(a, &mut w, clock, cycle, Relative),
        WakeMode::Nanosleep => run(a, &mut w, clock, cycle, Nanosleep),
        WakeMode::PosixTimer { relative } => {
            let timer = PosixTimer::arm(&mut clock, &mut cycle, relative)?;
            run(a, &mut w, clock, cycle, timer)
        }
        // the timerlat mode is the tracefs above, never this wake mode alone
        WakeMode::Timerlat => Err(Error::Internal("the timerlat wake mode without --timerlat")),
    }
}

/// The start of this thread's first period: its own clock reading, or
/// with `-A`/`--secaligned` the run's common start (plus this thread's
/// offset with `-A`).
fn start_time(a: &ThreadArgs<'_>, clock: &mut LinuxClock) -> i64 {
    let common = || a.control.start.load(Ordering::SeqCst);
    match a.settings.align {
        StartAlign::Own => clock.now(),
        StartAlign::Threads { offset_ns } => {
            common().saturating_add((offset_ns as i64).saturating_mul(a.index as i64))
        }
        StartAlign::Second { offset_ns } => common().saturating_add(offset_ns as i64),
    }
}

/// The measuring loop.
fn run<W: Wake>(
    a: &mut ThreadArgs<'_>,
    w: &mut Writer<'_, Box<[AtomicU32]>>,
    mut clock: LinuxClock,
    mut cycle: Cycle,
    mut wake: W,
) -> Result<(), Error> {
    let stop = &a.control.stop;
    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let now = wake.wait(&mut cycle, &mut clock)?;
        // the common case: a plain sample, nothing else to do
        if let Some(latency) = cycle.plain_wake(now) {
            w.publish_plain(latency);
            if a.verbose.is_some() {
                verbose(a, cycle.recorded() - 1, latency as i64);
            }
            continue;
        }
        let (sample, end) = match cycle.on_wake(now) {
            Step::Warmup => continue,
            Step::Sample { sample, stop } => (sample, stop),
        };
        let missed = wake.missed(&mut cycle, &sample);
        w.publish(sample.latency, missed);
        if sample.flags.any() {
            flagged(a, &sample);
        }
        if a.verbose.is_some() {
            verbose(a, sample.cycle, sample.latency);
        }
        if let Some(reason) = end {
            if let Ok(mut g) = a.shared.stop.lock() {
                *g = Some(reason);
            }
            if reason == StopReason::Break {
                on_break(a, sample.latency);
            }
            break;
        }
    }
    Ok(())
}

/// A sample over a threshold: queue it for the sender (or count it as
/// dropped), and with `--explain` mark the trace.
#[cold]
fn flagged(a: &mut ThreadArgs<'_>, sample: &Sample) {
    let r = SpikeSample {
        thread: a.index as u16,
        cycle: sample.cycle,
        deadline_ns: sample.deadline,
        latency_ns: sample.latency,
        missed: sample.missed,
        flags: SpikeFlags {
            spike: sample.flags.spike,
            overflow: sample.flags.overflow,
            brk: sample.flags.brk,
        },
    };
    if sample.flags.spike {
        let lat = sample.latency.max(0) as u64;
        a.shared.spikes.count(lat, sample.cycle);
    }
    if a.spikes.enqueue(r).is_err() {
        a.shared.dropped.fetch_add(1, Ordering::Relaxed);
        if sample.flags.spike {
            a.shared.spikes.lost();
        }
    }
}

/// `-v`: queue every sample (or count it as dropped).
#[inline(never)]
fn verbose(a: &mut ThreadArgs<'_>, cycle: u64, latency: i64) {
    if let Some(v) = a.verbose.as_mut() {
        if v.enqueue((cycle, latency)).is_err() {
            a.shared.verbose_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// `-b`: note the first break, stop everyone, and with `--tracemark`
/// write the marker and stop tracing (as cyclictest does).
fn on_break(a: &ThreadArgs<'_>, latency: i64) {
    let first = a
        .control
        .break_thread
        .compare_exchange(0, a.index as u32 + 1, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    if first {
        a.control
            .break_ns
            .store(latency.max(0) as u64, Ordering::SeqCst);
        if let Some(t) = a.tracemark {
            let us = latency.max(0) / 1000;
            let limit = a.settings.cycle.break_ns / 1000;
            t.hit(&format!("hit latency threshold ({us} > {limit})\n"));
        }
    }
    a.control.stop.store(true, Ordering::SeqCst);
}
