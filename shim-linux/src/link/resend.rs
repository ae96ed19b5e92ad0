//! The frames the host has not yet acknowledged, kept to send again after
//! a reconnect, in a bounded buffer: [`RESEND_BYTES`] bytes and at most
//! [`RESEND_FRAMES`] frames, both allocated once at start.
//!
//! When a frame does not fit, the oldest are dropped. Whether a dropped
//! frame was lost is only known later, and is counted then, so that the
//! target's count equals the gaps the host sees in the sequence numbers:
//! - dropped after it was sent on the current connection ("in flight"): the
//!   host gets it, unless the connection dies first; an ack at or beyond
//!   it on the same connection settles it as delivered, and if the
//!   connection dies first it becomes "away";
//! - dropped while away (the link is down, or up but the host has not yet
//!   said where its recording ends, and not sent on it): the host has it
//!   only if it got it on an earlier connection. The host's first ack on
//!   the next connection says the last sequence number it stored: away
//!   frames after it are lost.
//!
//! A frame dropped unsent while the host's position is known is lost at
//! once.
//!
//! At the end of the run ([`Resend::end`]) what is still kept or unsettled
//! splits in two: frames never sent whole on any connection (the host
//! cannot have them: lost), and frames sent but not acknowledged (their
//! fate is the host's to tell: it stored them, or counts them as a gap).

use std::collections::VecDeque;

/// Bytes of unacknowledged frames kept: about 10 minutes of a 4-thread
/// run's default stream (840 B/s, `bench/results/link-budget.md`).
pub const RESEND_BYTES: usize = 512 * 1024;
/// Unacknowledged frames kept.
pub const RESEND_FRAMES: usize = 16 * 1024;
/// Ranges of dropped, not yet settled sequence numbers kept; older ranges
/// beyond these are counted as lost.
const OPEN_RANGES: usize = 32;

/// Whether `a` comes after `b` (serial-number arithmetic).
const fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// A range `lo..=hi` of dropped sequence numbers not yet settled, and
/// whether they were sent on the current connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Open {
    lo: u32,
    hi: u32,
    flight: bool,
}

impl Open {
    fn len(self) -> u64 {
        u64::from(self.hi.wrapping_sub(self.lo)) + 1
    }
}

/// The unacknowledged frames and the accounting of dropped ones.
pub struct Resend {
    bytes: VecDeque<u8>,
    /// Sequence number and length of every frame in `bytes`.
    frames: VecDeque<(u32, u32)>,
    /// Bytes of `bytes` (from the front) sent on the current connection.
    sent: usize,
    /// The host's position on this connection is known (its first ack).
    placed: bool,
    /// Connected.
    up: bool,
    /// Sequence number the next frame carries.
    next: u32,
    /// Anything acknowledged or dropped yet (else a connection starts with
    /// the run's own first frame, its hello).
    moved: bool,
    open: VecDeque<Open>,
    /// Frames lost, not yet taken.
    lost: u64,
    /// Frames at the front of `frames` sent whole on this connection, and
    /// their bytes.
    whole: usize,
    whole_bytes: usize,
    /// The last sequence number sent whole on any connection (frames go
    /// out in order, and each connection sends again from the front).
    sent_hi: Option<u32>,
}

/// What the end of a run leaves unsettled, in frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct End {
    /// Lost: dropped unsent, or never sent whole on any connection.
    pub lost: u64,
    /// Sent on some connection and not acknowledged: stored by the host or
    /// not, as its recording says.
    pub unacknowledged: u64,
}

impl Resend {
    /// An empty buffer, allocated in full now.
    pub fn new() -> Resend {
        Resend {
            bytes: VecDeque::with_capacity(RESEND_BYTES),
            frames: VecDeque::with_capacity(RESEND_FRAMES),
            sent: 0,
            placed: false,
            up: false,
            next: 0,
            moved: false,
            open: VecDeque::with_capacity(OPEN_RANGES),
            lost: 0,
            whole: 0,
            whole_bytes: 0,
            sent_hi: None,
        }
    }

    /// Keep frame `seq` (its encoded `bytes`) until it is acknowledged,
    /// dropping the oldest frames to make room. A frame larger than the
    /// whole buffer is lost at once.
    pub fn push(&mut self, seq: u32, bytes: &[u8]) {
        self.next = seq.wrapping_add(1);
        if bytes.len() > RESEND_BYTES {
            self.moved = true;
            self.drop_frame(seq, false);
            return;
        }
        while self.bytes.len() + bytes.len() > RESEND_BYTES || self.frames.len() >= RESEND_FRAMES {
            self.evict();
        }
        self.bytes.extend(bytes);
        self.frames.push_back((seq, bytes.len() as u32));
    }

    fn evict(&mut self) {
        let Some((seq, len)) = self.frames.pop_front() else {
            return;
        };
        let len = len as usize;
        let was_sent = self.sent >= len;
        self.popped(len);
        self.moved = true;
        self.drop_frame(seq, was_sent);
    }

    /// Account one dropped frame.
    fn drop_frame(&mut self, seq: u32, was_sent: bool) {
        if self.up && self.placed && !was_sent {
            self.lost += 1;
            return;
        }
        let flight = self.up && was_sent;
        match self.open.back_mut() {
            Some(r) if r.flight == flight && r.hi.wrapping_add(1) == seq => r.hi = seq,
            _ => {
                if self.open.len() == OPEN_RANGES {
                    // Kept bounded: the oldest unsettled drops count as lost.
                    if let Some(old) = self.open.pop_front() {
                        self.lost += old.len();
                    }
                }
                self.open.push_back(Open {
                    lo: seq,
                    hi: seq,
                    flight,
                });
            }
        }
    }

    /// A connection came up: everything kept is sent again from the front.
    /// Returns the sequence number of a hello that starts it without
    /// taking a number of its own (the one before the first frame it
    /// resends), or `None` when the run's own hello is the first frame.
    pub fn connected(&mut self) -> Option<u32> {
        self.up = true;
        self.placed = false;
        self.sent = 0;
        self.whole = 0;
        self.whole_bytes = 0;
        if !self.moved {
            return None;
        }
        let first = self.frames.front().map_or(self.next, |&(s, _)| s);
        Some(first.wrapping_sub(1))
    }

    /// The connection went down: what was in flight on it is away now.
    pub fn disconnected(&mut self) {
        self.up = false;
        self.placed = false;
        self.sent = 0;
        self.whole = 0;
        self.whole_bytes = 0;
        for r in self.open.iter_mut() {
            r.flight = false;
        }
    }

    /// The host stored every frame up to `seq` that reached it.
    pub fn ack(&mut self, seq: u32) {
        self.moved = true;
        let first_on_connection = self.up && !self.placed;
        if self.up {
            self.placed = true;
        }
        while let Some(&(s, len)) = self.frames.front() {
            if after(s, seq) {
                break;
            }
            self.frames.pop_front();
            self.popped(len as usize);
        }
        self.settle(seq, first_on_connection);
    }

    /// The front frame, `len` bytes, left `frames`: its bytes go too.
    fn popped(&mut self, len: usize) {
        self.bytes.drain(..len.min(self.bytes.len()));
        self.sent = self.sent.saturating_sub(len);
        if self.whole > 0 {
            self.whole -= 1;
            self.whole_bytes = self.whole_bytes.saturating_sub(len);
        }
    }

    /// Settle dropped frames against the host's position `seq`: those at
    /// or before it reached the host. On the first ack of a connection
    /// (`first`) the away frames after it never will.
    fn settle(&mut self, seq: u32, first: bool) {
        let n = self.open.len();
        for _ in 0..n {
            let Some(mut r) = self.open.pop_front() else {
                break;
            };
            if !after(r.hi, seq) {
                continue;
            }
            if !after(r.lo, seq) {
                r.lo = seq.wrapping_add(1);
            }
            if first && !r.flight {
                self.lost += r.len();
            } else {
                self.open.push_back(r);
            }
        }
    }

    /// The bytes not yet sent on this connection, in at most two slices.
    pub fn unsent(&self) -> (&[u8], &[u8]) {
        let (a, b) = self.bytes.as_slices();
        if self.sent <= a.len() {
            (&a[self.sent..], b)
        } else {
            (&[], &b[self.sent - a.len()..])
        }
    }

    /// `n` more bytes were sent.
    pub fn sent(&mut self, n: usize) {
        self.sent = (self.sent + n).min(self.bytes.len());
        while let Some(&(seq, len)) = self.frames.get(self.whole) {
            let len = len as usize;
            if self.whole_bytes + len > self.sent {
                break;
            }
            self.whole += 1;
            self.whole_bytes += len;
            if self.sent_hi.is_none_or(|h| after(seq, h)) {
                self.sent_hi = Some(seq);
            }
        }
    }

    /// Whether every frame kept has been acknowledged.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Bytes kept, not acknowledged yet.
    pub fn held_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Frames not acknowledged.
    #[cfg(test)]
    pub fn pending(&self) -> u64 {
        self.frames.len() as u64
    }

    /// Dropped frames not yet settled.
    #[cfg(test)]
    pub fn unsettled(&self) -> u64 {
        self.open.iter().map(|r| r.len()).sum()
    }

    /// Frames lost since the last call.
    pub fn take_lost(&mut self) -> u64 {
        std::mem::take(&mut self.lost)
    }

    /// The run is over: count what is still kept or unsettled (then
    /// forgotten), with the losses not yet taken.
    pub fn end(&mut self) -> End {
        let hi = self.sent_hi;
        // frames up to `hi` were sent whole on some connection
        let sent = |seq: u32| hi.is_some_and(|h| !after(seq, h));
        let mut end = End {
            lost: self.take_lost(),
            unacknowledged: 0,
        };
        for &(seq, _) in &self.frames {
            match sent(seq) {
                true => end.unacknowledged += 1,
                false => end.lost += 1,
            }
        }
        for r in &self.open {
            let upto = match hi {
                Some(h) if !after(r.lo, h) => {
                    let top = if after(r.hi, h) { h } else { r.hi };
                    u64::from(top.wrapping_sub(r.lo)) + 1
                }
                _ => 0,
            };
            end.unacknowledged += upto;
            end.lost += r.len() - upto;
        }
        self.frames.clear();
        self.bytes.clear();
        self.open.clear();
        self.sent = 0;
        self.whole = 0;
        self.whole_bytes = 0;
        end
    }
}

impl Default for Resend {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(seq: u32, len: usize) -> Vec<u8> {
        vec![(seq % 251) as u8 + 1; len]
    }

    /// Push `from..to` frames of `len` bytes.
    fn push(r: &mut Resend, from: u32, to: u32, len: usize) {
        for s in from..to {
            r.push(s, &frame(s, len));
        }
    }

    fn send_all(r: &mut Resend) -> usize {
        let (a, b) = r.unsent();
        let n = a.len() + b.len();
        r.sent(n);
        n
    }

    #[test]
    fn the_first_connection_starts_with_the_runs_hello_later_ones_resume() {
        let mut r = Resend::new();
        push(&mut r, 0, 10, 50);
        assert_eq!(r.connected(), None, "nothing moved: frame 0 is the hello");
        assert_eq!(send_all(&mut r), 500);
        r.ack(5);
        assert_eq!(r.pending(), 4);
        r.disconnected();
        // 6..=9 come again after a hello that carries 5.
        assert_eq!(r.connected(), Some(5));
        assert_eq!(send_all(&mut r), 200);
        r.ack(9);
        assert!(r.is_empty());
        assert_eq!(r.take_lost(), 0);
    }

    #[test]
    fn drops_while_away_count_only_beyond_the_hosts_recording() {
        let mut r = Resend::new();
        r.connected();
        push(&mut r, 0, 100, 1000);
        send_all(&mut r);
        r.ack(40);
        // 41..=99 were sent, the host stored up to 60 and died; the link
        // is down while 1000 more frames of 1000 bytes overflow the buffer.
        r.disconnected();
        push(&mut r, 100, 1100, 1000);
        let kept = r.pending() as u32;
        let first = 1100 - kept;
        assert!(first > 61, "the buffer overflowed: first kept {first}");
        assert_eq!(r.connected(), Some(first - 1));
        r.ack(60);
        // Lost: 61 ..= first - 1; 41..=60 reached the host.
        assert_eq!(r.take_lost(), u64::from(first - 61));
        assert_eq!(r.unsettled(), 0);
    }

    #[test]
    fn drops_of_sent_frames_settle_by_a_later_ack_on_the_same_connection() {
        let mut r = Resend::new();
        r.connected();
        r.ack(u32::MAX); // the host has nothing of this run yet
        push(&mut r, 0, 500, 1000);
        send_all(&mut r);
        push(&mut r, 500, 600, 1000); // overflow: sent frames dropped
        assert!(r.unsettled() > 0);
        r.ack(550);
        assert_eq!(r.unsettled(), 0);
        assert_eq!(r.take_lost(), 0, "they were on the wire");
    }

    #[test]
    fn frames_resent_before_the_hosts_first_ack_and_then_dropped_are_not_lost() {
        let mut r = Resend::new();
        r.connected();
        push(&mut r, 0, 100, 1000);
        send_all(&mut r);
        r.ack(99);
        r.disconnected();
        // Away: the buffer fills, nothing dropped yet.
        push(&mut r, 100, 600, 1000);
        assert_eq!(r.connected(), Some(99));
        // Resent at once, then dropped by new frames before the first ack.
        send_all(&mut r);
        push(&mut r, 600, 700, 1000);
        r.ack(99); // the host's position: it has up to 99
        assert_eq!(r.take_lost(), 0, "the dropped frames were on the wire");
        r.ack(699);
        assert_eq!(r.unsettled(), 0);
        assert_eq!(r.take_lost(), 0);
    }

    #[test]
    fn frames_in_flight_when_a_connection_dies_count_if_the_host_never_stored_them() {
        let mut r = Resend::new();
        r.connected();
        r.ack(u32::MAX);
        push(&mut r, 0, 500, 1000);
        send_all(&mut r);
        push(&mut r, 500, 600, 1000); // sent frames dropped: in flight
        let in_flight = r.unsettled();
        assert!(in_flight > 0);
        r.disconnected();
        r.connected();
        r.ack(9); // the host stored only up to 9 before it died
        assert_eq!(r.take_lost(), in_flight - 10);
    }

    #[test]
    fn a_frame_dropped_unsent_while_placed_is_lost_at_once() {
        let mut r = Resend::new();
        r.connected();
        r.ack(u32::MAX);
        // Nothing sent (the socket is full), the buffer overflows.
        push(&mut r, 0, 600, 1000);
        let lost = r.take_lost();
        assert_eq!(lost, 600 - r.pending());
        assert!(lost > 0);
    }

    #[test]
    fn a_frame_larger_than_the_buffer_is_lost_at_once_and_counted() {
        let mut r = Resend::new();
        r.connected();
        r.ack(u32::MAX);
        push(&mut r, 0, 1, 100);
        r.push(1, &frame(1, RESEND_BYTES + 1));
        assert_eq!(r.pending(), 1, "not kept");
        assert_eq!(r.take_lost(), 1, "and counted");
        // while the host's position is not known, it waits to be settled
        r.disconnected();
        r.push(2, &frame(2, RESEND_BYTES + 1));
        assert_eq!(r.unsettled(), 1);
        r.connected();
        r.ack(1);
        assert_eq!(r.take_lost(), 1, "beyond the host's recording: lost");
    }

    #[test]
    fn unsettled_drops_beyond_the_open_ranges_kept_count_as_lost() {
        let mut r = Resend::new();
        r.connected(); // the host's position is not known yet
                       // Frames of more than half the buffer: each push drops the one
                       // before, sent and unsent in turn, so every drop opens a range.
        let big = RESEND_BYTES / 2 + 1;
        let drops = OPEN_RANGES as u32 + 8;
        for s in 0..=drops {
            if s % 2 == 1 {
                send_all(&mut r);
            }
            r.push(s, &frame(s, big));
        }
        assert_eq!(r.pending(), 1);
        assert_eq!(r.unsettled(), OPEN_RANGES as u64, "the ranges kept");
        assert_eq!(r.take_lost(), 8, "the oldest, beyond them, are lost");
    }

    #[test]
    fn at_the_end_frames_sent_whole_are_unacknowledged_the_rest_lost() {
        let mut r = Resend::new();
        r.connected();
        push(&mut r, 0, 10, 100);
        r.sent(450); // 0..=3 whole, 4 in part
        r.ack(1);
        r.disconnected(); // 4 torn on the wire: the host cannot have it
        push(&mut r, 10, 12, 100);
        assert_eq!(
            r.end(),
            End {
                lost: 8,
                unacknowledged: 2
            },
            "2 and 3 sent whole; 4..=11 never"
        );
        assert_eq!(r.end(), End::default(), "counted once");
    }

    #[test]
    fn at_the_end_unsettled_drops_split_at_the_last_frame_sent_whole() {
        let mut r = Resend::new();
        r.connected();
        // sent on a connection that died, the host's position unknown
        push(&mut r, 0, 100, 1000);
        send_all(&mut r);
        r.disconnected();
        // away: the buffer overflows, dropping frames sent (0..) and then
        // frames never sent (100..)
        push(&mut r, 100, 700, 1000);
        let kept = r.pending();
        let dropped = r.unsettled();
        assert_eq!(kept + dropped, 700);
        assert!(dropped > 100, "frames never sent were dropped too");
        let end = r.end();
        assert_eq!(end.unacknowledged, 100, "0..=99 were sent whole");
        assert_eq!(end.lost, 600, "100..=699 never left");
    }

    #[test]
    fn a_resent_frame_sent_whole_once_stays_sent_whole() {
        let mut r = Resend::new();
        r.connected();
        push(&mut r, 0, 4, 100);
        send_all(&mut r);
        r.disconnected();
        r.connected();
        r.sent(50); // the resend of 0 cut short
        r.disconnected();
        assert_eq!(
            r.end(),
            End {
                lost: 0,
                unacknowledged: 4
            }
        );
    }

    #[test]
    fn unsent_bytes_follow_the_ring_around_its_end() {
        let mut r = Resend::new();
        r.connected();
        for round in 0..5u32 {
            push(&mut r, round * 400, round * 400 + 400, 999);
            let (a, b) = r.unsent();
            assert_eq!(a.len() + b.len(), r.bytes.len() - r.sent);
            send_all(&mut r);
            r.ack(round * 400 + 399);
            assert!(r.is_empty());
        }
    }
}
