//! Prometheus for real: Debian's `prometheus` scrapes a listening
//! recorder while a few real targets stream into it. The series exist with
//! the board labels, and the final count, max and quantiles that
//! Prometheus holds equal the recordings' own reports. The shipped scrape
//! configuration and rules pass `promtool`, the rules' unit tests pass
//! `promtool test rules` and fail when a rule is broken, and every
//! expression of the shipped Grafana dashboard returns data.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use latscope_testkit::fleet::Recorder;
use latscope_testkit::host::{bins, host_report_json, http_get, recordings, target_args, Reaper};
use latscope_testkit::prometheus::{promtool, Prometheus, Sample};
use latscope_testkit::wait::holds;
use latscope_testkit::Scratch;
use latscope_testkit::{have, require};

const TARGETS: usize = 3;

fn deploy(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("deploy")
        .join(rel)
}

/// Every `expr` in a Grafana dashboard.
fn dashboard_exprs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("expr", Value::String(s)) => out.push(s.clone()),
                    _ => dashboard_exprs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| dashboard_exprs(x, out)),
        _ => {}
    }
}

#[test]
fn shipped_config_and_rules_pass_promtool() {
    require!(
        have("promtool"),
        "promtool is not installed (apt-get install prometheus)"
    );
    let config = deploy("prometheus/prometheus.yml");
    let rules = deploy("prometheus/latscope.rules.yml");
    let (ok, out) = promtool(&["check", "config", &config.display().to_string()]);
    assert!(ok, "promtool check config:\n{out}");
    let (ok, out) = promtool(&["check", "rules", &rules.display().to_string()]);
    assert!(ok, "promtool check rules:\n{out}");
    assert!(out.contains("SUCCESS"), "{out}");
}

/// Each shipped rule broken on purpose, one at a time: (the rule, the
/// text that breaks it, what it becomes).
const BREAKS: [(&str, &str, &str); 7] = [
    (
        "board:latscope_latency_max_seconds:max",
        "max by (board) (latscope_latency_max_seconds)",
        "min by (board) (latscope_latency_max_seconds)",
    ),
    (
        "LatscopeBoardStoppedReporting",
        "((latscope_connected == 0) or (changes(",
        "((changes(",
    ),
    (
        "LatscopeRunIncomplete",
        "(sum by (board, run) (latscope_link_errors_total{kind=\"lost\"}) > 0)",
        "(sum by (board, run) (latscope_link_errors_total{kind=\"crc\"}) > 0)",
    ),
    ("LatscopeRunEndedWithoutBye", "how!=\"bye\"", "how=\"bye\""),
    (
        "LatscopeMissedPeriods",
        "increase(latscope_missed_periods_total[5m]) > 0",
        "increase(latscope_missed_periods_total[5m]) > 2",
    ),
    (
        "LatscopeMajorFaults",
        "latscope_page_faults_total{kind=\"major\"}",
        "latscope_page_faults_total{kind=\"minor\"}",
    ),
    ("LatscopeP999AboveGoal", "> 100e-6", "> 200e-6"),
];

/// `promtool test rules` of the shipped rules' unit tests passes, and
/// fails, naming the rule, with each rule broken on purpose.
#[test]
fn shipped_rules_pass_their_unit_tests_and_a_broken_rule_fails_them() {
    require!(
        have("promtool"),
        "promtool is not installed (apt-get install prometheus)"
    );
    let tests = deploy("prometheus/latscope.rules.test.yml");
    let (ok, out) = promtool(&["test", "rules", &tests.display().to_string()]);
    assert!(ok && out.contains("SUCCESS"), "promtool test rules:\n{out}");
    let rules = std::fs::read_to_string(deploy("prometheus/latscope.rules.yml"))
        .expect("read latscope.rules.yml");
    let scratch = Scratch::new("rules");
    std::fs::copy(&tests, scratch.join("latscope.rules.test.yml")).expect("copy the tests");
    let copy = scratch
        .join("latscope.rules.test.yml")
        .display()
        .to_string();
    for (rule, from, to) in BREAKS {
        assert_eq!(
            rules.matches(from).count(),
            1,
            "{rule}: {from:?} in the rules"
        );
        let broken = rules.replacen(from, to, 1);
        std::fs::write(scratch.join("latscope.rules.yml"), broken).expect("write the rules");
        let (ok, out) = promtool(&["test", "rules", &copy]);
        assert!(
            !ok,
            "{rule} broken ({from:?} -> {to:?}) still passes:\n{out}"
        );
        assert!(
            out.contains(rule),
            "{rule} broken, but the failure names another:\n{out}"
        );
    }
}

/// Start a listening recorder with metrics: it, its listening address
/// and its metrics address, once it answers on both (the recorder binds
/// both to port 0 and says which ports it got).
fn recorder(out: &Path) -> (Recorder, String, String) {
    let r = Recorder::start(out, &["-q"]);
    let (listen, maddr) = (
        r.addr.clone(),
        r.metrics.clone().expect("a metrics address"),
    );
    (r, listen, maddr)
}

fn one<'a>(s: &'a [Sample], run: &str, thread: usize, what: &str) -> &'a Sample {
    let t = thread.to_string();
    let hits: Vec<&Sample> = s
        .iter()
        .filter(|x| x.labels.get("run").map(String::as_str) == Some(run))
        .filter(|x| x.labels.get("thread") == Some(&t))
        .collect();
    assert_eq!(hits.len(), 1, "{what} of run {run} thread {thread}: {s:?}");
    hits[0]
}

fn seconds(ns: &Value) -> f64 {
    ns.as_u64().expect("ns") as f64 / 1e9
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 + 1e-9 * b.abs()
}

/// `n` targets named `bench-N`, 4 s each, into `listen`; wait for them.
fn run_named_targets(dir: &Scratch, listen: &str, n: usize) {
    let mut targets: Vec<Reaper> = (0..n)
        .map(|i| {
            Reaper::new(
                Command::new(bins().latscope)
                    .args(target_args("4", &dir.join(format!("t{i}.json"))))
                    .args(["--name", &format!("bench-{i}"), "--stream"])
                    .arg(format!("tcp:{listen}"))
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("run latscope"),
            )
        })
        .collect();
    for t in &mut targets {
        let ok = t.wait(Duration::from_secs(60)).status.success();
        assert!(ok, "target failed");
    }
}

/// The series of the ended runs carry every label, one board each.
fn check_labels(ended: &[Sample]) {
    for s in ended {
        for l in ["board", "run", "peer", "host", "recorder"] {
            let set = s.labels.get(l).is_some_and(|v| !v.is_empty());
            assert!(set, "label {l}: {s:?}");
        }
        assert_eq!(s.labels["peer"], "127.0.0.1");
        assert!(s.labels["board"].starts_with("bench-"), "{s:?}");
    }
    let boards: std::collections::BTreeSet<&str> =
        ended.iter().map(|s| s.labels["board"].as_str()).collect();
    assert_eq!(
        boards.len(),
        ended.len(),
        "one board label each: {boards:?}"
    );
}

/// Prometheus's count, max and quantiles of every thread of every
/// recording in `rec` equal the recording's report.
fn check_final_figures(prom: &Prometheus, rec: &Path) {
    let counts = prom.query("latscope_latency_seconds_count");
    let maxes = prom.query("latscope_latency_max_seconds");
    let q99 = prom.query("latscope_latency_seconds{quantile=\"0.99\"}");
    let q999 = prom.query("latscope_latency_seconds{quantile=\"0.999\"}");
    let recs = recordings(rec);
    assert_eq!(recs.len(), TARGETS, "{recs:?}");
    for rec in &recs {
        let (doc, code, err) = host_report_json(rec);
        assert_eq!(code, 0, "{}: {err}", rec.display());
        let run = &doc["runs"][0];
        let id = run["run_id"].as_str().expect("run id");
        let threads = run["threads"].as_array().expect("threads");
        for (i, t) in threads.iter().enumerate() {
            let c = one(&counts, id, i, "count").value;
            assert_eq!(
                c,
                t["count"].as_u64().unwrap() as f64,
                "run {id} T{i} count"
            );
            let m = one(&maxes, id, i, "max").value;
            let want = seconds(&t["max_ns"]);
            assert!(close(m, want), "run {id} T{i} max {m} vs {want}");
            let q: BTreeMap<&str, &Value> = t["quantiles"]
                .as_array()
                .expect("quantiles")
                .iter()
                .map(|q| (q[0].as_str().unwrap(), &q[1]))
                .collect();
            for (name, got) in [("p99", &q99), ("p99.9", &q999)] {
                let v = one(got, id, i, name).value;
                let want = seconds(q[name]);
                assert!(close(v, want), "run {id} T{i} {name}: {v} vs {want}");
            }
        }
    }
}

/// Every expression of the shipped dashboard returns data.
fn check_dashboard(prom: &Prometheus) {
    let text = std::fs::read_to_string(deploy("grafana/latscope-fleet.json")).expect("dashboard");
    let dash: Value = serde_json::from_str(&text).expect("dashboard JSON");
    let mut exprs = Vec::new();
    dashboard_exprs(&dash, &mut exprs);
    assert!(exprs.len() >= 8, "{exprs:?}");
    for e in &exprs {
        prom.wait_for(e, Duration::from_secs(30), |s| !s.is_empty());
    }
}

/// `promtool check metrics` of what `/metrics` serves without an Accept
/// header (the classic text format) while a target streams, and after its
/// run ended; OpenMetrics when asked for it.
#[test]
fn the_classic_text_passes_promtool_check_metrics() {
    require!(
        have("promtool"),
        "promtool is not installed (apt-get install prometheus)"
    );
    let dir = Scratch::new("promtool-metrics");
    let (mut host, listen, maddr) = recorder(&dir.join("rec"));
    let check = |what: &str| {
        let (status, body) = http_get(&maddr, "/metrics").expect("GET /metrics");
        assert!(status.contains("200"), "{status}");
        assert!(body.contains("# TYPE latscope_connections_accepted_total counter"));
        let mut p = Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run promtool");
        std::io::Write::write_all(&mut p.stdin.take().expect("stdin"), body.as_bytes())
            .expect("to promtool");
        let out = p.wait_with_output().expect("promtool");
        assert!(
            out.status.success(),
            "{what}: promtool check metrics: {}{}\n{body}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        body
    };
    check("no targets");
    let target = std::thread::scope(|s| {
        let t = s.spawn(|| run_named_targets(&dir, &listen, 1));
        holds(Duration::from_secs(30), "a target's series", || {
            http_get(&maddr, "/metrics").is_ok_and(|(_, b)| b.contains("latscope_cycles_total{"))
        });
        check("a target streaming");
        t.join()
    });
    assert!(target.is_ok(), "the target");
    let body = check("its run ended");
    assert!(body.contains("latscope_ended{"), "{body}");
    let mut s = std::net::TcpStream::connect(&maddr).expect("connect");
    std::io::Write::write_all(
        &mut s,
        b"GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text; version=1.0.0\r\n\r\n",
    )
    .expect("request");
    let mut resp = String::new();
    std::io::Read::read_to_string(&mut s, &mut resp).expect("response");
    assert!(
        resp.contains("Content-Type: application/openmetrics-text; version=1.0.0"),
        "{resp}"
    );
    assert!(resp.ends_with("# EOF\n"), "{resp}");
    drop(host.proc.child().kill());
}

/// A timerlat run (protocol version 6, made by `latscope-host synth
/// --timerlat`: this machine's kernel has no timerlat tracer) streamed
/// into a listening recorder: `/metrics` has each thread's timerlat
/// series by context, the classic text passes `promtool check metrics`,
/// and the final counts and maxima are the recording's report's.
#[test]
fn timerlat_series_pass_promtool_and_match_the_report() {
    require!(
        have("promtool"),
        "promtool is not installed (apt-get install prometheus)"
    );
    let dir = Scratch::new("promtool-timerlat");
    let lsr = dir.join("timerlat.lsr");
    let out = latscope_testkit::host::host(&[
        "synth",
        "--timerlat",
        "--reports",
        "4",
        "--timerlat-lost-every",
        "700",
        "-o",
        &lsr.display().to_string(),
    ]);
    assert!(out.status.success(), "synth: {out:?}");
    let (mut host, listen, maddr) = recorder(&dir.join("rec"));
    let bytes = std::fs::read(&lsr).expect("the recording");
    let mut conn = std::net::TcpStream::connect(&listen).expect("connect");
    std::io::Write::write_all(&mut conn, &bytes).expect("stream");
    holds(Duration::from_secs(30), "the run's end", || {
        http_get(&maddr, "/metrics").is_ok_and(|(_, b)| {
            b.lines()
                .any(|l| l.starts_with("latscope_ended{") && l.ends_with(" 1"))
        })
    });
    let (_, body) = http_get(&maddr, "/metrics").expect("GET /metrics");
    let mut p = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    std::io::Write::write_all(&mut p.stdin.take().expect("stdin"), body.as_bytes())
        .expect("to promtool");
    let checked = p.wait_with_output().expect("promtool");
    assert!(
        checked.status.success(),
        "promtool check metrics: {}{}\n{body}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    let (doc, code, err) = host_report_json(&lsr);
    assert_eq!(code, 1, "lost entries make the run incomplete: {err}");
    let run = &doc["runs"][0];
    let id = run["run_id"].as_str().expect("run id");
    let threads = run["timerlat"].as_array().expect("timerlat");
    assert_eq!(threads.len(), 2, "{run}");
    let series = |name: &str, thread: u64, context: &str| -> f64 {
        let want = format!("thread=\"{thread}\",cpu=\"{thread}\",context=\"{context}\"}} ");
        let line = body
            .lines()
            .find(|l| l.starts_with(name) && l.contains(id) && l.contains(&want))
            .unwrap_or_else(|| panic!("{name} {want} in\n{body}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    for t in threads {
        let i = t["thread"].as_u64().unwrap();
        for c in t["contexts"].as_array().unwrap() {
            let ctx = c["context"].as_str().unwrap();
            let count = series("latscope_timerlat_latency_seconds_count{", i, ctx);
            assert_eq!(count, c["count"].as_u64().unwrap() as f64, "T{i} {ctx}");
            let max = series("latscope_timerlat_latency_max_seconds{", i, ctx);
            assert!(close(max, seconds(&c["max_ns"])), "T{i} {ctx} max {max}");
            let lost = series("latscope_timerlat_lost_entries_total{", i, ctx);
            assert_eq!(lost, c["lost"].as_u64().unwrap() as f64, "T{i} {ctx}");
        }
    }
    // the recorder stored them: its recording reports the same figures
    let recs = recordings(&dir.join("rec"));
    assert_eq!(recs.len(), 1, "{recs:?}");
    let (stored, _, err) = host_report_json(&recs[0]);
    assert_eq!(stored["runs"][0]["timerlat"], run["timerlat"], "{err}");
    drop(host.proc.child().kill());
}

#[test]
fn prometheus_sees_exact_final_figures_with_board_labels() {
    require!(
        have("prometheus"),
        "prometheus is not installed (apt-get install prometheus)"
    );
    let dir = Scratch::new("prometheus");
    let (mut host, listen, maddr) = recorder(&dir.join("rec"));
    let prom = Prometheus::start(&maddr, &deploy("prometheus/latscope.rules.yml"));
    run_named_targets(&dir, &listen, TARGETS);
    // Every run ended and Prometheus scraped its final figures.
    prom.wait_for(
        "sum(latscope_runs_ended_total{how=\"bye\"})",
        Duration::from_secs(30),
        |s| s.first().is_some_and(|x| x.value == TARGETS as f64),
    );
    let ended = prom.wait_for("latscope_ended == 1", Duration::from_secs(30), |s| {
        s.len() == TARGETS
    });
    check_labels(&ended);
    // Prometheus asked for OpenMetrics and got it, every time.
    let om = prom.query("latscope_metrics_scrapes_total{format=\"openmetrics\"}");
    let text = prom.query("latscope_metrics_scrapes_total{format=\"text\"}");
    assert!(om.first().is_some_and(|s| s.value >= 1.0), "{om:?}");
    assert!(text.first().is_some_and(|s| s.value == 0.0), "{text:?}");
    check_final_figures(&prom, &dir.join("rec"));
    // The dashboard's expressions use the recording rules too.
    check_dashboard(&prom);
    drop(host.proc.child().kill());
}
