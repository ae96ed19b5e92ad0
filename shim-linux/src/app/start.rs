//! Step 2 of a run: the measuring threads start and set themselves up; once
//! all are ready the gate opens, the sender starts, and the main thread
//! waits for the end (step 3, [`super::wait`]).

use std::sync::atomic::Ordering;
use std::thread::{Scope, ScopedJoinHandle};

use heapless::spsc::{Consumer, Producer};
use latscope_core::wire::SpikeSample;

use super::hello::{hello, policy_label};
use super::setup::{Degradations, Handoff, Setup};
use super::wait::{end_rt_wait, wait_at_rt_priority, wait_for_end};
use crate::config::{policy_upper, Config, ThreadPlan};
use crate::error::Error;
use crate::linux::clock::monotonic_ns;
use crate::linux::cpu_set;
use crate::linux::tracefs::Tracer;
use crate::output;
use crate::rt::{self, Phase, Shared, ThreadArgs, VerboseSample};
use crate::sender::{self, Outcome, SnapshotAnswer, View};

/// Stack of the sender thread (unoptimised builds need far more). The
/// release sender touches about half of it with every output it serves
/// (`bench/results/sender-stack.md`); all of it is locked and resident
/// under mlockall, so it is no larger than that plus margin.
const SENDER_STACK: usize = if cfg!(debug_assertions) {
    1024 * 1024
} else {
    96 * 1024
};

/// What the threads of a run hand back.
pub struct Ended {
    /// The sender's figures.
    pub outcome: Outcome,
    /// The thread plan as it turned out (a degraded thread runs unpinned
    /// or at priority 0).
    pub effective: Vec<ThreadPlan>,
}

/// The sender's ends of the queues.
struct Receivers<'q> {
    spikes: Vec<Consumer<'q, SpikeSample>>,
    verbose: Vec<Consumer<'q, VerboseSample>>,
}

/// Run the threads to their end. The set-up's degradations are completed
/// with what the measuring threads met.
pub fn run_threads(cfg: &Config, s: &mut Setup, h: &mut Handoff) -> Result<Ended, Error> {
    let n = s.plans.len();
    let mut spike_tx = Vec::with_capacity(n);
    let mut rx = Receivers {
        spikes: Vec::with_capacity(n),
        verbose: Vec::with_capacity(n),
    };
    for q in h.spike_queues.iter_mut() {
        let (p, c) = q.split();
        spike_tx.push(p);
        rx.spikes.push(c);
    }
    let mut verbose_tx: Vec<Option<Producer<'_, VerboseSample>>> = Vec::with_capacity(n);
    for q in h.verbose_queues.iter_mut() {
        let (p, c) = q.split();
        verbose_tx.push(Some(p));
        rx.verbose.push(c);
    }
    verbose_tx.resize_with(n, || None);
    let (sink, tracer) = (&mut h.sink, &mut h.tracer);
    let mut deg = std::mem::take(&mut s.deg);
    let setup: &Setup = s;
    let ended = std::thread::scope(|scope| {
        start_measuring(scope, setup, spike_tx, verbose_tx)?;
        let views = views(cfg, setup).inspect_err(|_| setup.control.gate.cancel())?;
        announce(cfg, setup);
        collect_degradations(cfg, &setup.shared, &mut deg);
        filter_wakeups(tracer.as_mut(), &setup.shared);
        let effective = effective_plans(&setup.plans, &setup.shared);
        let start_ns = open_gate(
            &setup.control,
            rt::common_start(cfg.align, setup.settings.clock),
        );
        for w in &deg.warnings {
            output::note(&format!("latscope: {w}"));
        }
        let args = sender::Args {
            shared: &setup.shared,
            views,
            plans: effective.clone(),
            nodes: setup.nodes.clone(),
            zone: &setup.zone,
            control: &setup.control,
            spikes: rx.spikes,
            verbose: rx.verbose,
            opts: sender_options(cfg, setup, &deg),
            hello: hello(cfg, setup, &deg),
            warnings: deg.warnings.clone(),
            sink: sink.take(),
            tracer: tracer.take(),
            trace_out: h.trace_out.take(),
            explain_ns: cfg.explain_us * 1000,
            coarse_cpus: setup.coarse_cpus.clone(),
            warmup_ns: cfg.warmup_ns,
            start_ns,
            fifo: setup.fifo.clone(),
        };
        let sender = spawn_sender(scope, setup, args)?;
        if let Some(c) = &setup.mainaffinity {
            let _ = rustix::thread::sched_setaffinity(None, &cpu_set(c));
        }
        let mut answer = setup
            .snapshot
            .as_ref()
            .map(|f| SnapshotAnswer::new(f, &setup.shared, &effective, cfg.nsecs));
        let raised = answer.is_some() && wait_at_rt_priority(cfg.policy, &effective);
        wait_for_end(&setup.control, n, setup.selfcheck.as_ref(), answer.as_mut());
        if raised {
            end_rt_wait();
        }
        let outcome = sender
            .join()
            .map_err(|_| Error::Internal("the sender thread ended without a result"))?;
        Ok(Ended { outcome, effective })
    });
    s.deg = deg;
    ended
}

/// Store the threads' common start (`-A`, `--secaligned`; 0 for none),
/// open the gate, and return the run's start on the monotonic clock. It
/// is read before the gate opens: every thread's own start comes after
/// it, so a run of `-D` reports at least that long. Read after, it lagged
/// the threads' starts whenever they preempted this thread (2.3 ms on an
/// emulated 2-CPU armv7 board), and the run seemed to end early.
fn open_gate(control: &rt::Control, common: i64) -> i64 {
    control.start.store(common, Ordering::SeqCst);
    let start_ns = monotonic_ns();
    control.gate.open();
    start_ns
}

/// `--explain`, before the gate: from the first cycle on, only the
/// measuring threads' wake-ups are recorded.
fn filter_wakeups(tracer: Option<&mut Tracer>, shared: &[Shared]) {
    if let Some(t) = tracer {
        let tids: Vec<u32> = shared
            .iter()
            .filter_map(|s| u32::try_from(s.tid.load(Ordering::SeqCst)).ok())
            .filter(|&t| t != 0)
            .collect();
        t.filter_wakeups(&tids);
    }
}

/// Start one measuring thread per plan and wait until each is set up. On
/// an error (a thread that cannot start or set up) the gate is cancelled
/// and the first error returned.
fn start_measuring<'scope, 'env: 'scope>(
    scope: &'scope Scope<'scope, 'env>,
    s: &'env Setup,
    spike_tx: Vec<Producer<'env, SpikeSample>>,
    verbose_tx: Vec<Option<Producer<'env, VerboseSample>>>,
) -> Result<(), Error> {
    let mut spawned = 0;
    let mut error = None;
    let threads = s.plans.iter().zip(spike_tx).zip(verbose_tx);
    for (i, ((plan, spikes), verbose)) in threads.enumerate() {
        let args = ThreadArgs {
            index: i,
            plan: *plan,
            settings: &s.settings,
            shared: &s.shared[i],
            control: &s.control,
            spikes,
            verbose,
            tracemark: s.tracemark.as_ref(),
        };
        let r = std::thread::Builder::new()
            .stack_size(rt::STACK_BYTES)
            .spawn_scoped(scope, move || rt::run(args));
        match r {
            Ok(_) => spawned += 1,
            Err(e) => {
                error = Some(Error::Thread {
                    what: "a measuring thread",
                    msg: e.to_string(),
                });
                break;
            }
        }
    }
    s.control.gate.wait_for(spawned);
    let error = error.or_else(|| {
        s.shared
            .iter()
            .filter(|t| t.phase.get() == Phase::Failed)
            .find_map(|t| t.take_error())
    });
    match error {
        Some(e) => {
            s.control.gate.cancel();
            Err(e)
        }
        None => Ok(()),
    }
}

/// What cyclictest prints before it measures, once the run is sure to
/// start (a refused privilege leaves standard output empty): with `-v` the
/// CPU counts, and the `/dev/cpu_dma_latency` request on the human output.
fn announce(cfg: &Config, s: &Setup) {
    let mut head = String::new();
    if cfg.verbose {
        let cpus = crate::linux::available_cpus().len();
        head.push_str(&format!("Max CPUs = {cpus}\nOnline CPUs = {cpus}\n"));
    }
    if let Some(us) = s.dma_latency {
        head.push_str(&format!("# /dev/cpu_dma_latency set to {us}us\n"));
    }
    if let Some(line) = &s.idle_limit {
        head.push_str(line);
    }
    s.console.human.write(head.as_bytes());
}

/// The sender's view of each measuring thread, allocated and prefaulted
/// while the threads wait at the gate (before measuring).
fn views(cfg: &Config, s: &Setup) -> Result<Vec<View>, Error> {
    // a loop, not collect::<Result<_, _>>(): its adapter costs the static
    // binary a kilobyte (bench/results/opt-level.md)
    let mut views = Vec::with_capacity(s.shared.len());
    for (i, t) in s.shared.iter().enumerate() {
        let tid = t.tid.load(Ordering::SeqCst);
        let spikes = if cfg.spike_us > 0 { cfg.spike_nodes } else { 0 };
        views.push(View::new(
            i,
            tid,
            s.layout,
            cfg.hist_us,
            spikes,
            cfg.slo.as_ref(),
        )?);
    }
    Ok(views)
}

/// Start the sender thread (pinned to `--mainaffinity`); if it cannot
/// start, the measuring threads are stopped.
fn spawn_sender<'scope, 'env: 'scope>(
    scope: &'scope Scope<'scope, 'env>,
    s: &'env Setup,
    args: sender::Args<'env>,
) -> Result<ScopedJoinHandle<'scope, Outcome>, Error> {
    let cpus = s.mainaffinity.clone();
    std::thread::Builder::new()
        .stack_size(SENDER_STACK)
        .spawn_scoped(scope, move || {
            if let Some(c) = &cpus {
                let _ = rustix::thread::sched_setaffinity(None, &cpu_set(c));
            }
            sender::run(args)
        })
        .map_err(|e| {
            s.control.stop.store(true, Ordering::SeqCst);
            Error::Thread {
                what: "the sender thread",
                msg: e.to_string(),
            }
        })
}

/// The sender's output settings.
fn sender_options(cfg: &Config, s: &Setup, deg: &Degradations) -> sender::Options {
    sender::Options {
        nsecs: cfg.nsecs,
        quiet: cfg.quiet,
        verbose: cfg.verbose,
        spike_ns: cfg.spike_us * 1000,
        spike_nodes: cfg.spike_nodes,
        report_ns: cfg.report_ns as i64,
        console: s.console,
        policy: policy_label(cfg, &deg.flags),
        #[cfg(feature = "proof")]
        self_check_probe: cfg.bench.self_check_probe(),
        refresh_on_max: cfg.refresh_on_max,
        oscope: cfg.oscope,
        unbuffered: cfg.unbuffered,
        files: cfg.json.as_deref().is_some_and(|j| j != "-") || cfg.histfile.is_some(),
    }
}

/// What the measuring threads could not have (`--best-effort`).
fn collect_degradations(cfg: &Config, shared: &[Shared], deg: &mut Degradations) {
    let any = |f: fn(&Shared) -> bool| shared.iter().any(f);
    let no_rt = any(|s| s.no_rt_policy.load(Ordering::SeqCst));
    if no_rt && !deg.flags.no_rt_policy {
        deg.flags.no_rt_policy = true;
        deg.warnings.push(format!(
            "degraded: SCHED_{} refused, measuring at SCHED_OTHER with 1 ns timer slack",
            policy_upper(cfg.policy)
        ));
    }
    let no_aff = any(|s| s.no_affinity.load(Ordering::SeqCst));
    if no_aff && !deg.flags.no_affinity {
        deg.flags.no_affinity = true;
        deg.warnings
            .push("degraded: threads could not be pinned to their CPUs".into());
    }
    if any(|s| s.timer_slack_ns.load(Ordering::SeqCst) > 0) && !no_rt {
        deg.warnings
            .push("non-RT policy: timer slack of the measuring threads set to 1 ns".into());
    }
}

/// The plan as it turned out: a thread without its policy runs at priority
/// 0, one that could not be pinned is unpinned.
fn effective_plans(plans: &[ThreadPlan], shared: &[Shared]) -> Vec<ThreadPlan> {
    plans
        .iter()
        .zip(shared)
        .map(|(p, s)| ThreadPlan {
            priority: if s.no_rt_policy.load(Ordering::SeqCst) {
                0
            } else {
                p.priority
            },
            cpu: if s.no_affinity.load(Ordering::SeqCst) {
                None
            } else {
                p.cpu
            },
            ..*p
        })
        .collect()
}
