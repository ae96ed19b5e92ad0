//! `latscope-host record`: store the raw stream byte for byte, decode it on
//! the way, show it live and serve it as metrics. One stream (stdin, a file,
//! a serial line) or many (`--listen`, one thread and one recording per
//! connection).

pub mod board;
pub mod live;
pub mod metrics;

use std::fs::{self, File};
use std::io::{self, IsTerminal, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use board::{Board, TargetView};

use crate::console;
use crate::error::{Error, Result};
use crate::input::{pump, Source};
use crate::report::{self, Decoded, Format, Options};
use crate::session::Session;

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
    /// Stop listening after this many connections have ended.
    pub exit_after: Option<u64>,
    /// No live view and no final report.
    pub quiet: bool,
}

/// UTC time as `YYYYMMDDTHHMMSSZ`.
pub fn stamp(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d) = crate::report::cyclictest::civil_from_days((secs / 86_400) as i64);
    let r = secs % 86_400;
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        r / 3600,
        r % 3600 / 60,
        r % 60
    )
}

fn sanitize(host: &str) -> String {
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

    fn name_after(&mut self, host: &str) {
        if self.named {
            return;
        }
        self.named = true;
        let base = format!("{}-{}", sanitize(host), self.stamp);
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
fn check_writable(dir: &Path) -> Result<()> {
    let probe = dir.join(format!(".latscope-host-probe-{}", std::process::id()));
    File::create(&probe).map_err(|source| Error::Output {
        what: dir.to_path_buf(),
        source,
    })?;
    let _ = fs::remove_file(&probe);
    Ok(())
}

fn create(path: &Path) -> Result<File> {
    File::create(path).map_err(|source| Error::Output {
        what: path.to_path_buf(),
        source,
    })
}

/// Record one stream until it ends; publish its view on the board.
fn record_stream(
    r: &mut dyn Read,
    mut rec: Recording,
    name: &str,
    board: &Board,
    slot: u64,
    stop_on_bye: bool,
) -> (Session, PathBuf, Option<io::Error>) {
    let mut s = Session::new(name);
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
        if !rec.named {
            if let Some(run) = s.agg.current() {
                let host = run.hostname().to_string();
                rec.name_after(&host);
                label = file_label(&rec.path);
            }
        }
        if last.elapsed() >= Duration::from_millis(250) {
            last = Instant::now();
            board.publish(slot, TargetView::of(&label, &s, true));
        }
        let done = stop_on_bye && s.agg.current().is_some_and(|r| r.bye.is_some());
        Ok(!done)
    });
    s.finish();
    if !rec.named {
        rec.name_after("unknown");
        label = file_label(&rec.path);
    }
    s.name = rec.path.display().to_string();
    board.publish(slot, TargetView::of(&label, &s, false));
    (s, rec.path, res.err())
}

/// Redraw the board about once a second until `stop` is set.
fn spawn_display(board: Arc<Board>, stop: Arc<AtomicBool>) -> Option<thread::JoinHandle<()>> {
    let tty = io::stdout().is_terminal();
    thread::Builder::new()
        .name("live".into())
        .spawn(move || {
            let mut live = live::Live::new(tty);
            let mut out = console::Stdout;
            loop {
                let stopping = stop.load(Ordering::Acquire);
                live.draw(&board.views(), &mut out);
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
    let board = Board::new();
    if let Some(addr) = &plan.metrics {
        let local = metrics::serve(addr, Arc::clone(&board))?;
        console::say(format_args!("metrics at http://{local}/metrics"));
    }
    match &plan.listen {
        Some(addr) => listen(&plan, addr, board),
        None => single(&plan, board),
    }
}

fn single(plan: &Plan, board: Arc<Board>) -> Result<u8> {
    let source = plan.source.clone().unwrap_or(Source::Stdin);
    let mut reader = source.open()?;
    let slot = board.slot();
    let rec = match &plan.output {
        Some(p) => Recording::fixed(p)?,
        None => Recording::pending(&plan.out_dir, slot)?,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let display = (!plan.quiet).then(|| spawn_display(Arc::clone(&board), Arc::clone(&stop)));
    let (session, path, err) = record_stream(
        &mut *reader,
        rec,
        &source.name(),
        &board,
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
    finish(vec![session], plan.quiet)
}

fn finish(sessions: Vec<Session>, quiet: bool) -> Result<u8> {
    let mut code = 0u8;
    let mut decoded = Vec::new();
    for s in sessions {
        if let Some(e) = s.fatal() {
            console::say(&e);
            code = 1;
            continue;
        }
        if s.agg.runs.iter().any(|r| !report::run_ok(r)) {
            code = 1;
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
            },
        )?;
        console::Std::Out.write(text.as_bytes());
    }
    Ok(code)
}

fn listen_addr(addr: &str) -> String {
    if addr.contains(':') {
        addr.to_string()
    } else {
        format!("127.0.0.1:{addr}")
    }
}

fn listen(plan: &Plan, addr: &str, board: Arc<Board>) -> Result<u8> {
    let addr = listen_addr(addr);
    let listener = TcpListener::bind(&addr).map_err(|source| Error::Bind {
        addr: addr.clone(),
        source,
    })?;
    let local = listener.local_addr().map_err(|source| Error::Bind {
        addr: addr.clone(),
        source,
    })?;
    fs::create_dir_all(&plan.out_dir).map_err(|source| Error::Output {
        what: plan.out_dir.clone(),
        source,
    })?;
    check_writable(&plan.out_dir)?;
    console::say(format_args!(
        "listening on {local}, recordings in {}",
        plan.out_dir.display()
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let display = (!plan.quiet).then(|| spawn_display(Arc::clone(&board), Arc::clone(&stop)));
    let (tx, rx) = mpsc::channel::<Session>();
    let dir = plan.out_dir.clone();
    let b = Arc::clone(&board);
    thread::Builder::new()
        .name("accept".into())
        .spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let tx = tx.clone();
                let b = Arc::clone(&b);
                let dir = dir.clone();
                let _ = thread::Builder::new()
                    .name("conn".into())
                    .spawn(move || connection(stream, &dir, &b, tx));
            }
        })
        .map_err(|source| Error::Bind {
            addr: addr.clone(),
            source,
        })?;
    let mut ended = Vec::new();
    while plan.exit_after.is_none_or(|n| (ended.len() as u64) < n) {
        match rx.recv() {
            Ok(s) => ended.push(s),
            Err(_) => break,
        }
    }
    stop.store(true, Ordering::Release);
    if let Some(Some(h)) = display {
        let _ = h.join();
    }
    finish(ended, plan.quiet)
}

fn connection(stream: TcpStream, dir: &Path, board: &Board, tx: mpsc::Sender<Session>) {
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?".into());
    let slot = board.slot();
    let rec = match Recording::pending(dir, slot) {
        Ok(r) => r,
        Err(e) => {
            console::say(format_args!("{peer}: {e}"));
            return;
        }
    };
    let _ = stream.set_nodelay(true);
    let mut r = stream;
    let (session, path, err) = record_stream(&mut r, rec, &peer, board, slot, false);
    console::say(format_args!("{peer} closed; recorded {}", path.display()));
    if let Some(e) = err {
        console::say(format_args!("{peer}: {e}"));
    }
    let _ = tx.send(session);
}
