//! `cargo xtask bench footprint`: where the bytes of the target binary
//! go.
//!
//! The static aarch64-musl build (as on the board) and the static
//! armv7-gnueabihf build, stripped, with a `cargo bloat` breakdown by
//! crate and by function of the aarch64 build; the x86_64 glibc build
//! (what `cargo install` gives, and whose text the locked memory
//! includes); and the std floor: the stripped size of a std program built
//! the same way (`shim-linux/examples/std_floor.rs`, as `bench/std-floor`
//! builds it).
//!
//! cargo bloat needs symbols, so it analyses the same builds with
//! `CARGO_PROFILE_RELEASE_STRIP=false` in its own target directory
//! (`target/bloat`); the sizes quoted as "stripped" are those of the
//! ordinary release builds. It is installed with `cargo install
//! cargo-bloat` when missing. The armv7 build's C share (static glibc,
//! libgcc) is cargo bloat's "[Unknown]" crate of that build: code without
//! Rust symbols. Needs the cross toolchains of `.ci/run setup`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::machine::Machine;
use crate::process::{cargo, log, status, stdout};
use crate::results::{self, Report};
use crate::{root, target_dir, Error};

/// The board's target: static, with musl.
pub const AARCH64: &str = "aarch64-unknown-linux-musl";
/// The 32-bit ARM target, static glibc (`+crt-static`).
pub const ARMV7: &str = "armv7-unknown-linux-gnueabihf";
/// The size goal of the static aarch64 binary, bytes.
pub const GOAL_BYTES: u64 = 524_288;
/// The crates and symbols of std's backtrace printer, as they appear in
/// cargo bloat's crate and name columns.
const BACKTRACE: [&str; 7] = [
    "gimli",
    "addr2line",
    "backtrace",
    "miniz",
    "rustc_demangle",
    "libunwind",
    "_Unwind",
];
/// The width the list of functions is cut to in the markdown.
const LINE_WIDTH: usize = 160;

/// `cargo xtask bench footprint`.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct Args {
    /// Where to write footprint.json and footprint.md [default: bench/results].
    #[arg(long, value_name = "DIR", default_value_os_t = default_out(), hide_default_value = true)]
    pub out: PathBuf,
    /// How many of the aarch64 build's largest functions to list.
    #[arg(short = 'n', value_name = "FUNCTIONS", default_value_t = 40)]
    pub functions: usize,
}

impl Default for Args {
    /// The defaults of the command line.
    fn default() -> Args {
        Args {
            out: default_out(),
            functions: 40,
        }
    }
}

/// `bench/results` of the checkout.
fn default_out() -> PathBuf {
    root().join("bench/results")
}

/// One section of the stripped aarch64 file, as `size -A` gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    /// The section's name (`Total` for the line of the whole file).
    pub name: String,
    /// Its size, bytes.
    pub bytes: u64,
}

/// The footprint of the target binary: `footprint.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Footprint {
    /// Where and at which commit it was measured.
    pub machine: Machine,
    /// `rustc --version`.
    pub rustc: String,
    /// The stripped static aarch64-musl binary, bytes.
    pub aarch64_bytes: u64,
    /// The stripped static armv7-gnueabihf binary, bytes.
    pub armv7_bytes: u64,
    /// The stripped x86_64 glibc (dynamic) binary, bytes.
    pub x86_64_bytes: u64,
    /// The stripped std floor for aarch64-musl, bytes.
    pub std_floor_aarch64_bytes: u64,
    /// The aarch64 build's `.text` bytes of std's backtrace printer: the
    /// sum of cargo bloat's sizes of the symbols named after its crates.
    pub backtrace_text_bytes: u64,
    /// The sections of the stripped aarch64 file over 1000 B, and the
    /// `Total` line, in `size -A`'s order.
    pub sections: Vec<Section>,
    /// How many of the largest functions `bloat_functions_aarch64` lists.
    pub functions: usize,
    /// `cargo bloat --crates -n 30` of the aarch64 build.
    pub bloat_crates_aarch64: String,
    /// `cargo bloat -n FUNCTIONS` of the aarch64 build.
    pub bloat_functions_aarch64: String,
    /// `cargo bloat --crates -n 30` of the armv7 build.
    pub bloat_crates_armv7: String,
}

/// The three release builds of latscope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Build {
    Aarch64,
    Armv7,
    X86_64,
}

impl Build {
    const ALL: [Build; 3] = [Build::Aarch64, Build::Armv7, Build::X86_64];

    /// The `--target`, none for the native build.
    fn target(self) -> Option<&'static str> {
        match self {
            Build::Aarch64 => Some(AARCH64),
            Build::Armv7 => Some(ARMV7),
            Build::X86_64 => None,
        }
    }

    /// The stripped binary it makes.
    fn binary(self) -> PathBuf {
        let dir = target_dir();
        match self.target() {
            Some(t) => dir.join(t).join("release/latscope"),
            None => dir.join("release/latscope"),
        }
    }
}

/// Run the benchmark and write `footprint.json` and `footprint.md` into
/// `--out`; print the markdown.
///
/// # Errors
///
/// [`Error::Command`] when a build or a tool fails, [`Error::Parse`] when
/// a tool's output is not what it should be, [`Error::Io`] when a file
/// cannot be read or written.
pub fn run(args: &Args) -> Result<(), Error> {
    let footprint = measure(args.functions)?;
    results::write(&args.out, &footprint)?;
    print!("{}", footprint.markdown());
    Ok(())
}

/// Build everything and measure it, listing the `functions` largest
/// functions of the aarch64 build.
///
/// # Errors
///
/// As [`run`].
pub fn measure(functions: usize) -> Result<Footprint, Error> {
    let machine = Machine::now();
    ensure_cargo_bloat()?;
    log(&format!("release builds: {AARCH64}, {ARMV7}"));
    let mut sizes = [0; 3];
    for (size, build) in sizes.iter_mut().zip(Build::ALL) {
        let mut cmd = cargo(&["build", "-q", "--release", "-p", "latscope"]);
        if let Some(t) = build.target() {
            cmd.args(["--target", t]);
        }
        status(&mut cmd)?;
        *size = file_size(&build.binary())?;
    }
    log(&format!("std floor: a minimal std program for {AARCH64}"));
    let std_floor = std_floor(AARCH64)?;
    log("cargo bloat (unstripped copies)");
    let bloat_crates_aarch64 = bloat(AARCH64, &["--crates", "-n", "30"])?;
    let bloat_functions_aarch64 = bloat(AARCH64, &["-n", &functions.to_string()])?;
    let bloat_crates_armv7 = bloat(ARMV7, &["--crates", "-n", "30"])?;
    let backtrace_text_bytes = backtrace_bytes(&bloat(AARCH64, &["-n", "100000"])?)?;
    let binary = Build::Aarch64.binary();
    let size_a = stdout(
        Command::new("aarch64-linux-gnu-size")
            .arg("-A")
            .arg(&binary),
    )?;
    let sections = parse_sections(&size_a, 1000).map_err(|why| Error::Parse {
        what: format!("aarch64-linux-gnu-size -A {}", binary.display()),
        why,
    })?;
    let rustc = stdout(Command::new("rustc").arg("--version").current_dir(root()))?;
    Ok(Footprint {
        machine: machine.ended(),
        rustc: rustc.trim().to_string(),
        aarch64_bytes: sizes[0],
        armv7_bytes: sizes[1],
        x86_64_bytes: sizes[2],
        std_floor_aarch64_bytes: std_floor,
        backtrace_text_bytes,
        sections,
        functions,
        bloat_crates_aarch64,
        bloat_functions_aarch64,
        bloat_crates_armv7,
    })
}

/// Build the std floor (`shim-linux/examples/std_floor.rs`) for `target`
/// with the workspace's release profile and cargo config, and give its
/// stripped size in bytes: what `bench/std-floor` prints.
///
/// # Errors
///
/// [`Error::Command`] when the build fails, [`Error::Io`] when the
/// binary is not there.
pub fn std_floor(target: &str) -> Result<u64, Error> {
    status(&mut cargo(&[
        "build",
        "-q",
        "--release",
        "-p",
        "latscope",
        "--example",
        "std_floor",
        "--target",
        target,
    ]))?;
    file_size(&target_dir().join(target).join("release/examples/std_floor"))
}

/// The sum of the sizes of cargo bloat's lines whose crate or symbol name
/// is one of std's backtrace printer (gimli, addr2line, miniz_oxide,
/// rustc_demangle, libunwind), rounded to a byte.
fn backtrace_bytes(bloat: &str) -> Result<u64, Error> {
    let mut sum = 0.0;
    for line in bloat.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let named = fields
            .iter()
            .skip(3)
            .any(|f| BACKTRACE.iter().any(|p| f.contains(p)));
        if !named {
            continue;
        }
        sum += fields
            .get(2)
            .and_then(|s| parse_bloat_size(s))
            .ok_or_else(|| Error::Parse {
                what: "cargo bloat -n 100000".into(),
                why: format!("no size in the third column of {line:?}"),
            })?;
    }
    Ok(sum.round() as u64)
}

/// A size of cargo bloat's Size column in bytes: `13.7KiB`, `376B`,
/// `1.2MiB`.
fn parse_bloat_size(s: &str) -> Option<f64> {
    let (number, unit) = if let Some(n) = s.strip_suffix("MiB") {
        (n, 1_048_576.0)
    } else if let Some(n) = s.strip_suffix("KiB") {
        (n, 1024.0)
    } else {
        (s.strip_suffix('B')?, 1.0)
    };
    let v: f64 = number.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v * unit)
}

/// The sections of `size -A`'s output over `min` bytes (and its `Total`
/// line); an error when there is no `Total` line.
fn parse_sections(text: &str, min: u64) -> Result<Vec<Section>, String> {
    let mut sections = Vec::new();
    let mut total = false;
    // the first two lines: the file's name, then the column titles
    for line in text.lines().skip(2) {
        let mut fields = line.split_whitespace();
        let (Some(name), Some(size)) = (fields.next(), fields.next()) else {
            continue;
        };
        let Ok(bytes) = size.parse::<u64>() else {
            continue;
        };
        total |= name == "Total";
        if bytes > min {
            sections.push(Section {
                name: name.to_string(),
                bytes,
            });
        }
    }
    if total {
        Ok(sections)
    } else {
        Err(format!("no Total line in {text:?}"))
    }
}

/// `cargo bloat -q --release -p latscope --bin latscope --target TARGET
/// ARGS` on an unstripped copy in `target/bloat`, its output without the
/// machine's paths.
fn bloat(target: &str, args: &[&str]) -> Result<String, Error> {
    let mut cmd = cargo(&[
        "bloat",
        "-q",
        "--release",
        "-p",
        "latscope",
        "--bin",
        "latscope",
        "--target",
        target,
    ]);
    cmd.args(args)
        .env("CARGO_TARGET_DIR", target_dir().join("bloat"))
        .env("CARGO_PROFILE_RELEASE_STRIP", "false");
    let text = stdout(&mut cmd)?;
    let text = scrub(&text, &root(), &target_dir());
    Ok(text.trim_end_matches('\n').to_string())
}

/// Install cargo-bloat with `cargo install -q cargo-bloat` unless it is
/// on the `PATH`.
fn ensure_cargo_bloat() -> Result<(), Error> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    if std::env::split_paths(&path).any(|d| d.join("cargo-bloat").is_file()) {
        return Ok(());
    }
    log("installing cargo-bloat");
    status(Command::new("cargo").args(["install", "-q", "cargo-bloat"]))
}

/// `text` without this machine's paths: the target directory becomes
/// `target`, the checkout `.` (paths in it relative to the checkout).
fn scrub(text: &str, root: &Path, target: &Path) -> String {
    let (root, target) = (root.display().to_string(), target.display().to_string());
    text.replace(&format!("{target}/"), "target/")
        .replace(&target, "target")
        .replace(&format!("{root}/"), "")
        .replace(&root, ".")
}

fn file_size(path: &Path) -> Result<u64, Error> {
    Ok(fs::metadata(path).map_err(Error::io(path))?.len())
}

impl Report for Footprint {
    const NAME: &'static str = "footprint";

    fn markdown(&self) -> String {
        [
            self.md_sizes(),
            self.md_std_floor(),
            self.md_crates(),
            self.md_functions(),
            self.md_armv7(),
            format!("## Machine\n\n{}", self.machine.markdown()),
        ]
        .join("\n")
    }
}

impl Footprint {
    fn md_sizes(&self) -> String {
        format!(
            "# Footprint of the target binary\n\
             \n\
             Produced by `cargo xtask bench footprint` at commit {commit} with {rustc}.\n\
             \n\
             | build | stripped size (B) | command |\n\
             |---|---|---|\n\
             | static {AARCH64} | {a64} | `cargo build --release -p latscope --target {AARCH64}` |\n\
             | static {ARMV7} (+crt-static) | {arm} | `cargo build --release -p latscope --target {ARMV7}` |\n\
             | x86_64 glibc (dynamic) | {x86} | `cargo build --release -p latscope` |\n\
             | std floor, static {AARCH64} | {floor} | `bench/std-floor` |\n",
            commit = self.machine.commit,
            rustc = self.rustc,
            a64 = self.aarch64_bytes,
            arm = self.armv7_bytes,
            x86 = self.x86_64_bytes,
            floor = self.std_floor_aarch64_bytes,
        )
    }

    fn md_std_floor(&self) -> String {
        let floor = self.std_floor_aarch64_bytes;
        let left = i128::from(GOAL_BYTES) - i128::from(floor);
        let own = i128::from(self.aarch64_bytes) - i128::from(floor);
        format!(
            "## The std floor\n\
             \n\
             The std floor (shim-linux/examples/std_floor.rs: mlockall, two threads with a 64 KiB stack, one println), built\n\
             with the workspace's release profile and .cargo/config.toml for {AARCH64}, is {floor} B stripped (`bench/std-floor`).\n\
             That is what any program on stable std pays, latscope included; of the {GOAL_BYTES} B goal it leaves\n\
             {left} B for latscope's own code, which takes {own} B here. Most of the floor is the\n\
             panic hook's backtrace printer (below); only a std built with nightly's `-Z build-std` drops it.\n"
        )
    }

    fn md_crates(&self) -> String {
        let sections: String = self
            .sections
            .iter()
            .map(|s| format!("| {} | {} |\n", s.name, s.bytes))
            .collect();
        format!(
            "## {AARCH64} by crate\n\
             \n\
             `CARGO_PROFILE_RELEASE_STRIP=false cargo bloat --release -p latscope --bin latscope --target {AARCH64} --crates`\n\
             (percentages of the unstripped file, then of .text; \"[Unknown]\" is code without Rust symbols: musl, libunwind, compiler-rt):\n\
             \n\
             ```\n\
             {crates}\n\
             ```\n\
             \n\
             Of std's and [Unknown]'s share, {bt} B of .text are the backtrace printer of std's default panic hook\n\
             (gimli, addr2line, miniz_oxide, rustc_demangle, libunwind; symbols matching those names in `cargo bloat -n 100000`).\n\
             Every program on the prebuilt std links it, with panic = \"abort\" too: only a std built with\n\
             `panic_immediate_abort` (nightly `-Z build-std`) drops it.\n\
             \n\
             Sections of the stripped file over 1000 B (`aarch64-linux-gnu-size -A`):\n\
             \n\
             | section | bytes |\n\
             |---|---|\n\
             {sections}\
             \n\
             .eh_frame and .eh_frame_hdr also describe latscope's own functions, although .cargo/config.toml asks for\n\
             no unwind tables: fat LTO merges std's bitcode, which carries debug info, and LLVM then writes call-frame\n\
             information for every function of the module (stable rustc cannot drop std's debug info before LTO).\n",
            crates = self.bloat_crates_aarch64,
            bt = self.backtrace_text_bytes,
        )
    }

    fn md_functions(&self) -> String {
        let cut: Vec<String> = self
            .bloat_functions_aarch64
            .lines()
            .map(|l| l.chars().take(LINE_WIDTH).collect())
            .collect();
        format!(
            "## {AARCH64}, the {n} largest functions\n\
             \n\
             `CARGO_PROFILE_RELEASE_STRIP=false cargo bloat --release -p latscope --bin latscope --target {AARCH64} -n {n}`:\n\
             \n\
             ```\n\
             {fns}\n\
             ```\n",
            n = self.functions,
            fns = cut.join("\n"),
        )
    }

    fn md_armv7(&self) -> String {
        format!(
            "## {ARMV7} by crate (static glibc's share: [Unknown])\n\
             \n\
             `CARGO_PROFILE_RELEASE_STRIP=false cargo bloat --release -p latscope --bin latscope --target {ARMV7} --crates`:\n\
             \n\
             ```\n\
             {crates}\n\
             ```\n",
            crates = self.bloat_crates_armv7,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of a real `cargo bloat -n 40` of the aarch64 build (the
    /// second one whole, as cargo bloat prints it).
    const BLOAT: &str = " File  .text     Size         Crate Name
 0.5%   2.8%  13.7KiB      latscope latscope::config::parse::parse
 0.5%   2.7%  13.4KiB     [Unknown] _ZN9libunwind10CFI_ParserINS_17LocalAddressSpaceEE20parseFDEInstructionsINS_15Registers_arm64EEEbRS1_RKNS2_8FDE_InfoERKNS2_8CIE_InfoE
 0.5%   2.6%  12.9KiB           std <std::backtrace_rs::symbolize::gimli::Cache>::with_global::<std::backtrace_rs::symbolize::gimli::resolve::{closure#1}>
 0.2%   1.4%   7.0KiB latscope_core latscope_core::wire::encode::encode
 0.2%   1.4%   6.8KiB           std miniz_oxide::inflate::core::decompress
 0.1%   0.9%   4.3KiB     [Unknown] fmt_fp
 0.1%   0.6%   2.9KiB           std <&rustc_demangle::DemangleStyle as core::fmt::Display>::fmt
 0.0%   0.1%     376B           std addr2line::frame::Frame::new
10.4%  59.4% 291.4KiB               And 1081 smaller methods. Use -n N to show more.
17.5% 100.0% 490.3KiB               .text section size, the file size is 2.7MiB";

    /// A real `aarch64-linux-gnu-size -A` of the aarch64 build.
    const SIZE_A: &str = "target/aarch64-unknown-linux-musl/release/latscope  :
section               size      addr
.gcc_except_table     4852   2097720
.rodata              59234   2102576
.text               545080   2219680
.init                   16   2764760
.data.rel.ro         19536   2768952
.relro_padding         752   2788624
.bss                  6449   2795536
.comment               156         0
Total               692911


";

    #[test]
    fn bloat_sizes_are_bytes() {
        assert_eq!(parse_bloat_size("13.7KiB"), Some(13.7 * 1024.0));
        assert_eq!(parse_bloat_size("376B"), Some(376.0));
        assert_eq!(parse_bloat_size("2.7MiB"), Some(2.7 * 1_048_576.0));
        assert_eq!(parse_bloat_size("12.9"), None);
        assert_eq!(parse_bloat_size("KiB"), None);
        assert_eq!(parse_bloat_size("[Unknown]"), None);
    }

    #[test]
    fn the_backtrace_printer_is_the_sum_of_its_symbols() {
        // libunwind 13.4 KiB, gimli 12.9 KiB, miniz 6.8 KiB, rustc_demangle
        // 2.9 KiB and addr2line 376 B; not latscope's, fmt_fp, the totals
        let want = ((13.4 + 12.9 + 6.8 + 2.9) * 1024.0 + 376.0_f64).round() as u64;
        assert_eq!(backtrace_bytes(BLOAT).unwrap(), want);
        assert_eq!(want, 37_240);
    }

    #[test]
    fn a_backtrace_symbol_without_a_size_is_an_error() {
        let bad = " 0.5%   2.6%  lots std gimli::read::unit::parse";
        assert!(matches!(backtrace_bytes(bad), Err(Error::Parse { .. })));
    }

    #[test]
    fn the_sections_over_1000_bytes_and_the_total() {
        let got = parse_sections(SIZE_A, 1000).unwrap();
        let names: Vec<(&str, u64)> = got.iter().map(|s| (s.name.as_str(), s.bytes)).collect();
        assert_eq!(
            names,
            [
                (".gcc_except_table", 4852),
                (".rodata", 59234),
                (".text", 545_080),
                (".data.rel.ro", 19536),
                (".bss", 6449),
                ("Total", 692_911),
            ]
        );
    }

    #[test]
    fn size_output_without_a_total_is_an_error() {
        assert!(parse_sections("x  :\nsection size addr\n", 1000).is_err());
    }

    #[test]
    fn machine_paths_are_scrubbed() {
        let root = Path::new("/checkout");
        let target = Path::new("/checkout/target");
        let text = "/checkout/target/bloat/x in /checkout/src/a.rs and /checkout";
        assert_eq!(
            scrub(text, root, target),
            "target/bloat/x in src/a.rs and ."
        );
    }

    fn machine() -> Machine {
        Machine {
            kernel: "Linux 6.18.0 #1 SMP x86_64".into(),
            cpus: 2,
            cpu_model: "AMD EPYC".into(),
            memory_gib: 7.8,
            load_start: [0.5, 0.25, 0.125],
            load_end: Some([1.0, 0.5, 0.25]),
            commit: "e551611".into(),
        }
    }

    fn footprint() -> Footprint {
        Footprint {
            machine: machine(),
            rustc: "rustc 1.95.0 (59807616e 2026-04-14)".into(),
            aarch64_bytes: 627_408,
            armv7_bytes: 1_019_256,
            x86_64_bytes: 622_704,
            std_floor_aarch64_bytes: 363_208,
            backtrace_text_bytes: 193_831,
            sections: parse_sections(SIZE_A, 1000).unwrap(),
            functions: 40,
            bloat_crates_aarch64: " File  .text     Size Crate\n 7.9%  45.2% 221.6KiB std".into(),
            bloat_functions_aarch64: BLOAT.into(),
            bloat_crates_armv7: "10.5%  37.8% 310.0KiB [Unknown]".into(),
        }
    }

    #[test]
    fn the_markdown_has_the_scripts_tables_and_sentences() {
        let md = footprint().markdown();
        let lines: Vec<&str> = md.lines().collect();
        for want in [
            "Produced by `cargo xtask bench footprint` at commit e551611 with rustc 1.95.0 (59807616e 2026-04-14).",
            "| static aarch64-unknown-linux-musl | 627408 | `cargo build --release -p latscope --target aarch64-unknown-linux-musl` |",
            "| static armv7-unknown-linux-gnueabihf (+crt-static) | 1019256 | `cargo build --release -p latscope --target armv7-unknown-linux-gnueabihf` |",
            "| x86_64 glibc (dynamic) | 622704 | `cargo build --release -p latscope` |",
            "| std floor, static aarch64-unknown-linux-musl | 363208 | `bench/std-floor` |",
            "161080 B for latscope's own code, which takes 264200 B here. Most of the floor is the",
            "Of std's and [Unknown]'s share, 193831 B of .text are the backtrace printer of std's default panic hook",
            "| .text | 545080 |",
            "| Total | 692911 |",
            "## aarch64-unknown-linux-musl, the 40 largest functions",
            " 7.9%  45.2% 221.6KiB std",
            "10.5%  37.8% 310.0KiB [Unknown]",
            "## Machine",
            "- commit: e551611",
        ] {
            assert!(lines.contains(&want), "no line {want:?} in\n{md}");
        }
        assert!(!md.contains("| .init |"), "a section under 1000 B:\n{md}");
    }

    #[test]
    fn the_function_list_is_cut_to_160_columns() {
        let md = footprint().markdown();
        let long = md
            .lines()
            .find(|l| l.contains("_ZN9libunwind10CFI_Parser"))
            .expect("the libunwind line");
        assert_eq!(long.chars().count(), LINE_WIDTH);
        assert!(long.ends_with("RKNS2_8FDE_InfoERKNS2_8"), "{long}");
    }

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn the_command_lines_defaults_are_the_scripts() {
        use clap::Parser;
        let defaults = Cli::try_parse_from(["x"]).unwrap().args;
        assert_eq!(defaults, Args::default());
        assert_eq!(defaults.out, root().join("bench/results"));
        assert_eq!(defaults.functions, 40);
        let a = Cli::try_parse_from(["x", "-n", "7", "--out", "d"])
            .unwrap()
            .args;
        assert_eq!((a.functions, a.out), (7, PathBuf::from("d")));
    }

    #[test]
    fn the_json_reads_back_and_refuses_unknown_fields() {
        let f = footprint();
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(serde_json::from_str::<Footprint>(&json).unwrap(), f);
        let extra = json.replacen('{', "{\"size\":1,", 1);
        assert!(serde_json::from_str::<Footprint>(&extra).is_err());
    }
}
