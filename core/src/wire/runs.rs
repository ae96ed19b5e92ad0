//! Bucket runs: the `(bucket, count)` pairs of a histogram frame, packed.
//!
//! Histogram changes cluster: a report's delta touches a few dozen
//! neighbouring 1 µs buckets, mostly with small counts. Packing them as
//! bytes (instead of a list of `{bucket: u16, count: u32}` structs) halves
//! the bytes of a delta on a serial line.
//!
//! # Format
//!
//! Pairs are in increasing bucket order, starting from a base bucket that
//! the frame carries (`start`). A cursor begins at `start`; each pair is a
//! LEB128 varint `h` (as postcard encodes unsigned integers) and:
//!
//! * `h` even: `count = h / 2` at `bucket = cursor`;
//! * `h` odd: `skip = h / 2`, then a varint `count`, at
//!   `bucket = cursor + skip`;
//!
//! then `cursor = bucket + 1`. So a bucket right after the previous one
//! with a count below 64 costs one byte. An encoder uses the odd form with
//! `skip = 0` for counts of 2^63 and above. A bucket index beyond
//! [`crate::layout::MAX_BUCKETS`], a varint longer than 10 bytes or with
//! bits beyond 64, and a pair cut short are errors.

use heapless::Vec;
use postcard::experimental::max_size::MaxSize;
use postcard_schema::Schema;
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::layout::MAX_BUCKETS;

/// Bytes of runs one delta part or snapshot chunk carries: frames of these
/// bodies then stay within [`super::MAX_SMALL_FRAME`] at their worst.
pub const RUN_BYTES: usize = 224;

/// The most bytes one pair takes: an odd `h` with a 16-bit skip (3 bytes)
/// and a 64-bit count (10 bytes).
pub(crate) const MAX_PAIR_BYTES: usize = 13;

/// Packed `(bucket, count)` pairs (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Runs(#[serde(deserialize_with = "bytes")] Vec<u8, RUN_BYTES>);

/// Deserialise the bytes of [`Runs`] as one slice where the format has
/// them whole: postcard writes a sequence of `u8` as its length and the
/// bytes, as it writes a byte string, so `deserialize_bytes` reads the
/// same input as the derived sequence does, in one copy instead of a
/// visit per byte. Formats without byte strings visit the sequence.
fn bytes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8, RUN_BYTES>, D::Error> {
    use serde::de::{Error as _, SeqAccess, Visitor};
    struct Bytes;
    impl<'de> Visitor<'de> for Bytes {
        type Value = Vec<u8, RUN_BYTES>;

        fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            write!(f, "at most {RUN_BYTES} bytes")
        }

        fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
            Vec::from_slice(v).map_err(|_| E::invalid_length(v.len(), &self))
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(b) = seq.next_element()? {
                out.push(b)
                    .map_err(|_| A::Error::invalid_length(RUN_BYTES + 1, &self))?;
            }
            Ok(out)
        }
    }
    d.deserialize_bytes(Bytes)
}

impl Runs {
    /// No pairs.
    pub const fn new() -> Runs {
        Runs(Vec::new())
    }

    /// The packed bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Packed bytes as received (checked only when iterated).
    pub fn from_bytes(bytes: &[u8]) -> Option<Runs> {
        Vec::from_slice(bytes).ok().map(Runs)
    }

    /// Whether there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The pairs, from base bucket `start`.
    pub fn iter(&self, start: u16) -> impl Iterator<Item = Result<(u16, u64), Error>> + Clone + '_ {
        RunIter {
            bytes: &self.0,
            cursor: usize::from(start),
        }
    }
}

/// The number of bytes of `v` as a varint.
#[inline(always)]
pub(crate) const fn varint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Builds [`Runs`] within a byte budget.
#[derive(Debug, Clone)]
pub struct RunWriter {
    buf: [u8; RUN_BYTES],
    len: usize,
    start: u16,
    cursor: usize,
    limit: usize,
}

impl RunWriter {
    /// Pairs from base bucket `start`, in at most `limit` bytes (at most
    /// [`RUN_BYTES`]; at least 13 bytes, the most one pair takes, so one pair
    /// always fits).
    pub const fn new(start: u16, limit: usize) -> RunWriter {
        let limit = if limit > RUN_BYTES {
            RUN_BYTES
        } else if limit < MAX_PAIR_BYTES {
            MAX_PAIR_BYTES
        } else {
            limit
        };
        RunWriter {
            buf: [0; RUN_BYTES],
            len: 0,
            start,
            cursor: start as usize,
            limit,
        }
    }

    /// The base bucket.
    pub const fn start(&self) -> u16 {
        self.start
    }

    /// Whether no pair was added.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Append `v` as a varint; the caller checked the room.
    #[inline(always)]
    fn put(&mut self, v: u64) {
        let i = self.len;
        let b = |k: u32| ((v >> (7 * k)) as u8) | 0x80;
        let last = |k: u32| (v >> (7 * k)) as u8;
        let n = if v < 1 << 7 {
            self.buf.get_mut(i).map(|d| *d = v as u8).map(|_| 1)
        } else if v < 1 << 14 {
            self.buf
                .get_mut(i..i + 2)
                .map(|d| d.copy_from_slice(&[b(0), last(1)]))
                .map(|_| 2)
        } else if v < 1 << 21 {
            self.buf
                .get_mut(i..i + 3)
                .map(|d| d.copy_from_slice(&[b(0), b(1), last(2)]))
                .map(|_| 3)
        } else if v < 1 << 28 {
            self.buf
                .get_mut(i..i + 4)
                .map(|d| d.copy_from_slice(&[b(0), b(1), b(2), last(3)]))
                .map(|_| 4)
        } else {
            self.put_long(v);
            return;
        };
        self.len += n.unwrap_or(0);
    }

    fn put_long(&mut self, mut v: u64) {
        let mut i = self.len;
        while v >= 0x80 {
            if let Some(b) = self.buf.get_mut(i) {
                *b = (v as u8) | 0x80;
            }
            v >>= 7;
            i += 1;
        }
        if let Some(b) = self.buf.get_mut(i) {
            *b = v as u8;
        }
        self.len = i + 1;
    }

    /// Add `count` at `bucket`, which must be above the previous pair's
    /// (and at or above `start`). Returns `false`, adding nothing, if the
    /// pair does not fit the budget or the bucket is out of order.
    #[inline]
    pub fn push(&mut self, bucket: u16, count: u64) -> bool {
        let bucket = usize::from(bucket);
        let Some(skip) = bucket.checked_sub(self.cursor) else {
            return false;
        };
        let plain = skip == 0 && count < 1 << 63;
        let h = if plain {
            count << 1
        } else {
            ((skip as u64) << 1) | 1
        };
        // the exact size matters only near the end of the budget
        if self.len + MAX_PAIR_BYTES > self.limit {
            let need = varint_len(h) + if plain { 0 } else { varint_len(count) };
            if self.len + need > self.limit {
                return false;
            }
        }
        self.put(h);
        if !plain {
            self.put(count);
        }
        self.cursor = bucket + 1;
        true
    }

    /// The runs built.
    pub fn finish(self) -> Runs {
        Runs(Vec::from_slice(self.buf.get(..self.len).unwrap_or(&[])).unwrap_or_default())
    }
}

/// The pairs of [`Runs`]: `(bucket, count)`, or [`Error::BadRuns`] (after
/// which the iterator ends).
#[derive(Debug, Clone)]
pub(crate) struct RunIter<'a> {
    bytes: &'a [u8],
    cursor: usize,
}

impl RunIter<'_> {
    #[inline(always)]
    fn varint(&mut self) -> Option<u64> {
        // one byte: the common case
        if let Some((&b, rest)) = self.bytes.split_first() {
            if b < 0x80 {
                self.bytes = rest;
                return Some(u64::from(b));
            }
        }
        self.varint_long()
    }

    fn varint_long(&mut self) -> Option<u64> {
        let mut out = 0u64;
        for i in 0..10 {
            let (&b, rest) = self.bytes.split_first()?;
            self.bytes = rest;
            // the tenth byte may carry only the 64th bit
            if i == 9 && b > 1 {
                return None;
            }
            out |= u64::from(b & 0x7F) << (7 * i);
            if b & 0x80 == 0 {
                return Some(out);
            }
        }
        None
    }

    #[inline(always)]
    fn pair(&mut self) -> Option<(u16, u64)> {
        let h = self.varint()?;
        let (skip, count) = if h & 1 == 0 {
            (0, h >> 1)
        } else {
            (h >> 1, self.varint()?)
        };
        let bucket = u64::try_from(self.cursor).ok()?.checked_add(skip)?;
        if bucket >= MAX_BUCKETS as u64 {
            return None;
        }
        self.cursor = bucket as usize + 1;
        Some((bucket as u16, count))
    }
}

impl Iterator for RunIter<'_> {
    type Item = Result<(u16, u64), Error>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.bytes.is_empty() {
            return None;
        }
        match self.pair() {
            Some(p) => Some(Ok(p)),
            None => {
                self.bytes = &[];
                Some(Err(Error::BadRuns))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec::Vec as StdVec;

    fn pack(start: u16, pairs: &[(u16, u64)]) -> Runs {
        let mut w = RunWriter::new(start, RUN_BYTES);
        for &(b, c) in pairs {
            assert!(w.push(b, c), "{b} {c}");
        }
        w.finish()
    }

    #[test]
    fn neighbours_with_small_counts_cost_one_byte() {
        let r = pack(30, &[(30, 5), (31, 63), (32, 1)]);
        assert_eq!(r.as_bytes(), &[10, 126, 2]);
        let r = pack(30, &[(30, 64), (40, 1)]);
        // 64 * 2 = 128 takes two bytes; a skip of 9 is h = 19, then 1
        assert_eq!(r.as_bytes(), &[0x80, 0x01, 19, 1]);
        let got: StdVec<_> = r.iter(30).collect();
        assert_eq!(got, [Ok((30, 64)), Ok((40, 1))]);
    }

    #[test]
    fn huge_counts_and_far_buckets_round_trip() {
        let pairs = [(0, u64::MAX), (1, 1 << 63), (65_534, 7)];
        let r = pack(0, &pairs);
        let got: StdVec<_> = r.iter(0).map(Result::unwrap).collect();
        assert_eq!(got, pairs);
    }

    #[test]
    fn out_of_order_and_over_budget_pushes_are_refused() {
        let mut w = RunWriter::new(10, MAX_PAIR_BYTES);
        assert!(!w.push(9, 1), "below start");
        assert!(w.push(10, 1));
        assert!(!w.push(10, 1), "same bucket twice");
        for b in 11..23 {
            assert!(w.push(b, 1));
        }
        assert!(!w.push(23, 1), "budget of 13 bytes");
        assert_eq!(w.finish().as_bytes().len(), 13);
    }

    #[test]
    fn malformed_runs_are_errors_not_panics() {
        for bad in [
            &[0x80u8][..],                                                 // cut varint
            &[3], // odd h without its count
            &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02], // > 64 bits
            &[0xFF, 0xFF, 0x07, 0], // skip past the last bucket
        ] {
            let r = Runs::from_bytes(bad).unwrap();
            let got: StdVec<_> = r.iter(0).collect();
            assert_eq!(got.last(), Some(&Err(Error::BadRuns)), "{bad:02x?}");
        }
        // bucket 65534 is the last: a following pair overflows
        let r = pack(65_534, &[(65_534, 1)]);
        let mut bytes = r.as_bytes().to_vec();
        bytes.push(2);
        let got: StdVec<_> = Runs::from_bytes(&bytes).unwrap().iter(65_534).collect();
        assert_eq!(got, [Ok((65_534, 1)), Err(Error::BadRuns)]);
    }

    proptest! {

        #![proptest_config(crate::proptest_cases::config(256))]
        #[test]
        fn any_increasing_pairs_round_trip(
            start in 0u16..1000,
            steps in proptest::collection::vec((0u16..300, any::<u64>()), 0..40),
        ) {
            let mut w = RunWriter::new(start, RUN_BYTES);
            let mut want = StdVec::new();
            let mut b = u32::from(start);
            for (step, count) in steps {
                if b + u32::from(step) >= MAX_BUCKETS as u32 {
                    break;
                }
                b += u32::from(step);
                if !w.push(b as u16, count) {
                    break;
                }
                want.push((b as u16, count));
                b += 1;
            }
            let r = w.finish();
            prop_assert!(r.as_bytes().len() <= RUN_BYTES);
            let got: StdVec<_> = r.iter(start).map(Result::unwrap).collect();
            prop_assert_eq!(got, want);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..RUN_BYTES), start in any::<u16>()) {
            let r = Runs::from_bytes(&bytes).unwrap();
            let mut last = None;
            for (b, _) in r.iter(start).flatten() {
                prop_assert!(last.is_none_or(|l| b > l));
                last = Some(b);
            }
        }
    }
}
