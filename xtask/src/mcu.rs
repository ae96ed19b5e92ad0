//! mcu's result: the Cortex-M firmware's footprint and latency on qemu's
//! mps2-an386. Every figure from the raw outputs the launcher
//! (`bench/mcu`) keeps:
//!
//! - `sizes.txt`: `llvm-size -A` of the release ELF;
//! - `symbols.txt`: `llvm-nm --size-sort -S -C` of it;
//! - `memory.x`: the linker script (the stack's `LENGTH`);
//! - `default.json`: `latscope-host report -f json` of the default run
//!   (its `stack:` log line: the painted high-water mark);
//! - `shiftN.json`: the same of the runs under `-icount shift=N`;
//! - `above.txt`: the host's text of the run with a disturbance above;
//! - `meta`: `DATE`, `RUSTC`, `QEMU`, `SHIFTS`, the load averages and the
//!   commit.

use std::fs;
use std::path::{Path, PathBuf};

use clap::Args as ClapArgs;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::machine::Machine;
use crate::meta::MetaFile;
use crate::results::{self, Report};
use crate::Error;

/// The symbols of latscope-core and the crates it encodes with.
const CORE_CRATES: [&str; 6] = [
    "latscope_core",
    "postcard",
    "heapless",
    "serde",
    "crc",
    "cobs",
];

/// The firmware's statics of core types, by the end of their names.
const CORE_STATICS: [&str; 9] = [
    "RECORD_COUNTERS",
    "::PREV",
    "::HIST",
    "::SNAP",
    "::REPORTER",
    "::HELLO",
    "::START",
    "::STATE",
    "::REC",
];

/// `cargo xtask mcu-table`.
#[derive(ClapArgs)]
pub struct Args {
    /// The raw outputs of the run.
    #[arg(long)]
    pub raw: PathBuf,
    /// Where mcu.json and mcu.md are written.
    #[arg(long)]
    pub out: PathBuf,
}

/// Writes the result of `args.raw`; the markdown's path on standard
/// output.
///
/// # Errors
///
/// [`Error::Io`], [`Error::Json`] or [`Error::Parse`] for raw outputs that
/// cannot be read; [`Error::Io`] for results that cannot be written.
pub fn run(args: &Args) -> Result<(), Error> {
    let r = Mcu::from_raw(&args.raw)?;
    let md = results::write(&args.out, &r)?;
    println!("{}", md.display());
    Ok(())
}

/// The ELF's sections, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sections {
    /// `.vector_table`.
    pub vector_table: u64,
    /// `.text`.
    pub text: u64,
    /// `.rodata`.
    pub rodata: u64,
    /// `.data`.
    pub data: u64,
    /// `.bss`.
    pub bss: u64,
    /// `.uninit`, if the ELF has one.
    pub uninit: u64,
}

impl Sections {
    /// Flash: the vector table, code, read-only data and the initial
    /// values of `.data`.
    pub fn flash(&self) -> u64 {
        self.vector_table + self.text + self.rodata + self.data
    }

    /// RAM of the statics.
    pub fn statics(&self) -> u64 {
        self.data + self.bss + self.uninit
    }
}

/// Bytes of core's symbols against all symbols of some kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Share {
    /// Core's symbols.
    pub core: u64,
    /// Every symbol.
    pub all: u64,
}

impl Share {
    /// Core's share, %.
    pub fn percent(&self) -> f64 {
        100.0 * self.core as f64 / self.all.max(1) as f64
    }
}

/// One run under `-icount shift=N`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Latency {
    /// N.
    pub shift: u32,
    /// The minimum, ns.
    pub min_ns: u64,
    /// The mean, ns.
    pub avg_ns: f64,
    /// The maximum, ns.
    pub max_ns: u64,
    /// Periods measured.
    pub cycles: u64,
}

/// The result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mcu {
    /// The machine and the commit measured.
    pub machine: Machine,
    /// The day it ran (UTC).
    pub date: String,
    /// `rustc --version`'s first two words.
    pub rustc: String,
    /// `qemu-system-arm --version`'s first four words.
    pub qemu: String,
    /// The ELF's sections.
    pub sections: Sections,
    /// The stack's size in memory.x, bytes.
    pub stack: u64,
    /// Its high-water mark as the firmware painted and reported it, bytes.
    pub stack_used: Option<u64>,
    /// Code and read-only data (`nm` types t and r).
    pub code: Share,
    /// RAM statics (`nm` types d and b).
    pub ram: Share,
    /// The runs under `-icount shift=N`.
    pub latency: Vec<Latency>,
    /// The host's lines of one explained spike of the disturbance above.
    pub spike: String,
    /// The host's causes over all spikes of that run.
    pub totals: String,
}

fn parse_err(path: &Path, why: impl Into<String>) -> Error {
    Error::Parse {
        what: path.display().to_string(),
        why: why.into(),
    }
}

fn read(path: &Path) -> Result<String, Error> {
    fs::read_to_string(path).map_err(Error::io(path))
}

fn json(path: &Path) -> Result<Value, Error> {
    serde_json::from_str(&read(path)?).map_err(|source| Error::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// A section's size in `llvm-size -A`'s table; 0 without the section.
fn section(sizes: &str, name: &str) -> u64 {
    sizes
        .lines()
        .find_map(|l| {
            let mut f = l.split_whitespace();
            (f.next() == Some(name)).then(|| f.next()?.parse().ok())?
        })
        .unwrap_or(0)
}

/// The stack's `LENGTH = NK` in memory.x, bytes.
fn stack_length(memory_x: &str) -> Option<u64> {
    let line = memory_x.lines().find(|l| l.contains("STACK"))?;
    let after = line.split("LENGTH").nth(1)?;
    let v = after.trim_start().trim_start_matches('=').trim();
    let v = v.split(|c: char| c == ',' || c.is_whitespace()).next()?;
    match v.strip_suffix('K') {
        Some(k) => k.parse::<u64>().ok().map(|k| k * 1024),
        None => v.parse().ok(),
    }
}

/// Whether symbol `name` is core's: one of its crates, or (for RAM) one
/// of the firmware's statics of core types.
fn is_core(name: &str, statics: bool) -> bool {
    if CORE_CRATES.iter().any(|c| name.contains(c)) {
        return true;
    }
    statics
        && CORE_STATICS.iter().any(|s| {
            name.match_indices(s).any(|(at, _)| {
                // `::REC` is a whole name, not `::RECORD...`
                *s != "::REC"
                    || !name[at + s.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
        })
}

/// An `nm -S` line's address, size, type and name (the rest of the line,
/// spaces and all); `None` for a line with fewer fields (an undefined
/// symbol has no address or size).
fn fields(line: &str) -> Option<[&str; 4]> {
    let mut out = [""; 4];
    let mut rest = line.trim_start();
    for f in out.iter_mut().take(3) {
        let (a, b) = rest.split_once(char::is_whitespace)?;
        *f = a;
        rest = b.trim_start();
    }
    if rest.is_empty() {
        return None;
    }
    out[3] = rest;
    Some(out)
}

/// The share of `llvm-nm --size-sort -S -C`'s symbols of `types`.
fn share(symbols: &str, types: &str, statics: bool) -> Share {
    let mut s = Share { core: 0, all: 0 };
    for line in symbols.lines() {
        let Some([_, size, kind, name]) = fields(line) else {
            continue;
        };
        if kind.len() != 1 || !types.contains(&kind.to_lowercase()) {
            continue;
        }
        let Ok(size) = u64::from_str_radix(size, 16) else {
            continue;
        };
        s.all += size;
        if is_core(name, statics) {
            s.core += size;
        }
    }
    s
}

/// The lines of `text` from the first starting with `from`, `n` of them.
fn lines_from(text: &str, from: &str, n: usize) -> String {
    text.lines()
        .skip_while(|l| !l.starts_with(from))
        .take(n)
        .collect::<Vec<_>>()
        .join("\n")
}

impl Mcu {
    /// The result of the raw outputs in `raw`.
    ///
    /// # Errors
    ///
    /// [`Error::Io`], [`Error::Json`] or [`Error::Parse`] for a file that
    /// is missing or not what the launcher writes.
    pub fn from_raw(raw: &Path) -> Result<Mcu, Error> {
        let meta = MetaFile::read(raw)?;
        let sizes = read(&raw.join("sizes.txt"))?;
        let sections = Sections {
            vector_table: section(&sizes, ".vector_table"),
            text: section(&sizes, ".text"),
            rodata: section(&sizes, ".rodata"),
            data: section(&sizes, ".data"),
            bss: section(&sizes, ".bss"),
            uninit: section(&sizes, ".uninit"),
        };
        let memory_x = raw.join("memory.x");
        let stack = stack_length(&read(&memory_x)?)
            .ok_or_else(|| parse_err(&memory_x, "no STACK region with a LENGTH"))?;
        let default = json(&raw.join("default.json"))?;
        let stack_used = default["runs"][0]["logs"].as_array().and_then(|logs| {
            logs.iter().find_map(|l| {
                let t = l["text"].as_str()?.strip_prefix("stack:")?;
                t.split_whitespace().next()?.parse().ok()
            })
        });
        let symbols = read(&raw.join("symbols.txt"))?;
        let mut latency = vec![];
        for n in meta.need("SHIFTS")?.split_whitespace() {
            let path = raw.join(format!("shift{n}.json"));
            let v = json(&path)?;
            let t = &v["runs"][0]["threads"][0];
            let field = |k: &str| {
                t[k].as_u64()
                    .ok_or_else(|| parse_err(&path, format!("no {k}")))
            };
            latency.push(Latency {
                shift: n
                    .parse()
                    .map_err(|_| parse_err(&raw.join("meta"), format!("shift {n:?}")))?,
                min_ns: field("min_ns")?,
                avg_ns: t["avg_ns"]
                    .as_f64()
                    .ok_or_else(|| parse_err(&path, "no avg_ns"))?,
                max_ns: field("max_ns")?,
                cycles: field("cycles")?,
            });
        }
        let above = read(&raw.join("above.txt"))?;
        Ok(Mcu {
            machine: meta.machine()?,
            date: meta.need("DATE")?,
            rustc: meta.need("RUSTC")?,
            qemu: meta.need("QEMU")?,
            sections,
            stack,
            stack_used,
            code: share(&symbols, "tr", false),
            ram: share(&symbols, "db", true),
            latency,
            spike: lines_from(&above, "explained spikes", 4),
            totals: lines_from(&above, "causes over all", 2),
        })
    }
}

fn kib(b: u64) -> String {
    format!("{:.1}", b as f64 / 1024.0)
}

impl Report for Mcu {
    const NAME: &'static str = "mcu";

    fn markdown(&self) -> String {
        let sec = &self.sections;
        let ram = sec.statics() + self.stack;
        let used = self
            .stack_used
            .map_or(("-".into(), "-".into()), |u| (u.to_string(), kib(u)));
        let mut s = format!(
            "# latscope on a Cortex-M4 (qemu mps2-an386): footprint and latency\n\n\
             Made by `bench/mcu` on {}, {}, {}.\n\
             Default configuration (1 ms interval, 3 s, spike threshold 2 µs, no\n\
             disturbance), release profile (opt-level s, fat LTO). Figures:\n\
             `cargo xtask mcu-table` (`mcu.json`).\n\n\
             ## Footprint\n\n\
             | | bytes | KiB | goal |\n\
             |---|---:|---:|---|\n\
             | flash (.vector_table + .text + .rodata + .data) | {} | {} | ≤ 64 KiB |\n\
             | RAM: statics (.data + .bss) | {} | {} | |\n\
             | RAM: stack (memory.x) | {} | {} | |\n\
             | RAM in all | {ram} | {} | ≤ 64 KiB |\n\
             | stack high-water mark (painted, reported by the firmware) | {} | {} | |\n\n\
             Sections: .vector_table {}, .text {}, .rodata {}, .data {}, .bss {}.\n\n",
            self.date,
            self.rustc,
            self.qemu,
            sec.flash(),
            kib(sec.flash()),
            sec.statics(),
            kib(sec.statics()),
            self.stack,
            kib(self.stack),
            kib(ram),
            used.0,
            used.1,
            sec.vector_table,
            sec.text,
            sec.rodata,
            sec.data,
            sec.bss,
        );
        s += &format!(
            "The core's share (symbols of latscope-core and the crates it encodes with:\n\
             postcard, heapless, serde, crc, cobs; the firmware's statics of core types:\n\
             the record, its log, the snapshot, the reporter, the hello, the cycle):\n\n\
             | | core | all symbols | share |\n\
             |---|---:|---:|---:|\n\
             | code and read-only data | {} | {} | {:.0} % |\n\
             | RAM (statics) | {} | {} | {:.0} % |\n\n",
            self.code.core,
            self.code.all,
            self.code.percent(),
            self.ram.core,
            self.ram.all,
            self.ram.percent()
        );
        s += "## Latency under `-icount shift=N` (plain runs, 3000 periods each)\n\n\
              Under `-icount shift=N,align=off,sleep=off` every instruction takes 2^N ns\n\
              of virtual time and taking an exception takes none, so the latency is the\n\
              instructions from the vector to the handler's read of the timer's count\n\
              (the prologue), times 2^N, in whole 40 ns ticks. Not the silicon's 12-cycle\n\
              entry: it scales with N, as an instruction count does.\n\n\
              | N | ns per instruction | min ns | avg ns | max ns | cycles |\n\
              |---:|---:|---:|---:|---:|---:|\n";
        for l in &self.latency {
            s += &format!(
                "| {} | {} | {} | {:.0} | {} | {} |\n",
                l.shift,
                1u64 << l.shift.min(63),
                l.min_ns,
                l.avg_ns,
                l.max_ns,
                l.cycles
            );
        }
        s += &format!(
            "\n## One explained spike (disturbance above, D 30 µs, offset 10 µs)\n\n\
             The ground truth is D minus the offset, 20 µs; the host prints:\n\n\
             ```\n{}\n```\n\n```\n{}\n```\n",
            self.spike, self.totals
        );
        s += "\n## Machine\n\n";
        s += &self.machine.markdown();
        s += "\n";
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_stack_and_shares() {
        let sizes = "latscope-cortex-m  :\nsection               size        addr\n\
                     .vector_table          128         0\n.text                33776       128\n\
                     .rodata               1600     33904\n.data                 5928 536870912\n\
                     .bss                 36556 536876840\nTotal                78000\n";
        assert_eq!(section(sizes, ".text"), 33776);
        assert_eq!(section(sizes, ".uninit"), 0);
        let x = "MEMORY\n{\n  FLASH : ORIGIN = 0x00000000, LENGTH = 4096K\n  STACK : ORIGIN = 0x20000000, LENGTH = 16K\n}\n";
        assert_eq!(stack_length(x), Some(16384));
        let nm = "00000010 00000100 T latscope_core::wire::encode\n\
                  00000020 00000050 t main\n\
                  00000030 00000008 r postcard::ser::X\n\
                  00000040 00000200 B latscope_cortex_m::REC\n\
                  00000050 00000010 B latscope_cortex_m::RECORDS_SEEN\n\
                  00000060 00000004 d latscope_cortex_m::STATE\n\
                           U undefined_thing\n\
                  00000080 00000002 t <impl heapless::Vec<u8> as core::fmt::Debug>::fmt\n";
        assert_eq!(
            share(nm, "tr", false),
            Share {
                core: 0x10a,
                all: 0x15a
            }
        );
        // ::REC counts, ::RECORDS_SEEN does not
        assert_eq!(
            share(nm, "db", true),
            Share {
                core: 0x204,
                all: 0x214
            }
        );
        assert_eq!(format!("{:.0}", share(nm, "tr", false).percent()), "77");
    }

    #[test]
    fn the_spike_lines_of_the_hosts_text() {
        let text = "run x\nexplained spikes (1):\n  a\n  b\n  c\n  d\ncauses over all spikes:\n  irq 5\n  more\n";
        assert_eq!(
            lines_from(text, "explained spikes", 4),
            "explained spikes (1):\n  a\n  b\n  c"
        );
        assert_eq!(
            lines_from(text, "causes over all", 2),
            "causes over all spikes:\n  irq 5"
        );
        assert_eq!(lines_from(text, "nothing", 2), "");
    }
}
