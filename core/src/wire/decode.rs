//! A no_std streaming frame decoder: feed it arbitrary byte chunks.

use super::cobs_fast::{self, find_zero};
use super::{v1, v2, v3, v4, v5, Body, Frame, OLDEST_VERSION, PROTOCOL_VERSION};
use postcard::from_bytes as de;

/// Why a delimited frame was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DecodeError {
    /// The checksum did not match: the frame was corrupted.
    Crc,
    /// The COBS encoding was invalid: the frame was corrupted.
    Cobs,
    /// More bytes than any frame can have arrived without a delimiter.
    Oversize,
    /// The frame is from a protocol version this build does not decode
    /// (the byte it carried).
    UnknownVersion(u8),
    /// The checksum matched but the payload did not decode (schema
    /// mismatch), or it is a hello no latscope target can send
    /// ([`super::Hello::is_possible`]).
    Malformed,
}

impl core::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            DecodeError::Crc => f.write_str("frame failed its CRC check"),
            DecodeError::Cobs => f.write_str("frame has an invalid COBS encoding"),
            DecodeError::Oversize => f.write_str("frame longer than the protocol allows"),
            DecodeError::UnknownVersion(v) => write!(
                f,
                "frame of protocol version {v}; this build understands versions \
                 {OLDEST_VERSION} to {PROTOCOL_VERSION}"
            ),
            DecodeError::Malformed => f.write_str(
                "frame passed its CRC but does not decode (schema mismatch?) or is a \
                     hello no latscope target can send",
            ),
        }
    }
}

/// Link statistics, counted by the decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LinkStats {
    /// Bytes fed in.
    pub bytes: u64,
    /// Good frames.
    pub frames: u64,
    /// Frames rejected by CRC or COBS.
    pub crc_errors: u64,
    /// Oversize frames.
    pub oversize: u64,
    /// Frames of a protocol version this build does not decode.
    pub unknown_version: u64,
    /// Good frames of an older protocol version, upgraded to this one.
    pub upgraded: u64,
    /// Frames that passed the CRC but did not decode.
    pub malformed: u64,
    /// Jumps forward in the sequence numbers.
    pub seq_gaps: u64,
    /// Frames missing according to the sequence numbers.
    pub frames_lost: u64,
    /// Sequence restarts (a new run or a restarted target).
    pub restarts: u64,
    /// Bytes that were not part of a good frame.
    pub bytes_skipped: u64,
}

impl LinkStats {
    /// Whether any error or loss was seen.
    pub const fn is_clean(&self) -> bool {
        self.crc_errors == 0
            && self.oversize == 0
            && self.unknown_version == 0
            && self.malformed == 0
            && self.seq_gaps == 0
    }
}

/// A streaming decoder with an `N`-byte frame buffer (use
/// [`super::MAX_FRAME`]). It never allocates and never panics.
pub struct Decoder<const N: usize> {
    buf: [u8; N],
    len: usize,
    synced: bool,
    overflowed: bool,
    last_seq: Option<u32>,
    stats: LinkStats,
    slot: Option<Frame>,
}

impl<const N: usize> Decoder<N> {
    /// A decoder that has seen nothing; bytes before the first delimiter
    /// are skipped (and counted).
    pub const fn new() -> Self {
        Decoder {
            buf: [0; N],
            len: 0,
            synced: false,
            overflowed: false,
            last_seq: None,
            stats: LinkStats {
                bytes: 0,
                frames: 0,
                crc_errors: 0,
                oversize: 0,
                unknown_version: 0,
                upgraded: 0,
                malformed: 0,
                seq_gaps: 0,
                frames_lost: 0,
                restarts: 0,
                bytes_skipped: 0,
            },
            slot: None,
        }
    }

    /// Counters so far.
    pub const fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Bytes buffered of a frame not yet delimited (at end of input these
    /// are a truncated frame).
    pub const fn pending(&self) -> usize {
        self.len
    }

    /// Feed bytes; returns at most one decoded frame (or rejection) and the
    /// bytes not yet consumed. Call again with the rest until it is empty.
    ///
    /// The frame is returned by reference to the decoder's own slot, so
    /// nothing frame-sized is copied: this is the fast path. [`Self::feed`]
    /// returns an owned copy instead.
    pub fn feed_ref<'a>(
        &mut self,
        data: &'a [u8],
    ) -> (Option<Result<&Frame, DecodeError>>, &'a [u8]) {
        let mut rest = data;
        while !rest.is_empty() {
            let (chunk, delim, after) = match find_zero(rest) {
                Some(i) => (
                    rest.get(..i).unwrap_or(&[]),
                    true,
                    rest.get(i + 1..).unwrap_or(&[]),
                ),
                None => (rest, false, &[][..]),
            };
            self.stats.bytes += (chunk.len() + delim as usize) as u64;
            rest = after;
            // A whole frame in this input is decoded straight from it.
            let direct =
                delim && self.len == 0 && self.synced && !self.overflowed && chunk.len() <= N;
            if !direct {
                self.absorb(chunk);
            }
            if delim {
                match self.end_of_frame(direct.then_some(chunk)) {
                    None => {}
                    Some(Err(e)) => return (Some(Err(e)), rest),
                    Some(Ok(())) => return (self.slot.as_ref().map(Ok), rest),
                }
            }
        }
        (None, rest)
    }

    /// As [`Self::feed_ref`], returning an owned frame.
    pub fn feed<'a>(&mut self, data: &'a [u8]) -> (Option<Result<Frame, DecodeError>>, &'a [u8]) {
        let (ev, rest) = self.feed_ref(data);
        (ev.map(|r| r.cloned()), rest)
    }

    /// Every frame (or rejection) that `data` completes, in order, as an
    /// iterator; a frame left incomplete at the end of `data` stays
    /// buffered for the next call, as with [`Self::feed`].
    ///
    /// ```
    /// use latscope_core::wire::{Body, Decoder, Encoder, LogLine, Level, bounded, MAX_FRAME};
    /// let mut enc = Encoder::new();
    /// let bytes = enc.frame(Body::Log(LogLine { level: Level::Info, text: bounded("hi") })).unwrap().to_vec();
    /// let mut dec = Decoder::<MAX_FRAME>::new();
    /// let frames: Vec<_> = dec.frames(&bytes).collect::<Result<_, _>>().unwrap();
    /// assert_eq!(frames.len(), 1);
    /// ```
    pub fn frames<'d, 'a>(&'d mut self, data: &'a [u8]) -> Frames<'d, 'a, N> {
        Frames {
            dec: self,
            rest: data,
        }
    }

    fn absorb(&mut self, chunk: &[u8]) {
        if !self.synced || self.overflowed {
            self.stats.bytes_skipped += chunk.len() as u64;
            return;
        }
        match self.buf.get_mut(self.len..self.len + chunk.len()) {
            Some(dst) => {
                dst.copy_from_slice(chunk);
                self.len += chunk.len();
            }
            None => {
                self.overflowed = true;
                self.stats.bytes_skipped += (self.len + chunk.len()) as u64;
                self.len = 0;
            }
        }
    }

    /// A delimiter arrived: decode what was buffered, or `direct`, the
    /// whole frame, if nothing was.
    fn end_of_frame(&mut self, direct: Option<&[u8]>) -> Option<Result<(), DecodeError>> {
        let was_synced = self.synced;
        self.synced = true;
        if self.overflowed {
            self.overflowed = false;
            self.stats.oversize += 1;
            return Some(Err(DecodeError::Oversize));
        }
        let len = match direct {
            Some(frame) => frame.len(),
            None => core::mem::take(&mut self.len),
        };
        if len == 0 || !was_synced {
            return None;
        }
        let result = self.decode(direct, len);
        match &result {
            Ok(_) => self.stats.frames += 1,
            Err(e) => {
                self.stats.bytes_skipped += len as u64 + 1;
                match e {
                    DecodeError::Crc | DecodeError::Cobs => self.stats.crc_errors += 1,
                    DecodeError::UnknownVersion(_) => self.stats.unknown_version += 1,
                    DecodeError::Malformed => self.stats.malformed += 1,
                    DecodeError::Oversize => self.stats.oversize += 1,
                }
            }
        }
        Some(result)
    }

    /// Decode `direct` or else the `len` buffered bytes into the slot.
    fn decode(&mut self, direct: Option<&[u8]>, len: usize) -> Result<(), DecodeError> {
        let n = match direct {
            Some(frame) => cobs_fast::decode_into(frame, &mut self.buf),
            None => {
                cobs_fast::decode_in_place(self.buf.get_mut(..len).ok_or(DecodeError::Oversize)?)
            }
        }
        .ok_or(DecodeError::Cobs)?;
        let payload = self.buf.get(..n).ok_or(DecodeError::Cobs)?;
        if n < 5 {
            return Err(DecodeError::Crc);
        }
        let (body, crc) = payload.split_at(n - 4);
        let want = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        if crc32fast::hash(body) != want {
            return Err(DecodeError::Crc);
        }
        let version = match body.first() {
            Some(&v) if (OLDEST_VERSION..=PROTOCOL_VERSION).contains(&v) => v,
            Some(&v) => return Err(DecodeError::UnknownVersion(v)),
            None => return Err(DecodeError::Malformed),
        };
        decode_frame(body, &mut self.slot).ok_or(DecodeError::Malformed)?;
        if version != PROTOCOL_VERSION {
            self.stats.upgraded += 1;
        }
        if let Some(frame) = self.slot.as_ref() {
            // a receiver sizes its memory by what a target can send
            if matches!(&frame.body, Body::Hello(h) if !h.is_possible()) {
                return Err(DecodeError::Malformed);
            }
            let (seq, hello) = (frame.seq, matches!(frame.body, Body::Hello(_)));
            self.track_seq(seq, hello);
        }
        Ok(())
    }

    fn track_seq(&mut self, seq: u32, hello: bool) {
        if let Some(last) = self.last_seq {
            let expected = last.wrapping_add(1);
            if seq == expected {
                // in order
            } else if seq > expected && !(hello && seq == 0) {
                self.stats.seq_gaps += 1;
                self.stats.frames_lost += (seq - expected) as u64;
            } else {
                self.stats.restarts += 1;
            }
        }
        self.last_seq = Some(seq);
    }
}

/// Decode `payload`, a whole postcard [`Frame`] of this version or of an
/// older one (trailing bytes ignored, as by `postcard::from_bytes`), into
/// `slot`; `None`, leaving the slot as it was, if it does not decode.
///
/// The envelope (version, sequence number, body tag) is read here, and
/// then postcard decodes the body's own type by value: through `Frame`,
/// every nested `Result` of the 2.4 KiB frame was moved, while a body of
/// a delta or a stats frame is 250 bytes at most. A version-1 body is
/// decoded as its frozen type and upgraded; of versions 2 to 5, only the
/// hello and (up to version 4) the explanation (the other bodies did not
/// change, version 2 had no aggregate, versions 2 and 3 no evidence, and
/// versions 2 to 5 no timerlat histograms).
#[inline]
pub(super) fn decode_frame(payload: &[u8], slot: &mut Option<Frame>) -> Option<()> {
    let (&version, rest) = payload.split_first()?;
    let (seq, rest) = postcard::take_from_bytes::<u32>(rest).ok()?;
    // Each arm decodes its variant's own type in a function of its own and
    // writes the frame straight into the slot (an upgraded frame is a
    // current one). Not inlined: an unoptimised build would otherwise give
    // this function a stack slot for every arm's body, 280 KiB in all,
    // more than a recorder's connection thread has.
    match version {
        2..=PROTOCOL_VERSION => {
            let (tag, rest) = postcard::take_from_bytes::<u32>(rest).ok()?;
            let current = version == PROTOCOL_VERSION;
            // the variants in `Body`'s order (postcard's tags); older
            // hellos and explanations are upgraded, version 2 had no
            // aggregate, versions 2 and 3 no evidence and versions 2 to 5
            // no timerlat histograms
            match tag {
                0 if current => put(slot, seq, rest, |b| Some(Body::Hello(b))),
                0 if version == 5 => {
                    put(slot, seq, rest, |h| Some(Body::Hello(v5::upgrade_hello(h))))
                }
                0 if version == 4 => {
                    put(slot, seq, rest, |h| Some(Body::Hello(v4::upgrade_hello(h))))
                }
                0 if version == 3 => {
                    put(slot, seq, rest, |h| Some(Body::Hello(v3::upgrade_hello(h))))
                }
                0 => put(slot, seq, rest, |h| Some(Body::Hello(v2::upgrade_hello(h)))),
                1 => put(slot, seq, rest, |b| Some(Body::Stats(b))),
                2 => put(slot, seq, rest, |b| Some(Body::Delta(b))),
                3 => put(slot, seq, rest, |b| Some(Body::Chunk(b))),
                4 => put(slot, seq, rest, |b| Some(Body::Spike(b))),
                5 => put(slot, seq, rest, |b| Some(Body::Log(b))),
                6 => put(slot, seq, rest, |b| Some(Body::Bye(b))),
                7 if version >= 5 => put(slot, seq, rest, |b| Some(Body::Explain(b))),
                7 => put(slot, seq, rest, |a| {
                    Some(Body::Explain(v4::upgrade_attribution(a)))
                }),
                8 if version >= 3 => put(slot, seq, rest, |b| Some(Body::Aggregate(b))),
                9 if version >= 4 => put(slot, seq, rest, |b| Some(Body::EvidenceHead(b))),
                10 if version >= 4 => put(slot, seq, rest, |b| Some(Body::EvidencePart(b))),
                11 if version >= 6 => put(slot, seq, rest, |b| Some(Body::TimerlatStats(b))),
                12 if version >= 6 => put(slot, seq, rest, |b| Some(Body::TimerlatDelta(b))),
                13 if version >= 6 => put(slot, seq, rest, |b| Some(Body::TimerlatChunk(b))),
                _ => None,
            }
        }
        1 => put(slot, seq, rest, v1::upgrade_body),
        _ => None,
    }
}

/// Decode a `T` from `rest`, turn it into a current body with `variant`,
/// and put the frame in `slot`.
#[inline(never)]
fn put<'a, T: serde::Deserialize<'a>>(
    slot: &mut Option<Frame>,
    seq: u32,
    rest: &'a [u8],
    variant: impl FnOnce(T) -> Option<Body>,
) -> Option<()> {
    let body = variant(de(rest).ok()?)?;
    *slot = Some(Frame {
        version: PROTOCOL_VERSION,
        seq,
        body,
    });
    Some(())
}

/// The iterator of [`Decoder::frames`]: owned frames, or why one was
/// rejected.
pub struct Frames<'d, 'a, const N: usize> {
    dec: &'d mut Decoder<N>,
    rest: &'a [u8],
}

impl<const N: usize> Iterator for Frames<'_, '_, N> {
    type Item = Result<Frame, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.rest.is_empty() {
            let (ev, rest) = self.dec.feed_ref(self.rest);
            self.rest = rest;
            if let Some(ev) = ev {
                return Some(ev.cloned());
            }
        }
        None
    }
}

impl<const N: usize> Default for Decoder<N> {
    fn default() -> Self {
        Self::new()
    }
}
