//! The status other programs ask a running latscope for, as they ask
//! cyclictest: SIGUSR2 rewrites `/dev/shm/cyclictest<PID>` (what rt-tests'
//! `get_cyclictest_snapshot` prints), and `-F` hands the `T:` lines to
//! whoever has the named pipe open. Never on a measuring thread.
//!
//! The snapshot file is written by the main thread, which takes the
//! signal: `get_cyclictest_snapshot` reads the file as soon as its `kill`
//! has returned, which leaves about a millisecond, and cyclictest answers
//! from its signal handler within it. Handed to the sender, the answer
//! waited for a second thread's wake-up and lost that race about half the
//! time. The main thread reads each thread's counters alone (not its
//! histogram) and writes the file before it waits for the next signal
//! ([`SnapshotAnswer`]). It waits at SCHED_FIFO 1, below the measuring
//! threads, so that a busy machine's SCHED_OTHER tasks do not hold its
//! wake-up back (`app::wait::wait_at_rt_priority`). The named pipe is
//! served by the sender.

use std::sync::atomic::Ordering;

use latscope_core::cyclictest::{self, Thread};
use latscope_core::seqlock::Counters;

use super::live::{thread_lines, threads};
use super::Sender;
use crate::config::ThreadPlan;
use crate::linux::status_files::{self, Snapshot};
use crate::output::Std;
use crate::rt::Shared;

/// Tries of the counters' read section before the last good counters
/// are written instead (the writer holds it for a few dozen instructions).
const TRIES: u32 = 10_000;

/// The named pipe of a run.
pub(super) struct StatusFiles {
    fifo: Option<String>,
    /// The text being written (reused).
    text: String,
}

impl StatusFiles {
    pub(super) fn new(fifo: Option<String>) -> Self {
        StatusFiles {
            fifo,
            text: String::with_capacity(4096),
        }
    }
}

/// The main thread's answer to SIGUSR2: the current status, in cyclictest
/// 2.4's words, replaces the snapshot file's content.
pub struct SnapshotAnswer<'a> {
    file: &'a Snapshot,
    shared: &'a [Shared],
    plans: &'a [ThreadPlan],
    nsecs: bool,
    /// Each thread's last good counters.
    last: Vec<Counters>,
    /// The text being written (reused).
    text: String,
}

impl<'a> SnapshotAnswer<'a> {
    /// The answer of a run whose threads are `shared`, as `plans` placed
    /// them, in ns with `nsecs` (`-N`).
    pub fn new(
        file: &'a Snapshot,
        shared: &'a [Shared],
        plans: &'a [ThreadPlan],
        nsecs: bool,
    ) -> Self {
        SnapshotAnswer {
            file,
            shared,
            plans,
            nsecs,
            last: vec![Counters::ZERO; shared.len()],
            text: String::with_capacity(4096),
        }
    }

    /// `pwrite`: the status as it stands now replaces the file's content.
    pub fn write(&mut self) {
        let mut lines = Vec::with_capacity(self.shared.len());
        for (t, (s, plan)) in self.shared.iter().zip(self.plans).enumerate() {
            if let Ok(c) = s.hist.counters(TRIES) {
                self.last[t] = c;
            }
            lines.push(Thread {
                index: t as u16,
                tid: s.tid.load(Ordering::SeqCst),
                priority: plan.priority,
                interval_us: plan.interval_us,
                cpu: plan.cpu.map_or(-1, |c| c as i32),
                node: -1,
                counters: self.last[t],
                minflt: 0,
                majflt: 0,
                dropped: 0,
                hist: &[],
                overflow_cycles: &[],
            });
        }
        self.text.clear();
        // a String takes every write
        let _ = cyclictest::status_block(&mut self.text, &lines, self.nsecs);
        if let Err(e) = self.file.replace(self.text.as_bytes()) {
            Std::Err.write(format!("latscope: writing the snapshot file: {e}\n").as_bytes());
        }
    }
}

impl Sender<'_> {
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
