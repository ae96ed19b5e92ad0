//! CRC-32 (ISO-HDLC, the frames' checksum) for the decoder: slicing by 16
//! bytes.
//!
//! Most frames are tens of bytes, so the part that is not a whole 16-byte
//! block matters as much as the blocks: a byte-at-a-time tail (as a plain
//! 16-way table does it) spent more time than all the blocks before it.
//! Here it is one more block (see [`checksum`]); only inputs shorter than
//! 16 bytes go by 4 bytes and then byte by byte. The value is the `crc` crate's
//! `CRC_32_ISO_HDLC`, which the encoder uses (checked in the tests below).

/// The 16 slicing tables of the reflected polynomial 0xEDB88320: table 0
/// is the classic byte table, table `k` advances a byte through `k` more
/// zero bytes.
static TABLES: [[u32; 256]; 16] = tables();

const fn tables() -> [[u32; 256]; 16] {
    let mut t = [[0u32; 256]; 16];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut s = 1;
    while s < 16 {
        let mut i = 0;
        while i < 256 {
            let p = t[s - 1][i];
            t[s][i] = (p >> 8) ^ t[0][(p & 0xFF) as usize];
            i += 1;
        }
        s += 1;
    }
    t
}

/// Table `k`'s entry for the low byte of `x`.
#[inline(always)]
fn at(k: usize, x: u32) -> u32 {
    // `k` is a constant below 16 at every call and the index a byte: both
    // in bounds, so this compiles to one load
    match TABLES.get(k) {
        Some(t) => t[(x & 0xFF) as usize],
        None => 0,
    }
}

/// Register values from which `k` zero bytes lead to the initial `!0`:
/// a message started from `HEAD[k]` with `k` zeros put before it has the
/// CRC it has from `!0` without them.
static HEAD: [u32; 16] = heads();

/// The register before a zero byte that leaves `r` after it. A zero byte
/// maps `x` to `(x >> 8) ^ T0[x & 0xFF]`, and the top bytes of the 256
/// entries of `T0` differ, so the one in `r` names the low byte of `x`.
const fn unstep(r: u32, t0: &[u32; 256]) -> u32 {
    let mut i = 0;
    while i < 256 {
        if t0[i] >> 24 == r >> 24 {
            return ((r ^ t0[i]) << 8) | i as u32;
        }
        i += 1;
    }
    0
}

const fn heads() -> [u32; 16] {
    let t = tables();
    let mut h = [!0u32; 16];
    let mut k = 1;
    while k < 16 {
        h[k] = unstep(h[k - 1], &t[0]);
        k += 1;
    }
    h
}

/// Advance `crc` over one 16-byte block.
#[inline(always)]
fn block(crc: u32, b: &[u8; 16]) -> u32 {
    // The twelve bytes after the first four do not depend on the CRC so
    // far: combined on their own, they are ready (out of order) before it
    // is, and only the first four's lookups wait for it. Written out, not
    // a loop over the 12 bytes: each table number is then a constant
    // whatever the optimizer unrolls (at opt-level "s" it does not, and
    // the lookups cost twice as much).
    let byte = |i: usize| u32::from(b[i]);
    let mid = at(11, byte(4)) ^ at(10, byte(5)) ^ at(9, byte(6)) ^ at(8, byte(7));
    let hi = at(7, byte(8)) ^ at(6, byte(9)) ^ at(5, byte(10)) ^ at(4, byte(11));
    let top = at(3, byte(12)) ^ at(2, byte(13)) ^ at(1, byte(14)) ^ at(0, byte(15));
    let a = crc ^ u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    ((at(15, a) ^ at(14, a >> 8)) ^ (at(13, a >> 16) ^ at(12, a >> 24))) ^ (mid ^ hi ^ top)
}

/// The CRC-32 (ISO-HDLC) of `data`.
///
/// From 16 bytes on, only whole blocks are read: the bytes beyond the last
/// whole block go first, as a block with zeros before them, started from
/// the register value those zeros take to `!0` ([`HEAD`]). Frames are of
/// every length, and loops over a tail of varying length mispredicted
/// their ends at almost every frame.
pub(crate) fn checksum(data: &[u8]) -> u32 {
    let Some(first) = data.first_chunk::<16>() else {
        return short(data);
    };
    let head = data.len() % 16;
    let mut crc = !0u32;
    // (a length that is a multiple of 16 has no head: there is no HEAD[16])
    if let Some(&start) = HEAD.get(16 - head) {
        let padded = u128::from_le_bytes(*first) << (8 * (16 - head));
        crc = block(start, &padded.to_le_bytes());
    }
    let (blocks, _) = data.get(head..).unwrap_or(&[]).as_chunks::<16>();
    for b in blocks {
        crc = block(crc, b);
    }
    !crc
}

/// The CRC of fewer than 16 bytes: by 4, then by byte.
fn short(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    let (words, rest) = data.as_chunks::<4>();
    for w in words {
        let a = crc ^ u32::from_le_bytes(*w);
        crc = at(3, a) ^ at(2, a >> 8) ^ at(1, a >> 16) ^ at(0, a >> 24);
    }
    for &b in rest {
        crc = at(0, crc ^ u32::from(b)) ^ (crc >> 8);
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::checksum;

    const REFERENCE: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);

    #[test]
    fn check_value() {
        // the catalogue's check value of CRC-32/ISO-HDLC
        assert_eq!(checksum(b"123456789"), 0xCBF4_3926);
        assert_eq!(checksum(b""), 0);
    }

    #[test]
    fn equals_the_encoders_crc_at_every_length_and_offset() {
        let data: Vec<u8> = (0..600u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for start in 0..17 {
            for end in start..data.len() {
                let s = &data[start..end];
                assert_eq!(checksum(s), REFERENCE.checksum(s), "{start}..{end}");
            }
        }
    }
}
