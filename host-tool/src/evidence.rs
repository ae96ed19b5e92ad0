//! A spike's evidence from the stream (protocol version 4): the
//! [`EvidenceHead`] and [`EvidencePart`] frames of each window put
//! together with core's [`EvidenceAssembler`], in memory charged to the
//! run's budget, into the trace.dat the target sent and the sidecar it
//! writes beside its own files. The recorder writes each complete one
//! beside the recording; a report lists them with their spikes.
//!
//! The run's budget is what the largest legal run's histograms cost
//! (`crate::budget`), and a typical run uses little of it: its windows
//! (two at once, 2 MiB each at most) fit beside it. A run that filled
//! its histograms' budget has its windows refused, and counted.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use latscope_core::protocol::EvidenceAssembler;
use latscope_core::wire::{EvidenceHead, EvidencePart};

use crate::budget::{Budget, Charge};
use crate::console;
use crate::session::Session;

/// The largest window a head may announce: 1 MiB of pages and as much of
/// formats, cmdlines and header (a target's is at most 1 MiB of pages).
pub(crate) const FILE_MAX: usize = 2 << 20;

/// Windows put together at once per run (a target streams them one
/// after the other, from an outbox of two).
pub(crate) const IN_FLIGHT: usize = 2;

/// Windows a run keeps the names and fates of, for its report.
const LISTED: usize = 256;

/// What became of one window of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    /// The head.
    pub head: EvidenceHead,
    /// Complete: every part came.
    pub complete: bool,
}

impl Listed {
    /// The file's name, as the target names its own:
    /// `latscope-t0-cpu1-c1609.dat`.
    pub(crate) fn name(&self) -> String {
        file_name(&self.head)
    }
}

/// The name of the trace.dat of `head`, as the target names its own.
pub(crate) fn file_name(head: &EvidenceHead) -> String {
    format!("{}.dat", head.stem())
}

/// The sidecar of `head`, as the target writes it beside its own files.
pub(crate) fn sidecar(head: &EvidenceHead) -> String {
    let mut s = String::new();
    // a String takes every write
    let _ = head.write_sidecar(&mut s, "mono");
    s
}

/// A window put together whole.
#[derive(Debug)]
pub(crate) struct Done {
    /// Its head.
    pub head: EvidenceHead,
    /// The trace.dat.
    pub bytes: Vec<u8>,
    _charge: Charge,
}

#[derive(Debug)]
struct Pending {
    asm: EvidenceAssembler<Vec<u8>, Vec<u8>>,
    _charge: Charge,
}

/// One run's windows: those being put together, those done and not yet
/// taken (by a recorder), and the list of all with their fates.
#[derive(Debug, Default)]
pub(crate) struct Evidence {
    pending: Vec<Pending>,
    done: Vec<Done>,
    listed: Vec<Listed>,
    /// Windows not listed (past [`LISTED`]).
    pub unlisted: u64,
    /// Heads refused: too large, too many at once, or the budget.
    pub refused: u64,
    /// Parts of no window being put together, or that do not fit theirs.
    pub stray_parts: u64,
    /// Keep the bytes of windows done, for [`Evidence::take_done`].
    pub keep: bool,
}

impl Evidence {
    /// A window begins. One of the same spike already begun starts over
    /// (a target that resent it after a reconnect).
    pub(crate) fn on_head(&mut self, head: &EvidenceHead, budget: &Arc<Budget>) {
        self.pending
            .retain(|p| (p.asm.head().thread, p.asm.head().cycle) != (head.thread, head.cycle));
        let size = head.size as usize;
        let cells = EvidenceAssembler::<Vec<u8>, Vec<u8>>::cells_of(size).div_ceil(8);
        let charge = (size <= FILE_MAX && self.pending.len() < IN_FLIGHT)
            .then(|| Charge::take(budget, size + cells))
            .flatten();
        let Some(charge) = charge else {
            self.refused += 1;
            self.list(*head, false);
            return;
        };
        match EvidenceAssembler::new(*head, vec![0u8; size], vec![0u8; cells]) {
            Ok(asm) => self.pending.push(Pending {
                asm,
                _charge: charge,
            }),
            Err(_) => self.refused += 1,
        }
        if size == 0 {
            self.complete(self.pending.len() - 1);
        }
    }

    /// A part of a window: added to its window, which is done when whole.
    pub(crate) fn on_part(&mut self, part: &EvidencePart) {
        let Some(i) = self
            .pending
            .iter()
            .position(|p| (p.asm.head().thread, p.asm.head().cycle) == (part.thread, part.cycle))
        else {
            self.stray_parts += 1;
            return;
        };
        if self.pending[i].asm.add(part).is_err() {
            self.stray_parts += 1;
        } else if self.pending[i].asm.is_complete() {
            self.complete(i);
        }
    }

    fn complete(&mut self, i: usize) {
        let p = self.pending.swap_remove(i);
        let head = *p.asm.head();
        self.list(head, true);
        if self.keep {
            self.done.push(Done {
                head,
                bytes: p.asm.bytes().to_vec(),
                _charge: p._charge,
            });
        }
    }

    fn list(&mut self, head: EvidenceHead, complete: bool) {
        if self.listed.len() < LISTED {
            self.listed.push(Listed { head, complete });
        } else {
            self.unlisted += 1;
        }
    }

    /// The windows done since the last call, with their bytes (only with
    /// [`Evidence::keep`]).
    pub(crate) fn take_done(&mut self) -> Vec<Done> {
        std::mem::take(&mut self.done)
    }

    /// The stream ended: windows still being put together are listed as
    /// incomplete.
    pub(crate) fn finish(&mut self) {
        for p in std::mem::take(&mut self.pending) {
            let head = *p.asm.head();
            self.list(head, false);
        }
    }

    /// Every window listed, in the order it began or ended.
    pub(crate) fn listed(&self) -> &[Listed] {
        &self.listed
    }
}

/// Where the evidence of `recording` goes: `RECORDING.evidence/`.
pub(crate) fn dir_beside(recording: &Path) -> PathBuf {
    let mut d = recording.as_os_str().to_owned();
    d.push(".evidence");
    PathBuf::from(d)
}

/// Writes each window `s` has put together whole since the last call
/// into the directory beside `recording`, with its sidecar; a failed
/// write is one line on standard error (the recording is unharmed).
pub(crate) fn write_beside(s: &mut Session, recording: &Path) {
    let done = s.agg.take_evidence();
    if done.is_empty() {
        return;
    }
    let dir = dir_beside(recording);
    for d in done {
        let dat = dir.join(file_name(&d.head));
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&dat, &d.bytes))
            .and_then(|()| std::fs::write(dat.with_extension("json"), sidecar(&d.head)));
        match written {
            Ok(()) => console::say(format_args!(
                "{}: evidence of T:{} cycle {} ({} bytes)",
                dat.display(),
                d.head.thread,
                d.head.cycle,
                d.bytes.len()
            )),
            Err(e) => console::warn(format_args!("{}: not written: {e}", dat.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_core::protocol::parts;

    fn head(size: usize, cycle: u64) -> EvidenceHead {
        EvidenceHead {
            thread: 0,
            cpu: 1,
            cycle,
            size: size as u32,
            ..EvidenceHead::default()
        }
    }

    #[test]
    fn a_window_whole_is_done_and_listed_one_cut_short_is_listed_incomplete() {
        let budget = Budget::stream();
        let mut e = Evidence {
            keep: true,
            ..Evidence::default()
        };
        let file: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
        e.on_head(&head(3000, 7), &budget);
        e.on_head(&head(3000, 8), &budget);
        for p in parts(&file, 0, 7) {
            e.on_part(&p);
        }
        for p in parts(&file, 0, 8).take(2) {
            e.on_part(&p);
        }
        let done = e.take_done();
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].bytes, file);
        assert_eq!(file_name(&done[0].head), "latscope-t0-cpu1-c7.dat");
        e.finish();
        let fates: Vec<(u64, bool)> = e
            .listed()
            .iter()
            .map(|l| (l.head.cycle, l.complete))
            .collect();
        assert_eq!(fates, [(7, true), (8, false)]);

        // the memory came back
        drop(done);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn heads_too_large_or_too_many_are_refused_and_stray_parts_counted() {
        let budget = Budget::stream();
        let mut e = Evidence::default();
        e.on_head(&head(FILE_MAX + 1, 1), &budget);
        for c in 2..5 {
            e.on_head(&head(1000, c), &budget);
        }
        assert_eq!(
            e.refused, 2,
            "one too large, one past {IN_FLIGHT} in flight"
        );
        let file = vec![1u8; 1000];
        for p in parts(&file, 0, 99) {
            e.on_part(&p);
        }
        assert_eq!(e.stray_parts, 2);
        // without keep, a window done is listed but not held
        for p in parts(&file, 0, 2) {
            e.on_part(&p);
        }
        assert!(e.take_done().is_empty());
        assert!(e.listed().iter().any(|l| l.head.cycle == 2 && l.complete));
    }
}
