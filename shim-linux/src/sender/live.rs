//! The live view: cyclictest's `T:` lines under a header, redrawn in place
//! every tick (on a terminal, and into a file or pipe with the same cursor
//! moves, as cyclictest writes them), and the SIGUSR1 status.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use latscope_core::cyclictest::{self, Thread};

use super::{Options, Sender, View};
use crate::config::ThreadPlan;
use crate::linux::procfs;
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

    /// Write what is buffered.
    pub(super) fn flush(&mut self) {
        self.out.flush();
        self.err.flush();
    }
}

/// The formatter's view of every thread, as of the last figures.
pub(super) fn threads<'v>(
    views: &'v [View],
    plans: &[ThreadPlan],
    shared: &[Shared],
    nodes: &[i32],
) -> Vec<Thread<'v>> {
    views
        .iter()
        .enumerate()
        .map(|(t, v)| {
            let tid = shared[t].tid.load(Ordering::SeqCst);
            v.thread(t, &plans[t], tid, nodes.get(t).copied().unwrap_or(-1))
        })
        .collect()
}

/// One `T:` line per thread.
pub(super) fn thread_lines(out: &mut String, threads: &[Thread<'_>], nsecs: bool) {
    for t in threads {
        // a String takes every write
        let _ = cyclictest::status_line(out, t, nsecs);
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
        let _ = cyclictest::live_header(out, self.live.policy, procfs::loadavg(&mut la));
        let t = threads(&self.views, &self.plans, self.shared, &self.nodes);
        thread_lines(out, &t, self.opts.nsecs);
        self.live.drawn = true;
    }

    /// SIGUSR1: cyclictest's status block on standard error.
    pub(super) fn status_to_stderr(&mut self) {
        self.live_counters();
        let t = threads(&self.views, &self.plans, self.shared, &self.nodes);
        let _ = cyclictest::status_block(&mut self.live.err.buf, &t, self.opts.nsecs);
    }
}
