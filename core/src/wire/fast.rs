//! A hand-written postcard decoder for the frequent frame bodies (stats,
//! deltas, snapshot chunks, spike records), writing straight into the
//! decoder's slot.
//!
//! Through serde every nested `Result<T>` of a 2.4 KiB [`Frame`] is moved
//! several times per frame; these bodies are small, so decoding them by hand
//! saves most of the decoder's time. It accepts only what postcard accepts
//! and yields exactly postcard's value (for version 1, postcard's value
//! upgraded); on anything else it returns `None` and the caller falls back
//! to postcard, which then gives the verdict.

use super::{
    v1, Body, Frame, HistDelta, RunWriter, Runs, SnapshotChunk, SpikeFlags, SpikeSample,
    ThreadStats, RUN_BYTES,
};

/// Postcard's variant indices of the fast bodies (declaration order).
const STATS: u32 = 1;
const DELTA: u32 = 2;
const CHUNK: u32 = 3;
const SPIKE: u32 = 4;

/// A cursor over a postcard payload.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    #[inline(always)]
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    /// A postcard varint of a `BITS`-bit integer: at most `ceil(BITS / 7)`
    /// bytes, the last of which may not carry bits beyond `BITS`
    /// (non-canonical encodings are accepted, as postcard does).
    #[inline(always)]
    fn varint<const BITS: u32>(&mut self) -> Option<u64> {
        let max = BITS.div_ceil(7);
        let last_max = (1u8 << (BITS % 7)) - 1;
        let b = self.byte()?;
        if b & 0x80 == 0 {
            return (max > 1 || b <= last_max).then_some(u64::from(b));
        }
        let mut out = u64::from(b & 0x7F);
        for i in 1..max {
            let b = self.byte()?;
            out |= u64::from(b & 0x7F) << (7 * i);
            if b & 0x80 == 0 {
                return (i != max - 1 || b <= last_max).then_some(out);
            }
        }
        None
    }

    #[inline(always)]
    fn u16(&mut self) -> Option<u16> {
        self.varint::<16>().map(|v| v as u16)
    }

    #[inline(always)]
    fn u32(&mut self) -> Option<u32> {
        self.varint::<32>().map(|v| v as u32)
    }

    #[inline(always)]
    fn u64(&mut self) -> Option<u64> {
        self.varint::<64>()
    }

    #[inline(always)]
    fn i64(&mut self) -> Option<i64> {
        let n = self.varint::<64>()?;
        Some(((n >> 1) as i64) ^ (-((n & 1) as i64)))
    }

    #[inline(always)]
    fn usize(&mut self) -> Option<usize> {
        self.varint::<{ usize::BITS }>().map(|v| v as usize)
    }

    #[inline(always)]
    fn bool(&mut self) -> Option<bool> {
        match self.byte()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
}

/// Put `$body` into `$slot` as `Body::$variant`: in place when the slot
/// already holds that variant (so only the body moves, not a whole 2.4 KiB
/// frame), as a new frame otherwise.
macro_rules! store {
    ($slot:expr, $version:expr, $seq:expr, $variant:ident, $body:expr) => {
        match $slot {
            Some(Frame {
                version: v,
                seq: q,
                body: Body::$variant(b),
            }) => (*v, *q, *b) = ($version, $seq, $body),
            _ => {
                *$slot = Some(Frame {
                    version: $version,
                    seq: $seq,
                    body: Body::$variant($body),
                })
            }
        }
    };
}

/// Decode `payload` (a whole postcard [`Frame`] of this version or of
/// version 1, trailing bytes ignored as `postcard::from_bytes` does) into
/// `slot` if it is one of the fast bodies and valid. Returns `false`,
/// leaving `slot` untouched, otherwise.
pub(super) fn decode_into(payload: &[u8], slot: &mut Option<Frame>) -> bool {
    let mut r = Reader(payload);
    let (Some(version), Some(seq)) = (r.byte(), r.u32()) else {
        return false;
    };
    let v1 = match version {
        super::PROTOCOL_VERSION => false,
        1 => true,
        _ => return false,
    };
    // an upgraded frame is a current one
    let version = super::PROTOCOL_VERSION;
    match (r.u32(), v1) {
        (Some(STATS), false) => match stats(&mut r) {
            Some(s) => store!(slot, version, seq, Stats, s),
            None => return false,
        },
        (Some(STATS), true) => match stats_v1(&mut r) {
            Some(s) => store!(slot, version, seq, Stats, s),
            None => return false,
        },
        (Some(DELTA), false) => match delta(&mut r) {
            Some(d) => store!(slot, version, seq, Delta, d),
            None => return false,
        },
        (Some(DELTA), true) => match delta_v1(&mut r) {
            Some(d) => store!(slot, version, seq, Delta, d),
            None => return false,
        },
        (Some(CHUNK), false) => match chunk(&mut r) {
            Some(c) => store!(slot, version, seq, Chunk, c),
            None => return false,
        },
        (Some(CHUNK), true) => match chunk_v1(&mut r) {
            Some(c) => store!(slot, version, seq, Chunk, c),
            None => return false,
        },
        // the same fields in both versions (version 1's upgrade copies them)
        (Some(SPIKE), _) => match spike(&mut r) {
            Some(s) => store!(slot, version, seq, Spike, s),
            None => return false,
        },
        _ => return false,
    }
    true
}

/// Packed runs: a postcard byte sequence of at most [`RUN_BYTES`].
#[inline(always)]
fn runs(r: &mut Reader<'_>) -> Option<Runs> {
    let len = r.usize()?;
    if len > RUN_BYTES || len > r.0.len() {
        return None;
    }
    let (bytes, rest) = r.0.split_at(len);
    r.0 = rest;
    Runs::from_bytes(bytes)
}

#[inline(always)]
fn delta(r: &mut Reader<'_>) -> Option<HistDelta> {
    Some(HistDelta {
        thread: r.u16()?,
        epoch: r.u32()?,
        part: r.u16()?,
        start: r.u16()?,
        runs: runs(r)?,
    })
}

#[inline(always)]
fn chunk(r: &mut Reader<'_>) -> Option<SnapshotChunk> {
    Some(SnapshotChunk {
        thread: r.u16()?,
        epoch: r.u32()?,
        start: r.u16()?,
        end: r.u16()?,
        runs: runs(r)?,
    })
}

#[inline(always)]
fn spike(r: &mut Reader<'_>) -> Option<SpikeSample> {
    Some(SpikeSample {
        thread: r.u16()?,
        cycle: r.u64()?,
        deadline_ns: r.i64()?,
        latency_ns: r.i64()?,
        missed: r.u64()?,
        flags: SpikeFlags {
            spike: r.bool()?,
            overflow: r.bool()?,
            brk: r.bool()?,
        },
    })
}

#[inline(always)]
fn stats(r: &mut Reader<'_>) -> Option<ThreadStats> {
    Some(ThreadStats {
        thread: r.u16()?,
        epoch: r.u32()?,
        elapsed_ns: r.u64()?,
        cycles: r.u64()?,
        count: r.u64()?,
        sum: r.u64()?,
        min: r.u64()?,
        max: r.u64()?,
        interval_max: r.u64()?,
        last: r.i64()?,
        missed: r.u64()?,
        early: r.u64()?,
        minflt: r.u64()?,
        majflt: r.u64()?,
        dropped: r.u64()?,
        last_report: r.bool()?,
    })
}

/// Version 1's statistics, upgraded.
#[inline(always)]
fn stats_v1(r: &mut Reader<'_>) -> Option<ThreadStats> {
    let s = v1::ThreadStats {
        thread: r.u16()?,
        epoch: r.u32()?,
        elapsed_ns: r.u64()?,
        cycles: r.u64()?,
        count: r.u64()?,
        sum: r.u64()?,
        min: r.u64()?,
        max: r.u64()?,
        interval_max: r.u64()?,
        last: r.i64()?,
        missed: r.u64()?,
        early: r.u64()?,
        minflt: r.u64()?,
        majflt: r.u64()?,
        dropped: r.u64()?,
        last_report: r.bool()?,
    };
    Some(v1::stats(s))
}

/// The `thread, epoch, u16, u16` head of version 1's deltas and chunks.
#[inline(always)]
fn head_v1(r: &mut Reader<'_>) -> Option<(u16, u32, u16, u16)> {
    Some((r.u16()?, r.u32()?, r.u16()?, r.u16()?))
}

/// Version 1's pairs, packed: their first and last bucket, the runs' base
/// and the runs.
struct PairsV1 {
    span: Option<(u16, u16)>,
    start: u16,
    runs: Runs,
}

/// Version 1's `{bucket, count}` list (at most `cap` entries, counts read
/// by `count`), packed as runs from `base` (or from its first bucket) as
/// the upgrade packs it; `None` where postcard or the upgrade would fail
/// (entries out of order).
#[inline(always)]
fn pairs_v1(
    r: &mut Reader<'_>,
    cap: usize,
    base: Option<u16>,
    count: impl Fn(&mut Reader<'_>) -> Option<u64>,
) -> Option<PairsV1> {
    let len = r.usize()?;
    if len > cap {
        return None;
    }
    if len == 0 {
        return Some(PairsV1 {
            span: None,
            start: base.unwrap_or(0),
            runs: Runs::new(),
        });
    }
    let (first, c) = (r.u16()?, count(r)?);
    let start = base.unwrap_or(first);
    let mut w = RunWriter::new(start, RUN_BYTES);
    let mut last = first;
    if !w.push(first, c) {
        return None;
    }
    for _ in 1..len {
        let (b, c) = (r.u16()?, count(r)?);
        if !w.push(b, c) {
            return None;
        }
        last = b;
    }
    Some(PairsV1 {
        span: Some((first, last)),
        start,
        runs: w.finish(),
    })
}

/// Version 1's delta, upgraded (as `v1::delta`).
#[inline(always)]
fn delta_v1(r: &mut Reader<'_>) -> Option<HistDelta> {
    let (thread, epoch, part, _parts) = head_v1(r)?;
    let PairsV1 { start, runs, .. } =
        pairs_v1(r, v1::DELTA_ENTRIES, None, |r| r.u32().map(u64::from))?;
    Some(HistDelta {
        thread,
        epoch,
        part,
        start,
        runs,
    })
}

/// Version 1's snapshot chunk, upgraded (as `v1::chunk`).
#[inline(always)]
fn chunk_v1(r: &mut Reader<'_>) -> Option<SnapshotChunk> {
    let (thread, epoch, index, total) = head_v1(r)?;
    let base = (index == 0).then_some(0);
    let PairsV1 { span, start, runs } = pairs_v1(r, v1::CHUNK_ENTRIES, base, |r| r.u64())?;
    if index != 0 {
        span?;
    }
    let end = if index.saturating_add(1) >= total {
        u16::MAX
    } else {
        span?.1.checked_add(1)?
    };
    Some(SnapshotChunk {
        thread,
        epoch,
        start,
        end,
        runs,
    })
}

/// Postcard's answer, for the tests: the fast path must agree with it.
#[cfg(test)]
pub(super) fn decode_fast(payload: &[u8]) -> Option<Frame> {
    let mut slot = None;
    decode_into(payload, &mut slot).then(|| slot.expect("filled"))
}

#[cfg(test)]
mod tests {
    use std::vec::Vec;

    use proptest::prelude::*;

    use super::super::{RunWriter, MAX_PAYLOAD, PROTOCOL_VERSION};
    use super::*;

    /// Postcard's result (upgraded, for version 1), restricted to the
    /// bodies the fast path handles; other versions are not decoded.
    fn reference(payload: &[u8]) -> Option<Frame> {
        let f = match payload.first() {
            Some(&PROTOCOL_VERSION) => postcard::from_bytes::<Frame>(payload).ok()?,
            Some(1) => v1::upgrade(postcard::from_bytes::<v1::Frame>(payload).ok()?)?,
            _ => return None,
        };
        matches!(
            f.body,
            Body::Stats(_) | Body::Delta(_) | Body::Chunk(_) | Body::Spike(_)
        )
        .then_some(f)
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
    /// edits: the fast path agrees with postcard on all of them.
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

    #[test]
    fn every_version_1_body_agrees_with_postcard_upgraded() {
        for (i, body) in crate::wire::tests::every_v1_body().into_iter().enumerate() {
            let f = v1::Frame {
                version: 1,
                seq: i as u32 * 1000,
                body,
            };
            let p = payload(&f);
            assert!(
                decode_fast(&p).is_some()
                    == matches!(
                        f.body,
                        v1::Body::Stats(_)
                            | v1::Body::Delta(_)
                            | v1::Body::Chunk(_)
                            | v1::Body::Spike(_)
                    )
            );
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
                let taken = decode_into(&p, &mut slot);
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
            prop::sample::select(std::vec![
                0u8, 1, 2, 3, 4, 0x0F, 0x10, 0x7F, 0x80, 0x81, 0xFF
            ]),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// Valid frames of the fast bodies decode to exactly themselves.
        #[test]
        fn fast_bodies_round_trip(seq in any::<u32>(), body in any_body()) {
            let f = frame(seq, body);
            prop_assert_eq!(decode_fast(&payload(&f)), Some(f));
        }

        /// Corrupted payloads: the fast path agrees with postcard exactly.
        #[test]
        fn corrupted_payloads_agree_with_postcard(
            seq in any::<u32>(),
            body in any_body(),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), edgy_byte()), 1..4),
            cut in any::<prop::sample::Index>(),
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
    }
}
