//! The report's header lines for each platform, and the spike accounting
//! of protocol version 3, on streams made by the real encoder and read
//! through the real decoder.

use std::time::SystemTime;

use latscope_core::wire::{
    bounded, Aggregate, Body, Decoder, Encoder, Frame, Platform, TargetInfo, MAX_FRAME, NS_CLOCK_HZ,
};
use serde_json::Value;

use super::{render, Decoded, Format, Options};
use crate::session::Session;
use crate::synth::{Synth, SynthConfig};

/// A synthetic run's frames, in order.
fn synth_frames(cfg: SynthConfig) -> Vec<Frame> {
    let (bytes, _) = Synth::bytes(cfg);
    let mut dec = Box::new(Decoder::<MAX_FRAME>::new());
    let frames: Vec<Frame> = dec.frames(&bytes).map(|f| f.expect("clean")).collect();
    assert!(dec.stats().is_clean());
    frames
}

/// `bodies` through the encoder: a stream as a target sends it.
fn encode(bodies: impl IntoIterator<Item = Body>) -> Vec<u8> {
    let mut enc = Encoder::new();
    let mut out = Vec::new();
    for b in bodies {
        out.extend_from_slice(enc.frame(b).expect("encodes"));
    }
    out
}

/// The report of `bytes` in `format`.
fn report(bytes: &[u8], format: Format) -> String {
    let mut s = Session::new("run.lsr");
    s.feed(bytes);
    s.finish();
    assert!(s.link().is_clean(), "{:?}", s.link());
    let d = Decoded {
        session: s,
        end: SystemTime::UNIX_EPOCH,
    };
    let opts = Options {
        format,
        hist_us: None,
        histofall: false,
        hist_shape: Default::default(),
    };
    render(&[d], opts).expect("renders")
}

/// A synthetic run whose hello says `target` (its argv and thread count
/// kept).
fn with_target(frames: &[Frame], edit: impl Fn(&mut TargetInfo)) -> Vec<u8> {
    encode(frames.iter().map(|f| match &f.body {
        Body::Hello(h) => {
            let mut h = h.clone();
            edit(&mut h.target);
            Body::Hello(h)
        }
        b => b.clone(),
    }))
}

/// What the MCU target says of itself.
fn mps2(t: &mut TargetInfo) {
    *t = TargetInfo {
        hostname: bounded("mps2"),
        arch: bounded("thumbv7em"),
        cpus: 1,
        platform: Platform::BareMetal,
        model: bounded("mps2-an386 (Cortex-M4F, bare metal)"),
        clock_hz: 25_000_000,
        clock_resolution_ns: 40,
        ..TargetInfo::default()
    };
}

fn header(text: &str) -> Vec<&str> {
    text.lines().take_while(|l| !l.is_empty()).collect()
}

#[test]
fn a_bare_metal_header_names_its_model_and_clock_and_no_kernel() {
    let frames = synth_frames(SynthConfig {
        threads: 1,
        reports: 3,
        ..SynthConfig::default()
    });
    let text = report(&with_target(&frames, mps2), Format::Text);
    let head = header(&text);
    assert!(
        head[0].starts_with(
            "== run.lsr: latscope 0.1.0 on mps2 (thumbv7em, bare metal), 1 CPUs, run "
        ),
        "{}",
        head[0]
    );
    assert_eq!(
        head[1],
        "model:    mps2-an386 (Cortex-M4F, bare metal), clock 25 MHz (40 ns)"
    );
    assert_eq!(
        head[2],
        "config:   interval 1000.0 µs, duration 3 s, report every 1.0 s"
    );
    // no Linux facts, empty or made up
    for word in [
        "kernel",
        "PREEMPT",
        "realtime",
        "cmdline",
        "clocksource",
        "sched_rt_runtime_us",
        "mlock",
        "dma latency",
        "system:",
    ] {
        assert!(
            !head.iter().any(|l| l.contains(word)),
            "{word:?} in the header:\n{}",
            head.join("\n")
        );
    }
    let json: Value =
        serde_json::from_str(&report(&with_target(&frames, mps2), Format::Json)).expect("JSON");
    let t = &json["runs"][0]["target"];
    assert_eq!(t["platform"], "bare-metal");
    assert_eq!(t["model"], "mps2-an386 (Cortex-M4F, bare metal)");
    assert_eq!(t["clock_hz"], 25_000_000);
    assert_eq!(t["clock_resolution_ns"], 40);
    for k in [
        "kernel",
        "preempt_rt",
        "preempt_model",
        "cmdline",
        "clocksource",
    ] {
        assert!(t[k].is_null(), "{k}: {}", t[k]);
    }
}

#[test]
fn a_linux_header_adds_the_model_when_known() {
    let frames = synth_frames(SynthConfig {
        threads: 1,
        reports: 3,
        ..SynthConfig::default()
    });
    let pi = |t: &mut TargetInfo| {
        t.model = bounded("Raspberry Pi 4 Model B Rev 1.4");
        t.clock_resolution_ns = 1;
    };
    let text = report(&with_target(&frames, pi), Format::Text);
    let head = header(&text);
    assert!(
        head[0].contains("kernel 6.6.0-rt15, PREEMPT_RT, realtime"),
        "{}",
        head[0]
    );
    assert_eq!(
        head[1],
        "model:    Raspberry Pi 4 Model B Rev 1.4, clock 1 GHz (1 ns)"
    );
    assert!(head
        .iter()
        .any(|l| l.starts_with("system:   clocksource arch_sys_counter")));
    // unknown model: the header as before version 3, and no model line
    let plain = report(&with_target(&frames, |t| t.model.clear()), Format::Text);
    assert!(!plain.lines().any(|l| l.starts_with("model:")), "{plain}");
    assert_eq!(header(&plain).len(), head.len() - 1);
    let _ = NS_CLOCK_HZ;
}

/// The spike records of thread `t` in `frames`.
fn spike_records(frames: &[Frame], t: u16) -> u64 {
    frames
        .iter()
        .filter(|f| matches!(&f.body, Body::Spike(s) if s.thread == t && s.flags.spike))
        .count() as u64
}

/// `frames` with a final aggregate after each thread's last statistics:
/// every spike record in the stream sent, `explained` of them explained,
/// and 7 aggregated and 3 dropped besides.
fn with_aggregates(frames: &[Frame], explained: u64) -> Vec<Body> {
    let mut out = Vec::new();
    for f in frames {
        out.push(f.body.clone());
        if let Body::Stats(s) = &f.body {
            if s.last_report {
                let sent = spike_records(frames, s.thread);
                let spikes = sent + 7 + 3;
                out.push(Body::Aggregate(Aggregate {
                    thread: s.thread,
                    epoch: s.epoch,
                    above: spikes,
                    max_ns: s.max,
                    max_cycle: 99,
                    max_deadline_ns: 1_000_000,
                    sent,
                    explained,
                    aggregated: 7,
                    dropped: 3,
                    spikes,
                    spikes_sent: sent,
                    spikes_explained: explained,
                    spikes_aggregated: 7,
                    spikes_dropped: 3,
                    queued: 0,
                    last_report: true,
                }));
            }
        }
    }
    out
}

#[test]
fn the_report_accounts_for_every_spike_and_its_coverage() {
    let frames = synth_frames(SynthConfig {
        threads: 2,
        reports: 5,
        spike_ns: 20_000,
        ..SynthConfig::default()
    });
    let (s0, s1) = (spike_records(&frames, 0), spike_records(&frames, 1));
    assert!(s0 > 2 && s1 > 2, "the synthetic run has spikes: {s0} {s1}");
    let bytes = encode(with_aggregates(&frames, 2));
    let text = report(&bytes, Format::Text);
    let at = text
        .lines()
        .position(|l| l.starts_with("spike accounting (samples above 20.0 µs"))
        .unwrap_or_else(|| panic!("no accounting:\n{text}"));
    let lines: Vec<&str> = text.lines().skip(at + 2).take(3).collect();
    let cov = |s: u64| format!("{:.1}%", 200.0 / (s + 10) as f64);
    for (line, (label, sent)) in lines.iter().zip([("T0", s0), ("T1", s1)]) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let want = [
            label.to_string(),
            (sent + 10).to_string(),
            sent.to_string(),
            "2".into(),
            "7".into(),
            "3".into(),
            "0".into(),
            cov(sent),
        ];
        assert_eq!(cols[..8], want, "{line}");
    }
    let all: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(all[0], "all");
    assert_eq!(all[1], (s0 + s1 + 20).to_string());
    assert_eq!(all[3], "4");
    // all arrived and adds up: no problem lines
    let section: Vec<&str> = text
        .lines()
        .skip(at)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(section.len(), 5, "{}", section.join("\n"));
    let json: Value = serde_json::from_str(&report(&bytes, Format::Json)).expect("JSON");
    let acc = &json["runs"][0]["spike_account"][0];
    assert_eq!(acc["spikes"], s0 + 10);
    assert_eq!(acc["aggregated"], 7);
    assert_eq!(acc["dropped"], 3);
    assert_eq!(acc["consistent"], true);
    assert_eq!(acc["spike_records_received"], s0);
    assert_eq!(acc["coverage"], 2.0 / (s0 + 10) as f64);
}

#[test]
fn spikes_lost_on_the_link_or_counts_that_do_not_add_up_are_named() {
    let frames = synth_frames(SynthConfig {
        threads: 1,
        reports: 5,
        spike_ns: 20_000,
        ..SynthConfig::default()
    });
    let sent = spike_records(&frames, 0);
    let mut bodies = with_aggregates(&frames, 1);
    // one spike record lost on the way
    let lost = bodies
        .iter()
        .position(|b| matches!(b, Body::Spike(s) if s.flags.spike))
        .expect("a spike");
    bodies.remove(lost);
    // and the target claims more explained than it sent
    for b in &mut bodies {
        if let Body::Aggregate(a) = b {
            a.spikes_explained = a.spikes_sent + 1;
        }
    }
    let text = report(&encode(bodies), Format::Text);
    assert!(
        text.contains(&format!(
            "  T0: 1 of the {sent} spike records sent did not arrive (lost on the link)"
        )),
        "{text}"
    );
    assert!(
        text.contains("  T0: the target's counts do not add up"),
        "{text}"
    );
}

#[test]
fn runs_without_aggregates_have_no_accounting() {
    let frames = synth_frames(SynthConfig::default());
    let bytes = encode(frames.iter().map(|f| f.body.clone()));
    assert!(!report(&bytes, Format::Text).contains("spike accounting"));
    let json: Value = serde_json::from_str(&report(&bytes, Format::Json)).expect("JSON");
    assert!(json["runs"][0].get("spike_account").is_none());
}

/// A timerlat run (protocol version 6): the MODE line says what the mode
/// gives up and gains, the text has a timerlat section per thread and
/// context, the JSON its figures and buckets, each equal to the synthetic
/// target's own histograms.
#[test]
fn a_timerlat_run_reports_each_threads_kernel_latencies() {
    use latscope_core::stats::{quantile, Ppm};
    use latscope_core::timerlat::Context;
    let cfg = SynthConfig {
        timerlat: true,
        reports: 4,
        ..SynthConfig::default()
    };
    let (bytes, synth) = Synth::bytes(cfg);
    let text = report(&bytes, Format::Text);
    assert!(
        text.contains("\nMODE:     timerlat (timerlat: each wake-up is the return of a read()"),
        "{text}"
    );
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("timerlat ("))
        .skip(2)
        .take(6)
        .collect();
    let layout = synth.layout;
    for (t, th) in synth.threads.iter().enumerate() {
        let tl = th.timerlat.as_ref().expect("timerlat");
        for c in Context::ALL {
            let h = &tl.hists[c.index()];
            let tot = h.totals();
            let us = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
            let q = |p| us(quantile(&layout, h.counts(), p, tot.max).unwrap());
            let want: Vec<String> = [
                format!("T{t}"),
                t.to_string(),
                c.label().to_string(),
                tot.count.to_string(),
                us(tot.min),
                format!("{:.1}", tot.sum as f64 / tot.count as f64 / 1e3),
                q(Ppm::P50),
                q(Ppm::P99),
                q(Ppm::P999),
                us(tot.max),
                "0".into(),
                "yes".into(),
            ]
            .into();
            let row = rows[t * 3 + c.index()];
            let got: Vec<&str> = row.split_whitespace().collect();
            assert_eq!(got, want, "{row}\n{text}");
        }
    }
    for t in 0..2 {
        let periods = synth.threads[t].stats.cycles;
        let line = format!(
            "T{t}: {periods} periods; {periods} paired IRQ and thread entries, 0 with the IRQ \
             latency above the thread's; 0 entries lost, 0 page(s) unreadable\n"
        );
        assert!(text.contains(&line), "{line}\n{text}");
    }
    assert!(
        text.contains("data:     exact at the end (bye intact)"),
        "{text}"
    );
    let json: Value = serde_json::from_str(&report(&bytes, Format::Json)).unwrap();
    let run = &json["runs"][0];
    assert_eq!(run["config"]["wake_mode"], "timerlat");
    assert_eq!(run["complete"], true);
    for (t, th) in synth.threads.iter().enumerate() {
        let j = &run["timerlat"][t];
        assert_eq!(j["thread"], t);
        assert_eq!(j["last_report"], true);
        let tl = th.timerlat.as_ref().unwrap();
        for c in Context::ALL {
            let jc = &j["contexts"][c.index()];
            let h = &tl.hists[c.index()];
            assert_eq!(jc["context"], c.label());
            assert_eq!(jc["count"], h.totals().count);
            assert_eq!(jc["sum_ns"], h.totals().sum);
            assert_eq!(jc["max_ns"], h.totals().max);
            assert_eq!(jc["exact"], true);
            let buckets: Vec<(u64, u64)> = jc["buckets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| (b["bucket"].as_u64().unwrap(), b["count"].as_u64().unwrap()))
                .collect();
            let want: Vec<(u64, u64)> = h
                .counts()
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(i, &n)| (i as u64, n))
                .collect();
            assert_eq!(buckets, want, "T{t} {c:?}");
        }
    }
}

/// A run of the timerlat mode whose timerlat frames never came is not
/// exact, and says so; the JSON of a run of another mode has no
/// `timerlat` key and no wake mode.
#[test]
fn a_timerlat_run_without_its_figures_is_not_exact() {
    let frames = synth_frames(SynthConfig {
        timerlat: true,
        reports: 3,
        ..SynthConfig::default()
    });
    let bytes = encode(frames.into_iter().map(|f| f.body).filter(|b| {
        !matches!(
            b,
            Body::TimerlatStats(_) | Body::TimerlatDelta(_) | Body::TimerlatChunk(_)
        )
    }));
    let text = report(&bytes, Format::Text);
    assert!(
        text.contains("\ntimerlat: no figures of the kernel's timerlat tracer arrived\n"),
        "{text}"
    );
    assert!(
        text.contains("INCOMPLETE: its histograms are not exact at the end"),
        "{text}"
    );
    let (plain, _) = Synth::bytes(SynthConfig {
        reports: 3,
        ..SynthConfig::default()
    });
    let json: Value = serde_json::from_str(&report(&plain, Format::Json)).unwrap();
    let run = json["runs"][0].as_object().unwrap();
    assert!(!run.contains_key("timerlat"));
    assert!(!run["config"].as_object().unwrap().contains_key("wake_mode"));
}

/// Timerlat frames lost in the middle of a run: the report is exact again
/// at the end (the final report's full snapshots), and the lost frames
/// are the only loss.
#[test]
fn lost_timerlat_frames_heal_by_the_end() {
    let frames = synth_frames(SynthConfig {
        timerlat: true,
        reports: 12,
        ..SynthConfig::default()
    });
    let mut enc = Encoder::new();
    let mut bytes = Vec::new();
    let mut dropped = 0;
    for f in frames {
        let seq = enc.next_seq();
        let mid = matches!(&f.body, Body::TimerlatDelta(d) if d.epoch == 4)
            || matches!(&f.body, Body::TimerlatChunk(c) if c.epoch == 5);
        let frame = enc.frame(f.body).expect("encodes").to_vec();
        assert_eq!(seq, f.seq);
        if mid {
            dropped += 1;
        } else {
            bytes.extend_from_slice(&frame);
        }
    }
    assert!(dropped >= 6, "{dropped}");
    let mut s = Session::new("lossy.lsr");
    s.feed(&bytes);
    s.finish();
    let run = s.agg.runs.first().expect("a run");
    assert!(run.exact_at_end());
    let losses = super::completeness::losses(run, &s.link());
    assert!(
        matches!(losses.as_slice(), [super::completeness::Loss::FramesLost(n, _)] if *n == dropped),
        "{losses:?}"
    );
}
