//! What cyclictest's start-up does besides taking resources, for the
//! options that ask for it: the notes on how the command line was read,
//! `--smi`'s check, `-R`'s resolution, `--dbg_cyclictest`'s facts, the
//! default priority, and the status files (`/dev/shm/cyclictest<PID>`,
//! `-F`).
//!
//! Everything here writes to standard error, so standard output keeps only
//! cyclictest's own lines (`-q` callers take every other line there as a
//! histogram row).

use latscope_core::wire::Policy;
use rustix::io::Errno;

use crate::config::{Config, ThreadPlan};
use crate::error::Error;
use crate::linux::clock::LinuxClock;
use crate::linux::procfs;
use crate::linux::smi;
use crate::linux::status_files::{self, Snapshot};

/// The notes of the command line, one line each.
pub fn notes(cfg: &Config) {
    for n in &cfg.notes {
        eprintln!("latscope: {n}");
    }
}

/// `--smi`: stop, as cyclictest does, where the CPU has no SMI counter
/// (exit status 1, its reason in one line).
pub fn check_smi(cfg: &Config) -> Result<(), Error> {
    if !cfg.smi {
        return Ok(());
    }
    let cpuinfo = procfs::read_text("/proc/cpuinfo").unwrap_or_default();
    match smi::supported(&cpuinfo) {
        Err(why) => Err(Error::Unavailable(format!("--smi: {why}"))),
        Ok(()) => Err(Error::Unavailable(
            "--smi: this CPU has an SMI counter, but latscope does not read it yet (MSR 0x34 per cycle); run without --smi".into(),
        )),
    }
}

/// `-R`: the clock's resolution, reported and measured (always printed;
/// cyclictest prints it only with `-v` or when the measured one is
/// coarser). With `--dbg_cyclictest`, every reading as cyclictest lists
/// them.
pub fn resolution(cfg: &Config, clock: &LinuxClock) {
    if !cfg.resolution {
        return;
    }
    let r = clock.resolution();
    if cfg.debug {
        let mut out = format!(
            "INFO: For {} consecutive calls to clock_gettime():\nINFO: time, delta time (nsec)\n",
            r.readings.len()
        );
        for w in r.readings.windows(2) {
            let t = w[1];
            out.push_str(&format!(
                "INFO: {}.{:09}  {:5}\n",
                t.div_euclid(1_000_000_000),
                t.rem_euclid(1_000_000_000),
                w[1] - w[0]
            ));
        }
        eprint!("{out}");
    }
    eprintln!(
        "latscope: reported clock resolution: {} nsec\nlatscope: measured clock resolution approximately: {} nsec",
        r.reported_ns, r.measured_ns
    );
}

/// cyclictest's note when it picks the priority itself, and with
/// `--dbg_cyclictest` where each thread runs.
pub fn plan_facts(cfg: &Config, plans: &[ThreadPlan]) {
    if matches!(cfg.policy, Policy::Fifo | Policy::Rr) && cfg.priority == 0 {
        if let Some(p) = plans.first() {
            eprintln!("latscope: defaulting realtime priority to {}", p.priority);
        }
    }
    if !cfg.debug {
        return;
    }
    for (i, p) in plans.iter().enumerate() {
        let cpu = p.cpu.map_or("unpinned".to_string(), |c| format!("CPU {c}"));
        eprintln!(
            "latscope: debug: thread {i}: {cpu}, {} priority {}, interval {} us, {}",
            cfg.policy.name(),
            p.priority,
            p.interval_us,
            cfg.wake.name()
        );
    }
}

/// The snapshot file, or one `#` line saying why there is none (the run
/// goes on without it, as cyclictest's does).
pub fn snapshot() -> Option<Snapshot> {
    match Snapshot::create() {
        Ok(s) => Some(s),
        Err(Errno::NOENT) => {
            eprintln!(
                "# no /dev/shm: no snapshot file for get_cyclictest_snapshot; SIGUSR2 does nothing"
            );
            None
        }
        Err(e) => {
            let pid = rustix::process::getpid().as_raw_nonzero().get();
            eprintln!(
                "# {}: {e}: no snapshot file; SIGUSR2 does nothing",
                Snapshot::path(pid)
            );
            None
        }
    }
}

/// `-F PATH`: the named pipe, or cyclictest's line saying why not (the run
/// goes on without it).
pub fn fifo(cfg: &Config) -> Option<String> {
    let path = cfg.fifo.as_ref()?;
    match status_files::make_fifo(path) {
        Ok(()) => Some(path.clone()),
        Err(e) => {
            eprintln!("latscope: Error creating fifo {path}: {e}");
            None
        }
    }
}
