//! Where a [`super::Reporter`] puts its frames.

use crate::error::Error;

/// Takes encoded frames (both delimiters included) from a
/// [`super::Reporter`]. A closure `FnMut(&[u8])` is one; the target's link
/// is another (it keeps frames by sequence number to send them again);
/// [`SliceSink`] fills a caller's buffer.
pub trait FrameSink {
    /// One encoded frame, with the sequence number it carries.
    fn frame(&mut self, seq: u32, bytes: &[u8]);

    /// A frame could not be encoded (a sizing bug, never expected); the
    /// default ignores it, a link counts it as not delivered.
    fn failed(&mut self, _error: Error) {}
}

impl<F: FnMut(&[u8])> FrameSink for F {
    fn frame(&mut self, _seq: u32, bytes: &[u8]) {
        self(bytes)
    }
}

/// Frames appended to a caller's buffer, whole or not at all: a frame that
/// does not fit is counted in [`SliceSink::overflow`] and skipped.
#[derive(Debug)]
pub struct SliceSink<'a> {
    buf: &'a mut [u8],
    len: usize,
    /// Frames that did not fit (or failed to encode).
    pub overflow: u64,
}

impl<'a> SliceSink<'a> {
    /// An empty sink over `buf`.
    pub fn new(buf: &'a mut [u8]) -> Self {
        SliceSink {
            buf,
            len: 0,
            overflow: 0,
        }
    }

    /// The frames written so far.
    pub fn filled(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }

    /// Forget the frames written (after the caller sent them).
    pub fn clear(&mut self) {
        self.len = 0;
    }
}

impl FrameSink for SliceSink<'_> {
    fn frame(&mut self, _seq: u32, bytes: &[u8]) {
        match self.buf.get_mut(self.len..self.len + bytes.len()) {
            Some(dst) => {
                dst.copy_from_slice(bytes);
                self.len += bytes.len();
            }
            None => self.overflow += 1,
        }
    }

    fn failed(&mut self, _error: Error) {
        self.overflow += 1;
    }
}
