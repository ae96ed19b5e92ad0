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

    /// The queued samples of every thread, as lines: every sample, or
    /// with `-o RED` the largest of each RED samples with its cycle number
    /// (cyclictest's oscilloscope mode). With `-u` each line is written at
    /// once.
    pub(super) fn drain_verbose(&mut self) {
        let nsecs = self.opts.nsecs;
        let red = self.opts.oscope.max(1);
        let out = &mut self.live.out;
        for (t, q) in self.verbose.iter_mut().enumerate() {
            let w = &mut self.oscope[t];
            while let Some((cycle, lat)) = q.dequeue() {
                let Some((cycle, lat)) = w.take(cycle, lat, red) else {
                    continue;
                };
                let _ = cyclictest::verbose_line(&mut out.buf, t as u16, cycle, lat, nsecs);
                if self.opts.unbuffered || out.buf.len() > HUMAN_BUF - 256 {
                    out.flush();
                }
            }
        }
    }
}

/// `-o RED`: one thread's window of samples.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Window {
    /// Samples in the window so far.
    count: u32,
    /// The largest of them (ns) and its cycle.
    max: i64,
    cycle: u64,
}

impl Window {
    /// Add a sample; at the window's end (`red` samples), its largest and
    /// that sample's cycle, and the window starts again.
    fn take(&mut self, cycle: u64, latency: i64, red: u32) -> Option<(u64, i64)> {
        if self.count == 0 || latency > self.max {
            self.max = latency;
            self.cycle = cycle;
        }
        self.count += 1;
        if self.count < red {
            return None;
        }
        let line = (self.cycle, self.max);
        *self = Window::default();
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oscilloscope_windows_give_their_largest() {
        let mut w = Window::default();
        let lines: Vec<_> = [5, 9, 2, 1, 1, 7, 3]
            .iter()
            .enumerate()
            .filter_map(|(c, &v)| w.take(c as u64, v, 3))
            .collect();
        assert_eq!(lines, [(1, 9), (5, 7)]);
        let mut w = Window::default();
        assert_eq!(w.take(4, -2, 1), Some((4, -2)), "-o 1 is plain -v");
    }
}
