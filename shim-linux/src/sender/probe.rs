//! `--self-check-probe`: every forbidden process-creation request once,
//! while the self-check's filter is on, each reported on standard error and
//! in the stream (the filter counts each as a defect).

use latscope_core::wire::{bounded, Body, Level, LogLine};

use super::Sender;
use crate::linux::sys::probe_process_creation;

impl Sender<'_> {
    pub(super) fn probe(&mut self) {
        for (name, result) in probe_process_creation() {
            let text = match result {
                Err(e) => format!("self-check probe: {name} refused ({e})"),
                Ok(()) => format!("self-check probe: {name} was NOT refused"),
            };
            let err = &mut self.live.err.buf;
            err.push_str("# ");
            err.push_str(&text);
            err.push('\n');
            self.publish.send(Body::Log(LogLine {
                level: Level::Warn,
                text: bounded(&text),
            }));
        }
    }
}
