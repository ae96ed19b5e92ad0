//! `cargo xtask release-check DIR`: the check of every artefact that
//! scripts/release wrote into DIR (CI's release stage runs it):
//!
//! - the seven artefacts of the workspace's version are there
//!   ([`EXPECTED`]);
//! - SHA256SUMS verifies (`sha256sum -c`) and lists every `latscope-*`
//!   file ([`parse_sums`]);
//! - each `.tar.gz` unpacks (`tar tzf`);
//! - the `.exe` is a PE32+ x86-64 executable ([`Pe`]) that imports only
//!   Windows' own DLLs ([`dll_allowed`]): no mingw runtime;
//! - each Linux binary is a static ELF ([`Elf`]) for the machine its name
//!   says, and prints the version under that machine's qemu-user; each
//!   target binary refuses the proof scripts' options ([`PROOF_OPTIONS`]);
//! - the target's source archive comes vendored, as Buildroot keeps it
//!   ([`VENDORED`]), and its sha256 is the one line the Buildroot
//!   package's hash file has for it ([`buildroot_sha256`]): a change to
//!   the target's crates without `scripts/buildroot-hash` fails here.
//!
//! The ELF and PE headers are read here; sha256sum, tar and qemu-user are
//! launched. Each check prints one line.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::Error;

/// `cargo xtask release-check DIR`.
#[derive(clap::Args)]
pub struct Args {
    /// The release directory (scripts/release's OUTDIR).
    pub dir: PathBuf,
}

/// The workspace's version: every artefact's name carries it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// An artefact's name: `PROGRAM` + the workspace's version + `TAIL`.
macro_rules! artefact {
    ($program:literal, $tail:literal) => {
        concat!($program, env!("CARGO_PKG_VERSION"), $tail)
    };
}

/// The artefacts a release has (scripts/release's header lists them),
/// besides SHA256SUMS.
pub const EXPECTED: [&str; 7] = [
    artefact!("latscope-", "-aarch64-unknown-linux-musl"),
    artefact!("latscope-", "-armv7-unknown-linux-gnueabihf"),
    artefact!("latscope-", "-x86_64-unknown-linux-musl"),
    artefact!("latscope-host-", "-x86_64-unknown-linux-musl"),
    artefact!("latscope-host-", "-x86_64-pc-windows-gnu.exe"),
    artefact!("latscope-", "-docs.tar.gz"),
    artefact!("latscope-target-src-", ".tar.gz"),
];

/// The Buildroot package's hash file, relative to the workspace's root.
pub const BUILDROOT_HASH: &str = "buildroot/package/latscope/latscope.hash";

/// What the target's source archive holds under its top directory besides
/// the crates: Buildroot's download step sees `VENDOR/` and keeps the
/// archive as it is (support/download/cargo-post-process), and cargo finds
/// the vendored crates through `.cargo/config.toml`.
pub const VENDORED: [&str; 2] = ["VENDOR/", ".cargo/config.toml"];

/// ELF `e_machine` of 32-bit ARM.
pub const EM_ARM: u16 = 40;
/// ELF `e_machine` of x86-64.
pub const EM_X86_64: u16 = 62;
/// ELF `e_machine` of AArch64.
pub const EM_AARCH64: u16 = 183;

/// A Linux target's architecture (the triple's prefix): its qemu-user
/// and its ELF machine.
const RUNNERS: [(&str, &str, u16); 3] = [
    ("aarch64-", "qemu-aarch64-static", EM_AARCH64),
    ("armv7-", "qemu-arm-static", EM_ARM),
    ("x86_64-", "qemu-x86_64-static", EM_X86_64),
];

/// Check the release in `args.dir`, one line per check.
///
/// # Errors
///
/// [`Error::Missing`] for an expected artefact that is not there,
/// [`Error::Check`] for an artefact that fails its check,
/// [`Error::Command`] for a tool that did not start, [`Error::Io`] and
/// [`Error::Parse`] for what cannot be read.
pub fn run(args: &Args) -> Result<(), Error> {
    let dir = &args.dir;
    for name in EXPECTED {
        if !dir.join(name).is_file() {
            return Err(Error::Missing(format!(
                "{name} in the release {}",
                dir.display()
            )));
        }
    }
    println!("the {} artefacts of {VERSION} are there", EXPECTED.len());

    let sums = dir.join("SHA256SUMS");
    let text = fs::read_to_string(&sums).map_err(Error::io(&sums))?;
    let listed = parse_sums(&text).map_err(|why| Error::Parse {
        what: sums.display().to_string(),
        why,
    })?;
    let out = launch(
        Command::new("sha256sum")
            .args(["--quiet", "-c", "SHA256SUMS"])
            .current_dir(dir),
    )?;
    if !out.status.success() {
        return Err(Error::Check(format!(
            "SHA256SUMS does not verify: {}",
            said(&out, true)
        )));
    }
    let files = artefacts(dir)?;
    let listed: BTreeSet<&str> = listed.iter().map(String::as_str).collect();
    if let Some(name) = files.iter().find(|f| !listed.contains(f.as_str())) {
        return Err(Error::Check(format!("{name} is not in SHA256SUMS")));
    }
    println!(
        "SHA256SUMS: verifies and lists all {} artefacts",
        files.len()
    );

    for name in &files {
        check_artefact(dir, name)?;
    }
    check_buildroot_hash(dir, &text, &crate::root().join(BUILDROOT_HASH))
}

/// The target's source archive against the Buildroot package: vendored
/// ([`VENDORED`]), and its sha256 (from SHA256SUMS, which has verified)
/// the hash file's.
fn check_buildroot_hash(dir: &Path, sums: &str, hash_file: &Path) -> Result<(), Error> {
    let name = EXPECTED[6];
    let listing = launch(Command::new("tar").arg("tzf").arg(dir.join(name)))?;
    let listing = String::from_utf8_lossy(&listing.stdout);
    let top = name.trim_end_matches(".tar.gz");
    for what in VENDORED {
        let path = format!("{top}/{what}");
        if !listing.lines().any(|l| l.starts_with(&path)) {
            return Err(Error::Check(format!(
                "{name} has no {path}: Buildroot would vendor it again with its own cargo and tar, \
                 and the hash would not hold"
            )));
        }
    }
    let made = sums
        .lines()
        .find(|l| l.get(64..).and_then(|r| r.get(2..)) == Some(name))
        .and_then(|l| l.get(..64))
        .ok_or_else(|| Error::Check(format!("{name} is not in SHA256SUMS")))?;
    let text = fs::read_to_string(hash_file).map_err(Error::io(hash_file))?;
    let listed = buildroot_sha256(&text, name).map_err(|why| Error::Parse {
        what: hash_file.display().to_string(),
        why,
    })?;
    if !listed.eq_ignore_ascii_case(made) {
        return Err(Error::Check(format!(
            "{} has sha256 {listed} for {name}, the archive made now is {made}: \
             run scripts/buildroot-hash",
            hash_file.display()
        )));
    }
    println!("{name}: vendored, and its sha256 is the Buildroot package's");
    Ok(())
}

/// The sha256 that a Buildroot hash file (`TYPE  HEX  NAME` lines, `#`
/// comments) lists for `name`.
///
/// # Errors
///
/// No sha256 line for `name`, or more than one: Buildroot's check-hash
/// checks every line listed for a file and fails at the first that does
/// not match, so two lines would fail any one archive.
pub fn buildroot_sha256<'a>(text: &'a str, name: &str) -> Result<&'a str, String> {
    let mut found = None;
    for (i, line) in text.lines().enumerate() {
        let mut words = line.split_whitespace();
        let (Some(kind), Some(hash), Some(file)) = (words.next(), words.next(), words.next())
        else {
            continue;
        };
        if kind.starts_with('#') || file != name || kind != "sha256" {
            continue;
        }
        if hash.len() != 64 || !hash.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!("line {}: not a SHA-256 in hex: `{line}`", i + 1));
        }
        if found.replace(hash).is_some() {
            return Err(format!(
                "line {}: a second sha256 for {name}; Buildroot checks every line, \
                 so two fail every archive",
                i + 1
            ));
        }
    }
    found.ok_or_else(|| format!("no sha256 line for {name}"))
}

/// The names of the `latscope-*` files of `dir`, sorted.
fn artefacts(dir: &Path) -> Result<Vec<String>, Error> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).map_err(Error::io(dir))? {
        let entry = entry.map_err(Error::io(dir))?;
        let Ok(name) = entry.file_name().into_string() else {
            return Err(Error::Check(format!(
                "{}: a file name that is not UTF-8",
                entry.path().display()
            )));
        };
        if name.starts_with("latscope-") && entry.path().is_file() {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// One artefact's check, chosen by its name: an archive, the Windows
/// executable, or else a Linux binary.
fn check_artefact(dir: &Path, name: &str) -> Result<(), Error> {
    let path = dir.join(name);
    if name.ends_with(".tar.gz") {
        let out = launch(Command::new("tar").arg("tzf").arg(&path))?;
        if !out.status.success() {
            return Err(Error::Check(format!(
                "{name} does not unpack: {}",
                said(&out, false)
            )));
        }
        let entries = out
            .stdout
            .split(|&c| c == b'\n')
            .filter(|l| !l.is_empty())
            .count();
        println!("{name}: unpacks, {entries} entries");
        return Ok(());
    }
    let bytes = fs::read(&path).map_err(Error::io(&path))?;
    if name.ends_with(".exe") {
        let pe = Pe::parse(&bytes)
            .map_err(|why| Error::Check(format!("{name} is not a Windows executable: {why}")))?;
        if pe.machine != IMAGE_FILE_MACHINE_AMD64 {
            return Err(Error::Check(format!(
                "{name}: PE machine {:#x}, not x86-64",
                pe.machine
            )));
        }
        let foreign: Vec<&str> = pe
            .dlls
            .iter()
            .map(String::as_str)
            .filter(|d| !dll_allowed(d))
            .collect();
        if !foreign.is_empty() {
            return Err(Error::Check(format!(
                "{name} needs a DLL that Windows does not have: {}",
                foreign.join(", ")
            )));
        }
        let dlls: BTreeSet<String> = pe.dlls.iter().map(|d| d.to_ascii_lowercase()).collect();
        println!(
            "{name}: Windows PE32+ x86-64, system DLLs only ({} DLLs)",
            dlls.len()
        );
        return Ok(());
    }
    let elf = Elf::parse(&bytes).map_err(|why| Error::Check(format!("{name}: {why}")))?;
    if !elf.is_static() {
        return Err(Error::Check(format!(
            "{name} is not statically linked (it has a PT_INTERP program header)"
        )));
    }
    let Some((version, target, qemu, machine)) = runner(name) else {
        return Err(Error::Check(format!("{name}: no qemu-user for its target")));
    };
    if version != VERSION {
        return Err(Error::Check(format!(
            "{name}: version {version} in its name, not {VERSION}"
        )));
    }
    if elf.machine != machine {
        return Err(Error::Check(format!(
            "{name}: an ELF for machine {}, not for {target}",
            elf.machine
        )));
    }
    let out = launch(Command::new(qemu).arg(&path).arg("--version"))?;
    let first = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    if !out.status.success() || first.is_empty() {
        return Err(Error::Check(format!(
            "{name} --version printed nothing under {qemu}: {}",
            said(&out, false)
        )));
    }
    if !first.split_whitespace().any(|w| w == VERSION) {
        return Err(Error::Check(format!(
            "{name} --version under {qemu} printed `{first}`, not version {VERSION}"
        )));
    }
    println!("{name}: {}, {first} under {qemu}", elf.linkage());
    if !name.starts_with("latscope-host-") {
        refuses_proof_options(&path, qemu, name)?;
        println!("{name}: refuses {}", PROOF_OPTIONS.join(", "));
    }
    Ok(())
}

/// The proof scripts' hidden options: only a build with the target's
/// `proof` feature has them, and what ships must not.
pub const PROOF_OPTIONS: [&str; 3] = ["--ballast-mib=1", "--no-exit-demote", "--self-check-probe"];

/// Each of [`PROOF_OPTIONS`] is an unknown option to the target binary at
/// `path`, run by `runner` (its qemu-user): a usage error, exit status 2.
fn refuses_proof_options(path: &Path, runner: &str, name: &str) -> Result<(), Error> {
    for opt in PROOF_OPTIONS {
        let out = launch(Command::new(runner).arg(path).args(["-l", "1", "-q", opt]))?;
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(2) || !err.contains("unknown option") {
            return Err(Error::Check(format!(
                "{name} does not refuse {opt} (built with the proof feature?): {}",
                said(&out, false)
            )));
        }
    }
    Ok(())
}

/// A Linux binary's version and target (its name without the program),
/// its qemu-user and its ELF machine.
fn runner(name: &str) -> Option<(&str, &str, &'static str, u16)> {
    let rest = name
        .strip_prefix("latscope-host-")
        .or_else(|| name.strip_prefix("latscope-"))?;
    let (version, target) = rest.split_once('-')?;
    RUNNERS
        .iter()
        .find(|(arch, _, _)| target.starts_with(arch))
        .map(|&(_, qemu, machine)| (version, target, qemu, machine))
}

/// Run a program to its end, its output captured.
///
/// # Errors
///
/// [`Error::Command`] when it cannot be started; a failure status is the
/// caller's to judge.
fn launch(cmd: &mut Command) -> Result<Output, Error> {
    cmd.stdin(Stdio::null())
        .output()
        .map_err(|e| Error::Command {
            cmd: std::iter::once(cmd.get_program())
                .chain(cmd.get_args())
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            why: format!("did not start: {e}"),
        })
}

/// A finished program's status and its standard error, for a message;
/// its standard output too if `with_stdout` (sha256sum's `FAILED` lines;
/// not tar's listing).
fn said(out: &Output, with_stdout: bool) -> String {
    let mut s = out.status.to_string();
    let stdout: &[u8] = if with_stdout { &out.stdout } else { &[] };
    for stream in [stdout, &out.stderr] {
        let text = String::from_utf8_lossy(stream);
        if !text.trim().is_empty() {
            s.push_str(": ");
            s.push_str(&text.trim().replace('\n', "; "));
        }
    }
    s
}

/// The file names of a SHA256SUMS listing (`sha256sum`'s output: 64 hex
/// digits, a space, a space or `*`, the name), in its order.
///
/// # Errors
///
/// A line that is not of that form, with its number, or a name listed
/// twice.
pub fn parse_sums(text: &str) -> Result<Vec<String>, String> {
    let mut names: Vec<String> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.is_empty() {
            continue;
        }
        if line.starts_with('\\') {
            return Err(format!("line {n}: an escaped file name: `{line}`"));
        }
        let (hash, rest) = line
            .split_at_checked(64)
            .ok_or_else(|| format!("line {n}: too short: `{line}`"))?;
        if !hash.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!("line {n}: not a SHA-256 in hex: `{line}`"));
        }
        let name = rest
            .strip_prefix("  ")
            .or_else(|| rest.strip_prefix(" *"))
            .filter(|name| !name.is_empty())
            .ok_or_else(|| format!("line {n}: no file name after the hash: `{line}`"))?;
        if names.iter().any(|m| m == name) {
            return Err(format!("line {n}: {name} is listed twice"));
        }
        names.push(name.to_string());
    }
    Ok(names)
}

/// The DLLs every Windows has, lower case and without `.dll`; besides
/// them, the API sets (`api-ms-win-*`). mingw's runtime DLLs
/// (libgcc_s, libwinpthread) are not here: the executable must not need
/// them.
const WINDOWS_DLLS: [&str; 16] = [
    "kernel32",
    "ntdll",
    "ws2_32",
    "advapi32",
    "userenv",
    "bcrypt",
    "bcryptprimitives",
    "msvcrt",
    "ucrtbase",
    "shell32",
    "ole32",
    "oleaut32",
    "user32",
    "secur32",
    "crypt32",
    "iphlpapi",
];

/// Whether a DLL is Windows' own (any case): one of [`WINDOWS_DLLS`] or
/// an API set `api-ms-win-[a-z0-9-]+.dll`.
pub fn dll_allowed(dll: &str) -> bool {
    let lower = dll.to_ascii_lowercase();
    let Some(stem) = lower.strip_suffix(".dll") else {
        return false;
    };
    WINDOWS_DLLS.contains(&stem)
        || stem.strip_prefix("api-ms-win-").is_some_and(|set| {
            !set.is_empty()
                && set
                    .bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        })
}

/// `N` bytes at `off`, or why not.
fn bytes_at<const N: usize>(b: &[u8], off: usize) -> Result<[u8; N], String> {
    off.checked_add(N)
        .and_then(|end| b.get(off..end))
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| {
            format!(
                "truncated: no {N} bytes at offset {off:#x} of {:#x}",
                b.len()
            )
        })
}

fn u16_at(b: &[u8], off: usize) -> Result<u16, String> {
    bytes_at(b, off).map(u16::from_le_bytes)
}

fn u32_at(b: &[u8], off: usize) -> Result<u32, String> {
    bytes_at(b, off).map(u32::from_le_bytes)
}

fn u64_at(b: &[u8], off: usize) -> Result<u64, String> {
    bytes_at(b, off).map(u64::from_le_bytes)
}

fn offset(v: u64) -> Result<usize, String> {
    usize::try_from(v).map_err(|_| format!("offset {v:#x} out of range"))
}

/// ELF `e_type` of a position-independent executable or shared object.
const ET_DYN: u16 = 3;
/// ELF program header types.
const PT_DYNAMIC: u32 = 2;
const PT_INTERP: u32 = 3;
/// `e_phnum` when the count is elsewhere (in section 0).
const PN_XNUM: u16 = 0xffff;

/// What the release check needs of a little-endian ELF file's header and
/// program headers, 32- or 64-bit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Elf {
    /// 32 or 64.
    pub bits: u8,
    /// `e_type` (2 executable, 3 PIE or shared object).
    pub file_type: u16,
    /// `e_machine` ([`EM_AARCH64`], [`EM_ARM`], [`EM_X86_64`], ...).
    pub machine: u16,
    /// Whether it has a `PT_INTERP` program header: a dynamic loader.
    pub interp: bool,
    /// Whether it has a `PT_DYNAMIC` program header (a static PIE has
    /// one, and no `PT_INTERP`).
    pub dynamic: bool,
}

impl Elf {
    /// Read the header and the program headers.
    ///
    /// # Errors
    ///
    /// Not an ELF file, big-endian, a class other than 32 or 64 bits, or
    /// headers that run past the end of the file.
    pub fn parse(b: &[u8]) -> Result<Elf, String> {
        if b.get(..4) != Some(b"\x7fELF".as_slice()) {
            return Err("not an ELF file".into());
        }
        let bits = match b.get(4) {
            Some(1) => 32,
            Some(2) => 64,
            class => return Err(format!("ELF class {class:?}: neither 32- nor 64-bit")),
        };
        match b.get(5) {
            Some(1) => {}
            Some(2) => {
                return Err("a big-endian ELF file (only little-endian ones are read)".into())
            }
            data => {
                return Err(format!(
                    "ELF data encoding {data:?}: neither little- nor big-endian"
                ))
            }
        }
        let file_type = u16_at(b, 16)?;
        let machine = u16_at(b, 18)?;
        let (phoff, phentsize, phnum, min_entsize) = if bits == 64 {
            (u64_at(b, 32)?, u16_at(b, 54)?, u16_at(b, 56)?, 56)
        } else {
            (
                u64::from(u32_at(b, 28)?),
                u16_at(b, 42)?,
                u16_at(b, 44)?,
                32,
            )
        };
        if phnum == PN_XNUM {
            return Err("more program headers than e_phnum holds (PN_XNUM)".into());
        }
        if phnum > 0 && phentsize < min_entsize {
            return Err(format!(
                "program header size {phentsize}, less than {min_entsize}"
            ));
        }
        let phoff = offset(phoff)?;
        let (mut interp, mut dynamic) = (false, false);
        for i in 0..usize::from(phnum) {
            let at = usize::from(phentsize)
                .checked_mul(i)
                .and_then(|o| o.checked_add(phoff))
                .ok_or("program header offset out of range")?;
            match u32_at(b, at)? {
                PT_INTERP => interp = true,
                PT_DYNAMIC => dynamic = true,
                _ => {}
            }
        }
        Ok(Elf {
            bits,
            file_type,
            machine,
            interp,
            dynamic,
        })
    }

    /// Static (no dynamic loader): a static executable or a static PIE.
    pub fn is_static(&self) -> bool {
        !self.interp
    }

    /// As file(1) says it.
    pub fn linkage(&self) -> &'static str {
        if self.interp {
            "dynamically linked"
        } else if self.file_type == ET_DYN && self.dynamic {
            "static-pie linked"
        } else {
            "statically linked"
        }
    }
}

/// PE `Machine` of x86-64.
pub const IMAGE_FILE_MACHINE_AMD64: u16 = 0x8664;
/// The optional header's magic of PE32+ (64-bit).
const PE32_PLUS: u16 = 0x20b;
/// COFF characteristics.
const IMAGE_FILE_EXECUTABLE_IMAGE: u16 = 0x0002;
const IMAGE_FILE_DLL: u16 = 0x2000;
/// Data directories: the import table and the delay-load import table.
const DIR_IMPORT: usize = 1;
const DIR_DELAY_IMPORT: usize = 13;
/// Where PE32+'s data directories start in the optional header.
const PE32_PLUS_DIRS: usize = 112;
/// The most descriptors read from one import table: a bound for a file
/// whose table has no terminator.
const MAX_IMPORTS: usize = 4096;

/// What the release check needs of a PE32+ executable: its machine and
/// the DLLs it imports, from the import and the delay-load import tables,
/// as the file spells them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pe {
    /// The COFF header's `Machine`.
    pub machine: u16,
    /// The DLL names of the import descriptors, in their order.
    pub dlls: Vec<String>,
}

/// A section header: where an RVA's bytes are in the file.
struct Section {
    va: u32,
    vsize: u32,
    raw_ptr: u32,
    raw_size: u32,
}

impl Pe {
    /// Read the headers and the import tables.
    ///
    /// # Errors
    ///
    /// No `MZ` or `PE\0\0`, not PE32+, a DLL or not an executable image,
    /// or a table that is not inside the file.
    pub fn parse(b: &[u8]) -> Result<Pe, String> {
        if b.get(..2) != Some(b"MZ".as_slice()) {
            return Err("no MZ header".into());
        }
        let pe = offset(u64::from(u32_at(b, 0x3c)?))?;
        if bytes_at::<4>(b, pe)? != *b"PE\0\0" {
            return Err(format!("no PE signature at e_lfanew {pe:#x}"));
        }
        let coff = pe + 4;
        let machine = u16_at(b, coff)?;
        let nsections = usize::from(u16_at(b, coff + 2)?);
        let opt_size = usize::from(u16_at(b, coff + 16)?);
        let characteristics = u16_at(b, coff + 18)?;
        if characteristics & IMAGE_FILE_EXECUTABLE_IMAGE == 0 {
            return Err("not an executable image".into());
        }
        if characteristics & IMAGE_FILE_DLL != 0 {
            return Err("a DLL, not an executable".into());
        }
        let opt = coff + 20;
        let magic = u16_at(b, opt)?;
        if magic != PE32_PLUS {
            return Err(format!(
                "optional header magic {magic:#x}, not PE32+ ({PE32_PLUS:#x})"
            ));
        }
        let ndirs = offset(u64::from(u32_at(b, opt + 108)?))?;
        if PE32_PLUS_DIRS + 8 * ndirs.min(16) > opt_size {
            return Err(format!(
                "{ndirs} data directories do not fit an optional header of {opt_size} bytes"
            ));
        }
        let sections = (0..nsections)
            .map(|i| {
                let s = opt + opt_size + 40 * i;
                Ok(Section {
                    vsize: u32_at(b, s + 8)?,
                    va: u32_at(b, s + 12)?,
                    raw_size: u32_at(b, s + 16)?,
                    raw_ptr: u32_at(b, s + 20)?,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let file_offset = |rva: u32| -> Result<usize, String> {
            let s = sections
                .iter()
                .find(|s| {
                    rva >= s.va
                        && u64::from(rva) < u64::from(s.va) + u64::from(s.vsize.max(s.raw_size))
                })
                .ok_or_else(|| format!("RVA {rva:#x} is in no section"))?;
            let within = rva - s.va;
            if within >= s.raw_size {
                return Err(format!(
                    "RVA {rva:#x} is past its section's bytes in the file"
                ));
            }
            offset(u64::from(s.raw_ptr) + u64::from(within))
        };
        let mut dlls = Vec::new();
        // (directory, descriptor size, where the name's RVA is in one)
        for (dir, size, name_at) in [(DIR_IMPORT, 20, 12), (DIR_DELAY_IMPORT, 32, 4)] {
            if dir >= ndirs {
                continue;
            }
            let rva = u32_at(b, opt + PE32_PLUS_DIRS + 8 * dir)?;
            if rva == 0 {
                continue;
            }
            let table = file_offset(rva)?;
            for i in 0..=MAX_IMPORTS {
                if i == MAX_IMPORTS {
                    return Err(format!("an import table of more than {MAX_IMPORTS} DLLs"));
                }
                let d = table + size * i;
                let desc = b
                    .get(d..d + size)
                    .ok_or("an import table without its end")?;
                if desc.iter().all(|&c| c == 0) {
                    break;
                }
                let name = file_offset(u32_at(b, d + name_at)?)?;
                dlls.push(c_string(b, name)?);
            }
        }
        Ok(Pe { machine, dlls })
    }
}

/// The NUL-terminated ASCII name at `off` (a DLL name: at most 255 bytes).
fn c_string(b: &[u8], off: usize) -> Result<String, String> {
    let s = b.get(off..).unwrap_or_default();
    let len = s
        .iter()
        .take(256)
        .position(|&c| c == 0)
        .ok_or_else(|| format!("no name of at most 255 bytes at {off:#x}"))?;
    let name = &s[..len];
    if name.is_empty() || !name.is_ascii() {
        return Err(format!("the name at {off:#x} is empty or not ASCII"));
    }
    Ok(String::from_utf8_lossy(name).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_testkit::Scratch;

    /// An ELF header and program headers of the given types (no
    /// segments' contents: the check reads none).
    fn elf(bits: u8, machine: u16, file_type: u16, types: &[u32]) -> Vec<u8> {
        let (ehsize, phentsize) = if bits == 64 { (64, 56) } else { (52, 32) };
        let mut b = vec![0u8; ehsize + phentsize * types.len()];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = if bits == 64 { 2 } else { 1 };
        b[5] = 1; // little-endian
        b[6] = 1; // EV_CURRENT
        b[16..18].copy_from_slice(&file_type.to_le_bytes());
        b[18..20].copy_from_slice(&machine.to_le_bytes());
        let n = u16::try_from(types.len()).unwrap().to_le_bytes();
        let ent = u16::try_from(phentsize).unwrap().to_le_bytes();
        if bits == 64 {
            b[32..40].copy_from_slice(&(ehsize as u64).to_le_bytes());
            b[54..56].copy_from_slice(&ent);
            b[56..58].copy_from_slice(&n);
        } else {
            b[28..32].copy_from_slice(&(ehsize as u32).to_le_bytes());
            b[42..44].copy_from_slice(&ent);
            b[44..46].copy_from_slice(&n);
        }
        for (i, t) in types.iter().enumerate() {
            let at = ehsize + phentsize * i;
            b[at..at + 4].copy_from_slice(&t.to_le_bytes());
        }
        b
    }

    const PT_LOAD: u32 = 1;
    const PT_PHDR: u32 = 6;
    const ET_EXEC: u16 = 2;

    #[test]
    fn elf_64_static_executable() {
        let e = Elf::parse(&elf(64, EM_AARCH64, ET_EXEC, &[PT_LOAD, PT_LOAD])).unwrap();
        assert_eq!(
            (e.bits, e.machine, e.interp, e.dynamic),
            (64, EM_AARCH64, false, false)
        );
        assert!(e.is_static());
        assert_eq!(e.linkage(), "statically linked");
    }

    #[test]
    fn elf_64_dynamic_and_static_pie() {
        let dynamic = Elf::parse(&elf(
            64,
            EM_X86_64,
            ET_DYN,
            &[PT_PHDR, PT_INTERP, PT_LOAD, PT_DYNAMIC],
        ))
        .unwrap();
        assert!(dynamic.interp && !dynamic.is_static());
        assert_eq!(dynamic.linkage(), "dynamically linked");
        let pie = Elf::parse(&elf(64, EM_X86_64, ET_DYN, &[PT_PHDR, PT_LOAD, PT_DYNAMIC])).unwrap();
        assert!(pie.is_static());
        assert_eq!(pie.linkage(), "static-pie linked");
    }

    #[test]
    fn elf_32_arm() {
        let e = Elf::parse(&elf(32, EM_ARM, ET_EXEC, &[PT_LOAD, PT_LOAD])).unwrap();
        assert_eq!((e.bits, e.machine), (32, EM_ARM));
        assert!(e.is_static());
        let d = Elf::parse(&elf(32, EM_ARM, ET_EXEC, &[PT_LOAD, PT_INTERP])).unwrap();
        assert!(!d.is_static());
    }

    #[test]
    fn elf_errors() {
        assert!(Elf::parse(b"MZ\0\0").unwrap_err().contains("not an ELF"));
        assert!(Elf::parse(b"").unwrap_err().contains("not an ELF"));
        let mut big = elf(64, EM_AARCH64, ET_EXEC, &[PT_LOAD]);
        big[5] = 2;
        assert!(Elf::parse(&big).unwrap_err().contains("big-endian"));
        let mut class = elf(64, EM_AARCH64, ET_EXEC, &[PT_LOAD]);
        class[4] = 3;
        assert!(Elf::parse(&class).unwrap_err().contains("class"));
        // the program headers cut off: the PT_INTERP of the last one is
        // not there to be missed
        let whole = elf(32, EM_ARM, ET_EXEC, &[PT_LOAD, PT_INTERP]);
        assert!(Elf::parse(&whole[..whole.len() - 32])
            .unwrap_err()
            .contains("truncated"));
    }

    /// A real dynamic executable of this machine: a dynamic loader.
    #[test]
    fn elf_bin_sh_is_dynamic() {
        let e = Elf::parse(&fs::read("/bin/sh").unwrap()).unwrap();
        assert!(e.interp, "/bin/sh has no PT_INTERP: {e:?}");
        assert!(!e.is_static());
        #[cfg(target_arch = "x86_64")]
        assert_eq!((e.bits, e.machine), (64, EM_X86_64));
        #[cfg(target_arch = "aarch64")]
        assert_eq!((e.bits, e.machine), (64, EM_AARCH64));
    }

    /// A PE32+ executable with one section (.idata at RVA 0x1000, file
    /// offset 0x200) holding an import table of `imports` and a
    /// delay-load import table of `delayed`.
    fn pe(magic: u16, characteristics: u16, imports: &[&str], delayed: &[&str]) -> Vec<u8> {
        fn put(b: &mut [u8], at: usize, v: &[u8]) {
            b[at..at + v.len()].copy_from_slice(v);
        }
        let mut b = vec![0u8; 0x800];
        put(&mut b, 0, b"MZ");
        put(&mut b, 0x3c, &0x80u32.to_le_bytes());
        put(&mut b, 0x80, b"PE\0\0");
        let coff = 0x84;
        put(&mut b, coff, &IMAGE_FILE_MACHINE_AMD64.to_le_bytes());
        put(&mut b, coff + 2, &1u16.to_le_bytes());
        put(&mut b, coff + 16, &240u16.to_le_bytes());
        put(&mut b, coff + 18, &characteristics.to_le_bytes());
        let opt = coff + 20;
        put(&mut b, opt, &magic.to_le_bytes());
        put(&mut b, opt + 108, &16u32.to_le_bytes());
        let (va, raw) = (0x1000u32, 0x200usize);
        let rva = |off: usize| va + u32::try_from(off - raw).unwrap();
        let imports_at = raw;
        let delayed_at = raw + 0x100;
        let mut names_at = raw + 0x200;
        if !imports.is_empty() {
            put(&mut b, opt + 112 + 8, &rva(imports_at).to_le_bytes());
        }
        if !delayed.is_empty() {
            put(&mut b, opt + 112 + 8 * 13, &rva(delayed_at).to_le_bytes());
        }
        let section = opt + 240;
        put(&mut b, section, b".idata\0\0");
        put(&mut b, section + 8, &0x600u32.to_le_bytes());
        put(&mut b, section + 12, &va.to_le_bytes());
        put(&mut b, section + 16, &0x600u32.to_le_bytes());
        put(
            &mut b,
            section + 20,
            &u32::try_from(raw).unwrap().to_le_bytes(),
        );
        for (table, size, name_at, dlls) in
            [(imports_at, 20, 12, imports), (delayed_at, 32, 4, delayed)]
        {
            for (i, dll) in dlls.iter().enumerate() {
                let d = table + size * i;
                put(&mut b, d, &1u32.to_le_bytes()); // not all zero
                put(&mut b, d + name_at, &rva(names_at).to_le_bytes());
                put(&mut b, names_at, dll.as_bytes());
                names_at += dll.len() + 1;
            }
        }
        b
    }

    const EXE: u16 = IMAGE_FILE_EXECUTABLE_IMAGE | 0x0020;

    #[test]
    fn pe_imports_and_delayed_imports() {
        let p = Pe::parse(&pe(
            PE32_PLUS,
            EXE,
            &["KERNEL32.dll", "libgcc_s_seh-1.dll"],
            &["USER32.dll"],
        ))
        .unwrap();
        assert_eq!(p.machine, IMAGE_FILE_MACHINE_AMD64);
        assert_eq!(p.dlls, ["KERNEL32.dll", "libgcc_s_seh-1.dll", "USER32.dll"]);
        let p = Pe::parse(&pe(PE32_PLUS, EXE, &["ntdll.dll"], &[])).unwrap();
        assert_eq!(p.dlls, ["ntdll.dll"]);
    }

    #[test]
    fn pe_errors() {
        assert!(Pe::parse(&pe(0x10b, EXE, &["ntdll.dll"], &[]))
            .unwrap_err()
            .contains("not PE32+"));
        assert!(Pe::parse(&pe(PE32_PLUS, EXE | IMAGE_FILE_DLL, &[], &[]))
            .unwrap_err()
            .contains("DLL"));
        assert!(Pe::parse(&pe(PE32_PLUS, 0x0020, &[], &[]))
            .unwrap_err()
            .contains("executable"));
        let mut no_mz = pe(PE32_PLUS, EXE, &[], &[]);
        no_mz[0] = b'Z';
        assert!(Pe::parse(&no_mz).unwrap_err().contains("MZ"));
        let mut no_sig = pe(PE32_PLUS, EXE, &[], &[]);
        no_sig[0x81] = b'X';
        assert!(Pe::parse(&no_sig).unwrap_err().contains("PE signature"));
        // an import table outside every section
        let mut lost = pe(PE32_PLUS, EXE, &["ntdll.dll"], &[]);
        lost[0x98 + 120..0x98 + 124].copy_from_slice(&0x9000u32.to_le_bytes());
        assert!(Pe::parse(&lost).unwrap_err().contains("no section"));
        assert!(Pe::parse(&pe(PE32_PLUS, EXE, &[], &[])[..0x100]).is_err());
    }

    #[test]
    fn sums_listing() {
        let a = "0".repeat(64);
        let b = "aB".repeat(32);
        let text = format!("{a}  latscope-0.2.0-docs.tar.gz\n{b} *latscope-x y\n\n");
        assert_eq!(
            parse_sums(&text).unwrap(),
            ["latscope-0.2.0-docs.tar.gz", "latscope-x y"]
        );
        assert!(parse_sums(&format!("{a} latscope-x\n"))
            .unwrap_err()
            .contains("line 1"));
        assert!(parse_sums(&format!("{a}  \n"))
            .unwrap_err()
            .contains("no file name"));
        assert!(parse_sums(&format!("{}  latscope-x\n", "g".repeat(64)))
            .unwrap_err()
            .contains("hex"));
        assert!(parse_sums("abc  latscope-x\n")
            .unwrap_err()
            .contains("too short"));
        assert!(parse_sums(&format!("{a}  x\n{b}  x\n"))
            .unwrap_err()
            .contains("twice"));
        assert!(parse_sums(&format!("\\{a}  x\\ny\n"))
            .unwrap_err()
            .contains("escaped"));
    }

    #[test]
    fn dll_allow_list() {
        for ok in [
            "KERNEL32.dll",
            "ws2_32.dll",
            "USERENV.dll",
            "bcryptprimitives.dll",
            "api-ms-win-core-synch-l1-2-0.dll",
            "API-MS-WIN-CRT-RUNTIME-L1-1-0.DLL",
        ] {
            assert!(dll_allowed(ok), "{ok} refused");
        }
        for bad in [
            "libgcc_s_seh-1.dll",
            "libwinpthread-1.dll",
            "kernel32",
            "kernel32.dll.dll",
            "xkernel32.dll",
            "api-ms-win-.dll",
            "api-ms-win-core_x.dll",
            "",
        ] {
            assert!(!dll_allowed(bad), "{bad} allowed");
        }
    }

    #[test]
    fn expected_names_and_their_runners() {
        assert!(EXPECTED.iter().all(|n| n.contains(VERSION)));
        assert_eq!(
            EXPECTED.iter().collect::<BTreeSet<_>>().len(),
            EXPECTED.len()
        );
        let binaries: Vec<_> = EXPECTED
            .iter()
            .filter(|n| !n.ends_with(".tar.gz") && !n.ends_with(".exe"))
            .map(|n| runner(n).map(|(version, target, qemu, _)| (version, target, qemu)))
            .collect();
        assert_eq!(
            binaries,
            [
                Some((VERSION, "aarch64-unknown-linux-musl", "qemu-aarch64-static")),
                Some((VERSION, "armv7-unknown-linux-gnueabihf", "qemu-arm-static")),
                Some((VERSION, "x86_64-unknown-linux-musl", "qemu-x86_64-static")),
                Some((VERSION, "x86_64-unknown-linux-musl", "qemu-x86_64-static")),
            ]
        );
        assert_eq!(runner("latscope-0.2.0-riscv64gc-unknown-linux-musl"), None);
        assert_eq!(runner("other-0.2.0-x86_64-unknown-linux-musl"), None);
    }

    #[test]
    fn buildroot_hash_lines() {
        let a = "ab".repeat(32);
        let b = "cd".repeat(32);
        let name = EXPECTED[6];
        let one = format!("# comment {a}  {name}\nsha256  {a}  {name}\nsha256  {b}  LICENSE-MIT\n");
        assert_eq!(buildroot_sha256(&one, name), Ok(a.as_str()));
        let two = format!("sha256  {a}  {name}\nsha256  {b}  {name}\n");
        let err = buildroot_sha256(&two, name).unwrap_err();
        assert!(err.starts_with("line 2: a second sha256"), "{err}");
        let none = format!("sha512  {a}{a}  {name}\nsha256  {b}  other.tar.gz\n");
        assert_eq!(
            buildroot_sha256(&none, name),
            Err(format!("no sha256 line for {name}"))
        );
        let short = format!("sha256  {}  {name}\n", &a[1..]);
        assert!(buildroot_sha256(&short, name)
            .unwrap_err()
            .contains("not a SHA-256"));
    }

    /// The package's own hash file has exactly one line for the archive.
    #[test]
    fn the_package_hash_file_lists_the_archive_once() {
        let text = fs::read_to_string(crate::root().join(BUILDROOT_HASH)).unwrap();
        let hash = buildroot_sha256(&text, EXPECTED[6]).unwrap();
        assert_eq!(hash.len(), 64);
    }

    /// An archive that is not vendored, then one whose hash is not the
    /// hash file's, then the one that is.
    #[test]
    fn source_archive_against_the_hash_file() {
        let scratch = Scratch::new("release-check-buildroot");
        let dir = scratch.path();
        let name = EXPECTED[6];
        let top = name.trim_end_matches(".tar.gz");
        let pack = |with_vendor: bool| {
            let tree = scratch.join(top);
            let _ = fs::remove_dir_all(&tree);
            fs::create_dir_all(tree.join("core")).unwrap();
            fs::write(tree.join("Cargo.toml"), b"[workspace]\n").unwrap();
            if with_vendor {
                fs::create_dir_all(tree.join("VENDOR/heapless")).unwrap();
                fs::write(tree.join("VENDOR/heapless/lib.rs"), b"").unwrap();
                fs::create_dir_all(tree.join(".cargo")).unwrap();
                fs::write(tree.join(".cargo/config.toml"), b"").unwrap();
            }
            let ok = Command::new("tar")
                .arg("czf")
                .arg(dir.join(name))
                .arg(top)
                .current_dir(dir)
                .status()
                .unwrap();
            assert!(ok.success());
            let out = Command::new("sha256sum")
                .arg(name)
                .current_dir(dir)
                .output()
                .unwrap();
            String::from_utf8(out.stdout).unwrap()
        };
        let hash_file = dir.join("latscope.hash");
        let sums = pack(false);
        fs::write(&hash_file, format!("sha256  {}", &sums)).unwrap();
        let err = check_buildroot_hash(dir, &sums, &hash_file)
            .unwrap_err()
            .to_string();
        assert!(err.contains(&format!("has no {top}/VENDOR/")), "{err}");
        let sums = pack(true);
        let err = check_buildroot_hash(dir, &sums, &hash_file)
            .unwrap_err()
            .to_string();
        assert!(err.contains("run scripts/buildroot-hash"), "{err}");
        fs::write(&hash_file, format!("sha256  {}", &sums)).unwrap();
        check_buildroot_hash(dir, &sums, &hash_file).unwrap();
    }

    /// A binary that refuses the proof options passes; one that runs
    /// with them, or refuses them for another reason, does not (`sh` in
    /// place of qemu-user).
    #[test]
    fn proof_options_must_be_unknown() {
        let scratch = Scratch::new("release-check-proof");
        let script = |name: &str, body: &str| {
            let p = scratch.join(name);
            fs::write(&p, body).unwrap();
            p
        };
        let shipped = script(
            "shipped",
            "echo \"latscope: unknown option $4\" >&2; exit 2\n",
        );
        refuses_proof_options(&shipped, "sh", "shipped").unwrap();
        let proof = script("proof", "echo T: 0; exit 0\n");
        let err = refuses_proof_options(&proof, "sh", "proof")
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not refuse --ballast-mib=1"), "{err}");
        let other = script("other", "echo 'latscope: -l 1: bad' >&2; exit 2\n");
        assert!(refuses_proof_options(&other, "sh", "other").is_err());
    }

    #[test]
    fn a_missing_artefact_is_named() {
        let scratch = Scratch::new("release-check-missing");
        let dir = scratch.path().to_path_buf();
        for name in &EXPECTED[1..] {
            fs::write(dir.join(name), b"").unwrap();
        }
        let err = run(&Args { dir: dir.clone() }).unwrap_err();
        assert!(
            matches!(&err, Error::Missing(what) if what.starts_with(EXPECTED[0])),
            "{err}"
        );
    }

    /// The checks that come before qemu: a dynamic binary, one for
    /// another machine than its name says, one of another version.
    #[test]
    fn linux_binaries_before_qemu() {
        let scratch = Scratch::new("release-check-elf");
        let dir = scratch.path();
        let name = EXPECTED[0]; // aarch64
        fs::write(
            dir.join(name),
            elf(64, EM_AARCH64, ET_EXEC, &[PT_LOAD, PT_INTERP]),
        )
        .unwrap();
        let dynamic = check_artefact(dir, name).unwrap_err().to_string();
        fs::write(dir.join(name), elf(64, EM_X86_64, ET_EXEC, &[PT_LOAD])).unwrap();
        let machine = check_artefact(dir, name).unwrap_err().to_string();
        fs::write(dir.join(name), b"#!/bin/sh\n").unwrap();
        let script = check_artefact(dir, name).unwrap_err().to_string();
        let stale = "latscope-0.0.1-aarch64-unknown-linux-musl";
        fs::write(dir.join(stale), elf(64, EM_AARCH64, ET_EXEC, &[PT_LOAD])).unwrap();
        let version = check_artefact(dir, stale).unwrap_err().to_string();
        assert!(version.contains("version 0.0.1 in its name"), "{version}");
        assert!(dynamic.contains("not statically linked"), "{dynamic}");
        assert!(machine.contains("machine 62"), "{machine}");
        assert!(script.contains("not an ELF"), "{script}");
    }

    #[test]
    fn windows_executable_with_mingw_runtime() {
        let scratch = Scratch::new("release-check-pe");
        let dir = scratch.path();
        let name = EXPECTED[4];
        assert!(name.ends_with(".exe"));
        fs::write(
            dir.join(name),
            pe(
                PE32_PLUS,
                EXE,
                &["KERNEL32.dll", "libwinpthread-1.dll"],
                &[],
            ),
        )
        .unwrap();
        let err = check_artefact(dir, name).unwrap_err().to_string();
        fs::write(
            dir.join(name),
            pe(PE32_PLUS, EXE, &["KERNEL32.dll", "ws2_32.dll"], &[]),
        )
        .unwrap();
        let ok = check_artefact(dir, name);
        assert!(
            err.contains("libwinpthread-1.dll") && !err.contains("KERNEL32"),
            "{err}"
        );
        assert!(ok.is_ok(), "{ok:?}");
    }
}
