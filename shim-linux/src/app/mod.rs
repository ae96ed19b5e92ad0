//! The main thread: one run from the command line to the exit status.
//!
//! [`main`] parses and dispatches; [`run`] goes through the four steps,
//! each in its own module:
//!
//! 1. [`setup`]: block signals, lock memory, hold the DMA latency request,
//!    open the trace instance, the stream and the queues, install the
//!    self-check: everything allocated (and locked) before any thread runs;
//! 2. [`start`]: start the measuring threads, wait until each is set up,
//!    open the gate, start the sender;
//! 3. [`wait`]: handle signals until the measuring threads are done;
//! 4. [`finish`]: the final summary, `--json`, and the exit status.
//!
//! Every path after set-up began leaves through the exit discipline
//! ([`exit::teardown`]).

mod finish;
mod hello;
mod setup;
mod slo;
mod start;
mod wait;

use crate::bench;
use crate::config::{self, Action, Config, RtlaRequest};
use crate::error::{Error, EXIT_OK, EXIT_OUTPUT_LOST};
use crate::linux::{self, exit, pid1};
use crate::output::{self, Std};

/// The program: parse, run, leave. Never returns.
pub fn main() -> ! {
    pid1::start();
    exit::install_panic_hook();
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let args = argv.get(1..).unwrap_or_default();
    let rtla = argv
        .first()
        .is_some_and(|a0| config::invoked_as_rtla(std::ffi::OsStr::new(a0)));
    let parsed = if rtla {
        // what latscope leaves behind is known by its name: a live run
        // must not look like an ended one to the next start's sweep
        let _ = rustix::thread::set_name(c"latscope-rtla");
        rtla_action(args)
    } else {
        config::parse(args)
    };
    let status = match parsed {
        Ok(Action::Help) if rtla => {
            let _ = Std::Out.write(RTLA_HELP.as_bytes());
            EXIT_OK
        }
        Ok(Action::Help) => {
            let _ = Std::Out.write(config::help().as_bytes());
            EXIT_OK
        }
        Ok(Action::Version) => {
            let _ = Std::Out.write(format!("latscope {}\n", env!("CARGO_PKG_VERSION")).as_bytes());
            EXIT_OK
        }
        Ok(Action::Run(mut cfg)) => {
            cfg.cmdline = cmdline(&argv);
            run(&cfg)
        }
        Err(e) => fail(&e),
    };
    exit::leave(with_lost_output(status))
}

/// Invoked as `rtla` with `-h`.
const RTLA_HELP: &str = "\
usage: rtla timerlat hist [options]

  latscope, invoked as rtla: rtla 6.12's `timerlat hist` options and text,
  measured by latscope's --timerlat (memory locked, user-space threads).
  Options latscope cannot honour are refused by name. See latscope's
  manual, timerlat.md.
";

/// Invoked as `rtla`: rtla's grammar, and the `--timerlat` run it asks for
/// (`timerlat hist` only).
fn rtla_action(args: &[String]) -> Result<Action, Error> {
    match config::parse_rtla(args)? {
        RtlaRequest::Help => Ok(Action::Help),
        RtlaRequest::Hist(h) => Ok(Action::Run(Box::new(config::rtla_config(&h)?))),
    }
}

/// cyclictest's `"cmdline:"`: all of argv from argv[0] as typed, joined by
/// blanks and capped as rt-tests caps it.
fn cmdline(argv: &[String]) -> String {
    let mut s = String::new();
    // a String takes every write
    let _ = latscope_core::cyclictest::cmdline(&mut s, argv.iter().map(String::as_str));
    s
}

/// Say why the run failed; its exit status.
fn fail(e: &Error) -> i32 {
    output::note(&format!("latscope: {e}"));
    e.exit_status()
}

/// A status of success becomes [`EXIT_OUTPUT_LOST`] when a write to
/// standard output or standard error failed (said on standard error, if
/// that works: standard output may carry the frame stream).
fn with_lost_output(status: i32) -> i32 {
    let out = Std::Out.lost();
    if let Some(l) = out {
        output::note(&format!(
            "latscope: {}: {} write(s) lost ({})",
            Std::Out.name(),
            l.writes,
            l.errno
        ));
    }
    if (out.is_some() || Std::Err.lost().is_some()) && status == EXIT_OK {
        EXIT_OUTPUT_LOST
    } else {
        status
    }
}

/// Run a measurement; returns the exit status.
fn run(cfg: &Config) -> i32 {
    if let Some(line) = linux::leftovers::sweep() {
        output::note(&line);
    }
    setup::cyclictest::notes(cfg);
    let mut held = exit::Held {
        demote: !cfg.bench.no_exit_demote(),
        ..exit::Held::default()
    };
    let status = measure(cfg, &mut held)
        .unwrap_or_else(|e| fail(&e.with_run_hint(cfg.unprivileged_flags())));
    if cfg.bench.no_exit_demote() {
        let cpu = config::first_pinned_cpu(cfg, &linux::available_cpus());
        bench::naive_exit(cpu, cfg.policy, cfg.priority, &mut held);
        if let Some(limit) = held.idle.take() {
            if let Err(e) = limit.restore() {
                output::note(&format!("latscope: {e}"));
            }
        }
        linux::status_files::remove_all();
    } else {
        exit::teardown(&mut held);
    }
    status
}

/// Set up, measure, finish.
fn measure(cfg: &Config, held: &mut exit::Held) -> Result<i32, Error> {
    let (mut s, mut handoff) = setup::Setup::prepare(cfg, held)?;
    match start::run_threads(cfg, &mut s, &mut handoff) {
        Ok(ended) => finish::finish(cfg, &s, &ended),
        Err(e) => {
            // the stream still learns why the run ended
            if let Some(sink) = handoff.sink.as_mut() {
                finish::error_stream(sink, &e);
            }
            Err(e)
        }
    }
}
