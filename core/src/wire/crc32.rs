//! CRC-32 (ISO-HDLC, the frames' checksum) for the decoder: slicing by 16
//! bytes, then by 4, then byte by byte.
//!
//! Most frames are tens of bytes, so the tail after the last 16-byte block
//! matters as much as the blocks: a byte-at-a-time tail (as a plain 16-way
//! table does it) spent more time than all the blocks before it. Here at
//! most 3 bytes go one at a time. The value is the `crc` crate's
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

/// The CRC-32 (ISO-HDLC) of `data`.
pub(crate) fn checksum(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    let (blocks, rest) = data.as_chunks::<16>();
    for b in blocks {
        let a = crc ^ u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        // written out, not a loop over the 12 bytes: each table number
        // is then a constant whatever the optimizer unrolls (at opt-level
        // "s" it does not, and the lookups cost twice as much)
        let lo = at(15, a) ^ at(14, a >> 8) ^ at(13, a >> 16) ^ at(12, a >> 24);
        let b = |i: usize| u32::from(b[i]);
        let mid = at(11, b(4)) ^ at(10, b(5)) ^ at(9, b(6)) ^ at(8, b(7));
        let hi = at(7, b(8)) ^ at(6, b(9)) ^ at(5, b(10)) ^ at(4, b(11));
        crc = lo ^ mid ^ hi ^ at(3, b(12)) ^ at(2, b(13)) ^ at(1, b(14)) ^ at(0, b(15));
    }
    let (words, rest) = rest.as_chunks::<4>();
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
