//! One input's decoding: bytes in, frames into the [`Aggregator`], and the
//! faults of the input (truncation, garbage, another protocol version)
//! described in one line each.

use latscope_core::wire::{DecodeError, Decoder, LinkStats, MAX_FRAME, PROTOCOL_VERSION};

use crate::aggregate::Aggregator;
use crate::error::Error;

/// Decoder and aggregator for one input.
pub struct Session {
    /// What is being read, for messages.
    pub name: String,
    dec: Box<Decoder<MAX_FRAME>>,
    /// The runs decoded so far.
    pub agg: Aggregator,
    /// Protocol version of the first frame from another version, if any.
    pub other_version: Option<u8>,
    /// Bytes of an incomplete frame at the end of the input.
    pub truncated: usize,
}

impl Session {
    /// A session for the input called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Session {
            name: name.into(),
            dec: Box::new(Decoder::new()),
            agg: Aggregator::new(),
            other_version: None,
            truncated: 0,
        }
    }

    /// Decode `bytes`, in any chunking.
    pub fn feed(&mut self, bytes: &[u8]) {
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
                Some(Err(_)) | None => {}
            }
        }
    }

    /// Link statistics so far.
    pub fn link(&self) -> LinkStats {
        *self.dec.stats()
    }

    /// End of input: apply pending parts and note a truncated last frame.
    pub fn finish(&mut self) {
        self.truncated = self.dec.pending();
        self.agg.finish();
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
    pub fn warnings(&self) -> Vec<String> {
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
                "{}: no hello frame decoded: target and settings unknown, default bucket layout assumed",
                self.name
            ));
        }
        if self.agg.before_hello > 0 {
            w.push(format!(
                "{}: {} frame(s) arrived before the first hello and were not used",
                self.name, self.agg.before_hello
            ));
        }
        for run in &self.agg.runs {
            if let Some(l) = run.illegal_layout {
                w.push(format!(
                    "{}: run {:016x} declares a histogram layout no latscope target produces \
                     ({} µs linear, {} buckets; at most {} µs and {}); the default layout is assumed",
                    self.name,
                    run.hello.run_id,
                    l.linear_us,
                    l.buckets,
                    latscope_core::layout::MAX_LINEAR_US,
                    latscope_core::layout::MAX_TARGET_BUCKETS
                ));
            }
            if run.bye.is_none() {
                let exact = match run.exact_epoch() {
                    Some(e) => format!("histograms exact as of report {e}"),
                    None => "no report was complete".to_string(),
                };
                w.push(format!(
                    "{}: run {:016x} from {} ended without a bye (target killed or link lost); {exact}",
                    self.name,
                    run.hello.run_id,
                    run.hostname()
                ));
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

/// The one line for a stream from another protocol version.
pub fn version_line(v: u8) -> String {
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
