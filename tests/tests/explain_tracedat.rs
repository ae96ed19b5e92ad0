//! `latscope-host explain` and Debian's trace-cmd on the same trace.dat.
//!
//! A kernel's own pages (core's x86-64 fixture, `core/src/ringbuf/
//! fixtures/x86_64-6.18/`), written as a trace.dat (version 6) by core's
//! writer: `trace-cmd report` lists every event of it as the kernel's own
//! text does; the file rewritten by trace-cmd's own writer (`trace-cmd
//! convert --file-version 6 --compression none`) explains as the original
//! does, window by window; and trace-cmd's default, version 7 and
//! compressed (`trace-cmd convert` without options), is refused with one
//! line that names the command converting it.
//!
//! The file is written at test time, not committed: it is what core's
//! writer makes today, so a change of the writer is checked against
//! trace-cmd at once, and there is no binary to regenerate by hand. The
//! fixture's pages and formats are the committed part.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use latscope_core::tracedat::{CpuData, Format, Header, Layout};
use latscope_host::explain::{explain, parse_time, render, WindowOptions};
use latscope_testkit::host::bins;
use latscope_testkit::Scratch;
use latscope_testkit::{have, require};

/// A file of the x86-64 fixture.
macro_rules! fixture {
    ($file:literal) => {
        include_str!(concat!(
            "../../core/src/ringbuf/fixtures/x86_64-6.18/",
            $file
        ))
    };
}

const PAGES: &[u8] = include_bytes!("../../core/src/ringbuf/fixtures/x86_64-6.18/cpu0.pages");
/// The kernel's text of the same events.
const TEXT: &str = fixture!("cpu0.trace");

/// The fixture's events: their system and format.
const FORMATS: [Format<'static>; 7] = [
    Format {
        system: "irq",
        text: fixture!("irq_handler_entry.format"),
    },
    Format {
        system: "irq",
        text: fixture!("irq_handler_exit.format"),
    },
    Format {
        system: "irq",
        text: fixture!("softirq_entry.format"),
    },
    Format {
        system: "irq",
        text: fixture!("softirq_exit.format"),
    },
    Format {
        system: "sched",
        text: fixture!("sched_switch.format"),
    },
    Format {
        system: "sched",
        text: fixture!("sched_wakeup.format"),
    },
    Format {
        system: "ftrace",
        text: fixture!("print.format"),
    },
];

/// The events by name, as trace-cmd and the kernel's text print them
/// (the kernel calls a `trace_marker` write `tracing_mark_write`).
const EVENTS: [(&str, &str); 7] = [
    ("irq_handler_entry", "irq_handler_entry"),
    ("irq_handler_exit", "irq_handler_exit"),
    ("softirq_entry", "softirq_entry"),
    ("softirq_exit", "softirq_exit"),
    ("sched_switch", "sched_switch"),
    ("sched_wakeup", "sched_wakeup"),
    ("print", "tracing_mark_write"),
];

/// `events/header_event`, as every kernel since 2.6.31 writes it.
const HEADER_EVENT: &str = "# compressed entry header\n\ttype_len    :    5 bits\n\
    \ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n\tpadding     : type == 29\n\
    \ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";

/// The fixture as a trace.dat of one CPU, in trace-cmd's default clock
/// (the fixture was recorded in it).
fn trace_dat() -> Vec<u8> {
    let h = Header {
        long_size: 8,
        page_size: 4096,
        header_page: fixture!("header_page"),
        header_event: HEADER_EVENT,
        formats: &FORMATS,
        cmdlines: "",
        trace_clock: "[local] global counter uptime perf mono mono_raw boot x86-tsc\n",
        cpus: 1,
    };
    let data = [CpuData {
        cpu: 0,
        pages: PAGES,
    }];
    let mut out = Vec::new();
    Layout::new(h, &data)
        .expect("a layout")
        .write(&mut |b: &[u8]| {
            out.extend_from_slice(b);
            Ok::<(), ()>(())
        })
        .expect("written");
    out
}

fn run(program: &Path, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", program.display()))
}

fn trace_cmd(args: &[&str]) -> Output {
    let out = run(Path::new("trace-cmd"), args);
    assert!(
        out.status.success(),
        "trace-cmd {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).expect("UTF-8")
}

/// The lines of `text` with `event` as their event.
fn count(text: &str, event: &str) -> usize {
    let tag = format!(" {event}:");
    text.lines().filter(|l| l.contains(&tag)).count()
}

/// Each event's time as the kernel's text prints it (`22534.727720`).
fn text_times() -> Vec<&'static str> {
    TEXT.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            l.split_whitespace()
                .filter_map(|w| w.strip_suffix(':'))
                .find(|w| parse_time(w).is_some())
        })
        .collect()
}

#[test]
fn trace_cmd_reads_what_core_writes_and_explain_reads_what_trace_cmd_writes() {
    require!(
        have("trace-cmd"),
        "trace-cmd is not installed (Debian: trace-cmd)"
    );
    let dir = Scratch::new("explain-tracedat");
    let f = dir.join("f.dat");
    let g = dir.join("g.dat");
    let bytes = trace_dat();
    fs::write(&f, &bytes).expect("write f.dat");
    let (f, g) = (f.to_str().expect("a path"), g.to_str().expect("a path"));
    // trace-cmd lists the kernel's events as the kernel's text does
    let report = text(&trace_cmd(&["report", "-i", f]).stdout);
    assert!(count(TEXT, "sched_switch") > 100, "{TEXT}");
    for (e, kernel) in EVENTS {
        assert_eq!(count(&report, e), count(TEXT, kernel), "{e}:\n{report}");
    }
    let all: usize = EVENTS.iter().map(|(e, _)| count(&report, e)).sum();
    assert_eq!(all, 170, "{report}");
    let said = text_times();
    assert_eq!(said.len(), 170);
    assert!(
        report.contains(&format!(" {}: sched_switch:", said[0])),
        "{report}"
    );
    // and finds the trace clock where its own version-6 writer puts it
    let clock = text(&trace_cmd(&["dump", "--clock", f]).stdout);
    let block = clock.split("[Tracing clock]").nth(1).unwrap_or("");
    assert!(block.trim_start().starts_with("[local] global"), "{clock}");
    // trace-cmd's own writer, version 6, uncompressed
    trace_cmd(&[
        "convert",
        "--file-version",
        "6",
        "--compression",
        "none",
        "-i",
        f,
        "-o",
        g,
    ]);
    let host = bins().host;
    for (a, b) in [(5, 60), (40, 120), (100, 169), (0, 169)] {
        let window = [
            "--cpu", "0", "--pid", "0", "--from", said[a], "--to", said[b],
        ];
        let mut outs = Vec::new();
        for file in [f, g] {
            let out = run(&host, &[&["explain", file][..], &window[..]].concat());
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{file} {window:?}: {err}");
            assert!(err.is_empty(), "{err}");
            outs.push(text(&out.stdout));
        }
        let (first_f, rest_f) = outs[0].split_once('\n').expect("lines");
        let (first_g, rest_g) = outs[1].split_once('\n').expect("lines");
        for (first, file) in [(first_f, f), (first_g, g)] {
            let want = format!("{file}: trace.dat version 6, clock local, CPU0, 3 pages");
            assert_eq!(first, want);
        }
        assert_eq!(rest_f, rest_g, "window {a}..{b}");
        // what the library makes of the same window
        let given = WindowOptions {
            cpu: Some(0),
            pid: Some(0),
            from_ns: parse_time(said[a]),
            to_ns: parse_time(said[b]),
        };
        let e = explain(f, &bytes, None, given).expect("explained");
        assert_eq!(outs[0], render(f, &e));
        assert!(rest_f.starts_with("  spike "), "{rest_f}");
        assert!(rest_f.contains(&format!("@ {} s", said[a])), "{rest_f}");
    }
}

#[test]
fn trace_cmd_s_default_version_7_is_refused_with_the_command_that_converts_it() {
    require!(
        have("trace-cmd"),
        "trace-cmd is not installed (Debian: trace-cmd)"
    );
    let dir = Scratch::new("explain-tracedat-v7");
    let f = dir.join("f.dat");
    let h = dir.join("h.dat");
    fs::write(&f, trace_dat()).expect("write f.dat");
    let (f, h) = (f.to_str().expect("a path"), h.to_str().expect("a path"));
    trace_cmd(&["convert", "-i", f, "-o", h]);
    let v7 = fs::read(h).expect("read h.dat");
    assert_eq!(v7.get(10..12), Some(&b"7\0"[..]), "not version 7");
    for args in [
        &["explain", h][..],
        &["explain", h, "--cpu", "0", "--from", "0", "--to", "1"],
    ] {
        let out = run(&bins().host, args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("version 7")
                && err.contains("trace-cmd convert --file-version 6 --compression none"),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn the_targets_sidecar_gives_the_window_and_options_override_it() {
    let dir = Scratch::new("explain-sidecar");
    let dat = dir.join("latscope-t0-cpu0-c77.dat");
    fs::write(&dat, trace_dat()).expect("write the trace.dat");
    let said = text_times();
    let ns = |i: usize| parse_time(said[i]).expect("a time");
    let host = bins().host;
    let file = dat.to_str().expect("a path");
    // no sidecar, no window: a usage error naming the options
    let out = run(&host, &["explain", file]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--cpu") && err.contains("--from") && err.contains("--to"));
    let sidecar = format!(
        "{{\"thread\":0,\"tid\":20507,\"cpu\":0,\"cycle\":77,\"deadline_ns\":{},\
         \"wake_ns\":{},\"latency_ns\":{},\"recorded_to_ns\":{},\"trace_clock\":\"local\"}}",
        ns(40),
        ns(120),
        ns(120) - ns(40),
        ns(169)
    );
    fs::write(dir.join("latscope-t0-cpu0-c77.json"), sidecar).expect("write the sidecar");
    let out = run(&host, &["explain", file]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said_out = text(&out.stdout);
    let spike = format!("  cycle 77  @ {} s", said[40]);
    assert!(said_out.contains(&spike), "{said_out}");
    // --from overrides the sidecar's deadline, the rest stays
    let out = run(&host, &["explain", file, "--from", said[60]]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said_out = text(&out.stdout);
    let spike = format!("  cycle 77  @ {} s", said[60]);
    assert!(said_out.contains(&spike), "{said_out}");
    // a truncated file: one line, status 1, no panic
    fs::write(&dat, &trace_dat()[..5000]).expect("cut the trace.dat");
    let out = run(&host, &["explain", file]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
