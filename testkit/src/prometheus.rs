//! A private Prometheus (Debian's `prometheus` package) for the tests: its
//! own free port, temporary storage and a scrape configuration for one
//! recorder's `/metrics` on loopback, queried through its HTTP API as a
//! lab's dashboards query it.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::host::{free_local_addr, http_get, Reaper};
use crate::Scratch;

/// Run `promtool ARGS`; its combined output, and whether it succeeded.
pub fn promtool(args: &[&str]) -> (bool, String) {
    let out = Command::new("promtool")
        .args(args)
        .output()
        .expect("run promtool");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// One series of a query result: its labels and value.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Labels, `__name__` included when the result has one.
    pub labels: BTreeMap<String, String>,
    /// The value.
    pub value: f64,
}

/// A running private Prometheus, killed on drop.
pub struct Prometheus {
    /// Its `127.0.0.1:PORT`.
    pub addr: String,
    _proc: Reaper,
    _dir: Scratch,
}

impl Prometheus {
    /// Start one that scrapes `target` (`ADDR:PORT`, path `/metrics`) every
    /// second and evaluates `rules` every second; wait until it is ready.
    pub fn start(target: &str, rules: &Path) -> Prometheus {
        let dir = Scratch::new("prometheus");
        let config = dir.join("prometheus.yml");
        fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 rule_files:\n  - {}\n\
                 scrape_configs:\n  - job_name: latscope\n    static_configs:\n      \
                 - targets: [\"{target}\"]\n        labels:\n          recorder: test\n",
                rules.display()
            ),
        )
        .expect("write prometheus.yml");
        // A port picked free beforehand can be taken by another test's
        // socket before prometheus binds it: a prometheus that ended, or
        // that does not listen on its port itself, starts again on a new one.
        for _ in 0..5 {
            let addr = free_local_addr();
            let port = crate::host::port_of(&addr);
            let mut proc = Reaper::new(
                Command::new("prometheus")
                    .arg(format!("--config.file={}", config.display()))
                    .arg(format!(
                        "--storage.tsdb.path={}",
                        dir.join("data").display()
                    ))
                    .arg(format!("--web.listen-address={addr}"))
                    .stdout(Stdio::null())
                    .stderr(fs::File::create(dir.join("prometheus.log")).expect("log file"))
                    .spawn()
                    .expect("run prometheus"),
            );
            let pid = proc.child().id();
            let ready = crate::wait::poll(Duration::from_secs(30), || {
                if proc.child().try_wait().ok().flatten().is_some() {
                    return Some(false);
                }
                let answers = http_get(&addr, "/-/ready").is_ok_and(|(s, _)| s.contains(" 200 "));
                (answers && crate::wait::listens_on(pid, port)).then_some(true)
            });
            match ready {
                Some(true) => {
                    return Prometheus {
                        addr,
                        _proc: proc,
                        _dir: dir,
                    }
                }
                Some(false) => {
                    eprintln!("prometheus ended without listening on {addr}: again on another port")
                }
                None => panic!(
                    "prometheus not ready on {addr} within 30 s; log:\n{}",
                    fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
                ),
            }
        }
        panic!("prometheus could not listen on five free ports in a row");
    }

    /// `GET /api/v1/query?query=EXPR` (an instant query at the latest
    /// time): the samples of a vector result, or the one of a scalar.
    pub fn query(&self, expr: &str) -> Vec<Sample> {
        let path = format!("/api/v1/query?query={}", url_encode(expr));
        let (status, body) = http_get(&self.addr, &path).expect("query prometheus");
        let v: Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{expr}: not JSON ({e}): {status} {body}"));
        assert_eq!(v["status"], "success", "{expr}: {body}");
        let data = &v["data"];
        match data["resultType"].as_str() {
            Some("vector") => data["result"]
                .as_array()
                .map(|a| a.iter().map(sample).collect())
                .unwrap_or_default(),
            Some("scalar") => vec![Sample {
                labels: BTreeMap::new(),
                value: number(&data["result"][1]),
            }],
            other => panic!("{expr}: result type {other:?}"),
        }
    }

    /// Poll `expr` until `done` holds for its samples, within `limit`.
    pub fn wait_for(
        &self,
        expr: &str,
        limit: Duration,
        done: impl Fn(&[Sample]) -> bool,
    ) -> Vec<Sample> {
        let deadline = Instant::now() + limit;
        loop {
            let s = self.query(expr);
            if done(&s) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "{expr}: condition not met within {limit:?}; last result {s:?}"
            );
            thread::sleep(Duration::from_millis(250));
        }
    }
}

fn number(v: &Value) -> f64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a sample value: {v}"))
}

fn sample(v: &Value) -> Sample {
    let labels = v["metric"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    Sample {
        labels,
        value: number(&v["value"][1]),
    }
}

/// Percent-encode a query parameter.
fn url_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
