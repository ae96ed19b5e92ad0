//! The kernel's binary trace: pages of its ring buffer, as
//! `per_cpu/cpuN/trace_pipe_raw` hands them out, decoded into the
//! [`Event`](crate::explain::Event)s the classifier reads.
//!
//! Reading pages is 15–20 times cheaper than reading the same events as
//! text, and a page read consumes what it returns, so a reader that keeps
//! up never races the writer. This module is the decoding half; the Linux
//! target's reader does the I/O.
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
//!   and `sched_wakeup` events it has seen ([`Comms`]).
//!
//! Every field is read byte-wise, little-endian, never by a cast: on armv7
//! the kernel aligns events to 4 bytes, so a `u64` may be unaligned. Big-
//! endian kernels are not supported. Nothing here allocates, and bytes
//! that are not what the kernel writes give an [`Error`](crate::Error)
//! (naming the byte offset in the page), never a panic.

mod comms;
mod decode;
mod events;
mod fields;
mod header;
mod history;
mod page;

pub use comms::{Comms, COMMS};
pub use decode::Decoder;
pub use events::{EventFormats, KNOWN};
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

    /// The format files of the fixture's seven events.
    pub(super) const FIXTURE_FORMATS: [&str; 7] = [
        include_str!("fixtures/x86_64-6.18/irq_handler_entry.format"),
        include_str!("fixtures/x86_64-6.18/irq_handler_exit.format"),
        include_str!("fixtures/x86_64-6.18/softirq_entry.format"),
        include_str!("fixtures/x86_64-6.18/softirq_exit.format"),
        include_str!("fixtures/x86_64-6.18/sched_switch.format"),
        include_str!("fixtures/x86_64-6.18/sched_wakeup.format"),
        include_str!("fixtures/x86_64-6.18/print.format"),
    ];

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
        let header = PageHeader::parse(include_str!("fixtures/x86_64-6.18/header_page")).unwrap();
        assert_eq!(header, PageHeader::LONG_8);
        let mut formats = EventFormats::new();
        for f in FIXTURE_FORMATS {
            assert_eq!(formats.add(f), Ok(true));
        }
        let mut dec = Decoder::new(formats);
        let text = include_str!("fixtures/x86_64-6.18/cpu0.trace");
        let want: Vec<String> = text
            .lines()
            .filter_map(parse_line)
            .map(|e| said(&e))
            .collect();
        let mut got = Vec::new();
        let mut missed = Vec::new();
        for bytes in include_bytes!("fixtures/x86_64-6.18/cpu0.pages").chunks(4096) {
            let page = Page::new(header, bytes).unwrap();
            missed.push(page.missed());
            for raw in page.events() {
                got.push(said(&dec.decode(0, &raw.unwrap()).unwrap()));
            }
        }
        // The kernel's per_cpu/cpu0/stats: overrun 139, entries 170.
        assert_eq!(missed[0], Missed::Events(139));
        assert!(
            missed[1..].iter().all(|m| *m == Missed::Nothing),
            "{missed:?}"
        );
        assert_eq!(got.len(), 170);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "event {i}");
        }
        assert_eq!(got.len(), want.len());
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
