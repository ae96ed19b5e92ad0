//! TCP on loopback: `latscope --stream tcp:IP:PORT` into `latscope-host
//! record --listen`, several targets at once, metrics scraped with a real
//! HTTP request while recording, and a host killed and restarted mid-run.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use latscope_testkit::fleet::Recorder;
use latscope_testkit::host::{
    assert_cut_recording, assert_matches_target, bins, first_run, host_report_json, http_get,
    listening_host, listening_host_anywhere, only_recording, read_json, recordings, spawn_target,
    stderr_lines, wait_for_line, wait_streaming, Reaper,
};
use latscope_testkit::wait::assert_run_ok;
use latscope_testkit::Scratch;

fn start_host(
    out: &std::path::Path,
    extra: &[&str],
) -> (Reaper, std::sync::mpsc::Receiver<String>, String) {
    let r = Recorder::start(out, extra);
    (r.proc, r.stderr, r.addr)
}

#[test]
fn two_targets_at_once_each_get_an_exact_recording_and_metrics() {
    let dir = Scratch::new("tcp2");
    let out = dir.join("recs");
    let (mut h, _rx, addr) = start_host(&out, &["--exit-after", "2"]);
    let jsons = [dir.join("a.json"), dir.join("b.json")];
    let mut targets: Vec<Reaper> = jsons
        .iter()
        .map(|j| spawn_target("3", j, &format!("tcp:{addr}")))
        .collect();
    for t in &mut targets {
        let r = t.wait(Duration::from_secs(30));
        assert!(r.status.success());
    }
    let r = h.wait(Duration::from_secs(30));
    assert_eq!(r.status.code(), Some(0), "host exit");
    let recs = recordings(&out);
    assert_eq!(recs.len(), 2, "{recs:?}");
    let host_name = read_json(&jsons[0])["sysinfo"]["nodename"]
        .as_str()
        .unwrap()
        .to_string();
    for p in &recs {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(&format!("{host_name}-")), "{name}");
    }
    // Match each recording to its target by cycles and max.
    let targets: Vec<serde_json::Value> = jsons.iter().map(|j| read_json(j)).collect();
    for p in &recs {
        let (doc, code, stderr) = host_report_json(p);
        assert_eq!(code, 0, "{stderr}");
        let run = first_run(&doc);
        let t = targets
            .iter()
            .find(|t| t["thread"]["0"]["max_ns"] == run["threads"][0]["max_ns"])
            .expect("a target with this max");
        assert_matches_target(run, t);
    }
}

#[test]
fn metrics_are_served_while_recording() {
    let b = bins();
    let dir = Scratch::new("metrics");
    let out = dir.join("recs");
    let mut h = Reaper::new(
        Command::new(&b.host)
            .args(["record", "--listen", "127.0.0.1:0", "--exit-after", "1"])
            .args(["--metrics", "127.0.0.1:0", "--out-dir"])
            .arg(&out)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let rx = stderr_lines(h.child());
    let m = wait_for_line(&rx, "metrics at http://", Duration::from_secs(10));
    let maddr = m.trim_end_matches("/metrics").to_string();
    let addr = wait_for_line(&rx, "listening on ", Duration::from_secs(10));
    let addr = addr.split(',').next().unwrap().trim().to_string();
    let json = dir.join("t.json");
    let mut t = spawn_target("4", &json, &format!("tcp:{addr}"));
    // Poll until the target's threads show up with cycles.
    let deadline = Instant::now() + Duration::from_secs(15);
    let body = loop {
        let (status, body) = http_get(&maddr, "/metrics").expect("GET /metrics");
        assert!(status.contains("200"), "{status}");
        if body.contains("thread=\"1\",cpu=\"1\",quantile=\"0.999\"") {
            break body;
        }
        assert!(Instant::now() < deadline, "no thread metrics: {body}");
        std::thread::sleep(Duration::from_millis(300));
    };
    for family in [
        "latscope_cycles_total{",
        "latscope_latency_max_seconds{",
        "latscope_latency_seconds{",
        "quantile=\"0.99\"",
        "quantile=\"0.999\"",
        "latscope_missed_periods_total{",
        "latscope_page_faults_total{",
        "latscope_link_errors_total{",
    ] {
        assert!(body.contains(family), "missing {family} in\n{body}");
    }
    // without an Accept header: the classic text format, no end marker
    assert!(!body.contains("# EOF"), "{body}");
    let (status, _) = http_get(&maddr, "/nothing").unwrap();
    assert!(status.contains("404"), "{status}");
    assert!(t.wait(Duration::from_secs(30)).status.success());
    assert_eq!(h.wait(Duration::from_secs(30)).status.code(), Some(0));
}

#[test]
fn host_killed_and_restarted_mid_run_second_connection_is_exact() {
    let dir = Scratch::new("restart");
    let first = dir.join("first");
    let second = dir.join("second");
    // A fixed port, so the target reconnects to the restarted host.
    let (mut h1, listen) = listening_host_anywhere(&first);
    let json = dir.join("t.json");
    let mut t = spawn_target("7", &json, &format!("tcp:{listen}"));
    wait_streaming(&first);
    h1.child().kill().unwrap();
    let _ = h1.wait(Duration::from_secs(5));
    // the scenario: half a second with nobody listening
    std::thread::sleep(Duration::from_millis(500));
    let mut h2 = listening_host(&listen, &second);
    assert_run_ok(&t.wait(Duration::from_secs(40)));
    let r2 = h2.wait(Duration::from_secs(30));
    assert_eq!(r2.status.code(), Some(0));
    // The killed host's partial recording decodes.
    assert_cut_recording(&first);
    // The second connection starts with a hello and a snapshot: exact.
    let (d2, code2, stderr) = host_report_json(&only_recording(&second));
    assert_eq!(code2, 0, "{stderr}");
    assert_matches_target(first_run(&d2), &read_json(&json));
}
