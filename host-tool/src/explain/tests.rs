use super::*;

use latscope_core::explain::{classify_text, parse_line};
use latscope_core::tracedat::{CpuData, Format, Header, Layout};

/// The x86-64 kernel's (6.18) pages, formats and own text of the same
/// events (core's `ringbuf/fixtures/README.md`).
macro_rules! fixture {
    ($file:literal) => {
        include_str!(concat!(
            "../../../core/src/ringbuf/fixtures/x86_64-6.18/",
            $file
        ))
    };
}

const PAGES: &[u8] = include_bytes!("../../../core/src/ringbuf/fixtures/x86_64-6.18/cpu0.pages");
const TEXT: &str = fixture!("cpu0.trace");
const HEADER_PAGE: &str = fixture!("header_page");

/// The fixture's formats, each with its system.
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

/// `events/header_event`, as every kernel since 2.6.31 writes it.
const HEADER_EVENT: &str = "# compressed entry header\n\ttype_len    :    5 bits\n\
    \ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n\tpadding     : type == 29\n\
    \ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";

/// A trace.dat of the fixture's pages on CPU `cpu` of `cpus`, written
/// by core's writer.
fn trace_dat(cpu: u32, cpus: u32) -> Vec<u8> {
    let h = Header {
        long_size: 8,
        page_size: 4096,
        header_page: HEADER_PAGE,
        header_event: HEADER_EVENT,
        formats: &FORMATS,
        cmdlines: "",
        trace_clock: "local global counter uptime perf [mono] mono_raw boot\n",
        cpus,
    };
    let data = [CpuData { cpu, pages: PAGES }];
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

fn decoder() -> Decoder {
    let mut f = EventFormats::new();
    for format in FORMATS {
        assert_eq!(f.add(format.text), Ok(true));
    }
    Decoder::new(f)
}

/// Every event's time of the fixture's pages, in order.
fn times() -> Vec<u64> {
    PAGES
        .chunks(4096)
        .flat_map(|p| Page::new(PageHeader::LONG_8, p).expect("a page").events())
        .map(|e| e.expect("an event").ts_ns)
        .collect()
}

/// The fixture's pages in a history, as the target keeps them.
fn history() -> History<Vec<u8>> {
    let mut h = History::new(vec![0u8; 4 * 4096], PageHeader::LONG_8, 4096).expect("history");
    for p in PAGES.chunks(4096) {
        h.slot().copy_from_slice(p);
        h.keep(p.len());
    }
    h
}

/// Every event's time as the kernel's text prints it (`22534.727720`).
fn text_times() -> Vec<&'static str> {
    TEXT.lines()
        .filter(|l| parse_line(l).is_some())
        .filter_map(|l| {
            l.split_whitespace()
                .filter_map(|w| w.strip_suffix(':'))
                .find(|w| parse_time(w).is_some())
        })
        .collect()
}

fn options(from_ns: u64, to_ns: u64) -> WindowOptions {
    WindowOptions {
        cpu: Some(0),
        pid: Some(0),
        from_ns: Some(from_ns),
        to_ns: Some(to_ns),
    }
}

fn sidecar() -> Sidecar {
    let t = times();
    Sidecar {
        thread: 1,
        tid: 20507,
        cpu: 2,
        cycle: 12345,
        deadline_ns: t[40],
        wake_ns: t[120],
        latency_ns: t[120] - t[40],
        recorded_to_ns: t[169] + 50_000,
        trace_clock: "mono".into(),
    }
}

const WINDOWS: [(usize, usize); 5] = [(5, 60), (40, 120), (100, 169), (0, 169), (7, 8)];

#[test]
fn a_window_explained_from_the_file_is_the_targets_computation() {
    let t = times();
    assert_eq!(t.len(), 170);
    let file = trace_dat(0, 1);
    for (a, b) in WINDOWS {
        let e = explain("f.dat", &file, None, options(t[a], t[b])).expect("explained");
        assert_eq!((e.pages, e.recorded_to_ns), (3, t[169]));
        assert_eq!(e.clock.as_deref(), Some("mono"));
        let w = Window {
            cpu: 0,
            cycle: 0,
            deadline_ns: t[a],
            wake_ns: t[b],
            pid: 0,
        };
        assert_eq!(e.window, w);
        let want = history().explain(&mut decoder(), w, t[169]);
        assert_eq!(e.attribution, want, "window {a}..{b}");
        assert_eq!(e.attribution.total_ns(), e.attribution.latency_ns);
    }
}

#[test]
fn a_window_in_the_texts_own_times_says_what_the_kernels_text_says() {
    let t = times();
    let said = text_times();
    assert_eq!(said.len(), 170);
    // the text's times are the events' rounded to the microsecond, read
    // exactly
    for (ns, s) in t.iter().zip(&said) {
        assert_eq!(parse_time(s), Some((ns + 500) / 1000 * 1000), "{s}");
    }
    let file = trace_dat(0, 1);
    for (a, b) in WINDOWS {
        let pages = explain("f.dat", &file, None, options(t[a], t[b]))
            .expect("explained")
            .attribution;
        let (Some(from), Some(to)) = (parse_time(said[a]), parse_time(said[b])) else {
            panic!("{} or {} does not read", said[a], said[b]);
        };
        let w = Window {
            cpu: 0,
            cycle: 0,
            deadline_ns: from,
            wake_ns: to,
            pid: 0,
        };
        let text = classify_text(&w, TEXT);
        assert!(pages.latency_ns.abs_diff(text.latency_ns) <= 1_000);
        assert_eq!(
            pages.causes.len(),
            text.causes.len(),
            "window {a}..{b}: {pages:?} vs {text:?}"
        );
        for p in &pages.causes {
            let x = text
                .causes
                .iter()
                .find(|x| x.culprit.same(&p.culprit) && x.label() == p.label())
                .unwrap_or_else(|| panic!("{p:?} not in {text:?}"));
            assert_eq!(p.count, x.count, "{p:?} vs {x:?}");
            // the text's times are rounded to the microsecond
            let slack = 2_000 * u64::from(p.count.max(1));
            assert!(p.ns.abs_diff(x.ns) <= slack, "{p:?} vs {x:?}");
        }
    }
}

#[test]
fn the_sidecar_gives_the_window_and_options_override_it() {
    let t = times();
    let s = sidecar();
    let file = trace_dat(2, 4);
    let e = explain("f.dat", &file, Some(&s), WindowOptions::default()).expect("explained");
    let w = Window {
        cpu: 2,
        cycle: 12345,
        deadline_ns: t[40],
        wake_ns: t[120],
        pid: 20507,
    };
    assert_eq!((e.window, e.recorded_to_ns), (w, t[169] + 50_000));
    let want = history().explain(&mut decoder(), w, t[169] + 50_000);
    assert_eq!(e.attribution, want);
    let out = render("f.dat", &e);
    assert!(out.contains("  cycle 12345  "), "{out}");
    // each option on its own overrides its part of the window
    let given = WindowOptions {
        from_ns: Some(t[60]),
        pid: Some(7),
        ..WindowOptions::default()
    };
    let e = explain("f.dat", &file, Some(&s), given).expect("explained");
    let w2 = Window {
        deadline_ns: t[60],
        pid: 7,
        ..w
    };
    assert_eq!(e.window, w2);
    assert_eq!(
        e.attribution,
        history().explain(&mut decoder(), w2, t[169] + 50_000)
    );
    // a CPU the file has no pages of: nothing held, beyond the history
    let given = WindowOptions {
        cpu: Some(0),
        ..WindowOptions::default()
    };
    let e = explain("f.dat", &file, Some(&s), given).expect("explained");
    assert_eq!((e.window.cpu, e.pages), (0, 0));
    assert!(e.attribution.partial);
}

#[test]
fn the_sidecar_beside_the_file_is_read_and_a_bad_one_refused() {
    let dir = std::env::temp_dir().join(format!("latscope-explain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let dat = dir.join("latscope-t1-cpu2-c12345.dat");
    let json = dir.join("latscope-t1-cpu2-c12345.json");
    std::fs::write(&dat, trace_dat(2, 4)).expect("write");
    assert_eq!(read_sidecar(&dat).expect("no sidecar yet"), None);
    let s = sidecar();
    let text = format!(
        "{{\"thread\":1,\"tid\":20507,\"cpu\":2,\"cycle\":12345,\"deadline_ns\":{},\
         \"wake_ns\":{},\"latency_ns\":{},\"recorded_to_ns\":{},\"trace_clock\":\"mono\"}}",
        s.deadline_ns, s.wake_ns, s.latency_ns, s.recorded_to_ns
    );
    std::fs::write(&json, &text).expect("write");
    assert_eq!(read_sidecar(&dat).expect("a sidecar"), Some(s));
    // only FILE.dat has a sidecar, FILE.json
    let other = dir.join("latscope-t1-cpu2-c12345.trace");
    std::fs::write(&other, trace_dat(2, 4)).expect("write");
    assert_eq!(read_sidecar(&other).expect("none"), None);
    for bad in [
        "{}",
        "[1]",
        "not json",
        &text.replace("\"cpu\":2", "\"cpu\":-2"),
    ] {
        std::fs::write(&json, bad).expect("write");
        let e = read_sidecar(&dat).expect_err(bad);
        assert!(matches!(e, Error::Sidecar { .. }), "{e:?}");
        assert!(!e.to_string().contains('\n'), "{e}");
        assert_eq!(e.exit_code(), 1);
    }
    std::fs::write(&json, text.replace("\"wake_ns\"", "\"wake\"")).expect("write");
    assert!(read_sidecar(&dat).is_err());
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn without_a_window_it_is_a_usage_error_naming_the_options() {
    let file = trace_dat(0, 1);
    let t = times();
    for given in [
        WindowOptions::default(),
        WindowOptions {
            cpu: Some(0),
            from_ns: Some(t[0]),
            ..WindowOptions::default()
        },
    ] {
        let e = explain("f.dat", &file, None, given).expect_err("no window");
        let said = e.to_string();
        assert_eq!(e.exit_code(), 2, "{said}");
        for o in ["--cpu", "--pid", "--from", "--to"] {
            assert!(said.contains(o), "{o}: {said}");
        }
        assert!(!said.contains('\n'), "{said}");
    }
    let e = explain("f.dat", &file, None, options(t[9], t[8])).expect_err("backwards");
    assert_eq!(e.exit_code(), 2, "{e}");
    let e = explain(
        "f.dat",
        &file,
        None,
        WindowOptions {
            cpu: Some(1),
            ..options(t[0], t[9])
        },
    )
    .expect_err("no CPU 1");
    assert_eq!(e.exit_code(), 2, "{e}");
    assert!(e.to_string().contains("no CPU 1"), "{e}");
}

#[test]
fn another_version_big_endian_and_corrupt_files_are_one_line_errors() {
    let t = times();
    let mut file = trace_dat(0, 1);
    file[10] = b'7';
    let e = explain("h.dat", &file, None, WindowOptions::default()).expect_err("version 7");
    let said = e.to_string();
    assert!(matches!(e, Error::TraceFile { .. }), "{e:?}");
    assert!(
        said.starts_with("h.dat: trace.dat version 7")
            && said.contains("trace-cmd convert --file-version 6 --compression none"),
        "{said}"
    );
    assert_eq!(e.exit_code(), 1);
    let mut file = trace_dat(0, 1);
    // the endianness byte, after the magic and "6\0"
    file[12] = 1;
    let e = explain("b.dat", &file, None, options(t[0], t[9])).expect_err("big-endian");
    assert!(e.to_string().contains("big-endian"), "{e}");
    let e = explain("z.dat", b"\x17\x08\x44tracing", None, options(0, 1)).expect_err("cut");
    assert!(matches!(e, Error::TraceFile { .. }), "{e:?}");
    assert!(!e.to_string().contains('\n'), "{e}");
}

#[test]
fn truncated_and_flipped_files_give_errors_or_explanations_never_panics() {
    let t = times();
    let file = trace_dat(0, 1);
    let given = options(t[5], t[120]);
    let data_at = file.len() - PAGES.len();
    // every cut of the header, then every 7th byte of the pages
    let cuts = (0..data_at).chain((data_at..file.len()).step_by(7));
    for n in cuts {
        match explain("f.dat", &file[..n], None, given) {
            Err(e) => {
                assert!(matches!(e, Error::TraceFile { .. }), "{n}: {e:?}");
                assert!(!e.to_string().contains('\n'), "{n}: {e}");
            }
            Ok(e) => panic!("{n} bytes of {} explained: {e:?}", file.len()),
        }
    }
    let mut b = file.clone();
    for i in (0..b.len()).step_by(3) {
        b[i] ^= 0xa5;
        if let Ok(e) = explain("f.dat", &b, None, given) {
            let a = &e.attribution;
            assert_eq!(a.total_ns(), a.latency_ns, "byte {i}: {a:?}");
            render("f.dat", &e);
        }
        b[i] ^= 0xa5;
    }
}

#[test]
fn what_it_prints_is_a_header_line_then_the_reports_spike_lines() {
    let t = times();
    let e = explain("f.dat", &trace_dat(0, 1), None, options(t[40], t[120])).expect("explained");
    let out = render("f.dat", &e);
    let (first, rest) = out.split_once('\n').expect("lines");
    assert_eq!(
        first,
        "f.dat: trace.dat version 6, clock mono, CPU0, 3 pages"
    );
    let mut spike = String::new();
    crate::report::text::attribution(&mut spike, &e.attribution);
    assert_eq!(rest, spike);
    let us = e.attribution.latency_ns as f64 / 1e3;
    let head = format!(
        "  spike {us:.1} µs  CPU0  cycle 0  @ {:.6} s",
        t[40] as f64 / 1e9
    );
    assert!(rest.starts_with(&head), "{rest}");
    assert!(rest.lines().count() > 1, "{rest}");
}

#[test]
fn its_json_holds_every_cause_as_the_attribution_has_it() {
    let t = times();
    let e = explain("f.dat", &trace_dat(0, 1), None, options(t[5], t[160])).expect("explained");
    let doc: serde_json::Value = serde_json::from_str(&render_json("f.dat", &e)).expect("JSON");
    let a = &e.attribution;
    assert_eq!(doc["total_ns"].as_u64(), Some(a.total_ns()));
    assert_eq!(doc["latency_ns"].as_u64(), Some(a.latency_ns));
    let causes = doc["causes"].as_array().expect("causes");
    assert_eq!(causes.len(), a.causes.len());
    assert!(!causes.is_empty());
    for (j, c) in causes.iter().zip(&a.causes) {
        assert_eq!(j["kind"].as_str(), Some(format!("{:?}", c.kind()).as_str()));
        let culprit: latscope_core::explain::Culprit =
            serde_json::from_value(j["culprit"].clone()).expect("a culprit");
        assert_eq!(culprit, c.culprit);
        assert_eq!(j["ns"].as_u64(), Some(c.ns));
        assert_eq!(j["count"].as_u64(), Some(u64::from(c.count)));
        assert_eq!(
            j["label"].as_str(),
            Some(crate::aggregate::cause_label(c).as_str())
        );
    }
}

#[test]
fn a_file_over_the_limit_is_not_read() {
    let dir = std::env::temp_dir().join(format!("latscope-explain-big-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let f = dir.join("big.dat");
    std::fs::write(&f, [0u8; 100]).expect("write");
    assert!(read_at_most(&f, 99).expect("read").is_none());
    assert_eq!(
        read_at_most(&f, 100).expect("read").map(|b| b.len()),
        Some(100)
    );
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn times_read_exactly_as_trace_cmd_prints_them() {
    let ok = [
        ("22534.727720", 22_534_727_720_000),
        ("22534", 22_534_000_000_000),
        ("0.000000001", 1),
        ("1.5", 1_500_000_000),
        ("22534727720000ns", 22_534_727_720_000),
        ("0ns", 0),
        ("18446744073.709551615", u64::MAX),
    ];
    for (s, ns) in ok {
        assert_eq!(parse_time(s), Some(ns), "{s}");
    }
    let bad = [
        "",
        ".5",
        "5.",
        "1.0000000001",
        "-1",
        "+1",
        "1e3",
        " 1",
        "1 ",
        "1.5ns",
        "ns",
        "18446744073.709551616",
        "99999999999999999999",
        "1..2",
        "0x10",
    ];
    for s in bad {
        assert_eq!(parse_time(s), None, "{s:?}");
    }
}
