//! Hostile clients of a recorder's `/metrics`, beside a scraper that
//! times every scrape: clients that trickle a header line every 100 ms
//! and never end their request (reconnecting whenever the recorder closes
//! on them), and one that sends a gigabyte without a newline
//! (reconnecting likewise), while the recorder's resident memory is read
//! from `/proc`. Used by `tests/tests/metrics_bounded.rs` (which asserts
//! the bounds) and `src/bin/metrics_siege.rs` (which prints the figures
//! for `bench/metrics-siege`).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// What Prometheus 2.x sends as its `Accept` header.
pub const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,\
application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// What the siege is.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The recorder's metrics `ADDR:PORT`.
    pub addr: String,
    /// The recorder's process id (for its resident memory).
    pub pid: u32,
    /// Clients that trickle.
    pub tricklers: usize,
    /// Bytes the flooding client writes in all.
    pub flood_bytes: u64,
    /// The siege lasts at least this long (and until the flood is sent).
    pub at_least: Duration,
}

/// What came of it.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Every scrape's time, from connecting to the end of the response.
    pub scrapes: Vec<Duration>,
    /// Scrapes that failed (no complete 200 response within 5 s).
    pub failed: usize,
    /// The recorder's resident memory (KiB) before the siege.
    pub rss_before_kib: u64,
    /// Its largest resident memory (KiB) during the siege.
    pub rss_peak_kib: u64,
    /// Bytes the flooder had written when it stopped.
    pub flood_sent: u64,
    /// Connections the flooder made (each closed on it by the recorder).
    pub flood_connections: u64,
    /// Times a trickler found its connection closed by the recorder.
    pub trickles_closed: u64,
    /// The last scrape's body.
    pub last_body: String,
    /// How long the siege took.
    pub elapsed: Duration,
}

impl Outcome {
    /// The slowest scrape.
    pub fn worst(&self) -> Duration {
        self.scrapes.iter().copied().max().unwrap_or_default()
    }

    /// The scrape time at quantile `q` (0 to 1).
    pub fn quantile(&self, q: f64) -> Duration {
        let mut s = self.scrapes.clone();
        s.sort();
        let i = ((s.len() as f64 - 1.0) * q).round() as usize;
        s.get(i).copied().unwrap_or_default()
    }
}

/// Resident memory of process `pid` in KiB (`VmRSS`), 0 if unreadable.
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// One scrape as Prometheus asks: its time and body, if it was a
/// complete 200 response.
pub fn scrape(addr: &str) -> io::Result<(Duration, String)> {
    let t0 = Instant::now();
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nAccept: {PROMETHEUS_ACCEPT}\r\n\
         Connection: close\r\n\r\n"
    )?;
    let mut resp = Vec::new();
    s.read_to_end(&mut resp)?;
    let took = t0.elapsed();
    let resp = String::from_utf8_lossy(&resp).into_owned();
    let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
    let whole = head.starts_with("HTTP/1.1 200") && body.ends_with("# EOF\n");
    if !whole {
        return Err(io::Error::other(format!("not a whole response: {head}")));
    }
    Ok((took, body.to_string()))
}

/// A client that sends a request line, then a header line every 100 ms,
/// never the empty line; it reconnects when the recorder closes on it.
fn trickle(addr: String, stop: Arc<AtomicBool>, closed: Arc<AtomicU64>) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut s) = TcpStream::connect(&addr) else {
            thread::sleep(Duration::from_millis(50));
            continue;
        };
        let mut line: &[u8] = b"GET /metrics HTTP/1.1\r\n";
        while !stop.load(Ordering::Relaxed) {
            if s.write_all(line).is_err() {
                closed.fetch_add(1, Ordering::Relaxed);
                break;
            }
            line = b"X-Slow: 1\r\n";
            thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A client that writes `bytes` without a newline in 1 MiB writes, and
/// connects again whenever the recorder closes on it; what it sent and
/// its connections.
fn flood(addr: String, bytes: u64, stop: Arc<AtomicBool>) -> (u64, u64) {
    let chunk = vec![b'a'; 1 << 20];
    let (mut sent, mut conns) = (0u64, 0u64);
    while sent < bytes && !stop.load(Ordering::Relaxed) {
        let Ok(mut s) = TcpStream::connect(&addr) else {
            thread::sleep(Duration::from_millis(10));
            continue;
        };
        conns += 1;
        let _ = s.set_write_timeout(Some(Duration::from_secs(5)));
        while sent < bytes {
            match s.write(&chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => sent += n as u64,
            }
        }
    }
    (sent, conns)
}

/// Run the siege: the tricklers and the flooder start, a scrape goes out
/// every 100 ms and the recorder's resident memory is read every 20 ms,
/// until the flood is sent and `at_least` has passed.
pub fn run(plan: &Plan) -> Outcome {
    // warm: the workers have built their bodies once
    for _ in 0..4 {
        let _ = scrape(&plan.addr);
    }
    let rss_before_kib = rss_kib(plan.pid);
    let stop = Arc::new(AtomicBool::new(false));
    let closed = Arc::new(AtomicU64::new(0));
    let tricklers: Vec<_> = (0..plan.tricklers)
        .map(|_| {
            let (a, s, c) = (plan.addr.clone(), Arc::clone(&stop), Arc::clone(&closed));
            thread::spawn(move || trickle(a, s, c))
        })
        .collect();
    let flooder = {
        let (a, s, n) = (plan.addr.clone(), Arc::clone(&stop), plan.flood_bytes);
        thread::spawn(move || flood(a, n, s))
    };
    let peak = Arc::new(AtomicU64::new(rss_before_kib));
    let sampler = {
        let (pid, stop, peak) = (plan.pid, Arc::clone(&stop), Arc::clone(&peak));
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kib(pid), Ordering::Relaxed);
                thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let t0 = Instant::now();
    let (mut scrapes, mut failed, mut last_body) = (Vec::new(), 0, String::new());
    while t0.elapsed() < plan.at_least || !flooder.is_finished() {
        match scrape(&plan.addr) {
            Ok((took, body)) => {
                scrapes.push(took);
                last_body = body;
            }
            Err(_) => failed += 1,
        }
        thread::sleep(Duration::from_millis(100));
        if t0.elapsed() > plan.at_least * 20 {
            break;
        }
    }
    let elapsed = t0.elapsed();
    stop.store(true, Ordering::Relaxed);
    let (flood_sent, flood_connections) = flooder.join().unwrap_or((0, 0));
    for t in tricklers {
        let _ = t.join();
    }
    let _ = sampler.join();
    // the recorder's counters, once the siege is over
    if let Ok((_, body)) = scrape(&plan.addr) {
        last_body = body;
    }
    Outcome {
        scrapes,
        failed,
        rss_before_kib,
        rss_peak_kib: peak.load(Ordering::Relaxed),
        flood_sent,
        flood_connections,
        trickles_closed: closed.load(Ordering::Relaxed),
        last_body,
        elapsed,
    }
}

/// The value of the sample `series` (its name and labels, as written) in
/// an exposition, if it is there.
pub fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}
