//! One run, in the order the issue fixes: parse, block signals, warm the
//! clock, lock memory, hold the DMA latency request, start the measuring
//! threads (each pins itself, sets its policy and prefaults), then report
//! until the end, and leave through the exit discipline.

use std::sync::atomic::Ordering;

use latscope_core::cycle::CycleConfig;
use latscope_core::layout::Layout;
use latscope_core::wire::{
    bounded, Body, Bye, ByeReason, Degraded, Encoder, Hello, Level, LogLine, Policy, RunConfig,
    ThreadInfo, SCHEMA_KEY,
};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Mode, OFlags};

use crate::config::cpus::{self, ThreadPlan};
use crate::config::parse::{self as cli, Action, Config};
use crate::error::{Error, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::link::{self as stream, Sink};
use crate::linux::clock::{monotonic_ns, realtime_s, timespec, LinuxClock};
use crate::linux::exit::{self, Held};
use crate::linux::procfs;
use crate::linux::seccomp::SelfCheck;
use crate::linux::sys::{self, sig, sigbit};
use crate::linux::tracefs as explain;
use crate::output::json;
use crate::output::text as human;
use crate::report::{self as sender, Outcome};
use crate::rt::{
    self as measure, Control, LoopSettings, Shared, SpikeQueue, ThreadArgs, VerboseQueue,
};

/// The program: parse, run, leave. Never returns.
pub fn main_entry() -> ! {
    let pid1 = crate::linux::pid1::is_pid1();
    exit::set_pid1(pid1);
    if pid1 {
        crate::linux::pid1::mount_basics();
    }
    exit::install_panic_hook();
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let status = match cli::parse(&args) {
        Ok(Action::Help) => {
            let _ = stream::write_all(rustix::stdio::stdout(), cli::HELP.as_bytes());
            EXIT_OK
        }
        Ok(Action::Version) => {
            let v = format!("latscope {}\n", env!("CARGO_PKG_VERSION"));
            let _ = stream::write_all(rustix::stdio::stdout(), v.as_bytes());
            EXIT_OK
        }
        Ok(Action::Run(cfg)) => run(&cfg),
        Err(e) => {
            eprintln!("latscope: {e}");
            EXIT_USAGE
        }
    };
    exit::leave(status)
}

/// Stack of the sender thread (unoptimised builds need far more). The
/// release sender touches at most 52 KiB of it (measured with --explain,
/// --json, -h, --spike, -v and --self-check, unlocked); all of it is locked
/// and resident under mlockall, so it is no larger than that plus margin.
const SENDER_STACK: usize = if cfg!(debug_assertions) {
    1024 * 1024
} else {
    96 * 1024
};

/// glibc's heap grows by exactly what is asked (its default pad, 128 KiB,
/// would all be locked and resident under mlockall). Only start-up and the
/// non-RT sender allocate, so the extra brk calls cost nothing measured.
const MALLOC_TOP_PAD: i32 = 0;

/// The signals latscope handles synchronously in its main thread.
const SIGNALS: sys::SigSet =
    sigbit(sig::INT) | sigbit(sig::TERM) | sigbit(sig::USR1) | sigbit(sig::HUP);

/// Run a measurement; returns the exit status. Every path after the
/// threads started goes through [`exit::teardown`].
pub fn run(cfg: &Config) -> i32 {
    let mut held = Held {
        demote: !cfg.no_exit_demote,
        ..Held::default()
    };
    let status = match run_inner(cfg, &mut held) {
        Ok(status) => status,
        Err(e) => {
            eprintln!("latscope: {e}");
            e.exit_status()
        }
    };
    if cfg.no_exit_demote {
        naive_exit_control(cfg, &mut held);
    } else {
        exit::teardown(&mut held);
    }
    status
}

/// `--no-exit-demote`, the control of the exit experiment: the main thread
/// takes the measuring policy on the first measured CPU and exits holding
/// its locked memory, as a naive RT program does.
fn naive_exit_control(cfg: &Config, held: &mut Held) {
    if let Some(cpu) = cfg
        .affinity
        .as_ref()
        .and_then(|a| a.resolve(&cpus::available()).ok())
    {
        if let Some(&c) = cpu.first() {
            let _ = rustix::thread::sched_setaffinity(None, &cpus::CpuList::to_set(&[c]));
        }
    }
    let attr = measure::sched_attr(cfg.policy, cfg.priority, (0, 0, 0));
    let _ = sys::sched_setattr(0, &attr);
    drop(held.dma.take());
}

struct Degradations {
    flags: Degraded,
    warnings: Vec<String>,
}

fn run_inner(cfg: &Config, held: &mut Held) -> Result<i32, Error> {
    // one small allocator heap: nothing locked for arenas no thread uses
    sys::malloc_single_arena(MALLOC_TOP_PAD);
    // 2. signals, before any thread exists (threads inherit the mask)
    sys::block_signals(SIGNALS).map_err(|e| Error::sys("blocking signals", e))?;
    // 3. the vDSO clock, whose first call can allocate
    let clock = LinuxClock::new(cfg.clock);
    clock.warm_up();
    let start_s = realtime_s();

    let available = cpus::available();
    let plans = cpus::plan(cfg, &available).map_err(Error::usage)?;
    let mainaffinity = match &cfg.mainaffinity {
        Some(m) => Some(
            m.resolve(&available)
                .map_err(|e| Error::usage(format!("--mainaffinity: {e}")))?,
        ),
        None => None,
    };
    let mut deg = Degradations {
        flags: Degraded::default(),
        warnings: Vec::new(),
    };

    // 4. lock memory
    if cfg.mlock {
        use rustix::mm::MlockAllFlags;
        match rustix::mm::mlockall(MlockAllFlags::CURRENT | MlockAllFlags::FUTURE) {
            Ok(()) => held.locked = true,
            Err(e) => {
                let what = format!(
                    "mlockall failed: {e} (needs CAP_IPC_LOCK or a RLIMIT_MEMLOCK above the process size)"
                );
                if cfg.best_effort {
                    deg.flags.no_mlock = true;
                    deg.warnings
                        .push("degraded: memory not locked (page faults count as latency)".into());
                } else {
                    return Err(Error::Privilege {
                        what,
                        hint: "--no-mlock (or --best-effort)",
                    });
                }
            }
        }
    }
    if cfg.ballast_mib > 0 {
        let bytes = (cfg.ballast_mib as usize).saturating_mul(1 << 20);
        held.ballast = vec![0u8; bytes];
        for i in (0..bytes).step_by(4096) {
            held.ballast[i] = 1;
        }
        std::hint::black_box(&held.ballast);
    }

    // 5. the DMA latency request
    let mut dma_latency = None;
    if !cfg.default_system {
        match hold_dma_latency(cfg.latency_us) {
            Ok(fd) => {
                held.dma = Some(fd);
                dma_latency = Some(cfg.latency_us);
                eprintln!("# /dev/cpu_dma_latency set to {}us", cfg.latency_us);
            }
            Err(e) if e.raw_os_error() == rustix::io::Errno::NOENT.raw_os_error() => {
                deg.flags.no_dma_latency = true;
                deg.warnings.push(
                    "no /dev/cpu_dma_latency on this kernel: CPU idle states unchanged".into(),
                );
            }
            Err(e) => {
                if cfg.best_effort {
                    deg.flags.no_dma_latency = true;
                    deg.warnings.push(format!(
                        "degraded: /dev/cpu_dma_latency not held ({e}): deep idle states stay allowed"
                    ));
                } else {
                    return Err(Error::Privilege {
                        what: format!("opening /dev/cpu_dma_latency for writing failed: {e}"),
                        hint: "--default-system (or --best-effort)",
                    });
                }
            }
        }
    }

    // --tracemark: the top-level trace buffer's marker and switch
    let tracemark = if cfg.tracemark {
        match open_tracemark() {
            Some(fds) => Some(fds),
            None => {
                deg.warnings
                    .push("--tracemark: tracefs not found; no trace marker written".into());
                None
            }
        }
    } else {
        None
    };

    // --explain: a private trace instance and a marker per thread
    let n = plans.len();
    let (mut tracer, markers) = open_explain(cfg, &plans, &mut deg);
    let coarse_cpus: Vec<usize> = if cfg.explain_us > 0 && tracer.is_none() {
        let mut c: Vec<usize> = plans.iter().filter_map(|p| p.cpu).collect();
        c.sort_unstable();
        c.dedup();
        c
    } else {
        Vec::new()
    };
    let mut markers = markers.into_iter();

    // everything the run needs, allocated (and so locked) now
    let shared: Vec<Box<Shared>> = (0..n).map(|_| Shared::new()).collect();
    let mut spike_queues: Vec<SpikeQueue> = (0..n).map(|_| SpikeQueue::new()).collect();
    let mut verbose_queues: Vec<Box<VerboseQueue>> = if cfg.verbose {
        (0..n).map(|_| Box::new(VerboseQueue::new())).collect()
    } else {
        Vec::new()
    };
    let control = Control::new();
    let mut sink = match &cfg.stream {
        Some(d) => Some(Sink::open(d)?),
        None => None,
    };
    let settings = LoopSettings {
        policy: cfg.policy,
        deadline: (
            cfg.dl_runtime_us * 1000,
            cfg.dl_deadline_us * 1000,
            cfg.dl_period_us * 1000,
        ),
        best_effort: cfg.best_effort,
        exit_demote: !cfg.no_exit_demote,
        cycle: cycle_config(cfg),
        clock,
    };

    // --self-check: the filter goes on now, inherited by every thread
    let selfcheck = if cfg.self_check {
        Some(SelfCheck::install()?)
    } else {
        None
    };
    let no_defects = std::sync::atomic::AtomicU32::new(0);
    let defects = selfcheck.as_ref().map_or(&no_defects, |s| &s.defects);
    let human_fd = if cfg.human_to_stderr() { 2 } else { 1 };
    let tty = rustix::termios::isatty(if human_fd == 2 {
        rustix::stdio::stderr()
    } else {
        rustix::stdio::stdout()
    });

    let mut setup_error: Option<Error> = None;
    let mut outcome: Option<Outcome> = None;
    for q in spike_queues.iter_mut() {
        measure::prefault_queue(q, measure::EMPTY_SPIKE);
    }
    for q in verbose_queues.iter_mut() {
        measure::prefault_queue(q, (0, 0));
    }
    let mut spike_rx = Vec::with_capacity(n);
    let mut verbose_rx = Vec::with_capacity(n);
    let mut verbose_tx: Vec<Option<_>> = Vec::with_capacity(n);
    let mut spike_tx = Vec::with_capacity(n);
    for q in spike_queues.iter_mut() {
        let (p, c) = q.split();
        spike_tx.push(p);
        spike_rx.push(c);
    }
    for q in verbose_queues.iter_mut() {
        let (p, c) = q.split();
        verbose_tx.push(Some(p));
        verbose_rx.push(c);
    }
    while verbose_tx.len() < n {
        verbose_tx.push(None);
    }
    // the plan as it turned out (a degraded thread runs at priority 0)
    let mut effective = plans.clone();
    let tracemark_fds = tracemark.as_ref().map(|(m, o)| (m.as_fd(), o.as_fd()));

    std::thread::scope(|scope| {
        // 6. the measuring threads
        let mut spawned = 0;
        for (i, ((plan, tx), vtx)) in plans
            .iter()
            .zip(spike_tx.drain(..))
            .zip(verbose_tx.drain(..))
            .enumerate()
        {
            let args = ThreadArgs {
                index: i,
                plan: *plan,
                settings: &settings,
                shared: &shared[i],
                control: &control,
                spikes: tx,
                verbose: vtx,
                marker: markers.next().flatten(),
                tracemark: tracemark_fds,
            };
            let r = std::thread::Builder::new()
                .stack_size(measure::STACK_BYTES)
                .spawn_scoped(scope, move || measure::run(args));
            match r {
                Ok(_) => spawned += 1,
                Err(e) => {
                    setup_error = Some(Error::io("starting a measuring thread", e));
                    break;
                }
            }
        }
        control.wait_ready(spawned);
        for s in &shared {
            if s.state.load(Ordering::SeqCst) == measure::state::FAILED {
                if let Ok(mut g) = s.error.lock() {
                    if setup_error.is_none() {
                        setup_error = g.take();
                    }
                }
            }
        }
        if setup_error.is_some() {
            control.stop.store(true, Ordering::SeqCst);
            control.go.store(true, Ordering::SeqCst);
            return;
        }
        collect_degradations(cfg, &shared, &plans, &mut deg);
        for (p, s) in effective.iter_mut().zip(shared.iter()) {
            if s.no_rt_policy.load(Ordering::SeqCst) {
                p.priority = 0;
            }
            if s.no_affinity.load(Ordering::SeqCst) {
                p.cpu = None;
            }
        }
        control.go.store(true, Ordering::SeqCst);
        let start_ns = monotonic_ns();
        for w in &deg.warnings {
            eprintln!("latscope: {w}");
        }
        let hello = make_hello(cfg, &plans, &shared, &deg.flags, dma_latency, &settings);
        let sender_args = sender::Args {
            shared: &shared,
            plans: &effective,
            control: &control,
            spikes: std::mem::take(&mut spike_rx),
            verbose: std::mem::take(&mut verbose_rx),
            opts: sender::Options {
                nsecs: cfg.nsecs,
                quiet: cfg.quiet,
                verbose: cfg.verbose,
                hist_us: cfg.hist_us,
                spike_ns: cfg.spike_us * 1000,
                report_ns: cfg.report_ns as i64,
                human_fd,
                tty,
                policy: policy_label(cfg, &deg.flags),
                self_check_probe: cfg.self_check_probe,
            },
            hello,
            warnings: deg.warnings.clone(),
            sink: sink.take(),
            tracer: tracer.take(),
            explain_ns: cfg.explain_us * 1000,
            coarse_cpus: coarse_cpus.clone(),
            warmup_ns: cfg.warmup_ns,
            start_ns,
            defects,
        };
        let main_cpus = mainaffinity.clone();
        let sender = std::thread::Builder::new()
            .stack_size(SENDER_STACK)
            .spawn_scoped(scope, move || {
                if let Some(c) = &main_cpus {
                    let _ = rustix::thread::sched_setaffinity(None, &cpus::CpuList::to_set(c));
                }
                sender::run(sender_args)
            });
        let sender = match sender {
            Ok(h) => h,
            Err(e) => {
                control.stop.store(true, Ordering::SeqCst);
                setup_error = Some(Error::io("starting the sender thread", e));
                return;
            }
        };
        if let Some(c) = &mainaffinity {
            let _ = rustix::thread::sched_setaffinity(None, &cpus::CpuList::to_set(c));
        }
        wait_for_end(&control, n, selfcheck.as_ref());
        outcome = sender.join().ok();
    });

    if let Some(e) = setup_error {
        // the stream still learns why the run ended
        if let Some(s) = sink.as_mut() {
            error_stream(s, &e);
        }
        return Err(e);
    }
    let Some(outcome) = outcome else {
        return Err(Error::io("the sender thread", "ended without a result"));
    };
    let loop_error = shared
        .iter()
        .find_map(|s| s.error.lock().ok().and_then(|mut g| g.take()));
    let defects = defects.load(Ordering::SeqCst);
    let status = if loop_error.is_some() || defects > 0 {
        EXIT_FAILED
    } else {
        EXIT_OK
    };
    final_output(
        cfg, &effective, &shared, &outcome, &deg, defects, start_s, status, tty,
    )?;
    if let Some(e) = loop_error {
        return Err(e);
    }
    Ok(status)
}

/// `--explain`: the trace instance and one marker per thread. It traces
/// the pinned threads' CPUs, and every CPU the process may run on if a
/// thread is unpinned (its spikes are explained on the CPU it woke on).
fn open_explain(
    cfg: &Config,
    plans: &[ThreadPlan],
    deg: &mut Degradations,
) -> (Option<explain::Tracer>, Vec<Option<explain::Marker>>) {
    let none = || (0..plans.len()).map(|_| None).collect();
    if cfg.explain_us == 0 {
        return (None, none());
    }
    let mut cpus: Vec<usize> = plans.iter().filter_map(|p| p.cpu).collect();
    if plans.iter().any(|p| p.cpu.is_none()) {
        cpus.extend(cpus::available());
    }
    cpus.sort_unstable();
    cpus.dedup();
    match explain::Tracer::open(&cpus, cfg.explain_us * 1000) {
        Ok(t) => {
            let markers = plans.iter().map(|_| t.marker().ok()).collect();
            (Some(t), markers)
        }
        Err(e) => {
            deg.warnings.push(format!(
                "--explain: no trace instance ({e}); coarse attribution from /proc/interrupts and /proc/softirqs per report interval"
            ));
            (None, none())
        }
    }
}

fn hold_dma_latency(us: i32) -> Result<OwnedFd, rustix::io::Errno> {
    let fd = rustix::fs::open(
        "/dev/cpu_dma_latency",
        OFlags::WRONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    rustix::io::write(&fd, &us.to_ne_bytes())?;
    Ok(fd)
}

fn open_tracemark() -> Option<(OwnedFd, OwnedFd)> {
    for base in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        let m = rustix::fs::open(
            format!("{base}/trace_marker").as_str(),
            OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::empty(),
        );
        let o = rustix::fs::open(
            format!("{base}/tracing_on").as_str(),
            OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::empty(),
        );
        if let (Ok(m), Ok(o)) = (m, o) {
            return Some((m, o));
        }
    }
    None
}

/// The core's cycle settings from the command line (the interval is set
/// per thread).
pub fn cycle_config(cfg: &Config) -> CycleConfig {
    let spike_us = match (cfg.spike_us, cfg.explain_us) {
        (0, e) => e,
        (s, 0) => s,
        (s, e) => s.min(e),
    };
    CycleConfig {
        interval_ns: cfg.interval_us * 1000,
        warmup_cycles: 0,
        warmup_ns: cfg.warmup_ns,
        loops: cfg.loops,
        duration_ns: cfg.duration_ns,
        break_ns: cfg.break_us * 1000,
        spike_ns: spike_us * 1000,
        overflow_ns: cfg.hist_us as u64 * 1000,
    }
}

fn collect_degradations(
    cfg: &Config,
    shared: &[Box<Shared>],
    plans: &[ThreadPlan],
    deg: &mut Degradations,
) {
    let no_rt = shared.iter().any(|s| s.no_rt_policy.load(Ordering::SeqCst));
    if no_rt && !deg.flags.no_rt_policy {
        deg.flags.no_rt_policy = true;
        deg.warnings.push(format!(
            "degraded: SCHED_{} refused, measuring at SCHED_OTHER with 1 ns timer slack",
            crate::config::parse::policy_upper(cfg.policy)
        ));
    }
    let no_aff = shared.iter().any(|s| s.no_affinity.load(Ordering::SeqCst));
    if no_aff && !deg.flags.no_affinity {
        deg.flags.no_affinity = true;
        deg.warnings
            .push("degraded: threads could not be pinned to their CPUs".into());
    }
    let slack = shared
        .iter()
        .any(|s| s.timer_slack_ns.load(Ordering::SeqCst) > 0);
    if slack && !no_rt {
        deg.warnings
            .push("non-RT policy: timer slack of the measuring threads set to 1 ns".into());
    }
    let _ = plans;
}

fn policy_label(cfg: &Config, d: &Degraded) -> &'static str {
    if d.no_rt_policy {
        "other/other"
    } else {
        match cfg.policy {
            Policy::Other => "other/other",
            p => p.name(),
        }
    }
}

fn make_hello(
    cfg: &Config,
    plans: &[ThreadPlan],
    shared: &[Box<Shared>],
    degraded: &Degraded,
    dma_latency: Option<i32>,
    settings: &LoopSettings,
) -> Hello {
    let mut threads = heapless::Vec::new();
    for (i, (p, s)) in plans.iter().zip(shared.iter()).enumerate() {
        let _ = threads.push(ThreadInfo {
            index: i as u16,
            cpu: if s.no_affinity.load(Ordering::SeqCst) {
                None
            } else {
                p.cpu.map(|c| c as u16)
            },
            tid: s.tid.load(Ordering::SeqCst) as u32,
            priority: if degraded.no_rt_policy {
                0
            } else {
                p.priority.min(255) as u8
            },
            interval_ns: p.interval_us * 1000,
        });
    }
    let slack = shared
        .iter()
        .map(|s| s.timer_slack_ns.load(Ordering::SeqCst) as u64)
        .max()
        .unwrap_or(0);
    Hello {
        schema: SCHEMA_KEY,
        tool_version: bounded(env!("CARGO_PKG_VERSION")),
        run_id: run_id(),
        target: procfs::target_info(&cfg.cmdline),
        config: RunConfig {
            policy: if degraded.no_rt_policy {
                Policy::Other
            } else {
                cfg.policy
            },
            priority: if degraded.no_rt_policy {
                0
            } else {
                cfg.priority.min(255) as u8
            },
            interval_ns: cfg.interval_us * 1000,
            distance_ns: cfg.distance() * 1000,
            clock: cfg.clock,
            mlock: cfg.mlock && !degraded.no_mlock,
            dma_latency_us: dma_latency,
            timer_slack_ns: slack,
            duration_ns: cfg.duration_ns,
            loops: cfg.loops,
            warmup_cycles: settings.cycle.warmup_cycles,
            report_ns: cfg.report_ns,
            spike_ns: settings.cycle.spike_ns,
            break_ns: settings.cycle.break_ns,
            hist_us: cfg.hist_us,
            layout: Layout::DEFAULT,
            degraded: *degraded,
            self_check: cfg.self_check,
            threads,
        },
    }
}

/// A random run id (from the kernel's entropy; the clock as a fallback).
fn run_id() -> u64 {
    let mut b = [0u8; 8];
    if procfs::read_into("/dev/urandom", &mut b).is_some() || urandom(&mut b) {
        return u64::from_ne_bytes(b);
    }
    (monotonic_ns() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ realtime_s() as u64
}

fn urandom(b: &mut [u8; 8]) -> bool {
    match rustix::fs::open(
        "/dev/urandom",
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => rustix::io::read(&fd, b).map(|n| n == 8).unwrap_or(false),
        Err(_) => false,
    }
}

/// The main thread during the run: handle signals (and self-check
/// notifications) until every measuring thread has returned.
fn wait_for_end(control: &Control, n: usize, selfcheck: Option<&SelfCheck>) {
    let tick = timespec(100_000_000);
    let zero = timespec(0);
    loop {
        if control.finished.load(Ordering::SeqCst) as usize >= n {
            break;
        }
        let got = match selfcheck {
            Some(sc) => {
                let fd = sc.fd();
                let mut fds = [rustix::event::PollFd::new(
                    &fd,
                    rustix::event::PollFlags::IN,
                )];
                if matches!(rustix::event::poll(&mut fds, Some(&tick)), Ok(k) if k > 0) {
                    if let Some(msg) = sc.handle_one() {
                        eprintln!("latscope: {msg}");
                    }
                }
                sys::wait_signal(SIGNALS, &zero)
            }
            None => sys::wait_signal(SIGNALS, &tick),
        };
        match got {
            Ok(Some(s)) if s == sig::USR1 => {
                control.status_requested.store(true, Ordering::SeqCst);
            }
            Ok(Some(s)) => {
                let _ = control
                    .signal
                    .compare_exchange(0, s, Ordering::SeqCst, Ordering::SeqCst);
                control.stop.store(true, Ordering::SeqCst);
            }
            Ok(None) => {}
            Err(_) => {
                // cannot wait for signals: poll the end instead
                let _ = rustix::event::poll(&mut [], Some(&tick));
            }
        }
    }
}

/// Without measuring threads, tell the stream why the run ended.
fn error_stream(sink: &mut Sink, e: &Error) {
    let mut enc = Encoder::new();
    let mut send = |b: Body| {
        if let Ok(bytes) = enc.frame(b) {
            sink.send(bytes);
        }
    };
    send(Body::Log(LogLine {
        level: Level::Error,
        text: bounded(&e.to_string()),
    }));
    send(Body::Bye(Bye {
        reason: ByeReason::Error,
        epoch: 0,
        elapsed_ns: 0,
        threads: 0,
        cycles: 0,
        max_ns: 0,
        frames_dropped: 0,
        defects: 0,
    }));
    sink.finish(monotonic_ns(), 1_000_000_000);
}

#[allow(clippy::too_many_arguments)]
fn final_output(
    cfg: &Config,
    plans: &[ThreadPlan],
    shared: &[Box<Shared>],
    out: &Outcome,
    deg: &Degradations,
    defects: u32,
    start_s: i64,
    status: i32,
    tty: bool,
) -> Result<(), Error> {
    let tids: Vec<i32> = shared
        .iter()
        .map(|s| s.tid.load(Ordering::SeqCst))
        .collect();
    let rows: Vec<human::Row<'_>> = out
        .views
        .iter()
        .enumerate()
        .map(|(i, v)| v.row(i, &plans[i], tids[i]))
        .collect();
    let mut text = String::with_capacity(64 * 1024);
    // a terminal already shows the final figures in the live view
    if cfg.hist_us == 0 && !cfg.verbose && (cfg.quiet || !tty) {
        for r in &rows {
            human::thread_line(&mut text, r, cfg.nsecs);
            text.push('\n');
        }
    }
    if !cfg.verbose {
        for r in &rows {
            human::extra_line(&mut text, r);
        }
    }
    if cfg.hist_us > 0 {
        let mut h = String::with_capacity(cfg.hist_us as usize * (8 + 8 * rows.len()) + 1024);
        human::histogram(&mut h, &rows, cfg.hist_us, cfg.hist_all);
        match &cfg.histfile {
            Some(path) => std::fs::write(path, h.as_bytes())
                .map_err(|e| Error::io(format!("--histfile {path}"), e))?,
            None => text.push_str(&h),
        }
    }
    if cfg.spike_us > 0 {
        let mut all: Vec<_> = out
            .views
            .iter()
            .flat_map(|v| v.spikes.iter().copied())
            .collect();
        all.sort_by_key(|s| s.deadline_ns.saturating_add(s.latency_ns));
        let total = out.views.iter().map(|v| v.spikes_total).sum();
        human::spikes(&mut text, &all, total, cfg.nsecs);
    }
    if let ByeReason::Break { thread, latency_ns } = out.reason {
        let v = if cfg.nsecs {
            latency_ns
        } else {
            latency_ns / 1000
        };
        let bt = tids.get(thread as usize).copied().unwrap_or(0);
        human::break_lines(&mut text, &tids, bt, v);
    }
    let fd = if cfg.human_to_stderr() {
        rustix::stdio::stderr()
    } else {
        rustix::stdio::stdout()
    };
    let _ = stream::write_all(fd, text.as_bytes());
    if cfg.self_check {
        eprintln!(
            "# self-check: {defects} defect(s): process creation or exec {}",
            if defects == 0 {
                "never attempted"
            } else {
                "was attempted and refused"
            }
        );
    }
    if deg.flags.any() {
        eprintln!(
            "# degraded run: {}",
            deg.warnings
                .iter()
                .filter_map(|w| w.strip_prefix("degraded: "))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    if out.frames_dropped > 0 {
        eprintln!(
            "# stream: {} frame(s) could not be delivered",
            out.frames_dropped
        );
    }
    if let Some(path) = &cfg.json {
        let u = procfs::uname();
        let cpus: Vec<i64> = plans
            .iter()
            .zip(shared.iter())
            .map(|(p, s)| match p.cpu {
                Some(c) if !s.no_affinity.load(Ordering::SeqCst) => c as i64,
                _ => -1,
            })
            .collect();
        let doc = json::Doc {
            cmdline: &cfg.cmdline,
            start_s,
            end_s: realtime_s(),
            return_code: status,
            uname: &u,
            realtime: procfs::is_realtime(),
            nsecs: cfg.nsecs,
            hist_us: cfg.hist_us,
            cpus: &cpus,
        };
        let text = json::document(&doc, &rows);
        if path == "-" {
            let _ = stream::write_all(rustix::stdio::stdout(), text.as_bytes());
        } else {
            std::fs::write(path, text.as_bytes())
                .map_err(|e| Error::io(format!("--json {path}"), e))?;
        }
    }
    Ok(())
}
