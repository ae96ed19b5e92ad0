//! Pacing for a slow line: no second carries more than a byte budget.
//!
//! A serial line at 115200 baud moves 11,520 bytes a second. latscope's
//! stream averages a small fraction of that, but the end of a run (the
//! final report with a full snapshot of every thread) comes as one burst
//! that can fill most of a second. A [`Pacer`] lets a frame leave only
//! while the bytes of the last 1.1 s, the frame included, stay within the
//! budget; larger bursts are spread over the following seconds. Bursts
//! within the budget, the normal reports, never wait.
//!
//! The stream's promise is that no second carries more than half of the
//! line ([`PROMISED_PERCENT`]). The pacer keeps to less
//! ([`PACED_PERCENT`]): what leaves the sender paced is not what arrives
//! at the receiver paced. A UART's transmit FIFO, a USB adapter's buffer,
//! an emulator's character device (which does not pace at the baud rate at
//! all) and a loaded receiver each bunch bytes together, and a receiver
//! that times bytes as they arrive sees those bunches. The gap between the
//! two shares is the margin for that.

/// Time slots per window: 11 of 100 ms, so every one-second window lies
/// within the slots checked.
const SLOTS: usize = 11;
const SLOT_NS: i64 = 100_000_000;

/// The most of a serial line's capacity any second of the stream carries,
/// as a receiver times it (percent).
pub const PROMISED_PERCENT: u32 = 50;

/// The most of a serial line's capacity the pacer lets leave in any 1.1 s
/// (percent): [`PROMISED_PERCENT`] less a margin for the bunching between
/// the sender and a receiver.
pub const PACED_PERCENT: u32 = 45;

/// A byte budget per sliding second. Const-constructible.
#[derive(Debug, Clone)]
pub struct Pacer {
    limit: u64,
    slots: [u64; SLOTS],
    /// Index of the newest slot (`now / SLOT_NS`).
    newest: i64,
}

impl Pacer {
    /// At most `bytes_per_s` in any second.
    pub const fn new(bytes_per_s: u32) -> Pacer {
        Pacer {
            limit: bytes_per_s as u64,
            slots: [0; SLOTS],
            newest: i64::MIN,
        }
    }

    /// [`PACED_PERCENT`] of what a line of `baud` (8N1: 10 bits a byte)
    /// carries: the budget of latscope's stream on a serial line.
    pub const fn for_line(baud: u32) -> Pacer {
        Pacer::new(baud / 10 * PACED_PERCENT / 100)
    }

    /// The budget in bytes per second.
    pub const fn limit(&self) -> u64 {
        self.limit
    }

    /// Move the window to the slot of `now`.
    fn advance(&mut self, now: i64) {
        let slot = now.div_euclid(SLOT_NS);
        if slot <= self.newest {
            return;
        }
        let gap = slot.saturating_sub(self.newest);
        if gap >= SLOTS as i64 || self.newest == i64::MIN {
            self.slots = [0; SLOTS];
        } else {
            for k in 1..=gap {
                self.slots[(self.newest + k).rem_euclid(SLOTS as i64) as usize] = 0;
            }
        }
        self.newest = slot;
    }

    /// The bytes in the window of the slots `slot - SLOTS + 1 ..= slot`
    /// (slots after the newest are empty).
    fn window(&self, slot: i64) -> u64 {
        (0..SLOTS as i64)
            .map(|k| slot - k)
            .filter(|s| *s <= self.newest && *s > self.newest - SLOTS as i64)
            .map(|s| self.slots[s.rem_euclid(SLOTS as i64) as usize])
            .sum()
    }

    /// The earliest time at or after `now` at which `len` more bytes may
    /// leave. A frame larger than the whole budget may leave once the
    /// window is empty.
    pub fn ready_at(&mut self, now: i64, len: usize) -> i64 {
        self.advance(now);
        let len = len as u64;
        let first = now.div_euclid(SLOT_NS);
        for k in 0..=SLOTS as i64 {
            let w = self.window(first + k);
            if w + len <= self.limit || w == 0 {
                return if k == 0 {
                    now
                } else {
                    (first + k).saturating_mul(SLOT_NS)
                };
            }
        }
        (first + SLOTS as i64).saturating_mul(SLOT_NS)
    }

    /// Count `len` bytes sent at `now`.
    pub fn sent(&mut self, now: i64, len: usize) {
        self.advance(now);
        let i = self.newest.rem_euclid(SLOTS as i64) as usize;
        self.slots[i] = self.slots[i].saturating_add(len as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// Send `frames` as soon as the pacer allows, from `start`; returns
    /// when each left.
    fn send_all(p: &mut Pacer, start: i64, frames: &[usize]) -> Vec<(i64, usize)> {
        let mut now = start;
        let mut out = Vec::new();
        for &len in frames {
            now = p.ready_at(now, len).max(now);
            p.sent(now, len);
            out.push((now, len));
            now += 1_000; // writing takes a little time
        }
        out
    }

    /// The most bytes in any window `[t, t + 1 s)`.
    fn worst_second(sent: &[(i64, usize)]) -> usize {
        sent.iter()
            .map(|&(t, _)| {
                sent.iter()
                    .filter(|&&(u, _)| u >= t && u < t + 1_000_000_000)
                    .map(|&(_, n)| n)
                    .sum()
            })
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn a_final_burst_is_spread_within_the_paced_share_of_the_line() {
        let mut p = Pacer::for_line(115_200);
        // 45 % of 11,520 B/s
        assert_eq!(p.limit(), 5_184);
        // normal reports: 1.2 KB a second for 20 s, none waits
        let mut sent = Vec::new();
        for s in 0..20i64 {
            let t = s * 1_000_000_000 + 3;
            let r = send_all(&mut p, t, &[250; 5]);
            assert!(r.iter().all(|&(u, _)| u < t + 10_000), "report {s} waited");
            sent.extend(r);
        }
        // then 16 KB at once
        let end = 20 * 1_000_000_000 + 7;
        let burst = send_all(&mut p, end, &[250; 64]);
        sent.extend(burst.iter().copied());
        assert!(worst_second(&sent) <= 5_184, "{}", worst_second(&sent));
        // and so within the promise, with its margin
        assert!(worst_second(&sent) * 100 <= 11_520 * PACED_PERCENT as usize);
        let took = burst.last().unwrap().0 - end;
        // 16,000 bytes at 5,184 a second: about 2.5 s more, not much longer
        assert!(took > 2_300_000_000 && took < 4_000_000_000, "{took}");
    }

    #[test]
    fn a_frame_larger_than_the_budget_still_leaves() {
        let mut p = Pacer::new(100);
        assert_eq!(p.ready_at(5, 300), 5);
        p.sent(5, 300);
        let next = p.ready_at(6, 10);
        assert!((1_099_999_999..=1_200_000_000).contains(&next), "{next}");
    }

    #[test]
    fn time_going_backwards_does_not_panic() {
        let mut p = Pacer::new(1_000);
        p.sent(5_000_000_000, 900);
        assert!(p.ready_at(1_000, 200) >= 1_000);
        p.sent(i64::MIN / 2, 10);
        let _ = p.ready_at(i64::MAX / 2, 10);
    }
}
