//! `latscope-host record`: store the raw stream byte for byte, decode it on
//! the way, show it live and serve it as metrics. One stream (stdin, a file,
//! a serial line) or many (`--listen`, one thread per connection and one
//! recording per run, across reconnects).

pub(crate) mod allow;
pub(crate) mod conn;
mod fleet;
mod http;
pub(crate) mod listen;
pub(crate) mod live;
pub(crate) mod metrics;
mod recordings;
mod split;
pub(crate) mod targets;

use std::fs::{self, File};
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use targets::{TargetTable, TargetView};

pub use allow::Net;
pub use conn::Limits;
pub use listen::{Fleetwide, DEFAULT_MAX_CONNECTIONS};

use crate::console;
use crate::error::{Error, Result, EXIT_FAILED, EXIT_OK};
use crate::input::{pump, Source};
use crate::report::{self, Decoded, Format, Options};
use crate::session::Session;

/// `m` locked; the data a panicked holder left is used as it is (every
/// structure the recorder shares stays consistent between statements).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What `record` was asked to do.
#[derive(Debug, Clone)]
pub struct Plan {
    /// One stream to read, unless listening.
    pub source: Option<Source>,
    /// `ADDR:PORT` (or `PORT`) to accept targets on.
    pub listen: Option<String>,
    /// The recording file for a single stream.
    pub output: Option<PathBuf>,
    /// Where recordings named after their targets go.
    pub out_dir: PathBuf,
    /// `ADDR:PORT` for the metrics server.
    pub metrics: Option<String>,
    /// The peer networks the metrics server answers (any, if empty).
    pub metrics_allow: Vec<Net>,
    /// Stop listening after this many runs have ended (bye or timeout).
    pub exit_after: Option<u64>,
    /// Limits of a listening recorder.
    pub fleet: listen::Fleetwide,
    /// No live view and no final report.
    pub quiet: bool,
}

/// UTC time as `YYYYMMDDTHHMMSSZ`.
pub(crate) fn stamp(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d) = latscope_core::tz::civil_from_days((secs / 86_400) as i64);
    let r = secs % 86_400;
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        r / 3600,
        r % 3600 / 60,
        r % 60
    )
}

/// The board name a hello gives (`latscope --name`), or the host name of
/// a stream whose hello names no board (version 1).
pub(crate) fn board_name(h: &latscope_core::wire::Hello) -> &str {
    if h.target.name.is_empty() {
        h.target.hostname.as_str()
    } else {
        h.target.name.as_str()
    }
}

/// A name as part of a file name: letters, digits, `-`, `.` and `_`
/// kept, anything else `_`; `unknown` for none.
pub(crate) fn sanitize(host: &str) -> String {
    let s: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        "unknown".into()
    } else {
        s
    }
}

/// A recording file that gets its final name once the hello tells the
/// target's host name.
struct Recording {
    file: File,
    path: PathBuf,
    named: bool,
    dir: PathBuf,
    stamp: String,
}

impl Recording {
    fn fixed(path: &Path) -> Result<Recording> {
        let file = create(path)?;
        Ok(Recording {
            file,
            path: path.to_path_buf(),
            named: true,
            dir: PathBuf::new(),
            stamp: String::new(),
        })
    }

    fn pending(dir: &Path, slot: u64) -> Result<Recording> {
        fs::create_dir_all(dir).map_err(|source| Error::Output {
            what: dir.to_path_buf(),
            source,
        })?;
        let stamp = stamp(SystemTime::now());
        let path = dir.join(format!("pending-{stamp}-{slot}.lsr"));
        let file = create(&path)?;
        Ok(Recording {
            file,
            path,
            named: false,
            dir: dir.to_path_buf(),
            stamp,
        })
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        // No buffering: every chunk reaches the kernel at once, so a killed
        // host leaves a decodable recording.
        self.file.write_all(bytes).map_err(|source| Error::Output {
            what: self.path.clone(),
            source,
        })
    }

    /// Name the recording `NAME-STAMP-RUNID.lsr` (as a listening
    /// recorder names its recordings).
    fn name_after(&mut self, name: &str, run_id: Option<u64>) {
        if self.named {
            return;
        }
        self.named = true;
        let base = match run_id {
            Some(id) => format!("{}-{}-{id:016x}", sanitize(name), self.stamp),
            None => format!("{}-{}", sanitize(name), self.stamp),
        };
        // Link, not rename: linking never replaces a file, so two targets
        // with the same host name that connect in the same second each
        // keep their own recording.
        for n in 0..1000 {
            let target = if n == 0 {
                self.dir.join(format!("{base}.lsr"))
            } else {
                self.dir.join(format!("{base}-{n}.lsr"))
            };
            match fs::hard_link(&self.path, &target) {
                Ok(()) => {
                    let _ = fs::remove_file(&self.path);
                    self.path = target;
                    let _ = recordings::sync_dir(&self.dir);
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(_) => return,
            }
        }
    }
}

/// Whether recordings can be created in `dir`: a probe file is created
/// and removed, before any target connects.
pub(crate) fn check_writable(dir: &Path) -> Result<()> {
    let probe = dir.join(format!(".latscope-host-probe-{}", std::process::id()));
    File::create(&probe).map_err(|source| Error::Output {
        what: dir.to_path_buf(),
        source,
    })?;
    let _ = fs::remove_file(&probe);
    Ok(())
}

/// Create the recording `path`, its directory entry durable.
fn create(path: &Path) -> Result<File> {
    let err = |source| Error::Output {
        what: path.to_path_buf(),
        source,
    };
    let file = File::create(path).map_err(err)?;
    recordings::sync_dir(path.parent().unwrap_or(Path::new("."))).map_err(err)?;
    Ok(file)
}

/// Record one stream until it ends; publish its view on the board.
fn record_stream(
    r: &mut dyn Read,
    mut rec: Recording,
    name: &str,
    targets: &TargetTable,
    slot: u64,
    stop_on_bye: bool,
) -> (Session, PathBuf, Option<io::Error>) {
    let mut s = Session::new(name);
    s.agg.keep_evidence();
    let mut last = Instant::now();
    let file_label = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| p.display().to_string())
    };
    let mut label = file_label(&rec.path);
    let res = pump(r, |bytes| {
        rec.write(bytes)?;
        s.feed(bytes);
        crate::evidence::write_beside(&mut s, &rec.path);
        if !rec.named {
            if let Some(run) = s.agg.current() {
                let name = board_name(&run.hello).to_string();
                rec.name_after(&name, Some(run.hello.run_id));
                label = file_label(&rec.path);
            }
        }
        if last.elapsed() >= Duration::from_millis(250) {
            last = Instant::now();
            targets.publish(slot, TargetView::of(&label, name, &s, true));
        }
        let done = stop_on_bye && s.agg.current().is_some_and(|r| r.bye.is_some());
        Ok(!done)
    });
    s.finish();
    if !rec.named {
        rec.name_after("unknown", None);
        label = file_label(&rec.path);
    }
    s.name = rec.path.display().to_string();
    let mut view = TargetView::of(&label, name, &s, false);
    view.finished = true;
    targets.publish(slot, view);
    (s, rec.path, res.err())
}

/// Redraw the board about once a second until `stop` is set.
pub(crate) fn spawn_display(
    targets: Arc<TargetTable>,
    stop: Arc<AtomicBool>,
) -> Option<thread::JoinHandle<()>> {
    let tty = io::stdout().is_terminal();
    thread::Builder::new()
        .name("live".into())
        .spawn(move || {
            let mut live = live::Live::new(tty);
            let mut out = console::Stdout;
            loop {
                let stopping = stop.load(Ordering::Acquire);
                live.draw(&targets.views(), &mut out);
                if stopping {
                    return;
                }
                for _ in 0..10 {
                    if stop.load(Ordering::Acquire) {
                        break;
                    }
                    thread::sleep(Duration::from_millis(100));
                }
            }
        })
        .ok()
}

/// Run `record`; returns the exit status.
pub fn run(plan: Plan) -> Result<u8> {
    let targets = TargetTable::new();
    if let Some(addr) = &plan.metrics {
        let local = metrics::serve(addr, plan.metrics_allow.clone(), Arc::clone(&targets))?;
        console::say(format_args!("metrics at http://{local}/metrics"));
    }
    let signalled = Arc::new(AtomicBool::new(false));
    crate::platform::on_stop(Arc::clone(&signalled));
    match &plan.listen {
        Some(addr) => listen::listen(&plan, addr, targets, signalled),
        None => single(&plan, targets, signalled),
    }
}

/// One stream. SIGINT/SIGTERM end a serial line's recording as if the
/// line had ended; a pipe or file ends when its writer does (the target
/// gets the same Ctrl-C and sends its bye).
fn single(plan: &Plan, targets: Arc<TargetTable>, signalled: Arc<AtomicBool>) -> Result<u8> {
    let source = plan.source.clone().unwrap_or(Source::Stdin);
    let mut reader = source.open_until(Some(Arc::clone(&signalled)))?;
    let slot = targets.slot();
    let rec = match &plan.output {
        Some(p) => Recording::fixed(p)?,
        None => Recording::pending(&plan.out_dir, slot)?,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let display = (!plan.quiet).then(|| spawn_display(Arc::clone(&targets), Arc::clone(&stop)));
    let (session, path, err) = record_stream(
        &mut *reader,
        rec,
        &source.name(),
        &targets,
        slot,
        source.endless(),
    );
    stop.store(true, Ordering::Release);
    if let Some(Some(h)) = display {
        let _ = h.join();
    }
    console::say(format_args!("recorded {}", path.display()));
    if let Some(e) = err {
        console::say(format_args!("{}: read error: {e}", source.name()));
    }
    let code = finish(vec![session], plan.quiet)?;
    // Stopped by SIGINT/SIGTERM: the recording is closed and reported.
    Ok(if signalled.load(Ordering::Acquire) {
        EXIT_OK
    } else {
        code
    })
}

fn finish(sessions: Vec<Session>, quiet: bool) -> Result<u8> {
    let mut code = EXIT_OK;
    let mut decoded = Vec::new();
    for s in sessions {
        if let Some(e) = s.fatal() {
            console::say(&e);
            code = EXIT_FAILED;
            continue;
        }
        if !report::say_incomplete(&s) {
            code = EXIT_FAILED;
        }
        decoded.push(Decoded {
            session: s,
            end: SystemTime::now(),
        });
    }
    if quiet {
        for d in &decoded {
            for w in d.session.warnings() {
                console::warn(&w);
            }
        }
    } else {
        let text = report::render(
            &decoded,
            Options {
                format: Format::Text,
                hist_us: None,
                histofall: false,
                hist_shape: Default::default(),
            },
        )?;
        console::Std::Out.write(text.as_bytes());
    }
    Ok(code)
}
