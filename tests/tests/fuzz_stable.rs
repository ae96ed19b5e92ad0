//! The cargo-fuzz targets of `fuzz/` on stable Rust, through proptest: the
//! same properties (the fuzz crate's [`checks`]), fed with
//! random bytes and with mutations of the committed corpus. Also replays
//! the corpus and every crash reproducer in `fuzz/regressions/`.
//!
//! By default each target runs a fixed, seeded number of cases (quick,
//! reproducible). `FUZZ_STABLE_SECS=N` runs each target for N seconds with
//! a random seed instead (what `fuzz/run` does without nightly); a failing
//! input is written to `fuzz/artifacts/<target>/stable-<hash>` and printed
//! in hex, ready to be committed under `fuzz/regressions/<target>/`.
//!
//! The host target also bounds memory: this binary's allocator counts what
//! each thread holds ([`Counting`]), and a stream, however forged, may cost
//! the host's decoding and its text report at most
//! [`STREAM_LIMIT`] bytes at its peak. Its inputs include streams forged with
//! the core's encoder ([`latscope_testkit::forge`]).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use latscope_core::layout::{Layout, MAX_LINEAR_US, MAX_TARGET_BUCKETS};
use latscope_core::wire::MAX_THREADS;
use latscope_fuzz::checks;
use latscope_host::aggregate::SERIES_POINTS;
use latscope_testkit::alloc::{measure, Counting};
use latscope_testkit::forge::ForgedRun;

#[global_allocator]
static ALLOC: Counting = Counting;

/// What one stream may cost the host at most.
const STREAM_LIMIT: usize = 64 << 20;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != "README.md"))
                .map(|p| {
                    let b = std::fs::read(&p).unwrap();
                    (p, b)
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn corpus(target: &str) -> Vec<Vec<u8>> {
    files(&fuzz_dir().join("corpus").join(target))
        .into_iter()
        .map(|(_, b)| b)
        .collect()
}

/// Replay the corpus and the regressions of `target`.
fn replay(target: &str, check: fn(&[u8])) -> usize {
    let mut n = 0;
    for sub in ["corpus", "regressions"] {
        for (p, b) in files(&fuzz_dir().join(sub).join(target)) {
            if catch_unwind(|| check(&b)).is_err() {
                panic!("{target}: {} fails", p.display());
            }
            n += 1;
        }
    }
    n
}

/// Random mutations of corpus entries: flips, truncation, splices and
/// insertions, so that the decoder sees nearly-valid frames, not only noise.
fn mutated(seeds: Vec<Vec<u8>>) -> BoxedStrategy<Vec<u8>> {
    if seeds.is_empty() {
        return proptest::collection::vec(any::<u8>(), 0..64).boxed();
    }
    let n = seeds.len();
    (
        0..n,
        proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..4), 0..12),
        any::<prop::sample::Index>(),
    )
        .prop_map(move |(i, edits, cut)| {
            let mut b = seeds[i].clone();
            for (at, byte, op) in edits {
                if b.is_empty() {
                    b.push(byte);
                    continue;
                }
                let k = at.index(b.len());
                match op {
                    0 => b[k] ^= byte | 1,
                    1 => b.insert(k, byte),
                    2 => {
                        b.remove(k);
                    }
                    _ => b[k] = 0,
                }
            }
            if !b.is_empty() && cut.index(4) == 0 {
                b.truncate(cut.index(b.len()));
            }
            b
        })
        .boxed()
}

/// Run `check` on values of `strategy`: a seeded fixed number of cases, or
/// for `FUZZ_STABLE_SECS` seconds with a random seed.
fn fuzz(target: &str, strategy: BoxedStrategy<Vec<u8>>, check: fn(&[u8])) {
    fuzz_n(target, strategy, check, 3000)
}

/// [`fuzz`] with `n` cases when not timed.
fn fuzz_n(target: &str, strategy: BoxedStrategy<Vec<u8>>, check: fn(&[u8]), n: u64) {
    let replayed = replay(target, check);
    let secs: Option<u64> = std::env::var("FUZZ_STABLE_SECS")
        .ok()
        .and_then(|s| s.parse().ok());
    let mut runner = match secs {
        Some(_) => TestRunner::new(Config::default()),
        None => TestRunner::new_with_rng(
            Config::default(),
            TestRng::deterministic_rng(RngAlgorithm::ChaCha),
        ),
    };
    let deadline = secs.map(|s| Instant::now() + Duration::from_secs(s));
    let mut cases = 0u64;
    loop {
        match deadline {
            Some(d) if Instant::now() >= d => break,
            None if cases >= n => break,
            _ => {}
        }
        let input = strategy.new_tree(&mut runner).unwrap().current();
        cases += 1;
        if catch_unwind(AssertUnwindSafe(|| check(&input))).is_err() {
            let hash = input.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
                (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
            });
            let dir = fuzz_dir().join("artifacts").join(target);
            let _ = std::fs::create_dir_all(&dir);
            let p = dir.join(format!("stable-{hash:016x}"));
            let _ = std::fs::write(&p, &input);
            let hex: String = input.iter().map(|b| format!("{b:02x}")).collect();
            panic!(
                "{target}: failing input after {cases} cases, saved to {}: {hex}",
                p.display()
            );
        }
    }
    eprintln!("{target}: {replayed} corpus/regression inputs, {cases} generated cases: ok");
}

#[test]
fn fuzz_decoder() {
    let seeds = corpus("decoder");
    let s = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..2048),
        // Runs of zeros and small values: delimiters and COBS codes.
        proptest::collection::vec(0u8..4, 0..512),
        mutated(seeds.clone()),
        // Two corpus entries spliced: a frame cut by another stream.
        (mutated(seeds.clone()), mutated(seeds)).prop_map(|(mut a, b)| {
            a.truncate(a.len() / 2);
            a.extend_from_slice(&b);
            a
        }),
    ]
    .boxed();
    fuzz("decoder", s, checks::decoder);
}

/// Words the target's parser knows, and values of every kind.
const FLAGS: &[&str] = &[
    "-t",
    "-a",
    "-S",
    "-i",
    "-d",
    "-c",
    "-l",
    "-D",
    "-p",
    "-m",
    "-q",
    "-v",
    "-N",
    "-h",
    "-H",
    "-b",
    "--threads",
    "--affinity",
    "--smp",
    "--mainaffinity",
    "--interval",
    "--distance",
    "--clock",
    "--loops",
    "--duration",
    "--warmup",
    "--priority",
    "--policy",
    "--priospread",
    "--deadline-runtime",
    "--deadline-deadline",
    "--deadline-period",
    "--mlockall",
    "--no-mlock",
    "--latency",
    "--default-system",
    "--best-effort",
    "--quiet",
    "--verbose",
    "--nsecs",
    "--histogram",
    "--histofall",
    "--histfile",
    "--json",
    "--spike",
    "--breaktrace",
    "--tracemark",
    "--explain",
    "--stream",
    "--report-interval",
    "--self-check",
    "--self-check-probe",
    "--ballast-mib",
    "--no-exit-demote",
    "--version",
    "--help",
    "--",
    "-",
    "--=",
    "-tq",
    "-t2",
    "-a0,1",
    "-p80",
    "-A",
    "--aligned",
    "--secaligned",
    "-F",
    "-M",
    "-o",
    "-r",
    "-R",
    "-s",
    "-x",
    "-u",
    "--spike-nodes",
    "--smi",
    "--laptop",
    "--dbg_cyclictest",
    "-qmu",
    "-h 3500",
    "-Sp90",
    "--hist",
    "--dur",
    "-a",
    "all",
    "+1",
    "!0",
    " 12",
    "1e5",
    // rtla's grammar (the `rtla` drop-in reads the same words)
    "timerlat",
    "hist",
    "top",
    "-P",
    "-E",
    "-C",
    "-e",
    "-T",
    "--no-aa",
    "--no-index",
    "--with-zeros",
    "--dma-latency",
    "--trace",
    "--filter",
    "--dump-task",
];
const VALUES: &[&str] = &[
    "0",
    "1",
    "2",
    "-1",
    "80",
    "99",
    "100",
    "1000",
    "4294967296",
    "18446744073709551616",
    "1s",
    "2m",
    "3h",
    "4d",
    "5ms",
    "1.5s",
    "s",
    "",
    "0,1",
    "0-1",
    "!0",
    "1-0",
    "0,,1",
    "64",
    "fifo",
    "rr",
    "other",
    "batch",
    "idle",
    "deadline",
    "normal",
    "monotonic",
    "realtime",
    "tcp:127.0.0.1:1",
    "tcp:[::1]:9",
    "tcp:host:1",
    "serial:/dev/null:115200",
    "serial:",
    "/tmp/x",
    "é",
    "\u{0}",
    "f:95",
    "o:-5",
    "d:100us:1ms",
    "=grp",
    "sched:sched_switch",
];

#[test]
fn fuzz_cli() {
    let word = prop_oneof![
        3 => prop::sample::select(FLAGS).prop_map(str::to_string),
        3 => prop::sample::select(VALUES).prop_map(str::to_string),
        1 => (prop::sample::select(FLAGS), prop::sample::select(VALUES))
            .prop_map(|(f, v)| format!("{f}={v}")),
        1 => (prop::sample::select(FLAGS), prop::sample::select(VALUES))
            .prop_map(|(f, v)| format!("{f}{v}")),
        1 => ".{0,12}",
    ];
    let s = prop_oneof![
        4 => proptest::collection::vec(word, 0..10).prop_map(|w| w.join("\0").into_bytes()),
        1 => proptest::collection::vec(any::<u8>(), 0..128),
        1 => mutated(corpus("cli")),
    ]
    .boxed();
    fuzz("cli", s, checks::cli);
}

#[test]
fn fuzz_trace() {
    let s = prop_oneof![
        2 => mutated(corpus("trace")),
        1 => "( *[a-z0-9_:.\\-\\[\\]=<>| ]{0,60}\n){0,8}".prop_map(String::into_bytes),
        1 => proptest::collection::vec(any::<u8>(), 0..256),
    ]
    .boxed();
    fuzz("trace", s, checks::trace);
}

#[test]
fn fuzz_ringbuf() {
    let s = prop_oneof![
        3 => mutated(corpus("ringbuf")),
        1 => proptest::collection::vec(any::<u8>(), 0..256),
        // A page header claiming a data length, then arbitrary words: every
        // kind of event header, and lengths that do or do not fit.
        2 => (any::<u8>(), 0u64..600, proptest::collection::vec(any::<u32>(), 0..128)).prop_map(
            |(pick, len, words)| {
                let word = if pick & 1 == 0 { 8 } else { 4 };
                let mut b = vec![pick];
                b.extend_from_slice(&1u64.to_le_bytes());
                b.extend_from_slice(&len.to_le_bytes()[..word]);
                for w in words {
                    b.extend_from_slice(&w.to_le_bytes());
                }
                b
            }
        ),
    ]
    .boxed();
    fuzz("ringbuf", s, checks::ringbuf);
}

/// A trace.dat's first bytes: the magic, version 6, little-endian, a
/// long of 8 and a page of 4096 bytes.
const TRACE_DAT_HEAD: &[u8] = b"\x17\x08\x44tracing6\0\0\x08\0\x10\0\0";

#[test]
fn fuzz_tracedat() {
    let s = prop_oneof![
        // the corpus: one page of the x86-64 fixture, as core's writer
        // and as trace-cmd's (`trace-cmd convert --file-version 6`)
        // write it
        4 => mutated(corpus("tracedat")),
        // a valid head, then anything
        1 => (any::<u8>(), proptest::collection::vec(any::<u8>(), 0..512)).prop_map(
            |(pick, rest)| {
                let mut b = vec![pick];
                b.extend_from_slice(TRACE_DAT_HEAD);
                b.extend_from_slice(&rest);
                b
            }
        ),
        1 => proptest::collection::vec(any::<u8>(), 0..256),
    ]
    .boxed();
    fuzz_n("tracedat", s, checks::tracedat, 1000);
}

/// [`checks::host`] within [`STREAM_LIMIT`].
fn host_within_limit(data: &[u8]) {
    let ((), peak) = measure(|| checks::host(data));
    assert!(
        peak <= STREAM_LIMIT,
        "a {}-byte stream cost the host {peak} bytes (limit {STREAM_LIMIT})",
        data.len()
    );
}

/// Forged runs: any thread count, any layout (legal or not), buckets
/// filled one per page or densely, a few runs in a row.
fn forged() -> BoxedStrategy<Vec<u8>> {
    let run = (
        0u16..=MAX_THREADS as u16,
        prop_oneof![
            Just(Layout::DEFAULT),
            (0u32..30_000, any::<u16>()).prop_map(|(l, b)| Layout {
                linear_us: l,
                buckets: b,
            }),
        ],
        prop_oneof![Just(64u16), Just(1u16), 1u16..2048],
        1u16..400,
    );
    (proptest::collection::vec(run, 1..6), 0u8..=255)
        .prop_map(|(runs, step)| {
            let mut out = vec![step];
            for (i, (threads, layout, stride, max_chunks)) in runs.into_iter().enumerate() {
                ForgedRun {
                    run_id: 0xF0F0 + i as u64,
                    threads,
                    layout,
                    stride,
                    max_chunks,
                    reports: if i == 0 { 300 } else { 1 },
                    spikes: if i == 1 { 600 } else { 0 },
                    bye: i % 2 == 0,
                }
                .write(&mut out);
            }
            out
        })
        .boxed()
}

#[test]
fn fuzz_host() {
    let seeds = corpus("host");
    let s = prop_oneof![
        3 => forged(),
        1 => mutated(seeds),
        1 => proptest::collection::vec(any::<u8>(), 0..2048),
    ]
    .boxed();
    fuzz_n("host", s, host_within_limit, 300);
}

/// The worst streams constructed: many runs that each declare every
/// thread and fill every page of their layout, and the original finding
/// (wide hellos with one chunk per thread).
#[test]
fn the_worst_forged_streams_stay_within_the_limit() {
    let widest = Layout::new(MAX_LINEAR_US, MAX_TARGET_BUCKETS);
    assert!(widest.is_legal());
    for (what, bytes) in [
        (
            "16 runs, 64 threads, a bucket in every page",
            many_runs(16, widest, 64, 1),
        ),
        (
            "3 runs, 64 threads, a bucket in every page, full series",
            many_runs(3, widest, 64, SERIES_POINTS as u32),
        ),
        ("2 runs, 64 threads, every page, series and list full", {
            let mut out = Vec::new();
            for r in 0..2 {
                ForgedRun {
                    stride: 64,
                    reports: SERIES_POINTS as u32,
                    spikes: MAX_LINEAR_US + 256,
                    ..ForgedRun::full(0xF3_0000 + r, MAX_THREADS as u16, widest)
                }
                .write(&mut out);
            }
            out
        }),
        ("400 wide hellos", latscope_testkit::forge::wide_hellos(400)),
    ] {
        let mut input = vec![255u8];
        input.extend_from_slice(&bytes);
        let ((), peak) = measure(|| checks::host(&input));
        eprintln!("{what}: {} bytes in, peak {peak} bytes", input.len());
        assert!(peak <= STREAM_LIMIT, "{what}: peak {peak} > {STREAM_LIMIT}");
    }
}

fn many_runs(runs: u64, layout: Layout, stride: u16, reports: u32) -> Vec<u8> {
    let mut out = Vec::new();
    for r in 0..runs {
        ForgedRun {
            stride,
            reports,
            ..ForgedRun::full(0xF1_0000 + r, MAX_THREADS as u16, layout)
        }
        .write(&mut out);
    }
    out
}
