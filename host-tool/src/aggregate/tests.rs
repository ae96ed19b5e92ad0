//! The aggregator's epoch logic, on synthetic streams.

use std::collections::{BTreeMap, BTreeSet};

use latscope_core::wire::{Body, Decoder, Frame, MAX_FRAME, PROTOCOL_VERSION};

use crate::session::Session;
use crate::synth::{Synth, SynthConfig};
use latscope_core::explain::{Culprit, PrioClass, Softirq, Task, Untraced};
use latscope_core::wire::bounded;

/// An IRQ's line: its hard handler's, or with the kernel priority `prio`
/// its thread's.
fn irq(irq: u32, name: &str, prio: Option<i32>) -> Culprit {
    Culprit::Irq {
        irq,
        name: bounded(name),
        thread: prio.and_then(PrioClass::from_kernel),
    }
}

/// A task as a trace shows it, of kernel priority `prio` if shown.
fn task_of(pid: u32, comm: &str, prio: Option<i32>) -> Task {
    Task {
        pid,
        comm: bounded(comm),
        prio: prio.and_then(PrioClass::from_kernel),
    }
}

fn task(pid: u32, comm: &str, prio: Option<i32>) -> Culprit {
    Culprit::Task(task_of(pid, comm, prio))
}

fn timer_delay(pid: u32, comm: &str, prio: Option<i32>) -> Culprit {
    Culprit::TimerDelay {
        running: Some(task_of(pid, comm, prio)),
    }
}

fn frames(bytes: &[u8]) -> Vec<(Frame, std::ops::Range<usize>)> {
    // Each frame is `00 body 00`: its range runs from the zero before its
    // body to the zero after it.
    let mut out = Vec::new();
    let mut d = Box::new(Decoder::<MAX_FRAME>::new());
    let mut last_zero = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let (ev, _) = d.feed(&bytes[i..=i]);
        if let Some(Ok(f)) = ev {
            out.push((f, last_zero..i + 1));
        }
        if b == 0 {
            last_zero = i;
        }
    }
    out
}

fn decode(bytes: &[u8]) -> Session {
    let mut s = Session::new("test");
    s.feed(bytes);
    s.finish();
    s
}

fn assert_exact(s: &Session, synth: &Synth) {
    let run = s.agg.current().expect("a run");
    assert!(run.bye.is_some());
    assert!(run.exact_at_end(), "not exact at end");
    for (i, t) in synth.threads.iter().enumerate() {
        let a = &run.threads[i];
        assert_eq!(a.hist(), t.hist, "thread {i} histogram");
        let st = a.stats().expect("stats");
        assert_eq!(st.cycles, t.stats.cycles);
        assert_eq!(st.min, t.stats.min);
        assert_eq!(st.max, t.stats.max);
    }
}

#[test]
fn clean_stream_is_exact_in_any_chunking() {
    let (bytes, synth) = Synth::bytes(SynthConfig::default());
    let s = decode(&bytes);
    assert_exact(&s, &synth);
    assert!(s.link().is_clean());
    assert!(s.warnings().is_empty(), "{:?}", s.warnings());
    // Byte by byte.
    let mut s = Session::new("bytewise");
    for b in bytes.chunks(1) {
        s.feed(b);
    }
    s.finish();
    assert_exact(&s, &synth);
}

#[test]
fn lost_delta_is_healed_by_the_snapshots() {
    let (bytes, synth) = Synth::bytes(SynthConfig::default());
    let fr = frames(&bytes);
    // Drop the first delta part of report 3 of thread 0.
    let (_, victim) = fr
        .iter()
        .find(|(f, _)| matches!(&f.body, Body::Delta(d) if d.epoch == 3 && d.thread == 0))
        .expect("delta 3")
        .clone();
    let mut cut = bytes[..victim.start + 1].to_vec();
    cut.extend_from_slice(&bytes[victim.end - 1..]);
    // Stop after the stats of epoch 3: inexact there, exact as of 2.
    let stats3 = fr
        .iter()
        .find(|(f, _)| matches!(&f.body, Body::Stats(s) if s.epoch == 3 && s.thread == 0))
        .unwrap()
        .1
        .clone();
    // the victim's body and one of its delimiters are gone
    let removed = victim.len() - 2;
    let s = decode(&cut[..stats3.end - removed]);
    let run = s.agg.current().unwrap();
    let t0 = &run.threads[0];
    // the histogram is still at epoch 2 (its delta of 3 was lost), the
    // statistics at 3
    assert_eq!(t0.hist_epoch(), Some(2));
    assert_eq!(t0.stats().map(|s| s.epoch), Some(3));
    assert!(!t0.exact_now());
    assert_eq!(t0.exact_epoch(), Some(2));
    // The whole stream: the rolling snapshot heals it before the end.
    let s = decode(&cut);
    assert_exact(&s, &synth);
    assert_eq!(s.link().seq_gaps, 1);
}

#[test]
fn deltas_at_or_before_the_applied_epoch_are_ignored() {
    let (bytes, synth) = Synth::bytes(SynthConfig::default());
    let fr = frames(&bytes);
    // Replay report 2's delta and statistics frames after everything
    // (stale duplicates).
    let mut doubled = bytes.clone();
    for (f, r) in &fr {
        if matches!(&f.body, Body::Delta(d) if d.epoch == 2)
            || matches!(&f.body, Body::Stats(s) if s.epoch == 2)
        {
            doubled.extend_from_slice(&bytes[r.clone()]);
        }
    }
    let s = decode(&doubled);
    assert_exact(&s, &synth);
    let run = s.agg.current().unwrap();
    assert!(run.threads.iter().all(|t| t.stale_parts() > 0));
}

#[test]
fn a_delta_arriving_after_its_epochs_snapshot_is_not_counted_twice() {
    let cfg = SynthConfig::default();
    let (bytes, truth) = run_with_truth(cfg);
    let fr = frames(&bytes);
    // Thread 0's first delta part of report 5 arrives late: after the
    // snapshot chunk of that report, which already holds its counts.
    let late = fr
        .iter()
        .position(|(f, _)| matches!(&f.body, Body::Delta(d) if d.epoch == 5 && d.thread == 0))
        .expect("delta 5");
    let chunk = fr
        .iter()
        .position(|(f, _)| matches!(&f.body, Body::Chunk(c) if c.epoch == 5 && c.thread == 0))
        .expect("chunk 5");
    assert!(late < chunk);
    let mut buf = vec![0u8; MAX_FRAME];
    let mut moved = Vec::new();
    for i in (0..=chunk).filter(|&i| i != late).chain([late]) {
        let n = latscope_core::wire::encode(&fr[i].0, &mut buf).unwrap();
        moved.extend_from_slice(&buf[..n]);
    }
    let s = decode(&moved);
    let t0 = &s.agg.current().unwrap().threads[0];
    assert_eq!(t0.hist_epoch(), Some(5));
    let want = &truth[&(0, 5)];
    // no bucket holds more than the truth of its epoch
    let over: Vec<_> = t0
        .hist()
        .iter()
        .zip(want)
        .enumerate()
        .filter(|(_, (got, want))| got > want)
        .map(|(b, (got, want))| (b, *got, *want))
        .collect();
    assert!(over.is_empty(), "buckets above the truth: {over:?}");
    assert!(t0.stale_parts() > 0);
}

#[test]
fn joining_mid_stream_is_exact_from_the_first_complete_snapshot() {
    let (bytes, synth) = Synth::bytes(SynthConfig {
        reports: 12,
        ..SynthConfig::default()
    });
    let fr = frames(&bytes);
    // Join at the hello of report 10 (hellos are resent every 10 reports).
    let (_, at) = fr
        .iter()
        .filter(|(f, _)| matches!(f.body, Body::Hello(_)))
        .nth(1)
        .expect("second hello")
        .clone();
    let s = decode(&bytes[at.start..]);
    assert_exact(&s, &synth);
    let run = s.agg.current().unwrap();
    assert_eq!(run.exact_epoch(), Some(12));
}

#[test]
fn truncated_stream_keeps_what_decoded() {
    let (bytes, _) = Synth::bytes(SynthConfig::default());
    let kept = &bytes[..bytes.len() * 2 / 3];
    // the bytes of the frame the cut falls in
    let partial = kept.len() - 1 - kept.iter().rposition(|&b| b == 0).unwrap();
    assert!(partial > 0, "the cut falls on a delimiter");
    let s = decode(kept);
    let run = s.agg.current().unwrap();
    assert!(run.bye.is_none());
    assert!(run.exact_epoch().is_some());
    assert_eq!(s.truncated, partial);
    let w = s.warnings();
    let says = |text: &str| w.iter().any(|w| w.contains(text));
    assert!(
        says(&format!(
            "truncated: the input ends inside a frame ({partial} bytes)"
        )),
        "{w:?}"
    );
    assert!(says("without a bye"), "{w:?}");
    assert!(s.fatal().is_none());
}

#[test]
fn garbage_is_not_a_stream() {
    let junk: Vec<u8> = (0..100_000u32)
        .map(|i| (i * 7919 % 251) as u8 + 1)
        .collect();
    let s = decode(&junk);
    let e = s.fatal().expect("fatal");
    assert!(e.to_string().contains("not a latscope stream"), "{e}");
    // Text with newlines and zero bytes.
    let s = decode(b"hello\0world\0\0\0 this is not it\n");
    assert!(s
        .fatal()
        .unwrap()
        .to_string()
        .contains("not a latscope stream"));
}

#[test]
fn newer_protocol_version_is_named() {
    let (bytes, _) = Synth::bytes(SynthConfig::default());
    // Re-encode every frame with the next version.
    let next = PROTOCOL_VERSION + 1;
    let mut newer = Vec::new();
    let mut buf = vec![0u8; MAX_FRAME];
    for (mut f, _) in frames(&bytes) {
        f.version = next;
        let n = latscope_core::wire::encode(&f, &mut buf).unwrap();
        newer.extend_from_slice(&buf[..n]);
    }
    let s = decode(&newer);
    let e = s.fatal().expect("fatal").to_string();
    assert!(e.contains(&format!("protocol version {next}")), "{e}");
    assert!(e.contains("newer"), "{e}");
}

#[test]
fn schema_mismatch_is_named_and_data_before_it_kept() {
    let (bytes, _) = Synth::bytes(SynthConfig::default());
    let mut buf = vec![0u8; MAX_FRAME];
    let fr = frames(&bytes);
    let mut out = Vec::new();
    for (i, (f, r)) in fr.iter().enumerate() {
        if i == fr.len() / 2 {
            let mut f = f.clone();
            if let Body::Hello(_) = f.body {
            } else {
                let mut s = Synth::new(SynthConfig::default());
                let mut h = s.hello();
                h.schema = [1; 8];
                h.run_id = 7;
                f.body = Body::Hello(h);
                let n = latscope_core::wire::encode(&f, &mut buf).unwrap();
                out.extend_from_slice(&buf[..n]);
                let _ = &mut s;
            }
        }
        out.extend_from_slice(&bytes[r.clone()]);
    }
    let s = decode(&out);
    assert!(s.agg.schema_mismatch.is_some());
    assert!(s.warnings().iter().any(|w| w.contains("schema")));
    let run = s.agg.current().unwrap();
    assert!(run.exact_epoch().is_some());
}

/// Flip random bytes at `rate` per byte.
fn corrupt(bytes: &[u8], rate: f64, seed: u64) -> (Vec<u8>, Vec<usize>) {
    let mut x = seed | 1;
    let mut out = bytes.to_vec();
    let mut hit = Vec::new();
    let threshold = (rate * u64::MAX as f64) as u64;
    for (i, b) in out.iter_mut().enumerate() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if x < threshold {
            let flip = ((x >> 32) as u8) | 1;
            *b ^= flip;
            hit.push(i);
        }
    }
    (out, hit)
}

/// [`corrupt`], and where the rate flipped nothing in a stream this short
/// (at 1e-6 the first flip falls far past its end), one flip at a place
/// drawn from the seed: every rate then tests a corrupted stream.
fn corrupt_at_least_once(bytes: &[u8], rate: f64, seed: u64) -> (Vec<u8>, Vec<usize>) {
    let (mut out, mut hit) = corrupt(bytes, rate, seed);
    if hit.is_empty() {
        let at = (seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 16) as usize % out.len();
        out[at] ^= 0x5a;
        hit.push(at);
    }
    (out, hit)
}

#[test]
fn corruption_recovers_every_unhit_frame_and_stays_exact_as_of_complete_epochs() {
    let cfg = SynthConfig {
        reports: 60,
        threads: 4,
        ..SynthConfig::default()
    };
    let (bytes, synth) = Synth::bytes(cfg);
    let fr = frames(&bytes);
    for (rate, seed) in [(1e-6, 1), (1e-5, 2), (1e-4, 3), (1e-4, 4), (3e-5, 5)] {
        let (bad, hits) = corrupt_at_least_once(&bytes, rate, seed);
        assert!(!hits.is_empty(), "rate {rate}: nothing was flipped");
        let s = decode(&bad);
        // Frames whose bytes (delimiters included) were not hit.
        let unhit = fr
            .iter()
            .filter(|(_, r)| !hits.iter().any(|h| r.contains(h)))
            .count() as u64;
        let link = s.link();
        assert!(
            link.frames >= unhit,
            "rate {rate}: {} good frames < {unhit} unhit",
            link.frames
        );
        // Loss shows as an error count, or (a hit on the very first
        // delimiter) as a frame missing before the first one decoded.
        assert!(
            link.crc_errors + link.oversize + link.seq_gaps > 0 || link.frames < fr.len() as u64,
            "rate {rate}: {} hits went unnoticed",
            hits.len()
        );
        let run = s.agg.current().expect("a run");
        // Wherever a thread's histogram is verified exact, it equals the
        // synthetic thread's histogram as of that epoch. At the end: exact
        // when the bye and the final snapshot arrived intact.
        if run.exact_at_end() {
            for (i, t) in synth.threads.iter().enumerate() {
                assert_eq!(run.threads[i].hist(), t.hist, "rate {rate} thread {i}");
            }
        }
        for t in &run.threads {
            assert!(t.exact_epoch().is_some(), "rate {rate}: never exact");
            if t.exact_now() {
                assert_eq!(t.hist_total(), t.stats().unwrap().count);
            }
        }
    }
}

/// Each thread's histogram (by thread and epoch) as of that epoch's
/// statistics.
type Truth = BTreeMap<(usize, u32), Vec<u64>>;

/// A synthetic run's bytes, and its [`Truth`] at every epoch.
fn run_with_truth(cfg: SynthConfig) -> (Vec<u8>, Truth) {
    let mut synth = Synth::new(cfg.clone());
    let mut bytes = Vec::new();
    let mut truth = BTreeMap::new();
    let mut note = |synth: &Synth| {
        for (i, t) in synth.threads.iter().enumerate() {
            truth.insert((i, t.stats.epoch), t.hist.clone());
        }
    };
    synth.start(&mut |b| bytes.extend_from_slice(b));
    note(&synth);
    for _ in 0..cfg.reports {
        synth.report(&mut |b| bytes.extend_from_slice(b));
        note(&synth);
    }
    synth.end(&mut |b| bytes.extend_from_slice(b));
    (bytes, truth)
}

#[test]
fn exact_epochs_match_the_truth() {
    // Decode corrupted streams frame by frame: at every prefix, each thread
    // whose histogram is verified exact holds the synthetic histogram of
    // that epoch.
    let cfg = SynthConfig {
        reports: 30,
        ..SynthConfig::default()
    };
    let (bytes, truth) = run_with_truth(cfg.clone());
    let epochs = cfg.reports as usize + 1;
    assert_eq!(truth.len(), usize::from(cfg.threads) * epochs);
    // (corrupt() takes `seed | 1`: the seeds are odd to differ)
    for (rate, seed) in [(1e-4, 9), (1e-3, 1), (1e-3, 5), (1e-3, 7)] {
        let (bad, hits) = corrupt(&bytes, rate, seed);
        assert!(
            !hits.is_empty(),
            "rate {rate} seed {seed}: nothing corrupted"
        );
        let mut s = Session::new("prefixes");
        let mut exact = BTreeSet::new();
        let mut inexact_prefixes = 0;
        for frame in bad.split_inclusive(|&b| b == 0) {
            s.feed(frame);
            let Some(run) = s.agg.current() else { continue };
            for (i, t) in run.threads.iter().enumerate() {
                if !t.exact_now() {
                    inexact_prefixes += 1;
                    // a histogram that misses counts of its statistics'
                    // epoch is not exact as of that epoch
                    let at = t.hist_epoch();
                    if at.is_some() && t.stats().map(|s| s.epoch) == at {
                        assert!(
                            t.exact_epoch() < at,
                            "rate {rate} seed {seed}: thread {i} exact at {:?}, inexact at {at:?}",
                            t.exact_epoch()
                        );
                    }
                    continue;
                }
                let e = t.exact_epoch().expect("exact now, so exact at an epoch");
                assert_eq!(
                    Some(&t.hist()),
                    truth.get(&(i, e)),
                    "rate {rate} seed {seed}: thread {i} at epoch {e}"
                );
                exact.insert((i, e));
            }
        }
        let l = s.link();
        assert!(l.crc_errors > 0, "rate {rate} seed {seed}: no frame lost");
        // prefixes in which the loss shows: the check above was not always
        // trivially true
        assert!(inexact_prefixes > 0, "rate {rate} seed {seed}");
        // several epochs of every thread were checked on the way, not only
        // the last (the seeds are fixed: at 1e-3 some threads are exact at
        // 6 of the 31)
        let checked: Vec<usize> = (0..usize::from(cfg.threads))
            .map(|i| exact.iter().filter(|(t, _)| *t == i).count())
            .collect();
        println!(
            "rate {rate} seed {seed}: {} hits, {} frames lost: exact epochs checked per thread {checked:?} of {epochs}",
            hits.len(),
            l.crc_errors
        );
        assert!(
            checked.iter().all(|&n| n >= 5),
            "rate {rate} seed {seed}: exact epochs per thread {checked:?} of {epochs}"
        );
    }
}

#[test]
fn heavy_corruption_never_panics_and_reports_loss() {
    let (bytes, _) = Synth::bytes(SynthConfig {
        reports: 40,
        ..SynthConfig::default()
    });
    for seed in 1..=8 {
        let (bad, hits) = corrupt(&bytes, 1e-3, seed);
        let s = decode(&bad);
        assert!(!hits.is_empty());
        let l = s.link();
        assert!(l.crc_errors + l.oversize + l.seq_gaps + l.malformed > 0);
        let _ = s.warnings();
        if let Some(run) = s.agg.current() {
            let _ = crate::summary::summarize(run);
        }
    }
    // Random bytes with frames mixed in.
    let (bad, _) = corrupt(&bytes, 3e-2, 77);
    let s = decode(&bad);
    let _ = s.warnings();
}

#[test]
fn explained_spikes_are_listed_with_causes_that_add_up() {
    use latscope_core::explain::Attribution;
    let mut synth = Synth::new(SynthConfig::default());
    let mut bytes = Vec::new();
    synth.start(&mut |b| bytes.extend_from_slice(b));
    synth.report(&mut |b| bytes.extend_from_slice(b));
    // The seed's table: network IRQ and NET_RX, audio, the timer, and the
    // task's own run.
    let mut a = Attribution::new(0, 18_234, 12_345_678_000, 2_421_000);
    a.add(irq(19, "eth0", None), 13, 582_000);
    a.add(Culprit::Softirq(Softirq::from_vector(3)), 13, 620_000);
    a.add(irq(30, "snd_hda_intel", None), 2, 119_000);
    a.add(
        Culprit::Vector {
            vector: 236,
            name: bounded("local_timer"),
        },
        1,
        23_000,
    );
    a.add(task(33, "kworker/0:1", Some(120)), 1, 1_065_000);
    a.add(Culprit::Untraced(Untraced::Off), 1, 12_000);
    assert_eq!(a.total_ns(), a.latency_ns);
    let mut enc = latscope_core::wire::Encoder::new();
    // Continue the synthetic sequence numbers loosely: a gap is harmless.
    let f = enc.frame(Body::Explain(a)).unwrap().to_vec();
    bytes.extend_from_slice(&f);
    synth.end(&mut |b| bytes.extend_from_slice(b));
    let s = decode(&bytes);
    let run = s.agg.current().unwrap();
    assert_eq!(run.explained.total, 1);
    let mut out = String::new();
    crate::report::text::render(&mut out, "t", run, &s.link());
    assert!(out.contains("spike 2421.0 µs  CPU0  cycle 18234"), "{out}");
    assert!(out.contains("irq 19 eth0  ×13  582.0 µs"), "{out}");
    assert!(out.contains("softirq NET_RX  ×13  620.0 µs"), "{out}");
    assert!(out.contains("irq local_timer  ×1  23.0 µs"), "{out}");
    assert!(
        out.contains("task kworker/0:1 (pid 33, SCHED_OTHER)  1065.0 µs"),
        "{out}"
    );
    assert!(
        out.contains("irqs or preemption off (untraced)  12.0 µs"),
        "{out}"
    );
    assert!(out.contains("top: task kworker/0:1 (SCHED_OTHER)"), "{out}");
}

#[test]
fn a_lost_first_hello_still_gives_a_run() {
    // With a later hello: the held frames are replayed into its run.
    let (mut bytes, synth) = Synth::bytes(SynthConfig::default());
    bytes[5] ^= 0x40;
    let s = decode(&bytes);
    assert!(!s.agg.hello_lost);
    assert_exact(&s, &synth);
    // Without one: a run of an unknown target, still exact.
    let (mut bytes, synth) = Synth::bytes(SynthConfig {
        reports: 8,
        ..SynthConfig::default()
    });
    // Hit the first hello (its bytes start after the leading delimiter).
    bytes[5] ^= 0x40;
    // A recorder on a serial line has no end of input: the bye alone must
    // end the run, so that `record` can stop.
    let mut live = Session::new("line");
    live.feed(&bytes);
    assert!(live.agg.current().is_some_and(|r| r.bye.is_some()));
    let s = decode(&bytes);
    assert!(s.agg.hello_lost);
    assert!(s
        .warnings()
        .iter()
        .any(|w| w.contains("hello frame was never decoded")));
    assert!(s.agg.current().unwrap().hello_lost);
    let run = s.agg.current().unwrap();
    assert!(run.exact_at_end());
    for (i, t) in synth.threads.iter().enumerate() {
        assert_eq!(run.threads[i].hist(), t.hist);
    }
}

#[test]
fn an_irq_threads_time_is_labelled_as_the_irq_with_the_threads_policy() {
    use crate::aggregate::explain::cause_label;
    use latscope_core::explain::Attribution;
    let mut a = Attribution::new(0, 1, 0, 30);
    a.add(irq(13, "irq/13-uart-pl0", Some(49)), 2, 20);
    a.add(irq(13, "uart-pl011", None), 3, 10);
    let labels: Vec<String> = a.causes.iter().map(cause_label).collect();
    assert_eq!(
        labels,
        [
            "irq 13 irq/13-uart-pl0 (SCHED_FIFO/RR 50)",
            "irq 13 uart-pl011"
        ]
    );
}

/// The text report of a synthetic run whose hello `edit` changed.
fn report_with(edit: impl FnOnce(&mut latscope_core::wire::Hello)) -> String {
    let mut synth = Synth::new(SynthConfig::default());
    let mut frames: Vec<Vec<u8>> = Vec::new();
    synth.start(&mut |b| frames.push(b.to_vec()));
    let mut h = synth.hello();
    edit(&mut h);
    // The hello is the first frame (sequence 0), as a new encoder numbers it.
    let mut enc = latscope_core::wire::Encoder::new();
    frames[0] = enc.frame(Body::Hello(h)).unwrap().to_vec();
    let mut bytes = frames.concat();
    synth.end(&mut |b| bytes.extend_from_slice(b));
    let s = decode(&bytes);
    let mut out = String::new();
    crate::report::text::render(&mut out, "t", s.agg.current().unwrap(), &s.link());
    out
}

/// A report of a run not holding /dev/cpu_dma_latency (`device`: because
/// the kernel has none) and started with `argv`.
fn dma_report(device: bool, argv: &str) -> String {
    report_with(|h| {
        h.config.degraded.no_dma_latency = true;
        h.config.degraded.no_dma_latency_device = device;
        h.target.argv = latscope_core::wire::bounded(argv);
    })
}

#[test]
fn a_missing_dma_latency_device_is_not_called_best_effort() {
    let missing = "missing:  /dev/cpu_dma_latency (not on the target's kernel)";
    for out in [
        dma_report(true, "latscope -t 2 --best-effort"),
        // version 1 had no device flag: without --best-effort a device
        // not held can only have been missing
        dma_report(false, "latscope -t 2 -D 5s --stream serial:/dev/ttyAMA1"),
    ] {
        assert!(!out.contains("DEGRADED"), "{out}");
        assert!(out.contains(missing), "{out}");
    }
    // With --best-effort a device that was there but refused is a
    // degradation.
    let out = dma_report(false, "latscope --best-effort -t 2");
    assert!(
        out.contains("DEGRADED: cpu_dma_latency not held (--best-effort)"),
        "{out}"
    );
    assert!(!out.contains("missing:"), "{out}");
}

#[test]
fn a_tracefs_mount_by_latscope_is_reported() {
    let line = "tracefs:  mounted by latscope at /sys/kernel/tracing";
    assert!(report_with(|h| h.config.tracefs_mounted = true).contains(line));
    assert!(!report_with(|_| {}).contains("tracefs:"));
}

/// The text report of a synthetic run that sent the attributions `atts`.
fn report_of_explained(atts: Vec<latscope_core::explain::Attribution>) -> (String, Session) {
    let mut synth = Synth::new(SynthConfig::default());
    let mut bytes = Vec::new();
    synth.start(&mut |b| bytes.extend_from_slice(b));
    synth.report(&mut |b| bytes.extend_from_slice(b));
    let mut enc = latscope_core::wire::Encoder::new();
    for a in atts {
        bytes.extend_from_slice(enc.frame(Body::Explain(a)).unwrap());
    }
    synth.end(&mut |b| bytes.extend_from_slice(b));
    let s = decode(&bytes);
    let mut out = String::new();
    crate::report::text::render(&mut out, "t", s.agg.current().unwrap(), &s.link());
    (out, s)
}

#[test]
fn an_irq_thread_is_one_cause_in_the_totals_with_or_without_its_priority() {
    use latscope_core::explain::Attribution;
    // One spike's trace showed the thread's priority, another's did not
    // (it began while the thread ran).
    let mut a = Attribution::new(0, 1, 0, 30_000);
    a.add(irq(13, "irq/13-uart-pl0", None), 1, 30_000);
    let mut b = Attribution::new(0, 2, 1_000_000, 1_020_000);
    b.add(irq(13, "irq/13-uart-pl0", Some(49)), 2, 20_000);
    let (out, s) = report_of_explained(vec![a, b]);
    let run = s.agg.current().unwrap();
    let thread: Vec<_> = run
        .explained
        .ranked()
        .into_iter()
        .filter(|t| t.label.contains("irq/13-uart-pl0"))
        .collect();
    assert_eq!(thread.len(), 1, "{out}");
    assert_eq!(
        thread[0].label, "irq 13 irq/13-uart-pl0 (SCHED_FIFO/RR 50)",
        "{out}"
    );
    assert_eq!((thread[0].ns, thread[0].spikes), (50_000, 2));
}

#[test]
fn a_paused_or_lost_trace_is_a_line_of_its_own_and_a_late_timer_names_the_running_task() {
    use latscope_core::explain::Attribution;
    let mut a = Attribution::new(0, 7, 5_000_000_000, 2_500_000);
    a.partial = true;
    a.add(timer_delay(95, "irq/13-uart-pl0", Some(49)), 1, 1_060_000);
    a.add(Culprit::Untraced(Untraced::Paused), 1, 1_200_000);
    a.add(Culprit::Untraced(Untraced::Lost { events: 12 }), 1, 40_000);
    for (why, ns) in [(Untraced::LostUnknown, 30_000), (Untraced::Beyond, 10_000)] {
        a.add(Culprit::Untraced(why), 1, ns);
    }
    a.add(Culprit::Untraced(Untraced::Off), 1, 160_000);
    assert_eq!(a.total_ns(), a.latency_ns);
    let (out, _) = report_of_explained(vec![a]);
    let lines: Vec<&str> = out.lines().map(str::trim).collect();
    assert!(lines.contains(&"trace paused 1.2 ms"), "{out}");
    assert!(lines.contains(&"trace lost 12 events 40.0 µs"), "{out}");
    assert!(
        lines.contains(&"trace lost (count unknown) 30.0 µs"),
        "{out}"
    );
    assert!(
        lines.contains(&"beyond latscope's history 10.0 µs"),
        "{out}"
    );
    assert!(
        lines.contains(&"irqs or preemption off (untraced)  160.0 µs"),
        "{out}"
    );
    assert!(
        out.contains(
            "timer expiry delay, irq/13-uart-pl0 running (pid 95, SCHED_FIFO/RR 50)  1060.0 µs"
        ),
        "{out}"
    );
    // The totals keep one timer-delay cause and the trace's gaps apart.
    assert!(out.contains("top: trace paused"), "{out}");
    let totals = &out[out.find("causes over all").unwrap()..];
    assert!(totals.contains("  timer expiry delay "), "{out}");
}
