//! `record --listen`: accept targets over TCP, one thread per connection,
//! one recording per run; end runs (bye, timeout), retire them, and stop
//! cleanly on SIGINT/SIGTERM or after `--exit-after` ended runs.
//!
//! Bounds: at most `--max-connections` connections at once (default
//! [`DEFAULT_MAX_CONNECTIONS`]); each costs a thread with a
//! [`CONN_STACK`] stack, a 16 KiB read buffer and two descriptors (socket
//! and recording). A connection that sends no hello within
//! `--hello-timeout` is closed and leaves no file. A connection or run
//! with no bytes for `--idle-timeout` is closed, or ends timed out.
//!
//! Threads, not an event loop: measured with `bench/fleet`, 256 targets
//! cost the recorder a few percent of one core and under 64 MiB, since a
//! connection thread sleeps in `read` between a target's reports (a tick
//! of 500 ms checks its timeouts).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use super::allow::{allowed, Net};
use super::conn::{self, Limits};
use super::fleet::{Ending, Fleet, FleetOptions};
use super::targets::{FleetStats, TargetTable};
use super::{spawn_display, Plan};
use crate::console;
use crate::error::{Error, Result, EXIT_FAILED, EXIT_OK};
use crate::report::{self, Decoded, Format, Options};
use crate::session::Session;

/// Default cap on concurrent connections.
pub const DEFAULT_MAX_CONNECTIONS: u64 = 1024;
/// Stack of a connection thread.
pub(crate) const CONN_STACK: usize = 256 * 1024;
/// How often the supervisor looks at timeouts and lingering views.
const TICK: Duration = Duration::from_millis(200);

/// The listening side of a [`Plan`].
#[derive(Debug, Clone)]
pub struct Fleetwide {
    /// Time limits of a connection.
    pub limits: Limits,
    /// How long an ended run's metrics stay.
    pub linger: Duration,
    /// Cap on concurrent connections.
    pub max_connections: u64,
    /// Peer networks accepted (empty: all).
    pub allow: Vec<Net>,
}

fn listen_addr(addr: &str) -> String {
    if addr.contains(':') {
        addr.to_string()
    } else {
        format!("127.0.0.1:{addr}")
    }
}

/// Run the listening recorder; returns the exit status.
pub(crate) fn listen(
    plan: &Plan,
    addr: &str,
    targets: Arc<TargetTable>,
    stop: Arc<AtomicBool>,
) -> Result<u8> {
    let fw = plan.fleet.clone();
    let addr = listen_addr(addr);
    let bind_err = |source| Error::Bind {
        addr: addr.clone(),
        source,
    };
    let listener = TcpListener::bind(&addr).map_err(bind_err)?;
    let local = listener.local_addr().map_err(bind_err)?;
    std::fs::create_dir_all(&plan.out_dir).map_err(|source| Error::Output {
        what: plan.out_dir.clone(),
        source,
    })?;
    super::check_writable(&plan.out_dir)?;
    crate::platform::raise_fd_limit();
    console::say(format_args!(
        "listening on {local}, recordings in {}",
        plan.out_dir.display()
    ));
    if !local.ip().is_loopback() && fw.allow.is_empty() {
        console::say(format_args!(
            "note: accepting targets from any address; restrict with --allow NET"
        ));
    }
    targets.listening.store(true, Ordering::Relaxed);
    let (tx, rx) = mpsc::channel();
    let settings = FleetOptions {
        dir: plan.out_dir.clone(),
        linger: fw.linger,
    };
    let fleet = Arc::new(Fleet::new(Arc::clone(&targets), settings, tx));
    let f2 = Arc::clone(&fleet);
    let fw2 = fw.clone();
    thread::Builder::new()
        .name("accept".into())
        .spawn(move || accept_loop(listener, f2, fw2))
        .map_err(|source| Error::Spawn {
            thread: "accept",
            source,
        })?;
    let shown = Arc::new(AtomicBool::new(false));
    let display = (!plan.quiet).then(|| spawn_display(Arc::clone(&targets), Arc::clone(&shown)));
    let mut tally = Tally::default();
    supervise(&fleet, &rx, &stop, plan, &mut tally);
    fleet.stopping.store(true, Ordering::Release);
    // Connections notice within their read tick; then no write is under way.
    let deadline = Instant::now() + Duration::from_secs(2);
    while targets.stats.open.load(Ordering::Relaxed) > 0 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    for id in fleet.interrupt_all() {
        tally.retire(&fleet, id, plan.quiet);
    }
    shown.store(true, Ordering::Release);
    if let Some(Some(h)) = display {
        let _ = h.join();
    }
    Ok(tally.finish(stop.load(Ordering::Acquire)))
}

/// Retire ended runs, time out quiet ones, expire lingering views, until
/// a signal or `--exit-after`.
fn supervise(
    fleet: &Fleet,
    rx: &mpsc::Receiver<u64>,
    stop: &AtomicBool,
    plan: &Plan,
    tally: &mut Tally,
) {
    let idle = plan.fleet.limits.idle;
    let mut refused = 0;
    loop {
        refused = note_refusals(fleet, refused);
        match rx.recv_timeout(TICK) {
            Ok(id) => tally.retire(fleet, id, plan.quiet),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        fleet.time_out(idle);
        fleet.targets.expire(Instant::now());
        if stop.load(Ordering::Acquire) {
            console::say(format_args!("stopping: closing every recording"));
            return;
        }
        if plan.exit_after.is_some_and(|n| tally.ended() >= n) {
            return;
        }
    }
}

/// Publish the recorder's memory budget in the metrics, and say when it
/// refused something: the first time, then each time the count doubles
/// since `said`; returns the count said last.
fn note_refusals(fleet: &Fleet, said: u64) -> u64 {
    let stats = &fleet.targets.stats;
    let now = fleet.budget.refused();
    stats
        .memory
        .store(fleet.budget.used() as u64, Ordering::Relaxed);
    stats.memory_refused.store(now, Ordering::Relaxed);
    if now > said.saturating_mul(2) {
        console::say(format_args!(
            "warning: memory budget ({} MiB per connection, {} MiB for all) used up: {now} \
             run(s), thread(s) or histogram page(s) refused so far",
            crate::budget::STREAM_LIMIT >> 20,
            fleet.budget.limit() >> 20
        ));
        return now;
    }
    said
}

/// The runs that ended, by how.
#[derive(Debug, Default)]
struct Tally {
    bye: u64,
    timed_out: u64,
    interrupted: u64,
    failed: u64,
}

impl Tally {
    /// Runs counted by `--exit-after`: ended with a bye or timed out.
    fn ended(&self) -> u64 {
        self.bye + self.timed_out
    }

    /// Take run `id` out of the fleet and give its final report.
    fn retire(&mut self, fleet: &Fleet, id: u64, quiet: bool) {
        let Some((ending, session, path)) = fleet.retire(id) else {
            return;
        };
        let stats = &fleet.targets.stats;
        match ending {
            Ending::Bye => {
                self.bye += 1;
                FleetStats::bump(&stats.runs_bye);
            }
            Ending::TimedOut => {
                self.timed_out += 1;
                FleetStats::bump(&stats.runs_timed_out);
            }
            Ending::Interrupted => {
                self.interrupted += 1;
                FleetStats::bump(&stats.runs_interrupted);
            }
        }
        let how = match ending {
            Ending::Bye => "ended",
            Ending::TimedOut => "timed out",
            Ending::Interrupted => "interrupted",
        };
        console::say(format_args!(
            "run {id:016x} {how}; recorded {}",
            path.display()
        ));
        if !final_report(session, quiet) {
            self.failed += 1;
        }
    }

    /// The last line and the exit status: 0 when stopped by a signal,
    /// else 1 if a counted run failed or was incomplete.
    fn finish(&self, signalled: bool) -> u8 {
        console::say(format_args!(
            "runs: {} ended with a bye, {} timed out, {} interrupted",
            self.bye, self.timed_out, self.interrupted
        ));
        if !signalled && self.failed > 0 {
            EXIT_FAILED
        } else {
            EXIT_OK
        }
    }
}

/// Print a run's final report (or only its warnings when quiet); whether
/// the run was good.
fn final_report(session: Session, quiet: bool) -> bool {
    let ok = session.fatal().is_none() && report::say_incomplete(&session);
    if quiet {
        for w in session.warnings() {
            console::say(format_args!("warning: {w}"));
        }
        return ok;
    }
    let d = [Decoded {
        session,
        end: SystemTime::now(),
    }];
    let opts = Options {
        format: Format::Text,
        hist_us: None,
        histofall: false,
        hist_shape: Default::default(),
    };
    if let Ok(text) = report::render(&d, opts) {
        console::Std::Out.write(text.as_bytes());
    }
    ok
}

/// Accept connections: refuse peers outside `--allow` and those beyond
/// the cap at once; back off when descriptors run out.
fn accept_loop(listener: TcpListener, fleet: Arc<Fleet>, fw: Fleetwide) {
    let mut backoff = Duration::ZERO;
    while !fleet.stopping.load(Ordering::Acquire) {
        if let Some((stream, peer)) = accept(&listener, &mut backoff) {
            admit(stream, peer, &fleet, &fw);
        }
    }
}

/// Accept one connection. When descriptors run out, wait (10 ms, doubling
/// to 1 s while it lasts) instead of spinning: the pending connections
/// stay in the backlog until descriptors are free again.
pub(crate) fn accept(
    listener: &TcpListener,
    backoff: &mut Duration,
) -> Option<(TcpStream, SocketAddr)> {
    match listener.accept() {
        Ok(c) => {
            *backoff = Duration::ZERO;
            Some(c)
        }
        Err(e) if crate::platform::out_of_descriptors(&e) => {
            if backoff.is_zero() {
                console::say(format_args!(
                    "cannot accept: {e}; backing off (raise the fd limit or \
                     lower --max-connections)"
                ));
            }
            *backoff = (*backoff * 2).clamp(Duration::from_millis(10), Duration::from_secs(1));
            thread::sleep(*backoff);
            None
        }
        Err(_) => None,
    }
}

fn admit(stream: TcpStream, peer: SocketAddr, fleet: &Arc<Fleet>, fw: &Fleetwide) {
    let stats = &fleet.targets.stats;
    let ip = peer.ip().to_canonical();
    if !allowed(&fw.allow, ip) {
        FleetStats::bump(&stats.refused_allow);
        return;
    }
    if stats.open.load(Ordering::Relaxed) >= fw.max_connections {
        if stats.refused_cap.fetch_add(1, Ordering::Relaxed) == 0 {
            console::say(format_args!(
                "{} connections open (--max-connections): refusing more",
                fw.max_connections
            ));
        }
        return;
    }
    FleetStats::bump(&stats.accepted);
    stats.open.fetch_add(1, Ordering::Relaxed);
    let f = Arc::clone(fleet);
    let limits = fw.limits;
    let spawned = thread::Builder::new()
        .name("conn".into())
        .stack_size(CONN_STACK)
        .spawn(move || {
            conn::serve(stream, ip.to_string(), Arc::clone(&f), limits);
            f.targets.stats.open.fetch_sub(1, Ordering::Relaxed);
        });
    if spawned.is_err() {
        stats.open.fetch_sub(1, Ordering::Relaxed);
    }
}
