//! The status other programs ask a running latscope for, as they ask
//! cyclictest: SIGUSR2 rewrites `/dev/shm/cyclictest<PID>` (what rt-tests'
//! `get_cyclictest_snapshot` prints), and `-F` hands the `T:` lines to
//! whoever has the named pipe open. Both are served here, on the sender
//! thread, never on a measuring thread.

use latscope_core::cyclictest;

use super::live::{thread_lines, threads};
use super::Sender;
use crate::linux::status_files::{self, Snapshot};
use crate::output::Std;

/// The snapshot file and the named pipe of a run.
pub(super) struct StatusFiles<'a> {
    snapshot: Option<&'a Snapshot>,
    fifo: Option<String>,
    /// The text being written (reused).
    text: String,
}

impl<'a> StatusFiles<'a> {
    pub(super) fn new(snapshot: Option<&'a Snapshot>, fifo: Option<String>) -> Self {
        StatusFiles {
            snapshot,
            fifo,
            text: String::with_capacity(4096),
        }
    }
}

impl Sender<'_> {
    /// SIGUSR2: the current status, in cyclictest 2.4's words, replaces
    /// the snapshot file's content.
    pub(super) fn snapshot(&mut self) {
        let Some(file) = self.status.snapshot else {
            Std::Err.write(b"latscope: SIGUSR2: there is no snapshot file to write\n");
            return;
        };
        self.live_counters();
        let mut text = std::mem::take(&mut self.status.text);
        text.clear();
        let t = threads(&self.views, &self.plans, self.shared, &self.nodes);
        // a String takes every write
        let _ = cyclictest::status_block(&mut text, &t, self.opts.nsecs);
        if let Err(e) = file.replace(text.as_bytes()) {
            Std::Err.write(format!("latscope: writing the snapshot file: {e}\n").as_bytes());
        }
        self.status.text = text;
    }

    /// `-F`: if a reader has the pipe open, the `T:` lines of every thread
    /// (as cyclictest's fifo thread writes them).
    pub(super) fn offer_fifo(&mut self) {
        let Some(path) = self.status.fifo.as_deref() else {
            return;
        };
        let fd = match status_files::fifo_reader(path) {
            Ok(Some(fd)) => fd,
            Ok(None) => return,
            Err(e) => {
                Std::Err
                    .write(format!("latscope: -F {path}: {e}; no more status there\n").as_bytes());
                self.status.fifo = None;
                return;
            }
        };
        self.live_counters();
        let mut text = std::mem::take(&mut self.status.text);
        text.clear();
        let t = threads(&self.views, &self.plans, self.shared, &self.nodes);
        thread_lines(&mut text, &t, self.opts.nsecs);
        // a reader that went away meanwhile is no error
        let _ = status_files::write_fifo(fd, text.as_bytes());
        self.status.text = text;
    }
}
