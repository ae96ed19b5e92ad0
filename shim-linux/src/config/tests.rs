//! Whole command lines, as cyclictest's callers write them, through
//! [`parse`].

use latscope_core::wire::{ClockKind, Policy, StartAlign, WakeMode};

use super::options::{Opt, OPTIONS};
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
}

/// The proof scripts' options, in a `proof` build.
#[cfg(feature = "proof")]
#[test]
fn the_proof_options_in_a_proof_build() {
    let c = ok(&["--self-check-probe", "--ballast-mib", "3"]);
    assert!(c.self_check && c.bench.self_check_probe());
    assert_eq!(
        (c.bench.ballast_mib(), c.bench.no_exit_demote()),
        (3, false)
    );
}

/// What ships refuses the proof scripts' options as unknown ones.
#[cfg(not(feature = "proof"))]
#[test]
fn the_proof_options_are_unknown_without_the_feature() {
    for args in [
        &["--ballast-mib", "3"][..],
        &["--no-exit-demote"],
        &["--self-check-probe"],
    ] {
        let err = parse(args).unwrap_err().to_string();
        assert!(err.contains("unknown option"), "{args:?}: {err}");
    }
    assert!(!OPTIONS.iter().any(|s| s.long == "ballast-mib"));
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
    // 0 is no limit, and the note says so (`-l abc` runs until a signal)
    let c = ok(&["-l", "abc"]);
    assert_eq!(c.loops, 0);
    assert_eq!(
        c.notes,
        ["-l 'abc' is not a number: read as 0 (no limit), as cyclictest's atoi() does"]
    );
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
    for args in [
        &["--stream", "-", "--json", "-"][..],
        &["--json=-", "--stream=-"],
    ] {
        let e = parse(args).expect_err("two writers of standard output");
        assert!(e.to_string().contains("--stream - and --json -"), "{e}");
        assert_eq!(e.exit_status(), 2, "{args:?}");
    }
    assert!(ok(&["--stream", "-", "--json", "/tmp/j"]).stream == Some(Dest::Stdout));
    assert!(ok(&["--stream", "/tmp/s", "--json", "-"]).json.as_deref() == Some("-"));
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

/// Every field of a configuration, named, with its value. The list is
/// written once, and destructures [`Config`] and [`crate::bench::Knobs`]
/// without `..`: a field added to either must be added here, or this does
/// not build.
fn fields(c: &Config) -> Vec<(&'static str, String)> {
    macro_rules! named {
        ($($f:ident),* ; bench: $($k:ident),* $(,)?) => {{
            let Config { $($f,)* bench } = c;
            #[cfg(feature = "proof")]
            let crate::bench::Knobs { $($k: _,)* } = bench;
            vec![
                $((stringify!($f), format!("{:?}", $f)),)*
                $((stringify!($k), format!("{:?}", bench.$k())),)*
            ]
        }};
    }
    named![
        affinity, threads, smp, interval_us, distance_us, priority, policy, priospread, loops, duration_ns, break_us, tracemark, hist_us, hist_all, hist_shape, histfile, json, nsecs, quiet, verbose, spike_us, clock, mainaffinity, latency_us, deepest_idle_state, default_system, mlock, best_effort, warmup_ns, report_ns, dl_runtime_us, dl_deadline_us, dl_period_us, explain_us, trace_buffer_kb, trace_out, trace_out_limits, trace_out_stream, self_check, timerlat, rtla, wake, align, fifo, refresh_on_max, oscope, resolution, smi, spike_nodes, unbuffered, laptop, debug, notes, stream, name, slo, cmdline;
        bench: ballast_mib, no_exit_demote, self_check_probe
    ]
}

/// What one option is tried with: the options it needs (`base`), its value,
/// and the fields it must change against `base` alone. One arm per option,
/// no "any other".
fn effect(
    opt: Opt,
) -> (
    &'static [&'static str],
    Option<&'static str>,
    &'static [&'static str],
) {
    const DEADLINE: &[&str] = &["--policy", "deadline"];
    match opt {
        // no Config: an action of its own (see the test)
        Opt::Help | Opt::Version => (&[], None, &[]),
        Opt::Affinity => (&[], Some("1"), &["affinity"]),
        Opt::Aligned => (&[], Some("50"), &["align"]),
        Opt::Breaktrace => (&[], Some("50"), &["break_us"]),
        Opt::Clock => (&[], Some("1"), &["clock"]),
        Opt::DefaultSystem => (&[], None, &["default_system"]),
        Opt::Distance => (&[], Some("100"), &["distance_us"]),
        Opt::Duration => (&[], Some("5"), &["duration_ns"]),
        Opt::Latency => (&[], Some("10"), &["latency_us"]),
        Opt::DeepestIdleState => (&[], Some("1"), &["deepest_idle_state"]),
        Opt::Fifo => (&[], Some("/tmp/f"), &["fifo"]),
        Opt::Histogram => (&[], Some("100"), &["hist_us"]),
        Opt::Histofall => (&[], Some("100"), &["hist_us", "hist_all"]),
        Opt::Histfile => (&["-h", "10"], Some("/tmp/h"), &["histfile"]),
        Opt::Interval => (&[], Some("200"), &["interval_us"]),
        Opt::Json => (&[], Some("/tmp/j"), &["json"]),
        // cyclictest's older words for --default-system
        Opt::Laptop => (&[], None, &["laptop", "default_system"]),
        Opt::Loops => (&[], Some("5"), &["loops"]),
        Opt::Mainaffinity => (&[], Some("1"), &["mainaffinity"]),
        Opt::Mlockall => (&["--no-mlock"], None, &["mlock"]),
        Opt::RefreshOnMax => (&[], None, &["refresh_on_max"]),
        Opt::Nsecs => (&[], None, &["nsecs"]),
        Opt::Oscope => (&["-v"], Some("10"), &["oscope"]),
        Opt::Priority => (&[], Some("90"), &["priority"]),
        Opt::Quiet => (&[], None, &["quiet"]),
        Opt::Priospread => (&[], None, &["priospread"]),
        Opt::Relative => (&[], None, &["wake"]),
        Opt::Resolution => (&[], None, &["resolution"]),
        Opt::Secaligned => (&[], Some("250"), &["align"]),
        Opt::System => (&[], None, &["wake"]),
        Opt::Smi => (&[], None, &["smi"]),
        Opt::Smp => (&[], None, &["smp"]),
        Opt::Spike => (&[], Some("20"), &["spike_us"]),
        // with its note that it needs --spike
        Opt::SpikeNodes => (&[], Some("5"), &["spike_nodes", "notes"]),
        Opt::Threads => (&[], Some("2"), &["threads"]),
        Opt::Tracemark => (&["-b", "50"], None, &["tracemark"]),
        Opt::Unbuffered => (&[], None, &["unbuffered"]),
        Opt::Verbose => (&[], None, &["verbose"]),
        Opt::DbgCyclictest => (&[], None, &["debug"]),
        Opt::Policy => (&[], Some("rr"), &["policy"]),
        Opt::PosixTimers => (&[], None, &["wake"]),
        Opt::Stream => (&[], Some("-"), &["stream"]),
        Opt::Name => (&[], Some("board-7"), &["name"]),
        Opt::Slo => (&[], Some("p99<=50us"), &["slo"]),
        Opt::NoMlock => (&[], None, &["mlock"]),
        Opt::BestEffort => (&[], None, &["best_effort"]),
        Opt::Warmup => (&[], Some("1s"), &["warmup_ns"]),
        Opt::ReportInterval => (&[], Some("2s"), &["report_ns"]),
        Opt::DeadlineRuntime => (DEADLINE, Some("50"), &["dl_runtime_us"]),
        Opt::DeadlineDeadline => (
            &["--policy", "deadline", "--deadline-runtime", "50"],
            Some("500"),
            &["dl_deadline_us"],
        ),
        Opt::DeadlinePeriod => (
            &[
                "--policy",
                "deadline",
                "--deadline-runtime",
                "50",
                "--deadline-deadline",
                "500",
            ],
            Some("2000"),
            &["dl_period_us"],
        ),
        Opt::Explain => (&[], Some("50"), &["explain_us"]),
        Opt::TraceBufferSize => (&[], Some("256"), &["trace_buffer_kb"]),
        Opt::TraceOut => (&["--explain", "50"], Some("/tmp/w"), &["trace_out"]),
        Opt::TraceOutLimit => (&[], Some("3,5"), &["trace_out_limits"]),
        Opt::TraceOutStream => (
            &["--explain", "50", "--stream", "/tmp/s"],
            None,
            &["trace_out_stream"],
        ),
        Opt::HistShape => (&["-h", "10"], Some("2.7"), &["hist_shape"]),
        Opt::SelfCheck => (&[], None, &["self_check"]),
        Opt::Timerlat => (&["-a", "0"], None, &["timerlat", "distance_us", "wake"]),
        // the probe proves the self-check, so it turns it on
        #[cfg(feature = "proof")]
        Opt::SelfCheckProbe => (&[], None, &["self_check_probe", "self_check"]),
        #[cfg(feature = "proof")]
        Opt::NoExitDemote => (&[], None, &["no_exit_demote"]),
        #[cfg(feature = "proof")]
        Opt::BallastMib => (&[], Some("3"), &["ballast_mib"]),
    }
}

/// Every entry of the option table, by its long name and by its short
/// letter, reaches its own effect: the fields it owns change, and no
/// other (so no option falls into another's, such as `--no-exit-demote`'s).
#[test]
fn every_option_reaches_its_own_effect() {
    let mut checked = 0;
    for spec in OPTIONS {
        let (base, value, want) = effect(spec.opt);
        let mut spellings = vec![format!("--{}", spec.long)];
        spellings.extend(spec.short.map(|c| format!("-{c}")));
        for spelled in &spellings {
            let mut args: Vec<&str> = base.to_vec();
            args.push(spelled);
            args.extend(value);
            let got = match (spec.opt, parse(&args)) {
                (Opt::Help, Ok(Action::Help)) | (Opt::Version, Ok(Action::Version)) => continue,
                (_, Ok(Action::Run(c))) => fields(&c),
                (_, other) => panic!("{args:?}: {other:?}"),
            };
            let before = fields(&ok(base));
            let changed: Vec<&str> = before
                .iter()
                .zip(&got)
                .filter(|(b, a)| b != a)
                .map(|(b, _)| b.0)
                .collect();
            let mut want = want.to_vec();
            let mut changed_sorted = changed.clone();
            want.sort_unstable();
            changed_sorted.sort_unstable();
            assert_eq!(changed_sorted, want, "{args:?}");
            checked += 1;
        }
    }
    // every option but --help and --version, and the short letters
    let shorts = OPTIONS.iter().filter(|s| s.short.is_some()).count();
    assert_eq!(checked, OPTIONS.len() - 2 + shorts);
}

/// No option but `--no-exit-demote` turns off the exit discipline, whatever
/// the others given with it.
#[test]
fn only_no_exit_demote_turns_off_the_exit_discipline() {
    for spec in OPTIONS {
        let (base, value, _) = effect(spec.opt);
        let mut args: Vec<&str> = base.to_vec();
        let spelled = format!("--{}", spec.long);
        args.push(&spelled);
        args.extend(value);
        if let Ok(Action::Run(c)) = parse(&args) {
            assert_eq!(
                c.bench.no_exit_demote(),
                spec.long == "no-exit-demote",
                "{args:?}"
            );
        } else {
            assert!(matches!(spec.opt, Opt::Help | Opt::Version), "{args:?}");
        }
    }
}
