//! Whether a run's figures are complete: every cause that makes `report`,
//! `record` and `compare` exit 1 for a run that was read, each with its
//! one line. The list is the one `--help` and the manual give.

use latscope_core::wire::{ByeReason, LinkStats};

use crate::aggregate::Run;

/// Why a run's figures are incomplete, or what of it was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loss {
    /// Its hello never decoded: target and settings unknown.
    HelloLost,
    /// It ended without a bye (target killed or link lost).
    NoBye,
    /// Its bye says a setup or runtime error stopped it.
    ErrorEnding,
    /// Its bye counts self-check defects.
    Defects(u32),
    /// Its histograms are not exact as of its final report.
    NotExact,
    /// Frames missing from the input by its sequence numbers, never
    /// delivered later: `(frames, gaps)`.
    FramesLost(u64, u64),
    /// Frames the target could not deliver (its bye's count).
    TargetDropped(u64),
    /// Spike records the target's queue lost (counted in its statistics
    /// or aggregates, never delivered).
    SpikesDropped(u64),
    /// Spike records the target's aggregates say it sent that did not
    /// arrive: `(sent, received)`.
    SpikesMissing(u64, u64),
    /// Explanations the target's aggregates say it sent that did not
    /// arrive: `(sent, received)`.
    ExplanationsMissing(u64, u64),
    /// Counts or frames the input's memory budget did not hold.
    Budget(u64),
    /// Frames for threads beyond any target's, not used.
    UnknownThread(u64),
    /// Timerlat entries the target's trace lost (by sequence number), and
    /// pages of it that did not decode: `(entries, pages)`.
    TimerlatLost(u64, u64),
    /// Timerlat periods whose IRQ latency was above the thread's: a pairing
    /// the kernel rules out (a defect).
    TimerlatInverted(u64),
}

impl Loss {
    /// The one line that says it.
    pub(crate) fn message(&self) -> String {
        match *self {
            Loss::HelloLost => "its hello was lost: target and settings unknown".into(),
            Loss::NoBye => "no bye: the run's end is unknown".into(),
            Loss::ErrorEnding => "it ended with an error".into(),
            Loss::Defects(n) => format!("{n} self-check defect(s)"),
            Loss::NotExact => "its histograms are not exact at the end".into(),
            Loss::FramesLost(n, gaps) => {
                format!("{n} frame(s) lost in {gaps} sequence gap(s)")
            }
            Loss::TargetDropped(n) => format!("{n} frame(s) the target could not send"),
            Loss::SpikesDropped(n) => {
                format!("{n} spike record(s) the target could not queue")
            }
            Loss::SpikesMissing(sent, got) => {
                format!(
                    "{} spike record(s) sent but not received ({got} of {sent})",
                    sent - got
                )
            }
            Loss::ExplanationsMissing(sent, got) => {
                format!(
                    "{} explanation(s) sent but not received ({got} of {sent})",
                    sent - got
                )
            }
            Loss::Budget(n) => format!("{n} count(s) or frame(s) beyond the memory budget"),
            Loss::UnknownThread(n) => format!("{n} frame(s) for unknown threads"),
            Loss::TimerlatLost(n, 0) => format!("{n} timerlat entries lost by the target's trace"),
            Loss::TimerlatLost(n, pages) => format!(
                "{n} timerlat entries lost by the target's trace, and {pages} page(s) of it unreadable"
            ),
            Loss::TimerlatInverted(n) => format!(
                "{n} timerlat period(s) with the IRQ latency above the thread's (a defect)"
            ),
        }
    }
}

/// Everything incomplete or lost of `run`, read from an input whose link
/// statistics are `link` (a gap anywhere in the input counts against
/// every run of it: the host cannot tell whose frame it was).
pub(crate) fn losses(run: &Run, link: &LinkStats) -> Vec<Loss> {
    let mut v = Vec::new();
    if run.hello_lost {
        v.push(Loss::HelloLost);
    }
    match run.bye {
        None => v.push(Loss::NoBye),
        Some(b) => {
            if matches!(b.reason, ByeReason::Error) {
                v.push(Loss::ErrorEnding);
            }
            if b.defects > 0 {
                v.push(Loss::Defects(b.defects));
            }
            if b.frames_dropped > 0 {
                v.push(Loss::TargetDropped(b.frames_dropped));
            }
            if !run.exact_at_end() {
                v.push(Loss::NotExact);
            }
        }
    }
    if link.frames_lost > 0 {
        v.push(Loss::FramesLost(link.frames_lost, link.seq_gaps));
    }
    let mut dropped = 0u64;
    let (mut sent, mut got, mut explained) = (0u64, 0u64, 0u64);
    for t in &run.threads {
        let by_stats = t.stats().map_or(0, |s| s.dropped);
        match t.spike_account.latest {
            Some(a) => {
                dropped += a.spikes_dropped.max(by_stats);
                sent += a.spikes_sent;
                got += t.spikes.spike_total;
                explained += a.spikes_explained;
            }
            None => dropped += by_stats,
        }
    }
    if dropped > 0 {
        v.push(Loss::SpikesDropped(dropped));
    }
    if got < sent {
        v.push(Loss::SpikesMissing(sent, got));
    }
    if run.explained.total < explained {
        v.push(Loss::ExplanationsMissing(explained, run.explained.total));
    }
    if run.refused() > 0 {
        v.push(Loss::Budget(run.refused()));
    }
    if run.unknown_thread > 0 {
        v.push(Loss::UnknownThread(run.unknown_thread));
    }
    let (mut lost, mut pages, mut inverted) = (0u64, 0u64, 0u64);
    for s in run.threads.iter().filter_map(|t| t.timerlat_stats()) {
        lost = lost.saturating_add(s.lost());
        pages = pages.saturating_add(s.unreadable_pages);
        inverted = inverted.saturating_add(s.inverted);
    }
    if lost > 0 || pages > 0 {
        v.push(Loss::TimerlatLost(lost, pages));
    }
    if inverted > 0 {
        v.push(Loss::TimerlatInverted(inverted));
    }
    v
}

/// Whether `run` is complete: nothing of [`losses`].
pub(crate) fn complete(run: &Run, link: &LinkStats) -> bool {
    losses(run, link).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Session;
    use crate::synth::{Synth, SynthConfig};

    fn losses_of(bytes: &[u8]) -> Vec<Loss> {
        let mut s = Session::new("t");
        s.feed(bytes);
        s.finish();
        let run = s.agg.runs.first().expect("a run");
        losses(run, &s.link())
    }

    #[test]
    fn a_whole_run_is_complete_and_each_loss_is_named() {
        let (bytes, _) = Synth::bytes(SynthConfig::default());
        assert_eq!(losses_of(&bytes), []);
        // one frame in the middle taken out: its sequence number is missing
        let zeros: Vec<usize> = (0..bytes.len()).filter(|&i| bytes[i] == 0).collect();
        let k = (zeros.len() / 2..zeros.len() - 1)
            .find(|&k| zeros[k + 1] - zeros[k] > 1)
            .expect("a frame");
        let (a, b) = (zeros[k], zeros[k + 1]);
        let mut gap = bytes[..a].to_vec();
        gap.extend_from_slice(&bytes[b..]);
        assert!(
            losses_of(&gap).contains(&Loss::FramesLost(1, 1)),
            "{:?}",
            losses_of(&gap)
        );
        // cut before its bye: no bye, and the final figures never came
        let cut = &bytes[..zeros[zeros.len() - 4]];
        let l = losses_of(cut);
        assert!(l.contains(&Loss::NoBye), "{l:?}");
        for loss in l {
            assert!(!loss.message().is_empty());
        }
    }

    /// A timerlat run: complete when nothing was lost; entries the trace
    /// lost make it incomplete, as do its timerlat histograms' missing
    /// final figures.
    #[test]
    fn a_timerlat_run_is_incomplete_when_its_trace_lost_entries() {
        let cfg = SynthConfig {
            timerlat: true,
            ..SynthConfig::default()
        };
        let (bytes, _) = Synth::bytes(cfg.clone());
        assert_eq!(losses_of(&bytes), []);
        let (bytes, _) = Synth::bytes(SynthConfig {
            timerlat_lost_every: 500,
            ..cfg.clone()
        });
        let l = losses_of(&bytes);
        assert!(
            matches!(l.as_slice(), [Loss::TimerlatLost(n, 0)] if *n > 0),
            "{l:?}"
        );
        assert!(l[0].message().starts_with(&format!(
            "{} timerlat entries lost",
            match l[0] {
                Loss::TimerlatLost(n, _) => n,
                _ => 0,
            }
        )));
        // the timerlat frames of the final report taken out: not exact at
        // the end, though the threads' own histograms are
        let mut s = Session::new("t");
        let mut dec = Box::new(latscope_core::wire::Decoder::<
            { latscope_core::wire::MAX_FRAME },
        >::new());
        let (bytes, _) = Synth::bytes(cfg);
        let mut kept = Vec::new();
        let mut pos = 0;
        while pos < bytes.len() {
            let next = bytes[pos + 1..]
                .iter()
                .position(|&b| b == 0)
                .map_or(bytes.len(), |i| pos + 2 + i);
            let frame = &bytes[pos..next];
            let last_timerlat = dec.frames(frame).any(|f| {
                matches!(
                    f.map(|f| f.body),
                    Ok(latscope_core::wire::Body::TimerlatStats(s)) if s.last_report
                )
            });
            if !last_timerlat {
                kept.extend_from_slice(frame);
            }
            pos = next;
        }
        s.feed(&kept);
        s.finish();
        let run = s.agg.runs.first().expect("a run");
        assert!(run.threads.iter().all(|t| t.exact_now()));
        let l = losses(run, &s.link());
        assert!(l.contains(&Loss::NotExact), "{l:?}");
    }
}
