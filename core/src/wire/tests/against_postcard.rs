//! The decoder's envelope and body dispatch against postcard decoding a
//! whole `Frame`: on valid, cut, edited and random payloads they agree.
use std::vec::Vec;

use proptest::prelude::*;

use super::super::decode::decode_frame;
use super::*;

/// Postcard's result for the whole frame (upgraded, for versions 1 to
/// 5); other versions are not decoded.
fn reference(payload: &[u8]) -> Option<Frame> {
    match payload.first() {
        Some(&PROTOCOL_VERSION) => postcard::from_bytes::<Frame>(payload).ok(),
        Some(5) => {
            let f = postcard::from_bytes::<v5::Frame>(payload).ok()?;
            let body = match f.body {
                v5::Body::Hello(h) => Body::Hello(v5::upgrade_hello(h)),
                v5::Body::Stats(s) => Body::Stats(s),
                v5::Body::Delta(d) => Body::Delta(d),
                v5::Body::Chunk(c) => Body::Chunk(c),
                v5::Body::Spike(s) => Body::Spike(s),
                v5::Body::Log(l) => Body::Log(l),
                v5::Body::Bye(b) => Body::Bye(b),
                v5::Body::Explain(a) => Body::Explain(a),
                v5::Body::Aggregate(a) => Body::Aggregate(a),
                v5::Body::EvidenceHead(h) => Body::EvidenceHead(h),
                v5::Body::EvidencePart(p) => Body::EvidencePart(p),
            };
            Some(Frame {
                version: PROTOCOL_VERSION,
                seq: f.seq,
                body,
            })
        }
        Some(4) => {
            let f = postcard::from_bytes::<v4::Frame>(payload).ok()?;
            let body = match f.body {
                v4::Body::Hello(h) => Body::Hello(v4::upgrade_hello(h)),
                v4::Body::Stats(s) => Body::Stats(s),
                v4::Body::Delta(d) => Body::Delta(d),
                v4::Body::Chunk(c) => Body::Chunk(c),
                v4::Body::Spike(s) => Body::Spike(s),
                v4::Body::Log(l) => Body::Log(l),
                v4::Body::Bye(b) => Body::Bye(b),
                v4::Body::Explain(a) => Body::Explain(v4::upgrade_attribution(a)),
                v4::Body::Aggregate(a) => Body::Aggregate(a),
                v4::Body::EvidenceHead(h) => Body::EvidenceHead(h),
                v4::Body::EvidencePart(p) => Body::EvidencePart(p),
            };
            Some(Frame {
                version: PROTOCOL_VERSION,
                seq: f.seq,
                body,
            })
        }
        Some(3) => {
            let f = postcard::from_bytes::<v3::Frame>(payload).ok()?;
            let body = match f.body {
                v3::Body::Hello(h) => Body::Hello(v3::upgrade_hello(h)),
                v3::Body::Stats(s) => Body::Stats(s),
                v3::Body::Delta(d) => Body::Delta(d),
                v3::Body::Chunk(c) => Body::Chunk(c),
                v3::Body::Spike(s) => Body::Spike(s),
                v3::Body::Log(l) => Body::Log(l),
                v3::Body::Bye(b) => Body::Bye(b),
                v3::Body::Explain(a) => Body::Explain(v4::upgrade_attribution(a)),
                v3::Body::Aggregate(a) => Body::Aggregate(a),
            };
            Some(Frame {
                version: PROTOCOL_VERSION,
                seq: f.seq,
                body,
            })
        }
        Some(2) => {
            let f = postcard::from_bytes::<v2::Frame>(payload).ok()?;
            let body = match f.body {
                v2::Body::Hello(h) => Body::Hello(v2::upgrade_hello(h)),
                v2::Body::Stats(s) => Body::Stats(s),
                v2::Body::Delta(d) => Body::Delta(d),
                v2::Body::Chunk(c) => Body::Chunk(c),
                v2::Body::Spike(s) => Body::Spike(s),
                v2::Body::Log(l) => Body::Log(l),
                v2::Body::Bye(b) => Body::Bye(b),
                v2::Body::Explain(a) => Body::Explain(v4::upgrade_attribution(super::recode(&a)?)),
            };
            Some(Frame {
                version: PROTOCOL_VERSION,
                seq: f.seq,
                body,
            })
        }
        Some(1) => {
            let f = postcard::from_bytes::<v1::Frame>(payload).ok()?;
            Some(Frame {
                version: PROTOCOL_VERSION,
                seq: f.seq,
                body: v1::upgrade_body(f.body)?,
            })
        }
        _ => None,
    }
}

/// The decoder's answer for one payload.
fn decode_fast(payload: &[u8]) -> Option<Frame> {
    let mut slot = None;
    decode_frame(payload, &mut slot).map(|()| slot.expect("filled"))
}

fn payload<T: serde::Serialize>(frame: &T) -> Vec<u8> {
    let mut buf = [0u8; MAX_PAYLOAD];
    postcard::to_slice(frame, &mut buf).unwrap().to_vec()
}

fn frame(seq: u32, body: Body) -> Frame {
    Frame {
        version: PROTOCOL_VERSION,
        seq,
        body,
    }
}

/// Every prefix, the payload with trailing bytes, and single-byte
/// edits: the decoder agrees with postcard on all of them.
fn agrees_everywhere(p: &[u8]) {
    assert_eq!(decode_fast(p), reference(p), "{p:02x?}");
    let mut longer = p.to_vec();
    longer.extend_from_slice(&[0xFF, 0, 7]);
    assert_eq!(decode_fast(&longer), reference(&longer));
    for n in 0..p.len() {
        assert_eq!(decode_fast(&p[..n]), reference(&p[..n]), "cut at {n}");
    }
}

#[test]
fn every_body_agrees_with_postcard() {
    for (i, body) in crate::wire::tests::every_body().into_iter().enumerate() {
        agrees_everywhere(&payload(&frame(i as u32 * 1000, body)));
    }
}

/// Postcard's tag of each variant, matched without a wildcard: a variant
/// added to `Body` fails to build here until the decoder's dispatch and
/// this list name it.
fn tag(b: &Body) -> u8 {
    match b {
        Body::Hello(_) => 0,
        Body::Stats(_) => 1,
        Body::Delta(_) => 2,
        Body::Chunk(_) => 3,
        Body::Spike(_) => 4,
        Body::Log(_) => 5,
        Body::Bye(_) => 6,
        Body::Explain(_) => 7,
        Body::Aggregate(_) => 8,
        Body::EvidenceHead(_) => 9,
        Body::EvidencePart(_) => 10,
        Body::TimerlatStats(_) => 11,
        Body::TimerlatDelta(_) => 12,
        Body::TimerlatChunk(_) => 13,
    }
}

#[test]
fn every_variant_is_dispatched_by_its_tag() {
    let mut seen = std::collections::BTreeSet::new();
    for body in crate::wire::tests::every_body() {
        let p = payload(&frame(0, body.clone()));
        // the version, sequence number 0, then the tag (one byte below 128)
        assert_eq!(p[2], tag(&body), "{body:?}");
        assert_eq!(decode_fast(&p).map(|f| f.body), Some(body.clone()));
        seen.insert(tag(&body));
    }
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        (0..=13).collect::<Vec<u8>>(),
        "every_body() names every variant"
    );
}

#[test]
fn every_version_5_body_agrees_with_postcard_upgraded() {
    for (i, body) in crate::wire::tests::every_body().iter().enumerate() {
        let Some(b) = super::downgrade::downgrade_v5(body) else {
            continue;
        };
        let f = v5::Frame {
            version: 5,
            seq: i as u32 * 1000,
            body: b,
        };
        let p = payload(&f);
        // a version-5 body reads as the current one it came from, its
        // hello (through version 5's types) with the current key
        assert_eq!(
            decode_fast(&p).map(|g| g.body).as_ref(),
            Some(body),
            "{f:?}"
        );
        agrees_everywhere(&p);
    }
}

#[test]
fn every_version_4_body_agrees_with_postcard_upgraded() {
    for (i, body) in crate::wire::tests::every_body().iter().enumerate() {
        let Some(b) = super::downgrade::downgrade_v4(body) else {
            continue;
        };
        let f = v4::Frame {
            version: 4,
            seq: i as u32 * 1000,
            body: b,
        };
        let p = payload(&f);
        let got = decode_fast(&p).map(|g| g.body);
        // a version-4 body reads as the current one it came from, its
        // hello's key as the current key
        assert_eq!(got.as_ref(), Some(body), "{f:?}");
        agrees_everywhere(&p);
    }
}

#[test]
fn every_version_3_body_agrees_with_postcard_upgraded() {
    for (i, body) in crate::wire::tests::every_v3_body().into_iter().enumerate() {
        let f = v3::Frame {
            version: 3,
            seq: i as u32 * 1000,
            body,
        };
        let p = payload(&f);
        let got = decode_fast(&p);
        assert!(got.is_some(), "{f:?}");
        // a version-3 hello's key reads as the current one
        if let Some(Body::Hello(h)) = got.map(|g| g.body) {
            assert_eq!(h.schema, SCHEMA_KEY);
        }
        agrees_everywhere(&p);
    }
}

#[test]
fn every_version_2_body_agrees_with_postcard_upgraded() {
    for (i, body) in crate::wire::tests::every_v2_body().into_iter().enumerate() {
        let f = v2::Frame {
            version: 2,
            seq: i as u32 * 1000,
            body,
        };
        let p = payload(&f);
        assert!(decode_fast(&p).is_some(), "{f:?}");
        agrees_everywhere(&p);
    }
}

#[test]
fn every_version_1_body_agrees_with_postcard_upgraded() {
    for (i, body) in crate::wire::tests::every_v1_body().into_iter().enumerate() {
        let f = v1::Frame {
            version: 1,
            seq: i as u32 * 1000,
            body,
        };
        let p = payload(&f);
        assert!(decode_fast(&p).is_some(), "{f:?}");
        agrees_everywhere(&p);
    }
}

#[test]
fn varint_edges_agree_with_postcard() {
    // head: version, seq, variant 2 (delta); then thread as a u16 varint
    let cases: &[&[u8]] = &[
        &[0xFF, 0xFF, 0x03],       // u16::MAX
        &[0xFF, 0xFF, 0x04],       // one bit too many
        &[0x80, 0x00],             // non-canonical zero, accepted
        &[0x80, 0x80, 0x00],       // non-canonical, three bytes
        &[0x80, 0x80, 0x80, 0x00], // four bytes: too long for u16
    ];
    for version in [1, PROTOCOL_VERSION] {
        for thread in cases {
            for seq in [
                &[0x00][..],
                &[0xFF, 0xFF, 0xFF, 0xFF, 0x0F],
                &[0xFF, 0xFF, 0xFF, 0xFF, 0x10],
                &[0x80, 0x80, 0x80, 0x80, 0x80, 0x00],
            ] {
                let mut p = std::vec![version];
                p.extend_from_slice(seq);
                p.push(2);
                p.extend_from_slice(thread);
                p.extend_from_slice(&[5, 0, 1, 1, 3, 9]);
                assert_eq!(decode_fast(&p), reference(&p), "{p:02x?}");
            }
        }
    }
}

#[test]
fn overwrites_a_slot_of_any_body() {
    let bodies = crate::wire::tests::every_body();
    for (i, old) in bodies.iter().enumerate() {
        for (j, new) in bodies.iter().enumerate() {
            let p = payload(&frame(j as u32, new.clone()));
            let mut slot = Some(frame(i as u32, old.clone()));
            let before = slot.clone();
            let taken = decode_frame(&p, &mut slot).is_some();
            match reference(&p) {
                Some(want) => assert!(taken && slot == Some(want)),
                None => assert!(!taken && slot == before),
            }
        }
    }
}

fn any_stats() -> impl Strategy<Value = ThreadStats> {
    (
        (any::<u16>(), any::<u32>(), any::<[u64; 7]>()),
        (any::<i64>(), any::<[u64; 5]>(), any::<bool>()),
    )
        .prop_map(|((thread, epoch, a), (last, b, last_report))| ThreadStats {
            thread,
            epoch,
            elapsed_ns: a[0],
            cycles: a[1],
            count: a[2],
            sum: a[3],
            min: a[4],
            max: a[5],
            interval_max: a[6],
            last,
            missed: b[0],
            early: b[1],
            minflt: b[2],
            majflt: b[3],
            dropped: b[4],
            last_report,
        })
}

/// Runs of increasing buckets with any counts, from `start`.
fn any_runs() -> impl Strategy<Value = (u16, Runs)> {
    (
        any::<u16>(),
        proptest::collection::vec((0u16..500, any::<u64>()), 0..40),
    )
        .prop_map(|(start, steps)| {
            let mut w = RunWriter::new(start, RUN_BYTES);
            let mut b = u32::from(start);
            for (step, count) in steps {
                b += u32::from(step);
                if b >= u32::from(u16::MAX) || !w.push(b as u16, count) {
                    break;
                }
                b += 1;
            }
            (start, w.finish())
        })
}

fn any_body() -> impl Strategy<Value = Body> {
    let head = (any::<u16>(), any::<u32>(), any::<u16>());
    prop_oneof![
        any_stats().prop_map(Body::Stats),
        (head, any_runs()).prop_map(|((thread, epoch, part), (start, runs))| {
            Body::Delta(HistDelta {
                thread,
                epoch,
                part,
                start,
                runs,
            })
        }),
        (head, any_runs()).prop_map(|((thread, epoch, end), (start, runs))| {
            Body::Chunk(SnapshotChunk {
                thread,
                epoch,
                start,
                end,
                runs,
            })
        }),
        (
            (
                any::<u16>(),
                any::<u64>(),
                any::<i64>(),
                any::<i64>(),
                any::<u64>()
            ),
            any::<[bool; 3]>(),
        )
            .prop_map(
                |((thread, cycle, deadline_ns, latency_ns, missed), [spike, overflow, brk])| {
                    Body::Spike(SpikeSample {
                        thread,
                        cycle,
                        deadline_ns,
                        latency_ns,
                        missed,
                        flags: SpikeFlags {
                            spike,
                            overflow,
                            brk,
                        },
                    })
                }
            ),
    ]
}

/// Bytes that hit the varint and bool edges often.
fn edgy_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        any::<u8>(),
        proptest::sample::select(std::vec![
            0u8, 1, 2, 3, 4, 0x0F, 0x10, 0x7F, 0x80, 0x81, 0xFF
        ]),
    ]
}

proptest! {
    #![proptest_config(crate::proptest_cases::config(2048))]

    /// Valid frames of the frequent bodies decode to exactly themselves.
    #[test]
    fn fast_bodies_round_trip(seq in any::<u32>(), body in any_body()) {
        let f = frame(seq, body);
        prop_assert_eq!(decode_fast(&payload(&f)), Some(f));
    }

    /// Corrupted payloads: the decoder agrees with postcard exactly.
    #[test]
    fn corrupted_payloads_agree_with_postcard(
        seq in any::<u32>(),
        body in any_body(),
        edits in proptest::collection::vec((any::<proptest::sample::Index>(), edgy_byte()), 1..4),
        cut in any::<proptest::sample::Index>(),
    ) {
        let mut p = payload(&frame(seq, body));
        for (at, b) in edits {
            let i = at.index(p.len());
            p[i] = b;
        }
        let n = cut.index(p.len() + 1);
        prop_assert_eq!(decode_fast(&p), reference(&p));
        prop_assert_eq!(decode_fast(&p[..n]), reference(&p[..n]));
    }

    /// Random payloads after a plausible head agree with postcard, in
    /// both versions.
    #[test]
    fn random_payloads_agree_with_postcard(
        version in 1u8..=2,
        variant in 0u8..9,
        rest in proptest::collection::vec(edgy_byte(), 0..200),
    ) {
        let mut p = std::vec![version, 5, variant];
        p.extend_from_slice(&rest);
        prop_assert_eq!(decode_fast(&p), reference(&p));
    }

    /// `Runs` read as one byte string accepts and yields exactly what
    /// the derived sequence of bytes does, on any input.
    #[test]
    fn runs_as_bytes_agree_with_a_sequence_of_bytes(
        bytes in proptest::collection::vec(edgy_byte(), 0..300),
    ) {
        let seq = postcard::take_from_bytes::<heapless::Vec<u8, RUN_BYTES>>(&bytes)
            .ok()
            .map(|(v, rest)| (Runs::from_bytes(&v), rest.len()));
        let whole = postcard::take_from_bytes::<Runs>(&bytes)
            .ok()
            .map(|(r, rest)| (Some(r), rest.len()));
        prop_assert_eq!(whole, seq);
    }
}
