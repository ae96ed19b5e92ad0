//! A CPU's ring-buffer counters, as `per_cpu/cpuN/stats` prints them.

/// The counters of one CPU's ring buffer (`per_cpu/cpuN/stats`) that say
/// how many events were recorded and lost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BufferStats {
    /// `entries`: events in the buffer, not yet read.
    pub entries: u64,
    /// `overrun`: events overwritten before they were read.
    pub overrun: u64,
    /// `commit overrun`: events lost because a nested write wrapped the
    /// buffer.
    pub commit_overrun: u64,
    /// `dropped events`: events refused by a full buffer (not in
    /// overwrite mode).
    pub dropped: u64,
    /// `read events`: events consumed by readers.
    pub read: u64,
}

impl BufferStats {
    /// Reads the counters from the text of a `stats` file; a counter the
    /// text lacks, or whose value does not read, is 0.
    pub fn parse(text: &str) -> Self {
        let mut s = Self::default();
        for line in text.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let Ok(v) = value.trim().parse::<u64>() else {
                continue;
            };
            match key.trim() {
                "entries" => s.entries = v,
                "overrun" => s.overrun = v,
                "commit overrun" => s.commit_overrun = v,
                "dropped events" => s.dropped = v,
                "read events" => s.read = v,
                _ => {}
            }
        }
        s
    }

    /// Events the kernel recorded: read, still held, or overwritten.
    pub fn recorded(&self) -> u64 {
        self.read
            .saturating_add(self.entries)
            .saturating_add(self.overrun)
    }

    /// Events the kernel lost before any reader saw them.
    pub fn lost(&self) -> u64 {
        self.overrun
            .saturating_add(self.commit_overrun)
            .saturating_add(self.dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_counters_as_the_kernel_prints_them() {
        // an aarch64 6.12 board's CPU 0 after a fixture run
        let text = include_str!("fixtures/aarch64-6.12/cpu0.stats");
        let s = BufferStats::parse(text);
        assert!(s.entries > 0 && s.overrun > 0, "{s:?}");
        assert_eq!(s.recorded(), s.read + s.entries + s.overrun);
        let s = BufferStats::parse(
            "entries: 5\noverrun: 2\ncommit overrun: 1\nbytes: 312\n\
             oldest event ts:  4855.011885\nnow ts: 13285.715803\n\
             dropped events: 3\nread events: 40\n",
        );
        assert_eq!(
            s,
            BufferStats {
                entries: 5,
                overrun: 2,
                commit_overrun: 1,
                dropped: 3,
                read: 40
            }
        );
        assert_eq!((s.recorded(), s.lost()), (47, 6));
        assert_eq!(
            BufferStats::parse("entries: x\nnonsense"),
            BufferStats::default()
        );
    }
}
