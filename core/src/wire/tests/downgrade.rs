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
        | now::Body::EvidencePart(_) => return None,
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
    use now_explain::CauseKind as K;
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
                config: h.config,
            })
        }
        now::Body::Stats(s) => v2::Body::Stats(s),
        now::Body::Delta(d) => v2::Body::Delta(d),
        now::Body::Chunk(c) => v2::Body::Chunk(c),
        now::Body::Spike(s) => v2::Body::Spike(s),
        now::Body::Log(l) => v2::Body::Log(l),
        now::Body::Bye(b) => v2::Body::Bye(b),
        // the same encoding, as long as no line is of version 3's Masked
        now::Body::Explain(a) => v2::Body::Explain(super::recode(&a)?),
        now::Body::Aggregate(_) | now::Body::EvidenceHead(_) | now::Body::EvidencePart(_) => {
            return None
        }
    })
}

/// The version-3 body of a current one, as a version-3 sender sent it:
/// the hello with version 3's schema key; `None` for the evidence, which
/// version 3 did not have.
pub(crate) fn downgrade_v3(b: &now::Body) -> Option<super::v3::Body> {
    use super::v3;
    Some(match b.clone() {
        now::Body::Hello(mut h) => {
            if h.schema == now::SCHEMA_KEY {
                h.schema = v3::SCHEMA_KEY;
            }
            v3::Body::Hello(h)
        }
        now::Body::Stats(s) => v3::Body::Stats(s),
        now::Body::Delta(d) => v3::Body::Delta(d),
        now::Body::Chunk(c) => v3::Body::Chunk(c),
        now::Body::Spike(s) => v3::Body::Spike(s),
        now::Body::Log(l) => v3::Body::Log(l),
        now::Body::Bye(b) => v3::Body::Bye(b),
        now::Body::Explain(a) => v3::Body::Explain(a),
        now::Body::Aggregate(a) => v3::Body::Aggregate(a),
        now::Body::EvidenceHead(_) | now::Body::EvidencePart(_) => return None,
    })
}
