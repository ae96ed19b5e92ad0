//! Missing privilege, the ways it happens on a real system:
//!
//! * uid 0 without any capability (`setpriv --inh-caps=-all
//!   --bounding-set=-all`) under `prlimit --memlock=0 --rtprio=0`: every
//!   privileged step fails in turn;
//! * a real unprivileged user (uid and gid 65534, `nobody`/`nogroup`, no
//!   groups) running a copy of the binary from a folder it can reach:
//!   files only root may open (`/dev/cpu_dma_latency`, tracefs) fail too,
//!   which uid 0 without capabilities still opens.
//!
//! Expected: one clear line naming what is missing and the flags that run
//! without it, exit status 3 (documented in `latscope --help`); with
//! `--best-effort` a run that completes and flags its degradation in the
//! output and in the stream's hello.
//!
//! Needs root (to drop from) and util-linux's setpriv and prlimit; see
//! `latscope_testkit::precondition` for what happens without them.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use latscope_core::wire::Body;
use latscope_testkit::host::bins;
use latscope_testkit::precondition::tracefs;
use latscope_testkit::target::decode_all;
use latscope_testkit::Scratch;
use latscope_testkit::{have, is_root, missing};

/// Whether the test can run (root, setpriv, prlimit); under CI it must.
fn runnable() -> bool {
    if !is_root() {
        missing("must run as root (it drops privileges from root)");
        return false;
    }
    if !(have("setpriv") && have("prlimit")) {
        missing("setpriv and prlimit (util-linux) are required");
        return false;
    }
    true
}

/// Run latscope without capabilities, memlock 0 and rtprio 0.
fn unprivileged(args: &[&str]) -> Output {
    Command::new("prlimit")
        .args(["--memlock=0", "--rtprio=0"])
        .args(["setpriv", "--inh-caps=-all", "--bounding-set=-all", "--"])
        .arg(bins().latscope)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run prlimit/setpriv")
}

/// The lines of stderr that are latscope's messages (informational lines
/// start with `#`, as in cyclictest).
fn messages(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn without_privilege_one_clear_line_and_exit_3() {
    if !runnable() {
        return;
    }
    // (flags, what the message must name, flags it must suggest)
    let cases: &[(&[&str], &str, &[&str])] = &[
        // Default: mlockall is the first privileged step.
        (&[], "mlockall", &["--no-mlock", "--best-effort"]),
        (&["-m", "-t", "2"], "mlockall", &["--no-mlock"]),
        // Without mlock, SCHED_FIFO is refused next.
        (
            &["--no-mlock"],
            "SCHED_FIFO",
            &["--policy other", "--best-effort"],
        ),
        (
            &["--no-mlock", "--policy", "rr", "-p", "10"],
            "SCHED_RR",
            &["--policy other"],
        ),
    ];
    for (flags, names, suggests) in cases {
        let mut args = vec!["-l", "200", "-q"];
        args.extend_from_slice(flags);
        let o = unprivileged(&args);
        let msgs = messages(&o);
        assert_eq!(o.status.code(), Some(3), "{args:?}: {msgs:?}");
        assert_eq!(msgs.len(), 1, "{args:?}: not one line: {msgs:?}");
        let m = &msgs[0];
        assert!(m.starts_with("latscope: "), "{m}");
        assert!(m.contains(names), "{args:?}: does not name {names}: {m}");
        for s in *suggests {
            assert!(m.contains(s), "{args:?}: does not suggest {s}: {m}");
        }
        assert!(
            o.stdout.is_empty(),
            "{args:?}: printed results although it did not run"
        );
    }
}

#[test]
fn the_suggested_flags_run_without_privilege() {
    if !runnable() {
        return;
    }
    let o = unprivileged(&["-l", "200", "-q", "--no-mlock", "--policy", "other"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", messages(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("C:    200"), "{out}");
    // a non-RT policy needs no privilege and gets 1 ns timer slack
    let o = unprivileged(&[
        "-l",
        "100",
        "-q",
        "--no-mlock",
        "--policy",
        "other",
        "--stream",
        "-",
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", messages(&o));
    let Body::Hello(h) = &decode_all(&o.stdout)[0].body else {
        panic!("hello first")
    };
    assert_eq!(h.config.timer_slack_ns, 1);
}

#[test]
fn best_effort_degrades_and_says_so_in_output_and_stream() {
    if !runnable() {
        return;
    }
    let dir = Scratch::new("privilege");
    let rec = dir.join("be.lsr");
    let json = dir.join("be.json");
    let stream = format!("--stream={}", rec.display());
    let json_arg = format!("--json={}", json.display());
    let o = unprivileged(&[
        "-t",
        "2",
        "-a",
        "0,1",
        "-l",
        "300",
        "-q",
        "--best-effort",
        &stream,
        &json_arg,
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", messages(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("degraded"), "{err}");
    assert!(err.contains("memory not locked"), "{err}");
    assert!(err.contains("SCHED_FIFO"), "{err}");
    // The stream's hello flags the degradation.
    let frames = decode_all(&std::fs::read(&rec).unwrap());
    let h = frames
        .iter()
        .find_map(|f| match &f.body {
            Body::Hello(h) => Some(h.clone()),
            _ => None,
        })
        .expect("a hello frame");
    let logs: Vec<String> = frames
        .iter()
        .filter_map(|f| match &f.body {
            Body::Log(l) => Some(l.text.to_string()),
            _ => None,
        })
        .collect();
    let g = h.config.degraded;
    assert!(g.no_mlock && g.no_rt_policy, "{g:?}");
    assert!(!h.config.mlock, "hello says memory is locked");
    assert!(!h.config.policy.is_rt(), "hello says {:?}", h.config.policy);
    assert!(
        logs.iter().any(|l| l.contains("degraded")),
        "no degradation log frame: {logs:?}"
    );
    // And the host's report shows it.
    let r = Command::new(bins().host)
        .arg("report")
        .arg(&rec)
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&r.stdout).contains("DEGRADED"));
}

#[test]
fn best_effort_live_line_shows_the_priority_it_really_runs_at() {
    if !runnable() {
        return;
    }
    // cyclictest prints P: 0 for a non-RT thread; a degraded run must not
    // claim P:80.
    let o = unprivileged(&["-l", "100", "-q", "--best-effort"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", messages(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.starts_with("T: 0"))
        .unwrap_or_else(|| panic!("no T: line: {out}"));
    assert!(
        line.contains("P: 0"),
        "degraded run claims RT priority: {line}"
    );
}

/// A copy of the target in a fresh folder (mode 755) that any user can
/// reach; a checkout in root's home is not.
struct Reachable {
    _dir: Scratch,
    bin: PathBuf,
}

impl Reachable {
    fn new() -> Reachable {
        let dir = Scratch::new("nobody");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let bin = dir.join("latscope");
        std::fs::copy(bins().latscope, &bin).expect("copy the binary");
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        Reachable { _dir: dir, bin }
    }

    /// Run it as uid and gid 65534 without supplementary groups.
    fn run_as_nobody(&self, args: &[&str]) -> Output {
        as_nobody(&self.bin, args)
    }
}

fn as_nobody(bin: &Path, args: &[&str]) -> Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(bin)
        .args(args)
        .current_dir("/")
        .stdin(Stdio::null())
        .output()
        .expect("run setpriv")
}

/// The flags an exit status 3 message suggests: after `without it: `, up
/// to the alternative in parentheses.
fn suggested(message: &str) -> Vec<String> {
    let flags = message
        .split("without it: ")
        .nth(1)
        .unwrap_or_else(|| panic!("no flags suggested: {message}"));
    let flags = flags.split(" (").next().unwrap_or("");
    flags.split_whitespace().map(str::to_string).collect()
}

#[test]
fn a_real_unprivileged_user_runs_with_the_advised_flags() {
    if !runnable() {
        return;
    }
    let t = Reachable::new();
    let o = t.run_as_nobody(&["-l", "200", "-q"]);
    let msgs = messages(&o);
    assert_eq!(o.status.code(), Some(3), "{msgs:?}");
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    let flags = suggested(&msgs[0]);
    // one retry with what the message suggests runs
    let mut args = vec!["-l", "200", "-q"];
    args.extend(flags.iter().map(String::as_str));
    let o = t.run_as_nobody(&args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {:?}", messages(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("C:    200"), "{out}");
    // and the README gives the same advice
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let readme = std::fs::read_to_string(readme).unwrap();
    let advice = format!("`{}`", flags.join(" "));
    assert!(
        readme.contains(&advice),
        "README does not advise {advice} for a run without privilege"
    );
}

#[test]
fn an_unprivileged_explain_says_permission_was_denied() {
    if !runnable() {
        return;
    }
    if tracefs().is_none() {
        return missing("tracefs is not mounted");
    }
    let t = Reachable::new();
    let o = t.run_as_nobody(&["-l", "300", "-q", "--best-effort", "--explain", "50"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("permission denied on tracefs"), "{err}");
    assert!(!err.contains("not mounted"), "{err}");
}
