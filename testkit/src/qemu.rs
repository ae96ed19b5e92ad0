//! Running ARM binaries under emulation: qemu-user for single programs, and
//! what the emulated boards boot (see the `boot` module): the static ARM
//! `latscope`, a Debian kernel and an initramfs.
//!
//! The tests that use this module need root-free but tool-heavy setup: the
//! static ARM `latscope` binary, `qemu-*`, `cpio`, `gzip` and a Debian kernel
//! (see `.ci/run`, which installs all of them). Outside CI a missing tool
//! skips the test with a message on stderr; with `CI=true` it fails the test.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// A missing tool or kernel: under CI (`CI=true`) the test fails naming
/// it (`.ci/run` installs it); elsewhere it is skipped. Returns `None`.
pub fn unavailable<T>(what: &str) -> Option<T> {
    crate::missing(what);
    None
}

/// Whether the emulated-board tests are switched off with
/// `LATSCOPE_BOARD_TESTS=0` (CI runs them in a stage of their own).
pub fn board_tests_disabled() -> bool {
    std::env::var("LATSCOPE_BOARD_TESTS").as_deref() == Ok("0")
}

/// Finds an executable on `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The ARM architectures latscope supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    Aarch64,
    Armv7,
}

impl Arch {
    pub fn triple(self) -> &'static str {
        match self {
            Arch::Aarch64 => "aarch64-unknown-linux-musl",
            Arch::Armv7 => "armv7-unknown-linux-gnueabihf",
        }
    }

    /// Suffix of the environment variables that override paths.
    fn env_suffix(self) -> &'static str {
        match self {
            Arch::Aarch64 => "AARCH64",
            Arch::Armv7 => "ARMV7",
        }
    }

    pub fn qemu_user(self) -> &'static str {
        match self {
            Arch::Aarch64 => "qemu-aarch64-static",
            Arch::Armv7 => "qemu-arm-static",
        }
    }

    pub fn qemu_system(self) -> &'static str {
        match self {
            Arch::Aarch64 => "qemu-system-aarch64",
            Arch::Armv7 => "qemu-system-arm",
        }
    }

    pub fn cpu(self) -> &'static str {
        match self {
            Arch::Aarch64 => "cortex-a53",
            Arch::Armv7 => "cortex-a15",
        }
    }

    /// Whether this board boots a PREEMPT_RT kernel: the aarch64 one does
    /// (the attribution runs need its IRQ threads), armv7 has none.
    pub fn preempt_rt(self) -> bool {
        match self {
            Arch::Aarch64 => true,
            Arch::Armv7 => false,
        }
    }
}

use crate::{target_dir, workspace_root};

/// The static release `latscope` binary for `arch`.
///
/// `LATSCOPE_BIN_AARCH64` / `LATSCOPE_BIN_ARMV7` name a prebuilt one (CI
/// builds them in its `arm-release` stage). Otherwise it is built here with
/// `cargo build --release --target ...` into a target directory of its own,
/// so that it never waits on the lock of the build that runs this test.
pub fn latscope_binary(arch: Arch) -> Option<PathBuf> {
    let var = format!("LATSCOPE_BIN_{}", arch.env_suffix());
    if let Some(p) = std::env::var_os(&var) {
        let p = PathBuf::from(p);
        assert!(
            is_executable(&p),
            "{var}={} is not an executable",
            p.display()
        );
        return Some(p);
    }
    if which(linker(arch)).is_none() {
        return unavailable(&format!("the cross linker {} is missing", linker(arch)));
    }
    let tdir = target_dir().join("cross-for-tests");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let status = Command::new(cargo)
        .current_dir(workspace_root())
        .args([
            "build",
            "--release",
            "-p",
            "latscope",
            "--target",
            arch.triple(),
        ])
        .env("CARGO_TARGET_DIR", &tdir)
        .status()
        .expect("run cargo build for the ARM binary");
    if !status.success() {
        // A missing rustup target shows up here too: that is a failure, not a skip.
        panic!(
            "cargo build --release -p latscope --target {} failed: {status}",
            arch.triple()
        );
    }
    Some(tdir.join(arch.triple()).join("release").join("latscope"))
}

fn linker(arch: Arch) -> &'static str {
    match arch {
        Arch::Aarch64 => "aarch64-linux-gnu-gcc",
        Arch::Armv7 => "arm-linux-gnueabihf-gcc",
    }
}

/// The cache `.ci/run setup` fills with kernels and busybox:
/// `$LATSCOPE_CACHE`, else `latscope` under `$XDG_CACHE_HOME` or
/// `~/.cache`.
pub fn cache_dir() -> PathBuf {
    if let Some(c) = std::env::var_os("LATSCOPE_CACHE") {
        return PathBuf::from(c);
    }
    match (std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME")) {
        (Some(c), _) => PathBuf::from(c).join("latscope"),
        (None, Some(h)) => PathBuf::from(h).join(".cache").join("latscope"),
        (None, None) => target_dir().join(".cache").join("latscope"),
    }
}

/// A board's kernel as `testkit/image/kernels` pins it: an exact Debian
/// package and version, which `.ci/run setup` unpacks into the kernel cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedKernel {
    /// `linux-image-6.12.95+deb12-rt-arm64`.
    pub package: String,
    /// Debian's name of the architecture (`arm64`, `armhf`).
    pub deb_arch: String,
    /// `6.12.95-1~bpo12+1`.
    pub version: String,
}

impl PinnedKernel {
    /// The release its kernel reports (`uname -r`): the package less
    /// `linux-image-`.
    pub fn release(&self) -> &str {
        self.package
            .strip_prefix("linux-image-")
            .unwrap_or(&self.package)
    }

    /// Where `.ci/run setup` unpacks it: `kernels/PACKAGE_VERSION` in the
    /// cache, so that another version is another directory.
    pub fn dir(&self) -> PathBuf {
        cache_dir()
            .join("kernels")
            .join(format!("{}_{}", self.package, self.version))
    }

    /// Its `vmlinuz` in [`PinnedKernel::dir`].
    pub fn vmlinuz(&self) -> PathBuf {
        self.dir()
            .join("boot")
            .join(format!("vmlinuz-{}", self.release()))
    }
}

/// The pins, as committed.
const KERNEL_PINS: &str = include_str!("../image/kernels");

/// The kernel `testkit/image/kernels` pins for `arch`.
pub fn pinned_kernel(arch: Arch) -> PinnedKernel {
    parse_pin(KERNEL_PINS, arch)
        .unwrap_or_else(|| panic!("testkit/image/kernels has no well-formed line for {arch:?}"))
}

fn parse_pin(pins: &str, arch: Arch) -> Option<PinnedKernel> {
    let board = match arch {
        Arch::Aarch64 => "aarch64",
        Arch::Armv7 => "armv7",
    };
    pins.lines().map(str::split_whitespace).find_map(|mut w| {
        match (w.next(), w.next(), w.next(), w.next(), w.next()) {
            (Some(b), Some(package), Some(deb_arch), Some(version), None) if b == board => {
                Some(PinnedKernel {
                    package: package.to_string(),
                    deb_arch: deb_arch.to_string(),
                    version: version.to_string(),
                })
            }
            _ => None,
        }
    })
}

/// The Debian kernel image for `arch`: for the RT board, a PREEMPT_RT one.
///
/// `LATSCOPE_KERNEL_AARCH64` / `LATSCOPE_KERNEL_ARMV7` name another one (a
/// developer's override: its release is then not checked against the
/// pin); otherwise it is the pinned kernel ([`pinned_kernel`]) in the
/// cache that `.ci/run setup` fills (by default under
/// `~/.cache/latscope`). A kernel whose `config-*` beside it says it is
/// not PREEMPT_RT is refused for the RT board before it boots; the
/// board's hello is checked after.
pub fn kernel(arch: Arch) -> Option<PathBuf> {
    let var = format!("LATSCOPE_KERNEL_{}", arch.env_suffix());
    let found = match std::env::var_os(&var) {
        Some(p) => {
            let p = PathBuf::from(p);
            assert!(p.is_file(), "{var}={} does not exist", p.display());
            p
        }
        None => {
            let pin = pinned_kernel(arch);
            let p = pin.vmlinuz();
            if !p.is_file() {
                return unavailable(&format!(
                    "the pinned kernel {}:{}={} for {arch:?} is not at {} \
                     (run `.ci/run setup` or set {var})",
                    pin.package,
                    pin.deb_arch,
                    pin.version,
                    p.display()
                ));
            }
            p
        }
    };
    if arch.preempt_rt() && config_says_rt(&found) == Some(false) {
        return unavailable(&format!(
            "the {arch:?} board needs a PREEMPT_RT kernel, and {} is not one \
             (its config has no CONFIG_PREEMPT_RT=y)",
            found.display()
        ));
    }
    Some(found)
}

/// The kernel release a board's hello must name: the pin's, unless
/// `LATSCOPE_KERNEL_<ARCH>` overrides the kernel.
pub fn expected_release(arch: Arch) -> Option<String> {
    let var = format!("LATSCOPE_KERNEL_{}", arch.env_suffix());
    std::env::var_os(var)
        .is_none()
        .then(|| pinned_kernel(arch).release().to_string())
}

/// Whether the Debian kernel config beside `vmlinuz-V` (`config-V`) turns
/// PREEMPT_RT on (`None`: there is no such file).
fn config_says_rt(vmlinuz: &Path) -> Option<bool> {
    let name = vmlinuz.file_name()?.to_str()?;
    let version = name.strip_prefix("vmlinuz-")?;
    let config = fs::read_to_string(vmlinuz.with_file_name(format!("config-{version}"))).ok()?;
    Some(config.lines().any(|l| l.trim() == "CONFIG_PREEMPT_RT=y"))
}

/// A child process that is killed and reaped when the guard is dropped, so
/// that no qemu outlives its test on any path (panic, timeout, early return).
pub struct ChildGuard {
    child: Option<Child>,
}

impl ChildGuard {
    pub fn new(child: Child) -> ChildGuard {
        ChildGuard { child: Some(child) }
    }

    pub fn child(&mut self) -> &mut Child {
        self.child.as_mut().expect("child present until drop")
    }

    /// Waits for the child to exit, up to `deadline`.
    pub fn wait_until(&mut self, deadline: Instant) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.child().try_wait()? {
                return Ok(status);
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "child still running",
                ));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            if let Ok(None) = c.try_wait() {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

/// Reads a pipe to a string on a thread of its own.
fn drain<R: Read + Send + 'static>(mut r: R) -> JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Builds a gzip-compressed newc initramfs whose `/init` is `init`.
pub fn make_initramfs(init: &Path, dir: &Path) -> io::Result<PathBuf> {
    let root = dir.join("initramfs");
    for d in ["dev", "proc", "sys", "tmp"] {
        fs::create_dir_all(root.join(d))?;
    }
    fs::copy(init, root.join("init"))?;
    // The kernel's built-in initramfs already has /dev/console; creating it
    // here as well needs root, so a failure is not an error.
    let _ = Command::new("mknod")
        .args(["-m", "600"])
        .arg(root.join("dev/console"))
        .args(["c", "5", "1"])
        .stderr(Stdio::null())
        .status();
    pack_initramfs(&root, &dir.join("initramfs.cpio.gz"))?;
    Ok(dir.join("initramfs.cpio.gz"))
}

/// Packs the tree at `root` into the gzip-compressed newc archive `out`,
/// every file owned by root.
pub fn pack_initramfs(root: &Path, out: &Path) -> io::Result<()> {
    for tool in ["cpio", "gzip"] {
        if which(tool).is_none() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{tool} missing"),
            ));
        }
    }
    let mut names = String::new();
    list_tree(root, root, &mut names)?;
    let mut cpio = Command::new("sh")
        .arg("-c")
        .arg("cpio --quiet -o -H newc --owner=0:0 | gzip -1")
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(fs::File::create(out)?)
        .spawn()?;
    cpio.stdin
        .take()
        .expect("piped stdin")
        .write_all(names.as_bytes())?;
    let st = cpio.wait()?;
    if !st.success() {
        return Err(io::Error::other(format!("cpio | gzip failed: {st}")));
    }
    Ok(())
}

/// Appends every path under `dir`, relative to `root`, one per line
/// (directories before their contents).
fn list_tree(root: &Path, dir: &Path, out: &mut String) -> io::Result<()> {
    let mut entries: Vec<_> = fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        let rel = p.strip_prefix(root).map_err(io::Error::other)?;
        out.push_str(&rel.to_string_lossy());
        out.push('\n');
        if e.file_type()?.is_dir() {
            list_tree(root, &p, out)?;
        }
    }
    Ok(())
}

/// Runs an ARM binary under qemu-user, with a time limit.
pub fn run_user(arch: Arch, bin: &Path, args: &[&str], timeout: Duration) -> io::Result<UserRun> {
    let qemu = which(arch.qemu_user())
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, arch.qemu_user()))?;
    let mut child = Command::new(qemu);
    child
        .arg(bin)
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut guard = ChildGuard::new(child.spawn()?);
    let out = drain(guard.child().stdout.take().expect("piped stdout"));
    let err = drain(guard.child().stderr.take().expect("piped stderr"));
    let status = guard.wait_until(start + timeout);
    drop(guard);
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let status = status.map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("{e}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"),
        )
    })?;
    Ok(UserRun {
        status,
        stdout,
        stderr,
        elapsed: start.elapsed(),
    })
}

/// The outcome of [`run_user`].
pub struct UserRun {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_pins_name_both_boards_exactly() {
        let rt = pinned_kernel(Arch::Aarch64);
        assert_eq!(rt.deb_arch, "arm64");
        // the RT board's kernel is rtla's (6.12.95, .ci/run's RTLA_PKGS)
        assert!(rt.release().starts_with("6.12.95") && rt.release().ends_with("-rt-arm64"));
        assert!(rt.vmlinuz().ends_with(format!(
            "kernels/{}_{}/boot/vmlinuz-{}",
            rt.package,
            rt.version,
            rt.release()
        )));
        let arm = pinned_kernel(Arch::Armv7);
        assert_eq!(arm.deb_arch, "armhf");
        assert!(arm.release().starts_with("6.1.0-"), "{}", arm.release());
    }

    #[test]
    fn a_pin_line_has_exactly_four_fields() {
        let pins = "# board package arch version\n\
                    aarch64 linux-image-x arm64 1-1 extra\n\
                    armv7 linux-image-y armhf 2-1\n";
        assert_eq!(parse_pin(pins, Arch::Aarch64), None);
        let arm = parse_pin(pins, Arch::Armv7).expect("the armv7 line");
        assert_eq!((arm.release(), arm.version.as_str()), ("y", "2-1"));
    }
}
