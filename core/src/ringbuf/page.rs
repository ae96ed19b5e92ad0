//! One page of the ring buffer: its events, their timestamps, and the
//! events the kernel lost before it.
//!
//! Each event starts with a 32-bit word: `type_len` in the low 5 bits,
//! `time_delta` (nanoseconds since the previous event) in the upper 27.
//! `type_len` 1 to 28 is a data event of that many 4-byte words; 0 is a
//! data event whose length (in bytes, itself included) is the next word;
//! 29 is padding (a discarded event, or with a zero delta the unused end
//! of the page); 30 extends the next delta past 27 bits; 31 is an
//! absolute timestamp (`kernel/trace/ring_buffer.c`, and libtraceevent's
//! `kbuffer-parse.c`, whose handling of padding's delta this follows).

use super::{read_le, PageHeader};
use crate::Error;

/// `type_len` of padding and discarded events.
const PADDING: u32 = 29;
/// `type_len` of a time extend.
const TIME_EXTEND: u32 = 30;
/// `type_len` of an absolute timestamp.
const TIME_STAMP: u32 = 31;
/// Bits of `time_delta`, and the shift of an extend's upper part.
const TS_SHIFT: u32 = 27;
/// The commit word's flag: events were lost before this page.
const MISSED_EVENTS: u64 = 1 << 31;
/// The commit word's flag: their count is stored after the data.
const MISSED_STORED: u64 = 1 << 30;
/// The commit word's bits that hold the data's length.
const COMMIT_MASK: u64 = (1 << 27) - 1;
/// The top bits an absolute timestamp does not store
/// (`rb_fix_abs_ts`).
const TS_MSB: u64 = 0xf8 << 56;

/// What the kernel lost before a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Missed {
    /// Nothing: the page follows the previous one read.
    Nothing,
    /// This many events, as the page stores it.
    Events(u64),
    /// Events, but the page had no room to store how many
    /// (`RB_MISSED_EVENTS` without `RB_MISSED_STORED`).
    Unknown,
}

/// One page of `per_cpu/cpuN/trace_pipe_raw`.
///
/// ```
/// use latscope_core::ringbuf::{Missed, Page, PageHeader};
/// // A 64-bit page at 1 s holding one 8-byte event 500 ns in.
/// let mut b = [0u8; 4096];
/// b[..8].copy_from_slice(&1_000_000_000u64.to_le_bytes());
/// b[8..16].copy_from_slice(&12u64.to_le_bytes());
/// b[16..20].copy_from_slice(&(2u32 | (500 << 5)).to_le_bytes());
/// b[20..28].copy_from_slice(&[7, 0, 0, 0, 42, 0, 0, 0]);
/// let page = Page::new(PageHeader::LONG_8, &b).unwrap();
/// assert_eq!(page.missed(), Missed::Nothing);
/// let e: Vec<_> = page.events().collect::<Result<_, _>>().unwrap();
/// assert_eq!((e.len(), e[0].ts_ns, e[0].payload[4]), (1, 1_000_000_500, 42));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    header: PageHeader,
    /// The page's events: the data area up to the commit length.
    data: &'a [u8],
    timestamp: u64,
    missed: Missed,
}

impl<'a> Page<'a> {
    /// The page in `bytes`, as read from `trace_pipe_raw` (a whole page,
    /// or the part the read returned).
    ///
    /// # Errors
    ///
    /// [`Error::BadTracePage`] if the header does not fit, or the commit
    /// length or a stored count lies past `bytes`.
    pub fn new(header: PageHeader, bytes: &'a [u8]) -> Result<Self, Error> {
        let bad = |offset: u16, why| Error::BadTracePage {
            offset: u32::from(offset),
            why,
        };
        let timestamp = read_le(bytes, usize::from(header.timestamp), 8)
            .ok_or(bad(header.timestamp, "page shorter than its header"))?;
        let word_size = usize::from(header.commit_size);
        let word = read_le(bytes, usize::from(header.commit), word_size)
            .ok_or(bad(header.commit, "page shorter than its header"))?;
        let start = usize::from(header.data);
        // At most 2^27 - 1 by the mask: no overflow.
        let len = (word & COMMIT_MASK) as usize;
        let data = bytes
            .get(start..start + len)
            .ok_or(bad(header.commit, "commit length past the page's end"))?;
        let missed = if word & MISSED_EVENTS == 0 {
            Missed::Nothing
        } else if word & MISSED_STORED == 0 {
            Missed::Unknown
        } else {
            let n = read_le(bytes, start + len, word_size)
                .ok_or(bad(header.commit, "lost-events count past the page's end"))?;
            Missed::Events(n)
        };
        Ok(Self {
            header,
            data,
            timestamp,
            missed,
        })
    }

    /// The page's timestamp, the base of its first event's delta, in the
    /// instance's trace clock.
    pub fn timestamp_ns(&self) -> u64 {
        self.timestamp
    }

    /// What the kernel lost between the page read before and this one.
    pub fn missed(&self) -> Missed {
        self.missed
    }

    /// The page's data events, in order, with their timestamps.
    pub fn events(&self) -> Events<'a> {
        Events {
            data: self.data,
            base: u32::from(self.header.data),
            at: 0,
            ts: self.timestamp,
            done: false,
        }
    }
}

/// One data event of a page, not yet decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawEvent<'a> {
    /// Its timestamp, in the instance's trace clock.
    pub ts_ns: u64,
    /// Its payload: the common fields (`common_type` first), then the
    /// event's own, padded to 4 bytes.
    pub payload: &'a [u8],
    /// Where its header lies in the page, for errors.
    pub offset: u32,
}

/// The data events of a [`Page`]; see [`Page::events`]. After an error it
/// ends.
#[derive(Debug, Clone)]
pub struct Events<'a> {
    data: &'a [u8],
    /// The data's offset in the page.
    base: u32,
    at: usize,
    ts: u64,
    done: bool,
}

impl<'a> Events<'a> {
    fn word(&self, at: usize) -> Option<u32> {
        read_le(self.data, at, 4).map(|w| w as u32)
    }

    fn fail(&mut self, at: usize, why: &'static str) -> Option<Result<RawEvent<'a>, Error>> {
        self.done = true;
        let offset = self
            .base
            .saturating_add(u32::try_from(at).unwrap_or(u32::MAX));
        Some(Err(Error::BadTracePage { offset, why }))
    }
}

impl<'a> Iterator for Events<'a> {
    type Item = Result<RawEvent<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done && self.at < self.data.len() {
            let at = self.at;
            let Some(head) = self.word(at) else {
                return self.fail(at, "event header cut by the end of the data");
            };
            let type_len = head & 0x1f;
            let delta = u64::from(head >> 5);
            let (len, payload_at) = match type_len {
                PADDING if delta == 0 => {
                    // The unused rest of the page.
                    self.done = true;
                    return None;
                }
                PADDING => {
                    // A discarded event: its delta still counts, as the
                    // next event's delta starts from it.
                    let Some(n) = self.word(at + 4) else {
                        return self.fail(at, "padding cut by the end of the data");
                    };
                    self.ts = self.ts.wrapping_add(delta);
                    (4 + n as usize, None)
                }
                TIME_EXTEND => {
                    let Some(hi) = self.word(at + 4) else {
                        return self.fail(at, "time extend cut by the end of the data");
                    };
                    self.ts = self.ts.wrapping_add((u64::from(hi) << TS_SHIFT) | delta);
                    (8, None)
                }
                TIME_STAMP => {
                    let Some(hi) = self.word(at + 4) else {
                        return self.fail(at, "timestamp cut by the end of the data");
                    };
                    let abs = (u64::from(hi) << TS_SHIFT) | delta;
                    self.ts = fix_abs(abs, self.ts);
                    (8, None)
                }
                0 => {
                    let Some(n) = self.word(at + 4) else {
                        return self.fail(at, "event length cut by the end of the data");
                    };
                    if n < 4 {
                        return self.fail(at, "event length below its own word");
                    }
                    self.ts = self.ts.wrapping_add(delta);
                    // The length counts its own word; events are 4-byte
                    // aligned.
                    (4 + (n as usize).next_multiple_of(4), Some(at + 8))
                }
                words => {
                    self.ts = self.ts.wrapping_add(delta);
                    (4 + 4 * words as usize, Some(at + 4))
                }
            };
            let end = at.saturating_add(len);
            if end > self.data.len() {
                if payload_at.is_none() && type_len == PADDING {
                    // Padding that fills the page past the commit length
                    // (libtraceevent stops there too): nothing is lost.
                    self.done = true;
                    return None;
                }
                return self.fail(at, "event runs past the commit length");
            }
            self.at = end;
            if let Some(p) = payload_at {
                let offset = self
                    .base
                    .saturating_add(u32::try_from(at).unwrap_or(u32::MAX));
                return Some(Ok(RawEvent {
                    ts_ns: self.ts,
                    payload: &self.data[p..end],
                    offset,
                }));
            }
        }
        None
    }
}

/// An absolute timestamp with the top bits it does not store taken from
/// `now` (`rb_fix_abs_ts`), carrying over if it wrapped below.
fn fix_abs(abs: u64, now: u64) -> u64 {
    if now & TS_MSB == 0 {
        return abs;
    }
    let t = abs | (now & TS_MSB);
    if t < now {
        t.wrapping_add(1 << 59)
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// Builds a page of `header`'s shape.
    struct Build {
        b: Vec<u8>,
        header: PageHeader,
    }

    impl Build {
        fn new(header: PageHeader, ts: u64) -> Self {
            let mut b = std::vec![0u8; 4096];
            b[..8].copy_from_slice(&ts.to_le_bytes());
            Self { b, header }
        }
        fn len(&self) -> usize {
            let c = usize::from(self.header.commit);
            read_le(&self.b, c, usize::from(self.header.commit_size)).unwrap() as usize
                & COMMIT_MASK as usize
        }
        fn push(&mut self, words: &[u32]) -> &mut Self {
            let at = usize::from(self.header.data) + self.len();
            for (i, w) in words.iter().enumerate() {
                self.b[at + 4 * i..at + 4 * i + 4].copy_from_slice(&w.to_le_bytes());
            }
            let n = (self.len() + 4 * words.len()) as u64;
            self.set_commit(n);
            self
        }
        fn set_commit(&mut self, word: u64) {
            let c = usize::from(self.header.commit);
            let n = usize::from(self.header.commit_size);
            self.b[c..c + n].copy_from_slice(&word.to_le_bytes()[..n]);
        }
        fn page(&self) -> Page<'_> {
            Page::new(self.header, &self.b).unwrap()
        }
    }

    fn head(type_len: u32, delta: u32) -> u32 {
        type_len | (delta << 5)
    }

    fn stamps(p: &Page<'_>) -> Vec<u64> {
        p.events().map(|e| e.unwrap().ts_ns).collect()
    }

    #[test]
    fn small_and_long_events_add_their_deltas() {
        for header in [PageHeader::LONG_8, PageHeader::LONG_4] {
            let mut b = Build::new(header, 1000);
            b.push(&[head(1, 10), 0xaaaa]);
            // A long event: length 12 counts its own word.
            b.push(&[head(0, 20), 12, 0xbbbb, 0xcccc]);
            let p = b.page();
            let e: Vec<_> = p.events().map(Result::unwrap).collect();
            assert_eq!(stamps(&p), [1010, 1030]);
            assert_eq!(e[0].payload, 0xaaaa_u32.to_le_bytes());
            assert_eq!(e[1].payload.len(), 8);
            assert_eq!(e[1].offset, u32::from(header.data) + 8);
        }
    }

    #[test]
    fn extends_stamps_and_padding() {
        let mut b = Build::new(PageHeader::LONG_8, 0);
        // 2^27 * 3 + 5 ns later.
        b.push(&[head(TIME_EXTEND, 5), 3]);
        b.push(&[head(1, 0), 1]);
        // A discarded event of 8 bytes, 7 ns on: its delta counts.
        b.push(&[head(PADDING, 7), 8, 0]);
        b.push(&[head(1, 1), 2]);
        // An absolute stamp.
        b.push(&[head(TIME_STAMP, 9), 1]);
        b.push(&[head(1, 0), 3]);
        let first = (3u64 << 27) + 5;
        assert_eq!(stamps(&b.page()), [first, first + 8, (1 << 27) | 9]);
        // Padding reaching past the commit length ends the page quietly.
        let mut p = Build::new(PageHeader::LONG_8, 0);
        p.push(&[head(1, 0), 1]);
        p.push(&[head(PADDING, 3), 4000]);
        assert_eq!(stamps(&p.page()), [0]);
        // A null padding ends the page even if the commit says more.
        b.push(&[head(PADDING, 0), 0]);
        b.push(&[head(1, 0), 4]);
        assert_eq!(b.page().events().count(), 3);
    }

    #[test]
    fn absolute_stamps_take_the_top_bits_from_the_page() {
        let now = (1u64 << 60) | 500;
        assert_eq!(fix_abs(600, now), (1 << 60) | 600);
        // Below now: the low bits wrapped past 2^59.
        assert_eq!(fix_abs(400, now), (1 << 60) + (1 << 59) + 400);
        assert_eq!(fix_abs(400, 500), 400);
    }

    #[test]
    fn lost_events_as_the_page_tells_them() {
        for header in [PageHeader::LONG_8, PageHeader::LONG_4] {
            let mut b = Build::new(header, 0);
            b.push(&[head(1, 1), 1]);
            assert_eq!(b.page().missed(), Missed::Nothing);
            let len = b.len() as u64;
            b.set_commit(len | MISSED_EVENTS);
            assert_eq!(b.page().missed(), Missed::Unknown);
            let at = usize::from(header.data) + len as usize;
            b.b[at..at + 4].copy_from_slice(&77u32.to_le_bytes());
            b.set_commit(len | MISSED_EVENTS | MISSED_STORED);
            assert_eq!(b.page().missed(), Missed::Events(77));
            // The flags are not part of the length.
            assert_eq!(b.page().events().count(), 1);
        }
    }

    #[test]
    fn bad_pages_are_errors_that_say_where() {
        assert!(Page::new(PageHeader::LONG_8, &[0; 12]).is_err());
        let mut b = Build::new(PageHeader::LONG_8, 0);
        b.set_commit(5000);
        assert!(matches!(
            Page::new(PageHeader::LONG_8, &b.b),
            Err(Error::BadTracePage { offset: 8, .. })
        ));
        // An event longer than the data.
        let mut b = Build::new(PageHeader::LONG_8, 0);
        b.push(&[head(1, 0), 1]);
        b.push(&[head(5, 0), 1]);
        let r: Vec<_> = b.page().events().collect();
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[1],
            Err(Error::BadTracePage {
                offset: 24,
                why: "event runs past the commit length"
            })
        );
        // A long event whose length is smaller than its own word.
        let mut b = Build::new(PageHeader::LONG_8, 0);
        b.push(&[head(0, 0), 2]);
        assert!(b.page().events().next().unwrap().is_err());
    }
}
