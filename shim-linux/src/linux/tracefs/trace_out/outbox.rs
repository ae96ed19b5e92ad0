//! `--trace-out-stream`: windows waiting to go on the stream, each as an
//! [`EvidenceHead`] and its parts, a part at a time as the line's
//! evidence share has room.

use std::collections::VecDeque;
use std::sync::Arc;

use latscope_core::protocol::part_from;
use latscope_core::wire::{Body, EvidenceHead, EVIDENCE_PART};

/// Windows waiting at most; one more is counted as not streamed.
pub(super) const OUTBOX: usize = 2;

/// One window on its way.
#[derive(Debug)]
struct Outgoing {
    head: EvidenceHead,
    file: Arc<Vec<u8>>,
    /// The head went.
    head_sent: bool,
    /// The cell the next part begins at or after.
    cell: usize,
}

/// The windows waiting to be streamed, oldest first.
#[derive(Debug, Default)]
pub(super) struct Outbox {
    waiting: VecDeque<Outgoing>,
}

impl Outbox {
    /// Queues `file` with `head`; false if the outbox is full.
    pub(super) fn push(&mut self, head: EvidenceHead, file: Arc<Vec<u8>>) -> bool {
        if self.waiting.len() >= OUTBOX {
            return false;
        }
        self.waiting.push_back(Outgoing {
            head,
            file,
            head_sent: false,
            cell: 0,
        });
        true
    }

    /// Whether a frame is waiting.
    pub(super) fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// The next frame to send, and whether it finished a window.
    pub(super) fn next(&mut self) -> Option<(Body, bool)> {
        let o = self.waiting.front_mut()?;
        if !o.head_sent {
            o.head_sent = true;
            return Some((Body::EvidenceHead(o.head), o.file.is_empty()));
        }
        let Some(p) = part_from(&o.file, o.head.thread, o.head.cycle, o.cell) else {
            self.waiting.pop_front();
            return self.next();
        };
        o.cell = (p.next as usize).div_ceil(EVIDENCE_PART);
        let done = p.next as usize >= o.file.len();
        if done {
            self.waiting.pop_front();
        }
        Some((Body::EvidencePart(p), done))
    }

    /// Windows left, dropped (the run ends).
    pub(super) fn clear(&mut self) -> usize {
        let n = self.waiting.len();
        self.waiting.clear();
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_core::protocol::EvidenceAssembler;

    #[test]
    fn a_window_goes_as_its_head_then_its_parts_and_reassembles() {
        let mut file = vec![0u8; 5000];
        file[..40].fill(1);
        file[4000] = 2;
        let head = EvidenceHead {
            thread: 1,
            cycle: 9,
            size: 5000,
            ..EvidenceHead::default()
        };
        let mut o = Outbox::default();
        assert!(o.push(head, Arc::new(file.clone())));
        assert!(o.push(head, Arc::new(file.clone())));
        assert!(!o.push(head, Arc::new(file.clone())), "the outbox holds 2");
        let mut a = EvidenceAssembler::new(head, vec![0u8; 5000], vec![0u8; 2]).unwrap();
        let (mut frames, mut done) = (0, 0);
        while let Some((b, finished)) = o.next() {
            frames += 1;
            done += usize::from(finished);
            match b {
                Body::EvidenceHead(h) => assert_eq!(h, head),
                Body::EvidencePart(p) => a.add(&p).unwrap(),
                other => panic!("{other:?}"),
            }
        }
        // each window: a head and two parts (the empty cells between skipped)
        assert_eq!((frames, done), (6, 2));
        assert!(a.is_complete() && o.is_empty());
        assert_eq!(a.bytes(), &file[..]);
    }
}
