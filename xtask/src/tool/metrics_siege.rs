//! Hostile clients of a recorder's `/metrics` beside a timed scraper
//! ([`latscope_testkit::siege`]), for `bench/metrics-siege`.
//!
//! Usage: `xtask tool metrics-siege ADDR PID [TRICKLERS [BYTES [SECS]]]` (defaults
//! 50, 1 GiB, 6): ADDR is the recorder's metrics address, PID its process.
//! Prints `key value` lines: scrapes, failed, p50_ms, p99_ms, max_ms,
//! rss_before_kib, rss_peak_kib, flood_bytes, flood_connections,
//! trickles_closed, refused_size, refused_deadline, seconds.
//!
//! Test helper, never part of the target program.

use std::process::ExitCode;
use std::time::Duration;

use latscope_testkit::siege::{run, sample, Plan};

/// `cargo xtask tool metrics-siege ARGS`.
pub fn main(args: Vec<String>) -> ExitCode {
    let (Some(addr), Some(pid)) = (args.first(), args.get(1).and_then(|p| p.parse().ok())) else {
        eprintln!("usage: xtask tool metrics-siege ADDR PID [TRICKLERS [BYTES [SECS]]]");
        std::process::exit(2);
    };
    let num = |i: usize, default: u64| args.get(i).and_then(|v| v.parse().ok()).unwrap_or(default);
    let out = run(&Plan {
        addr: addr.clone(),
        pid,
        tricklers: num(2, 50) as usize,
        flood_bytes: num(3, 1 << 30),
        at_least: Duration::from_secs(num(4, 6)),
    });
    let ms = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1e3);
    let refused = |why: &str| {
        sample(
            &out.last_body,
            &format!("latscope_metrics_refused_total{{why=\"{why}\"}}"),
        )
        .unwrap_or(-1.0)
    };
    for (k, v) in [
        ("scrapes", out.scrapes.len().to_string()),
        ("failed", out.failed.to_string()),
        ("p50_ms", ms(out.quantile(0.5))),
        ("p99_ms", ms(out.quantile(0.99))),
        ("max_ms", ms(out.worst())),
        ("rss_before_kib", out.rss_before_kib.to_string()),
        ("rss_peak_kib", out.rss_peak_kib.to_string()),
        ("flood_bytes", out.flood_sent.to_string()),
        ("flood_connections", out.flood_connections.to_string()),
        ("trickles_closed", out.trickles_closed.to_string()),
        ("refused_size", refused("size").to_string()),
        ("refused_deadline", refused("deadline").to_string()),
        ("seconds", format!("{:.1}", out.elapsed.as_secs_f64())),
    ] {
        println!("{k} {v}");
    }
    ExitCode::SUCCESS
}
