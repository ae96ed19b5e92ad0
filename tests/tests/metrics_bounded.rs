//! A bounded `/metrics`: 50 clients that trickle a header line every
//! 100 ms and never end their request, and one that sends a gigabyte
//! without a newline, beside a real target streaming into the recorder.
//! No scrape (as Prometheus asks for it) takes more than 1 s, none fails,
//! and the recorder's resident memory grows by at most 8 MiB. The
//! recorder's own counters show that it closed the tricklers at their
//! deadline and the flooder at the size limit. The figures of such a
//! siege are `bench/metrics-siege`'s.

use std::time::Duration;

use latscope_testkit::fleet::Recorder;
use latscope_testkit::host::spawn_target;
use latscope_testkit::siege::{self, sample, Plan};
use latscope_testkit::Scratch;

#[test]
fn trickling_and_flooding_clients_delay_no_scrape_and_cost_little_memory() {
    let dir = Scratch::new("metrics-siege");
    let mut rec = Recorder::start(&dir.join("recs"), &["-q"]);
    let maddr = rec.metrics.clone().expect("metrics address");
    let mut target = spawn_target("30", &dir.join("t.json"), &format!("tcp:{}", rec.addr));
    latscope_testkit::wait::until(Duration::from_secs(15), "the target's series", || {
        rec.metrics()
            .contains("latscope_cycles_total{")
            .then_some(())
    });
    let out = siege::run(&Plan {
        addr: maddr,
        pid: rec.proc.child().id(),
        tricklers: 50,
        flood_bytes: 1 << 30,
        at_least: Duration::from_secs(6),
    });
    let grown = out.rss_peak_kib.saturating_sub(out.rss_before_kib);
    eprintln!(
        "{} scrapes, worst {:?}, p50 {:?}; RSS {} KiB, peak {} KiB; flood {} bytes over {} \
         connections; tricklers closed {} times",
        out.scrapes.len(),
        out.worst(),
        out.quantile(0.5),
        out.rss_before_kib,
        out.rss_peak_kib,
        out.flood_sent,
        out.flood_connections,
        out.trickles_closed
    );
    // the faults happened: the gigabyte went out, in many connections the
    // recorder closed at the size limit, and the tricklers were closed at
    // their deadline
    assert!(out.flood_sent >= 1 << 30, "flood: {} bytes", out.flood_sent);
    let size = sample(
        &out.last_body,
        "latscope_metrics_refused_total{why=\"size\"}",
    );
    let deadline = sample(
        &out.last_body,
        "latscope_metrics_refused_total{why=\"deadline\"}",
    );
    assert!(size.is_some_and(|n| n >= 1.0), "size: {size:?}");
    assert!(
        deadline.is_some_and(|n| n >= 50.0),
        "deadline: {deadline:?}"
    );
    assert!(out.trickles_closed >= 50, "{}", out.trickles_closed);
    // the bounds
    assert_eq!(out.failed, 0, "failed scrapes");
    assert!(out.scrapes.len() >= 20, "{} scrapes", out.scrapes.len());
    assert!(
        out.worst() <= Duration::from_secs(1),
        "slowest scrape {:?}",
        out.worst()
    );
    assert!(
        out.rss_before_kib > 0 && grown <= 8 * 1024,
        "RSS grew by {grown} KiB ({} to {})",
        out.rss_before_kib,
        out.rss_peak_kib
    );
    let served = sample(
        &out.last_body,
        "latscope_metrics_scrapes_total{format=\"openmetrics\"}",
    );
    assert!(
        served.is_some_and(|n| n >= out.scrapes.len() as f64),
        "openmetrics scrapes: {served:?}"
    );
    drop(target.child().kill());
    drop(rec.proc.child().kill());
}
