//! The `--help` text.

use crate::rt::hist_bytes_per_thread;

/// The `--help` text, with the histogram memory each `-h` costs.
pub fn help() -> String {
    let kib = |us| hist_bytes_per_thread(us).div_ceil(1024);
    HELP.replace(
        "{MEM}",
        &format!(
            "{} KiB up to 1000, {} KiB\n                          at 3500, {} KiB at 20000",
            kib(1000),
            kib(3500),
            kib(20_000)
        ),
    )
}

/// The `--help` text before the memory figures are filled in.
const HELP: &str = "\
latscope: real-time wake-up latency measurement (a cyclictest that is safe by default)

Usage: latscope [OPTIONS]

Each measuring thread sleeps until absolute deadlines (clock_nanosleep,
TIMER_ABSTIME) and records how late it woke. Defaults differ from cyclictest
where cyclictest's are traps: SCHED_FIFO priority 80 (not SCHED_OTHER) and
memory locked (mlockall) unless --no-mlock.

Threads and CPUs
  -t, --threads[=N]       N measuring threads; -t alone: one per available CPU
                          (default: 1)
  -a, --affinity[=CPUSET] pin threads round-robin to CPUSET (e.g. 0,2-3 or !0);
                          -a alone: all available CPUs (default: not pinned)
  -S, --smp               one thread per CPU, each pinned (= -t -a)
      --mainaffinity=CPUSET  pin the non-RT sender (reporting) thread
Timing
  -i, --interval=US       base interval in us (default 1000)
  -d, --distance=US       thread N runs at interval + N*US (default 500; 0 with -h)
  -c, --clock=CLOCK       0|monotonic (default) or 1|realtime
  -l, --loops=N           stop each thread after N samples (default 0: endless)
  -D, --duration=T        stop after T (units ms, s (default), m, h, d)
      --warmup=T          do not record the first T (default 0)
Scheduling and memory
  -p, --priority=PRIO     real-time priority 1..99 (default 80)
      --policy=NAME       fifo (default), rr, deadline, other|normal, batch, idle
      --priospread        thread N gets priority PRIO-N (default: all equal)
      --deadline-runtime=US, --deadline-deadline=US, --deadline-period=US
                          SCHED_DEADLINE parameters (defaults: period = -i,
                          deadline = period, runtime = deadline/10). Deadline
                          threads are NOT pinned unless -a is given: the kernel
                          refuses SCHED_DEADLINE (EPERM) for a thread pinned to
                          one CPU unless that CPU is an exclusive cpuset
                          partition (its admission control is per root domain).
  -m, --mlockall          lock memory (accepted for compatibility; on by default)
      --no-mlock          do not lock memory (page faults then count as latency)
      --latency=US        value held in /dev/cpu_dma_latency (default 0)
      --default-system    leave /dev/cpu_dma_latency alone
      --best-effort       without a privilege, degrade instead of stopping: run
                          SCHED_OTHER (timer slack 1 ns), unlocked, unpinned;
                          the output and the stream say what was degraded
Output (cyclictest formats)
  -q, --quiet             print only the summary at the end
  -v, --verbose           print every sample as thread:cycle:value
  -N, --nsecs             print ns instead of us
  -h, --histogram=US      print the histogram text up to US (max 20000), every
                          row; memory per thread: {MEM} (20 bytes a 1 us row
                          beyond 1000, 8 more for its overflow cycle number)
  -H, --histofall=US      as -h, plus a column summing all threads
      --histfile=PATH     write the histogram text to PATH instead of stdout
      --json=FILE         write cyclictest's JSON results (plus quantiles,
                          missed periods, faults, early, dropped) to FILE
      --spike=US          list the samples above US at the end
  -b, --breaktrace=US     stop when a sample exceeds US
      --tracemark         with -b: write a marker to the trace buffer and stop tracing
      --explain=US        attribute samples above US to IRQs, softirqs and tasks
Stream (binary frames for latscope-host)
      --stream=DEST       - (stdout; human output moves to stderr), a file path,
                          tcp:IP:PORT (IP literal only: a static binary cannot
                          resolve names; reconnects with backoff, measuring goes
                          on meanwhile), or serial:/dev/ttyX[:BAUD] (raw mode,
                          default 115200; reports keep to 7 % of the line on
                          average, less often if histograms are wide)
      --name=NAME         the board's name in the stream (default: host name and
                          a keyed hash of /etc/machine-id, never the id itself)
      --report-interval=T  report period of the stream and live view (default 1s;
                          longer on a serial line whose budget is used up)
Checks
      --self-check        forbid process creation and exec with seccomp after
                          start-up; attempts are refused, counted and reported
                          as defects (exit status 1)
      --version           print the version
      --help              print this help

Signals: SIGINT, SIGTERM and SIGHUP end the run cleanly (summary, stream, exit);
SIGUSR1 prints the current status to stderr.
SIGPIPE is ignored: a closed pipe is a failed write. A failed standard output
or error is not written again; the run goes on (and ends if nothing else
takes its output).
Exit status: 0 completed (also after -b), 1 failed run, self-check defects or
an output that cannot be opened, 2 bad command line, 3 missing privilege (the
message names the flags that run without it), 4 completed but output lost
(stream frames never delivered, or a write to stdout, stderr, --json or
--histfile failed).
When run as PID 1 (an init= binary), latscope mounts /dev, /proc and /sys,
takes its arguments from the kernel command line, and powers off at the end.
";

#[cfg(test)]
mod tests {
    use super::help;
    use crate::rt::hist_bytes_per_thread;

    /// The memory figures of `--help`, as the README quotes them.
    #[test]
    fn help_states_the_histogram_memory() {
        for (us, kib) in [(1000, 67), (3500, 131), (20_000, 576)] {
            assert_eq!(hist_bytes_per_thread(us).div_ceil(1024), kib, "-h {us}");
        }
        let h = help();
        assert!(h.contains("memory per thread: 67 KiB up to 1000, 131 KiB\n                          at 3500, 576 KiB at 20000 (20 bytes"), "{h}");
        // each 1 us row beyond the default: 20 bytes in the buckets, 8 in
        // the overflow cycle numbers
        assert_eq!(
            hist_bytes_per_thread(3501) - hist_bytes_per_thread(3500),
            28
        );
    }
}
