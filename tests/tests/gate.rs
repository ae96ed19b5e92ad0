//! `latscope-host compare --gate` on real runs of this machine: four idle
//! runs against four more idle runs (an A/A gate) must not fail, and
//! four runs under `stress-ng --fork 8 --hdd 2` must fail against the idle ones,
//! naming the quantile that decided. The A/A false-alarm rate over many
//! gates is a benchmark's figure (`bench/gate-aa`), not this test's.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use std::time::Duration;

use latscope_testkit::host::{bins, host, read_json};
use latscope_testkit::poll::holds;
use latscope_testkit::precondition::have;
use latscope_testkit::{require, Scratch};

/// Runs per side.
const RUNS: usize = 4;

/// One 2 s run of two threads on CPUs 0 and 1 into `rec`.
fn measure(rec: &Path) {
    let st = Command::new(bins().latscope)
        .args([
            "-t",
            "2",
            "-a",
            "0,1",
            "-i",
            "1000",
            "-D",
            "2s",
            "-q",
            "--best-effort",
        ])
        .arg(format!("--stream={}", rec.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run latscope");
    assert!(st.success(), "latscope {st}");
}

fn runs(dir: &Path, tag: &str) -> Vec<PathBuf> {
    (0..RUNS)
        .map(|i| {
            let rec = dir.join(format!("{tag}{i}.lsr"));
            measure(&rec);
            rec
        })
        .collect()
}

/// Processes named `stress-ng` (the parent and its workers).
fn stress_processes() -> usize {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    std::fs::read_to_string(e.path().join("comm"))
                        .is_ok_and(|c| c.trim_end().starts_with("stress-ng"))
                })
                .count()
        })
        .unwrap_or(0)
}

/// [`runs`] under `stress-ng --fork 8 --hdd 2` once its workers run,
/// stopped by SIGINT (stress-ng then stops its workers; SIGKILL would
/// leave them running).
fn stressed_runs(dir: &Path) -> Vec<PathBuf> {
    let mut load = Command::new("stress-ng")
        .args(["--fork", "8", "--hdd", "2", "--timeout", "120s", "--quiet"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run stress-ng");
    holds(
        Duration::from_secs(10),
        "stress-ng's workers running",
        || stress_processes() > 10,
    );
    let recs = runs(dir, "stressed");
    let st = Command::new("kill")
        .args(["-INT", &load.id().to_string()])
        .status()
        .expect("kill");
    assert!(st.success(), "kill -INT stress-ng");
    let _ = load.wait();
    recs
}

fn gate(dir: &Path, base: &[PathBuf], cand: &[PathBuf]) -> (i32, String, serde_json::Value) {
    let json = dir.join("gate.json");
    let mut args = vec!["compare".to_string(), "--gate".into(), "--verdicts".into()];
    args.push(json.display().to_string());
    args.push("--baseline".into());
    args.extend(base.iter().map(|p| p.display().to_string()));
    args.push("--candidate".into());
    args.extend(cand.iter().map(|p| p.display().to_string()));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = host(&a);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    (o.status.code().unwrap_or(-1), text, read_json(&json))
}

#[test]
fn idle_runs_pass_or_stay_inconclusive_and_a_stressed_candidate_fails() {
    require!(have("stress-ng"), "stress-ng");
    let dir = Scratch::new("gate");
    let idle = runs(dir.path(), "idle");
    let again = runs(dir.path(), "again");
    let stressed = stressed_runs(dir.path());

    let (code, text, doc) = gate(dir.path(), &idle, &again);
    assert_ne!(code, 5, "an A/A gate failed:\n{text}");
    assert_ne!(doc["outcome"], "fail", "{doc:#}");
    assert_eq!(doc["baseline_runs"], RUNS);

    let (code, text, doc) = gate(dir.path(), &idle, &stressed);
    assert_eq!(code, 5, "the stressed runs passed the gate:\n{text}");
    assert!(text.contains("gate: FAIL: p"), "{text}");
    let failed: Vec<&serde_json::Value> = doc["quantiles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["outcome"] == "fail")
        .collect();
    assert!(!failed.is_empty(), "{doc:#}");
    for q in failed {
        assert!(
            q["lower"].as_f64().unwrap() > 1.1,
            "a fail within the tolerance: {q}"
        );
    }
}

#[test]
fn one_run_a_side_is_inconclusive_and_bad_values_are_refused() {
    let dir = Scratch::new("gate-one");
    let a = dir.path().join("a.lsr");
    let b = dir.path().join("b.lsr");
    for (f, seed) in [(&a, "1"), (&b, "2")] {
        let o = host(&["synth", "--seed", seed, "-o", &f.display().to_string()]);
        assert!(o.status.success());
    }
    let (code, text, doc) = gate(
        dir.path(),
        std::slice::from_ref(&a),
        std::slice::from_ref(&b),
    );
    assert_eq!(code, 6, "{text}");
    assert!(doc["quantiles"]
        .as_array()
        .unwrap()
        .iter()
        .all(|q| q["enough_runs"] == false));
    for bad in [["--tolerance", "-5"], ["--confidence", "100"]] {
        let o = host(&[
            "compare",
            "--gate",
            bad[0],
            bad[1],
            "--baseline",
            &a.display().to_string(),
            "--candidate",
            &b.display().to_string(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
        assert_eq!(
            String::from_utf8_lossy(&o.stderr).lines().count(),
            1,
            "{bad:?}"
        );
    }
}
