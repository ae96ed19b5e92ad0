//! `--timerlat`: the kernel's timerlat tracer, driven from user space as
//! rtla's `-u` threads drive it, and the global settings it shares with
//! every other user.
//!
//! Only `current_tracer` is per trace instance. The files this run
//! changes are global, under tracefs' `osnoise/`: `cpus`,
//! `timerlat_period_us`, `stop_tracing_us`, `stop_tracing_total_us`, and
//! the `OSNOISE_WORKLOAD` option of `options` (off: no kernel threads;
//! the measuring threads are the workload). Before any of them changes,
//! their values are saved in `/dev/shm/latscope-timerlat<PID>`. The exit
//! discipline writes them back on every way out, after the measuring
//! threads closed their `timerlat_fd` and the instance is gone
//! ([`Globals::restore`]); the panic hook from that file
//! ([`restore_own`]); and the next start restores those of a process that
//! could not (SIGKILL, a crash), as one of its leftovers ([`sweep`]).
//!
//! Stopping the tracer while a thread holds its `timerlat_fd` makes the
//! kernel SIGKILL the holder's whole process: `tracing_on 0`,
//! `current_tracer nop`, removing the instance, or another tool's
//! `trace-cmd reset`. latscope itself stops it only after its threads have
//! closed their files.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::procfs::{latscope_alive, pid_after};
use super::tracefs::find_tracefs;
use crate::error::Error;

/// Where the saved values go: a tmpfs, gone with a reboot as the
/// settings are.
pub const SAVE_DIR: &str = "/dev/shm";

/// The saved values' file name; the pid follows.
const SAVE_PREFIX: &str = "latscope-timerlat";

/// The shortest period the kernel takes, µs.
pub const MIN_PERIOD_US: u64 = 100;

/// The longest period the kernel takes, µs.
pub const MAX_PERIOD_US: u64 = 1_000_000;

/// The global files a run sets, under `osnoise/`, in the order they are
/// written back.
const FILES: [&str; 4] = [
    "stop_tracing_us",
    "stop_tracing_total_us",
    "timerlat_period_us",
    "cpus",
];

/// The option a run turns off: the kernel's own timerlat threads.
const WORKLOAD: &str = "OSNOISE_WORKLOAD";

/// The global settings as they were before the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    /// Each of [`FILES`] and its value, trimmed.
    pub files: Vec<(String, String)>,
    /// `options` as it read: each option's token (`OSNOISE_WORKLOAD` or
    /// `NO_OSNOISE_WORKLOAD`, ...), `DEFAULTS` first while all are at
    /// their defaults; `None` on a kernel without [`WORKLOAD`].
    pub options: Option<String>,
}

/// The saved values' file of process `pid` in `dir`.
fn save_file(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{SAVE_PREFIX}{pid}"))
}

/// The lines of the saved values' file: `NAME=VALUE`, and `options=TOKEN`.
fn render(saved: &Saved) -> String {
    let mut s = String::new();
    for (name, value) in &saved.files {
        let _ = writeln!(s, "{name}={value}");
    }
    if let Some(o) = &saved.options {
        let _ = writeln!(s, "options={o}");
    }
    s
}

/// The saved values of a file's text; lines that do not read as one are
/// skipped.
fn parse(text: &str) -> Saved {
    let mut saved = Saved {
        files: Vec::new(),
        options: None,
    };
    for line in text.lines() {
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        if name == "options" {
            saved.options = has_workload(value).then(|| value.to_string());
        } else if FILES.contains(&name) {
            saved.files.push((name.to_string(), value.to_string()));
        }
    }
    saved
}

/// `osnoise/NAME` under the tracefs `root`.
fn osnoise(root: &Path, name: &str) -> PathBuf {
    root.join("osnoise").join(name)
}

/// `osnoise/NAME`'s text, in one `read(2)` of 4 KiB: the kernel refuses a
/// read of `cpus` smaller than its whole text (`EINVAL`).
fn read_setting(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut b = vec![0u8; 4096];
    let n = fs::File::open(path)?.read(&mut b)?;
    b.truncate(n);
    String::from_utf8(b).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Whether `options`' text has the workload option.
fn has_workload(options: &str) -> bool {
    options
        .split_whitespace()
        .any(|t| t.trim_start_matches("NO_") == WORKLOAD)
}

/// The tokens that write `options` back as it read: `DEFAULTS` (which
/// resets every option) if it was there, then each option's own token;
/// `NO_DEFAULTS` is refused by the kernel and says nothing the others do
/// not.
fn option_writes(options: &str) -> impl Iterator<Item = &str> {
    options.split_whitespace().filter(|t| *t != "NO_DEFAULTS")
}

/// Writes every saved value back; the files that could not be written,
/// as `osnoise/NAME: error`.
fn write_back(root: &Path, saved: &Saved) -> Vec<String> {
    let mut failed = Vec::new();
    let mut put = |name: &str, value: &str| {
        if let Err(e) = fs::write(osnoise(root, name), value) {
            failed.push(format!("osnoise/{name}: {e}"));
        }
    };
    for (name, value) in &saved.files {
        put(name, value);
    }
    if let Some(o) = &saved.options {
        for token in option_writes(o) {
            put("options", token);
        }
    }
    failed
}

/// Whether the kernel has what `--timerlat` needs on each of `cpus`: the
/// `timerlat` tracer and each CPU's `osnoise/per_cpu/cpuN/timerlat_fd`
/// (Linux 6.5 on).
///
/// # Errors
///
/// [`Error::Unavailable`] with one line naming what is missing.
pub fn check_kernel(root: &Path, cpus: &[usize]) -> Result<(), Error> {
    let tracers = fs::read_to_string(root.join("available_tracers")).unwrap_or_default();
    if !tracers.split_whitespace().any(|t| t == "timerlat") {
        return Err(Error::Unavailable(
            "--timerlat: this kernel has no timerlat tracer (CONFIG_TIMERLAT_TRACER)".into(),
        ));
    }
    if let Some(cpu) = cpus
        .iter()
        .find(|&&c| !osnoise(root, &format!("per_cpu/cpu{c}/timerlat_fd")).exists())
    {
        return Err(Error::Unavailable(format!(
            "--timerlat: this kernel has no osnoise/per_cpu/cpu{cpu}/timerlat_fd \
             (user-space timerlat threads came in Linux 6.5)"
        )));
    }
    Ok(())
}

/// Another user of the osnoise or timerlat tracer: the top-level buffer or
/// an instance other than this process's (`own`) whose `current_tracer`
/// is one of them, as `instances/NAME (timerlat)`.
pub fn other_user(root: &Path, own: &str) -> Option<String> {
    let busy = |dir: &Path| {
        let t = fs::read_to_string(dir.join("current_tracer")).ok()?;
        let t = t.trim();
        matches!(t, "osnoise" | "timerlat").then(|| t.to_string())
    };
    if let Some(t) = busy(root) {
        return Some(format!("the top-level buffer ({t})"));
    }
    let entries = fs::read_dir(root.join("instances")).ok()?;
    entries.flatten().find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        if name == own {
            return None;
        }
        busy(&e.path()).map(|t| format!("instances/{name} ({t})"))
    })
}

/// The global timerlat settings of a run, and how they were.
#[derive(Debug)]
pub struct Globals {
    root: PathBuf,
    file: PathBuf,
    saved: Saved,
}

impl Globals {
    /// Saves the global settings in `save_dir` for process `pid`, then
    /// sets them for `cpus` at `period_us`: the tracer's CPUs, its period,
    /// no stop on a latency, no kernel threads. A value that cannot be
    /// saved or a file that cannot be written end it with one line, every
    /// setting as it was.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`], or [`Error::Privilege`] when a write is
    /// refused.
    pub fn apply(
        root: &Path,
        save_dir: &Path,
        pid: u32,
        cpus: &[usize],
        period_us: u64,
    ) -> Result<Globals, Error> {
        let mut files = Vec::new();
        for name in FILES {
            let value = read_setting(&osnoise(root, name)).map_err(|e| {
                Error::Unavailable(format!("--timerlat: reading osnoise/{name}: {e}"))
            })?;
            files.push((name.to_string(), value.trim().to_string()));
        }
        let options = read_setting(&osnoise(root, "options")).unwrap_or_default();
        let options = options.trim();
        let saved = Saved {
            files,
            options: has_workload(options).then(|| options.to_string()),
        };
        let file = save_file(save_dir, pid);
        fs::write(&file, render(&saved)).map_err(|e| {
            Error::Unavailable(format!(
                "--timerlat: cannot save the global osnoise settings in {} \
                 (they are restored from there after a kill): {e}",
                file.display()
            ))
        })?;
        let globals = Globals {
            root: root.to_path_buf(),
            file,
            saved,
        };
        let cpu_list = cpus
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let mut writes = vec![
            ("stop_tracing_us", "0".to_string()),
            ("stop_tracing_total_us", "0".to_string()),
            ("timerlat_period_us", period_us.to_string()),
            ("cpus", cpu_list),
        ];
        if globals.saved.options.is_some() {
            writes.push(("options", format!("NO_{WORKLOAD}")));
        }
        for (name, value) in writes {
            if let Err(e) = fs::write(osnoise(root, name), &value) {
                let what = format!("--timerlat: writing {value} to osnoise/{name}: {e}");
                let _ = globals.restore();
                return Err(match e.kind() {
                    std::io::ErrorKind::PermissionDenied => {
                        Error::privilege(what, "run as root for --timerlat")
                    }
                    _ => Error::Unavailable(what),
                });
            }
        }
        Ok(globals)
    }

    /// Writes every setting back as it was and removes the saved values
    /// (kept if a file could not be written, for the next start to try
    /// again). The files that could not be written, in one line.
    pub fn restore(self) -> Result<(), String> {
        let failed = write_back(&self.root, &self.saved);
        if failed.is_empty() {
            let _ = fs::remove_file(&self.file);
            Ok(())
        } else {
            Err(format!(
                "restoring the global timerlat settings failed for {} (kept in {} for the next start)",
                failed.join(", "),
                self.file.display()
            ))
        }
    }
}

/// Restores the settings this process saved, from its file (the panic
/// hook's way: it holds no [`Globals`]).
pub fn restore_own() {
    let file = save_file(Path::new(SAVE_DIR), std::process::id());
    let Ok(text) = fs::read_to_string(&file) else {
        return;
    };
    if let Some(root) = find_tracefs() {
        if write_back(&root, &parse(&text)).is_empty() {
            let _ = fs::remove_file(&file);
        }
    }
}

/// Restores the settings saved by processes that are no longer a live
/// latscope, under the tracefs `root` from the files in `save_dir`;
/// returns (pid, what) of each, for the leftovers' line. Their trace
/// instances must be gone first (removing one stops its tracer).
pub fn sweep(root: &Path, save_dir: &Path) -> Vec<(u32, String)> {
    let me = std::process::id();
    let Ok(entries) = fs::read_dir(save_dir) else {
        return Vec::new();
    };
    let mut restored = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = pid_after(&entry.file_name(), SAVE_PREFIX) else {
            continue;
        };
        if pid == me || latscope_alive(pid) {
            continue;
        }
        let path = entry.path();
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        let failed = write_back(root, &parse(&text));
        if failed.is_empty() {
            let _ = fs::remove_file(&path);
            restored.push((pid, "its global timerlat settings (written back)".into()));
        } else {
            restored.push((
                pid,
                format!(
                    "not its global timerlat settings {} (kept in {})",
                    failed.join(", "),
                    path.display()
                ),
            ));
        }
    }
    restored
}

/// A live latscope other than `pid` whose timerlat settings are saved in
/// `save_dir`: one timerlat run at a time, since the settings are global.
pub fn running_beside(save_dir: &Path, pid: u32) -> Option<u32> {
    let entries = fs::read_dir(save_dir).ok()?;
    entries.flatten().find_map(|e| {
        let other = pid_after(&e.file_name(), SAVE_PREFIX)?;
        (other != pid && latscope_alive(other)).then_some(other)
    })
}

/// `open(osnoise/per_cpu/cpuN/timerlat_fd, O_RDONLY)`—from a thread pinned
/// to exactly CPU `cpu` (else `EPERM`); `EBUSY` if another thread holds
/// it. Each `read` of it then waits for the next period.
pub fn open_fd(root: &Path, cpu: usize) -> Result<OwnedFd, Errno> {
    rustix::fs::open(
        osnoise(root, &format!("per_cpu/cpu{cpu}/timerlat_fd")),
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tracefs-like directory with an `osnoise/` of the kernel's
    /// defaults.
    fn fake_root(dir: &Path) {
        let o = dir.join("osnoise");
        fs::create_dir_all(o.join("per_cpu/cpu0")).unwrap();
        fs::write(o.join("per_cpu/cpu0/timerlat_fd"), "").unwrap();
        fs::write(o.join("stop_tracing_us"), "0\n").unwrap();
        fs::write(o.join("stop_tracing_total_us"), "500\n").unwrap();
        fs::write(o.join("timerlat_period_us"), "1000\n").unwrap();
        fs::write(o.join("cpus"), "0-1\n").unwrap();
        fs::write(
            o.join("options"),
            "DEFAULTS OSNOISE_WORKLOAD NO_PANIC_ON_STOP\n",
        )
        .unwrap();
        fs::write(dir.join("available_tracers"), "timerlat osnoise nop\n").unwrap();
        fs::create_dir_all(dir.join("instances/latscope-7")).unwrap();
    }

    fn read(dir: &Path, name: &str) -> String {
        fs::read_to_string(dir.join("osnoise").join(name)).unwrap()
    }

    #[test]
    fn settings_are_saved_set_and_written_back() {
        let t = tempdir("set");
        fake_root(&t);
        let g = Globals::apply(&t, &t, 7, &[0, 1], 250).unwrap();
        assert_eq!(read(&t, "timerlat_period_us"), "250");
        assert_eq!(read(&t, "stop_tracing_total_us"), "0");
        assert_eq!(read(&t, "cpus"), "0,1");
        // a plain file takes the token itself; the kernel flips the option
        assert_eq!(read(&t, "options"), "NO_OSNOISE_WORKLOAD");
        let saved = fs::read_to_string(save_file(&t, 7)).unwrap();
        assert!(saved.contains("stop_tracing_total_us=500\n"), "{saved}");
        assert!(
            saved.contains("options=DEFAULTS OSNOISE_WORKLOAD NO_PANIC_ON_STOP\n"),
            "{saved}"
        );
        g.restore().unwrap();
        assert_eq!(read(&t, "timerlat_period_us"), "1000");
        assert_eq!(read(&t, "stop_tracing_total_us"), "500");
        assert_eq!(read(&t, "cpus"), "0-1");
        // a plain file keeps the last token written back
        assert_eq!(read(&t, "options"), "NO_PANIC_ON_STOP");
        assert!(!save_file(&t, 7).exists());
        let _ = fs::remove_dir_all(&t);
    }

    #[test]
    fn a_dead_process_settings_are_swept() {
        let t = tempdir("sweep");
        fake_root(&t);
        // pid 0 is never a live latscope
        let _g = Globals::apply(&t, &t, 0, &[0], 100).unwrap();
        assert_eq!(read(&t, "timerlat_period_us"), "100");
        let swept = sweep(&t, &t);
        assert_eq!(swept.len(), 1, "{swept:?}");
        assert_eq!(read(&t, "timerlat_period_us"), "1000");
        assert!(!save_file(&t, 0).exists());
        let _ = fs::remove_dir_all(&t);
    }

    #[test]
    fn the_kernel_check_and_other_users_are_named() {
        let t = tempdir("check");
        fake_root(&t);
        assert!(check_kernel(&t, &[0]).is_ok());
        let e = check_kernel(&t, &[1]).unwrap_err().to_string();
        assert!(e.contains("cpu1/timerlat_fd"), "{e}");
        fs::write(t.join("available_tracers"), "nop\n").unwrap();
        let e = check_kernel(&t, &[0]).unwrap_err().to_string();
        assert!(e.contains("no timerlat tracer"), "{e}");
        assert_eq!(other_user(&t, "latscope-7"), None);
        fs::write(t.join("instances/latscope-7/current_tracer"), "timerlat\n").unwrap();
        assert_eq!(other_user(&t, "latscope-7"), None);
        assert_eq!(
            other_user(&t, "latscope-8").as_deref(),
            Some("instances/latscope-7 (timerlat)")
        );
        fs::write(t.join("current_tracer"), "osnoise\n").unwrap();
        assert_eq!(
            other_user(&t, "latscope-7").as_deref(),
            Some("the top-level buffer (osnoise)")
        );
        let _ = fs::remove_dir_all(&t);
    }

    fn tempdir(what: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "latscope-timerlat-test-{what}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }
}
