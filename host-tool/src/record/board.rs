//! The shared state of a recording session: one view per target, published
//! by the connection threads and read by the live view and the metrics
//! server.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use latscope_core::stats::{quantile, Ppm};
use latscope_core::wire::LinkStats;

use crate::report::text::{degraded, ending};
use crate::session::Session;

/// One thread as the live view and the metrics show it.
#[derive(Debug, Clone, Default)]
pub struct ThreadView {
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
}

/// One target as the live view and the metrics show it.
#[derive(Debug, Clone, Default)]
pub struct TargetView {
    /// Label (the recording's name).
    pub name: String,
    /// Host name from the hello.
    pub host: String,
    /// Whether its connection is open.
    pub active: bool,
    /// How the run ended, once it did.
    pub ended: Option<String>,
    /// Threads.
    pub threads: Vec<ThreadView>,
    /// Link statistics.
    pub link: LinkStats,
    /// Run time (ns).
    pub elapsed_ns: u64,
    /// Planned duration (ns, 0 = none).
    pub duration_ns: u64,
    /// Degradations.
    pub degraded: Vec<&'static str>,
    /// Warnings.
    pub warnings: Vec<String>,
}

impl TargetView {
    /// The view of a session's current run.
    pub fn of(name: &str, s: &Session, active: bool) -> TargetView {
        let mut v = TargetView {
            name: name.to_string(),
            active,
            link: s.link(),
            warnings: s.warnings(),
            ..TargetView::default()
        };
        let Some(run) = s.agg.current() else {
            return v;
        };
        v.host = run.hostname().to_string();
        v.duration_ns = run.hello.config.duration_ns;
        v.degraded = degraded(run);
        if run.bye.is_some() {
            v.ended = Some(ending(run));
        }
        let c = &run.hello.config;
        for (i, t) in run.threads.iter().enumerate() {
            let Some(st) = t.stats else { continue };
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
                p99_ns: quantile(&run.layout, &t.hist, Ppm::P99, st.max),
                p999_ns: quantile(&run.layout, &t.hist, Ppm::P999, st.max),
                max_ns: st.max,
                missed: st.missed,
                minflt: st.minflt,
                majflt: st.majflt,
                dropped: st.dropped,
                epoch: st.epoch,
            });
        }
        if let Some(b) = run.bye {
            v.elapsed_ns = v.elapsed_ns.max(b.elapsed_ns);
        }
        v
    }
}

/// All targets of this recording session.
#[derive(Debug, Default)]
pub struct Board {
    views: Mutex<BTreeMap<u64, TargetView>>,
    next: AtomicU64,
}

impl Board {
    /// A shared, empty board.
    pub fn new() -> Arc<Board> {
        Arc::new(Board::default())
    }

    /// A new slot for a target.
    pub fn slot(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, TargetView>> {
        // A panicked publisher leaves a usable map behind.
        self.views.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Publish a target's view.
    pub fn publish(&self, slot: u64, v: TargetView) {
        self.lock().insert(slot, v);
    }

    /// A copy of every view, in slot order.
    pub fn views(&self) -> Vec<TargetView> {
        self.lock().values().cloned().collect()
    }
}
