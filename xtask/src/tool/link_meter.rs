//! The stream's load on a serial line: average bytes per second, the worst
//! one-second window and the last second, against a line of BAUD (8N1: 10
//! bits per byte), with the bytes of each kind of frame.
//!
//! Usage:
//! * `xtask tool link-meter [--baud B] FILE`: a recording. A frame's time is its
//!   report's (the `elapsed_ns` of the statistics of its epoch; frames
//!   without an epoch take the time of the report before them), so the
//!   figures do not depend on when the bytes happened to be read.
//! * `xtask tool link-meter [--baud B] --timed`: standard input (`latscope --stream -`),
//!   each frame timed when its last byte arrived.
//! * `xtask tool link-meter --reencode IN OUT`: what this build's sender would have
//!   sent for the recording IN (of any protocol version the decoder reads):
//!   its histograms and statistics, report by report, through core's
//!   `Reporter`, with its other frames as they were. Then the figures of
//!   OUT, as for a recording.
//! * `xtask tool link-meter [--baud B] --relay OUT`: a serial line stood in for by two
//!   pseudo-terminals. Prints `target: PTS` and `host: PTS`, then relays
//!   what the target writes to the host side, paced at the line's rate,
//!   timing each frame when it arrived from the target. Stops 8 s after the
//!   target side went quiet, writes what it relayed to OUT and prints the
//!   figures, plus how long the line took to drain after the last byte.
//!
//! Test helper, never part of the target program.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use latscope_core::layout::{Layout, DEFAULT_BUCKETS};
use latscope_core::protocol::{
    ArrayStore, Assembler, Reporter, SideCounts, ThreadLog, MAX_BUDGET_WAIT_NS,
};
use latscope_core::seqlock::Snapshot;
use latscope_core::wire::{Body, Decoder, Frame, MAX_FRAME};
use latscope_testkit::host::{nonblocking, Pty};

const SEC: u64 = 1_000_000_000;

/// See [`relay`].
const QUIET: Duration = Duration::from_nanos(MAX_BUDGET_WAIT_NS + 3 * SEC);

/// One frame on the line: when it was sent, its kind, its bytes with both
/// delimiters.
struct OnLine {
    t_ns: u64,
    kind: &'static str,
    epoch: Option<u32>,
    bytes: usize,
}

fn kind(body: &Body) -> (&'static str, Option<u32>) {
    match body {
        Body::Hello(_) => ("hello", None),
        Body::Stats(s) => ("stats", Some(s.epoch)),
        Body::Delta(d) => ("delta", Some(d.epoch)),
        Body::Chunk(c) => ("chunk", Some(c.epoch)),
        Body::Spike(_) => ("spike", None),
        Body::Log(_) => ("log", None),
        Body::Bye(b) => ("bye", Some(b.epoch)),
        Body::Explain(_) => ("explain", None),
        Body::Aggregate(a) => ("aggregate", Some(a.epoch)),
        Body::EvidenceHead(_) | Body::EvidencePart(_) => ("evidence", None),
        Body::TimerlatStats(s) => ("timerlat", Some(s.epoch)),
        Body::TimerlatDelta(d) => ("timerlat", Some(d.epoch)),
        Body::TimerlatChunk(c) => ("timerlat", Some(c.epoch)),
    }
}

/// Split `bytes` at the frame delimiters and decode each frame; `at(i)`
/// gives the time of the byte at offset `i`.
fn frames_of(bytes: &[u8], at: impl Fn(usize) -> u64) -> (Vec<OnLine>, BTreeMap<u32, u64>) {
    let mut out = Vec::new();
    let mut epoch_t = BTreeMap::new();
    let mut dec = Box::new(Decoder::<MAX_FRAME>::new());
    let mut start = 0;
    for (i, _) in bytes.iter().enumerate().filter(|(_, &b)| b == 0) {
        let body = &bytes[start..i];
        start = i + 1;
        if body.is_empty() {
            continue;
        }
        let mut one = Vec::with_capacity(body.len() + 2);
        one.push(0);
        one.extend_from_slice(body);
        one.push(0);
        let Some(Ok(f)) = dec.frames(&one).next() else {
            continue;
        };
        let (kind, epoch) = kind(&f.body);
        match &f.body {
            Body::Stats(s) => {
                epoch_t.entry(s.epoch).or_insert(s.elapsed_ns);
            }
            Body::Bye(b) => {
                epoch_t.entry(b.epoch).or_insert(b.elapsed_ns);
            }
            _ => {}
        }
        out.push(OnLine {
            t_ns: at(i),
            kind,
            epoch,
            bytes: body.len() + 2,
        });
    }
    (out, epoch_t)
}

/// The frames of a recording by kind (`stats`, `spike`, `explain`, ...),
/// as `link-meter FILE` lists them.
pub fn frame_kinds(bytes: &[u8]) -> BTreeMap<&'static str, u64> {
    let mut by = BTreeMap::new();
    for f in frames_of(bytes, |_| 0).0 {
        *by.entry(f.kind).or_default() += 1;
    }
    by
}

/// Give every frame its report's time (see the module docs).
fn report_times(frames: &mut [OnLine], epoch_t: &BTreeMap<u32, u64>) {
    let mut now = 0;
    for f in frames {
        if let Some(t) = f.epoch.and_then(|e| epoch_t.get(&e)) {
            now = *t;
        }
        f.t_ns = now;
    }
}

/// Print the figures.
fn print(frames: &[OnLine], baud: u64, how: &str) {
    let line = baud / 10;
    let total: usize = frames.iter().map(|f| f.bytes).sum();
    let first = frames.first().map_or(0, |f| f.t_ns);
    let last = frames.last().map_or(0, |f| f.t_ns);
    let secs = ((last - first) as f64 / SEC as f64).max(1.0);
    let pct = |b: f64| 100.0 * b / line as f64;
    let avg = total as f64 / secs;
    println!("link: {baud} baud = {line} B/s; frames timed by {how}");
    println!(
        "average: {avg:.0} B/s over {secs:.1} s ({total} B) = {:.1} % of the line (budget 10 %)",
        pct(avg)
    );
    let (worst, at) = worst_window(frames);
    println!(
        "worst second: {worst} B from {:.2} s = {:.1} % (budget 50 %)",
        (at - first) as f64 / SEC as f64,
        pct(worst as f64)
    );
    let tail: usize = frames
        .iter()
        .filter(|f| f.t_ns + SEC > last)
        .map(|f| f.bytes)
        .sum();
    println!(
        "last second: {tail} B = {:.1} % (budget 50 %)",
        pct(tail as f64)
    );
    let mut by: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for f in frames {
        let e = by.entry(f.kind).or_default();
        e.0 += 1;
        e.1 += f.bytes;
    }
    for (k, (n, b)) in by {
        println!(
            "  {k:8} {n:7} frames {b:9} B  {:7.1} B/s  mean {:5.1} B",
            b as f64 / secs,
            b as f64 / n as f64
        );
    }
}

/// The most bytes sent in any window `[t, t + 1 s)`, and its start.
fn worst_window(frames: &[OnLine]) -> (usize, u64) {
    let (mut best, mut at, mut sum, mut lo) = (0, 0, 0, 0);
    for hi in 0..frames.len() {
        sum += frames[hi].bytes;
        while frames[lo].t_ns + SEC <= frames[hi].t_ns {
            sum -= frames[lo].bytes;
            lo += 1;
        }
        if sum > best {
            (best, at) = (sum, frames[lo].t_ns);
        }
    }
    (best, at)
}

/// Read standard input, timing every read.
fn timed_stdin() -> (Vec<u8>, Vec<(usize, u64)>) {
    let t0 = Instant::now();
    let (mut bytes, mut marks) = (Vec::new(), Vec::new());
    let mut buf = [0u8; 4096];
    let mut input = std::io::stdin().lock();
    while let Ok(n) = input.read(&mut buf) {
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&buf[..n]);
        marks.push((bytes.len(), t0.elapsed().as_nanos() as u64));
    }
    (bytes, marks)
}

/// The time of the read that delivered byte `i`.
fn time_of(marks: &[(usize, u64)], i: usize) -> u64 {
    let k = marks.partition_point(|&(end, _)| end <= i);
    marks.get(k).map_or(0, |m| m.1)
}

/// Relay target -> host through two ptys at `line` bytes per second. A
/// reader thread takes the target's bytes as they come (so the times are
/// the target's, not the line's); the line hands them on in pieces, each
/// leaving when the line is free.
///
/// The target is done when it has been quiet for [`QUIET`]: longer than a
/// report can wait for the line's byte budget.
fn relay(line: u64, out: &str) -> std::io::Result<()> {
    let target = Pty::open()?;
    let host = Pty::open()?;
    println!("target: {}", target.slave_path.display());
    println!("host: {}", host.slave_path.display());
    std::io::stdout().flush()?;
    let mut from = target.master.try_clone()?;
    let mut to = host.master.try_clone()?;
    nonblocking(&from)?;
    let t0 = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel::<(Vec<u8>, u64)>();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let mut quiet_since = Instant::now();
        let mut seen = false;
        loop {
            match from.read(&mut buf) {
                Ok(n) if n > 0 => {
                    let at = t0.elapsed().as_nanos() as u64;
                    if tx.send((buf[..n].to_vec(), at)).is_err() {
                        return;
                    }
                    (seen, quiet_since) = (true, Instant::now());
                }
                _ => {
                    if seen && quiet_since.elapsed() > QUIET {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    });
    let (mut bytes, mut marks) = (Vec::new(), Vec::new());
    let mut free_at = Duration::ZERO; // when the line is next idle
    for (chunk, at) in rx {
        bytes.extend_from_slice(&chunk);
        marks.push((bytes.len(), at));
        for piece in chunk.chunks(64) {
            let start = free_at.max(t0.elapsed());
            std::thread::sleep(start.saturating_sub(t0.elapsed()));
            to.write_all(piece)?;
            free_at = start + Duration::from_nanos(piece.len() as u64 * SEC / line);
        }
    }
    let _ = reader.join();
    std::fs::write(out, &bytes)?;
    let last_in = marks.last().map_or(0, |m| m.1);
    let drain = (free_at.as_nanos() as u64).saturating_sub(last_in);
    let (mut fr, _) = frames_of(&bytes, |i| time_of(&marks, i));
    fr.sort_by_key(|f| f.t_ns);
    print(&fr, line * 10, "arrival from the target");
    println!(
        "drain: the line was busy {:.2} s after the target's last byte",
        drain as f64 / SEC as f64
    );
    Ok(())
}

/// One thread of a recording being re-encoded.
struct Replay {
    asm: Box<Assembler<ArrayStore<DEFAULT_BUCKETS>>>,
    log: Box<ThreadLog<DEFAULT_BUCKETS>>,
}

/// Re-encode `frames` (a run in the default layout) through a `Reporter`.
fn reencode(frames: &[Frame]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rep = Reporter::new(0, SEC);
    let mut th: Vec<Replay> = Vec::new();
    let mut snap = Box::new(Snapshot::<DEFAULT_BUCKETS>::new());
    let mut now = 0;
    let mut sink = |b: &[u8]| out.extend_from_slice(b);
    for f in frames {
        match &f.body {
            Body::Stats(s) => {
                let t = usize::from(s.thread);
                while th.len() <= t {
                    let i = th.len() as u16;
                    th.push(Replay {
                        asm: Box::new(Assembler::new(Layout::DEFAULT, ArrayStore::new()).unwrap()),
                        log: Box::new(ThreadLog::new(i, 1000)),
                    });
                }
                th[t].asm.on_stats(s);
                if s.epoch == 0 {
                    rep.resend(&th[t].log, &mut sink);
                    continue;
                }
                if s.epoch > rep.epoch() {
                    now = s.elapsed_ns as i64;
                    if rep.hello_due(now) {
                        if let Some(h) = frames.iter().find_map(|f| match &f.body {
                            Body::Hello(h) => Some(h),
                            _ => None,
                        }) {
                            rep.hello(now, h, &mut sink);
                        }
                    }
                    if s.last_report {
                        rep.begin_final(now);
                    } else {
                        rep.begin_report(now);
                    }
                }
                // the thread's record as of these statistics
                for (b, c) in snap.buckets.iter_mut().zip(th[t].asm.counts().counts()) {
                    *b = *c as u32;
                }
                let c = &mut snap.counters;
                c.totals.count = s.count;
                c.totals.sum = s.sum;
                c.totals.min = s.min;
                c.totals.max = s.max;
                (c.cycles, c.missed, c.early, c.last) = (s.cycles, s.missed, s.early, s.last);
                let extra = SideCounts {
                    minflt: s.minflt,
                    majflt: s.majflt,
                    dropped: s.dropped,
                };
                rep.report(&mut th[t].log, &snap, extra, &mut sink);
            }
            Body::Delta(_) | Body::Chunk(_) => {
                let t = match &f.body {
                    Body::Delta(d) => d.thread,
                    Body::Chunk(c) => c.thread,
                    _ => 0,
                };
                if let Some(r) = th.get_mut(usize::from(t)) {
                    r.asm.apply(&f.body);
                }
            }
            Body::Hello(h) => {
                if rep.next_seq() == 0 {
                    rep.hello(now, h, &mut sink);
                }
            }
            other => rep.send(other.clone(), &mut sink),
        }
    }
    out
}

/// `cargo xtask tool link-meter ARGS`.
pub fn main(args: Vec<String>) -> ExitCode {
    let mut args = args;
    let mut baud = 115_200;
    if let Some(i) = args.iter().position(|a| a == "--baud") {
        baud = args.get(i + 1).and_then(|b| b.parse().ok()).unwrap_or(0);
        args.drain(i..(i + 2).min(args.len()));
    }
    if baud < 10 {
        eprintln!("xtask tool link-meter: --baud needs a rate of at least 10");
        std::process::exit(2);
    }
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["--timed"] => {
            let (bytes, marks) = timed_stdin();
            let (fr, _) = frames_of(&bytes, |i| time_of(&marks, i));
            print(&fr, baud, "arrival");
        }
        ["--reencode", input, out] => {
            let bytes = std::fs::read(input).unwrap_or_else(|e| {
                eprintln!("xtask tool link-meter: {input}: {e}");
                std::process::exit(1)
            });
            let frames: Vec<Frame> = Decoder::<MAX_FRAME>::new()
                .frames(&bytes)
                .filter_map(Result::ok)
                .collect();
            let again = reencode(&frames);
            if let Err(e) = std::fs::write(out, &again) {
                eprintln!("xtask tool link-meter: {out}: {e}");
                std::process::exit(1);
            }
            let (mut fr, epoch_t) = frames_of(&again, |_| 0);
            report_times(&mut fr, &epoch_t);
            print(&fr, baud, "report (elapsed_ns of each epoch)");
        }
        ["--relay", out] => {
            if let Err(e) = relay(baud / 10, out) {
                eprintln!("xtask tool link-meter: relay: {e}");
                std::process::exit(1);
            }
        }
        [file] => match std::fs::read(file) {
            Ok(bytes) => {
                let (mut fr, epoch_t) = frames_of(&bytes, |_| 0);
                report_times(&mut fr, &epoch_t);
                print(&fr, baud, "report (elapsed_ns of each epoch)");
            }
            Err(e) => {
                eprintln!("xtask tool link-meter: {file}: {e}");
                std::process::exit(1);
            }
        },
        _ => {
            eprintln!("usage: xtask tool link-meter [--baud B] FILE | --timed | --relay OUT");
            std::process::exit(2);
        }
    }
    ExitCode::SUCCESS
}
