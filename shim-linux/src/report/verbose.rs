//! `-v`: every sample as cyclictest prints it, `thread:cycle:value`.

use std::fmt::Write;

use super::live::HUMAN_BUF;
use super::Sender;
use crate::linux::available_cpus;
use crate::output::text;

impl Sender<'_> {
    /// cyclictest's header of the `-v` output.
    pub(super) fn verbose_header(&mut self) {
        let out = &mut self.live.out.buf;
        let cpus = available_cpus().len();
        let _ = write!(out, "Max CPUs = {cpus}\nOnline CPUs = {cpus}\n");
        for (i, p) in self.plans.iter().enumerate() {
            let _ = writeln!(out, "Thread {i} Interval: {}", p.interval_us);
        }
    }

    /// The queued samples of every thread, as lines.
    pub(super) fn drain_verbose(&mut self) {
        let nsecs = self.opts.nsecs;
        for (t, q) in self.verbose.iter_mut().enumerate() {
            while let Some((cycle, lat)) = q.dequeue() {
                text::verbose_line(&mut self.live.out.buf, t, cycle, lat, nsecs);
                if self.live.out.buf.len() > HUMAN_BUF - 256 {
                    self.live.out.flush();
                }
            }
        }
    }
}
