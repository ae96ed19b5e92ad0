//! The live view: cyclictest's `T:` lines under a header, redrawn in place
//! on a terminal or printed per report otherwise, and the SIGUSR1 status.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use super::{Options, Sender, View};
use crate::config::ThreadPlan;
use crate::linux::procfs;
use crate::output::text;
use crate::output::{Std, TextOut};
use crate::rt::Shared;

/// Human output buffer; flushed before it would grow.
pub(super) const HUMAN_BUF: usize = 16 * 1024;

/// The sender's human output.
pub(super) struct Live {
    /// The console's human stream.
    pub(super) out: TextOut,
    /// Status lines and notes, on standard error.
    pub(super) err: TextOut,
    policy: &'static str,
    drawn: bool,
}

impl Live {
    pub(super) fn new(opts: &Options) -> Live {
        Live {
            out: TextOut::new(opts.console.human, HUMAN_BUF),
            err: TextOut::new(Std::Err, 4 * 1024),
            policy: opts.policy,
            drawn: false,
        }
    }

    /// Whether the live view was drawn on the terminal.
    pub(super) fn drawn(&self) -> bool {
        self.drawn
    }

    /// Write what is buffered.
    pub(super) fn flush(&mut self) {
        self.out.flush();
        self.err.flush();
    }

    /// One `T:` line per thread, as of the last figures.
    pub(super) fn plain_lines(
        &mut self,
        views: &[View],
        plans: &[ThreadPlan],
        shared: &[Box<Shared>],
        nsecs: bool,
    ) {
        thread_lines(&mut self.out.buf, views, plans, shared, nsecs);
    }
}

pub(super) fn thread_lines(
    out: &mut String,
    views: &[View],
    plans: &[ThreadPlan],
    shared: &[Box<Shared>],
    nsecs: bool,
) {
    for (t, v) in views.iter().enumerate() {
        let tid = shared[t].tid.load(Ordering::SeqCst);
        text::thread_line(out, &v.row(t, &plans[t], tid), nsecs);
        out.push('\n');
    }
}

impl Sender<'_> {
    /// Fresh counters of every thread.
    pub(super) fn live_counters(&mut self) {
        for (v, s) in self.views.iter_mut().zip(self.shared) {
            if v.snapshot(s) {
                v.counters = v.cur.counters;
            }
        }
    }

    /// Draw the live view (over the previous one).
    pub(super) fn redraw(&mut self) {
        self.live_counters();
        let out = &mut self.live.out.buf;
        if self.live.drawn {
            let _ = write!(out, "\x1b[{}A", self.views.len() + 2);
        }
        let mut la = [0u8; 128];
        text::header(out, self.live.policy, procfs::loadavg(&mut la));
        let nsecs = self.opts.nsecs;
        thread_lines(out, &self.views, &self.plans, self.shared, nsecs);
        self.live.drawn = true;
    }

    /// SIGUSR1: the current status on standard error.
    pub(super) fn status_to_stderr(&mut self) {
        self.live_counters();
        let mut err = std::mem::take(&mut self.live.err.buf);
        self.status_block(&mut err, "latscope");
        self.live.err.buf = err;
    }

    /// The current status as cyclictest frames it (SIGUSR1, SIGUSR2):
    /// `# <who> current status:` and one `T:` line per thread between
    /// dashed lines.
    pub(super) fn status_block(&self, out: &mut String, who: &str) {
        out.push_str("#---------------------------\n# ");
        out.push_str(who);
        out.push_str(" current status:\n");
        thread_lines(out, &self.views, &self.plans, self.shared, self.opts.nsecs);
        out.push_str("#---------------------------\n");
    }
}
