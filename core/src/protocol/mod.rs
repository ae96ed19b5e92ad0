//! The protocol as state machines on top of [`crate::wire`]: the
//! [`Reporter`] that turns measuring threads' shared histograms into frames on a
//! schedule, and the [`Assembler`] that turns frames back into exact
//! histograms. Both sides of latscope use them: the target's sender thread
//! and the host, and a bare-metal user gets the same protocol by calling
//! them (see `examples/bare_metal.rs`).
//!
//! # The schedule
//!
//! A [`Reporter`] numbers its reports (epochs) from 1; epoch 0 is the state
//! before the first report. It sends:
//!
//! * **at the start of every connection** (and of a run): a [`Hello`], then
//!   whatever warnings the caller has, then per thread the latest
//!   [`ThreadStats`] and a full snapshot of the same epoch
//!   ([`Reporter::resend`]);
//! * **a hello every 10 s** ([`HELLO_EVERY_NS`]), so a receiver that joins
//!   a serial line mid-run learns what it is reading;
//! * **every report interval**, per thread, in this order: the histogram
//!   delta since the last report but a lean one ([`HistDelta`] parts of at most
//!   [`MAX_SMALL_FRAME`] bytes; at least one part, empty if nothing
//!   changed), the cumulative [`ThreadStats`], and one chunk of the
//!   **rolling snapshot**: the cumulative counts of the next buckets after
//!   the previous chunk's range, in at most [`ROLL_BYTES`] bytes of runs,
//!   wrapping to bucket 0 after the last. So the whole histogram is sent
//!   again every few reports, at a cost that does not grow with its size;
//! * **after frames were lost** (the link told the caller, who calls
//!   [`Reporter::lost`]): the next report carries a full snapshot of every
//!   thread instead of the rolling chunk;
//! * **at the end**: a final report ([`Reporter::begin_final`]) whose
//!   statistics are marked `last_report` and which carries a full snapshot
//!   of every thread, then a [`Bye`].
//!
//! In the timerlat mode (protocol version 6) each thread's report goes on
//! with the kernel's three timerlat histograms of its CPU on the same
//! schedule ([`Reporter::timerlat`], [`TimerlatAssembler`]): per context
//! its delta parts, then the figures of all three, then one chunk of a
//! rolling snapshot that walks the three in turn; full snapshots at a new
//! connection, after lost frames and at the end; the figures alone in a
//! lean report.
//!
//! Every frame is at most [`MAX_SMALL_FRAME`] bytes except the hello, log
//! lines, explained spikes and parts of a spike's evidence.
//!
//! # The link budget
//!
//! On a serial line the stream must leave room: 4 threads at 1 kHz
//! average under 10 % of a 115200-baud line, and no second may carry more
//! than half of it, the last one included. The line is shared in stated
//! parts, each with its own account, so that one never waits for another:
//!
//! * **reports** (deltas, statistics, snapshot chunks, hellos, log lines):
//!   7 % of the line ([`Reporter::with_budget`], [`line_budget`]). The
//!   rolling snapshot keeps their share flat however long the run and
//!   however wide its histograms. The deltas grow with the histograms'
//!   spread (a board whose latencies cover hundreds of microseconds
//!   changes hundreds of buckets a second), so a report waits until the
//!   report bytes sent before it are paid for, at most
//!   [`MAX_BUDGET_WAIT_NS`]: wide histograms are reported every two or
//!   three seconds instead of every second, each report still exact. One
//!   that goes at that limit still unpaid for is *lean*: statistics only,
//!   and the next report's delta covers both intervals (a receiver's
//!   histogram stays a lower bound meanwhile), so the statistics keep
//!   their schedule and the reports their share however wide the
//!   histograms. The histograms still go at least every [`MAX_LEAN_NS`],
//!   so they never freeze, even where the statistics alone outgrow the
//!   share;
//! * **spike samples and explanations**: 25 % of the line
//!   ([`Reporter::with_spike_share`], [`spike_share`]), never charged to
//!   the reports. The caller asks [`Reporter::spike_room`] before each;
//!   the last [`SPIKE_RESERVE_NS`] of the share's burst is kept for the
//!   worst spikes of an interval and their explanations. A spike that
//!   finds no room is counted by the caller, not sent;
//! * **a spike's evidence** (its window as a trace.dat, where the target
//!   was asked to send it): 5 % of the line ([`evidence_share`],
//!   [`Reporter::with_evidence_share`]), taken out of the spikes' share,
//!   never added to it: its frames are charged to both, and go only while
//!   the spikes' share has room for ordinary spikes
//!   ([`Reporter::evidence_room`]); offered before ordinary spikes, it
//!   keeps its share under a storm. The reports, the worst spikes'
//!   reserve and the line's busiest second are as without it;
//! * the rest is headroom: a [`Pacer`] on the line (half of it in any
//!   second) spreads the one large burst, the final report's full
//!   snapshots, over the following seconds.
//!
//! `bench/link-budget` measures the reports' part on a pseudo-terminal,
//! and the board tests on an emulated board's own UART.
//!
//! # Exactness
//!
//! An [`Assembler`] keeps one thread's histogram as a **lower bound** of
//! the target's at its epoch: it only ever adds true increments (each delta
//! part once per epoch) or replaces a bucket range with the target's
//! cumulative counts of its current epoch (snapshot chunks). So it is exact
//! exactly when its total equals the `count` of that epoch's statistics;
//! that check, not the absence of errors, decides exactness. Frames lost on
//! the line make it fall short until snapshot chunks have covered the
//! buckets they touched: within one rotation of the rolling snapshot, at a
//! resync, and at the end. Duplicated frames change nothing (a delta part
//! is applied once; a chunk replaces), and frames of an older epoch than
//! the histogram's are ignored, so reordering can delay exactness but never
//! make a wrong histogram look exact.
//!
//! [`Hello`]: crate::wire::Hello
//! [`ThreadStats`]: crate::wire::ThreadStats
//! [`HistDelta`]: crate::wire::HistDelta
//! [`Bye`]: crate::wire::Bye
//! [`MAX_SMALL_FRAME`]: crate::wire::MAX_SMALL_FRAME

mod assembler;
mod buckets;
mod evidence;
mod pacer;
mod reporter;
mod sink;
mod timerlat;

pub use assembler::Assembler;
pub use buckets::{ArrayStore, BucketStore};
pub use evidence::{part_from, parts, EvidenceAssembler};
pub use pacer::{Pacer, PACED_PERCENT, PROMISED_PERCENT};
pub use reporter::{
    evidence_share, line_budget, spike_share, Reporter, Room, SideCounts, ThreadLog, ThreadLogIn,
    EVIDENCE_AHEAD_NS, HELLO_EVERY_NS, MAX_BUDGET_WAIT_NS, MAX_LEAN_NS, ROLL_BYTES, SPIKE_AHEAD_NS,
    SPIKE_RESERVE_NS,
};
pub use sink::{FrameSink, SliceSink};
pub use timerlat::{TimerlatAssembler, TimerlatLog, TimerlatLogIn};

#[cfg(test)]
mod budget_tests;
#[cfg(test)]
mod tests;
