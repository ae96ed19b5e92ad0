//! `--explain` on the sender: each spike above the threshold explained by
//! its CPU's trace (the private tracefs instance), or, without tracefs,
//! each thread's worst spike of a report interval by the interrupt and
//! softirq counts its CPU took meanwhile (coarse).

use latscope_core::cyclictest::TraceTotals;
use latscope_core::explain::Attribution;
use latscope_core::wire::{Body, SpikeSample};

use crate::config::ThreadPlan;
use crate::linux::interrupts::ProcInterrupts;
use crate::linux::tracefs::{self, TimerlatCpu, TraceOut, Tracer};

/// Ordinary spikes explained per drain; a spike worse than any explained
/// in its interval is explained beyond it, as far as the line's share has
/// room.
const EXPLAIN_PER_TICK: usize = 8;

/// The sender's attribution state.
pub struct Attributor {
    tracer: Option<Tracer>,
    explain_ns: u64,
    /// Without tracefs: the pinned CPUs whose counters explain spikes.
    coarse_cpus: Vec<usize>,
    /// Coarse attribution: counters at the last report.
    proc_prev: Option<ProcInterrupts>,
    /// Coarse attribution: the largest spike of each thread this interval.
    worst: Vec<Option<SpikeSample>>,
    /// Spikes explained in this drain.
    explained: usize,
    /// What the trace did, once it is closed.
    totals: Option<TraceTotals>,
    /// `--trace-out`: each thread's worst explained spike of an interval
    /// as a trace.dat.
    out: Option<TraceOut>,
    /// What `--trace-out` did, once it is closed.
    out_totals: Option<tracefs::trace_out::Totals>,
    /// `--timerlat`: each CPU's timerlat entries, once the trace is closed.
    timerlat: Vec<(usize, TimerlatCpu)>,
}

impl Attributor {
    /// Attribution of `threads` threads' spikes above `explain_ns` (0: off),
    /// by `tracer`, or else coarsely on `coarse_cpus`.
    pub fn new(
        tracer: Option<Tracer>,
        explain_ns: u64,
        coarse_cpus: Vec<usize>,
        threads: usize,
        out: Option<TraceOut>,
    ) -> Attributor {
        let proc_prev = if coarse_cpus.is_empty() {
            None
        } else {
            ProcInterrupts::read(&coarse_cpus)
        };
        Attributor {
            tracer,
            explain_ns,
            coarse_cpus,
            proc_prev,
            worst: vec![None; threads],
            explained: 0,
            totals: None,
            out,
            out_totals: None,
            timerlat: Vec::new(),
        }
    }

    /// A flagged sample of thread `t`: without tracefs, the interval's
    /// worst of each thread is kept for [`Attributor::coarse`].
    pub fn note(&mut self, t: usize, r: &SpikeSample) {
        if self.proc_prev.is_some() && self.is_spike(r) {
            let w = &mut self.worst[t];
            if w.is_none_or(|w| w.latency_ns < r.latency_ns) {
                *w = Some(*r);
            }
        }
    }

    /// Whether `r` is a spike above the threshold.
    fn is_spike(&self, r: &SpikeSample) -> bool {
        r.flags.spike && r.latency_ns.max(0) as u64 >= self.explain_ns
    }

    /// Whether `r` is a spike the trace can explain: `Some(true)` if this
    /// drain may read one more ordinary spike's window, `Some(false)` if
    /// only the interval's worst may still be read, `None` if the trace
    /// cannot explain it at all.
    pub fn can_explain(&self, r: &SpikeSample) -> Option<bool> {
        (self.tracer.is_some() && self.explain_ns > 0 && self.is_spike(r))
            .then_some(self.explained < EXPLAIN_PER_TICK)
    }

    /// Whether the trace may still hold `r`'s window, on `cpu` (see
    /// [`Tracer::may_hold`]).
    pub fn may_hold(&self, r: &SpikeSample, cpu: Option<usize>) -> bool {
        let deadline = r.deadline_ns.max(0) as u64;
        self.tracer
            .as_ref()
            .is_none_or(|t| t.may_hold(cpu, deadline))
    }

    /// Explain `r` of thread `t` from the trace (the caller asked
    /// [`Attributor::can_explain`]): of the thread pinned to `cpu`, or
    /// unpinned with kernel id `tid`. With `--trace-out`, a spike worse
    /// than the thread's worst of the interval so far keeps its evidence.
    pub fn explain(
        &mut self,
        t: usize,
        r: &SpikeSample,
        cpu: Option<usize>,
        tid: i32,
    ) -> Option<Attribution> {
        let tracer = self.tracer.as_mut()?;
        self.explained += 1;
        let ns = r.latency_ns.max(0) as u64;
        let deadline = r.deadline_ns.max(0) as u64;
        let tid = u32::try_from(tid).ok().filter(|&t| t != 0);
        let a = match cpu {
            Some(cpu) => tracer.explain(cpu, tid, deadline, deadline + ns, r.cycle),
            None => tracer.explain_unpinned(tid.unwrap_or(0), deadline, deadline + ns, r.cycle),
        };
        if let Some(out) = self.out.as_mut() {
            if a.cpu != u32::MAX && a.latency_ns > 0 && out.wants(t, a.latency_ns) {
                let mut e = tracer.evidence(a.cpu, deadline, deadline + ns, Vec::new());
                e.head.thread = u16::try_from(t).unwrap_or(u16::MAX);
                e.head.tid = tid.unwrap_or(0);
                e.head.cycle = r.cycle;
                out.keep(t, e);
            }
        }
        Some(a)
    }

    /// Thread `t`'s report: its worst evidence of the interval goes to
    /// `--trace-out`'s writer and the stream's outbox.
    pub fn report(&mut self, t: usize) {
        if let Some(out) = self.out.as_mut() {
            out.flush(t);
        }
    }

    /// The next frame of the evidence being streamed, if one waits.
    pub fn next_evidence_frame(&mut self) -> Option<Body> {
        self.out.as_mut().filter(|o| o.streaming())?.next_frame()
    }

    /// Whether evidence waits to be streamed.
    pub fn evidence_waits(&self) -> bool {
        self.out.as_ref().is_some_and(TraceOut::streaming)
    }

    /// The end of a drain: the next may explain as many again.
    pub fn drained(&mut self) {
        self.explained = 0;
    }

    /// Without tracefs, at each report: each thread's worst spike of the
    /// interval, explained by what its CPU counted meanwhile.
    pub fn coarse(&mut self, plans: &[ThreadPlan], mut out: impl FnMut(Attribution)) {
        let Some(prev) = self.proc_prev.as_ref() else {
            return;
        };
        let Some(now) = ProcInterrupts::read(&self.coarse_cpus) else {
            return;
        };
        for (worst, plan) in self.worst.iter_mut().zip(plans) {
            let (Some(r), Some(cpu)) = (worst.take(), plan.cpu) else {
                continue;
            };
            let deadline = r.deadline_ns.max(0) as u64;
            out(prev.delta(&now, cpu, r.cycle, deadline, r.latency_ns.max(0) as u64));
        }
        self.proc_prev = Some(now);
    }

    /// The measuring threads are gone and their last spikes explained:
    /// stop the reader, remove the trace instance, keep its totals.
    pub fn close(&mut self) {
        if let Some(out) = self.out.take() {
            self.out_totals = Some(out.close());
        }
        if let Some(t) = self.tracer.take() {
            // the threads closed their timerlat_fd: the last entries are in
            self.timerlat = t.timerlat();
            let totals = t.totals();
            self.totals = Some(t.close().unwrap_or(totals));
        }
    }

    /// What `--trace-out` did (after [`Attributor::close`]).
    pub fn out_totals(&mut self) -> Option<tracefs::trace_out::Totals> {
        self.out_totals.take()
    }

    /// `--timerlat`: each CPU's timerlat entries (after
    /// [`Attributor::close`]).
    pub fn take_timerlat(&mut self) -> Vec<(usize, TimerlatCpu)> {
        std::mem::take(&mut self.timerlat)
    }

    /// What the trace did (after [`Attributor::close`]).
    pub fn totals(&self) -> Option<TraceTotals> {
        self.totals
    }
}
