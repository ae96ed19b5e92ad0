//! The hot loop of a measuring thread, and its rare paths (flagged
//! samples, `-v`, `-b`), kept out of line.

use std::sync::atomic::{AtomicU32, Ordering};

use latscope_core::cycle::{Clock, Cycle, CycleConfig, Sample, Step, StopReason};
use latscope_core::wire::{SpikeFlags, SpikeRecord};

use latscope_core::record::Writer;

use super::ThreadArgs;
use crate::error::Error;
use crate::linux::clock::LinuxClock;
use crate::linux::procfs;

/// The measuring loop.
pub(super) fn measure(a: &mut ThreadArgs<'_>) -> Result<(), Error> {
    let mut w = a
        .shared
        .rec
        .writer()
        .ok_or(Error::Internal("a thread record was claimed twice"))?;
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
    let start = clock.now();
    let cycle = Cycle::new(cfg, start)?;
    // `-v` is decided once, outside the loop: the plain loop then has no
    // test for it at all.
    if a.verbose.is_some() {
        run::<true>(a, &mut w, clock, cycle)
    } else {
        run::<false>(a, &mut w, clock, cycle)
    }
}

/// The loop itself; `VERBOSE`: queue every sample for `-v`.
#[inline(always)]
fn run<const VERBOSE: bool>(
    a: &mut ThreadArgs<'_>,
    w: &mut Writer<'_, Box<[AtomicU32]>>,
    mut clock: LinuxClock,
    mut cycle: Cycle,
) -> Result<(), Error> {
    let stop = &a.control.stop;
    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let now = cycle.sleep(&mut clock)?;
        // the common case: a plain sample, nothing else to do
        if let Some(latency) = cycle.plain_wake(now) {
            w.record_plain(latency);
            if VERBOSE {
                verbose(a, cycle.recorded() - 1, latency as i64);
            }
            continue;
        }
        let (sample, end) = match cycle.on_wake(now) {
            Step::Warmup => continue,
            Step::Sample { sample, stop } => (sample, stop),
        };
        w.record(sample.latency, sample.missed);
        if sample.flags.any() {
            flagged(a, &sample);
        }
        if VERBOSE {
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
    let r = SpikeRecord {
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
    if a.spikes.enqueue(r).is_err() {
        a.shared.dropped.fetch_add(1, Ordering::Relaxed);
    }
    if sample.flags.spike {
        if let Some(m) = a.marker.as_mut() {
            // an unpinned thread marks the CPU it runs on (one more
            // syscall where getcpu has no vDSO, on spikes only)
            let cpu = a.plan.cpu.unwrap_or_else(rustix::thread::sched_getcpu);
            let _ = m.mark(
                cpu,
                sample.cycle,
                sample.latency.max(0) as u64,
                sample.wake.max(0) as u64,
            );
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

/// `-b`: record the first break, stop everyone, and with `--tracemark`
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
