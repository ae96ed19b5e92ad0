use std::vec::Vec;

use postcard::experimental::max_size::MaxSize;

use super::*;
use crate::timerlat::Context;

mod against_postcard;
mod downgrade;

fn stats(thread: u16, epoch: u32) -> ThreadStats {
    ThreadStats {
        thread,
        epoch,
        elapsed_ns: 12_345_678_901,
        cycles: 1_000_000 + epoch as u64,
        count: 999_990,
        sum: 4_200_000_000,
        min: 2_100,
        max: 2_421_000,
        interval_max: 88_000,
        last: -50,
        missed: 3,
        early: 10,
        minflt: 0,
        majflt: 0,
        dropped: 1,
        last_report: false,
    }
}

pub(crate) fn hello() -> Hello {
    let mut threads = heapless::Vec::new();
    for i in 0..4u16 {
        threads
            .push(ThreadInfo {
                index: i,
                cpu: Some(i),
                tid: 1000 + i as u32,
                priority: 80,
                interval_ns: 1_000_000,
                node: 0,
            })
            .unwrap();
    }
    Hello {
        schema: SCHEMA_KEY,
        tool_version: bounded("0.1.0"),
        run_id: 0xDEAD_BEEF_0000_0001,
        target: TargetInfo {
            hostname: bounded("board-7"),
            arch: bounded("aarch64"),
            kernel: bounded("6.1.0-57-rt-arm64"),
            kernel_version: bounded("#1 SMP PREEMPT_RT Debian 6.1.158-1 (2025-11-09)"),
            preempt_rt: true,
            preempt_model: bounded("PREEMPT_RT"),
            cpus: 4,
            cmdline: bounded("console=ttyAMA0 isolcpus=2,3"),
            clocksource: bounded("arch_sys_counter"),
            rt_runtime_us: 950_000,
            argv: bounded("latscope -t 4 -a 0-3 --stream serial:/dev/ttyAMA1"),
            name: bounded("rack3-slot7"),
            platform: Platform::Linux,
            model: bounded("Raspberry Pi 4 Model B Rev 1.4"),
            clock_hz: NS_CLOCK_HZ,
            clock_resolution_ns: 1,
        },
        config: RunConfig {
            policy: Policy::Fifo,
            priority: 80,
            interval_ns: 1_000_000,
            mlock: true,
            dma_latency_us: Some(0),
            duration_ns: 10_000_000_000,
            report_ns: 1_000_000_000,
            spike_ns: 100_000,
            hist_us: 400,
            started: Some(WallTime {
                unix_s: 1_796_041_475,
                utc_offset_s: 3600,
            }),
            threads,
            tracefs_mounted: true,
            ..RunConfig::default()
        },
    }
}

/// Runs of `n` buckets from `start`, every `step`-th, with large counts.
fn runs(start: u16, n: u16, step: u16, count: u64) -> Runs {
    let mut w = RunWriter::new(start, RUN_BYTES);
    for i in 0..n {
        assert!(w.push(start + i * step, count - u64::from(i)));
    }
    w.finish()
}

/// One frame of every type.
pub(super) fn every_body() -> Vec<Body> {
    let delta = HistDelta {
        thread: 1,
        epoch: 7,
        part: 0,
        start: 100,
        runs: runs(100, 24, 100, u64::from(u32::MAX)),
    };
    let chunk = SnapshotChunk {
        thread: 2,
        epoch: 5,
        start: 2980,
        end: 3028,
        runs: runs(2985, 16, 2, u64::MAX),
    };
    let mut explain = crate::explain::Attribution::new(0, 18_234, 12_345_678_000, 2_421_000);
    {
        use crate::explain::{Culprit, PrioClass, Softirq, Task, Untraced};
        let name = bounded("irq/19-eth0");
        let thread = Some(PrioClass::RealTime(50));
        explain.add(
            Culprit::Irq {
                irq: 19,
                name,
                thread,
            },
            13,
            397_000,
        );
        explain.add(Culprit::Softirq(Softirq::NetRx), 13, 805_000);
        let running = Some(Task {
            pid: 4242,
            comm: bounded("burster"),
            prio: Some(PrioClass::Normal(-5)),
        });
        explain.add(Culprit::TimerDelay { running }, 1, 40_000);
        explain.add(Culprit::Untraced(Untraced::Lost { events: 139 }), 1, 20_000);
        explain.add(Culprit::Untraced(Untraced::Off), 1, 1_109_000);
        // every other kind and reason, so that each upgrade is checked
        let name = bounded("local_timer");
        explain.add(Culprit::Vector { vector: 236, name }, 2, 10_000);
        let kworker = Task {
            pid: 33,
            comm: bounded("kworker/0:1"),
            prio: None,
        };
        explain.add(Culprit::Task(kworker), 1, 10_000);
        explain.add(Culprit::IdleExit, 1, 10_000);
        explain.add(Culprit::TimerDelay { running: None }, 1, 5_000);
        for why in [Untraced::Paused, Untraced::LostUnknown, Untraced::Beyond] {
            explain.add(Culprit::Untraced(why), 1, 5_000);
        }
    }
    std::vec![
        Body::Hello(hello()),
        Body::Explain(explain),
        Body::Aggregate(aggregate()),
        Body::EvidenceHead(EvidenceHead {
            thread: 1,
            tid: 4321,
            cpu: 3,
            cycle: 123_456,
            deadline_ns: 5_000_000_000,
            wake_ns: 5_000_900_000,
            recorded_to_ns: 5_100_000_000,
            size: 70_000,
        }),
        Body::EvidencePart(EvidencePart {
            thread: 1,
            cycle: 123_456,
            offset: 4096,
            next: 8192,
            // short: the decoder's tests cut and edit every body at every
            // byte (a full part's size is checked against the frame's)
            data: heapless::Vec::from_slice(&[0x17; 40]).unwrap(),
        }),
        Body::TimerlatStats(timerlat_stats()),
        Body::TimerlatDelta(TimerlatDelta {
            thread: 2,
            epoch: 41,
            context: Context::Thread,
            part: 1,
            start: 7,
            runs: runs(7, 24, 3, u64::from(u32::MAX)),
        }),
        Body::TimerlatChunk(TimerlatChunk {
            thread: 2,
            epoch: 41,
            context: Context::UserRet,
            start: 3000,
            end: u16::MAX,
            runs: runs(3001, 16, 5, u64::MAX),
        }),
        Body::Stats(stats(3, 42)),
        Body::Delta(delta),
        Body::Chunk(chunk),
        Body::Spike(SpikeSample {
            thread: 0,
            cycle: 18_234,
            deadline_ns: 12_345_678_000,
            latency_ns: 2_421_000,
            missed: 2,
            flags: SpikeFlags {
                spike: true,
                overflow: true,
                brk: false
            },
        }),
        Body::Log(LogLine {
            level: Level::Warn,
            text: bounded("best effort: running without mlockall (RLIMIT_MEMLOCK too low)")
        }),
        Body::Bye(Bye {
            reason: ByeReason::Break {
                thread: 1,
                latency_ns: 900_000
            },
            epoch: 10,
            elapsed_ns: 10_000_000_000,
            threads: 4,
            cycles: 40_000,
            max_ns: 900_000,
            frames_dropped: 0,
            defects: 0,
            ended: Some(WallTime {
                unix_s: 1_796_041_485,
                utc_offset_s: 3600,
            }),
        }),
    ]
}

/// A timerlat CPU's figures after days at 10 kHz: every count a
/// multi-byte varint, some lost entries, one inverted pairing.
pub(super) fn timerlat_stats() -> TimerlatStats {
    let f = |count: u64, min: u64, max: u64, lost: u64| TimerlatFigures {
        count,
        sum: count * (min + max) / 2,
        min,
        max,
        lost,
    };
    TimerlatStats {
        thread: 2,
        epoch: 41,
        figures: [
            f(4_000_000_123, 2_700, 15_274_000, 3),
            f(4_000_000_120, 44_500, 38_227_000, 6),
            f(4_000_000_119, 82_800, 38_563_500, 7),
        ],
        paired: 4_000_000_117,
        inverted: 1,
        unreadable_pages: 2,
        last_report: false,
    }
}

/// An aggregate of a storm: most spikes aggregated, some dropped, one
/// queued; every count a multi-byte varint.
pub(super) fn aggregate() -> Aggregate {
    Aggregate {
        thread: 3,
        epoch: 41,
        above: 1_720,
        max_ns: 9_676_000,
        max_cycle: 8_123_456,
        max_deadline_ns: 9_676_000_000_123,
        sent: 12,
        explained: 2,
        aggregated: 1_500,
        dropped: 207,
        spikes: 1_000_002,
        spikes_sent: 3_001,
        spikes_explained: 1_200,
        spikes_aggregated: 900_000,
        spikes_dropped: 97_000,
        queued: 1,
        last_report: false,
    }
}

fn stream(bodies: &[Body]) -> (Vec<u8>, Vec<Frame>) {
    let mut enc = Encoder::new();
    let mut out = Vec::new();
    let mut frames = Vec::new();
    for b in bodies {
        let seq = enc.next_seq();
        out.extend_from_slice(enc.frame(b.clone()).unwrap());
        frames.push(Frame {
            version: PROTOCOL_VERSION,
            seq,
            body: b.clone(),
        });
    }
    (out, frames)
}

fn decode_all<const N: usize>(dec: &mut Decoder<N>, data: &[u8]) -> (Vec<Frame>, Vec<DecodeError>) {
    let (mut ok, mut err) = (Vec::new(), Vec::new());
    for f in dec.frames(data) {
        match f {
            Ok(f) => ok.push(f),
            Err(e) => err.push(e),
        }
    }
    (ok, err)
}

/// A receiver sizes its memory by what a target can send: a hello with a
/// layout wider than any target's, or a thread table no target has, does
/// not decode.
#[test]
fn impossible_hellos_are_rejected() {
    use crate::layout::{Layout, MAX_LINEAR_US, MAX_TARGET_BUCKETS};
    let widest = Layout::new(MAX_LINEAR_US, MAX_TARGET_BUCKETS);
    let mut wide = hello();
    wide.config.layout = Layout {
        linear_us: 1000,
        buckets: u16::MAX,
    };
    let mut deep = hello();
    deep.config.layout = Layout::new(MAX_LINEAR_US + 1, MAX_TARGET_BUCKETS);
    let mut twice = hello();
    twice.config.threads[1].index = 0;
    let mut beyond = hello();
    beyond.config.threads[3].index = MAX_THREADS as u16;
    let mut legal = hello();
    legal.config.layout = widest;
    for (h, possible) in [
        (wide, false),
        (deep, false),
        (twice, false),
        (beyond, false),
        (legal, true),
        (hello(), true),
    ] {
        assert_eq!(h.is_possible(), possible, "{:?}", h.config.layout);
        let (bytes, _) = stream(&[Body::Hello(h)]);
        let mut dec: Box<Decoder<MAX_FRAME>> = Box::default();
        let (ok, err) = decode_all(&mut dec, &bytes);
        if possible {
            assert_eq!((ok.len(), err.len()), (1, 0));
        } else {
            assert_eq!(err, [DecodeError::Malformed]);
            assert_eq!(dec.stats().malformed, 1);
        }
    }
}

#[test]
fn every_frame_type_round_trips() {
    let (bytes, frames) = stream(&every_body());
    let mut dec = Decoder::<MAX_FRAME>::new();
    let (got, errs) = decode_all(&mut dec, &bytes);
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(got, frames);
    assert_eq!(dec.stats().frames, frames.len() as u64);
    assert!(dec.stats().is_clean());
    assert_eq!(dec.stats().bytes_skipped, 0);
}

#[test]
fn frames_are_delimited_and_bounded() {
    for body in every_body() {
        let (bytes, _) = stream(core::slice::from_ref(&body));
        assert_eq!(bytes.first(), Some(&0));
        assert_eq!(bytes.last(), Some(&0));
        assert!(!bytes[1..bytes.len() - 1].contains(&0));
        assert!(bytes.len() <= MAX_FRAME);
        if !matches!(
            body,
            Body::Hello(_) | Body::Log(_) | Body::Explain(_) | Body::EvidencePart(_)
        ) {
            assert!(
                bytes.len() <= MAX_SMALL_FRAME,
                "{} bytes: {body:?}",
                bytes.len()
            );
        }
    }
}

#[test]
fn small_frames_fit_256_bytes_at_their_worst() {
    // header: version (1) + seq (5) + body tag (1); CRC 4; COBS ≤ 1 per 254; 2 delimiters
    let worst = |payload: usize| cobs::max_encoding_length(payload + 1 + 5 + 1 + 4) + 2;
    assert!(worst(SnapshotChunk::POSTCARD_MAX_SIZE) <= MAX_SMALL_FRAME);
    assert!(worst(HistDelta::POSTCARD_MAX_SIZE) <= MAX_SMALL_FRAME);
    assert!(worst(ThreadStats::POSTCARD_MAX_SIZE) <= MAX_SMALL_FRAME);
    assert!(worst(SpikeSample::POSTCARD_MAX_SIZE) <= MAX_SMALL_FRAME);
    assert!(worst(Aggregate::POSTCARD_MAX_SIZE) <= MAX_SMALL_FRAME);
    assert!(worst(EvidenceHead::POSTCARD_MAX_SIZE) <= MAX_SMALL_FRAME);
    assert!(worst(TimerlatStats::POSTCARD_MAX_SIZE) <= MAX_SMALL_FRAME);
    assert!(worst(TimerlatDelta::POSTCARD_MAX_SIZE) <= MAX_SMALL_FRAME);
    assert!(worst(TimerlatChunk::POSTCARD_MAX_SIZE) <= MAX_SMALL_FRAME);
}

#[test]
fn aggregates_account_for_every_spike() {
    let a = aggregate();
    assert!(a.is_consistent());
    assert_eq!(a.coverage(), Some(1_200.0 / 1_000_002.0));
    // one spike sample unaccounted for, or explained but never sent: caught
    for broken in [
        Aggregate { queued: 0, ..a },
        Aggregate {
            spikes: a.spikes + 1,
            ..a
        },
        Aggregate {
            spikes_explained: a.spikes_sent + 1,
            ..a
        },
        Aggregate {
            spikes_dropped: u64::MAX,
            ..a
        },
    ] {
        assert!(!broken.is_consistent(), "{broken:?}");
    }
    assert_eq!(Aggregate::default().coverage(), None);
}

#[test]
fn split_at_every_point_decodes_identically() {
    let (bytes, frames) = stream(&every_body());
    for cut in 0..=bytes.len() {
        let mut dec = Decoder::<MAX_FRAME>::new();
        let (mut a, e1) = decode_all(&mut dec, &bytes[..cut]);
        let (b, e2) = decode_all(&mut dec, &bytes[cut..]);
        assert!(e1.is_empty() && e2.is_empty(), "cut {cut}");
        a.extend(b);
        assert_eq!(a, frames, "cut at {cut}");
    }
    // and byte by byte
    let mut dec = Decoder::<MAX_FRAME>::new();
    let mut got = Vec::new();
    for byte in &bytes {
        let (got1, _) = decode_all(&mut dec, core::slice::from_ref(byte));
        got.extend(got1);
    }
    assert_eq!(got, frames);
}

/// Three frames; corrupt the middle one; the first and third must decode.
fn corrupt_middle(f: impl Fn(&mut [u8], usize)) {
    let spike = every_body()
        .into_iter()
        .find(|b| matches!(b, Body::Spike(_)))
        .unwrap();
    let bodies = [Body::Stats(stats(0, 1)), spike, Body::Stats(stats(0, 2))];
    let (bytes, frames) = stream(&bodies);
    let first_len = {
        let (b, _) = stream(&bodies[..1]);
        b.len()
    };
    let (mid, _) = {
        let mut e = Encoder::new();
        let _ = e.frame(bodies[0].clone()).unwrap();
        let m = e.frame(bodies[1].clone()).unwrap().to_vec();
        (m, ())
    };
    // interior bytes of the middle frame (not its delimiters)
    for pos in first_len + 1..first_len + mid.len() - 1 {
        let mut data = bytes.clone();
        f(&mut data, pos);
        if data == bytes {
            continue;
        }
        let mut dec = Decoder::<MAX_FRAME>::new();
        let (got, errs) = decode_all(&mut dec, &data);
        assert!(
            !got.contains(&frames[1]) || data[pos] == bytes[pos],
            "corruption at {pos} accepted"
        );
        assert!(got.contains(&frames[0]), "first frame lost (pos {pos})");
        assert!(got.contains(&frames[2]), "following frame lost (pos {pos})");
        assert!(
            got.iter().all(|g| frames.contains(g)),
            "a wrong frame was accepted (pos {pos})"
        );
        assert!(!errs.is_empty(), "corruption at {pos} not reported");
    }
}

#[test]
fn every_single_byte_corruption_is_rejected() {
    for xor in [0x01u8, 0x80, 0xFF, 0x5A] {
        corrupt_middle(|d, p| d[p] ^= xor);
    }
    // a byte replaced by a delimiter splits the frame: both halves rejected
    corrupt_middle(|d, p| d[p] = 0);
}

#[test]
fn every_single_bit_flip_is_rejected() {
    for bit in 0..8 {
        corrupt_middle(|d, p| d[p] ^= 1 << bit);
    }
}

#[test]
fn corrupted_delimiter_loses_at_most_its_two_neighbours() {
    let bodies: Vec<Body> = (0..6).map(|i| Body::Stats(stats(0, i))).collect();
    let (bytes, frames) = stream(&bodies);
    let delims: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == 0)
        .map(|(i, _)| i)
        .collect();
    for &d in &delims {
        let mut data = bytes.clone();
        data[d] = 0x42;
        let mut dec = Decoder::<MAX_FRAME>::new();
        let (got, _) = decode_all(&mut dec, &data);
        assert!(
            got.len() + 2 >= frames.len(),
            "delimiter at {d}: only {} of {}",
            got.len(),
            frames.len()
        );
        assert!(got.iter().all(|g| frames.contains(g)));
    }
}

#[test]
fn garbage_between_frames_is_skipped_and_counted() {
    let bodies: Vec<Body> = (0..5).map(|i| Body::Stats(stats(1, i))).collect();
    let mut enc = Encoder::new();
    let mut data = std::vec![0x13u8, 0x37, 0xFF, 0x00, 0x99, 0x98];
    let mut x: u32 = 12345;
    for b in &bodies {
        data.extend_from_slice(enc.frame(b.clone()).unwrap());
        for _ in 0..37 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            data.push((x >> 16) as u8);
        }
    }
    let mut dec = Decoder::<MAX_FRAME>::new();
    let (got, _) = decode_all(&mut dec, &data);
    assert_eq!(got.len(), 5);
    // the garbage after the last frame is still pending: no delimiter closed it
    assert_eq!(dec.pending(), 37);
    assert!(dec.stats().bytes_skipped >= 4 * 37 + 5, "{:?}", dec.stats());
    assert_eq!(dec.stats().seq_gaps, 0);
}

#[test]
fn joining_mid_stream_resynchronises_at_once() {
    let bodies: Vec<Body> = (0..4).map(|i| Body::Stats(stats(0, i))).collect();
    let (bytes, frames) = stream(&bodies);
    let one = stream(&bodies[..1]).0.len();
    // start in the middle of the first frame
    let mut dec = Decoder::<MAX_FRAME>::new();
    let (got, errs) = decode_all(&mut dec, &bytes[one / 2..]);
    assert_eq!(got, frames[1..].to_vec());
    assert!(
        errs.is_empty(),
        "the tail of a frame before the first delimiter is skipped, not an error"
    );
}

#[test]
fn sequence_gaps_and_oversize_and_versions_are_counted() {
    let bodies: Vec<Body> = (0..5).map(|i| Body::Stats(stats(0, i))).collect();
    let mut enc = Encoder::new();
    let mut data = Vec::new();
    for (i, b) in bodies.iter().enumerate() {
        let f = enc.frame(b.clone()).unwrap().to_vec();
        if i != 2 && i != 3 {
            data.extend(f);
        }
    }
    // an oversize run without delimiters
    data.extend(std::iter::repeat_n(0x55u8, MAX_FRAME + 10));
    data.push(0);
    // a frame from a newer protocol version with a valid CRC
    let mut buf = [0u8; MAX_FRAME];
    let used = postcard::to_slice(
        &Frame {
            version: PROTOCOL_VERSION + 1,
            seq: 5,
            body: Body::Stats(stats(0, 9)),
        },
        &mut buf,
    )
    .unwrap()
    .len();
    let mut payload = buf[..used].to_vec();
    let crc = encode::CRC.checksum(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    let mut framed = std::vec![0u8; cobs::max_encoding_length(payload.len()) + 2];
    let n = cobs::encode(&payload, &mut framed[1..]);
    framed.truncate(n + 2);
    *framed.last_mut().unwrap() = 0;
    data.extend(framed);
    let mut dec = Decoder::<MAX_FRAME>::new();
    let (got, errs) = decode_all(&mut dec, &data);
    assert_eq!(got.len(), 3);
    let s = dec.stats();
    assert_eq!((s.seq_gaps, s.frames_lost), (1, 2));
    assert_eq!(s.oversize, 1);
    assert_eq!(s.unknown_version, 1);
    assert!(errs.contains(&DecodeError::UnknownVersion(PROTOCOL_VERSION + 1)));
    assert!(errs.contains(&DecodeError::Oversize));
}

/// The schema keys, pinned. The current key changes with any change to a
/// type inside [`Frame`] (a field added, removed, renamed or retyped, a
/// variant added): update the pin in the same change. Version 3 is
/// unreleased until the branches of this wave have landed, so they add
/// fields without a new version; once released, a change to the current
/// types needs a new PROTOCOL_VERSION and a frozen copy as `v1` and `v2`
/// are. The version-1 and version-2 keys never change: every recording of
/// those versions carries them. `v2` borrows the current types version 3
/// did not change, so a change to one of them (an explanation's fields,
/// say) fails the version-2 pin: give `v2` a frozen copy of the type as
/// it was, and decode version-2 bodies of it through that copy.
#[test]
fn schema_keys_are_pinned() {
    assert_eq!(
        v1::SCHEMA_KEY,
        [0x43, 0xdd, 0xb9, 0xfc, 0xe5, 0x0e, 0x36, 0xf0],
        "the frozen version-1 types changed"
    );
    // cyclictest's facts added (kernel_version, node, hist_all, nsecs,
    // started, ended), RunConfig::tracefs_mounted and
    // Degraded::no_dma_latency_device added, before version 2 was released
    // (the version 1 upgrade fills them with documented defaults); then
    // RunConfig::wake, align and smi (v1 upgrades them to the absolute
    // sleep, own start and false). That was version 2 as released: every
    // version-2 recording carries this key (`tests/golden/v2`), and the
    // current types v2 borrows are part of it.
    assert_eq!(
        v2::SCHEMA_KEY,
        [0x64, 0x24, 0x5d, 0x1d, 0xbc, 0xeb, 0xdc, 0x7c],
        "a type version 2 shares with version 3 changed: freeze a copy in v2"
    );
    // version 3: TargetInfo's platform, model, clock_hz and
    // clock_resolution_ns, Body::Aggregate, and CauseKind::Masked. That was
    // version 3 as released: every version-3 recording carries this key
    // (`tests/golden/v3`), and the current types v3 borrows are part of it
    assert_eq!(
        v3::SCHEMA_KEY,
        [0x5e, 0xc2, 0x5d, 0x85, 0x18, 0xd6, 0x2c, 0x06],
        "a type version 3 shares with version 4 changed: freeze a copy in v3"
    );
    // version 4: Body::EvidenceHead and Body::EvidencePart. That was
    // version 4 as released: every version-4 recording carries this key
    // (`tests/golden/v4`), and the current types v4 borrows are part of it
    assert_eq!(
        v4::SCHEMA_KEY,
        [0xa5, 0x2a, 0x08, 0xde, 0xdf, 0xb9, 0xed, 0x7b],
        "a type version 4 shares with version 5 changed: freeze a copy in v4"
    );
    // version 5: an explanation's cause line is a typed Culprit. That was
    // version 5 as released: every version-5 recording carries this key
    // (`tests/golden/v5`), and the current types v5 borrows are part of it
    assert_eq!(
        v5::SCHEMA_KEY,
        [0x64, 0x63, 0x58, 0x7f, 0xde, 0xc8, 0x80, 0xad],
        "a type version 5 shares with version 6 changed: freeze a copy in v5"
    );
    // version 6: WakeMode::Timerlat and the timerlat histograms' bodies
    assert_eq!(
        SCHEMA_KEY,
        [0xe7, 0x00, 0x70, 0xe1, 0xbc, 0x9f, 0x12, 0xab],
        "the frame types changed: pin the new key (see this test's docs)"
    );
}

/// One version-1 frame body of every type, as a version-1 sender made them.
pub(super) fn every_v1_body() -> Vec<v1::Body> {
    let mut delta = v1::HistDelta {
        thread: 1,
        epoch: 7,
        part: 1,
        parts: 3,
        entries: heapless::Vec::new(),
    };
    for b in 0..24u16 {
        let _ = delta.entries.push(v1::DeltaEntry {
            bucket: 40 + b * b,
            count: u32::MAX - u32::from(b),
        });
    }
    let chunk = |index, total, from: u16| {
        let mut c = v1::SnapshotChunk {
            thread: 2,
            epoch: 5,
            index,
            total,
            entries: heapless::Vec::new(),
        };
        for b in 0..16u16 {
            let _ = c.entries.push(v1::SnapshotEntry {
                bucket: from + b * 3,
                count: u64::MAX - u64::from(b),
            });
        }
        c
    };
    let mut bodies: Vec<v1::Body> = std::vec![
        v1::Body::Delta(delta),
        v1::Body::Chunk(chunk(0, 3, 7)),
        v1::Body::Chunk(chunk(1, 3, 200)),
        v1::Body::Chunk(chunk(2, 3, 3000)),
    ];
    // the other bodies have the same shapes in both versions
    for b in every_body() {
        let f = Frame {
            version: 1,
            seq: 0,
            body: b,
        };
        bodies.extend(downgrade::downgrade(&f).map(|f| f.body));
    }
    bodies
}

#[test]
fn version_1_frames_decode_as_the_current_types() {
    let mut enc_buf = std::vec![0u8; MAX_FRAME];
    let mut bytes = Vec::new();
    for (i, body) in every_v1_body().into_iter().enumerate() {
        let mut payload = std::vec![0u8; MAX_PAYLOAD];
        let f = v1::Frame {
            version: 1,
            seq: i as u32,
            body,
        };
        let n = postcard::to_slice(&f, &mut payload).unwrap().len();
        let crc = encode::CRC.checksum(&payload[..n]);
        payload.truncate(n);
        payload.extend_from_slice(&crc.to_le_bytes());
        enc_buf[0] = 0;
        let m = cobs::encode(&payload, &mut enc_buf[1..]);
        enc_buf[m + 1] = 0;
        bytes.extend_from_slice(&enc_buf[..m + 2]);
    }
    let mut dec = Decoder::<MAX_FRAME>::new();
    let (got, errs) = decode_all(&mut dec, &bytes);
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(got.len(), every_v1_body().len());
    assert!(got.iter().all(|f| f.version == PROTOCOL_VERSION));
    assert_eq!(dec.stats().upgraded, got.len() as u64);
    // the delta's pairs, in order, from its first bucket
    let Body::Delta(d) = &got[0].body else {
        panic!("{:?}", got[0])
    };
    assert_eq!((d.thread, d.epoch, d.part, d.start), (1, 7, 1, 40));
    let pairs: Vec<_> = d.runs.iter(d.start).map(Result::unwrap).collect();
    let want: Vec<_> = (0..24u16)
        .map(|b| (40 + b * b, u64::from(u32::MAX - u32::from(b))))
        .collect();
    assert_eq!(pairs, want);
    // chunk ranges: the first from 0, the middle from its first bucket to
    // its last, the last to the end of any layout
    let ranges: Vec<_> = got[1..4]
        .iter()
        .map(|f| match &f.body {
            Body::Chunk(c) => (c.start, c.end),
            b => panic!("{b:?}"),
        })
        .collect();
    assert_eq!(ranges, [(0, 53), (200, 246), (3000, u16::MAX)]);
    // a version-1 hello carries the version-1 key and reads as this one
    let hello = got.iter().find_map(|f| match &f.body {
        Body::Hello(h) => Some(h),
        _ => None,
    });
    assert_eq!(hello.map(|h| h.schema), Some(SCHEMA_KEY));
    // the other bodies keep every field version 1 has
    let sent = every_v1_body();
    for (g, s) in got[4..].iter().zip(&sent[4..]) {
        assert_eq!(downgrade::downgrade(g).map(|f| f.body).as_ref(), Some(s));
    }
}

/// The postcard payload of `frame`.
fn to_payload<T: serde::Serialize>(frame: &T) -> Vec<u8> {
    let mut buf = std::vec![0u8; MAX_PAYLOAD];
    let n = postcard::to_slice(frame, &mut buf).unwrap().len();
    buf.truncate(n);
    buf
}

/// `payload` (a postcard frame) with its CRC, COBS-encoded and delimited.
fn seal(payload: &[u8]) -> Vec<u8> {
    let mut p = payload.to_vec();
    p.extend_from_slice(&encode::CRC.checksum(payload).to_le_bytes());
    let mut framed = std::vec![0u8; cobs::max_encoding_length(p.len()) + 2];
    let n = cobs::encode(&p, &mut framed[1..]);
    framed.truncate(n + 2);
    *framed.last_mut().unwrap() = 0;
    framed
}

/// Every body version 2 has, as a version-2 sender made them: the hello
/// in its frozen type, the others in the current types they share.
pub(super) fn every_v3_body() -> Vec<v3::Body> {
    every_body()
        .iter()
        .filter_map(downgrade::downgrade_v3)
        .collect()
}

pub(super) fn every_v2_body() -> Vec<v2::Body> {
    every_body()
        .iter()
        .filter_map(downgrade::downgrade_v2)
        .collect()
}

#[test]
fn version_2_frames_decode_as_the_current_types() {
    let mut bytes = Vec::new();
    let sent = every_v2_body();
    for (i, body) in sent.iter().cloned().enumerate() {
        let f = v2::Frame {
            version: 2,
            seq: i as u32,
            body,
        };
        bytes.extend(seal(&to_payload(&f)));
    }
    let mut dec = Decoder::<MAX_FRAME>::new();
    let (got, errs) = decode_all(&mut dec, &bytes);
    assert!(errs.is_empty(), "{errs:?}");
    // everything but the aggregate, the evidence and the timerlat
    // histograms, which version 2 did not have
    let had = |b: &&Body| {
        !matches!(
            b,
            Body::Aggregate(_)
                | Body::EvidenceHead(_)
                | Body::EvidencePart(_)
                | Body::TimerlatStats(_)
                | Body::TimerlatDelta(_)
                | Body::TimerlatChunk(_)
        )
    };
    assert_eq!(got.len(), every_body().iter().filter(had).count());
    assert!(got.iter().all(|f| f.version == PROTOCOL_VERSION));
    assert_eq!(dec.stats().upgraded, got.len() as u64);
    for (g, want) in got.iter().zip(every_body().iter().filter(had)) {
        match (&g.body, want) {
            // the hello: version 2's fields kept, version 3's defaulted
            // as for a Linux target, version 2's key read as this one
            (Body::Hello(h), Body::Hello(w)) => {
                let mut w = w.clone();
                w.target.platform = Platform::Linux;
                w.target.model.clear();
                w.target.clock_hz = NS_CLOCK_HZ;
                w.target.clock_resolution_ns = 0;
                assert_eq!(h, &w);
            }
            (g, w) => assert_eq!(g, w),
        }
    }
}

#[test]
fn a_version_2_frame_of_a_version_3_body_is_malformed() {
    // an aggregate's tag under version 2, which had no such body
    let p = to_payload(&Frame {
        version: 2,
        seq: 0,
        body: Body::Aggregate(aggregate()),
    });
    let mut dec = Decoder::<MAX_FRAME>::new();
    let (got, errs) = decode_all(&mut dec, &seal(&p));
    assert!(got.is_empty());
    assert_eq!(errs, [DecodeError::Malformed]);
    // and a version-3 hello sent as version 2 does not decode as one
    let p = to_payload(&Frame {
        version: 2,
        seq: 0,
        body: Body::Hello(hello()),
    });
    let (got, _) = decode_all(&mut dec, &seal(&p));
    assert!(
        got.iter()
            .all(|f| !matches!(&f.body, Body::Hello(h) if *h == hello())),
        "{got:?}"
    );
}

/// What version 6 added does not decode under version 5: its bodies'
/// tags, and a hello of the timerlat mode.
#[test]
fn a_version_5_frame_of_a_version_6_body_is_malformed() {
    let mut timerlat = hello();
    timerlat.config.wake = WakeMode::Timerlat;
    for body in every_body()
        .into_iter()
        .filter(|b| downgrade::downgrade_v5(b).is_none())
        .chain([Body::Hello(timerlat.clone())])
    {
        let p = to_payload(&Frame {
            version: 5,
            seq: 0,
            body: body.clone(),
        });
        let mut dec = Decoder::<MAX_FRAME>::new();
        let (got, errs) = decode_all(&mut dec, &seal(&p));
        assert!(got.is_empty(), "{body:?} read as {got:?}");
        assert_eq!(errs, [DecodeError::Malformed], "{body:?}");
    }
    // the same hello as version 6 is one
    let p = to_payload(&Frame {
        version: 6,
        seq: 0,
        body: Body::Hello(timerlat.clone()),
    });
    let (got, _) = decode_all(&mut Decoder::<MAX_FRAME>::new(), &seal(&p));
    assert_eq!(got.first().map(|f| &f.body), Some(&Body::Hello(timerlat)));
}

#[test]
fn version_1_pairs_out_of_order_are_malformed() {
    let mut d = v1::HistDelta {
        thread: 0,
        epoch: 1,
        part: 0,
        parts: 1,
        entries: heapless::Vec::new(),
    };
    for b in [5u16, 9, 7] {
        let _ = d.entries.push(v1::DeltaEntry {
            bucket: b,
            count: 1,
        });
    }
    assert_eq!(v1::upgrade_body(v1::Body::Delta(d)), None);
}

/// The decoder checks with `crc32fast`, the encoder writes with `crc`:
/// the same CRC-32 (ISO-HDLC) at every length and alignment.
#[test]
fn the_decoders_crc_is_the_encoders() {
    // the catalogue's check value of CRC-32/ISO-HDLC
    assert_eq!(crc32fast::hash(b"123456789"), 0xCBF4_3926);
    let data: Vec<u8> = (0..600u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    for start in 0..17 {
        for end in start..data.len() {
            let s = &data[start..end];
            assert_eq!(
                crc32fast::hash(s),
                encode::CRC.checksum(s),
                "{start}..{end}"
            );
        }
    }
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(crate::proptest_cases::config(512))]

        /// Arbitrary bytes in arbitrary chunks never panic, and every
        /// byte is accounted for.
        #[test]
        fn decoder_never_panics(data in proptest::collection::vec(any::<u8>(), 0..4096), chunk in 1usize..300) {
            let mut dec = Decoder::<MAX_FRAME>::new();
            for c in data.chunks(chunk) {
                let _ = decode_all(&mut dec, c);
            }
            prop_assert_eq!(dec.stats().bytes, data.len() as u64);
        }

        /// Valid frames with garbage between them: all frames decode.
        #[test]
        fn frames_survive_garbage(garbage in proptest::collection::vec(proptest::collection::vec(1u8..=255, 0..64), 4), chunk in 1usize..97) {
            let bodies: Vec<Body> = (0..4).map(|i| Body::Stats(stats(i, i as u32))).collect();
            let mut enc = Encoder::new();
            let mut data = Vec::new();
            let mut frames = Vec::new();
            for (b, g) in bodies.iter().zip(&garbage) {
                data.extend_from_slice(g);
                let seq = enc.next_seq();
                data.extend_from_slice(enc.frame(b.clone()).unwrap());
                frames.push(Frame { version: PROTOCOL_VERSION, seq, body: b.clone() });
            }
            let mut dec = Decoder::<MAX_FRAME>::new();
            let mut got = Vec::new();
            for c in data.chunks(chunk) {
                got.extend(decode_all(&mut dec, c).0);
            }
            prop_assert_eq!(got, frames);
        }
    }
}

/// `a` as the type `B` whose encoding it shares (a frozen version's copy
/// and the current type), through postcard; `None` if `B` cannot hold it.
fn recode<A: serde::Serialize, B: serde::de::DeserializeOwned>(a: &A) -> Option<B> {
    let mut buf = [0u8; 2048];
    let bytes = postcard::to_slice(a, &mut buf).ok()?;
    postcard::from_bytes(bytes).ok()
}
