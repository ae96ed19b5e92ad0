//! Version 1's frames made from current ones, for the tests: the fields
//! version 1 has, so the test corpus of version-1 frames keeps compiling
//! when the current types gain fields. Deltas and chunks are not
//! downgraded (the tests build them as version 1 wrote them).

use heapless::Vec;

use crate::explain as now_explain;
use crate::wire as now;
use crate::wire::v1::*;

/// The version-1 frame of a current one's fields that version 1 has.
pub(crate) fn downgrade(f: &now::Frame) -> Option<Frame> {
    let body = match &f.body {
        now::Body::Hello(h) => Body::Hello(down_hello(h)),
        now::Body::Stats(s) => Body::Stats(down_stats(s)),
        now::Body::Spike(s) => Body::Spike(SpikeSample {
            thread: s.thread,
            cycle: s.cycle,
            deadline_ns: s.deadline_ns,
            latency_ns: s.latency_ns,
            missed: s.missed,
            flags: SpikeFlags {
                spike: s.flags.spike,
                overflow: s.flags.overflow,
                brk: s.flags.brk,
            },
        }),
        now::Body::Log(l) => Body::Log(LogLine {
            level: match l.level {
                now::Level::Info => Level::Info,
                now::Level::Warn => Level::Warn,
                now::Level::Error => Level::Error,
            },
            text: l.text.clone(),
        }),
        now::Body::Bye(b) => Body::Bye(down_bye(b)),
        now::Body::Explain(a) => Body::Explain(down_attribution(a)),
        now::Body::Delta(_)
        | now::Body::Chunk(_)
        | now::Body::Aggregate(_)
        | now::Body::EvidenceHead(_)
        | now::Body::EvidencePart(_)
        | now::Body::TimerlatStats(_)
        | now::Body::TimerlatDelta(_)
        | now::Body::TimerlatChunk(_) => return None,
    };
    Some(Frame {
        version: 1,
        seq: f.seq,
        body,
    })
}

fn down_hello(h: &now::Hello) -> Hello {
    let (t, c) = (&h.target, &h.config);
    let mut threads = Vec::new();
    for t in &c.threads {
        let _ = threads.push(ThreadInfo {
            index: t.index,
            cpu: t.cpu,
            tid: t.tid,
            priority: t.priority,
            interval_ns: t.interval_ns,
        });
    }
    Hello {
        schema: if h.schema == now::SCHEMA_KEY {
            SCHEMA_KEY
        } else {
            h.schema
        },
        tool_version: h.tool_version.clone(),
        run_id: h.run_id,
        target: TargetInfo {
            hostname: t.hostname.clone(),
            arch: t.arch.clone(),
            kernel: t.kernel.clone(),
            preempt_rt: t.preempt_rt,
            preempt_model: t.preempt_model.clone(),
            cpus: t.cpus,
            cmdline: t.cmdline.clone(),
            clocksource: t.clocksource.clone(),
            rt_runtime_us: t.rt_runtime_us,
            argv: t.argv.clone(),
        },
        config: RunConfig {
            policy: match c.policy {
                now::Policy::Other => Policy::Other,
                now::Policy::Fifo => Policy::Fifo,
                now::Policy::Rr => Policy::Rr,
                now::Policy::Batch => Policy::Batch,
                now::Policy::Idle => Policy::Idle,
                now::Policy::Deadline => Policy::Deadline,
            },
            priority: c.priority,
            interval_ns: c.interval_ns,
            distance_ns: c.distance_ns,
            clock: match c.clock {
                now::ClockKind::Monotonic => ClockKind::Monotonic,
                now::ClockKind::Realtime => ClockKind::Realtime,
            },
            mlock: c.mlock,
            dma_latency_us: c.dma_latency_us,
            timer_slack_ns: c.timer_slack_ns,
            duration_ns: c.duration_ns,
            loops: c.loops,
            warmup_cycles: c.warmup_cycles,
            report_ns: c.report_ns,
            spike_ns: c.spike_ns,
            break_ns: c.break_ns,
            hist_us: c.hist_us,
            layout: Layout {
                linear_us: c.layout.linear_us,
                buckets: c.layout.buckets,
            },
            degraded: Degraded {
                no_rt_policy: c.degraded.no_rt_policy,
                no_mlock: c.degraded.no_mlock,
                no_dma_latency: c.degraded.no_dma_latency,
                no_affinity: c.degraded.no_affinity,
            },
            self_check: c.self_check,
            threads,
        },
    }
}

fn down_stats(s: &now::ThreadStats) -> ThreadStats {
    ThreadStats {
        thread: s.thread,
        epoch: s.epoch,
        elapsed_ns: s.elapsed_ns,
        cycles: s.cycles,
        count: s.count,
        sum: s.sum,
        min: s.min,
        max: s.max,
        interval_max: s.interval_max,
        last: s.last,
        missed: s.missed,
        early: s.early,
        minflt: s.minflt,
        majflt: s.majflt,
        dropped: s.dropped,
        last_report: s.last_report,
    }
}

fn down_bye(b: &now::Bye) -> Bye {
    Bye {
        reason: match b.reason {
            now::ByeReason::Completed => ByeReason::Completed,
            now::ByeReason::Signal(s) => ByeReason::Signal(s),
            now::ByeReason::Break { thread, latency_ns } => ByeReason::Break { thread, latency_ns },
            now::ByeReason::Error => ByeReason::Error,
        },
        epoch: b.epoch,
        elapsed_ns: b.elapsed_ns,
        threads: b.threads,
        cycles: b.cycles,
        max_ns: b.max_ns,
        frames_dropped: b.frames_dropped,
        defects: b.defects,
    }
}

fn down_attribution(a: &now_explain::Attribution) -> Attribution {
    use crate::wire::v4::CauseKind as K;
    let a = down_v4(a);
    let mut causes = Vec::new();
    for c in &a.causes {
        let _ = causes.push(Cause {
            kind: match c.kind {
                K::Irq => CauseKind::Irq,
                K::Softirq => CauseKind::Softirq,
                K::Vector => CauseKind::Vector,
                K::TimerDelay => CauseKind::TimerDelay,
                K::IdleExit => CauseKind::IdleExit,
                K::Task => CauseKind::Task,
                K::Untraced => CauseKind::Untraced,
                K::Other => CauseKind::Other,
                K::Masked => panic!("version 1 has no masked time; the samples never make it"),
            },
            id: c.id,
            prio: c.prio,
            name: c.name.clone(),
            count: c.count,
            ns: c.ns,
        });
    }
    Attribution {
        cpu: a.cpu,
        cycle: a.cycle,
        deadline_ns: a.deadline_ns,
        latency_ns: a.latency_ns,
        coarse: a.coarse,
        partial: a.partial,
        causes,
    }
}

/// The version-4 explanation of a current one, as a version-4 sender
/// sent it: a kind, an id, a priority (`i32::MIN` unknown) and a name.
pub(crate) fn down_v4(a: &now_explain::Attribution) -> crate::wire::v4::Attribution {
    use crate::explain::{Culprit, PrioClass, Task, Untraced};
    use crate::wire::v4::{Attribution, Cause, CauseKind as K};
    let kernel = |p: Option<PrioClass>| match p {
        Some(PrioClass::Deadline) => -1,
        Some(PrioClass::RealTime(p)) => 99 - i32::from(p),
        Some(PrioClass::Normal(n)) => 120 + i32::from(n),
        None => i32::MIN,
    };
    let mut causes = Vec::new();
    for c in &a.causes {
        let none = heapless::String::new();
        let task = |t: &Task| (t.pid, kernel(t.prio), t.comm.clone());
        let (kind, (id, prio, name), count) = match &c.culprit {
            Culprit::Irq { irq, name, thread } => {
                (K::Irq, (*irq, kernel(*thread), name.clone()), c.count)
            }
            Culprit::Vector { vector, name } => {
                (K::Vector, (*vector, i32::MIN, name.clone()), c.count)
            }
            Culprit::Softirq(s) => (
                K::Softirq,
                (s.vector(), i32::MIN, crate::wire::bounded(s.name())),
                c.count,
            ),
            Culprit::Task(t) => (K::Task, task(t), c.count),
            Culprit::TimerDelay { running } => (
                K::TimerDelay,
                running.as_ref().map_or((0, i32::MIN, none), task),
                c.count,
            ),
            Culprit::IdleExit => (K::IdleExit, (0, i32::MIN, none), c.count),
            Culprit::Masked => (K::Masked, (0, i32::MIN, none), c.count),
            Culprit::Other => (K::Other, (0, i32::MIN, none), c.count),
            Culprit::Untraced(u) => {
                let (why, count) = match u {
                    Untraced::Off => (0, c.count),
                    Untraced::Paused => (1, c.count),
                    Untraced::Lost { events } => (2, *events),
                    Untraced::LostUnknown => (3, c.count),
                    Untraced::Beyond => (4, c.count),
                };
                (K::Untraced, (why, i32::MIN, none), count)
            }
        };
        let _ = causes.push(Cause {
            kind,
            id,
            prio,
            name,
            count,
            ns: c.ns,
        });
    }
    Attribution {
        cpu: a.cpu,
        cycle: a.cycle,
        deadline_ns: a.deadline_ns,
        latency_ns: a.latency_ns,
        coarse: a.coarse,
        partial: a.partial,
        causes,
    }
}

/// The version-2 body of a current one, as a version-2 sender sent it:
/// the hello in its frozen type, without version 3's fields; `None` for
/// the aggregate, which version 2 did not have.
pub(crate) fn downgrade_v2(b: &now::Body) -> Option<super::v2::Body> {
    use super::v2;
    Some(match b.clone() {
        now::Body::Hello(h) => {
            let t = h.target;
            v2::Body::Hello(v2::Hello {
                schema: if h.schema == now::SCHEMA_KEY {
                    v2::SCHEMA_KEY
                } else {
                    h.schema
                },
                tool_version: h.tool_version,
                run_id: h.run_id,
                target: v2::TargetInfo {
                    hostname: t.hostname,
                    arch: t.arch,
                    kernel: t.kernel,
                    kernel_version: t.kernel_version,
                    preempt_rt: t.preempt_rt,
                    preempt_model: t.preempt_model,
                    cpus: t.cpus,
                    cmdline: t.cmdline,
                    clocksource: t.clocksource,
                    rt_runtime_us: t.rt_runtime_us,
                    argv: t.argv,
                    name: t.name,
                },
                config: down_v5_config(h.config),
            })
        }
        now::Body::Stats(s) => v2::Body::Stats(s),
        now::Body::Delta(d) => v2::Body::Delta(d),
        now::Body::Chunk(c) => v2::Body::Chunk(c),
        now::Body::Spike(s) => v2::Body::Spike(s),
        now::Body::Log(l) => v2::Body::Log(l),
        now::Body::Bye(b) => v2::Body::Bye(b),
        // the same encoding, as long as no line is of version 3's Masked
        now::Body::Explain(a) => v2::Body::Explain(super::recode(&down_v4(&a))?),
        now::Body::Aggregate(_)
        | now::Body::EvidenceHead(_)
        | now::Body::EvidencePart(_)
        | now::Body::TimerlatStats(_)
        | now::Body::TimerlatDelta(_)
        | now::Body::TimerlatChunk(_) => return None,
    })
}

/// The version-3 body of a current one, as a version-3 sender sent it:
/// the hello with version 3's schema key; `None` for the evidence, which
/// version 3 did not have.
pub(crate) fn downgrade_v3(b: &now::Body) -> Option<super::v3::Body> {
    use super::v3;
    Some(match b.clone() {
        now::Body::Hello(h) => v3::Body::Hello(down_v5_hello(h, v3::SCHEMA_KEY)),
        now::Body::Stats(s) => v3::Body::Stats(s),
        now::Body::Delta(d) => v3::Body::Delta(d),
        now::Body::Chunk(c) => v3::Body::Chunk(c),
        now::Body::Spike(s) => v3::Body::Spike(s),
        now::Body::Log(l) => v3::Body::Log(l),
        now::Body::Bye(b) => v3::Body::Bye(b),
        now::Body::Explain(a) => v3::Body::Explain(down_v4(&a)),
        now::Body::Aggregate(a) => v3::Body::Aggregate(a),
        now::Body::EvidenceHead(_)
        | now::Body::EvidencePart(_)
        | now::Body::TimerlatStats(_)
        | now::Body::TimerlatDelta(_)
        | now::Body::TimerlatChunk(_) => return None,
    })
}

/// The version-4 body of a current one, as a version-4 sender sent it:
/// the hello with version 4's schema key, the explanation in version 4's
/// cause lines; `None` for the timerlat histograms, which version 4 did
/// not have.
pub(crate) fn downgrade_v4(b: &now::Body) -> Option<super::v4::Body> {
    use super::v4;
    Some(match b.clone() {
        now::Body::Hello(h) => v4::Body::Hello(down_v5_hello(h, v4::SCHEMA_KEY)),
        now::Body::Stats(s) => v4::Body::Stats(s),
        now::Body::Delta(d) => v4::Body::Delta(d),
        now::Body::Chunk(c) => v4::Body::Chunk(c),
        now::Body::Spike(s) => v4::Body::Spike(s),
        now::Body::Log(l) => v4::Body::Log(l),
        now::Body::Bye(b) => v4::Body::Bye(b),
        now::Body::Explain(a) => v4::Body::Explain(down_v4(&a)),
        now::Body::Aggregate(a) => v4::Body::Aggregate(a),
        now::Body::EvidenceHead(h) => v4::Body::EvidenceHead(h),
        now::Body::EvidencePart(p) => v4::Body::EvidencePart(p),
        now::Body::TimerlatStats(_) | now::Body::TimerlatDelta(_) | now::Body::TimerlatChunk(_) => {
            return None
        }
    })
}

/// The version-5 hello of a current one, as a version-5 sender (or, with
/// its `key`, a version-3 or -4 one) sent it: the current key as `key`.
pub(crate) fn down_v5_hello(h: now::Hello, key: [u8; 8]) -> super::v5::Hello {
    super::v5::Hello {
        schema: if h.schema == now::SCHEMA_KEY {
            key
        } else {
            h.schema
        },
        tool_version: h.tool_version,
        run_id: h.run_id,
        target: h.target,
        config: down_v5_config(h.config),
    }
}

/// The version-5 configuration of a current one (the same fields; a
/// wake mode version 5 did not have panics: the tests never make one).
pub(crate) fn down_v5_config(c: now::RunConfig) -> super::v5::RunConfig {
    use super::v5::WakeMode as W;
    super::v5::RunConfig {
        policy: c.policy,
        priority: c.priority,
        interval_ns: c.interval_ns,
        distance_ns: c.distance_ns,
        clock: c.clock,
        mlock: c.mlock,
        dma_latency_us: c.dma_latency_us,
        timer_slack_ns: c.timer_slack_ns,
        duration_ns: c.duration_ns,
        loops: c.loops,
        warmup_cycles: c.warmup_cycles,
        report_ns: c.report_ns,
        spike_ns: c.spike_ns,
        break_ns: c.break_ns,
        hist_us: c.hist_us,
        hist_all: c.hist_all,
        nsecs: c.nsecs,
        started: c.started,
        layout: c.layout,
        degraded: c.degraded,
        self_check: c.self_check,
        threads: c.threads,
        wake: match c.wake {
            now::WakeMode::Absolute => W::Absolute,
            now::WakeMode::Relative => W::Relative,
            now::WakeMode::Nanosleep => W::Nanosleep,
            now::WakeMode::PosixTimer { relative } => W::PosixTimer { relative },
            now::WakeMode::Timerlat => panic!("version 5 had no timerlat mode"),
        },
        align: c.align,
        smi: c.smi,
        tracefs_mounted: c.tracefs_mounted,
    }
}

/// The version-5 body of a current one, as a version-5 sender sent it:
/// the hello in version 5's types with its key; `None` for the timerlat
/// histograms, which version 5 did not have.
pub(crate) fn downgrade_v5(b: &now::Body) -> Option<super::v5::Body> {
    use super::v5;
    Some(match b.clone() {
        now::Body::Hello(h) => v5::Body::Hello(down_v5_hello(h, v5::SCHEMA_KEY)),
        now::Body::Stats(s) => v5::Body::Stats(s),
        now::Body::Delta(d) => v5::Body::Delta(d),
        now::Body::Chunk(c) => v5::Body::Chunk(c),
        now::Body::Spike(s) => v5::Body::Spike(s),
        now::Body::Log(l) => v5::Body::Log(l),
        now::Body::Bye(b) => v5::Body::Bye(b),
        now::Body::Explain(a) => v5::Body::Explain(a),
        now::Body::Aggregate(a) => v5::Body::Aggregate(a),
        now::Body::EvidenceHead(h) => v5::Body::EvidenceHead(h),
        now::Body::EvidencePart(p) => v5::Body::EvidencePart(p),
        now::Body::TimerlatStats(_) | now::Body::TimerlatDelta(_) | now::Body::TimerlatChunk(_) => {
            return None
        }
    })
}
