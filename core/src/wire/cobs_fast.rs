//! COBS decoding of one delimited frame, and the search for the delimiter.
//!
//! Decoding gives exactly what `cobs::decode_in_place` gives on input
//! without zeros (which a frame between two delimiters is), but costs one
//! block copy and a walk over the code bytes instead of a loop per byte:
//! when no block but the last is a full 254-byte (0xFF) block, byte `i` of
//! the output is byte `i + 1` of the input, except that the byte before
//! each code byte becomes a zero.
//!
//! Kept by hand because it pays: a tenth of the `cobs` crate's instructions
//! per frame (bench/results/wire.md).

/// The first zero byte of `s`, eight bytes at a time.
#[inline]
pub(super) fn find_zero(s: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let mut words = s.chunks_exact(8);
    let mut base = 0;
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        let x = u64::from_le_bytes(b);
        // the lowest set bit marks the first zero byte (false positives
        // occur only above a real zero)
        let t = x.wrapping_sub(LO) & !x & HI;
        if t != 0 {
            return Some(base + (t.trailing_zeros() / 8) as usize);
        }
        base += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&b| b == 0)
        .map(|i| base + i)
}

/// Walk the code bytes of `src` (no zeros): `None` if a block runs past the
/// end (invalid), else whether a block other than the last is a full one.
/// A zero code (never passed in) is rejected too, so nothing loops on it.
#[inline]
fn walk(src: &[u8]) -> Option<bool> {
    let mut s = 0;
    let mut full = false;
    while let Some(&code) = src.get(s) {
        if code == 0 {
            return None;
        }
        s += code as usize;
        if s > src.len() {
            return None;
        }
        full |= code == 0xFF && s < src.len();
    }
    Some(full)
}

/// Write the zeros of an output already shifted down by one byte: `first`
/// is the first code byte, the others sit just before their positions.
#[inline]
fn zeros(out: &mut [u8], first: u8, len: usize) {
    let mut p = first as usize;
    while p < len {
        let Some(slot) = out.get_mut(p - 1) else {
            return;
        };
        p += *slot as usize;
        *slot = 0;
    }
}

/// Decode `src` (a non-empty frame without zeros) into `dst`; the decoded
/// length, or `None` if the encoding is invalid or `dst` too short.
pub(super) fn decode_into(src: &[u8], dst: &mut [u8]) -> Option<usize> {
    let (&first, body) = src.split_first()?;
    if walk(src)? {
        return slow(src, dst);
    }
    dst.get_mut(..body.len())?.copy_from_slice(body);
    zeros(dst, first, src.len());
    Some(body.len())
}

/// Decode the non-empty frame without zeros in `buf` in place.
pub(super) fn decode_in_place(buf: &mut [u8]) -> Option<usize> {
    let first = *buf.first()?;
    if walk(buf)? {
        return slow_in_place(buf);
    }
    let len = buf.len();
    buf.copy_within(1.., 0);
    zeros(buf, first, len);
    Some(len - 1)
}

/// Block by block, for frames with interior full blocks.
fn slow(src: &[u8], dst: &mut [u8]) -> Option<usize> {
    let (mut s, mut d) = (0, 0);
    while let Some(&code) = src.get(s) {
        let code = code as usize;
        let block = src.get(s + 1..s + code)?;
        dst.get_mut(d..d + block.len())?.copy_from_slice(block);
        d += block.len();
        s += code;
        if code != 0xFF && s < src.len() {
            *dst.get_mut(d)? = 0;
            d += 1;
        }
    }
    Some(d)
}

fn slow_in_place(buf: &mut [u8]) -> Option<usize> {
    let (mut s, mut d) = (0, 0);
    while let Some(&code) = buf.get(s) {
        let code = code as usize;
        if s + code > buf.len() {
            return None;
        }
        buf.copy_within(s + 1..s + code, d);
        d += code - 1;
        s += code;
        if code != 0xFF && s < buf.len() {
            *buf.get_mut(d)? = 0;
            d += 1;
        }
    }
    Some(d)
}

#[cfg(test)]
mod tests {
    use std::vec::Vec;

    use proptest::prelude::*;

    use super::*;

    /// The reference: the `cobs` crate, mapped to our answer.
    fn reference(src: &[u8]) -> Option<Vec<u8>> {
        let mut buf = src.to_vec();
        let n = cobs::decode_in_place(&mut buf).ok()?;
        buf.truncate(n);
        Some(buf)
    }

    fn ours(src: &[u8]) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        let mut dst = std::vec![0xAA; src.len()];
        let a = decode_into(src, &mut dst).map(|n| dst[..n].to_vec());
        let mut buf = src.to_vec();
        let b = decode_in_place(&mut buf).map(|n| buf[..n].to_vec());
        (a, b)
    }

    fn check(src: &[u8]) {
        let want = reference(src);
        let (a, b) = ours(src);
        assert_eq!(a, want, "into, {src:02x?}");
        assert_eq!(b, want, "in place, {src:02x?}");
    }

    fn encode(data: &[u8]) -> Vec<u8> {
        let mut out = std::vec![0u8; cobs::max_encoding_length(data.len())];
        let n = cobs::encode(data, &mut out);
        out.truncate(n);
        out
    }

    #[test]
    fn block_boundaries() {
        // (frames are never empty: the `cobs` crate encodes nothing as nothing)
        for len in (1..800).chain([253, 254, 255, 256, 508, 509, 510, 511]) {
            for fill in [0u8, 1, 0xFF] {
                for zero_at in [None, Some(0), Some(len / 2), Some(253), Some(254)] {
                    let mut data = std::vec![fill; len];
                    if let Some(z) = zero_at.filter(|&z| z < len) {
                        data[z] = 0;
                    }
                    let e = encode(&data);
                    check(&e);
                    assert_eq!(ours(&e).0.as_deref(), Some(&data[..]));
                }
            }
        }
    }

    #[test]
    fn zero_codes_are_rejected_not_looped_on() {
        for src in [&[0u8][..], &[2, 5, 0, 1], &[1, 0], &[3, 1, 1, 0, 0]] {
            assert_eq!(ours(src), (None, None), "{src:02x?}");
        }
    }

    #[test]
    fn find_zero_agrees_with_position() {
        for len in 0..40 {
            for z in 0..=len {
                let mut s = std::vec![0x80u8; len];
                if let Some(b) = s.get_mut(z) {
                    *b = 0;
                }
                if z + 1 < len {
                    s[z + 1] = 0;
                }
                assert_eq!(find_zero(&s), s.iter().position(|&b| b == 0));
            }
        }
    }

    fn data() -> impl Strategy<Value = Vec<u8>> {
        // zero runs, non-zero runs around the 254-byte block length
        proptest::collection::vec(
            prop_oneof![
                (0usize..8).prop_map(|n| std::vec![0u8; n]),
                proptest::collection::vec(1u8..=255, 0..10),
                (250usize..260, 1u8..=255).prop_map(|(n, b)| std::vec![b; n]),
                proptest::collection::vec(any::<u8>(), 0..40),
            ],
            0..8,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(crate::proptest_cases::config(2048))]

        /// Encoded by the `cobs` crate: decodes back, as the crate does.
        #[test]
        fn decodes_what_cobs_encodes(d in data()) {
            prop_assume!(!d.is_empty());
            let e = encode(&d);
            let (a, b) = ours(&e);
            prop_assert_eq!(a.as_deref(), Some(&d[..]));
            prop_assert_eq!(b.as_deref(), Some(&d[..]));
            let want = reference(&e);
            prop_assert_eq!(want.as_deref(), Some(&d[..]));
        }

        /// Corrupted encodings (still without zeros): same verdict and
        /// output as the `cobs` crate.
        #[test]
        fn corrupted_agrees_with_cobs(
            d in data(),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 0..4),
            cut in any::<prop::sample::Index>(),
        ) {
            prop_assume!(!d.is_empty());
            let mut e = encode(&d);
            for (at, b) in edits {
                let i = at.index(e.len());
                e[i] = b;
            }
            let n = cut.index(e.len()).max(1);
            check(&e);
            check(&e[..n]);
        }

        /// Random non-zero bytes: same verdict and output as the crate.
        #[test]
        fn random_agrees_with_cobs(e in proptest::collection::vec(1u8..=255, 1..600)) {
            check(&e);
        }

        #[test]
        fn find_zero_is_position(s in proptest::collection::vec(prop_oneof![Just(0u8), 1u8..=255, Just(0x80), Just(1)], 0..100)) {
            prop_assert_eq!(find_zero(&s), s.iter().position(|&b| b == 0));
        }
    }
}
