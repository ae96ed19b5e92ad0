//! Properties of the fuzz targets. Each takes arbitrary bytes and panics
//! only on a real defect.

use latscope_core::explain::{classify_text, parse_line, Window};
use latscope_core::wire::{encode, Decoder, Frame, MAX_FRAME};

/// The frame decoder: arbitrary bytes, fed in arbitrary pieces (the first
/// byte sets the piece length), never panic; every byte is accounted for;
/// each decoded frame re-encodes to bytes that decode to the same frame;
/// and the result does not depend on how the input was split.
pub fn decoder(data: &[u8]) {
    let Some((&step, data)) = data.split_first() else {
        return;
    };
    let step = usize::from(step).max(1);
    let whole = decode_in_pieces(data, usize::MAX);
    let pieces = decode_in_pieces(data, step);
    assert_eq!(whole.frames, pieces.frames, "frames depend on the split");
    assert_eq!(whole.errors, pieces.errors, "errors depend on the split");
    assert_eq!(whole.bytes, data.len() as u64, "bytes not all counted");
    assert!(whole.skipped <= whole.bytes, "more bytes skipped than fed");
    let mut buf = [0u8; MAX_FRAME];
    for f in &whole.frames {
        let n = encode(f, &mut buf).expect("a decoded frame re-encodes");
        let again = decode_in_pieces(&buf[..n], usize::MAX).frames;
        assert_eq!(again.len(), 1, "a re-encoded frame decodes once");
        assert_eq!(&again[0], f, "re-encoded frame differs");
    }
}

/// What the decoder made of some bytes.
struct Decoded {
    frames: Vec<Frame>,
    /// Rejected frames.
    errors: u64,
    /// Bytes the decoder counted.
    bytes: u64,
    /// Bytes it skipped.
    skipped: u64,
}

/// `data` fed to a fresh decoder in pieces of `step` bytes.
fn decode_in_pieces(data: &[u8], step: usize) -> Decoded {
    let mut d = Decoder::<MAX_FRAME>::new();
    let mut frames = Vec::new();
    let mut errors = 0u64;
    for piece in data.chunks(step.min(data.len().max(1))) {
        let mut rest = piece;
        while !rest.is_empty() {
            let (ev, r) = d.feed(rest);
            assert!(
                r.len() < rest.len() || ev.is_some(),
                "feed made no progress"
            );
            rest = r;
            match ev {
                Some(Ok(f)) => frames.push(f),
                Some(Err(_)) => errors += 1,
                None => {}
            }
        }
    }
    let s = *d.stats();
    assert_eq!(s.frames, frames.len() as u64, "frame count differs");
    Decoded {
        frames,
        errors,
        bytes: s.bytes,
        skipped: s.bytes_skipped,
    }
}

/// The target's command line: arbitrary words (NUL- or newline-separated,
/// lossily UTF-8) never panic the parser; it returns an action or a usage
/// error whose message is one line. The same words go to the `rtla`
/// grammar, as they are and after `timerlat hist`.
pub fn cli(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let words: Vec<&str> = text.split(['\0', '\n']).collect();
    let one_line = |e: latscope::Error| {
        let msg = e.to_string();
        assert!(!msg.contains('\n'), "multi-line error: {msg:?}");
        assert!(!msg.is_empty(), "empty error message");
    };
    if let Err(e) = latscope::testing::parse_args(&words) {
        one_line(e);
    }
    let hist: Vec<&str> = ["timerlat", "hist"]
        .into_iter()
        .chain(words.iter().copied())
        .collect();
    for rtla in [&words, &hist] {
        match latscope::testing::parse_rtla_args(rtla) {
            Ok(latscope::testing::RtlaRequest::Hist(h)) => {
                if let Err(e) = h.refuse_unsupported() {
                    one_line(e);
                }
            }
            Ok(latscope::testing::RtlaRequest::Help) => {}
            Err(e) => one_line(e),
        }
    }
}

/// The tracefs text parser and the spike classifier: arbitrary text never
/// panics, line by line or as a whole trace.
pub fn trace(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for line in text.lines() {
        let _ = parse_line(line);
    }
    let w = Window {
        cpu: u32::from(data.first().copied().unwrap_or(0) & 3),
        cycle: 1,
        deadline_ns: 352_843_000_000,
        wake_ns: 352_845_421_000,
        pid: 0,
    };
    let _ = classify_text(&w, &text);
}

/// The host's decoding of one stream (a file, stdin, a connection):
/// arbitrary bytes in arbitrary pieces (the first byte sets the piece
/// length) never panic, and the text report of what decoded renders. The
/// stable harness (tests/tests/fuzz_stable.rs) also bounds what it may
/// cost, 64 MiB at the peak, with a counting allocator; under libFuzzer
/// (with its sanitizer's own memory) only its default RSS limit applies.
pub fn host(data: &[u8]) {
    use latscope_host::report::{render, Decoded, Format, Options};
    use latscope_host::session::Session;
    let Some((&step, data)) = data.split_first() else {
        return;
    };
    let step = (usize::from(step) * 64).max(1);
    let mut s = Session::new("fuzz");
    for piece in data.chunks(step) {
        s.feed(piece);
    }
    s.finish();
    let _ = s.fatal();
    let d = [Decoded {
        session: s,
        end: std::time::UNIX_EPOCH,
    }];
    let opts = Options {
        format: Format::Text,
        hist_us: None,
        histofall: false,
        hist_shape: Default::default(),
    };
    render(&d, opts).expect("a text report renders");
}

/// The format files of the events the classifier reads, as an x86-64
/// kernel (6.18) wrote them: the decoder's formats for [`ringbuf`].
const FORMATS: [&str; 7] = [
    include_str!("../../core/src/ringbuf/fixtures/x86_64-6.18/irq_handler_entry.format"),
    include_str!("../../core/src/ringbuf/fixtures/x86_64-6.18/irq_handler_exit.format"),
    include_str!("../../core/src/ringbuf/fixtures/x86_64-6.18/softirq_entry.format"),
    include_str!("../../core/src/ringbuf/fixtures/x86_64-6.18/softirq_exit.format"),
    include_str!("../../core/src/ringbuf/fixtures/x86_64-6.18/sched_switch.format"),
    include_str!("../../core/src/ringbuf/fixtures/x86_64-6.18/sched_wakeup.format"),
    include_str!("../../core/src/ringbuf/fixtures/x86_64-6.18/print.format"),
];

/// The same bytes as the pages of a history (of 512-byte pages): a window
/// explained from them adds up to the spike, whatever they hold.
fn history(
    dec: &mut latscope_core::ringbuf::Decoder,
    header: latscope_core::ringbuf::PageHeader,
    pick: u8,
    bytes: &[u8],
) {
    use latscope_core::explain::Window;
    use latscope_core::ringbuf::History;
    const PAGE: usize = 512;
    let Ok(mut h) = History::new(vec![0u8; 4 * PAGE], header, PAGE) else {
        panic!("a history of four pages is refused");
    };
    for chunk in bytes.chunks(PAGE) {
        h.slot()[..chunk.len()].copy_from_slice(chunk);
        h.keep(chunk.len());
    }
    let base = h.oldest_ns().unwrap_or(0);
    let deadline_ns = base.saturating_add(u64::from(pick) * 1_000);
    let w = Window {
        cpu: 0,
        cycle: 1,
        deadline_ns,
        wake_ns: deadline_ns.saturating_add(50_000),
        pid: u32::from(pick),
    };
    let a = h.explain(dec, w, w.wake_ns);
    assert_eq!(a.total_ns(), a.latency_ns, "{a:?}");
}

/// The binary trace decoder: the same bytes, read as a format file, parse
/// or are refused; read as a page (after a first byte that picks the
/// 64-bit or the 32-bit header), they decode or give an error that names
/// a byte inside the page, never a panic.
pub fn ringbuf(data: &[u8]) {
    use latscope_core::ringbuf::{Decoder, EventFormats, Page, PageHeader};
    use latscope_core::Error;
    let text = String::from_utf8_lossy(data);
    let _ = PageHeader::parse(&text);
    let mut formats = EventFormats::new();
    for f in FORMATS {
        assert_eq!(formats.add(f), Ok(true), "a fixture format is refused");
    }
    let _ = formats.add(&text);
    let Some((&pick, page)) = data.split_first() else {
        return;
    };
    let header = if pick & 1 == 0 {
        PageHeader::LONG_8
    } else {
        PageHeader::LONG_4
    };
    let inside = |e: Error| match e {
        Error::BadTracePage { offset, .. } => {
            assert!(
                (offset as usize) < page.len().max(64),
                "error at {offset}, past the page"
            )
        }
        other => panic!("a page gave {other:?}"),
    };
    let mut dec = Decoder::new(formats);
    history(&mut dec, header, pick, page);
    match Page::new(header, page) {
        Err(e) => inside(e),
        Ok(p) => {
            for raw in p.events() {
                match raw {
                    Ok(raw) => {
                        assert!(raw.payload.len() <= page.len());
                        if let Err(e) = dec.decode(0, &raw) {
                            inside(e);
                        }
                    }
                    Err(e) => inside(e),
                }
            }
        }
    }
}

/// A trace.dat, as `latscope-host explain` reads one: the first byte
/// picks the CPU, the window (from the CPU's first page's timestamp) and
/// whether a sidecar gives it; the rest is the file. Core's
/// `TraceDat::parse` and every section it returns, the event formats, the
/// CPU's pages in a history and `History::explain` never panic; an error
/// is one line, and an explanation adds up to its spike.
pub fn tracedat(data: &[u8]) {
    use latscope_core::tracedat::TraceDat;
    use latscope_host::explain::{explain, render, Sidecar, WindowOptions};
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let cpu = u32::from(pick & 1);
    let mut base = 0;
    if let Ok(t) = TraceDat::parse(file) {
        let _ = (t.formats().count(), t.options().count(), t.trace_clock());
        let _ = (t.cmdlines(), t.header_event(), t.long_size());
        for c in 0..t.cpus().min(64) {
            let _ = t.cpu(c);
        }
        let first = t.cpu(cpu).and_then(|p| p.get(..8));
        base = first.map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
    }
    let deadline_ns = base.saturating_add(u64::from(pick >> 2 & 0x1f) * 1_000);
    let wake_ns = deadline_ns.saturating_add(50_000);
    let (sidecar, given) = if pick & 0x80 != 0 {
        let s = Sidecar {
            thread: 0,
            tid: 0,
            cpu,
            cycle: 1,
            deadline_ns,
            wake_ns,
            latency_ns: wake_ns - deadline_ns,
            recorded_to_ns: wake_ns,
            trace_clock: "mono".into(),
        };
        (Some(s), WindowOptions::default())
    } else {
        let given = WindowOptions {
            cpu: Some(cpu),
            pid: Some(0),
            from_ns: Some(deadline_ns),
            to_ns: Some(wake_ns),
        };
        (None, given)
    };
    match explain("fuzz.dat", file, sidecar.as_ref(), given) {
        Ok(e) => {
            let a = &e.attribution;
            assert_eq!(a.total_ns(), a.latency_ns, "{a:?}");
            assert!(!render("fuzz.dat", &e).is_empty());
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.is_empty() && !msg.contains('\n'), "{msg:?}");
        }
    }
}
