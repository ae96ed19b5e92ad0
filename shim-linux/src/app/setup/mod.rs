//! Step 1 of a run: everything it needs, acquired and allocated (and so
//! locked) before any thread starts, and what cyclictest's start-up says
//! and creates besides ([`cyclictest`]). A missing privilege stops the run
//! here, or with `--best-effort` becomes a degradation the output and the
//! stream report.

use std::path::Path;

use latscope_core::cycle::CycleConfig;
use latscope_core::layout::Layout;
use latscope_core::tz::WallTime;
use latscope_core::wire::{Degraded, WakeMode};
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::bench;
use crate::config::{self, Config, ThreadPlan};
use crate::error::Error;
use crate::link::Sink;
use crate::linux::clock::LinuxClock;
use crate::linux::cpuidle::{self, IdleLimit};
use crate::linux::exit::Held;
use crate::linux::localtime::LocalZone;
use crate::linux::seccomp::SelfCheck;
use crate::linux::status_files::Snapshot;
use crate::linux::sys::{self, sig, sigbit};
use crate::linux::tracefs::{
    self, NoTracefs, Outputs, TraceOut, Tracefs, Tracemark, Tracer, MOUNT_POINT,
};
use crate::linux::{self, hold_dma_latency, procfs, timerlat};
use crate::output::Console;
use crate::rt::{self, Control, LoopSettings, Shared, SpikeQueue, TimerlatLoop, VerboseQueue};

pub(super) mod cyclictest;

/// glibc's heap grows by exactly what is asked (its default pad, 128 KiB,
/// would all be locked and resident under mlockall). Only start-up and the
/// non-RT sender allocate, so the extra brk calls cost nothing measured.
const MALLOC_TOP_PAD: i32 = 0;

/// The signals latscope handles synchronously in its main thread.
pub const SIGNALS: sys::SigSet =
    sigbit(sig::INT) | sigbit(sig::TERM) | sigbit(sig::USR1) | sigbit(sig::USR2) | sigbit(sig::HUP);
/// Blocked too, in every thread: the timer signal of `-x`, which each
/// measuring thread takes itself.
const TIMER_SIGNAL: sys::SigSet = sigbit(sig::ALRM);

/// What the run does without, and the warnings that say so.
#[derive(Default)]
pub struct Degradations {
    /// For the hello.
    pub flags: Degraded,
    /// One line each, for stderr and the stream.
    pub warnings: Vec<String>,
    /// Devices this kernel does not have (not a degradation: nothing was
    /// given up, there is nothing to hold).
    pub missing_devices: Vec<&'static str>,
}

/// Everything a run holds before its threads start.
pub struct Setup {
    /// The local time zone, for the start and end times.
    pub zone: LocalZone,
    /// When the run started (the hello and `--json`).
    pub started: WallTime,
    /// The measuring threads as planned.
    pub plans: Vec<ThreadPlan>,
    /// The NUMA node of each planned thread as cyclictest reports it.
    pub nodes: Vec<i32>,
    /// The histogram layout (`-h`/`-H` above 1000 widens its 1 µs range).
    pub layout: Layout,
    /// `--mainaffinity`, resolved.
    pub mainaffinity: Option<Vec<usize>>,
    /// What is degraded so far.
    pub deg: Degradations,
    /// The value held in `/dev/cpu_dma_latency`, if held.
    pub dma_latency: Option<i32>,
    /// `--deepest-idle-state`'s line for the human output, if it limited
    /// the idle states.
    pub idle_limit: Option<String>,
    /// latscope mounted tracefs for `--explain` or `--tracemark`.
    pub tracefs_mounted: bool,
    /// `--tracemark`.
    pub tracemark: Option<Tracemark>,
    /// `--explain` without tracefs: the CPUs to explain coarsely.
    pub coarse_cpus: Vec<usize>,
    /// Per-thread shared state.
    pub shared: Vec<Shared>,
    /// Run control.
    pub control: Control,
    /// What every measuring thread shares.
    pub settings: LoopSettings,
    /// `--self-check`.
    pub selfcheck: Option<SelfCheck>,
    /// Where the human output goes.
    pub console: Console,
    /// `/dev/shm/cyclictest<PID>`, if it could be made.
    pub snapshot: Option<Snapshot>,
    /// `-F`: the named pipe, if it could be made.
    pub fifo: Option<String>,
    /// `--json` and `--histfile`, opened before measuring.
    pub files: Files,
}

/// The output files of a run, opened before it measures: a bad path stops
/// the run at once instead of throwing its measurement away at the end.
#[derive(Default)]
pub struct Files {
    /// `--json FILE` (not `-`).
    pub json: Option<OwnedFd>,
    /// `--histfile FILE`.
    pub histfile: Option<OwnedFd>,
}

impl Files {
    /// Create (or truncate) the files `cfg` names.
    pub fn open(cfg: &Config) -> Result<Files, Error> {
        let create = |opt: &str, path: &str| {
            rustix::fs::open(
                path,
                OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o644),
            )
            .map_err(|e| Error::output(format!("{opt} {path}"), e))
        };
        Ok(Files {
            json: match cfg.json.as_deref() {
                Some("-") | None => None,
                Some(p) => Some(create("--json", p)?),
            },
            histfile: cfg
                .histfile
                .as_deref()
                .map(|p| create("--histfile", p))
                .transpose()?,
        })
    }
}

/// What a run hands to its threads when they start.
pub struct Handoff {
    /// `--explain`: the trace instance, for the sender.
    pub tracer: Option<Tracer>,
    /// `--trace-out`: the evidence writer, for the sender.
    pub trace_out: Option<TraceOut>,
    /// Per-thread spike queues.
    pub spike_queues: Vec<SpikeQueue>,
    /// Per-thread `-v` queues (none without `-v`).
    pub verbose_queues: Vec<Box<VerboseQueue>>,
    /// The stream, for the sender (it stays here if the sender never
    /// starts, so that the stream still learns why).
    pub sink: Option<Sink>,
}

impl Setup {
    /// Acquire everything, in order; what is held goes into `held` for
    /// the exit discipline.
    pub fn prepare(cfg: &Config, held: &mut Held) -> Result<(Setup, Handoff), Error> {
        // one small allocator heap: nothing locked for arenas no thread uses
        sys::malloc_single_arena(MALLOC_TOP_PAD);
        // before any thread exists (threads inherit the mask)
        sys::block_signals(SIGNALS | TIMER_SIGNAL)
            .map_err(|e| Error::sys("blocking signals", e))?;
        cyclictest::check_smi(cfg)?;
        // the vDSO clock, whose first call can allocate
        let clock = LinuxClock::new(cfg.clock);
        clock.warm_up();
        let zone = LocalZone::load();
        let started = zone.now();
        let available = linux::available_cpus();
        let plans = config::plan(cfg, &available)?;
        let mainaffinity = config::mainaffinity(cfg, &available)?;
        cyclictest::plan_facts(cfg, &plans);
        cyclictest::resolution(cfg, &clock);
        let layout = Layout::for_hist_us(cfg.hist_us)
            .ok_or_else(|| Error::usage(format!("-h {}: above latscope's cap", cfg.hist_us)))?;
        // the outputs first: a bad path ends the run before anything else
        let files = Files::open(cfg)?;
        let sink = cfg.stream.as_ref().map(Sink::open).transpose()?;
        let console = Console::of(cfg);
        let mut deg = Degradations::default();
        lock_memory(cfg, held, &mut deg)?;
        if cfg.bench.ballast_mib() > 0 {
            held.ballast = bench::ballast(cfg.bench.ballast_mib());
        }
        let dma_latency = dma_latency(cfg, held, &mut deg)?;
        let idle_limit = idle_limit(cfg, &plans, &available, held, &mut deg)?;
        let snapshot = cyclictest::snapshot();
        let fifo = cyclictest::fifo(cfg);
        let tracefs = find_or_mount_tracefs(cfg, &mut deg);
        let tracemark = open_tracemark(cfg, tracefs.as_ref(), &mut deg);
        let timerlat = open_timerlat(cfg, &plans, tracefs.as_ref(), layout, held, &mut deg)?;
        let timerlat_loop = timerlat.as_ref().map(|(l, _)| l.clone());
        let tracer = match timerlat {
            Some((_, t)) => Some(t),
            None => open_explain(cfg, &plans, tracefs.as_ref(), &mut deg),
        };
        let tracefs_mounted = tracefs.is_some_and(|t| t.is_ok_and(|t| t.mounted));
        let coarse_cpus = coarse_cpus(cfg, &plans, tracer.is_some());
        let trace_out = open_trace_out(cfg, tracer.as_ref(), plans.len(), &mut deg)?;
        let n = plans.len();
        let mut settings = loop_settings(cfg, clock);
        // --best-effort without the tracer: the default mode, said so
        if timerlat_loop.is_none() && settings.wake == WakeMode::Timerlat {
            settings.wake = WakeMode::Absolute;
        }
        settings.timerlat = timerlat_loop;
        // the filter goes on now, inherited by every thread
        let selfcheck = cfg.self_check.then(SelfCheck::install).transpose()?;
        let handoff = Handoff {
            tracer,
            trace_out,
            spike_queues: (0..n).map(|_| rt::spike_queue()).collect(),
            verbose_queues: (0..if cfg.verbose { n } else { 0 })
                .map(|_| rt::verbose_queue())
                .collect(),
            sink,
        };
        let mut shared = Vec::with_capacity(n);
        for _ in 0..n {
            shared.push(Shared::new(layout)?);
        }
        let setup = Setup {
            zone,
            started,
            nodes: nodes(cfg, &plans),
            plans,
            layout,
            mainaffinity,
            deg,
            dma_latency,
            idle_limit,
            tracefs_mounted,
            tracemark,
            coarse_cpus,
            shared,
            control: Control::new(),
            settings,
            selfcheck,
            console,
            snapshot,
            fifo,
            files,
        };
        Ok((setup, handoff))
    }
}

/// `mlockall`, unless `--no-mlock`.
fn lock_memory(cfg: &Config, held: &mut Held, deg: &mut Degradations) -> Result<(), Error> {
    use rustix::mm::MlockAllFlags;
    if !cfg.mlock {
        return Ok(());
    }
    match rustix::mm::mlockall(MlockAllFlags::CURRENT | MlockAllFlags::FUTURE) {
        Ok(()) => held.locked = true,
        Err(_) if cfg.best_effort => {
            deg.flags.no_mlock = true;
            deg.warnings
                .push("degraded: memory not locked (page faults count as latency)".into());
        }
        Err(e) => {
            return Err(Error::privilege(
                format!(
                    "mlockall failed: {e} (needs CAP_IPC_LOCK or a RLIMIT_MEMLOCK above the process size)"
                ),
                "--no-mlock (or --best-effort)",
            ))
        }
    }
    Ok(())
}

/// cyclictest's `node` of each planned thread: -1 under `-S` (cyclictest
/// then leaves NUMA alone), for an unpinned thread, and on a kernel without
/// NUMA; else the node of its CPU.
fn nodes(cfg: &Config, plans: &[ThreadPlan]) -> Vec<i32> {
    plans
        .iter()
        .map(|p| match p.cpu {
            Some(cpu) if !cfg.smp => linux::numa_node(cpu).unwrap_or(-1),
            _ => -1,
        })
        .collect()
}

/// `--deepest-idle-state`: the measured CPUs' deeper idle states
/// disabled (all available CPUs if a thread is not pinned), held for the
/// exit discipline to write back; the line that says so.
fn idle_limit(
    cfg: &Config,
    plans: &[ThreadPlan],
    available: &[usize],
    held: &mut Held,
    deg: &mut Degradations,
) -> Result<Option<String>, Error> {
    let Some(deepest) = cfg.deepest_idle_state else {
        return Ok(None);
    };
    let cpus = match plans.iter().map(|p| p.cpu).collect::<Option<Vec<_>>>() {
        Some(pinned) => linux::ascending(pinned),
        None => linux::ascending(available.iter().copied()),
    };
    let limit = IdleLimit::apply(
        Path::new(cpuidle::SYSFS),
        Path::new(cpuidle::SAVE_DIR),
        std::process::id(),
        &cpus,
        deepest,
    );
    match limit {
        Ok(l) => {
            let line = format!(
                "# idle states deeper than {deepest} disabled on CPUs {} ({} of them)\n",
                l.cpus(),
                l.disabled
            );
            held.idle = Some(l);
            Ok(Some(line))
        }
        Err(Error::Privilege { what, .. }) if cfg.best_effort => {
            deg.warnings
                .push(format!("degraded: idle states not limited ({what})"));
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The PM QoS device of the CPUs' idle-state latency.
const DMA_LATENCY: &str = "/dev/cpu_dma_latency";

/// The `/dev/cpu_dma_latency` request, unless `--default-system`.
fn dma_latency(
    cfg: &Config,
    held: &mut Held,
    deg: &mut Degradations,
) -> Result<Option<i32>, Error> {
    if cfg.default_system {
        // cyclictest's words for its two spellings
        if cfg.laptop {
            eprintln!("latscope: not setting cpu_dma_latency to save battery power");
        } else {
            eprintln!("latscope: not setting cpu_dma_latency (--default-system)");
        }
        return Ok(None);
    }
    if cfg.deepest_idle_state.is_some() {
        // cyclictest 2.8's words
        eprintln!("latscope: not setting cpu_dma_latency, --deepest-idle-state is set instead");
        return Ok(None);
    }
    match hold_dma_latency(cfg.latency_us) {
        Ok(fd) => {
            held.dma = Some(fd);
            return Ok(Some(cfg.latency_us));
        }
        Err(Errno::NOENT) => {
            deg.flags.no_dma_latency = true;
            deg.flags.no_dma_latency_device = true;
            deg.missing_devices.push(DMA_LATENCY);
            deg.warnings.push(format!(
                "no {DMA_LATENCY} on this kernel: CPU idle states unchanged"
            ));
        }
        Err(e) if cfg.best_effort => {
            deg.flags.no_dma_latency = true;
            deg.warnings.push(format!(
                "degraded: /dev/cpu_dma_latency not held ({e}): deep idle states stay allowed"
            ));
        }
        Err(e) => {
            return Err(Error::privilege(
                format!("opening /dev/cpu_dma_latency for writing failed: {e}"),
                "--default-system (or --best-effort)",
            ))
        }
    }
    Ok(None)
}

/// tracefs, if `--explain` or `--tracemark` needs it (`None` if neither
/// does): the mounted one, or one mounted now, which the log says.
fn find_or_mount_tracefs(
    cfg: &Config,
    deg: &mut Degradations,
) -> Option<Result<Tracefs, NoTracefs>> {
    if cfg.explain_us == 0 && !cfg.tracemark && !cfg.timerlat {
        return None;
    }
    let t = Tracefs::find_or_mount();
    if let Ok(Tracefs { mounted: true, .. }) = t {
        deg.warnings.push(format!(
            "tracefs was not mounted: mounted it at {MOUNT_POINT} (it stays mounted)"
        ));
    }
    Some(t)
}

/// `--tracemark`: the top-level marker and switch of tracefs.
fn open_tracemark(
    cfg: &Config,
    tracefs: Option<&Result<Tracefs, NoTracefs>>,
    deg: &mut Degradations,
) -> Option<Tracemark> {
    if !cfg.tracemark {
        return None;
    }
    let why = match tracefs {
        Some(Ok(t)) => match Tracemark::open(&t.root) {
            Some(m) => return Some(m),
            None => format!("cannot open trace_marker in {}", t.root.display()),
        },
        Some(Err(e)) => e.to_string(),
        None => "tracefs was not looked for".to_string(),
    };
    deg.warnings
        .push(format!("--tracemark: {why}; no trace marker written"));
    None
}

/// `--timerlat`: the global settings saved and set, and the trace instance
/// with the timerlat tracer (and, with `--explain`, the classifier's
/// events), read continuously; with the tracefs root the measuring
/// threads open their `timerlat_fd` under. A kernel without the tracer or
/// the files ends the run with one line, or with `--best-effort` the run
/// measures with `clock_nanosleep` and says so. Another user of the
/// osnoise or timerlat tracer always ends it.
///
/// # Errors
///
/// [`Error::Unavailable`], [`Error::Privilege`].
fn open_timerlat(
    cfg: &Config,
    plans: &[ThreadPlan],
    tracefs: Option<&Result<Tracefs, NoTracefs>>,
    layout: Layout,
    held: &mut Held,
    deg: &mut Degradations,
) -> Result<Option<(TimerlatLoop, Tracer)>, Error> {
    if !cfg.timerlat {
        return Ok(None);
    }
    let cpus = linux::ascending(plans.iter().filter_map(|p| p.cpu));
    let root = match tracefs {
        Some(Ok(t)) => timerlat::check_kernel(&t.root, &cpus).map(|()| t.root.clone()),
        Some(Err(e)) => Err(Error::Unavailable(format!("--timerlat: {e}"))),
        None => Err(Error::Internal("--timerlat without a tracefs lookup")),
    };
    let root = match root {
        Ok(root) => root,
        Err(Error::Unavailable(why)) if cfg.best_effort => {
            deg.warnings.push(format!(
                "degraded: {why}; measured with clock_nanosleep instead (--best-effort), \
                 without IRQ, thread or return-to-user latency"
            ));
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let pid = std::process::id();
    if let Some(other) = timerlat::running_beside(Path::new(timerlat::SAVE_DIR), pid) {
        return Err(Error::Unavailable(format!(
            "--timerlat: latscope {other} runs the timerlat tracer already \
             (its settings are global: one such run at a time)"
        )));
    }
    if let Some(other) = timerlat::other_user(&root, &format!("latscope-{pid}")) {
        return Err(Error::Unavailable(format!(
            "--timerlat: {other} runs the osnoise or timerlat tracer \
             (their settings are global: one user at a time)"
        )));
    }
    let period_us = cfg.interval_us;
    held.timerlat = Some(timerlat::Globals::apply(
        &root,
        Path::new(timerlat::SAVE_DIR),
        pid,
        &cpus,
        period_us,
    )?);
    let kb = tracefs::buffer_kb(cfg.trace_buffer_kb, procfs::mem_total_kb(), cpus.len());
    let explain = (cfg.explain_us > 0).then_some(cfg.explain_us * 1000);
    let rtla = cfg.rtla.map(|r| r.shape);
    let period_ns = cfg.interval_us.saturating_mul(1000);
    let tracer = Tracer::open_timerlat(&root, &cpus, explain, kb, layout, rtla, period_ns)?;
    let starts = tracer.grid_starts();
    Ok(Some((TimerlatLoop { root, starts }, tracer)))
}

/// `--explain`: the trace instance, read continuously. It traces the
/// pinned threads' CPUs, and every CPU the process may run on if a thread
/// is unpinned (its spikes are explained on the CPU it woke on).
fn open_explain(
    cfg: &Config,
    plans: &[ThreadPlan],
    tracefs: Option<&Result<Tracefs, NoTracefs>>,
    deg: &mut Degradations,
) -> Option<Tracer> {
    if cfg.explain_us == 0 {
        return None;
    }
    let mut cpus: Vec<usize> = plans.iter().filter_map(|p| p.cpu).collect();
    if plans.iter().any(|p| p.cpu.is_none()) {
        cpus.extend(linux::available_cpus());
    }
    let cpus = linux::ascending(cpus);
    let opened = match tracefs {
        Some(Ok(t)) => {
            let kb = tracefs::buffer_kb(cfg.trace_buffer_kb, procfs::mem_total_kb(), cpus.len());
            Tracer::open(&t.root, &cpus, cfg.explain_us * 1000, kb)
        }
        Some(Err(e)) => Err(Error::Unavailable(e.to_string())),
        None => Err(Error::Internal("--explain without a tracefs lookup")),
    };
    match opened {
        Ok(t) => {
            let (asked, set) = t.buffer_kb();
            if set < asked {
                deg.warnings.push(format!(
                    "--trace-buffer-size: {asked} KiB per CPU refused (ENOMEM); {set} KiB"
                ));
            }
            Some(t)
        }
        Err(e) => {
            deg.warnings.push(format!(
                "--explain: no trace instance: {e}; coarse attribution from /proc/interrupts and /proc/softirqs per report interval"
            ));
            None
        }
    }
}

/// `--trace-out DIR` and `--trace-out-stream`: the directory made and the
/// writer started, for `threads` measuring threads, where the run traces;
/// without a trace instance, a warning.
///
/// # Errors
///
/// The directory cannot be made.
fn open_trace_out(
    cfg: &Config,
    tracer: Option<&Tracer>,
    threads: usize,
    deg: &mut Degradations,
) -> Result<Option<TraceOut>, Error> {
    if cfg.trace_out.is_none() && !cfg.trace_out_stream {
        return Ok(None);
    }
    let Some(tracer) = tracer else {
        deg.warnings
            .push("--trace-out: no evidence taken: the run has no trace instance".into());
        return Ok(None);
    };
    let outputs = Outputs {
        dir: cfg.trace_out.clone(),
        stream: cfg.trace_out_stream,
    };
    let header = tracer.dat_header().clone();
    let run_on = tracer.untraced_cpus();
    TraceOut::start(outputs, cfg.trace_out_limits, header, run_on, threads)
        .map(Some)
        .map_err(|e| {
            let dir = cfg.trace_out.as_deref().unwrap_or_default();
            Error::output(format!("--trace-out {dir}"), e)
        })
}

/// `--explain` without a trace instance: the pinned CPUs, explained
/// coarsely.
fn coarse_cpus(cfg: &Config, plans: &[ThreadPlan], traced: bool) -> Vec<usize> {
    if cfg.explain_us == 0 || traced {
        return Vec::new();
    }
    linux::ascending(plans.iter().filter_map(|p| p.cpu))
}

/// What every measuring thread shares (the interval is set per thread).
fn loop_settings(cfg: &Config, clock: LinuxClock) -> LoopSettings {
    LoopSettings {
        policy: cfg.policy,
        deadline: cfg.deadline_ns(),
        best_effort: cfg.best_effort,
        exit_demote: !cfg.bench.no_exit_demote(),
        cycle: CycleConfig {
            interval_ns: cfg.interval_us * 1000,
            warmup_cycles: 0,
            warmup_ns: cfg.warmup_ns,
            loops: cfg.loops,
            duration_ns: cfg.duration_ns,
            break_ns: cfg.break_us * 1000,
            spike_ns: cfg.flag_us() * 1000,
            overflow_ns: cfg.hist_us as u64 * 1000,
        },
        wake: cfg.wake,
        align: cfg.align,
        clock,
        timerlat: None,
    }
}
