//! Core throughput figures: per-sample cost, encode (through the
//! [`Reporter`]), decode, and decode plus assembly (the [`Assembler`]);
//! and the trace's events, decoded from the kernel's binary pages against
//! parsed from its text.
//!
//! `cargo bench -p latscope-core` prints ns per operation.
//! `cargo bench -p latscope-core --bench throughput -- instructions` prints
//! instructions per operation: it runs each mode of its own (`BENCH MODE N`)
//! under `valgrind --tool=callgrind` at two counts and divides the
//! difference of their totals (start-up and exit cancel), so the figures
//! are deterministic and reproduce without hand-run differences. The
//! `decode` mode encodes its stream first: its row minus `encode`'s is the
//! decoder's own cost per frame.

use std::hint::black_box;
use std::time::Instant;

use latscope_core::cycle::{Cycle, CycleConfig, Step};
use latscope_core::explain::parse_line;
use latscope_core::layout::Layout;
use latscope_core::layout::{DEFAULT_BUCKETS, DEFAULT_LINEAR_US};
use latscope_core::protocol::{ArrayStore, Assembler, Reporter, SideCounts, ThreadLog};
use latscope_core::ringbuf::{Decoder as PageDecoder, EventFormats, Page, PageHeader};
use latscope_core::seqlock::{SharedHistogram, Snapshot};
use latscope_core::wire::{Body, Decoder, MAX_FRAME};

static REC: SharedHistogram<DEFAULT_BUCKETS> = SharedHistogram::new(DEFAULT_LINEAR_US);

/// A cheap deterministic latency source: mostly 2–40 µs, a few ms-scale.
struct Lat(u64);
impl Lat {
    #[inline]
    fn next(&mut self) -> i64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let base = 2_000 + (self.0 % 38_000);
        (if self.0.is_multiple_of(1000) {
            base * 100
        } else {
            base
        }) as i64
    }
}

fn publish(n: u64) -> f64 {
    let mut w = REC.writer().expect("one writer");
    let mut lat = Lat(0x1234_5678);
    let t = Instant::now();
    for _ in 0..n {
        w.publish(black_box(lat.next()), 0);
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

fn cycle(n: u64) -> f64 {
    let rec: Box<SharedHistogram<DEFAULT_BUCKETS>> =
        Box::new(SharedHistogram::new(DEFAULT_LINEAR_US));
    let mut w = rec.writer().expect("one writer");
    let mut c = Cycle::new(
        CycleConfig {
            interval_ns: 1_000_000,
            spike_ns: 100_000,
            ..CycleConfig::DEFAULT
        },
        0,
    )
    .expect("valid config");
    let mut lat = Lat(0x9876_5432);
    let t = Instant::now();
    for _ in 0..n {
        let now = c.deadline() + lat.next();
        if let Step::Sample { sample, .. } = c.on_wake(black_box(now)) {
            w.publish(sample.latency, sample.missed);
        }
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

fn clock(n: u64) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        black_box(Instant::now());
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

/// A stream as a target sends it: 4 threads, 100 samples each per report,
/// through core's [`Reporter`], until it holds at least `frames` frames.
fn sample_stream(frames: usize) -> Vec<u8> {
    const T: usize = 4;
    let recs: Vec<Box<SharedHistogram<DEFAULT_BUCKETS>>> = (0..T)
        .map(|_| Box::new(SharedHistogram::new(DEFAULT_LINEAR_US)))
        .collect();
    let mut writers: Vec<_> = recs
        .iter()
        .map(|r| r.writer().expect("one writer"))
        .collect();
    let mut logs: Vec<Box<ThreadLog<DEFAULT_BUCKETS>>> = (0..T)
        .map(|t| Box::new(ThreadLog::new(t as u16, DEFAULT_LINEAR_US)))
        .collect();
    let mut snap = Box::new(Snapshot::<DEFAULT_BUCKETS>::new());
    let mut rep = Reporter::new(0, 1_000_000_000);
    let mut out = Vec::new();
    let mut n = 0usize;
    let mut lat = Lat(0x5EED);
    let mut now = 0;
    while n < frames {
        for w in &mut writers {
            for _ in 0..100 {
                w.publish(lat.next(), 0);
            }
        }
        now += 1_000_000_000;
        rep.begin_report(now);
        for (rec, log) in recs.iter().zip(logs.iter_mut()) {
            rec.snapshot(&mut snap, 100).expect("no writer running");
            rep.report(log, &snap, SideCounts::default(), &mut |b: &[u8]| {
                out.extend_from_slice(b);
                n += 1;
            });
        }
    }
    out
}

fn encode(frames: usize) -> (f64, f64) {
    let t = Instant::now();
    let s = sample_stream(frames);
    let secs = t.elapsed().as_secs_f64();
    (s.len() as f64 / secs / 1e6, frames as f64 / secs)
}

/// Decode and assemble every thread's histogram, as a receiver does.
fn assemble(data: &[u8]) -> (f64, f64, u64) {
    let mut dec = Box::new(Decoder::<MAX_FRAME>::new());
    let mut asm: Vec<Box<Assembler<ArrayStore<DEFAULT_BUCKETS>>>> = (0..4)
        .map(|_| Box::new(Assembler::new(Layout::DEFAULT, ArrayStore::new()).expect("legal")))
        .collect();
    let t = Instant::now();
    let mut n = 0u64;
    let mut rest = data;
    while !rest.is_empty() {
        let (ev, r) = dec.feed_ref(rest);
        rest = r;
        if let Some(Ok(f)) = ev {
            let thread = match &f.body {
                Body::Delta(d) => d.thread,
                Body::Stats(s) => s.thread,
                Body::Chunk(c) => c.thread,
                _ => continue,
            };
            if let Some(a) = asm.get_mut(usize::from(thread)) {
                a.apply(&f.body);
            }
            n += 1;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let exact = asm.iter().filter(|a| a.exact_now()).count() as u64;
    (data.len() as f64 / secs / 1e6, n as f64 / secs, exact)
}

fn decode(data: &[u8]) -> (f64, f64, u64) {
    let mut dec = Box::new(Decoder::<MAX_FRAME>::new());
    let t = Instant::now();
    let mut n = 0u64;
    for chunk in data.chunks(64 * 1024) {
        let mut rest = chunk;
        while !rest.is_empty() {
            let (ev, r) = dec.feed_ref(rest);
            rest = r;
            if let Some(Ok(f)) = ev {
                black_box(f);
                n += 1;
            }
        }
    }
    let secs = t.elapsed().as_secs_f64();
    (
        data.len() as f64 / secs / 1e6,
        n as f64 / secs,
        dec.stats().crc_errors,
    )
}

/// The x86-64 fixture (`core/src/ringbuf/fixtures/`): its pages and the
/// kernel's text of the same 170 events.
const PAGES: &[u8] = include_bytes!("../src/ringbuf/fixtures/x86_64-6.18/cpu0.pages");
const TEXT: &str = include_str!("../src/ringbuf/fixtures/x86_64-6.18/cpu0.trace");
const HEADER_PAGE: &str = include_str!("../src/ringbuf/fixtures/x86_64-6.18/header_page");
const FORMATS: [&str; 7] = [
    include_str!("../src/ringbuf/fixtures/x86_64-6.18/irq_handler_entry.format"),
    include_str!("../src/ringbuf/fixtures/x86_64-6.18/irq_handler_exit.format"),
    include_str!("../src/ringbuf/fixtures/x86_64-6.18/softirq_entry.format"),
    include_str!("../src/ringbuf/fixtures/x86_64-6.18/softirq_exit.format"),
    include_str!("../src/ringbuf/fixtures/x86_64-6.18/sched_switch.format"),
    include_str!("../src/ringbuf/fixtures/x86_64-6.18/sched_wakeup.format"),
    include_str!("../src/ringbuf/fixtures/x86_64-6.18/print.format"),
];

/// The fixture's pages decoded `reps` times: ns per event.
fn trace_pages(reps: u64) -> f64 {
    let header = PageHeader::parse(HEADER_PAGE).expect("the fixture's header_page");
    let mut formats = EventFormats::new();
    for f in FORMATS {
        formats.add(f).expect("a fixture format");
    }
    let mut dec = PageDecoder::new(formats);
    let mut n = 0u64;
    let t = Instant::now();
    for _ in 0..reps {
        for bytes in PAGES.chunks(4096) {
            let page = Page::new(header, black_box(bytes)).expect("a fixture page");
            for raw in page.events() {
                black_box(dec.decode(0, &raw.expect("an event")).expect("decodes"));
                n += 1;
            }
        }
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

/// The fixture's text parsed `reps` times: ns per event.
fn trace_text(reps: u64) -> f64 {
    let mut n = 0u64;
    let t = Instant::now();
    for _ in 0..reps {
        for line in black_box(TEXT).lines() {
            if let Some(e) = parse_line(line) {
                black_box(e);
                n += 1;
            }
        }
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

/// The modes whose instructions per operation `throughput instructions`
/// counts: the mode, its two counts (their difference cancels start-up
/// and exit), and what one operation is.
const COUNTED: [(&str, u64, u64, &str); 6] = [
    ("publish", 200_000, 400_000, "publish one sample (seqlock)"),
    (
        "cycle",
        200_000,
        400_000,
        "cycle logic + publish, one sample",
    ),
    (
        "encode",
        20_000,
        40_000,
        "one frame: 100 samples recorded, snapshotted and encoded (Reporter)",
    ),
    ("decode", 20_000, 40_000, "the same, and the frame decoded"),
    ("pages", 200, 400, "one trace event from binary pages"),
    ("text", 200, 400, "one trace event from text lines"),
];

/// The events of one rep of the trace modes (the fixture's).
fn fixture_events() -> u64 {
    TEXT.lines().filter(|l| parse_line(l).is_some()).count() as u64
}

/// Callgrind's instruction count (Ir) of one run of `MODE N` of this
/// program.
fn callgrind_ir(mode: &str, n: u64) -> Result<u64, String> {
    let me = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let out = std::env::temp_dir().join(format!("latscope-cg-{}-{mode}-{n}", std::process::id()));
    let status = std::process::Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(&me)
        .args([mode, &n.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("valgrind: {e} (install valgrind)"))?;
    if !status.success() {
        return Err(format!("valgrind --tool=callgrind {mode} {n}: {status}"));
    }
    let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let _ = std::fs::remove_file(&out);
    text.lines()
        .find_map(|l| {
            l.strip_prefix("totals:")
                .or_else(|| l.strip_prefix("summary:"))
        })
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| format!("{}: no totals line", out.display()))
}

/// `throughput instructions`: each counted mode run twice under
/// callgrind, and the instructions per operation from the difference.
/// Deterministic, so one run each; printed as a table.
fn instructions() -> Result<(), String> {
    let events = fixture_events();
    println!("| operation | instructions (Ir) | mode, counts |");
    println!("|---|---|---|");
    let mut encode = None;
    for (mode, a, b, what) in COUNTED {
        let ir = callgrind_ir(mode, b)? as f64 - callgrind_ir(mode, a)? as f64;
        let per = (b - a) as f64
            * if matches!(mode, "pages" | "text") {
                events as f64
            } else {
                1.0
            };
        let each = ir / per;
        println!("| {what} | {each:.1} | `{mode} {b}` - `{mode} {a}` |");
        match mode {
            "encode" => encode = Some(each),
            "decode" => {
                if let Some(e) = encode {
                    println!(
                        "| decode one frame (the two rows above) | {:.1} | `decode` - `encode` |",
                        each - e
                    );
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    // `throughput instructions`: instructions per operation, by callgrind
    if args.first().map(String::as_str) == Some("instructions") {
        if let Err(e) = instructions() {
            eprintln!("throughput instructions: {e}");
            std::process::exit(1);
        }
        return;
    }
    // `throughput FILE`: decode speed on a real recording (repeated to 100 MB)
    if let [path] = args.as_slice() {
        let one = std::fs::read(path).expect("a readable recording");
        let reps = (100_000_000 / one.len().max(1)).max(1);
        let data: Vec<u8> = one.iter().copied().cycle().take(one.len() * reps).collect();
        let (mbs, fps, errs) = decode(&data);
        println!(
            "decode {path}: {mbs:7.1} MB/s  {fps:10.0} frames/s  ({} bytes x {reps}, mean frame {} B, {errs} CRC errors)",
            one.len(),
            (data.len() as f64 / (fps * data.len() as f64 / mbs / 1e6)) as u64
        );
        return;
    }
    // `throughput MODE N` runs one mode N times (for callgrind differences)
    if let [mode, n] = args.as_slice() {
        let n: u64 = n.parse().expect("a count");
        match mode.as_str() {
            "publish" => black_box(publish(n)),
            "cycle" => black_box(cycle(n)),
            "decode" => black_box(decode(&sample_stream(n as usize)).0),
            "assemble" => black_box(assemble(&sample_stream(n as usize)).0),
            // subtract from `decode` for the decoder's own cost
            "encode" => black_box(sample_stream(n as usize).len() as f64),
            "pages" => black_box(trace_pages(n)),
            "text" => black_box(trace_text(n)),
            _ => panic!("modes: publish, cycle, decode, assemble, encode, pages, text"),
        };
        return;
    }
    let n = 20_000_000;
    println!(
        "publish one sample (seqlock):       {:6.2} ns/sample",
        publish(n)
    );
    println!(
        "cycle logic + publish:               {:6.2} ns/sample",
        cycle(n)
    );
    println!(
        "clock read (vDSO clock_gettime):     {:6.2} ns/call",
        clock(n)
    );
    let (mbs, fps) = encode(2_000_000);
    println!("encode:  {mbs:7.1} MB/s  {fps:10.0} frames/s");
    let data = sample_stream(2_000_000);
    let (mbs, fps, errs) = decode(&data);
    assert_eq!(errs, 0);
    println!(
        "decode:  {mbs:7.1} MB/s  {fps:10.0} frames/s  ({} MB, mean frame {} B)",
        data.len() / 1_000_000,
        data.len() / 2_000_000
    );
    let (mbs, fps, exact) = assemble(&data);
    assert_eq!(exact, 4, "every thread exact at the end");
    println!("decode + assemble: {mbs:7.1} MB/s  {fps:10.0} frames/s");
    println!(
        "trace events from binary pages:      {:6.1} ns/event",
        trace_pages(20_000)
    );
    println!(
        "trace events from text lines:        {:6.1} ns/event",
        trace_text(20_000)
    );
}
