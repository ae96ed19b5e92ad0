//! The Cortex-M firmware (`shim-cortex-m`) on qemu's emulated MPS2 AN386,
//! through the one command a user runs (`scripts/mcu-run`): built with a
//! configuration, run under `qemu-system-arm -icount`, its UART recorded
//! live by `latscope-host record`, then decoded here frame by frame.
//!
//! * a plain run: cycles + missed = duration / interval (±1), no CRC
//!   error, the bye arrived;
//! * the disturbance above the measuring interrupt: it ran N times and the
//!   handler wrapper logged N entries (the positive control), and every
//!   spike it caused is explained by it, within 10 % (or 2 µs) of the
//!   ground truth D minus the offset;
//! * the disturbance below: it ran (the same control) and never appears
//!   as a cause;
//! * the disturbance below with interrupts masked: its delay is measured
//!   as masked time, within the same tolerance, and it is not named;
//! * `latscope-host compare` of an MCU recording with a Linux one;
//! * the footprint: flash and RAM within 64 KiB each, from the ELF.
//!
//! Firmware builds share one target directory, so the runs take turns.
//! `LATSCOPE_MCU_TESTS=0` switches them off.
//! Needs `qemu-system-arm` and the `thumbv7em-none-eabihf` target (CI's
//! `mcu` stage has both); elsewhere a missing one skips.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use latscope_core::explain::Culprit;
use latscope_core::wire::{Body, Frame, Platform};
use latscope_testkit::host::{bins, decode_frames, host, record_file};
use latscope_testkit::qemu::which;
use latscope_testkit::workspace_root;
use latscope_testkit::Scratch;
use latscope_testkit::{is_root, require};

/// Builds and runs take turns: they share the firmware's target directory.
static TURN: Mutex<()> = Mutex::new(());

const INTERVAL_US: u64 = 1000;
const DURATION_MS: u64 = 2000;
const D_US: u64 = 30;
const OFFSET_US: u64 = 10;
const EVERY: u64 = 40;

/// `LATSCOPE_MCU_TESTS=0` switches these tests off (CI runs them in its
/// `mcu` stage, not in the README's test command).
fn switched_off() -> bool {
    let off = std::env::var("LATSCOPE_MCU_TESTS").as_deref() == Ok("0");
    if off {
        latscope_testkit::switched_off("LATSCOPE_MCU_TESTS=0 (CI's mcu stage runs these)");
    }
    off
}

fn have_tools() -> Result<(), String> {
    if which("qemu-system-arm").is_none() {
        return Err("qemu-system-arm is not installed".into());
    }
    let out = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output();
    match out {
        Ok(o) if String::from_utf8_lossy(&o.stdout).contains("thumbv7em-none-eabihf") => Ok(()),
        _ => Err("the rustup target thumbv7em-none-eabihf is not installed".into()),
    }
}

/// The firmware's settings of these tests, plus `extra`.
fn config(extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = [
        ("LATSCOPE_MCU_INTERVAL_US", INTERVAL_US.to_string()),
        ("LATSCOPE_MCU_DURATION_MS", DURATION_MS.to_string()),
        ("LATSCOPE_MCU_DISTURB_US", D_US.to_string()),
        ("LATSCOPE_MCU_OFFSET_US", OFFSET_US.to_string()),
        ("LATSCOPE_MCU_DISTURB_EVERY", EVERY.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    v.extend(extra.iter().map(|(k, x)| (k.to_string(), x.to_string())));
    v
}

/// `scripts/mcu-run REC` with `extra` settings: its output and the frames
/// recorded.
fn mcu_run(scratch: &Scratch, extra: &[(&str, &str)]) -> (PathBuf, String, Vec<Frame>, u64) {
    let rec = scratch.join("mcu.lsr");
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let out = Command::new(workspace_root().join("scripts/mcu-run"))
        .arg(&rec)
        .envs(config(extra))
        .env("LATSCOPE_HOST_BIN", bins().host)
        .output()
        .expect("run scripts/mcu-run");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "scripts/mcu-run {}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = fs::read(&rec).expect("the recording");
    let (frames, stats) = decode_frames(&bytes);
    (rec, stdout, frames, stats.crc_errors)
}

/// The control line: (wrapper entries, the disturbance's own runs).
fn control(frames: &[Frame]) -> (u64, u64) {
    let line = frames
        .iter()
        .find_map(|f| match &f.body {
            Body::Log(l) if l.text.starts_with("irq 9 TIMER1: ") => Some(l.text.to_string()),
            _ => None,
        })
        .expect("the firmware's control line");
    let num_before = |word: &str| -> u64 {
        let at = line
            .find(word)
            .unwrap_or_else(|| panic!("{word:?} in {line:?}"));
        line[..at]
            .split_whitespace()
            .last()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("a number before {word:?} in {line:?}"))
    };
    (num_before(" entries"), num_before(" times"))
}

fn bye(frames: &[Frame]) -> Option<latscope_core::wire::Bye> {
    frames.iter().find_map(|f| match &f.body {
        Body::Bye(b) => Some(*b),
        _ => None,
    })
}

fn last_stats(frames: &[Frame]) -> latscope_core::wire::ThreadStats {
    frames
        .iter()
        .rev()
        .find_map(|f| match &f.body {
            Body::Stats(s) => Some(*s),
            _ => None,
        })
        .expect("statistics")
}

#[test]
fn a_plain_run_counts_every_period_and_ends_with_its_bye() {
    if switched_off() {
        return;
    }
    require!(have_tools().is_ok(), have_tools().unwrap_err());
    let scratch = Scratch::new("mcu-plain");
    let (_, report, frames, crc) = mcu_run(&scratch, &[("LATSCOPE_MCU_DISTURB", "off")]);
    assert_eq!(crc, 0, "CRC errors on the emulated UART");
    let bye = bye(&frames).expect("the bye arrived");
    let s = last_stats(&frames);
    assert!(s.last_report, "the final report came before the bye");
    let due = DURATION_MS * 1000 / INTERVAL_US;
    let counted = s.cycles + s.missed;
    assert!(
        counted.abs_diff(due) <= 1,
        "cycles {} + missed {} = {counted}, not {due} ± 1",
        s.cycles,
        s.missed
    );
    assert_eq!(bye.cycles, s.cycles);
    assert_eq!(control(&frames), (0, 0), "no disturbance was configured");
    assert!(
        !frames.iter().any(|f| matches!(f.body, Body::Explain(_))),
        "a plain run has no spike"
    );
    assert!(report.contains("exact at the end (bye intact)"), "{report}");
    // The report's header: the board and its clock, and no line of the
    // facts only Linux has.
    let lines: Vec<&str> = report
        .lines()
        .skip_while(|l| !l.starts_with("== "))
        .collect();
    assert!(
        lines
            .first()
            .is_some_and(|l| l.contains(" on mps2-an386 (thumbv7em, bare metal), 1 CPUs, run ")),
        "{report}"
    );
    assert_eq!(
        lines.get(1..3),
        Some(
            &[
                "model:    mps2-an386 (Cortex-M4F, bare metal), clock 25 MHz (40 ns)",
                "config:   interval 1000.0 µs, duration 2 s, report every 1.0 s",
            ][..]
        ),
        "{report}"
    );
    let header: Vec<&str> = lines
        .iter()
        .take_while(|l| !l.is_empty())
        .copied()
        .collect();
    for word in ["kernel", "PREEMPT", "cmdline", "system:", "clocksource"] {
        assert!(
            !header.iter().any(|l| l.contains(word)),
            "{word:?} in the header of a bare-metal run:\n{report}"
        );
    }
    // What the hello says: a bare-metal board and its clock, no kernel.
    let hello = frames
        .iter()
        .find_map(|f| match &f.body {
            Body::Hello(h) => Some(h.clone()),
            _ => None,
        })
        .expect("a hello");
    let t = &hello.target;
    assert_eq!(t.platform, Platform::BareMetal);
    assert_eq!(t.model.as_str(), "mps2-an386 (Cortex-M4F, bare metal)");
    assert_eq!((t.clock_hz, t.clock_resolution_ns), (25_000_000, 40));
    assert!(t.kernel.is_empty() && t.cmdline.is_empty() && !t.preempt_rt);
}

#[test]
fn the_disturbance_above_explains_every_spike_it_causes() {
    if switched_off() {
        return;
    }
    require!(have_tools().is_ok(), have_tools().unwrap_err());
    let scratch = Scratch::new("mcu-above");
    let (_, report, frames, crc) = mcu_run(&scratch, &[("LATSCOPE_MCU_DISTURB", "above")]);
    assert_eq!(crc, 0);
    assert!(bye(&frames).is_some(), "the bye arrived");
    // The positive control: it ran, once per EVERY periods, and the
    // wrapper saw each run.
    let runs = DURATION_MS * 1000 / INTERVAL_US / EVERY;
    let (entries, ran) = control(&frames);
    assert_eq!(entries, ran, "the wrapper's entries and the runs differ");
    assert!(
        ran.abs_diff(runs) <= 1,
        "the disturbance ran {ran} times, not {runs}"
    );
    let truth = (D_US - OFFSET_US) * 1000;
    let tolerance = (truth / 10).max(2000);
    let explained: Vec<_> = frames
        .iter()
        .filter_map(|f| match &f.body {
            Body::Explain(a) => Some(a.clone()),
            _ => None,
        })
        .collect();
    let spikes = frames
        .iter()
        .filter(|f| matches!(f.body, Body::Spike(_)))
        .count();
    assert_eq!(explained.len(), spikes, "every spike sent is explained");
    assert!(
        (explained.len() as u64).abs_diff(ran) <= 1,
        "{} spikes for {ran} disturbances",
        explained.len()
    );
    for a in &explained {
        let c = a
            .causes
            .iter()
            .find(|c| matches!(&c.culprit, Culprit::Irq { irq: 9, name, .. } if name == "TIMER1"))
            .unwrap_or_else(|| panic!("spike at cycle {} does not name irq 9: {a:?}", a.cycle));
        assert!(
            c.ns.abs_diff(truth) <= tolerance,
            "irq 9 took {} ns of the spike at cycle {}, the ground truth is {truth} ± {tolerance}",
            c.ns,
            a.cycle
        );
        assert_eq!(a.total_ns(), a.latency_ns, "the lines add up to the spike");
    }
    // ... and the host prints it as it prints a Linux spike.
    assert!(report.contains("irq 9 TIMER1"), "{report}");
}

#[test]
fn the_disturbance_below_runs_but_never_causes_a_spike() {
    if switched_off() {
        return;
    }
    require!(have_tools().is_ok(), have_tools().unwrap_err());
    let scratch = Scratch::new("mcu-below");
    let (_, _, frames, crc) = mcu_run(&scratch, &[("LATSCOPE_MCU_DISTURB", "below")]);
    assert_eq!(crc, 0);
    assert!(bye(&frames).is_some(), "the bye arrived");
    let runs = DURATION_MS * 1000 / INTERVAL_US / EVERY;
    let (entries, ran) = control(&frames);
    assert_eq!(entries, ran);
    assert!(ran.abs_diff(runs) <= 1, "it ran {ran} times, not {runs}");
    for f in &frames {
        if let Body::Explain(a) = &f.body {
            assert!(
                !a.causes
                    .iter()
                    .any(|c| matches!(c.culprit, Culprit::Irq { irq: 9, .. })),
                "the disturbance below was named as a cause: {a:?}"
            );
        }
    }
    // It ran while the measuring interrupt went on: the measuring
    // interrupt preempted it instead of waiting D.
    assert!(
        last_stats(&frames).max < D_US * 1000 / 2,
        "a latency of {} ns: the disturbance below delayed it",
        last_stats(&frames).max
    );
}

#[test]
fn a_masked_critical_section_is_measured_as_masked_time() {
    if switched_off() {
        return;
    }
    require!(have_tools().is_ok(), have_tools().unwrap_err());
    let scratch = Scratch::new("mcu-masked");
    let (_, report, frames, crc) = mcu_run(&scratch, &[("LATSCOPE_MCU_DISTURB", "masked")]);
    assert_eq!(crc, 0);
    assert!(bye(&frames).is_some(), "the bye arrived");
    let runs = DURATION_MS * 1000 / INTERVAL_US / EVERY;
    let (entries, ran) = control(&frames);
    assert_eq!(entries, ran);
    assert!(ran.abs_diff(runs) <= 1, "it ran {ran} times, not {runs}");
    let truth = (D_US - OFFSET_US) * 1000;
    let tolerance = (truth / 10).max(2000);
    let mut explained = 0u64;
    for f in &frames {
        if let Body::Explain(a) = &f.body {
            explained += 1;
            let m = a
                .causes
                .iter()
                .find(|c| c.culprit == Culprit::Masked)
                .unwrap_or_else(|| panic!("no masked time in {a:?}"));
            assert!(
                m.ns.abs_diff(truth) <= tolerance,
                "masked {} ns, the ground truth is {truth} ± {tolerance}",
                m.ns
            );
            // the handler that masked ranks below: it is not the cause
            assert!(!a
                .causes
                .iter()
                .any(|c| matches!(c.culprit, Culprit::Irq { irq: 9, .. })));
        }
    }
    assert!(
        explained.abs_diff(ran) <= 1,
        "{explained} spikes for {ran} masked sections"
    );
    assert!(report.contains("interrupts masked"), "{report}");
}

#[test]
fn compare_prints_an_mcu_run_beside_a_linux_run() {
    if switched_off() {
        return;
    }
    require!(have_tools().is_ok(), have_tools().unwrap_err());
    let scratch = Scratch::new("mcu-compare");
    let (mcu, _, _, _) = mcu_run(&scratch, &[("LATSCOPE_MCU_DISTURB", "above")]);
    let linux = scratch.join("linux.lsr");
    let mut args = vec!["-q", "-i", "1000", "-D", "1s"];
    if !is_root() {
        args.push("--best-effort");
    }
    record_file(&args, &linux);
    let out = host(&[
        "compare",
        &mcu.display().to_string(),
        &linux.display().to_string(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "compare {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let a = text.lines().find(|l| l.starts_with("A: ")).unwrap_or("");
    let b = text.lines().find(|l| l.starts_with("B: ")).unwrap_or("");
    assert!(a.contains("mps2-an386"), "A is the MCU run:\n{text}");
    assert!(
        !b.contains("mps2-an386") && b.contains("linux.lsr"),
        "B is the Linux run:\n{text}"
    );
    // The MCU's 20 µs spikes are its maximum.
    let max = text
        .lines()
        .find(|l| l.starts_with("max "))
        .unwrap_or_else(|| panic!("a max row:\n{text}"));
    assert!(max.split_whitespace().nth(1) == Some("20.2"), "{max}");
}

/// The sizes of an ELF32's sections by name.
fn sections(elf: &[u8]) -> Vec<(String, u32)> {
    let u16_at = |o: usize| u16::from_le_bytes([elf[o], elf[o + 1]]) as usize;
    let u32_at = |o: usize| u32::from_le_bytes([elf[o], elf[o + 1], elf[o + 2], elf[o + 3]]);
    assert_eq!(&elf[..5], b"\x7fELF\x01", "an ELF32");
    let (shoff, shentsize, shnum, shstrndx) = (
        u32_at(0x20) as usize,
        u16_at(0x2E),
        u16_at(0x30),
        u16_at(0x32),
    );
    let sh = |i: usize| shoff + i * shentsize;
    let strtab = u32_at(sh(shstrndx) + 0x10) as usize;
    (0..shnum)
        .map(|i| {
            let name_at = strtab + u32_at(sh(i)) as usize;
            let end = elf[name_at..].iter().position(|&b| b == 0).unwrap_or(0);
            let name = String::from_utf8_lossy(&elf[name_at..name_at + end]).into_owned();
            (name, u32_at(sh(i) + 0x14))
        })
        .collect()
}

fn size_of(secs: &[(String, u32)], names: &[&str]) -> u32 {
    secs.iter()
        .filter(|(n, _)| names.contains(&n.as_str()))
        .map(|(_, s)| s)
        .sum()
}

/// The stack's length in memory.x (`STACK : ORIGIN = ..., LENGTH = NK`).
fn stack_bytes(memory_x: &str) -> u32 {
    let line = memory_x
        .lines()
        .find(|l| l.trim_start().starts_with("STACK"))
        .expect("a STACK region in memory.x");
    let k = line
        .split("LENGTH =")
        .nth(1)
        .and_then(|s| s.trim().strip_suffix('K'))
        .and_then(|s| s.parse::<u32>().ok())
        .expect("LENGTH = NK");
    k * 1024
}

#[test]
fn the_default_firmware_fits_64_kib_of_flash_and_of_ram() {
    if switched_off() {
        return;
    }
    require!(have_tools().is_ok(), have_tools().unwrap_err());
    let dir = workspace_root().join("shim-cortex-m");
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.args(["build", "--release", "--quiet"])
        .current_dir(&dir);
    for (k, _) in config(&[]) {
        cmd.env_remove(k);
    }
    let st = cmd
        .env_remove("LATSCOPE_MCU_DISTURB")
        .status()
        .expect("cargo build");
    assert!(st.success(), "the firmware's build failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.join("target"));
    let elf =
        fs::read(target.join("thumbv7em-none-eabihf/release/latscope-cortex-m")).expect("the ELF");
    let secs = sections(&elf);
    let flash = size_of(&secs, &[".vector_table", ".text", ".rodata", ".data"]);
    let statics = size_of(&secs, &[".data", ".bss", ".uninit"]);
    let stack =
        stack_bytes(&fs::read_to_string(Path::new(&dir).join("memory.x")).expect("memory.x"));
    let ram = statics + stack;
    eprintln!("flash {flash} B, RAM {ram} B ({statics} B statics + {stack} B stack)");
    assert!(flash > 8 * 1024 && flash <= 64 * 1024, "flash {flash} B");
    assert!(statics > 8 * 1024 && ram <= 64 * 1024, "RAM {ram} B");
}
