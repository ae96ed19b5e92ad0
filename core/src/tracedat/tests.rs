use super::*;
use crate::ringbuf::{EventFormats, Page, PageHeader};
use crate::Error;
use std::vec::Vec;

const HEADER_PAGE: &str = include_str!("../ringbuf/fixtures/x86_64-6.18/header_page");
const PAGES: &[u8] = include_bytes!("../ringbuf/fixtures/x86_64-6.18/cpu0.pages");
const SWITCH: &str = include_str!("../ringbuf/fixtures/x86_64-6.18/sched_switch.format");
const IRQ: &str = include_str!("../ringbuf/fixtures/x86_64-6.18/irq_handler_entry.format");
const PRINT: &str = include_str!("../ringbuf/fixtures/x86_64-6.18/print.format");

const FORMATS: [Format<'static>; 3] = [
    Format {
        system: "sched",
        text: SWITCH,
    },
    Format {
        system: "ftrace",
        text: PRINT,
    },
    Format {
        system: "irq",
        text: IRQ,
    },
];

fn header(cpus: u32) -> Header<'static> {
    Header {
        long_size: 8,
        page_size: 4096,
        header_page: HEADER_PAGE,
        header_event: "# compressed entry header\n",
        formats: &FORMATS,
        cmdlines: "1 systemd\n42 latscope\n",
        trace_clock: "local global [mono] mono_raw\n",
        cpus,
    }
}

fn file(h: Header<'_>, data: &[CpuData<'_>]) -> Vec<u8> {
    let layout = Layout::new(h, data).unwrap();
    let mut out = Vec::new();
    layout
        .write(&mut |b: &[u8]| {
            out.extend_from_slice(b);
            Ok::<(), ()>(())
        })
        .unwrap();
    assert_eq!(out.len() as u64, layout.size());
    out
}

#[test]
fn what_is_written_reads_back_section_by_section() {
    let data = [CpuData {
        cpu: 2,
        pages: PAGES,
    }];
    let bytes = file(header(4), &data);
    let t = TraceDat::parse(&bytes).unwrap();
    assert_eq!((t.long_size(), t.page_size(), t.cpus()), (8, 4096, 4));
    assert_eq!(t.header_page(), HEADER_PAGE);
    assert_eq!(t.cmdlines(), "1 systemd\n42 latscope\n");
    assert_eq!(t.trace_clock(), Some("mono"));
    // ftrace's first, then the systems in the order they came
    let got: Vec<_> = t.formats().collect();
    assert_eq!(got, [FORMATS[1], FORMATS[0], FORMATS[2]]);
    for cpu in [0, 1, 3] {
        assert_eq!(t.cpu(cpu), Some(&[][..]));
    }
    let pages = t.cpu(2).unwrap();
    assert_eq!(pages, PAGES);
    // page-aligned in the file
    let at = pages.as_ptr() as usize - bytes.as_ptr() as usize;
    assert_eq!(at % 4096, 0);
    assert_eq!(t.cpu(4), None);
    // the pages decode as the kernel wrote them
    let mut formats = EventFormats::new();
    for f in t.formats() {
        formats.add(f.text).unwrap();
    }
    let header = PageHeader::parse(t.header_page()).unwrap();
    let events: usize = pages
        .chunks(4096)
        .map(|p| Page::new(header, p).unwrap().events().count())
        .sum();
    assert_eq!(events, 170);
}

#[test]
fn no_clock_no_options_and_a_file_without_data() {
    let mut h = header(1);
    h.trace_clock = "";
    h.formats = &[];
    let bytes = file(h, &[]);
    let t = TraceDat::parse(&bytes).unwrap();
    assert_eq!(t.options().count(), 0);
    assert_eq!(t.trace_clock(), None);
    assert_eq!(t.formats().count(), 0);
    assert_eq!(t.cpu(0), Some(&[][..]));
}

#[test]
fn a_layout_refuses_what_the_format_cannot_say() {
    let page = [0u8; 4096];
    let half = [0u8; 2048];
    let bad = |h: Header<'_>, d: &[CpuData<'_>]| {
        matches!(Layout::new(h, d), Err(Error::BadTraceFile { .. }))
    };
    let mut h = header(2);
    assert!(bad(
        h,
        &[CpuData {
            cpu: 2,
            pages: &page
        }]
    ));
    assert!(bad(
        h,
        &[CpuData {
            cpu: 0,
            pages: &half
        }]
    ));
    assert!(bad(
        h,
        &[
            CpuData {
                cpu: 0,
                pages: &page
            },
            CpuData {
                cpu: 0,
                pages: &page
            }
        ]
    ));
    h.long_size = 2;
    assert!(bad(h, &[]));
    h.long_size = 4;
    h.page_size = 1000;
    assert!(bad(h, &[]));
}

#[test]
fn every_truncation_and_every_flipped_byte_is_an_error_or_a_file_never_a_panic() {
    let data = [CpuData {
        cpu: 0,
        pages: &PAGES[..4096],
    }];
    let bytes = file(header(1), &data);
    let table = bytes.len() - 4096;
    for n in 0..table {
        let e = TraceDat::parse(&bytes[..n]).unwrap_err();
        assert!(matches!(e, Error::BadTraceFile { .. }), "{n}: {e:?}");
    }
    let mut b = bytes.clone();
    for i in 0..table {
        b[i] ^= 0xff;
        if let Ok(t) = TraceDat::parse(&b) {
            // whatever it says, reading it never fails
            let _ = (t.formats().count(), t.options().count(), t.trace_clock());
            for cpu in 0..t.cpus().min(64) {
                let _ = t.cpu(cpu);
            }
        }
        b[i] ^= 0xff;
    }
}

#[test]
fn another_version_is_refused_by_number_with_the_command_that_converts_it() {
    let mut bytes = file(header(1), &[]);
    bytes[10] = b'7';
    let e = TraceDat::parse(&bytes).unwrap_err();
    assert_eq!(e, Error::TraceFileVersion(7));
    let said = std::format!("{e}");
    assert!(said.contains("trace-cmd convert --file-version 6 --compression none"));
    bytes[0] = 0;
    assert!(matches!(
        TraceDat::parse(&bytes),
        Err(Error::BadTraceFile { offset: 0, .. })
    ));
}
