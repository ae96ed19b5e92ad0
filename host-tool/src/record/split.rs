//! Cutting a byte stream into its frames at the 0x00 delimiters, so each
//! frame can be looked at (and a resent duplicate left out) before it is
//! written. Written back as `00 ‖ segment ‖ 00`, the frames of a stream
//! reproduce it byte for byte.

use latscope_core::wire::{Body, DecodeError, Decoder, MAX_FRAME};

/// What the splitter found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Piece<'a> {
    /// The bytes between two delimiters (never empty).
    Frame(&'a [u8]),
    /// Bytes of a segment longer than any frame: not a frame, passed on
    /// as they are so nothing read is silently dropped.
    Junk(&'a [u8]),
}

/// A splitter that holds at most one frame's worth of bytes between
/// calls.
#[derive(Debug, Default)]
pub(super) struct Splitter {
    partial: Vec<u8>,
    overlong: bool,
}

impl Splitter {
    /// An empty splitter.
    pub(super) fn new() -> Self {
        Splitter {
            partial: Vec::with_capacity(MAX_FRAME),
            overlong: false,
        }
    }

    /// Split `data`, handing every complete frame (and any over-long junk)
    /// to `f` in order.
    pub(super) fn push(&mut self, data: &[u8], mut f: impl FnMut(Piece<'_>)) {
        let mut rest = data;
        while !rest.is_empty() {
            let (seg, delim, after) = match rest.iter().position(|&b| b == 0) {
                Some(i) => (&rest[..i], true, &rest[i + 1..]),
                None => (rest, false, &[][..]),
            };
            rest = after;
            self.take(seg, delim, &mut f);
        }
    }

    fn take(&mut self, seg: &[u8], delim: bool, f: &mut impl FnMut(Piece<'_>)) {
        if self.overlong {
            if !seg.is_empty() {
                f(Piece::Junk(seg));
            }
        } else if self.partial.is_empty() && delim {
            if !seg.is_empty() {
                f(Piece::Frame(seg));
            }
        } else if self.partial.len() + seg.len() > MAX_FRAME {
            self.overlong = true;
            let held = std::mem::take(&mut self.partial);
            f(Piece::Junk(&held));
            self.partial = held;
            self.partial.clear();
            if !seg.is_empty() {
                f(Piece::Junk(seg));
            }
        } else {
            self.partial.extend_from_slice(seg);
            if delim && !self.partial.is_empty() {
                f(Piece::Frame(&self.partial));
                self.partial.clear();
            }
        }
        if delim {
            self.overlong = false;
        }
    }

    /// Bytes held of a frame that has not ended yet.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.partial.len()
    }
}

/// What a frame says about the run it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FrameRole {
    /// A hello: the run's id, board name and host name.
    Hello {
        /// Run id.
        run_id: u64,
        /// Board name (the host name when the hello names no board).
        name: String,
        /// Host name.
        host: String,
    },
    /// The run's last frame.
    Bye,
    /// Anything else.
    Other,
}

/// A frame's sequence number and kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Peeked {
    /// Sequence number.
    pub seq: u32,
    /// FrameRole.
    pub kind: FrameRole,
}

/// Decodes single frames to decide where they go, before they are
/// recorded and decoded for good.
pub(super) struct Peeker {
    dec: Box<Decoder<MAX_FRAME>>,
    /// The protocol version of the first frame of another version seen.
    pub other_version: Option<u8>,
    /// Frames that failed their check (CRC or COBS): damage or bytes that
    /// are not a latscope stream, not another version.
    pub damaged: u64,
}

impl Default for Peeker {
    fn default() -> Self {
        Peeker {
            dec: Box::new(Decoder::new()),
            other_version: None,
            damaged: 0,
        }
    }
}

impl Peeker {
    /// The sequence number and kind of the frame `seg` (the bytes between
    /// two delimiters); `None` if it is not a frame this build decodes.
    pub(super) fn frame(&mut self, seg: &[u8]) -> Option<Peeked> {
        let mut out = None;
        for part in [&[0u8][..], seg, &[0u8][..]] {
            let mut rest = part;
            while !rest.is_empty() {
                let (ev, r) = self.dec.feed_ref(rest);
                rest = r;
                match ev {
                    Some(Err(DecodeError::UnknownVersion(v))) => {
                        self.other_version.get_or_insert(v);
                    }
                    Some(Err(DecodeError::Crc | DecodeError::Cobs)) => self.damaged += 1,
                    _ => {}
                }
                if let Some(Ok(f)) = ev {
                    let kind = match &f.body {
                        Body::Hello(h) => FrameRole::Hello {
                            run_id: h.run_id,
                            name: crate::record::board_name(h).to_string(),
                            host: h.target.hostname.to_string(),
                        },
                        Body::Bye(_) => FrameRole::Bye,
                        _ => FrameRole::Other,
                    };
                    out = Some(Peeked { seq: f.seq, kind });
                }
            }
        }
        out
    }
}

/// Whether sequence number `seq` comes after `last` (serial-number
/// arithmetic, so a run longer than 2^32 frames keeps working).
pub(super) const fn newer(seq: u32, last: u32) -> bool {
    (seq.wrapping_sub(last) as i32) > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(s: &mut Splitter, data: &[u8], out: &mut Vec<(bool, Vec<u8>)>) {
        s.push(data, |p| match p {
            Piece::Frame(b) => out.push((true, b.to_vec())),
            Piece::Junk(b) => out.push((false, b.to_vec())),
        });
    }

    #[test]
    fn frames_come_out_whole_in_any_chunking() {
        let stream = [0, 1, 2, 3, 0, 0, 4, 5, 0, 0, 6, 0];
        for cut in 0..stream.len() {
            let mut s = Splitter::new();
            let mut out = Vec::new();
            collect(&mut s, &stream[..cut], &mut out);
            collect(&mut s, &stream[cut..], &mut out);
            let want = vec![(true, vec![1, 2, 3]), (true, vec![4, 5]), (true, vec![6])];
            assert_eq!(out, want, "cut at {cut}");
            assert_eq!(s.pending(), 0);
        }
    }

    #[test]
    fn an_overlong_segment_passes_as_junk_and_the_next_frame_is_found() {
        let mut stream = vec![0u8];
        stream.extend(std::iter::repeat_n(7u8, MAX_FRAME + 10));
        stream.extend([0, 9, 9, 0]);
        let mut s = Splitter::new();
        let mut out = Vec::new();
        for c in stream.chunks(1000) {
            collect(&mut s, c, &mut out);
        }
        let junk: usize = out.iter().filter(|(f, _)| !f).map(|(_, b)| b.len()).sum();
        assert_eq!(junk, MAX_FRAME + 10, "every junk byte is passed on");
        assert_eq!(out.last(), Some(&(true, vec![9, 9])));
    }
}
