//! The kernel's binary trace: pages of its ring buffer, as
//! `per_cpu/cpuN/trace_pipe_raw` hands them out, decoded into the
//! [`Event`](crate::explain::Event)s the classifier reads.
//!
//! Reading pages costs a fraction of reading the same events as text
//! (`bench/results/trace-rates.md`), and a page read consumes what it
//! returns, so a reader that keeps up never races the writer. This module
//! is the decoding half; the Linux target's reader does the I/O.
//!
//! * [`PageHeader`] comes from `events/header_page`: where a page's
//!   timestamp and commit word lie and where its data starts (offset 16 on
//!   64-bit kernels, 12 on 32-bit ones);
//! * [`EventFormats`] comes from the `format` file of each event the
//!   classifier reads: its id and its fields' offsets and sizes;
//! * [`Page`] walks one page: time extends, absolute timestamps, padding and
//!   discarded events, and tells the events the kernel lost before it
//!   ([`Missed`]);
//! * [`Decoder`] turns each [`RawEvent`] into an
//!   [`Event`](crate::explain::Event), naming tasks from the `sched_switch`
//!   and `sched_wakeup` events it has seen ([`Comms`]);
//! * [`BufferStats`] reads a CPU's `stats`: events recorded and lost.
//!
//! Every field is read byte-wise, little-endian, never by a cast: on armv7
//! the kernel aligns events to 4 bytes, so a `u64` may be unaligned. Big-
//! endian kernels are not supported. Nothing here allocates, and bytes
//! that are not what the kernel writes give an [`Error`](crate::Error)
//! (naming the byte offset in the page), never a panic.

mod buffer_stats;
mod comms;
mod decode;
mod events;
mod fields;
mod header;
mod history;
mod page;

pub use buffer_stats::BufferStats;
pub use comms::{Comms, COMMS};
pub use decode::Decoder;
pub use events::{EventFormats, KNOWN};
pub(crate) use fields::find_field;
pub use fields::{Field, Loc};
pub use header::PageHeader;
pub use history::History;
pub use page::{Events, Missed, Page, RawEvent};

/// Reads `n` (1 to 8) bytes at `at` as a little-endian unsigned integer,
/// or `None` past the end of `b`.
pub(crate) fn read_le(b: &[u8], at: usize, n: usize) -> Option<u64> {
    let bytes = b.get(at..at.checked_add(n)?)?;
    if n > 8 {
        return None;
    }
    Some(
        bytes
            .iter()
            .rev()
            .fold(0u64, |acc, &x| (acc << 8) | u64::from(x)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::explain::{parse_line, Event};
    use std::string::String;
    use std::vec::Vec;

    /// One kernel's own pages and text of the same events
    /// (`fixtures/README.md`).
    pub(super) struct Fixture {
        pub header_page: &'static str,
        pub formats: [&'static str; 7],
        pub pages: &'static [u8],
        pub text: &'static str,
    }

    /// The fixture in `fixtures/$dir`.
    macro_rules! fixture {
        ($dir:literal) => {
            Fixture {
                header_page: include_str!(concat!("fixtures/", $dir, "/header_page")),
                formats: [
                    include_str!(concat!("fixtures/", $dir, "/irq_handler_entry.format")),
                    include_str!(concat!("fixtures/", $dir, "/irq_handler_exit.format")),
                    include_str!(concat!("fixtures/", $dir, "/softirq_entry.format")),
                    include_str!(concat!("fixtures/", $dir, "/softirq_exit.format")),
                    include_str!(concat!("fixtures/", $dir, "/sched_switch.format")),
                    include_str!(concat!("fixtures/", $dir, "/sched_wakeup.format")),
                    include_str!(concat!("fixtures/", $dir, "/print.format")),
                ],
                pages: include_bytes!(concat!("fixtures/", $dir, "/cpu0.pages")),
                text: include_str!(concat!("fixtures/", $dir, "/cpu0.trace")),
            }
        };
    }

    pub(super) const X86_64: Fixture = fixture!("x86_64-6.18");
    const AARCH64: Fixture = fixture!("aarch64-6.12");
    const ARMV7: Fixture = fixture!("armv7-6.1");

    /// The format files of the x86-64 fixture's seven events.
    pub(super) const FIXTURE_FORMATS: [&str; 7] = X86_64.formats;

    /// A number of a CPU's `stats` (`overrun: 6279`).
    fn stat(stats: &str, key: &str) -> u64 {
        stats
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
            .unwrap()
    }

    /// Decodes every page of `f` (laid out as `header` says) and checks
    /// each event against the kernel's text of it; returns what each page
    /// says was lost before it, and the events.
    fn decodes_to_its_text(f: &Fixture, header: PageHeader) -> (Vec<Missed>, usize) {
        assert_eq!(PageHeader::parse(f.header_page), Ok(header));
        let mut formats = EventFormats::new();
        for text in f.formats {
            assert_eq!(formats.add(text), Ok(true));
        }
        let mut dec = Decoder::new(formats);
        let want: Vec<String> = f
            .text
            .lines()
            .filter_map(parse_line)
            .map(|e| said(&e))
            .collect();
        let mut got = Vec::new();
        let mut missed = Vec::new();
        for bytes in f.pages.chunks(4096) {
            let page = Page::new(header, bytes).unwrap();
            missed.push(page.missed());
            for raw in page.events() {
                got.push(said(&dec.decode(0, &raw.unwrap()).unwrap()));
            }
        }
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "event {i}");
        }
        assert_eq!(got.len(), want.len());
        (missed, got.len())
    }

    /// The boards' pages (a 64-bit `PREEMPT_RT` kernel's, and a 32-bit
    /// kernel's with its 4-byte commit word), captured on the emulated
    /// boards: every event decodes to what the kernel's text says, and
    /// the counts the pages store add up to the overrun of its `stats`.
    #[test]
    fn the_boards_pages_decode_to_their_kernels_own_text() {
        for (f, header, stats) in [
            (
                AARCH64,
                PageHeader::LONG_8,
                include_str!("fixtures/aarch64-6.12/cpu0.stats"),
            ),
            (
                ARMV7,
                PageHeader::LONG_4,
                include_str!("fixtures/armv7-6.1/cpu0.stats"),
            ),
        ] {
            let (missed, events) = decodes_to_its_text(&f, header);
            assert_eq!(events as u64, stat(stats, "entries"));
            let stored: u64 = missed
                .iter()
                .map(|m| match m {
                    Missed::Events(n) => *n,
                    _ => 0,
                })
                .sum();
            assert!(missed.iter().all(|m| *m != Missed::Unknown), "{missed:?}");
            assert_eq!(stored, stat(stats, "overrun"), "{missed:?}");
        }
    }

    /// An event as text and pages can both say it: the microsecond the
    /// text prints (rounded to the nearest, as the kernel's `ns2usecs`
    /// does), the CPU, the current task's pid, and what happened.
    fn said(e: &Event<'_>) -> String {
        let us = (e.ts_ns + 500) / 1000;
        std::format!("{us} cpu{} pid {} {:?}", e.cpu, e.task.pid, e.kind)
    }

    /// An x86-64 kernel's (6.18) own pages and text of the same events
    /// (`fixtures/README.md`): every event decodes to what the text says,
    /// and the first page carries the count of those overwritten.
    #[test]
    fn x86_64_pages_decode_to_the_kernels_own_text() {
        let (missed, events) = decodes_to_its_text(&X86_64, PageHeader::LONG_8);
        // The kernel's per_cpu/cpu0/stats: overrun 139, entries 170.
        assert_eq!(missed[0], Missed::Events(139));
        assert!(
            missed[1..].iter().all(|m| *m == Missed::Nothing),
            "{missed:?}"
        );
        assert_eq!(events, 170);
    }

    #[test]
    fn read_le_is_byte_wise_and_bounded() {
        let b = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09];
        assert_eq!(read_le(&b, 0, 2), Some(0x0201));
        // Unaligned: starts at an odd offset.
        assert_eq!(read_le(&b, 1, 8), Some(0x0908_0706_0504_0302));
        assert_eq!(read_le(&b, 2, 8), None);
        assert_eq!(read_le(&b, usize::MAX, 2), None);
        assert_eq!(read_le(&b, 0, 0), Some(0));
    }
}
