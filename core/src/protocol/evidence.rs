//! A spike's evidence on the wire: a trace.dat cut into
//! [`EvidencePart`]s on a grid of [`EVIDENCE_PART`] bytes, all-zero parts
//! left out ([`parts`]), and put together again in memory handed in
//! ([`EvidenceAssembler`]), whatever was lost, repeated or swapped on the
//! way. A part says where the zeros after it end, so the assembler knows
//! which bytes it has: a file is complete when every cell of the grid is
//! covered, and otherwise says how many are missing. No part can make it
//! write outside the file, or write zeros over bytes it has.

use crate::wire::{EvidenceHead, EvidencePart, EVIDENCE_PART};
use crate::Error;

/// The parts `file` is sent in, for the evidence of `thread`'s spike of
/// `cycle`: one for each cell of [`EVIDENCE_PART`] bytes that is not all
/// zeros (and the first, always, of a file not empty), each saying where
/// the next begins.
///
/// ```
/// use latscope_core::protocol::parts;
/// let mut file = vec![0u8; 4096];
/// file[0] = 1;
/// file[3000] = 2;
/// let p: Vec<_> = parts(&file, 0, 7).collect();
/// assert_eq!(p.len(), 2);
/// assert_eq!((p[0].offset, p[0].next), (0, 2560));
/// assert_eq!((p[1].offset, p[1].next), (2560, 4096));
/// ```
pub fn parts(file: &[u8], thread: u16, cycle: u64) -> impl Iterator<Item = EvidencePart> + '_ {
    let mut cell = 0;
    core::iter::from_fn(move || {
        let p = part_from(file, thread, cycle, cell)?;
        cell = (p.next as usize).div_ceil(EVIDENCE_PART);
        Some(p)
    })
}

/// The first part of [`parts`] at or after cell `cell` (of
/// [`EVIDENCE_PART`] bytes), if any: a sender that sends a part at a time
/// resumes at the cell its last part's `next` names.
pub fn part_from(file: &[u8], thread: u16, cycle: u64, cell: usize) -> Option<EvidencePart> {
    let cells = file.len().div_ceil(EVIDENCE_PART);
    let bytes = |i: usize| &file[i * EVIDENCE_PART..((i + 1) * EVIDENCE_PART).min(file.len())];
    let sent = |i: usize| i == 0 || bytes(i).iter().any(|&b| b != 0);
    let i = (cell..cells).find(|&i| sent(i))?;
    let next = (i + 1..cells).find(|&j| sent(j)).unwrap_or(cells);
    let next = (next * EVIDENCE_PART).min(file.len());
    let mut data = heapless::Vec::new();
    // a cell fits a part
    let _ = data.extend_from_slice(bytes(i));
    Some(EvidencePart {
        thread,
        cycle,
        offset: (i * EVIDENCE_PART) as u32,
        next: next as u32,
        data,
    })
}

/// One evidence file being put together from its parts, in a `store` of
/// its size at least and a bitmap `cells` of one bit per
/// [`EVIDENCE_PART`] of it, both handed in (zeroed).
///
/// ```
/// use latscope_core::protocol::{parts, EvidenceAssembler};
/// use latscope_core::wire::EvidenceHead;
/// let mut file = vec![0u8; 2000];
/// file[1500] = 9;
/// let head = EvidenceHead { size: 2000, ..Default::default() };
/// let mut a = EvidenceAssembler::new(head, vec![0u8; 2000], vec![0u8; 1]).unwrap();
/// let mut p: Vec<_> = parts(&file, 0, 0).collect();
/// p.reverse();
/// for part in p.iter().chain(&p) {
///     a.add(part).unwrap();
/// }
/// assert!(a.is_complete());
/// assert_eq!(a.bytes(), &file[..]);
/// ```
#[derive(Debug, Clone)]
pub struct EvidenceAssembler<S, C> {
    head: EvidenceHead,
    store: S,
    cells: C,
    /// Cells covered so far.
    covered: usize,
}

impl<S: AsRef<[u8]> + AsMut<[u8]>, C: AsRef<[u8]> + AsMut<[u8]>> EvidenceAssembler<S, C> {
    /// The file `head` announces, to be put together in `store` (its size
    /// at least) with `cells` (a bit per part of it, at least).
    ///
    /// # Errors
    ///
    /// [`Error::BadEvidence`] if either is too small.
    pub fn new(head: EvidenceHead, mut store: S, mut cells: C) -> Result<Self, Error> {
        let size = head.size as usize;
        if store.as_ref().len() < size || cells.as_ref().len() * 8 < Self::cells_of(size) {
            return Err(Error::BadEvidence("memory smaller than the file"));
        }
        store.as_mut()[..size].fill(0);
        cells.as_mut().fill(0);
        Ok(Self {
            head,
            store,
            cells,
            covered: 0,
        })
    }

    /// Cells of a file of `size` bytes.
    pub const fn cells_of(size: usize) -> usize {
        size.div_ceil(EVIDENCE_PART)
    }

    /// What the file is of.
    pub fn head(&self) -> &EvidenceHead {
        &self.head
    }

    /// Adds `part`; one already had changes nothing.
    ///
    /// # Errors
    ///
    /// [`Error::BadEvidence`] for a part of another file, off the grid,
    /// beyond the file's end, longer than a cell, or whose `next` is not
    /// on the grid after its bytes; nothing is written then.
    pub fn add(&mut self, part: &EvidencePart) -> Result<(), Error> {
        let size = self.head.size as usize;
        let (offset, next) = (part.offset as usize, part.next as usize);
        let bad = |why| Err(Error::BadEvidence(why));
        if (part.thread, part.cycle) != (self.head.thread, self.head.cycle) {
            return bad("a part of another spike's evidence");
        }
        if offset % EVIDENCE_PART != 0 || offset >= size {
            return bad("a part off the grid or beyond the file");
        }
        let end = offset + part.data.len();
        if end > size || part.data.len() > EVIDENCE_PART {
            return bad("a part's bytes beyond the file");
        }
        if next < end || next > size || (next % EVIDENCE_PART != 0 && next != size) {
            return bad("a part's zeros end off the grid or beyond the file");
        }
        self.store.as_mut()[offset..end].copy_from_slice(&part.data);
        let first = offset / EVIDENCE_PART;
        let last = Self::cells_of(next).max(first + 1);
        for i in first..last {
            let (byte, bit) = (i / 8, 1u8 << (i % 8));
            let cells = self.cells.as_mut();
            if cells[byte] & bit == 0 {
                cells[byte] |= bit;
                self.covered += 1;
            }
        }
        Ok(())
    }

    /// Cells of the grid not covered yet.
    pub fn missing(&self) -> usize {
        Self::cells_of(self.head.size as usize) - self.covered
    }

    /// Whether every byte of the file is known.
    pub fn is_complete(&self) -> bool {
        self.missing() == 0
    }

    /// The file's bytes (zeros where parts are missing).
    pub fn bytes(&self) -> &[u8] {
        &self.store.as_ref()[..self.head.size as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec::Vec;

    fn head(size: usize) -> EvidenceHead {
        EvidenceHead {
            thread: 1,
            cycle: 42,
            size: size as u32,
            ..EvidenceHead::default()
        }
    }

    fn assembler(size: usize) -> EvidenceAssembler<Vec<u8>, Vec<u8>> {
        let cells = EvidenceAssembler::<Vec<u8>, Vec<u8>>::cells_of(size);
        EvidenceAssembler::new(
            head(size),
            std::vec![0; size],
            std::vec![0; cells.div_ceil(8)],
        )
        .unwrap()
    }

    /// A file of pages partly filled, as the kernel hands them out.
    fn sparse_file() -> impl Strategy<Value = Vec<u8>> {
        (
            1usize..12_000,
            proptest::collection::vec((0usize..12_000, 1usize..900, 1u8..), 0..12),
        )
            .prop_map(|(size, runs)| {
                let mut f = std::vec![0u8; size];
                for (at, len, b) in runs {
                    let at = at % size;
                    let end = (at + len).min(size);
                    f[at..end].fill(b);
                }
                f
            })
    }

    proptest! {
        #![proptest_config(crate::proptest_cases::config(256))]

        /// Whatever is lost, repeated or swapped, the assembler's file is
        /// the sent one where it says it is complete, and incomplete
        /// exactly when a part it needed was lost; it never holds a byte
        /// the file does not.
        #[test]
        fn parts_lost_repeated_or_swapped_give_the_file_or_say_incomplete(
            file in sparse_file(),
            lose in proptest::collection::vec(any::<bool>(), 64),
            repeat in proptest::collection::vec(0usize..64, 0..8),
            seed in any::<u64>(),
        ) {
            let all: Vec<EvidencePart> = parts(&file, 1, 42).collect();
            let mut sent: Vec<&EvidencePart> = all
                .iter()
                .enumerate()
                .filter(|(i, _)| !lose[i % lose.len()])
                .map(|(_, p)| p)
                .collect();
            let lost = all.len() - sent.len();
            for r in &repeat {
                if let Some(p) = all.get(r % all.len().max(1)) {
                    sent.push(p);
                }
            }
            // a shuffle from the seed
            let mut s = seed | 1;
            for i in (1..sent.len()).rev() {
                s ^= s << 13; s ^= s >> 7; s ^= s << 17;
                sent.swap(i, (s % (i as u64 + 1)) as usize);
            }
            let mut a = assembler(file.len());
            for p in &sent {
                a.add(p).unwrap();
            }
            let repeated_in = all.iter().filter(|p| sent.iter().any(|q| q == p)).count();
            prop_assert_eq!(a.is_complete(), repeated_in == all.len());
            if lost == 0 {
                prop_assert!(a.is_complete());
            }
            if a.is_complete() {
                prop_assert_eq!(a.bytes(), &file[..]);
            }
            // every byte held is the file's, or a zero not yet received
            for (got, want) in a.bytes().iter().zip(&file) {
                prop_assert!(*got == *want || *got == 0);
            }
        }
    }

    #[test]
    fn parts_that_do_not_belong_are_refused_and_change_nothing() {
        let file = std::vec![7u8; 1500];
        let good: Vec<EvidencePart> = parts(&file, 1, 42).collect();
        let mut a = assembler(1500);
        let mut wrong = good[0].clone();
        wrong.cycle = 43;
        assert!(a.add(&wrong).is_err());
        for (offset, next, len) in [
            (1, 512, 10),
            (1536, 1536, 1),
            (1024, 1600, 10),
            (0, 100, 512),
            (1024, 1500, 480),
        ] {
            let p = EvidencePart {
                offset,
                next,
                data: heapless::Vec::from_slice(&std::vec![1u8; len]).unwrap(),
                ..good[0].clone()
            };
            assert!(a.add(&p).is_err(), "{offset} {next} {len}");
        }
        assert_eq!(a.missing(), 3);
        assert!(a.bytes().iter().all(|&b| b == 0));
        for p in &good {
            a.add(p).unwrap();
        }
        assert!(a.is_complete());
        assert_eq!(a.bytes(), &file[..]);
    }

    #[test]
    fn an_empty_file_is_one_empty_part_and_memory_too_small_is_refused() {
        let p: Vec<_> = parts(&[], 0, 0).collect();
        assert!(p.is_empty());
        let mut a = EvidenceAssembler::new(EvidenceHead::default(), [0u8; 0], [0u8; 0]).unwrap();
        assert!(a.is_complete());
        assert!(a.add(&EvidencePart::default()).is_err());
        assert!(EvidenceAssembler::new(head(600), [0u8; 512], [0u8; 1]).is_err());
        assert!(EvidenceAssembler::new(
            head(600 * 8 * 512),
            std::vec![0u8; 600 * 8 * 512],
            [0u8; 1]
        )
        .is_err());
    }
}
