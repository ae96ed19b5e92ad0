//! `-v`: every sample as cyclictest prints it, `thread:cycle:value`.

use std::fmt::Write;

use super::live::HUMAN_BUF;
use super::Sender;
use latscope_core::cyclictest;

impl Sender<'_> {
    /// cyclictest's header of the `-v` output (its CPU counts come first,
    /// at start-up).
    pub(super) fn verbose_header(&mut self) {
        let out = &mut self.live.out.buf;
        for (i, p) in self.plans.iter().enumerate() {
            let _ = writeln!(out, "Thread {i} Interval: {}", p.interval_us);
        }
    }

    /// The queued samples of every thread, as lines.
    pub(super) fn drain_verbose(&mut self) {
        let nsecs = self.opts.nsecs;
        for (t, q) in self.verbose.iter_mut().enumerate() {
            while let Some((cycle, lat)) = q.dequeue() {
                let _ =
                    cyclictest::verbose_line(&mut self.live.out.buf, t as u16, cycle, lat, nsecs);
                if self.live.out.buf.len() > HUMAN_BUF - 256 {
                    self.live.out.flush();
                }
            }
        }
    }
}
