//! Task names by pid, learnt from the trace itself.
//!
//! A binary event names only the pid of the task that was current
//! (`common_pid`); the kernel's text fills in the name from its own
//! table. The decoder learns names from every `sched_switch` and
//! `sched_wakeup` it decodes, which name both tasks in full.

/// Tasks whose names a [`Comms`] keeps; the oldest learnt is forgotten
/// first.
pub const COMMS: usize = 64;

/// The longest name the kernel keeps (`TASK_COMM_LEN` less its NUL).
const COMM_LEN: usize = 15;

/// What the text calls a task it cannot name.
const UNKNOWN: &str = "<...>";

/// The names of the last [`COMMS`] tasks learnt, by pid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comms {
    pids: [u32; COMMS],
    names: [[u8; COMM_LEN]; COMMS],
    lens: [u8; COMMS],
    /// Slots in use.
    used: usize,
    /// The slot the next new pid takes once all are in use.
    next: usize,
}

impl Default for Comms {
    fn default() -> Self {
        Self::new()
    }
}

impl Comms {
    /// No names yet.
    pub const fn new() -> Self {
        Self {
            pids: [0; COMMS],
            names: [[0; COMM_LEN]; COMMS],
            lens: [0; COMMS],
            used: 0,
            next: 0,
        }
    }

    /// `pid` is called `comm` (cut to 15 bytes on a character boundary).
    /// Pid 0 is always `<idle>`, and an empty name teaches nothing.
    pub fn learn(&mut self, pid: u32, comm: &str) {
        if pid == 0 || comm.is_empty() {
            return;
        }
        let slot = match self.pids[..self.used].iter().position(|&p| p == pid) {
            Some(i) => i,
            None if self.used < COMMS => {
                self.used += 1;
                self.used - 1
            }
            None => {
                let i = self.next;
                self.next = (self.next + 1) % COMMS;
                i
            }
        };
        let mut n = comm.len().min(COMM_LEN);
        while !comm.is_char_boundary(n) {
            n -= 1;
        }
        self.pids[slot] = pid;
        self.names[slot][..n].copy_from_slice(&comm.as_bytes()[..n]);
        self.lens[slot] = n as u8;
    }

    /// The name of `pid`: `<idle>` for pid 0, `<...>` for one not learnt,
    /// as the kernel's text says.
    pub fn name(&self, pid: u32) -> &str {
        if pid == 0 {
            return "<idle>";
        }
        let Some(i) = self.pids[..self.used].iter().position(|&p| p == pid) else {
            return UNKNOWN;
        };
        let b = &self.names[i][..usize::from(self.lens[i])];
        core::str::from_utf8(b).unwrap_or(UNKNOWN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_renames_and_forgets_the_oldest() {
        let mut c = Comms::new();
        assert_eq!(c.name(7), "<...>");
        assert_eq!(c.name(0), "<idle>");
        c.learn(7, "latscope");
        c.learn(7, "latscope-rt");
        assert_eq!(c.name(7), "latscope-rt");
        c.learn(8, "a-very-long-thread-name");
        assert_eq!(c.name(8), "a-very-long-thr");
        c.learn(9, "ééééééééé");
        assert_eq!(c.name(9), "ééééééé", "cut on a character boundary");
        c.learn(10, "");
        assert_eq!(c.name(10), "<...>");
        for pid in 100..100 + COMMS as u32 {
            c.learn(pid, "x");
        }
        // Full: the first slots were taken again, oldest first.
        assert_eq!(c.name(7), "<...>");
        assert_eq!(c.name(100 + COMMS as u32 - 1), "x");
        assert_eq!(c.name(103), "x");
    }
}
