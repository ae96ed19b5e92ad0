//! The kernel's timerlat tracer, as latscope's timerlat wake mode reads
//! it: the `ftrace/timerlat` entries of the ring buffer's pages
//! ([`Format`], [`Entry`]), and their pairing by sequence number into each
//! period's latencies ([`Pairing`]).
//!
//! The kernel (`kernel/trace/trace_osnoise.c`) stamps each period of a
//! thread that reads `osnoise/per_cpu/cpuN/timerlat_fd` three times, each
//! an entry with the period's sequence number and its latency against the
//! period's start:
//!
//! * [`Context::Irq`]: in the timer's hard IRQ;
//! * [`Context::Thread`]: in the `read()`, when the woken thread runs;
//! * [`Context::UserRet`]: at the thread's next `read()`, its return from
//!   user space; so a run of N reads has N−1 of them.
//!
//! The entries reach user space only through the trace, so these are all
//! the samples there are: a sequence number skipped in a context is a
//! sample the ring buffer lost, and counted as such.

use postcard::experimental::max_size::MaxSize;
use postcard_schema::Schema;
use serde::{Deserialize, Serialize};

use crate::ringbuf::{find_field, read_le, Field, RawEvent};
use crate::Error;

/// Where a timerlat entry was recorded. On the wire since protocol
/// version 6 (which of a thread's timerlat histograms a frame is of): a
/// variant added here changes the frame schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Context {
    /// The timer's hard IRQ.
    Irq,
    /// The woken thread, in the kernel.
    Thread,
    /// The thread's return from user space, at its next `read()`.
    UserRet,
}

impl Context {
    /// The three contexts, in the kernel's order.
    pub const ALL: [Context; 3] = [Context::Irq, Context::Thread, Context::UserRet];

    /// The kernel's number of a context (`IRQ_CONTEXT`, `THREAD_CONTEXT`,
    /// `THREAD_URET`).
    pub const fn from_kernel(v: i64) -> Option<Context> {
        match v {
            0 => Some(Context::Irq),
            1 => Some(Context::Thread),
            2 => Some(Context::UserRet),
            _ => None,
        }
    }

    /// Its index in [`Context::ALL`].
    pub const fn index(self) -> usize {
        match self {
            Context::Irq => 0,
            Context::Thread => 1,
            Context::UserRet => 2,
        }
    }

    /// The word the kernel's text uses (`context irq`, `thread`,
    /// `user-ret`).
    pub const fn label(self) -> &'static str {
        match self {
            Context::Irq => "irq",
            Context::Thread => "thread",
            Context::UserRet => "user-ret",
        }
    }
}

/// One timerlat entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Entry {
    /// The period's sequence number (the kernel's count of the CPU's timer
    /// IRQs).
    pub seqnum: u32,
    /// Where it was recorded.
    pub context: Context,
    /// Its latency against the period's start, ns.
    pub latency_ns: u64,
    /// When it was recorded, in the trace clock, ns.
    pub ts_ns: u64,
}

/// The `ftrace/timerlat` event, as its `format` file describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Format {
    /// The event's id (`common_type`).
    pub id: u16,
    seqnum: Field,
    context: Field,
    latency: Field,
}

impl Format {
    /// The format of `events/ftrace/timerlat/format`.
    ///
    /// # Errors
    ///
    /// [`Error::BadTraceFormat`] if it is not the timerlat event's, or
    /// lacks its id or one of `seqnum`, `context` and `timer_latency`.
    pub fn parse(text: &str) -> Result<Format, Error> {
        let line = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key))
                .map(str::trim)
        };
        if line("name:") != Some("timerlat") {
            return Err(Error::BadTraceFormat("not the timerlat event's format"));
        }
        let id = line("ID:")
            .and_then(|v| v.parse::<u16>().ok())
            .ok_or(Error::BadTraceFormat("format file without a readable ID:"))?;
        let field = |name| find_field(text, name);
        match (field("seqnum"), field("context"), field("timer_latency")) {
            (Some(seqnum), Some(context), Some(latency)) => Ok(Format {
                id,
                seqnum,
                context,
                latency,
            }),
            _ => Err(Error::BadTraceFormat(
                "timerlat format without seqnum, context or timer_latency",
            )),
        }
    }

    /// The timerlat entry `raw` is; `None` for another event, or an entry
    /// whose fields do not read (past its payload, an unknown context).
    pub fn entry(&self, raw: &RawEvent<'_>) -> Option<Entry> {
        if read_le(raw.payload, 0, 2)? != u64::from(self.id) {
            return None;
        }
        let seqnum = u32::try_from(self.seqnum.int(raw.payload)? & 0xffff_ffff).ok()?;
        let context = Context::from_kernel(self.context.int(raw.payload)?)?;
        let latency_ns = self.latency.int(raw.payload)?.max(0).cast_unsigned();
        Some(Entry {
            seqnum,
            context,
            latency_ns,
            ts_ns: raw.ts_ns,
        })
    }
}

/// What one context of one CPU's entries came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Tally {
    /// Entries read.
    pub samples: u64,
    /// Sequence numbers skipped: entries the ring buffer lost.
    pub lost: u64,
    /// The last sequence number read.
    pub last: Option<u32>,
}

impl Tally {
    /// Counts an entry of `seqnum`; returns how many before it were lost.
    /// A sequence number at or below the last one (a repeated or
    /// reordered entry) is counted as read, and loses nothing.
    fn take(&mut self, seqnum: u32) -> u64 {
        let lost = match self.last {
            Some(last) if seqnum > last => u64::from(seqnum - last - 1),
            _ => 0,
        };
        if self.last.is_none_or(|l| seqnum > l) {
            self.last = Some(seqnum);
        }
        self.samples += 1;
        self.lost += lost;
        lost
    }
}

/// One CPU's timerlat entries, paired by sequence number: each context's
/// tally, and the check the kernel guarantees, that a period's IRQ
/// latency is never above its thread latency.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Pairing {
    /// Each context's tally, in [`Context::ALL`]'s order.
    pub tally: [Tally; 3],
    /// The last IRQ entry's (sequence number, latency), waiting for its
    /// thread entry.
    irq: Option<(u32, u64)>,
    /// Thread entries whose period's IRQ entry was read.
    pub paired: u64,
    /// Of those, the ones whose IRQ latency was above the thread's (never,
    /// from a sound kernel and a sound reader).
    pub inverted: u64,
    /// The first IRQ entry's period start (its time less its latency), in
    /// the trace clock: where the kernel's grid of periods begins.
    pub first_start_ns: Option<u64>,
}

impl Pairing {
    /// No entries yet.
    pub const fn new() -> Pairing {
        Pairing {
            tally: [Tally {
                samples: 0,
                lost: 0,
                last: None,
            }; 3],
            irq: None,
            paired: 0,
            inverted: 0,
            first_start_ns: None,
        }
    }

    /// Takes the CPU's next entry; returns how many entries of its
    /// context were lost before it.
    pub fn take(&mut self, e: &Entry) -> u64 {
        let lost = self.tally[e.context.index()].take(e.seqnum);
        match e.context {
            Context::Irq => {
                self.irq = Some((e.seqnum, e.latency_ns));
                if self.first_start_ns.is_none() {
                    self.first_start_ns = Some(e.ts_ns.saturating_sub(e.latency_ns));
                }
            }
            Context::Thread => {
                if let Some((seq, irq_ns)) = self.irq {
                    if seq == e.seqnum {
                        self.paired += 1;
                        if irq_ns > e.latency_ns {
                            self.inverted += 1;
                        }
                        self.irq = None;
                    }
                }
            }
            Context::UserRet => {}
        }
        lost
    }

    /// Periods the IRQ context saw, read or lost.
    pub fn periods(&self) -> u64 {
        let t = &self.tally[Context::Irq.index()];
        t.samples + t.lost
    }
}

/// The kernel's grid of one CPU's periods, as its entries show it.
///
/// The kernel starts a thread's periods at its clock inside the thread's
/// first `read()`, then every period, skipping those a late thread missed:
/// every period starts a whole number of periods from every other. An
/// entry's time less its latency (in any context) is its period's start,
/// give or take the moment between the kernel's clock reading and the
/// entry's timestamp: mostly a little after it, now and then far after it
/// (a preempted virtual CPU), and, rarely, before it (the ring buffer
/// stamps an event that interrupted another with that one's time). So the
/// grid is the median of the first [`Grid::SETTLED`] entries' starts,
/// each taken modulo the period, and then fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Grid {
    period_ns: u64,
    /// The first start taken.
    first: Option<u64>,
    /// The others' offsets from it modulo the period, in (-p/2, p/2].
    offsets: [i64; Grid::SETTLED],
    seen: usize,
    /// The newest start taken.
    last: u64,
    settled: Option<u64>,
}

impl Grid {
    /// Entries whose median is the grid.
    pub const SETTLED: usize = 63;

    /// No period start seen yet, of periods of `period_ns`.
    pub const fn new(period_ns: u64) -> Grid {
        Grid {
            period_ns,
            first: None,
            offsets: [0; Grid::SETTLED],
            seen: 0,
            last: 0,
            settled: None,
        }
    }

    /// Takes an entry's period start (its time less its latency).
    pub fn take(&mut self, start_ns: u64) {
        if self.settled.is_some() {
            return;
        }
        let first = *self.first.get_or_insert(start_ns);
        let p = i128::from(self.period_ns.max(1));
        let mut d = (i128::from(start_ns) - i128::from(first)).rem_euclid(p);
        if d > p / 2 {
            d -= p;
        }
        if let Some(slot) = self.offsets.get_mut(self.seen) {
            *slot = i64::try_from(d).unwrap_or(0);
            self.seen += 1;
        }
        self.last = self.last.max(start_ns);
        // a second's entries settle it too, at long periods
        if self.seen == Self::SETTLED || self.last.saturating_sub(first) >= 1_000_000_000 {
            let taken = &mut self.offsets[..self.seen];
            crate::sort::by_key(taken, |o| *o);
            let median = taken[taken.len() / 2];
            self.settled = Some(first.saturating_add_signed(median));
        }
    }

    /// The start of a period on the grid, once [`Grid::SETTLED`] entries
    /// or a second's were taken.
    pub const fn settled(&self) -> Option<u64> {
        self.settled
    }

    /// The first period start at or after `t_ns` on a grid through
    /// `start_ns` of periods of `period_ns`: where the kernel's next period
    /// starts for a thread whose `read()` begins at `t_ns`.
    pub const fn next_at(start_ns: u64, period_ns: u64, t_ns: u64) -> u64 {
        if period_ns == 0 {
            return start_ns;
        }
        if t_ns <= start_ns {
            // before the grid point known: the kernel's grid runs back too
            let back = (start_ns - t_ns) / period_ns;
            return start_ns - back * period_ns;
        }
        let k = (t_ns - start_ns).div_ceil(period_ns);
        start_ns + k * period_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 6.12's `events/ftrace/timerlat/format`, as the board's kernel has
    /// it.
    const FORMAT: &str = "name: timerlat\nID: 16\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
        \tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
        \tfield:unsigned int seqnum;\toffset:8;\tsize:4;\tsigned:0;\n\
        \tfield:int context;\toffset:12;\tsize:4;\tsigned:1;\n\
        \tfield:u64 timer_latency;\toffset:16;\tsize:8;\tsigned:0;\n\n\
        print fmt: \"seq:%u\\tcontext:%d\\ttimer_latency:%llu\\n\"\n";

    fn payload(id: u16, seq: u32, ctx: i32, lat: u64) -> [u8; 24] {
        let mut p = [0u8; 24];
        p[0..2].copy_from_slice(&id.to_le_bytes());
        p[8..12].copy_from_slice(&seq.to_le_bytes());
        p[12..16].copy_from_slice(&ctx.to_le_bytes());
        p[16..24].copy_from_slice(&lat.to_le_bytes());
        p
    }

    fn entry(seq: u32, context: Context, latency_ns: u64, ts_ns: u64) -> Entry {
        Entry {
            seqnum: seq,
            context,
            latency_ns,
            ts_ns,
        }
    }

    #[test]
    fn an_entry_reads_from_its_payload() {
        let f = Format::parse(FORMAT).unwrap();
        assert_eq!(f.id, 16);
        let p = payload(16, 100, 2, 7_938_896);
        let raw = RawEvent {
            ts_ns: 34_080_946_000,
            payload: &p,
            offset: 0,
        };
        assert_eq!(
            f.entry(&raw),
            Some(entry(100, Context::UserRet, 7_938_896, 34_080_946_000))
        );
        // another event, an unknown context, a short payload
        let p = payload(17, 1, 0, 1);
        assert_eq!(f.entry(&RawEvent { payload: &p, ..raw }), None);
        let p = payload(16, 1, 3, 1);
        assert_eq!(f.entry(&RawEvent { payload: &p, ..raw }), None);
        assert_eq!(
            f.entry(&RawEvent {
                payload: &p[..20],
                ..raw
            }),
            None
        );
    }

    /// The board's own pages of 200 periods of a pinned reader
    /// (`ringbuf/fixtures/README.md`), against the kernel's text of them.
    #[test]
    fn the_boards_pages_decode_as_its_text_says() {
        use crate::ringbuf::{Page, PageHeader};
        const DIR: &str = "ringbuf/fixtures/aarch64-6.12-timerlat/";
        let header = PageHeader::parse(include_str!(
            "ringbuf/fixtures/aarch64-6.12-timerlat/header_page"
        ))
        .unwrap();
        let f = Format::parse(include_str!(
            "ringbuf/fixtures/aarch64-6.12-timerlat/timerlat.format"
        ))
        .unwrap();
        let pages: &[u8] = include_bytes!("ringbuf/fixtures/aarch64-6.12-timerlat/cpu0.pages");
        let text = include_str!("ringbuf/fixtures/aarch64-6.12-timerlat/cpu0.trace");
        // `#1     context    irq timer_latency    345568 ns`, in order
        let mut want = text.lines().filter_map(|l| {
            let (_, rest) = l.split_once(": #")?;
            let w: std::vec::Vec<&str> = rest.split_whitespace().collect();
            Some((w[0].parse::<u32>().ok()?, w[2], w[4].parse::<u64>().ok()?))
        });
        let mut p = Pairing::new();
        let mut n = 0;
        for bytes in pages.chunks(4096) {
            for raw in Page::new(header, bytes).unwrap().events() {
                let e = f.entry(&raw.unwrap()).expect("only timerlat entries");
                assert_eq!(
                    Some((e.seqnum, e.context.label(), e.latency_ns)),
                    want.next(),
                    "{DIR}: entry {n}"
                );
                assert_eq!(p.take(&e), 0);
                n += 1;
            }
        }
        assert_eq!((n, want.next()), (599, None));
        let counts = p.tally.map(|t| (t.samples, t.lost));
        assert_eq!(counts, [(200, 0), (200, 0), (199, 0)]);
        assert_eq!((p.periods(), p.paired, p.inverted), (200, 200, 0));
    }

    #[test]
    fn the_grid_is_the_median_start_modulo_the_period() {
        let p = 1_000_000;
        let mut g = Grid::new(p);
        // mostly 0.3 µs after the true start (5 ms on the grid), a few far
        // after, one before
        g.take(5_000_300);
        g.take(2_000_000 - 40_000);
        for k in 0..(Grid::SETTLED as u64 - 4) {
            assert_eq!(g.settled(), None);
            g.take(9_000_300 + k * p);
        }
        g.take(70_400_000);
        assert_eq!(g.settled(), None);
        g.take(71_000_250);
        assert_eq!(g.settled(), Some(5_000_300));
        // fixed from then on
        g.take(72_000_000);
        assert_eq!(g.settled(), Some(5_000_300));
        // at long periods, a second's entries settle it
        let mut slow = Grid::new(400_000_000);
        slow.take(100);
        slow.take(400_000_120);
        assert_eq!(slow.settled(), None);
        slow.take(1_200_000_110);
        assert_eq!(slow.settled(), Some(110));
        // the next start from a read at t
        assert_eq!(Grid::next_at(5_000_050, p, 7_500_000), 8_000_050);
        assert_eq!(Grid::next_at(5_000_050, p, 8_000_050), 8_000_050);
        assert_eq!(Grid::next_at(5_000_050, p, 3_500_000), 4_000_050);
        assert_eq!(Grid::next_at(5_000_050, 0, 7_000_000), 5_000_050);
    }

    #[test]
    fn a_format_without_its_fields_is_refused() {
        assert!(Format::parse(&FORMAT.replace("timer_latency", "latency")).is_err());
        assert!(Format::parse(&FORMAT.replace("name: timerlat", "name: osnoise")).is_err());
        assert!(Format::parse(&FORMAT.replace("ID: 16", "ID: x")).is_err());
    }

    #[test]
    fn entries_pair_by_sequence_number_and_gaps_are_lost_samples() {
        let mut p = Pairing::new();
        assert_eq!(p.take(&entry(1, Context::Irq, 3_000, 1_003_000)), 0);
        assert_eq!(p.first_start_ns, Some(1_000_000));
        assert_eq!(p.take(&entry(1, Context::Thread, 9_000, 0)), 0);
        assert_eq!(p.take(&entry(2, Context::Irq, 4_000, 0)), 0);
        assert_eq!(p.take(&entry(1, Context::UserRet, 12_000, 0)), 0);
        assert_eq!(p.take(&entry(2, Context::Thread, 5_000, 0)), 0);
        // two periods' entries lost in the ring buffer
        assert_eq!(p.take(&entry(5, Context::Irq, 9_000, 0)), 2);
        assert_eq!(p.take(&entry(5, Context::Thread, 8_000, 0)), 2);
        assert_eq!(p.take(&entry(5, Context::UserRet, 10_000, 0)), 3);
        assert_eq!(p.periods(), 5);
        assert_eq!(p.tally[0].samples, 3);
        assert_eq!(p.tally[1].lost, 2);
        assert_eq!(p.tally[2].lost, 3);
        assert_eq!((p.paired, p.inverted), (3, 1));
        // a thread entry whose IRQ entry was lost pairs with nothing
        p.take(&entry(7, Context::Thread, 1, 0));
        assert_eq!(p.paired, 3);
    }
}
