//! Whole command lines, as cyclictest's callers write them, through
//! [`parse`].

use latscope_core::wire::{ClockKind, Policy, StartAlign, WakeMode};

use super::*;

fn ok(args: &[&str]) -> Config {
    match parse(args) {
        Ok(Action::Run(c)) => *c,
        other => panic!("{args:?}: {other:?}"),
    }
}

#[test]
fn cyclictest_spellings() {
    let c = ok(&[
        "-t", "2", "-a", "0,1", "-d", "0", "-m", "-p", "80", "-i", "200", "-l", "20000", "-q",
    ]);
    assert_eq!(c.threads, Some(Threads::Count(2)));
    assert_eq!(c.affinity, Some(CpuList::Only(vec![0, 1])));
    assert_eq!((c.interval_us, c.distance(), c.loops), (200, 0, 20000));
    assert!(c.quiet && c.mlock && c.notes.is_empty());
    let c = ok(&[
        "-mq",
        "-i100",
        "--duration=1m",
        "-h",
        "50",
        "--json=/tmp/x.json",
    ]);
    assert_eq!(
        (c.interval_us, c.duration_ns, c.hist_us),
        (100, 60_000_000_000, 50)
    );
    assert_eq!(c.distance(), 0, "-h sets the distance to 0");
    assert_eq!(c.json.as_deref(), Some("/tmp/x.json"));
    let c = ok(&["-t", "-a"]);
    assert_eq!(
        (c.threads, c.affinity),
        (Some(Threads::PerCpu), Some(CpuList::All))
    );
    let c = ok(&["--policy=rr", "--priospread", "-p", "90"]);
    assert!(c.priospread);
    assert_eq!((c.policy, c.priority), (Policy::Rr, 90));
    let c = ok(&["--policy", "other"]);
    assert_eq!((c.policy, c.priority), (Policy::Other, 0));
    let c = ok(&["--policy", "deadline", "-i", "1000"]);
    assert_eq!(
        (c.dl_runtime_us, c.dl_deadline_us, c.dl_period_us),
        (100, 1000, 1000)
    );
    assert_eq!(ok(&["-c", "realtime"]).clock, ClockKind::Realtime);
    assert_eq!(ok(&["-c1"]).clock, ClockKind::Realtime);
    assert!(ok(&["--default-system", "--latency", "10"]).default_system);
    assert_eq!(parse(&["--help"]), Ok(Action::Help));
    assert_eq!(parse(&["-q", "--version"]), Ok(Action::Version));
}

#[test]
fn latscopes_own_options() {
    let c = ok(&[
        "--no-mlock",
        "--best-effort",
        "--warmup",
        "500ms",
        "--report-interval",
        "2s",
    ]);
    assert!(!c.mlock && c.best_effort);
    assert_eq!((c.warmup_ns, c.report_ns), (500_000_000, 2_000_000_000));
    assert_eq!(ok(&["--name", "board-7"]).name.as_deref(), Some("board-7"));
    let c = ok(&["--self-check-probe", "--ballast-mib", "3"]);
    assert!(c.self_check && c.bench.self_check_probe);
    assert_eq!((c.bench.ballast_mib, c.bench.no_exit_demote), (3, false));
}

#[test]
fn the_callers_command_lines() {
    // rteval, each option its own word, the histogram's with a blank
    let c = ok(&["-i100", "-qmu", "-h 350", "-p95", "-t2", "-a0-1"]);
    assert_eq!((c.interval_us, c.hist_us, c.priority), (100, 350, 95));
    assert!(c.quiet && c.mlock && c.unbuffered);
    assert_eq!(c.threads, Some(Threads::Count(2)));
    assert_eq!(c.affinity, Some(CpuList::Only(vec![0, 1])));
    let c = ok(&[
        "-i100",
        "-qmu",
        "-h 350",
        "-p95",
        "-t2",
        "-a0-1",
        "-b50",
        "--tracemark",
    ]);
    assert!(c.tracemark && c.break_us == 50);
    // OSADL
    let c = ok(&["-l100000000", "-m", "-Sp90", "-i200", "-h400", "-q"]);
    assert!(c.smp && c.quiet);
    assert_eq!((c.loops, c.priority, c.hist_us), (100_000_000, 90, 400));
    // lab wrappers
    let c = ok(&["-t", "0", "-a", "all"]);
    assert_eq!(
        (c.threads, c.affinity),
        (Some(Threads::PerCpu), Some(CpuList::All))
    );
}

#[test]
fn numbers_as_atoi_reads_them_with_a_note() {
    let c = ok(&["-l", "1e5", "-i", " 250"]);
    assert_eq!((c.loops, c.interval_us), (1, 250));
    assert_eq!(c.notes.len(), 1, "{:?}", c.notes);
    assert!(c.notes[0].contains("'1e5' read as 1"), "{:?}", c.notes);
    let c = ok(&["-D", "500ms"]);
    assert_eq!(c.duration_ns, 30_000_000_000_000, "m: minutes");
    assert_eq!(c.notes.len(), 1);
    let c = ok(&["--latency", "-5", "-b", "0", "--spike", "0"]);
    assert_eq!((c.latency_us, c.break_us, c.spike_us), (0, 0, 0));
    assert_eq!(c.notes.len(), 1, "{:?}", c.notes);
}

#[test]
fn modes_and_their_combinations() {
    assert_eq!(ok(&[]).wake, WakeMode::Absolute);
    assert_eq!(ok(&["-r"]).wake, WakeMode::Relative);
    assert_eq!(ok(&["-s"]).wake, WakeMode::Nanosleep);
    assert_eq!(ok(&["-x"]).wake, WakeMode::PosixTimer { relative: false });
    assert_eq!(ok(&["-xr"]).wake, WakeMode::PosixTimer { relative: true });
    let c = ok(&["-s", "-x"]);
    assert_eq!(c.wake, WakeMode::Nanosleep);
    assert_eq!(c.notes.len(), 3, "cyclictest's three lines");
    assert_eq!(ok(&["-A"]).align, StartAlign::Threads { offset_ns: 0 });
    assert_eq!(
        ok(&["-A", "50", "-t", "2"]).align,
        StartAlign::Threads { offset_ns: 50_000 }
    );
    assert_eq!(
        ok(&["--secaligned", "250"]).align,
        StartAlign::Second { offset_ns: 250_000 }
    );
    assert!(parse(&["-A", "--secaligned"]).is_err());
    let c = ok(&["-v", "-o", "10", "-M", "-R", "--laptop", "--dbg_cyclictest"]);
    assert_eq!(c.oscope, 10);
    assert!(c.refresh_on_max && c.resolution && c.default_system && c.debug);
    assert!(parse(&["-o", "10"]).is_err(), "-o needs -v");
    let c = ok(&[
        "-F",
        "/tmp/f",
        "--spike",
        "20",
        "--spike-nodes",
        "5",
        "--smi",
    ]);
    assert_eq!(c.fifo.as_deref(), Some("/tmp/f"));
    assert!(c.smi && c.spike_nodes == 5 && c.spike_us == 20);
    assert_eq!(ok(&["--spike-nodes", "5"]).notes.len(), 1);
}

#[test]
fn cyclictests_overrides_are_applied_and_said() {
    let c = ok(&["-a", "1", "-S", "-t", "4"]);
    assert_eq!((c.affinity.clone(), c.threads), (None, None));
    assert_eq!(
        c.notes,
        ["-a ignored due to smp mode", "-t ignored due to smp mode"]
    );
    let c = ok(&["--policy", "batch", "-p", "80"]);
    assert_eq!((c.policy, c.priority), (Policy::Fifo, 80));
    assert_eq!(c.notes.len(), 1);
    let c = ok(&["-p", "0"]);
    assert_eq!(
        (c.policy, c.priority),
        (Policy::Fifo, 0),
        "n + 1 at plan time"
    );
    let c = ok(&["-d", "100", "-h", "20"]);
    assert_eq!((c.distance(), c.notes.len()), (0, 1));
    let c = ok(&["-v", "-q"]);
    assert!(c.verbose && c.quiet);
}

#[test]
fn histogram_range_up_to_the_cap() {
    for us in ["1001", "3500", " 3500", "20000"] {
        assert!(matches!(parse(&["-h", us]), Ok(Action::Run(_))), "-h {us}");
    }
    let c = ok(&["-h 3500"]);
    assert_eq!(c.hist_us, 3500, "rteval's one word with a blank");
    let e = parse(&["-H", "20001"]).unwrap_err();
    assert_eq!(e.exit_status(), crate::error::EXIT_USAGE);
    assert!(e.to_string().contains("cap of 20000 us"), "{e}");
}

#[test]
fn bad_inputs_are_usage_errors_never_panics() {
    let table: &[&[&str]] = &[
        &["-i", "0"],
        &["-i", "abc"],
        &["-p", "100"],
        &["-h", "20001"],
        &["-H", "99999999"],
        &["-h", "0"],
        &["-t", "x"],
        &["-t0"],
        &["-t", "65"],
        &["-a", ""],
        &["--policy"],
        &["--policy", "fast"],
        &["--spike", "-3"],
        &["--ballast-mib", "x"],
        &["-", "-"],
        &["--", "x"],
        &["-ï"],
        &["--=x"],
        &["-c", "2"],
        &["-D", "-5"],
        &["-o", "0", "-v"],
        &["--name", "a b"],
    ];
    for args in table {
        match parse(args) {
            Err(e) => {
                assert_eq!(e.exit_status(), crate::error::EXIT_USAGE, "{args:?}");
                assert!(!e.to_string().contains('\n'), "{e}");
            }
            Ok(a) => panic!("{args:?} accepted: {a:?}"),
        }
    }
}
