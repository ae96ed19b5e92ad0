//! One input's decoding: bytes in, frames into the `Aggregator`, and the
//! faults of the input (truncation, garbage, another protocol version)
//! described in one line each.

use latscope_core::wire::{DecodeError, Decoder, LinkStats, MAX_FRAME, PROTOCOL_VERSION};

use std::sync::Arc;

use crate::aggregate::{Aggregator, Run};
use crate::budget::{Budget, RUN_LIMIT};
use crate::error::Error;

/// Decoder and aggregator for one input.
pub struct Session {
    /// What is being read, for messages.
    pub(crate) name: String,
    dec: Box<Decoder<MAX_FRAME>>,
    /// The runs decoded so far.
    pub(crate) agg: Aggregator,
    /// Protocol version of the first frame from another version, if any.
    pub(crate) other_version: Option<u8>,
    /// Bytes of an incomplete frame at the end of the input.
    pub(crate) truncated: usize,
    /// Frames that failed their check before the first run began.
    pub(crate) damaged_before_hello: u64,
    /// The start of the input, kept until a frame decodes (bounded), to
    /// tell a recording cut inside its hello.
    head: Vec<u8>,
    /// Whether the input has ended.
    pub(crate) finished: bool,
}

/// Bytes of the input's start kept to describe a recording without a
/// single whole frame: a hello, with room for its delimiters.
const HEAD_KEPT: usize = MAX_FRAME + 16;

impl Session {
    /// A session for the input called `name`, with a stream's memory
    /// budget of its own.
    pub fn new(name: impl Into<String>) -> Self {
        Session::with_budget(name, Budget::stream())
    }

    /// A session for the input called `name` that charges what it keeps
    /// to `budget` (a recorder's connection).
    pub(crate) fn with_budget(name: impl Into<String>, budget: Arc<Budget>) -> Self {
        Session {
            name: name.into(),
            dec: Box::new(Decoder::new()),
            agg: Aggregator::with_budget(budget),
            other_version: None,
            truncated: 0,
            damaged_before_hello: 0,
            head: Vec::new(),
            finished: false,
        }
    }

    /// Count the samples above the limits of latency goals `goals` in every run (before the
    /// first bytes: `report --slo`).
    pub(crate) fn set_goals(&mut self, goals: std::sync::Arc<latscope_core::slo::Goals>) {
        self.agg.set_goals(goals);
    }

    /// Decode `bytes`, in any chunking.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.dec.stats().frames == 0 && self.head.len() < HEAD_KEPT {
            let room = HEAD_KEPT - self.head.len();
            self.head
                .extend_from_slice(bytes.get(..room.min(bytes.len())).unwrap_or(&[]));
        } else if !self.head.is_empty() {
            self.head = Vec::new();
        }
        let mut rest = bytes;
        while !rest.is_empty() {
            // By reference: a frame is kilobytes (the hello dominates) and
            // most are tens of bytes on the wire.
            let (ev, r) = self.dec.feed_ref(rest);
            rest = r;
            match ev {
                Some(Ok(frame)) => self.agg.frame(frame),
                Some(Err(DecodeError::UnknownVersion(v))) => {
                    self.other_version.get_or_insert(v);
                }
                Some(Err(_)) if self.agg.runs.is_empty() => self.damaged_before_hello += 1,
                Some(Err(_)) | None => {}
            }
        }
    }

    /// Link statistics so far.
    pub(crate) fn link(&self) -> LinkStats {
        *self.dec.stats()
    }

    /// End of input: apply pending parts and note a truncated last frame.
    pub fn finish(&mut self) {
        self.truncated = self.dec.pending();
        self.agg.finish();
        self.finished = true;
    }

    /// The fatal fault of this input, if it has no run to report.
    pub fn fatal(&self) -> Option<Error> {
        let link = self.link();
        if !self.agg.runs.is_empty() {
            return None;
        }
        if let Some(detail) = &self.agg.schema_mismatch {
            return Some(Error::Version {
                what: self.name.clone(),
                detail: detail.clone(),
            });
        }
        if let Some(v) = self.other_version {
            return Some(Error::Version {
                what: self.name.clone(),
                detail: version_line(v),
            });
        }
        let whole_head = link.bytes == self.head.len() as u64;
        if link.frames == 0 && self.truncated > 0 && whole_head && cut_hello(&self.head) {
            return Some(Error::TruncatedHello {
                what: self.name.clone(),
                bytes: self.truncated,
            });
        }
        if link.frames == 0 {
            return Some(Error::NotAStream {
                what: self.name.clone(),
                bytes: link.bytes,
            });
        }
        Some(Error::NoRun {
            what: self.name.clone(),
        })
    }

    /// One-line warnings about this input (shown on stderr and in reports).
    pub(crate) fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        let link = self.link();
        if let Some(v) = self.other_version {
            w.push(format!(
                "{}: {} frame(s) skipped: {}",
                self.name,
                link.unknown_version,
                version_line(v)
            ));
        }
        if let Some(detail) = &self.agg.schema_mismatch {
            w.push(format!("{}: {detail}", self.name));
        }
        if self.truncated > 0 {
            w.push(format!(
                "{}: truncated: the input ends inside a frame ({} bytes); everything before it is kept",
                self.name, self.truncated
            ));
        }
        if self.agg.hello_lost {
            w.push(format!(
                "{}: the run's hello frame was never decoded ({}): target and settings unknown, default bucket layout assumed",
                self.name,
                match self.damaged_before_hello {
                    0 => "it is missing".to_string(),
                    n => format!("{n} frame(s) before the first whole one failed their check"),
                }
            ));
        }
        if self.agg.before_hello > 0 {
            w.push(format!(
                "{}: {} frame(s) arrived before the first hello and were not used",
                self.name, self.agg.before_hello
            ));
        }
        self.budget_warnings(&mut w);
        let runs = self.agg.runs.len();
        for (i, run) in self.agg.runs.iter().enumerate() {
            // the current run of a live input has not ended yet
            let ended = self.finished || i + 1 < runs;
            if run.bye.is_none() && ended {
                w.push(self.no_bye(run));
            }
        }
        let lost = link.crc_errors + link.oversize + link.malformed + link.frames_lost;
        if lost > 0 {
            w.push(format!(
                "{}: link errors: {} CRC, {} oversize, {} malformed, {} frames lost in {} gaps, {} bytes skipped",
                self.name,
                link.crc_errors,
                link.oversize,
                link.malformed,
                link.frames_lost,
                link.seq_gaps,
                link.bytes_skipped
            ));
        }
        w
    }
}

impl Session {
    /// The line for a run that ended without its bye.
    fn no_bye(&self, run: &Run) -> String {
        let exact = match run.exact_epoch() {
            Some(e) => format!("histograms exact as of report {e}"),
            None => "no report was complete".to_string(),
        };
        format!(
            "{}: run {:016x} from {} ended without a bye (target killed or link lost); {exact}",
            self.name,
            run.hello.run_id,
            run.hostname()
        )
    }

    /// What the input asked for that no target sends, or that its memory
    /// budget did not hold.
    fn budget_warnings(&self, w: &mut Vec<String>) {
        let a = &self.agg;
        let mib = |b: usize| b as f64 / f64::from(1 << 20);
        if a.impossible > 0 {
            w.push(format!(
                "{}: {} hello(s) no latscope target can send (a histogram layout or thread \
                 table beyond any target's) rejected; their runs' frames ignored",
                self.name, a.impossible
            ));
        }
        let limit = mib(a.budget().limit());
        if a.refused_runs > 0 {
            w.push(format!(
                "{}: {} run(s) not kept and {} frame(s) ignored: this input's memory budget \
                 ({limit:.0} MiB, {:.2} times the largest run a target sends, {:.0} MiB) \
                 is used up",
                self.name,
                a.refused_runs,
                a.ignored,
                a.budget().limit() as f64 / RUN_LIMIT as f64,
                mib(RUN_LIMIT)
            ));
        }
        for run in a.runs.iter().filter(|r| r.refused() > 0) {
            w.push(format!(
                "{}: run {:016x}: histograms incomplete: {} count(s) or frame(s) not kept: \
                 the memory budget (a run {:.0} MiB, what no target's run needs; this input \
                 {limit:.0} MiB) is used up",
                self.name,
                run.hello.run_id,
                run.refused(),
                mib(RUN_LIMIT)
            ));
        }
    }
}

/// Whether `head`, an input without a single whole frame, ends inside a
/// hello: the bytes after its last delimiter, COBS-decoded as far as they
/// go, start with a known protocol version, a sequence number and the
/// hello's variant (the first of [`latscope_core::wire::Body`]).
fn cut_hello(head: &[u8]) -> bool {
    let Some(start) = head.iter().rposition(|&b| b == 0) else {
        return false;
    };
    let frame = cobs_prefix(head.get(start + 1..).unwrap_or(&[]), 8);
    let Some((&version, rest)) = frame.split_first() else {
        return false;
    };
    // the sequence number: a varint of up to 5 bytes
    let Some(seq_len) = rest.iter().take(5).position(|b| b & 0x80 == 0) else {
        return false;
    };
    (1..=PROTOCOL_VERSION).contains(&version) && rest.get(seq_len + 1) == Some(&0)
}

/// The first `n` bytes (or fewer) that the COBS-encoded `enc` decodes to.
fn cobs_prefix(enc: &[u8], n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n);
    let mut i = 0;
    while let Some(&code) = enc.get(i) {
        if code == 0 {
            break;
        }
        let run = enc
            .get(i + 1..(i + usize::from(code)).min(enc.len()))
            .unwrap_or(&[]);
        out.extend_from_slice(run);
        i += usize::from(code);
        if code < 0xFF && i < enc.len() {
            out.push(0);
        }
        if out.len() >= n {
            break;
        }
    }
    out.truncate(n);
    out
}

/// The one line for a stream from another protocol version.
pub(crate) fn version_line(v: u8) -> String {
    if v > PROTOCOL_VERSION {
        format!(
            "stream uses protocol version {v}, newer than this latscope-host {} (version {PROTOCOL_VERSION}); upgrade latscope-host",
            env!("CARGO_PKG_VERSION")
        )
    } else {
        format!(
            "stream uses protocol version {v}, older than this latscope-host {} (version {PROTOCOL_VERSION}); use a matching latscope-host",
            env!("CARGO_PKG_VERSION")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{Synth, SynthConfig};

    #[test]
    fn a_run_still_streaming_has_not_ended() {
        let (bytes, _) = Synth::bytes(SynthConfig::default());
        let mut s = Session::new("live");
        s.feed(&bytes[..bytes.len() / 2]);
        let no_bye = |s: &Session| s.warnings().iter().any(|w| w.contains("without a bye"));
        assert!(!no_bye(&s), "{:?}", s.warnings());
        s.finish();
        assert!(no_bye(&s), "{:?}", s.warnings());
    }

    #[test]
    fn a_cut_hello_is_told_from_garbage() {
        let (bytes, _) = Synth::bytes(SynthConfig::default());
        let hello_end = bytes.iter().skip(1).position(|&b| b == 0).unwrap() + 1;
        for cut in [8, hello_end / 2, hello_end - 1] {
            let mut s = Session::new("cut");
            s.feed(&bytes[..cut]);
            s.finish();
            assert!(
                matches!(s.fatal(), Some(Error::TruncatedHello { .. })),
                "cut at {cut}: {:?}",
                s.fatal().map(|e| e.to_string())
            );
        }
        let mut s = Session::new("junk");
        s.feed(&[0, 7, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        s.finish();
        assert!(matches!(s.fatal(), Some(Error::NotAStream { .. })));
    }
}
