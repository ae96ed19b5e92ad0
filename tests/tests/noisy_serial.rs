//! A noisy serial line, checked frame by frame. `stream_serial.rs` shows
//! that a noisy line is survived; this test checks the exact claims:
//!
//! - the relay (a pty pair, paced at 115200 baud = 11,520 B/s) keeps a
//!   copy of the clean bytes and the index of every byte it flipped or
//!   dropped, so the test knows which frames were hit;
//! - every frame that was not hit is recovered, equal, by the host;
//! - each thread's figures that the host calls exact equal the target's
//!   own statistics frame of that epoch, and that epoch is no older than
//!   the latest epoch whose snapshot chunks covering the whole histogram
//!   arrived intact;
//! - when the final statistics and the bye arrived whole, the run is exact
//!   at the end and equals the target's `--json`;
//! - at 1e-3 per byte nothing panics.
//!
//! Rates 1e-5, 1e-4 and 1e-3 of bit flips per byte, with drops at a tenth
//! of that. The target asks for a report every 100 ms so that a few
//! seconds carry enough frames; the serial line's byte budget (7 % of the
//! line) spaces them out, to 70 to 95 frames and about 5 KB in 5 s.
//!
//! The corruption of a byte depends only on the case's seed and the
//! byte's index ([`Noise`]). At 1e-5 and 1e-4 a stream of 5 KB is mostly
//! not hit at all, so those cases' seeds are chosen to hit it: one flip at
//! 1e-5, a flip and a drop at 1e-4, all inside the shortest stream the test
//! accepts ([`MIN_STREAM`]; checked without a run by
//! `every_case_corrupts_inside_the_shortest_stream`). Each run then asserts
//! that it was hit, and not implausibly often.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use latscope_core::wire::{Body, Decoder, Frame, ThreadStats, MAX_FRAME};
use latscope_testkit::host::{
    assert_matches_target, bins, decode_frames, first_run, host_report_json, read_json,
    serial_host, target_args, Pty, Reaper,
};
use latscope_testkit::Scratch;
use serde_json::Value;

const LINE_RATE: u64 = 11_520;

/// The shortest stream a run may record, in bytes (5 s of reports make
/// about 4.7 to 5 KB).
const MIN_STREAM: usize = 3_000;

/// A noisy line: flips and drops per byte, and the seed of their places.
#[derive(Debug, Clone, Copy)]
struct Case {
    flip: f64,
    drop: f64,
    seed: u64,
}

/// One isolated flip, in the middle of the stream.
const AT_1E_5: Case = Case {
    flip: 1e-5,
    drop: 1e-6,
    seed: 49,
};
/// A drop and a flip, 600 bytes apart.
const AT_1E_4: Case = Case {
    flip: 1e-4,
    drop: 1e-5,
    seed: 425,
};
/// Flips and drops from a third of the stream on, about one per 600
/// bytes.
const AT_1E_3: Case = Case {
    flip: 1e-3,
    drop: 1e-4,
    seed: 13,
};

/// What the relay does with one byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Keep,
    /// Sent with this bit mask flipped.
    Flip(u8),
    Drop,
}

/// The fate of each byte in turn: a function of the case's seed and the
/// byte's index only, not of timing.
struct Noise {
    rnd: Box<dyn FnMut() -> u64 + Send>,
    flip_t: u64,
    drop_t: u64,
}

impl Noise {
    fn new(case: Case) -> Noise {
        Noise {
            rnd: Box::new(latscope_testkit::host::rng(case.seed)),
            flip_t: (case.flip * u64::MAX as f64) as u64,
            drop_t: (case.drop * u64::MAX as f64) as u64,
        }
    }

    fn next(&mut self) -> Fate {
        if (self.rnd)() < self.drop_t {
            return Fate::Drop;
        }
        let r = (self.rnd)();
        if r < self.flip_t {
            Fate::Flip(1 << ((r >> 40) % 8))
        } else {
            Fate::Keep
        }
    }
}

#[derive(Default)]
struct Tap {
    clean: Vec<u8>,
    /// Indices into `clean` of bytes flipped or dropped.
    hits: Vec<usize>,
}

/// A relay that paces, corrupts, and records what it did.
fn relay(
    mut from: std::fs::File,
    mut to: std::fs::File,
    mut noise: Noise,
    stop: Arc<AtomicBool>,
    tap: Arc<Mutex<Tap>>,
) -> std::thread::JoinHandle<()> {
    latscope_testkit::host::nonblocking(&from).expect("fcntl(O_NONBLOCK) of the relay's input");
    std::thread::spawn(move || {
        let start = Instant::now();
        let mut sent = 0u64;
        let mut buf = [0u8; 256];
        while !stop.load(Ordering::Relaxed) {
            let n = match from.read(&mut buf) {
                Ok(n) if n > 0 => n,
                _ => {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                }
            };
            for &b in &buf[..n] {
                let b = {
                    let mut t = tap.lock().unwrap();
                    t.clean.push(b);
                    let idx = t.clean.len() - 1;
                    match noise.next() {
                        Fate::Keep => b,
                        Fate::Flip(mask) => {
                            t.hits.push(idx);
                            b ^ mask
                        }
                        Fate::Drop => {
                            t.hits.push(idx);
                            continue;
                        }
                    }
                };
                sent += 1;
                let due = Duration::from_nanos(sent * 1_000_000_000 / LINE_RATE);
                let now = start.elapsed();
                if due > now {
                    std::thread::sleep(due - now);
                }
                if to.write_all(&[b]).is_err() {
                    return;
                }
            }
        }
    })
}

/// The frames of a clean stream with the span of bytes each depends on
/// (both delimiters included).
fn frames_with_spans(clean: &[u8]) -> Vec<(Frame, usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, &b) in clean.iter().enumerate() {
        if b != 0 {
            if start.is_none() {
                start = Some(i);
            }
            continue;
        }
        if let Some(a) = start.take() {
            if a == 0 {
                continue; // no leading delimiter seen
            }
            let mut d = Decoder::<MAX_FRAME>::new();
            let mut bytes = vec![0u8];
            bytes.extend_from_slice(&clean[a..i]);
            bytes.push(0);
            for f in d.frames(&bytes).filter_map(Result::ok) {
                out.push((f, a - 1, i));
            }
        }
    }
    out
}

/// A chunk's range as sent, and whether it arrived intact.
type Span = (u16, u16, bool);

/// Whether chunks of one epoch, as sent, arrived intact and cover every
/// bucket of the default layout from 0 on.
fn whole(chunks: &[Span]) -> bool {
    let mut at = 0usize;
    for &(start, end, ok) in chunks {
        if !ok || usize::from(start) != at {
            return false;
        }
        at = usize::from(end);
    }
    at >= latscope_core::layout::DEFAULT_BUCKETS
}

fn decode(bytes: &[u8]) -> Vec<Frame> {
    decode_frames(bytes).0
}

/// What a case's run saw: the relay's tap, the host's recording, the
/// target's `--json`, and whether the host stopped by itself (on the bye).
struct Run {
    _dir: Scratch,
    tap: Tap,
    rec: PathBuf,
    json: PathBuf,
    exited: bool,
}

/// The target measuring for 5 s into a serial line that `case` corrupts,
/// and a host recording the line's other end.
fn record(case: Case) -> Run {
    let dir = Scratch::new("noisy-frames");
    let target_side = Pty::open().unwrap();
    let host_side = Pty::open().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let tap = Arc::new(Mutex::new(Tap::default()));
    let h_relay = relay(
        target_side.master.try_clone().unwrap(),
        host_side.master.try_clone().unwrap(),
        Noise::new(case),
        stop.clone(),
        tap.clone(),
    );
    let json = dir.join("t.json");
    let rec = dir.join("noisy.lsr");
    let host = serial_host(&host_side.slave_path, &rec);
    let mut t = Reaper::new(
        Command::new(bins().latscope)
            .args(target_args("5", &json))
            .arg("--report-interval=100ms")
            .arg(format!(
                "--stream=serial:{}:115200",
                target_side.slave_path.display()
            ))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(t.wait(Duration::from_secs(60)).status.success());
    let exited = stop_host(host, case);
    stop.store(true, Ordering::Relaxed);
    h_relay.join().unwrap();
    let tap = std::mem::take(&mut *tap.lock().unwrap());
    Run {
        _dir: dir,
        tap,
        rec,
        json,
        exited,
    }
}

/// Let the paced line drain, then stop the host if the bye was lost.
/// Returns whether it exited by itself.
fn stop_host(mut h: Reaper, case: Case) -> bool {
    let exited =
        latscope_testkit::wait::poll(Duration::from_secs(20), || h.child().try_wait().unwrap())
            .is_some();
    if !exited {
        let _ = h.child().kill();
    }
    let hr = h.wait(Duration::from_secs(5));
    eprintln!("host exited by itself: {exited}, status {:?}", hr.status);
    // A serial line has no end of file: only the bye tells the host the run
    // is over. If it exited by itself it must have exited cleanly; if it had
    // to be stopped, the bye must have been hit (checked by run_case).
    assert!(
        !exited || hr.status.code().is_some(),
        "rate {}: host died by a signal: {}",
        case.flip,
        String::from_utf8_lossy(&hr.stderr)
    );
    exited
}

/// The run was hit, and not implausibly often for its rates.
fn check_hits(case: Case, tap: &Tap) {
    let (len, n) = (tap.clean.len(), tap.hits.len());
    assert!(
        len >= MIN_STREAM,
        "rate {}: a stream of {len} bytes, the seeds are chosen for {MIN_STREAM}",
        case.flip
    );
    let expected = (case.flip + case.drop) * len as f64;
    let most = (expected + 4.0 * expected.sqrt() + 2.0) as usize;
    assert!(
        (1..=most).contains(&n),
        "rate {}: {n} bytes hit of {len}, expected 1 to {most}",
        case.flip
    );
}

/// A frame as sent, and whether a corrupted byte fell on it.
struct Sent {
    frame: Frame,
    hit: bool,
}

fn sent_frames(tap: &Tap) -> Vec<Sent> {
    frames_with_spans(&tap.clean)
        .into_iter()
        .map(|(frame, a, z)| Sent {
            frame,
            hit: tap.hits.iter().any(|&i| i >= a && i <= z),
        })
        .collect()
}

/// Every frame not hit is recovered, equal. Returns how many were hit.
fn check_recovered(case: Case, sent: &[Sent], rec: &std::path::Path) -> usize {
    let got = decode(&std::fs::read(rec).unwrap());
    let by_seq: BTreeMap<u32, &Frame> = got.iter().map(|f| (f.seq, f)).collect();
    let mut lost = 0;
    for s in sent {
        if s.hit {
            lost += 1;
            continue;
        }
        assert_eq!(
            by_seq.get(&s.frame.seq).copied(),
            Some(&s.frame),
            "rate {}: frame seq {} was not hit but not recovered",
            case.flip,
            s.frame.seq
        );
    }
    lost
}

/// The host's report counts link errors when frames were hit.
fn check_errors_counted(case: Case, doc: &Value, lost: usize) {
    let l = &doc["link"];
    let errs: u64 = ["crc_errors", "oversize", "malformed", "seq_gaps"]
        .iter()
        .map(|k| l[*k].as_u64().unwrap_or(0))
        .sum();
    assert!(
        errs > 0,
        "rate {}: {lost} frames hit, no error counted: {l}",
        case.flip
    );
}

/// What was sent of each (thread, epoch), and whether it arrived intact.
#[derive(Default)]
struct Epochs {
    stats: BTreeMap<(u16, u32), ThreadStats>,
    stats_ok: BTreeMap<(u16, u32), bool>,
    chunks: BTreeMap<(u16, u32), Vec<Span>>,
    bye_ok: bool,
}

impl Epochs {
    fn of(sent: &[Sent]) -> Epochs {
        let mut ep = Epochs::default();
        for Sent { frame, hit } in sent {
            match &frame.body {
                Body::Stats(s) => {
                    ep.stats.insert((s.thread, s.epoch), *s);
                    ep.stats_ok.insert((s.thread, s.epoch), !hit);
                }
                Body::Chunk(c) => ep
                    .chunks
                    .entry((c.thread, c.epoch))
                    .or_default()
                    .push((c.start, c.end, !hit)),
                Body::Bye(_) => ep.bye_ok = !hit,
                _ => {}
            }
        }
        ep
    }

    /// The latest epoch of thread `th` whose stats and chunks, covering
    /// every bucket, all arrived intact (a full snapshot, or a rolling
    /// chunk that covered the whole histogram).
    fn floor(&self, th: u16) -> Option<u32> {
        self.chunks
            .iter()
            .filter(|((ct, e), v)| {
                *ct == th && whole(v) && self.stats_ok.get(&(th, *e)) == Some(&true)
            })
            .map(|((_, e), _)| *e)
            .max()
    }

    /// Whether the bye and every thread's final figures arrived whole.
    fn final_ok(&self) -> bool {
        let last = self.stats.keys().map(|(_, e)| *e).max().unwrap();
        self.bye_ok
            && self
                .stats_ok
                .iter()
                .filter(|((_, e), _)| *e == last)
                .all(|(_, ok)| *ok)
            && self
                .chunks
                .iter()
                .filter(|((_, e), _)| *e == last)
                .all(|(_, v)| whole(v))
    }
}

/// Each thread's figures the host calls exact are the target's own of
/// that epoch, no older than the latest snapshot that arrived whole; a
/// thread not exact now was exact as of that snapshot.
fn check_exact_figures(case: Case, run: &Value, ep: &Epochs) {
    let flip = case.flip;
    let threads = run["threads"].as_array().unwrap();
    let thread_of = |t: &Value| t["thread"].as_u64().unwrap() as u16;
    // The run's exact epoch is the earliest over its threads.
    let min_floor = threads
        .iter()
        .map(|t| ep.floor(thread_of(t)).unwrap_or(0))
        .min()
        .unwrap_or(0);
    for t in threads {
        let th = thread_of(t);
        let floor = ep.floor(th);
        if t["exact"] != true {
            let known = run["exact_epoch"].as_u64().map(|e| e as u32);
            if let Some(fl) = floor {
                assert!(
                    known.is_some_and(|k| k >= fl.min(min_floor)),
                    "rate {flip}: T{th} not exact, and the run's exact epoch {known:?} is before snapshot {fl}, which arrived whole"
                );
            }
            continue;
        }
        let e = t["epoch"].as_u64().unwrap() as u32;
        if let Some(fl) = floor {
            assert!(
                e >= fl,
                "rate {flip}: T{th} exact as of {e}, snapshot {fl} arrived whole"
            );
        }
        let s = ep.stats.get(&(th, e));
        let s = s.unwrap_or_else(|| panic!("rate {flip}: T{th}: no stats of epoch {e} sent"));
        let want = [s.cycles, s.count, s.max, s.min].map(Some);
        let got = ["cycles", "count", "max_ns", "min_ns"].map(|k| t[k].as_u64());
        assert_eq!(got, want, "rate {flip}: T{th}@{e}: cycles, count, max, min");
    }
}

/// Exact at the end when the final figures and the bye were intact, and
/// then equal to the target's `--json`.
fn check_exact_at_end(case: Case, run: &Value, ep: &Epochs, json: &std::path::Path) {
    if ep.final_ok() {
        assert_eq!(
            run["exact_at_end"], true,
            "rate {}: final figures and bye intact, not exact at end",
            case.flip
        );
    }
    if run["exact_at_end"] == true {
        assert_matches_target(run, &read_json(json));
    }
}

fn run_case(case: Case) {
    let flip = case.flip;
    let run = record(case);
    check_hits(case, &run.tap);
    let sent = sent_frames(&run.tap);
    assert!(sent.len() > 50, "rate {flip}: only {} frames", sent.len());
    let lost = check_recovered(case, &sent, &run.rec);
    eprintln!(
        "rate {flip}: {} bytes, {} hits, {} frames sent, {} intact (all recovered), {lost} hit",
        run.tap.clean.len(),
        run.tap.hits.len(),
        sent.len(),
        sent.len() - lost,
    );
    assert!(lost > 0, "rate {flip}: no corrupted byte fell on a frame");
    let (doc, code, stderr) = host_report_json(&run.rec);
    assert!(code == 0 || code == 1, "rate {flip}: {stderr}");
    check_errors_counted(case, &doc, lost);
    let ep = Epochs::of(&sent);
    assert!(
        run.exited || !ep.bye_ok,
        "rate {flip}: the bye arrived intact but the host did not stop"
    );
    let r = first_run(&doc);
    check_exact_figures(case, r, &ep);
    check_exact_at_end(case, r, &ep, &run.json);
}

#[test]
fn every_frame_not_hit_is_recovered_at_1e_5() {
    run_case(AT_1E_5);
}

#[test]
fn every_frame_not_hit_is_recovered_at_1e_4() {
    run_case(AT_1E_4);
}

#[test]
fn at_1e_3_nothing_panics_and_intact_frames_survive() {
    run_case(AT_1E_3);
}

/// The cases' seeds corrupt what their runs rely on inside the shortest
/// stream a run may record: at least `flips` flips and `drops` drops.
#[test]
fn every_case_corrupts_inside_the_shortest_stream() {
    for (case, flips, drops) in [(AT_1E_5, 1, 0), (AT_1E_4, 1, 1), (AT_1E_3, 3, 1)] {
        let mut noise = Noise::new(case);
        let fates: Vec<Fate> = (0..MIN_STREAM).map(|_| noise.next()).collect();
        let f = fates.iter().filter(|f| matches!(f, Fate::Flip(_))).count();
        let d = fates.iter().filter(|f| **f == Fate::Drop).count();
        assert!(
            f >= flips && d >= drops,
            "{case:?}: {f} flips and {d} drops in the first {MIN_STREAM} bytes, want {flips} and {drops}"
        );
    }
}
