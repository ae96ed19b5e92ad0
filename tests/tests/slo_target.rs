//! `latscope --slo` on this machine: the verdicts at the end of a real
//! run (15 blocks of 200 ms), the exit status they make (0 when every
//! goal passes, 5 when one fails, `--json`'s `return_code` the same), the
//! same verdicts and intervals `latscope-host report --slo` gives from the
//! run's recording, and one line with status 2 for a bad goal list.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use latscope_testkit::host::{bins, host, read_json};
use latscope_testkit::Scratch;

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// A 3 s run of two threads with 200 ms reports, deciding `goals`.
fn run(dir: &Path, goals: &str) -> Output {
    Command::new(bins().latscope)
        .args([
            "-t",
            "2",
            "-a",
            "0,1",
            "-i",
            "1000",
            "-D",
            "3",
            "-q",
            "--best-effort",
        ])
        .args(["--report-interval", "200ms", "--slo", goals])
        .arg(format!("--stream={}", s(&dir.join("run.lsr"))))
        .arg(format!("--json={}", s(&dir.join("run.json"))))
        .stdin(Stdio::null())
        .output()
        .expect("run latscope")
}

/// The `# T:N GOAL: OUTCOME` verdict lines: (thread, goal, outcome, the
/// rest of the line).
fn verdict_lines(text: &str) -> Vec<(usize, String, String, String)> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("# T:")?;
            let (t, rest) = rest.split_once(' ')?;
            let (goal, rest) = rest.split_once(": ")?;
            let outcome = rest.split([',', ' ']).next()?.to_lowercase();
            Some((t.parse().ok()?, goal.to_string(), outcome, rest.to_string()))
        })
        .collect()
}

#[test]
fn the_target_decides_its_goals_as_the_host_does_from_the_recording() {
    let dir = Scratch::new("slo-target");
    let goals = "p50<=1s,p99<=5s,max<=10s,majflt<=0";
    let o = run(dir.path(), goals);
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains(&format!("# Latency goals {goals}@95% (for the run): PASS")),
        "{text}"
    );
    assert_eq!(read_json(&dir.path().join("run.json"))["return_code"], 0);
    let target = verdict_lines(&text);
    assert_eq!(target.len(), 8, "{text}");

    let json = dir.path().join("verdicts.json");
    let h = host(&[
        "report",
        "--slo",
        goals,
        "--verdicts",
        s(&json),
        s(&dir.path().join("run.lsr")),
    ]);
    assert_eq!(
        h.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&h.stderr)
    );
    let doc = read_json(&json);
    let hosts = doc["runs"][0]["verdicts"].as_array().unwrap();
    for ((t, goal, outcome, rest), v) in target.iter().zip(hosts) {
        assert_eq!(v["thread"].as_u64(), Some(*t as u64));
        assert_eq!(v["goal"].as_str(), Some(goal.as_str()));
        assert_eq!(v["outcome"].as_str(), Some(outcome.as_str()), "{rest}");
        if let Some(upper) = v["interval"]["upper"].as_f64() {
            // the target prints the bound as a percentage with 3 decimals
            let shown = format!("{:.3} %]", upper * 100.0);
            assert!(rest.contains(&shown), "target {rest} vs host {shown}");
        }
    }
}

#[test]
fn a_failed_goal_is_status_5_and_a_bad_list_status_2() {
    let dir = Scratch::new("slo-target-fail");
    let o = run(dir.path(), "p50<=1us,majflt<=0");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(5), "{out}");
    assert!(out.contains("(for the run): FAIL"), "{out}");
    let lines = verdict_lines(&out);
    assert!(
        lines
            .iter()
            .any(|(_, g, o, _)| g == "p50<=1us" && o == "fail"),
        "{lines:?}"
    );
    assert_eq!(read_json(&dir.path().join("run.json"))["return_code"], 5);

    let o = Command::new(bins().latscope)
        .args(["--slo", "p100<=1us", "-D", "1"])
        .output()
        .expect("run latscope");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("max<="), "{err}");
}
