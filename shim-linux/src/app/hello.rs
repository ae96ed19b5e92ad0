//! The hello: what the stream's reader learns about the target and the
//! run's effective configuration (after degradations).

use std::sync::atomic::Ordering;

use latscope_core::wire::{bounded, Degraded, Hello, Policy, RunConfig, ThreadInfo, SCHEMA_KEY};

use super::setup::{Degradations, Setup};
use crate::config::{self, Config};
use crate::linux::{procfs, random_u64};

/// The hello of a run whose threads are set up.
pub fn hello(cfg: &Config, s: &Setup, deg: &Degradations) -> Hello {
    let degraded = &deg.flags;
    let slack = s
        .shared
        .iter()
        .map(|t| t.timer_slack_ns.load(Ordering::SeqCst) as u64)
        .max()
        .unwrap_or(0);
    let rt = !degraded.no_rt_policy;
    Hello {
        schema: SCHEMA_KEY,
        tool_version: bounded(env!("CARGO_PKG_VERSION")),
        run_id: random_u64(),
        target: procfs::target_info(&cfg.cmdline, &board_name(cfg), cfg.clock),
        config: RunConfig {
            policy: if rt { cfg.policy } else { Policy::Other },
            priority: match s.plans.first() {
                Some(p) if rt => p.priority.min(255) as u8,
                _ => 0,
            },
            interval_ns: cfg.interval_us * 1000,
            distance_ns: cfg.distance() * 1000,
            clock: cfg.clock,
            mlock: cfg.mlock && !degraded.no_mlock,
            dma_latency_us: s.dma_latency,
            timer_slack_ns: slack,
            duration_ns: cfg.duration_ns,
            loops: cfg.loops,
            warmup_cycles: s.settings.cycle.warmup_cycles,
            report_ns: cfg.report_ns,
            spike_ns: s.settings.cycle.spike_ns,
            break_ns: s.settings.cycle.break_ns,
            hist_us: cfg.hist_us,
            hist_all: cfg.hist_all,
            nsecs: cfg.nsecs,
            started: Some(s.started),
            layout: s.layout,
            degraded: *degraded,
            self_check: cfg.self_check,
            threads: threads(s, degraded),
            wake: s.settings.wake,
            align: cfg.align,
            smi: cfg.smi,
            tracefs_mounted: s.tracefs_mounted,
        },
    }
}

/// Each measuring thread as it runs.
fn threads(
    s: &Setup,
    degraded: &Degraded,
) -> heapless::Vec<ThreadInfo, { latscope_core::wire::MAX_THREADS }> {
    let mut threads = heapless::Vec::new();
    for (i, (p, t)) in s.plans.iter().zip(s.shared.iter()).enumerate() {
        let _ = threads.push(ThreadInfo {
            index: i as u16,
            cpu: if t.no_affinity.load(Ordering::SeqCst) {
                None
            } else {
                p.cpu.map(|c| c as u16)
            },
            tid: t.tid.load(Ordering::SeqCst) as u32,
            priority: if degraded.no_rt_policy {
                0
            } else {
                p.priority.min(255) as u8
            },
            interval_ns: p.interval_us * 1000,
            node: if t.no_affinity.load(Ordering::SeqCst) {
                -1
            } else {
                s.nodes
                    .get(i)
                    .map_or(-1, |&n| n.clamp(-1, i16::MAX.into()) as i16)
            },
        });
    }
    threads
}

/// The policy as the live view's header names it.
pub fn policy_label(cfg: &Config, d: &Degraded) -> &'static str {
    if d.no_rt_policy {
        "other/other"
    } else {
        match cfg.policy {
            Policy::Other => "other/other",
            p => p.name(),
        }
    }
}

/// `--name`; without it, the host name and a keyed hash of
/// `/etc/machine-id` ([`config::default_name`]).
fn board_name(cfg: &Config) -> String {
    match &cfg.name {
        Some(n) => n.clone(),
        None => config::default_name(
            &procfs::uname().nodename,
            procfs::read_text("/etc/machine-id").as_deref(),
        ),
    }
}
