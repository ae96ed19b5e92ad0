//! The host's workflows through its own binary, with nothing but the host:
//! synthetic recordings (`synth`) and synthetic targets over TCP
//! (`simulate`). They need no Linux target, so they run on every platform
//! the host builds for (CI runs them for Windows under Wine too): record
//! from a file, report (text, JSON, to stdout and to a file), plots,
//! compare, and a TCP recorder with its acks and /metrics.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

const HOST: &str = env!("CARGO_BIN_EXE_latscope-host");

// The tests' one scratch directory and one way to wait, included as they
// are: the test kit itself does not build for Windows, where these run too.
// Not every function of them is used here.
#[allow(dead_code)]
#[path = "../../testkit/src/poll.rs"]
mod poll;
#[allow(dead_code)]
#[path = "../../testkit/src/scratch.rs"]
mod scratch;
use scratch::Scratch;

fn host(args: &[&str]) -> Output {
    Command::new(HOST)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run latscope-host")
}

/// `host(args)`, which must succeed; its standard output.
fn host_ok(args: &[&str]) -> String {
    let out = host(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "latscope-host {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn p(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

fn synth(out: &Path, threads: u16, reports: u32, samples: u32) {
    host_ok(&[
        "synth",
        "--threads",
        &threads.to_string(),
        "--reports",
        &reports.to_string(),
        "--samples",
        &samples.to_string(),
        "-o",
        p(out),
    ]);
}

fn report_json(rec: &Path) -> Value {
    let text = host_ok(&["report", "--format", "json", p(rec)]);
    serde_json::from_str(&text).expect("the report is JSON")
}

#[test]
fn a_recording_records_reports_and_plots_with_the_figures_it_was_made_with() {
    let dir = Scratch::new("file");
    let (threads, reports, samples) = (3u16, 4u32, 700u32);
    let made = dir.join("made.lsr");
    synth(&made, threads, reports, samples);

    // `record` from a file keeps the stream byte for byte.
    let rec = dir.join("rec.lsr");
    host_ok(&["record", p(&made), "-o", p(&rec), "-q"]);
    let (a, b) = (std::fs::read(&made).unwrap(), std::fs::read(&rec).unwrap());
    assert!(!a.is_empty());
    assert!(a == b, "the recording differs from its input");

    let doc = report_json(&rec);
    let run = &doc["runs"][0];
    assert_eq!(run["exact_at_end"], Value::Bool(true), "{run}");
    let th = run["threads"].as_array().expect("threads");
    assert_eq!(th.len(), usize::from(threads));
    for t in th {
        assert_eq!(t["cycles"], u64::from(reports * samples), "{t}");
        assert_eq!(t["count"], u64::from(reports * samples), "{t}");
        let sum: u64 = t["buckets"]
            .as_array()
            .expect("buckets")
            .iter()
            .map(|b| b["count"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, u64::from(reports * samples), "{t}");
    }

    // The text report is the same on standard output and in a -o file,
    // with a row per thread.
    let text = host_ok(&["report", p(&rec)]);
    let file = dir.join("report.txt");
    host_ok(&["report", p(&rec), "-o", p(&file)]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    for i in 0..threads {
        assert!(
            text.lines().any(|l| l.starts_with(&format!("T{i} "))),
            "{text}"
        );
    }

    // Plots in both formats.
    let png = dir.join("plot.png");
    let svg = dir.join("plot.svg");
    host_ok(&["report", p(&rec), "--plot", p(&png), "-o", p(&file)]);
    host_ok(&["report", p(&rec), "--plot", p(&svg), "-o", p(&file)]);
    let png = std::fs::read(&png).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert!(png.len() > 10_000, "a PNG of {} bytes", png.len());
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(
        svg.matches("<polyline").count() >= usize::from(threads),
        "no lines drawn"
    );
}

#[test]
fn compare_shows_the_ratio_of_two_recordings_and_plots_them() {
    let dir = Scratch::new("compare");
    let (a, b) = (dir.join("a.lsr"), dir.join("b.lsr"));
    synth(&a, 2, 3, 500);
    synth(&b, 2, 3, 1500);
    let svg = dir.join("cmp.svg");
    let out = host_ok(&["compare", p(&a), p(&b), "--plot", p(&svg)]);
    // cycles over all threads: 2 x 3 x 500 against 2 x 3 x 1500.
    let cycles = out
        .lines()
        .find(|l| l.starts_with("cycles "))
        .unwrap_or_else(|| panic!("no cycles row: {out}"));
    let cells: Vec<&str> = cycles.split_whitespace().collect();
    assert_eq!(cells, ["cycles", "3000", "9000", "3.00×"], "{out}");
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg") && svg.matches("<polyline").count() >= 2);
}

/// A child that is killed if the test ends without waiting for it.
struct Proc(Child);

impl Proc {
    fn wait(&mut self, limit: Duration) -> ExitStatus {
        poll::until(limit, "latscope-host to end", || {
            self.0.try_wait().expect("try_wait")
        })
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The rest of a line of `rx` that starts with `prefix`.
fn line_after(rx: &mpsc::Receiver<String>, prefix: &str, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) => {
                if let Some(rest) = l.strip_prefix(prefix) {
                    return rest.to_string();
                }
            }
            Err(e) => panic!("no line {prefix:?} within {limit:?} ({e})"),
        }
    }
}

fn http_get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect to /metrics");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).expect("read the response");
    body
}

/// The `latscope_cycles` sample of `board` on a /metrics page, if any.
fn cycles_of(page: &str, board: &str) -> Option<f64> {
    page.lines()
        .filter(|l| l.starts_with("latscope_cycles") && l.contains(&format!("board=\"{board}\"")))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
}

#[test]
fn targets_over_tcp_are_acknowledged_recorded_exactly_and_shown_on_metrics() {
    let dir = Scratch::new("tcp");
    let out = dir.join("recs");
    let targets = 2u32;
    let mut rec = Proc(
        Command::new(HOST)
            .args([
                "record",
                "--listen",
                "127.0.0.1:0",
                "--metrics",
                "127.0.0.1:0",
            ])
            .args([
                "--exit-after",
                &targets.to_string(),
                "-q",
                "--out-dir",
                p(&out),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the recorder"),
    );
    let (tx, rx) = mpsc::channel();
    let stderr = rec.0.stderr.take().unwrap();
    thread::spawn(move || {
        for l in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let limit = Duration::from_secs(30);
    let metrics = line_after(&rx, "latscope-host: metrics at http://", limit);
    let metrics = metrics.trim_end_matches("/metrics").to_string();
    let listen = line_after(&rx, "latscope-host: listening on ", limit);
    let listen = listen.split(',').next().unwrap().to_string();

    let truth = dir.join("truth.json");
    let mut sim = Proc(
        Command::new(HOST)
            .args(["simulate", &listen, "--targets", &targets.to_string()])
            .args(["--reports", "4", "--prefix", "wf", "--truth", p(&truth)])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("start the simulated targets"),
    );

    // While they stream, /metrics counts both boards' cycles.
    let deadline = Instant::now() + limit;
    loop {
        let page = http_get(&metrics, "/metrics");
        assert!(page.starts_with("HTTP/1."), "{page}");
        let seen =
            (0..targets).all(|i| cycles_of(&page, &format!("wf-{i}")).is_some_and(|c| c > 0.0));
        if seen {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "both boards never on /metrics: {page}"
        );
        thread::sleep(Duration::from_millis(50));
    }

    // Every bye acknowledged (simulate's status), every run ended.
    assert!(
        sim.wait(limit).success(),
        "a simulated target saw no ack of its bye"
    );
    assert_eq!(rec.wait(limit).code(), Some(0), "recorder status");

    let truth: Value = serde_json::from_str(&std::fs::read_to_string(&truth).unwrap()).unwrap();
    let mut recs: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|f| f.extension().is_some_and(|x| x == "lsr"))
        .collect();
    recs.sort();
    assert_eq!(recs.len(), targets as usize, "{recs:?}");
    for f in &recs {
        let doc = report_json(f);
        let run = &doc["runs"][0];
        let id = run["run_id"].as_str().expect("run_id");
        let want = &truth[id];
        assert!(want.is_object(), "run {id} is not among {truth}");
        assert_eq!(run["exact_at_end"], Value::Bool(true), "{}", f.display());
        let (got, want) = (
            run["threads"].as_array().unwrap(),
            want["threads"].as_array().unwrap(),
        );
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            for k in ["count", "min_ns", "max_ns"] {
                assert_eq!(g[k], w[k], "{k} of {}", f.display());
            }
            let buckets: serde_json::Map<String, Value> = g["buckets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| (b["bucket"].to_string(), b["count"].clone()))
                .collect();
            assert_eq!(
                Value::Object(buckets),
                w["buckets"],
                "buckets of {}",
                f.display()
            );
        }
    }
}
