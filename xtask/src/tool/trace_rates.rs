//! What latscope's trace records and what reading it costs on the
//! emulated aarch64 PREEMPT_RT board, under the console flood: boots the
//! busybox image with `rates=SECS` (`testkit/image/init`), which runs
//! latscope twice as the flood boots do, once beside an instance that
//! records the events the tracer recorded before its diet and once with
//! `--explain`, then times the open and the read of CPU 0's buffer as text
//! and as pages. Prints a Markdown table:
//!
//! * events recorded per second on the measured CPUs, before and after
//!   the diet (the kernel's `per_cpu/cpuN/stats`), and the events lost;
//! * the reader thread's CPU time per second (latscope's `# trace:` line);
//! * the open and the read of `trace` and of `trace_pipe_raw`, per event
//!   and per KiB, less what starting `cat` or `dd` costs.
//!
//!   trace_rates [SECS] [PRIO]
//!
//! Defaults: 5 s, `-p 40`. Fails (exit status 1) if the console IRQ did
//! not fire during the runs: the flood did not reach the UART, and the
//! figures would be those of an idle board. Needs the tools `.ci/run
//! setup` installs.

use std::process::ExitCode;
use std::time::Duration;

use latscope_testkit::boot::Console;
use latscope_testkit::image;
use latscope_testkit::qemu::Arch;

/// What the console said, as numbers.
#[derive(Debug, Default, PartialEq)]
struct Rates {
    /// latscope's exit status before and after.
    status: [Option<i32>; 2],
    /// Console IRQs during both runs.
    irqs: Option<u64>,
    /// The "before" instance's events recorded and lost, all CPUs, and
    /// CPU 0's events and bytes.
    before: Counts,
    cpu0_events: u64,
    cpu0_bytes: u64,
    /// From the `--explain` run's `# trace:` line: events recorded, lost,
    /// pages read, the reader's CPU time (ms).
    after: Counts,
    pages_read: u64,
    reader_ms: f64,
    /// Pages of CPU 0's buffer read through `trace_pipe_raw`.
    raw_pages: u64,
    /// The markers' times, seconds.
    marks: Vec<(String, f64)>,
}

/// Events recorded and lost.
#[derive(Debug, Default, PartialEq, Clone, Copy)]
struct Counts {
    events: u64,
    lost: u64,
}

/// The number just before `word` in `line` (`... 123 events recorded`).
fn before_word(line: &str, word: &str) -> Option<f64> {
    let at = line.find(word)?;
    line[..at].split_whitespace().last()?.parse().ok()
}

fn parse(console: &str) -> Rates {
    let mut r = Rates::default();
    for line in console.lines().map(|l| l.trim_end_matches('\r')) {
        if let Some(rest) = line.strip_prefix("image: rates ") {
            let mut w = rest.split_whitespace();
            match (w.next(), w.next(), w.next()) {
                (Some("before"), Some("status"), Some(s)) => r.status[0] = s.parse().ok(),
                (Some("after"), Some("status"), Some(s)) => r.status[1] = s.parse().ok(),
                (Some("pages"), Some(n), _) => r.raw_pages = n.parse().unwrap_or(0),
                (Some("mark"), Some(name), Some(t)) => {
                    if let Ok(t) = t.parse() {
                        r.marks.push((name.to_string(), t));
                    }
                }
                (Some("stats"), Some(cpu), first) => {
                    let kv = |k: &str| {
                        first
                            .into_iter()
                            .chain(w.clone())
                            .find_map(|p| p.strip_prefix(k)?.strip_prefix('='))
                            .and_then(|v| v.parse::<u64>().ok())
                            .unwrap_or(0)
                    };
                    let events = kv("read_events") + kv("entries") + kv("overrun");
                    r.before.events += events;
                    r.before.lost += kv("overrun") + kv("commit_overrun") + kv("dropped_events");
                    if cpu == "cpu0" {
                        r.cpu0_events = events;
                        r.cpu0_bytes = kv("bytes");
                    }
                }
                _ => {}
            }
        } else if let Some(rest) = line.strip_prefix("image: stop ") {
            r.irqs = rest
                .split_whitespace()
                .skip_while(|w| *w != "irqs")
                .nth(1)
                .and_then(|n| n.parse().ok());
        } else if line.starts_with("# trace:") {
            r.after.events = before_word(line, "events recorded").unwrap_or(0.0) as u64;
            r.after.lost = before_word(line, "lost by the kernel").unwrap_or(0.0) as u64;
            r.pages_read = before_word(line, "pages read").unwrap_or(0.0) as u64;
            r.reader_ms = before_word(line, "ms CPU").unwrap_or(0.0);
        }
    }
    r
}

impl Rates {
    /// Milliseconds between markers `a` and `b`.
    fn ms(&self, a: &str, b: &str) -> Option<f64> {
        let at = |n: &str| self.marks.iter().find(|(m, _)| m == n).map(|m| m.1);
        Some((at(b)? - at(a)?) * 1e3)
    }

    fn table(&self, secs: f64) -> String {
        let per_s = |n: u64| n as f64 / secs;
        let mut t = String::new();
        t.push_str("| figure | before the diet | after |\n|---|---|---|\n");
        t.push_str(&format!(
            "| events recorded on the measured CPUs, per second | {:.0} | {:.0} |\n",
            per_s(self.before.events),
            per_s(self.after.events)
        ));
        t.push_str(&format!(
            "| events lost by the kernel | {} | {} |\n",
            self.before.lost, self.after.lost
        ));
        t.push_str(&format!(
            "| latscope's reader: CPU time per second of run | - | {:.1} ms ({} pages read) |\n",
            self.reader_ms / secs,
            self.pages_read
        ));
        let cat = self.ms("cat-start", "cat-end").unwrap_or(0.0);
        let dd = self.ms("dd-start", "dd-end").unwrap_or(0.0);
        let kib = self.cpu0_bytes as f64 / 1024.0;
        t.push_str(&format!(
            "\nReading CPU 0's \"before\" buffer ({} events, {:.0} KiB), recording off; \
             a read's time less what starting its reader with no input took (`cat` \
             {cat:.1} ms, `dd` {dd:.1} ms):\n\n",
            self.cpu0_events, kib
        ));
        t.push_str("| file | open (ms) | read (ms) | read per event (us) | read per KiB (us) |\n");
        t.push_str("|---|---|---|---|---|\n");
        let text = self.ms("text-read", "text-end").map(|r| (r - cat).max(0.0));
        if let (Some(open), Some(read)) = (self.ms("text-open", "text-read"), text) {
            t.push_str(&format!(
                "| `trace` (text), the whole buffer | {open:.2} | {read:.1} | {:.2} | {:.2} |\n",
                1e3 * read / self.cpu0_events.max(1) as f64,
                1e3 * read / kib.max(1e-9)
            ));
        }
        let raw = self.ms("raw-read", "raw-end").map(|r| (r - dd).max(0.0));
        if let (Some(open), Some(read)) = (self.ms("raw-open", "raw-read"), raw) {
            let raw_kib = self.raw_pages as f64 * 4.0;
            // the events of those pages, at the buffer's events per byte
            let events = self.cpu0_events as f64 * raw_kib / kib.max(1e-9);
            t.push_str(&format!(
                "| `trace_pipe_raw` (pages), {} pages | {open:.2} | {read:.1} | {:.2} | {:.2} |\n",
                self.raw_pages,
                1e3 * read / events.max(1.0),
                1e3 * read / raw_kib.max(1e-9)
            ));
        }
        t
    }
}

fn boot(secs: u64, prio: u8) -> Result<String, String> {
    let args = format!("rates={secs} -t 2 -a 0,1 -i 1000 -q -p {prio}");
    let timeout = Duration::from_secs(180 + 10 * secs);
    let (_, boot) = image::boot(
        Arch::Aarch64,
        &args,
        Console::Socket { flood: true },
        timeout,
    )?;
    Ok(boot.console)
}

/// `cargo xtask tool trace-rates ARGS`.
pub fn main(args: Vec<String>) -> ExitCode {
    let mut args = args.into_iter();
    let secs: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(5);
    let prio: u8 = args.next().and_then(|s| s.parse().ok()).unwrap_or(40);
    let console = match boot(secs, prio) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("xtask tool trace-rates: {e}");
            return ExitCode::FAILURE;
        }
    };
    let r = parse(&console);
    if r.status != [Some(0), Some(0)] || r.marks.is_empty() || r.after.events == 0 {
        eprintln!("xtask tool trace-rates: the runs did not complete: {r:?}\n{console}");
        return ExitCode::FAILURE;
    }
    if r.irqs.unwrap_or(0) == 0 {
        eprintln!(
            "xtask tool trace-rates: the console IRQ never fired: the flood did not reach the UART"
        );
        return ExitCode::FAILURE;
    }
    println!(
        "`-t 2 -a 0,1 -i 1000 -p {prio}`, {secs} s each, console IRQ fired {} times\n",
        r.irqs.unwrap_or(0)
    );
    print!("{}", r.table(secs as f64));
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_consoles_lines() {
        let console = "image: start\r\n\
            image: rates before status 0\n\
            # trace: 1024 KiB kernel buffer and 2048 KiB history per CPU; 52000 events recorded, 3 lost by the kernel; 400 pages read, 0 dropped from the history; reader 90.5 ms CPU; wake-ups of measuring threads; 0 tracefs write(s) and 0 read(s) failed\n\
            image: rates after status 0\n\
            image: stop status 0 irqs 1234\n\
            image: rates stats cpu0 entries=100 overrun=0 commit_overrun=0 bytes=8192 oldest_event_ts=1.0 now_ts=2.0 dropped_events=0 read_events=0 \n\
            image: rates stats cpu1 entries=50 overrun=2 commit_overrun=1 bytes=100 dropped_events=0 read_events=0 \n\
            image: rates pages 1\n\
            image: rates mark cat-start 10.000000\n\
            image: rates mark cat-end 10.002000\n\
            image: rates mark text-open 10.010000\n\
            image: rates mark text-read 10.011000\n\
            image: rates mark text-end 10.112000\n";
        let r = parse(console);
        assert_eq!(r.status, [Some(0), Some(0)]);
        assert_eq!(r.irqs, Some(1234));
        assert_eq!(
            r.before,
            Counts {
                events: 152,
                lost: 3
            }
        );
        assert_eq!((r.cpu0_events, r.cpu0_bytes), (100, 8192));
        assert_eq!(
            r.after,
            Counts {
                events: 52000,
                lost: 3
            }
        );
        assert_eq!((r.pages_read, r.raw_pages), (400, 1));
        assert!((r.reader_ms - 90.5).abs() < 1e-9);
        assert!((r.ms("text-read", "text-end").unwrap() - 101.0).abs() < 1e-6);
        let t = r.table(2.0);
        assert!(t.contains("| 76 | 26000 |"), "{t}");
        // 101 ms less 2 ms for cat, over 100 events: 990 us each
        assert!(t.contains("| 1.00 | 99.0 | 990.00 |"), "{t}");
    }
}
