//! The host's cyclictest formats equal the target's, byte for byte, for
//! the same run: `latscope-host report -f cyclictest-hist` against the
//! target's end-of-run stdout, and `-f cyclictest-json` against its
//! `--json` file and its `--json=-` document (`docs/cyclictest.md` lists the
//! fields a host cannot know; these runs have none of them).

use std::process::{Command, Stdio};

use latscope_testkit::callers::{
    check_rteval, rteval_args, rteval_parse, start_like_rteval, stop_like_rteval,
};
use latscope_testkit::compat::split_json;
use latscope_testkit::host::{bins, host};
use latscope_testkit::Scratch;
use latscope_testkit::{is_root, require};

/// Run the target with `args` and `--stream=r.lsr` in `dir`; its stdout.
fn target(dir: &Scratch, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut c = Command::new(bins().latscope);
    c.args(args)
        .arg(format!("--stream={}", dir.join("r.lsr").display()))
        .current_dir(dir.path())
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run latscope");
    assert!(
        out.status.success(),
        "latscope {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 stdout")
}

fn report(dir: &Scratch, format: &str) -> String {
    let rec = dir.join("r.lsr").display().to_string();
    let out = host(&["report", "-f", format, &rec]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "report -f {format}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 report")
}

/// The target's stdout without the start-up line the host does not repeat.
fn end_text(stdout: &str) -> &str {
    stdout
        .strip_prefix("# /dev/cpu_dma_latency set to 0us\n")
        .unwrap_or(stdout)
}

#[test]
fn histogram_text_and_json_file_equal_the_targets() {
    require!(
        is_root(),
        "needs root (the target writes /dev/cpu_dma_latency)"
    );
    for (args, tz) in [
        (
            &["-q", "-l", "300", "-h", "40", "--json=t.json"][..],
            "Europe/Berlin",
        ),
        (
            &[
                "-q",
                "-l",
                "300",
                "-t",
                "2",
                "-H",
                "40",
                "--spike=100",
                "--json=t.json",
            ][..],
            "UTC",
        ),
        (
            &[
                "-q",
                "-l",
                "300",
                "-t",
                "2",
                "-h",
                "20",
                "-b",
                "1",
                "--json=t.json",
            ][..],
            "America/New_York",
        ),
        (
            &["-q", "-l", "300", "-h", "3500", "--json=t.json"][..],
            "UTC",
        ),
    ] {
        let dir = Scratch::new("ct-host");
        let stdout = target(&dir, args, &[("TZ", tz)]);
        assert_eq!(
            report(&dir, "cyclictest-hist"),
            end_text(&stdout),
            "{args:?} text"
        );
        let file = std::fs::read_to_string(dir.join("t.json")).expect("t.json");
        assert_eq!(report(&dir, "cyclictest-json"), file, "{args:?} json");
    }
}

#[test]
fn json_on_stdout_equals_the_targets() {
    require!(
        is_root(),
        "needs root (the target writes /dev/cpu_dma_latency)"
    );
    let dir = Scratch::new("ct-host-stdout");
    let stdout = target(
        &dir,
        &["-q", "-l", "300", "-t", "2", "-h", "30", "--json=-"],
        &[],
    );
    let (before, doc, after) = split_json(&stdout);
    assert_eq!(before, "# /dev/cpu_dma_latency set to 0us\n");
    assert_eq!(report(&dir, "cyclictest-json"), doc);
    assert_eq!(report(&dir, "cyclictest-hist"), after);
}

/// rteval's call, `-i100 -qmu "-h 3500" -p95 -tN -aLIST`, stopped by SIGINT
/// as rteval stops it, with the stream recorded: the host's
/// `cyclictest-hist` is the target's stdout, and rteval reads both alike.
#[test]
fn rtevals_call_reads_the_same_through_the_stream() {
    require!(is_root(), "rteval runs cyclictest as root (-p95 -m)");
    let dir = Scratch::new("ct-host-rteval");
    let rec = dir.join("r.lsr");
    let (mut args, n) = rteval_args(&[]);
    args.push(format!("--stream={}", rec.display()));
    let out = dir.join("stdout");
    let mut child = start_like_rteval(
        &bins().latscope,
        &args,
        std::fs::File::create(&out).expect("stdout file"),
    );
    std::thread::sleep(std::time::Duration::from_secs(2));
    let status = stop_like_rteval(&mut child);
    let stdout = std::fs::read_to_string(&out).expect("stdout");
    assert!(status.success(), "{status:?}: {stdout}");
    let live = rteval_parse(&stdout, n);
    check_rteval(&live, n, "live");
    assert!(live.samples.iter().all(|s| *s > 0), "{live:?}");
    let hist = report(&dir, "cyclictest-hist");
    assert_eq!(hist, end_text(&stdout), "the host's text");
    assert_eq!(rteval_parse(&hist, n), live, "what rteval reads");
}
