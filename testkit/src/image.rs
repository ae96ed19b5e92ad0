//! The busybox board image: a static busybox with its applet links, the
//! static `latscope` in `/usr/bin`, the Buildroot package's init script as
//! `/etc/init.d/S95latscope`, and the shell script `testkit/image/init` as
//! `/init`, packed as a gzip-compressed newc initramfs, the way a minimal
//! buildroot image boots.
//!
//! The busybox is Debian's `busybox-static` for the board's architecture,
//! which `.ci/run setup` unpacks into the cache
//! (`$LATSCOPE_CACHE/busybox/{arm64,armhf}/bin/busybox`);
//! `LATSCOPE_BUSYBOX_AARCH64` / `LATSCOPE_BUSYBOX_ARMV7` name another.

use std::fs;
use std::io;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::boot::{Board, Boot, Console, Port, Spec};
use crate::qemu::{cache_dir, latscope_binary, pack_initramfs, unavailable, Arch};
use crate::Scratch;

/// The image's `/init`.
pub const INIT: &str = include_str!("../image/init");

/// The Buildroot package's init script (`BR2_PACKAGE_LATSCOPE_START_AT_BOOT`),
/// which the image's `initd=SECS` runs start and stop with.
pub const INIT_SCRIPT: &str = include_str!("../../buildroot/package/latscope/S95latscope");

/// The applets the image links (those the init script and a user at the
/// console need; busybox has them all).
const APPLETS: &[&str] = &[
    "sh",
    "awk",
    "cat",
    "echo",
    "ls",
    "mkdir",
    "mount",
    "umount",
    "stty",
    "sync",
    "poweroff",
    "reboot",
    "ps",
    "grep",
    "sleep",
    "taskset",
    "setpriv",
    "nc",
    "ip",
    "insmod",
    "dmesg",
    "timeout",
    "base64",
    "rmdir",
    "dd",
    "start-stop-daemon",
    "kill",
    "dirname",
    "rm",
    "sed",
    "pidof",
];

/// Debian's architecture name for `arch`.
fn debian_arch(arch: Arch) -> &'static str {
    match arch {
        Arch::Aarch64 => "arm64",
        Arch::Armv7 => "armhf",
    }
}

/// The static busybox for `arch` (`None`: skipped outside CI).
pub fn busybox(arch: Arch) -> Option<PathBuf> {
    let var = match arch {
        Arch::Aarch64 => "LATSCOPE_BUSYBOX_AARCH64",
        Arch::Armv7 => "LATSCOPE_BUSYBOX_ARMV7",
    };
    if let Some(p) = std::env::var_os(var) {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "{var}={} does not exist", p.display());
        return Some(p);
    }
    let p = cache_dir()
        .join("busybox")
        .join(debian_arch(arch))
        .join("bin/busybox");
    if p.is_file() {
        return Some(p);
    }
    unavailable(&format!(
        "no busybox for {arch:?} at {} (run `.ci/run setup` or set {var})",
        p.display()
    ))
}

/// Builds the image in `dir` from `busybox` and `latscope` (and rtla's
/// files from `rtla`, see [`rtla_root`]); returns the path of the
/// compressed initramfs.
pub fn build(
    busybox: &Path,
    latscope: &Path,
    rtla: Option<&Path>,
    dir: &Path,
) -> io::Result<PathBuf> {
    let root = dir.join("image");
    for d in [
        "bin",
        "sbin",
        "usr/bin",
        "dev",
        "proc",
        "sys",
        "tmp",
        "etc/init.d",
        "var/run",
        "var/log",
    ] {
        fs::create_dir_all(root.join(d))?;
    }
    fs::copy(busybox, root.join("bin/busybox"))?;
    for a in APPLETS {
        symlink("busybox", root.join("bin").join(a))?;
    }
    fs::copy(latscope, root.join("usr/bin/latscope"))?;
    if let Some(rtla) = rtla {
        add_rtla(rtla, &root)?;
    }
    fs::write(root.join("init"), INIT)?;
    fs::set_permissions(root.join("init"), fs::Permissions::from_mode(0o755))?;
    let script = root.join("etc/init.d/S95latscope");
    fs::write(&script, INIT_SCRIPT)?;
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755))?;
    let out = dir.join("image.cpio.gz");
    pack_initramfs(&root, &out)?;
    Ok(out)
}

/// Boots `arch`'s board with the busybox image (no rtla) and the kernel
/// command line's `args`, its console as `console`, the stream port a
/// socket: the board, and what the boot gave. The error names the tool or
/// the step that failed (for the benches and capture tools, which report
/// it and stop).
pub fn boot(
    arch: Arch,
    args: &str,
    console: Console,
    timeout: std::time::Duration,
) -> Result<(Board, Boot), String> {
    boot_with(arch, args, console, timeout, None)
}

/// [`boot`], with rtla's files from `rtla` in the image (see [`rtla_root`]).
pub fn boot_with(
    arch: Arch,
    args: &str,
    console: Console,
    timeout: std::time::Duration,
    rtla: Option<&Path>,
) -> Result<(Board, Boot), String> {
    let board = Board::find(arch).ok_or(format!("no {arch:?} board"))?;
    let bin = latscope_binary(arch).ok_or(format!("no {arch:?} latscope build"))?;
    let busybox = busybox(arch).ok_or("no busybox")?;
    let scratch = Scratch::try_new("image").map_err(|e| e.to_string())?;
    let initrd = build(&busybox, &bin, rtla, scratch.path()).map_err(|e| e.to_string())?;
    let boot = board
        .run(&Spec {
            initrd: &initrd,
            args,
            console,
            port: Port::Socket,
            timeout,
        })
        .map_err(|e| format!("boot: {e}"))?;
    Ok((board, boot))
}

/// Debian's rtla for arm64 and the libraries it needs, unpacked by
/// `.ci/run setup` (`$LATSCOPE_CACHE/rtla/arm64`; `LATSCOPE_RTLA_AARCH64`
/// names another), if all the image needs is there.
pub fn rtla_root() -> Option<PathBuf> {
    let p = std::env::var_os("LATSCOPE_RTLA_AARCH64")
        .map(PathBuf::from)
        .unwrap_or_else(|| cache_dir().join("rtla/arm64"));
    RTLA_FILES.iter().all(|f| p.join(f).is_file()).then_some(p)
}

/// The files of rtla the image carries: the program, libtracefs,
/// libtraceevent, libc, libgcc_s (glibc loads it for `pthread_exit`, which
/// the user-space threads of `timerlat -u` call) and the dynamic loader.
const RTLA_FILES: &[&str] = &[
    "usr/bin/rtla",
    "usr/lib/aarch64-linux-gnu/libtracefs.so.1",
    "usr/lib/aarch64-linux-gnu/libtraceevent.so.1",
    "lib/aarch64-linux-gnu/libc.so.6",
    "lib/aarch64-linux-gnu/libgcc_s.so.1",
    "lib/aarch64-linux-gnu/ld-linux-aarch64.so.1",
];

/// Copies rtla's files from the unpacked packages at `from` into `root`,
/// with the loader also at `/lib/ld-linux-aarch64.so.1`.
fn add_rtla(from: &Path, root: &Path) -> io::Result<()> {
    for f in RTLA_FILES {
        let to = root.join(f);
        if let Some(d) = to.parent() {
            fs::create_dir_all(d)?;
        }
        // `fs::copy` follows the packages' symlinks (libtracefs.so.1 ->
        // libtracefs.so.1.6.4).
        fs::copy(from.join(f), &to)?;
    }
    symlink(
        "aarch64-linux-gnu/ld-linux-aarch64.so.1",
        root.join("lib/ld-linux-aarch64.so.1"),
    )
}

/// What the init script reported on the console.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// The console's IRQ number (`/sys/class/tty/ttyAMA0/irq`).
    pub console_irq: Option<u32>,
    /// The CPUs that IRQ is delivered to, as the kernel lists them (`0`).
    pub console_irq_cpus: Option<String>,
    /// latscope's exit status.
    pub status: Option<i32>,
    /// Console IRQs during latscope's run.
    pub irqs: Option<u64>,
    /// The verdict line, from `PASS` or `FAIL` on.
    pub verdict: Option<String>,
}

impl Report {
    /// Reads the `image: ` lines of a console transcript.
    pub fn parse(console: &str) -> Report {
        let mut r = Report::default();
        for line in console.lines() {
            let Some(rest) = line.trim_end_matches('\r').split("image: ").nth(1) else {
                continue;
            };
            let words: Vec<&str> = rest.split_whitespace().collect();
            match words.as_slice() {
                ["console", "irq", n, "cpus", cpus] => {
                    r.console_irq = n.parse().ok();
                    r.console_irq_cpus = Some((*cpus).to_string());
                }
                ["stop", "status", s, "irqs", n] => {
                    r.status = s.parse().ok();
                    r.irqs = n.parse().ok();
                }
                ["verdict", ..] => r.verdict = rest.strip_prefix("verdict ").map(str::to_string),
                _ => {}
            }
        }
        r
    }

    /// True if the script's verdict is PASS.
    pub fn passed(&self) -> bool {
        self.verdict
            .as_deref()
            .is_some_and(|v| v.starts_with("PASS"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_reads_the_image_lines() {
        let console = "[    1.0] booting\r\nimage: console irq 13 cpus 0\nimage: start\n\
            # /dev/cpu_dma_latency set to 0us\nimage: stop status 0 irqs 9377\n\
            image: verdict PASS: latscope exited 0; no latscope trace instance left; tracefs not mounted\n";
        let r = Report::parse(console);
        assert_eq!(r.console_irq, Some(13));
        assert_eq!(r.console_irq_cpus.as_deref(), Some("0"));
        assert_eq!((r.status, r.irqs), (Some(0), Some(9377)));
        assert!(r.passed(), "{r:?}");
    }

    #[test]
    fn report_fails_without_a_verdict_or_on_fail() {
        assert!(!Report::parse("image: start\n").passed());
        let r = Report::parse("image: verdict FAIL: trace instances left: latscope-97;\n");
        assert!(!r.passed());
        assert_eq!(
            r.verdict.as_deref(),
            Some("FAIL: trace instances left: latscope-97;")
        );
    }
}
