//! The one frame that goes the other way: over TCP the host acknowledges
//! the sequence numbers it has stored, so the target can keep what is not
//! yet acknowledged and send it again after a reconnect.
//!
//! An [`Ack`] is framed like every other frame, `00 ‖ COBS(postcard(Ack) ‖
//! CRC-32 LE) ‖ 00`, and starts with the protocol version. It is not a
//! [`super::Body`]: it never appears in a target's stream or a recording,
//! and it does not change [`super::SCHEMA_KEY`].
//!
//! Meaning: "every frame of run `run_id` up to and including `seq` that
//! reached me is stored; send what follows". A host acknowledges after it
//! wrote the frames to its recording, at least once per read of the
//! socket that brought new frames, and at once after the hello that starts
//! a connection (that first ack tells a resuming target where the host's
//! recording of the run ends).

use postcard::experimental::max_size::MaxSize;
use postcard::ser_flavors::{crc::CrcModifier, Cobs, Slice};
use serde::{Deserialize, Serialize};

use super::PROTOCOL_VERSION;
use crate::error::Error;

/// CRC-32 (ISO-HDLC), as for the frames of the other direction.
const CRC: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);

/// An acknowledgement from the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Ack {
    /// [`PROTOCOL_VERSION`]; the first byte of the payload.
    pub version: u8,
    /// The run the acknowledged frames belong to.
    pub run_id: u64,
    /// The highest sequence number of that run the host has stored.
    pub seq: u32,
}

/// The largest encoded ack, both delimiters included.
pub const MAX_ACK_FRAME: usize = cobs::max_encoding_length(Ack::POSTCARD_MAX_SIZE + 4) + 2;

impl Ack {
    /// An ack of this protocol version.
    pub const fn new(run_id: u64, seq: u32) -> Ack {
        Ack {
            version: PROTOCOL_VERSION,
            run_id,
            seq,
        }
    }

    /// Encode as `00 ‖ COBS(postcard ‖ CRC) ‖ 00` into `buf`; returns the
    /// bytes written.
    ///
    /// # Errors
    ///
    /// [`Error::BufferTooSmall`] or [`Error::Encode`]; neither happens with a
    /// buffer of [`MAX_ACK_FRAME`] bytes.
    pub fn encode(&self, buf: &mut [u8; MAX_ACK_FRAME]) -> Result<usize, Error> {
        let (first, rest) = buf.split_first_mut().ok_or(Error::BufferTooSmall)?;
        *first = 0;
        let cobs = Cobs::try_new(Slice::new(rest)).map_err(|_| Error::BufferTooSmall)?;
        let flavor = CrcModifier::new(cobs, CRC.digest());
        match postcard::serialize_with_flavor(self, flavor) {
            Ok(out) => Ok(out.len() + 1),
            Err(postcard::Error::SerializeBufferFull) => Err(Error::BufferTooSmall),
            Err(_) => Err(Error::Encode),
        }
    }

    /// Decode the bytes between two delimiters. `None` for anything that
    /// is not an ack of this protocol version with a good checksum.
    fn decode(encoded: &mut [u8]) -> Option<Ack> {
        let n = cobs::decode_in_place(encoded).ok()?;
        let payload = encoded.get(..n)?;
        if payload.first() != Some(&PROTOCOL_VERSION) {
            return None;
        }
        postcard::from_bytes_crc32(payload, CRC.digest()).ok()
    }
}

/// Reads acks from a byte stream in any chunking (the target's side).
/// Bytes that do not make a good ack are skipped; nothing allocates.
pub struct AckReader {
    buf: [u8; MAX_ACK_FRAME],
    len: usize,
    /// Inside an over-long or unsynchronised frame: skip to the next 00.
    skipping: bool,
    /// Frames that were not a good ack.
    pub rejected: u64,
}

impl AckReader {
    /// A reader that has seen nothing (the first bytes up to a delimiter
    /// are skipped only if they are too long to be an ack).
    pub const fn new() -> Self {
        AckReader {
            buf: [0; MAX_ACK_FRAME],
            len: 0,
            skipping: false,
            rejected: 0,
        }
    }

    /// Feed bytes; returns the first good ack they complete, if any, and
    /// the bytes after it (feed those next: every ack counts, the first
    /// of a connection above all).
    pub fn feed<'a>(&mut self, data: &'a [u8]) -> (Option<Ack>, &'a [u8]) {
        for (i, &b) in data.iter().enumerate() {
            if b == 0 {
                let ack = self.end_of_frame();
                if ack.is_some() {
                    return (ack, data.get(i + 1..).unwrap_or(&[]));
                }
                continue;
            }
            if self.skipping {
                continue;
            }
            match self.buf.get_mut(self.len) {
                Some(slot) => {
                    *slot = b;
                    self.len += 1;
                }
                None => {
                    self.skipping = true;
                    self.rejected += 1;
                    self.len = 0;
                }
            }
        }
        (None, &[])
    }

    /// Every good ack in `data`, in order, handed to `f`.
    pub fn feed_all(&mut self, mut data: &[u8], mut f: impl FnMut(Ack)) {
        while !data.is_empty() {
            let (ack, rest) = self.feed(data);
            if let Some(a) = ack {
                f(a);
            }
            data = rest;
        }
    }

    /// A delimiter: decode what was collected.
    fn end_of_frame(&mut self) -> Option<Ack> {
        let mut ack = None;
        if self.len > 0 && !self.skipping {
            ack = Ack::decode(self.buf.get_mut(..self.len).unwrap_or(&mut []));
            if ack.is_none() {
                self.rejected += 1;
            }
        }
        self.len = 0;
        self.skipping = false;
        ack
    }
}

impl Default for AckReader {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(a: Ack) -> std::vec::Vec<u8> {
        let mut buf = [0u8; MAX_ACK_FRAME];
        let n = a.encode(&mut buf).unwrap();
        buf[..n].to_vec()
    }

    #[test]
    fn round_trip_in_any_chunking() {
        let a = Ack::new(0xDEAD_BEEF_0123_4567, 4_000_000_000);
        let b = Ack::new(7, 0);
        let mut stream = encoded(a);
        stream.extend(encoded(b));
        for cut in 0..stream.len() {
            let mut r = AckReader::new();
            let mut got = std::vec::Vec::new();
            r.feed_all(&stream[..cut], |x| got.push(x));
            r.feed_all(&stream[cut..], |x| got.push(x));
            assert_eq!(got, [a, b], "cut at {cut}: every ack, in order");
            assert_eq!(r.rejected, 0);
        }
    }

    #[test]
    fn corrupt_foreign_and_oversize_bytes_are_rejected_not_taken() {
        let a = Ack::new(1, 99);
        let mut bad = encoded(a);
        bad[3] ^= 0x10;
        let mut r = AckReader::new();
        let mut got = std::vec::Vec::new();
        r.feed_all(&bad, |x| got.push(x));
        assert!(got.is_empty());
        assert_eq!(r.rejected, 1);
        // Another protocol version: a good checksum but not ours.
        let mut other = Ack::new(1, 99);
        other.version = PROTOCOL_VERSION.wrapping_add(1);
        r.feed_all(&encoded(other), |x| got.push(x));
        assert!(got.is_empty());
        // A long run of non-zero bytes, then a good ack: only the ack counts.
        let mut long = std::vec![0x55u8; 3 * MAX_ACK_FRAME];
        long.extend(encoded(a));
        r.feed_all(&long, |x| got.push(x));
        assert_eq!(got, [a]);
    }

    #[test]
    fn the_largest_ack_fits() {
        let a = Ack::new(u64::MAX, u32::MAX);
        assert!(encoded(a).len() <= MAX_ACK_FRAME);
    }
}
