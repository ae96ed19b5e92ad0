//! cyclictest 2.4 and latscope side by side: every output format, with the
//! same arguments, compared structurally (lines, keys, types, order); the
//! facts both must agree on (system, placement, time zone) compared by
//! value. Needs root (both write /dev/cpu_dma_latency, latscope runs
//! SCHED_FIFO) and Debian's `rt-tests`.

use std::path::Path;

use latscope_testkit::compat::{
    assert_same_json, assert_same_text, cyclictest, live_structure, parse_json, side_by_side,
    split_json,
};
use latscope_testkit::host::bins;
use latscope_testkit::Scratch;
use serde_json::Value;

fn ready(_test: &str) -> Option<std::path::PathBuf> {
    cyclictest()
}

fn text(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Compare the stdout of both programs for each argument list.
fn same_stdout(test: &str, cases: &[&[&str]]) {
    let Some(ct) = ready(test) else { return };
    let dir = Scratch::new(test);
    for args in cases {
        let (theirs, ours) = side_by_side(&ct, dir.path(), args, &[]);
        assert_same_text(&text(&ours), &text(&theirs), &format!("{args:?}"));
    }
}

#[test]
fn quiet_status_lines() {
    same_stdout(
        "quiet_status_lines",
        &[
            &["-q", "-l", "100"],
            &["-q", "-l", "100", "-t", "2"],
            &["-q", "-l", "100", "-S"],
        ],
    );
}

/// The live view into a file (a lab wrapper's log): cyclictest 2.4's
/// bytes, header with its five loadavg fields, blank line, `T:` lines and
/// the cursor moves before every redraw; latscope's `# T:` lines after the
/// last redraw are its documented extra.
#[test]
fn live_view_into_a_file() {
    let Some(ct) = ready("live_view_into_a_file") else {
        return;
    };
    let dir = Scratch::new("live_view_into_a_file");
    for args in [
        &["-p", "80", "-l", "300"][..],
        &["-p", "80", "-l", "300", "-t", "2"],
    ] {
        let (theirs, ours) = side_by_side(&ct, dir.path(), args, &[]);
        let (ours, theirs) = (text(&ours), text(&theirs));
        let (a, b) = (live_structure(&ours), live_structure(&theirs));
        assert_eq!(
            a, b,
            "{args:?}: the live view differs\n--- latscope:\n{ours:?}\n--- cyclictest:\n{theirs:?}"
        );
        // At least one redraw, and the header is cyclictest's.
        assert!(a.0.len() >= 2 && !a.1.is_empty(), "{args:?}: {ours:?}");
        let header = ours.lines().find(|l| l.contains("loadavg")).unwrap();
        let fields = header
            .split("loadavg: ")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .count();
        assert_eq!(fields, 5, "{header:?}");
    }
}

#[test]
fn histogram_text() {
    same_stdout(
        "histogram_text",
        &[
            &["-q", "-l", "200", "-h", "30"],
            &["-q", "-l", "200", "-H", "30", "-t", "2"],
            &["-q", "-l", "200", "-H", "30"],
        ],
    );
}

#[test]
fn spike_lines() {
    // every sample is over 1 us: the list and its count are never empty
    same_stdout(
        "spike_lines",
        &[
            &["-q", "-l", "50", "--spike=1"],
            &["-q", "-l", "50", "-t", "2", "-h", "10", "--spike=1"],
            &["-q", "-l", "50", "--spike=1000000"],
        ],
    );
}

#[test]
fn verbose_lines() {
    same_stdout(
        "verbose_lines",
        &[&["-v", "-l", "20"], &["-v", "-l", "20", "-t", "2"]],
    );
}

#[test]
fn breaktrace_lines() {
    same_stdout(
        "breaktrace_lines",
        &[
            &["-q", "-l", "100", "-t", "2", "-b", "1"],
            &["-q", "-l", "50", "-b", "1000000"],
            &["-q", "-l", "100", "-h", "10", "-b", "1"],
        ],
    );
}

/// `"cmdline:"` without argv[0] (each program's own path).
fn args_of(doc: &Value, argv0: &Path) -> String {
    let c = doc["cmdline:"].as_str().expect("cmdline:");
    let a0 = argv0.display().to_string();
    assert!(
        c.starts_with(&a0),
        "cmdline {c:?} starts with argv[0] {a0:?}"
    );
    c[a0.len()..].to_string()
}

/// The values both programs must agree on in one run's documents.
fn same_facts(ours: &Value, theirs: &Value, ct: &Path) {
    for k in [
        "file_version",
        "rt_test_version:",
        "return_code",
        "num_threads",
        "resolution_in_ns",
    ] {
        assert_eq!(ours[k], theirs[k], "{k}");
    }
    assert_eq!(ours["sysinfo"], theirs["sysinfo"], "sysinfo");
    assert_eq!(
        args_of(ours, &bins().latscope),
        args_of(theirs, ct),
        "cmdline:"
    );
    for (k, t) in theirs["thread"].as_object().expect("thread") {
        for f in ["cpu", "node"] {
            assert_eq!(ours["thread"][k][f], t[f], "thread {k} {f}");
        }
    }
    // local time: the same zone offset (the last word) in both
    for k in ["start_time", "end_time"] {
        let off = |v: &Value| {
            v[k].as_str()
                .unwrap_or("")
                .rsplit(' ')
                .next()
                .map(str::to_owned)
        };
        assert_eq!(off(ours), off(theirs), "{k}: {} vs {}", ours[k], theirs[k]);
    }
}

#[test]
fn json_file() {
    let Some(ct) = ready("json_file") else { return };
    let dir = Scratch::new("json_file");
    for (args, tz) in [
        // placement without -a (cyclictest pins thread i to CPU i) is left
        // out here: these cases name their CPUs
        (
            &["-q", "-l", "100", "-t", "2", "-a", "0-1", "--json=r.json"][..],
            "Europe/Berlin",
        ),
        (
            &["-q", "-l", "100", "-S", "--json=r.json"][..],
            "America/New_York",
        ),
        (
            &["-q", "-l", "100", "-a", "0", "-h", "20", "--json=r.json"][..],
            "UTC",
        ),
        (
            &["-q", "-l", "100", "-a", "1", "--json=r.json"][..],
            "Asia/Kolkata",
        ),
    ] {
        let env = [("TZ", tz)];
        let run = |prog: &Path| {
            let out = latscope_testkit::compat::run_in(
                dir.path(),
                prog,
                &args.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                &env,
            );
            assert!(out.status.success(), "{} {args:?}: {out:?}", prog.display());
            let doc = std::fs::read_to_string(dir.join("r.json")).expect("r.json");
            (text(&out), parse_json(&doc, "r.json"))
        };
        let (their_out, theirs) = run(&ct);
        let (our_out, ours) = run(&bins().latscope);
        assert_same_json(&ours, &theirs, "");
        same_facts(&ours, &theirs, &ct);
        assert_same_text(&our_out, &their_out, &format!("{args:?} stdout"));
    }
}

#[test]
fn json_on_stdout() {
    let Some(ct) = ready("json_on_stdout") else {
        return;
    };
    let dir = Scratch::new("json_on_stdout");
    for args in [
        &["-q", "-l", "100", "--json=-"][..],
        &["-q", "-l", "100", "-t", "2", "-H", "20", "--json=-"][..],
        &["-q", "-l", "50", "-b", "1", "--spike=1", "--json=-"][..],
    ] {
        let (theirs, ours) = side_by_side(&ct, dir.path(), args, &[]);
        let (tb, tdoc, ta) = split_json(&text(&theirs));
        let (ob, odoc, oa) = split_json(&text(&ours));
        assert!(!tdoc.is_empty() && !odoc.is_empty(), "{args:?}: a document");
        assert_same_text(&ob, &tb, &format!("{args:?} before the document"));
        assert_same_text(&oa, &ta, &format!("{args:?} after the document"));
        assert_same_json(
            &parse_json(&odoc, "latscope"),
            &parse_json(&tdoc, "cyclictest"),
            "",
        );
    }
}
