//! The command line through the binary: bad values get one line of error
//! and exit status 2; --help documents every flag.

use latscope_testkit::this_target;

#[test]
fn bad_command_lines_exit_2_with_one_line() {
    let table: &[&[&str]] = &[
        &["-i", "0"],
        &["-i", "abc"],
        &["-i"],
        &["-p", "100"],
        &["-p", "-1"],
        &["-h", "20001"],
        &["-H", "0"],
        &["-D", "-10"],
        &["-D", "99999999999999999999d"],
        &["-l", "99999999999999999999"],
        &["-t0"],
        &["-t", "65"],
        &["-a", "3-1"],
        &["-a", "99999"],
        &["-a", "+7"],
        &["--policy", "fast"],
        &["--stream", "tcp:localhost:5000"],
        &["--stream", "tcp:1.2.3.4"],
        &["--stream", "serial:ttyS0"],
        &["--stream="],
        &["--report-interval", "10ms"],
        &["--deadline-runtime", "5"],
        &[
            "--policy",
            "deadline",
            "--deadline-runtime",
            "900",
            "--deadline-period",
            "500",
        ],
        &["-N", "-h", "100"],
        &["-o", "5"],
        &["-A", "--secaligned"],
        &["--tracemark"],
        &["--histfile", "/tmp/x"],
        &["--bogus"],
        &["--hist", "50"],
        &["-Z"],
        &["stray"],
        &["-t", "2", "stray"],
        &["--quiet=yes"],
        &["-c", "2"],
        &["--mainaffinity", "x"],
    ];
    for args in table {
        let out = this_target!().run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line, got {err:?}");
        assert!(err.starts_with("latscope: "), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn help_documents_every_flag_and_version_prints() {
    let out = this_target!().run(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let documented = options(&help);
    for flag in [
        "-a",
        "-b",
        "-c",
        "-d",
        "-D",
        "-h",
        "-H",
        "--histfile",
        "-i",
        "--json",
        "-l",
        "-m",
        "-N",
        "-p",
        "--policy",
        "--priospread",
        "-q",
        "-S",
        "-t",
        "-v",
        "--spike",
        "--mainaffinity",
        "--tracemark",
        "--latency",
        "--default-system",
        "--stream",
        "--no-mlock",
        "--best-effort",
        "--warmup",
        "--report-interval",
        "--deadline-runtime",
        "--deadline-deadline",
        "--deadline-period",
        "--explain",
        "--self-check",
        "--version",
        "--help",
        "-A",
        "--secaligned",
        "-F",
        "-M",
        "-o",
        "-r",
        "-R",
        "-s",
        "--spike-nodes",
        "--smi",
        "-u",
        "-x",
        "--laptop",
        "--dbg_cyclictest",
    ] {
        assert!(
            documented.contains(flag),
            "--help documents no option {flag}"
        );
    }
    assert!(help.contains("(default"), "--help names no default");
    // the check itself: a letter inside a long name is no option
    let one = options("      --mainaffinity=CPUSET  pin the sender (-p is not here)");
    assert_eq!(one.into_iter().collect::<Vec<_>>(), ["--mainaffinity"]);
    let out = this_target!().run(&["--version"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("latscope "));
}

/// The options `--help` documents: the names in its option column (each
/// line that starts with `-` after its indent, up to the description),
/// without their values.
fn options(help: &str) -> std::collections::BTreeSet<String> {
    help.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .flat_map(|l| {
            let column = l.split("  ").next().unwrap_or("");
            column
                .split(", ")
                .map(|o| o.split(['[', '=', ' ']).next().unwrap_or("").to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}
