//! Captures raw trace pages of the emulated boards for core's decoder
//! tests: boots the busybox image of each board with `fixture=SECS`
//! (`testkit/image/init`), which records the classifier's events on CPU 0
//! while latscope runs there, and prints `events/header_page`, the
//! events' `format` files, the kernel's own text (`per_cpu/cpu0/trace`),
//! `stats` and the pages of `trace_pipe_raw` (base64) on the console.
//!
//!   board_fixtures DIR [SECS]
//!
//! writes them to `DIR/<arch>-<kernel release>/` (the image has no disk
//! and no network: the console is the way out). Needs the tools
//! `.ci/run setup` installs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use latscope_testkit::base64;
use latscope_testkit::boot::Console;
use latscope_testkit::image;
use latscope_testkit::qemu::Arch;

/// The files between `image: fixture NAME` and `image: fixture end`.
pub(super) fn files(console: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut cur: Option<(String, String)> = None;
    for line in console.lines().map(|l| l.trim_end_matches('\r')) {
        match (line.strip_prefix("image: fixture "), cur.as_mut()) {
            (Some("end"), Some(_)) => out.extend(cur.take()),
            (Some(name), None) => cur = Some((name.to_string(), String::new())),
            (_, Some((_, text))) => {
                text.push_str(line);
                text.push('\n');
            }
            (_, None) => {}
        }
    }
    out
}

/// The kernel release the boot used, from its file name.
fn release(kernel: &Path) -> String {
    let name = kernel.file_name().map(|n| n.to_string_lossy().into_owned());
    name.as_deref()
        .and_then(|n| n.strip_prefix("vmlinuz-"))
        .unwrap_or("unknown")
        .to_string()
}

fn capture(arch: Arch, dir: &Path, secs: u64) -> Result<PathBuf, String> {
    let (board, boot) = image::boot(
        arch,
        &format!("fixture={secs}"),
        Console::Socket { flood: false },
        Duration::from_secs(120 + 4 * secs),
    )?;
    let name = match arch {
        Arch::Aarch64 => "aarch64",
        Arch::Armv7 => "armv7",
    };
    let out = dir.join(format!("{name}-{}", release(&board.kernel)));
    write(&boot.console, &out)?;
    Ok(out)
}

/// Writes the files on `console` into `out` (`NAME.base64` decoded, as
/// `NAME`); fails if there is none.
pub(super) fn write(console: &str, out: &Path) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| e.to_string())?;
    let found = files(console);
    if found.is_empty() {
        return Err(format!("no fixture on the console:\n{console}"));
    }
    for (name, text) in found {
        let (name, bytes) = match name.strip_suffix(".base64") {
            Some(n) => (n.to_string(), base64::decode(&text).ok_or("bad base64")?),
            None => (name, text.into_bytes()),
        };
        std::fs::write(out.join(&name), bytes).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// `cargo xtask tool board-fixtures ARGS`.
pub fn main(args: Vec<String>) -> ExitCode {
    let mut args = args.into_iter();
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: xtask tool board-fixtures DIR [SECS]");
        return ExitCode::from(2);
    };
    let secs = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let mut status = ExitCode::SUCCESS;
    for arch in [Arch::Aarch64, Arch::Armv7] {
        match capture(arch, &dir, secs) {
            Ok(out) => println!("{arch:?}: {}", out.display()),
            Err(e) => {
                eprintln!("xtask tool board-fixtures: {arch:?}: {e}");
                status = ExitCode::FAILURE;
            }
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_base64_come_back_as_written() {
        let console = "boot noise\r\nimage: fixture a.txt\r\nline 1\r\nimage: fixture end\r\n\
                       image: fixture p.base64\naGVsbG8g\nd29ybGQ=\nimage: fixture end\n";
        let f = files(console);
        assert_eq!(f[0], ("a.txt".to_string(), "line 1\n".to_string()));
        assert_eq!(
            base64::decode(&f[1].1).as_deref(),
            Some(&b"hello world"[..])
        );
        assert_eq!(base64::decode("a*b"), None);
    }
}
