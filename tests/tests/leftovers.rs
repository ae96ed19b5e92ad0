//! Nothing left behind: a real `--explain` run killed with SIGKILL leaves
//! its trace instance and its `/dev/shm/cyclictest<PID>`; the next run of
//! latscope (any run, here one without `--explain`) removes both and says
//! so in one line.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use latscope_testkit::host::{bins, Reaper};
use latscope_testkit::wait::holds;
use latscope_testkit::{is_root, missing};

/// The tracefs with instances, if mounted.
fn tracefs() -> Option<PathBuf> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("instances").is_dir())
}

#[test]
fn a_killed_explain_runs_leftovers_go_at_the_next_start() {
    if !is_root() {
        return missing("trace instances need root");
    }
    let Some(root) = tracefs() else {
        return missing("tracefs is not mounted");
    };
    if !Path::new("/dev/shm").is_dir() {
        return missing("/dev/shm");
    }
    let mut killed = Reaper::new(
        Command::new(bins().latscope)
            .args(["-t", "1", "-a", "0", "-i", "1000", "-D", "60", "-q"])
            .args(["--best-effort", "--explain", "200"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run latscope"),
    );
    let pid = killed.child().id();
    let instance = root.join(format!("instances/latscope-{pid}"));
    let status = PathBuf::from(format!("/dev/shm/cyclictest{pid}"));
    holds(Duration::from_secs(30), "the run's instance", || {
        instance.is_dir() && status.exists()
    });
    killed.child().kill().expect("SIGKILL");
    let _ = killed.child().wait();
    killed.0 = None;
    // The fault happened: SIGKILL left both behind.
    assert!(
        instance.is_dir(),
        "{} gone after SIGKILL",
        instance.display()
    );
    assert!(status.exists(), "{} gone after SIGKILL", status.display());

    let out = Command::new(bins().latscope)
        .args(["-t", "1", "-i", "1000", "-D", "1", "-q", "--best-effort"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("run latscope");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {stderr}", out.status);
    assert!(!instance.exists(), "{} left", instance.display());
    assert!(!status.exists(), "{} left", status.display());
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("# removed what"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains(&format!("trace instance latscope-{pid}"))
            && lines[0].contains(&format!("/dev/shm/cyclictest{pid}")),
        "{stderr}"
    );
    // Nothing left: the next run has nothing to say.
    let again = Command::new(bins().latscope)
        .args(["-t", "1", "-i", "1000", "-D", "1", "-q", "--best-effort"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .output()
        .expect("run latscope");
    let again = String::from_utf8_lossy(&again.stderr);
    assert!(!again.contains(&format!("latscope-{pid}")), "{again}");
}
