//! The shared state of a recording session: one view per target, published
//! by the connection threads and read by the live view and the metrics
//! server.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use latscope_core::stats::{quantile, Ppm};
use latscope_core::timerlat::Context;
use latscope_core::wire::{Bye, LinkStats};

use crate::report::text::{degraded, missing_devices};
use crate::session::Session;

/// One thread as the live view and the metrics show it.
#[derive(Debug, Clone, Default)]
pub(crate) struct ThreadView {
    /// Thread index.
    pub index: u16,
    /// CPU.
    pub cpu: Option<u16>,
    /// Policy and priority, e.g. `fifo/80`.
    pub sched: String,
    /// Wake-ups.
    pub cycles: u64,
    /// Samples.
    pub count: u64,
    /// Sum of samples (ns).
    pub sum_ns: u64,
    /// Min (ns).
    pub min_ns: Option<u64>,
    /// Mean (ns).
    pub avg_ns: Option<f64>,
    /// p99 (ns).
    pub p99_ns: Option<u64>,
    /// p99.9 (ns).
    pub p999_ns: Option<u64>,
    /// Max (ns).
    pub max_ns: u64,
    /// Missed periods.
    pub missed: u64,
    /// Minor faults.
    pub minflt: u64,
    /// Major faults.
    pub majflt: u64,
    /// Dropped records.
    pub dropped: u64,
    /// Report number.
    pub epoch: u32,
    /// The kernel's timerlat figures of its CPU (protocol version 6), if
    /// any came.
    pub timerlat: Option<TimerlatView>,
}

/// A thread's timerlat figures as the metrics show them.
#[derive(Debug, Clone, Default)]
pub(crate) struct TimerlatView {
    /// Each context's, in the kernel's order (IRQ, thread, return to user).
    pub contexts: [TimerlatContextView; 3],
    /// Periods the IRQ context saw, read or lost.
    pub periods: u64,
    /// Thread entries whose period's IRQ entry was read.
    pub paired: u64,
    /// Of those, with the IRQ latency above the thread's.
    pub inverted: u64,
}

/// One timerlat context of a thread, as the metrics show it.
#[derive(Debug, Clone, Default)]
pub(crate) struct TimerlatContextView {
    /// Entries.
    pub count: u64,
    /// Their sum (ns).
    pub sum_ns: u64,
    /// p99 (ns).
    pub p99_ns: Option<u64>,
    /// p99.9 (ns).
    pub p999_ns: Option<u64>,
    /// Max (ns).
    pub max_ns: u64,
    /// Entries the trace lost.
    pub lost: u64,
}

/// Who a view belongs to: the labels of its metrics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Identity {
    /// Board name from the hello (`latscope --name`).
    pub board: String,
    /// Run id, 16 hex digits (empty before the hello).
    pub run: String,
    /// Where the stream comes from: the peer's IP address, or the input.
    pub peer: String,
}

/// One target as the live view and the metrics show it.
#[derive(Debug, Clone, Default)]
pub(crate) struct TargetView {
    /// Label (the recording's name).
    pub name: String,
    /// Board, run and peer.
    pub id: Identity,
    /// Host name from the hello.
    pub host: String,
    /// Whether its connection is open.
    pub active: bool,
    /// The run's bye, once it came.
    pub bye: Option<Bye>,
    /// Whether the run is over (bye, timeout, or the recorder stopped):
    /// these are its final figures.
    pub finished: bool,
    /// Threads.
    pub threads: Vec<ThreadView>,
    /// Link statistics.
    pub link: LinkStats,
    /// Run time (ns).
    pub elapsed_ns: u64,
    /// Planned duration (ns, 0 = none).
    pub duration_ns: u64,
    /// Degradations (`--best-effort`).
    pub degraded: Vec<&'static str>,
    /// Devices the target's kernel lacks.
    pub missing: Vec<&'static str>,
    /// Warnings.
    pub warnings: Vec<String>,
}

impl TargetView {
    /// The view of a session's current run, from `peer`.
    pub(crate) fn of(name: &str, peer: &str, s: &Session, active: bool) -> TargetView {
        let mut v = TargetView {
            name: name.to_string(),
            id: Identity {
                peer: peer.to_string(),
                ..Identity::default()
            },
            active,
            link: s.link(),
            warnings: s.warnings(),
            ..TargetView::default()
        };
        let Some(run) = s.agg.current() else {
            return v;
        };
        v.host = run.hostname().to_string();
        v.id.board = super::board_name(&run.hello).to_string();
        v.id.run = format!("{:016x}", run.hello.run_id);
        v.duration_ns = run.hello.config.duration_ns;
        v.degraded = degraded(run);
        v.missing = missing_devices(run);
        v.bye = run.bye;
        let c = &run.hello.config;
        for (i, t) in run.threads.iter().enumerate() {
            let Some(st) = t.stats() else { continue };
            let hist = t.hist();
            v.elapsed_ns = v.elapsed_ns.max(st.elapsed_ns);
            let info = t.info;
            let prio = info.map(|i| i.priority).unwrap_or(c.priority);
            v.threads.push(ThreadView {
                index: i as u16,
                cpu: info.and_then(|i| i.cpu),
                sched: if run.hello_lost {
                    "?".to_string()
                } else if c.policy.is_rt() {
                    format!("{}/{prio}", c.policy.name())
                } else {
                    c.policy.name().to_string()
                },
                cycles: st.cycles,
                count: st.count,
                sum_ns: st.sum,
                min_ns: (st.count > 0).then_some(st.min),
                avg_ns: (st.count > 0).then(|| st.sum as f64 / st.count as f64),
                p99_ns: quantile(&run.layout, &hist, Ppm::P99, st.max),
                p999_ns: quantile(&run.layout, &hist, Ppm::P999, st.max),
                max_ns: st.max,
                missed: st.missed,
                minflt: st.minflt,
                majflt: st.majflt,
                dropped: st.dropped,
                epoch: st.epoch,
                timerlat: t.timerlat_stats().map(|s| TimerlatView {
                    contexts: Context::ALL.map(|c| {
                        let (f, hist) = (s.figures(c), t.timerlat_hist(c));
                        TimerlatContextView {
                            count: f.count,
                            sum_ns: f.sum,
                            p99_ns: quantile(&run.layout, &hist, Ppm::P99, f.max),
                            p999_ns: quantile(&run.layout, &hist, Ppm::P999, f.max),
                            max_ns: f.max,
                            lost: f.lost,
                        }
                    }),
                    periods: s.periods(),
                    paired: s.paired,
                    inverted: s.inverted,
                }),
            });
        }
        if let Some(b) = run.bye {
            v.elapsed_ns = v.elapsed_ns.max(b.elapsed_ns);
        }
        v
    }
}

/// A published view and, once its run has ended, when it goes.
#[derive(Debug)]
struct Entry {
    view: TargetView,
    expires: Option<Instant>,
}

/// Counters of a listening recorder, for its metrics and its last line.
#[derive(Debug, Default)]
pub(crate) struct FleetStats {
    /// Connections open now.
    pub open: AtomicU64,
    /// Connections accepted.
    pub accepted: AtomicU64,
    /// Connections refused: the cap on concurrent connections was reached.
    pub refused_cap: AtomicU64,
    /// Connections refused: the peer is not in the `--allow` list.
    pub refused_allow: AtomicU64,
    /// Connections closed without a hello.
    pub no_hello: AtomicU64,
    /// Runs that ended with a bye.
    pub runs_bye: AtomicU64,
    /// Runs that timed out.
    pub runs_timed_out: AtomicU64,
    /// Runs ended because the recorder stopped.
    pub runs_interrupted: AtomicU64,
    /// Bytes the runs' decoding holds, charged to the recorder's memory
    /// budget (as of the supervisor's last look).
    pub memory: AtomicU64,
    /// Charges the recorder's memory budget refused.
    pub memory_refused: AtomicU64,
    /// Writes or syncs of a recording that failed (a full disk, EIO).
    pub write_errors: AtomicU64,
}

impl FleetStats {
    /// Add one to `c`.
    pub(crate) fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// All targets of this recording session.
#[derive(Debug, Default)]
pub(crate) struct TargetTable {
    views: Mutex<BTreeMap<u64, Entry>>,
    next: AtomicU64,
    /// Fleet counters (listening recorders only).
    pub stats: FleetStats,
    /// Whether the fleet counters apply (a listening recorder).
    pub listening: std::sync::atomic::AtomicBool,
}

impl TargetTable {
    /// A shared, empty board.
    pub(crate) fn new() -> Arc<TargetTable> {
        Arc::new(TargetTable::default())
    }

    /// A new slot for a target.
    pub(crate) fn slot(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, Entry>> {
        super::lock(&self.views)
    }

    /// Publish a target's view.
    pub(crate) fn publish(&self, slot: u64, view: TargetView) {
        self.lock().insert(
            slot,
            Entry {
                view,
                expires: None,
            },
        );
    }

    /// Publish a run's final view, shown for `linger` more.
    pub(crate) fn publish_final(&self, slot: u64, view: TargetView, linger: Duration) {
        self.lock().insert(
            slot,
            Entry {
                view,
                expires: Some(Instant::now() + linger),
            },
        );
    }

    /// Remove the views whose linger has passed.
    pub(crate) fn expire(&self, now: Instant) {
        self.lock().retain(|_, e| e.expires.is_none_or(|t| t > now));
    }

    /// Call `f` with every view, in slot order, without copying them.
    pub(crate) fn with_views<R>(&self, f: impl FnOnce(&[&TargetView]) -> R) -> R {
        let g = self.lock();
        let views: Vec<&TargetView> = g.values().map(|e| &e.view).collect();
        f(&views)
    }

    /// A copy of every view, in slot order.
    pub(crate) fn views(&self) -> Vec<TargetView> {
        self.lock().values().map(|e| e.view.clone()).collect()
    }
}
