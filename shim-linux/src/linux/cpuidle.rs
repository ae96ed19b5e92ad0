//! `--deepest-idle-state N` (cyclictest 2.8): the measured CPUs enter no
//! idle state deeper than N, through sysfs'
//! `devices/system/cpu/cpuC/cpuidle/stateK/disable`. States are numbered
//! from the shallowest; N = -1 disables them all.
//!
//! Before any state is changed, every state's `disable` value of the
//! measured CPUs is saved in `/dev/shm/latscope-cpuidle<PID>`, one line
//! `CPU STATE DISABLE` each. The exit discipline writes them back on
//! every way out ([`IdleLimit::restore`]), the panic hook from that file
//! ([`restore_own`]), and the next start restores those of a process that
//! could not (SIGKILL, a crash), as one of its leftovers ([`sweep`]). A
//! run that cannot save them changes nothing.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use super::procfs::{latscope_alive, pid_after};
use crate::error::Error;

/// Where sysfs is mounted.
pub const SYSFS: &str = "/sys";

/// Where the saved values go: a tmpfs, gone with a reboot as the
/// settings are.
pub const SAVE_DIR: &str = "/dev/shm";

/// The saved values' file name; the pid follows.
const SAVE_PREFIX: &str = "latscope-cpuidle";

/// One idle state's `disable` value as it was before the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Saved {
    /// The CPU.
    pub cpu: usize,
    /// The state's number.
    pub state: usize,
    /// Whether it was disabled.
    pub disabled: bool,
}

/// `stateK` of `cpu` under the sysfs `root`.
fn state_dir(root: &Path, cpu: usize, state: usize) -> PathBuf {
    root.join(format!("devices/system/cpu/cpu{cpu}/cpuidle/state{state}"))
}

/// How many idle states `cpu` has (0: no cpuidle driver, or no such CPU).
pub fn state_count(root: &Path, cpu: usize) -> usize {
    (0..)
        .take_while(|&k| state_dir(root, cpu, k).join("disable").exists())
        .count()
}

/// The saved values' file of process `pid` in `dir`.
fn save_file(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{SAVE_PREFIX}{pid}"))
}

/// The lines of the saved values' file.
fn render(saved: &[Saved]) -> String {
    let mut s = String::new();
    for v in saved {
        let _ = writeln!(s, "{} {} {}", v.cpu, v.state, u8::from(v.disabled));
    }
    s
}

/// The saved values of a file's text; a line that does not read as one is
/// skipped (the file is written whole before any state changes, so only a
/// hand-edited one has such lines).
fn parse(text: &str) -> Vec<Saved> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let cpu = w.next()?.parse().ok()?;
            let state = w.next()?.parse().ok()?;
            let disabled = match w.next()? {
                "0" => false,
                "1" => true,
                _ => return None,
            };
            w.next().is_none().then_some(Saved {
                cpu,
                state,
                disabled,
            })
        })
        .collect()
}

/// Writes `disabled` to a state's `disable`.
fn write_disable(root: &Path, cpu: usize, state: usize, disabled: bool) -> std::io::Result<()> {
    let path = state_dir(root, cpu, state).join("disable");
    fs::write(path, if disabled { "1" } else { "0" })
}

/// Writes every saved value back; the states that could not be written,
/// as `cpuC/stateK: error`.
fn write_back(root: &Path, saved: &[Saved]) -> Vec<String> {
    saved
        .iter()
        .filter_map(|v| {
            write_disable(root, v.cpu, v.state, v.disabled)
                .err()
                .map(|e| format!("cpu{}/state{}: {e}", v.cpu, v.state))
        })
        .collect()
}

/// The CPUs of `saved`, as `0,1`.
fn cpus_of(saved: &[Saved]) -> String {
    let mut cpus: Vec<usize> = saved.iter().map(|v| v.cpu).collect();
    cpus.dedup();
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// A live latscope (by `alive`) other than `pid` that limits one of
/// `cpus`, from its saved values in `save_dir`: its pid and that CPU. (Two at once would
/// each write back what it found: the second, the first's limit.)
fn limited_by_another(
    save_dir: &Path,
    pid: u32,
    cpus: &[usize],
    alive: fn(u32) -> bool,
) -> Option<(u32, usize)> {
    let entries = fs::read_dir(save_dir).ok()?;
    entries.flatten().find_map(|entry| {
        let other = pid_after(&entry.file_name(), SAVE_PREFIX)?;
        if other == pid || !alive(other) {
            return None;
        }
        let text = fs::read_to_string(entry.path()).ok()?;
        let cpu = parse(&text)
            .iter()
            .map(|v| v.cpu)
            .find(|c| cpus.contains(c))?;
        Some((other, cpu))
    })
}

/// The idle states a run limited, and how they were.
#[derive(Debug)]
pub struct IdleLimit {
    root: PathBuf,
    file: PathBuf,
    saved: Vec<Saved>,
    /// How many states the run disabled (those already disabled not
    /// counted).
    pub disabled: usize,
}

impl IdleLimit {
    /// Disables every idle state deeper than `deepest` (-1: all) on each
    /// of `cpus`, under the sysfs `root`, after saving every state's value
    /// in `save_dir` for process `pid`. A CPU without idle states, values
    /// that cannot be saved, or a state that cannot be written end it
    /// with one line, every state as it was.
    pub fn apply(
        root: &Path,
        save_dir: &Path,
        pid: u32,
        cpus: &[usize],
        deepest: i32,
    ) -> Result<IdleLimit, Error> {
        Self::apply_beside(root, save_dir, pid, cpus, deepest, latscope_alive)
    }

    /// [`IdleLimit::apply`], with `alive` saying which pids are live
    /// latscope processes.
    fn apply_beside(
        root: &Path,
        save_dir: &Path,
        pid: u32,
        cpus: &[usize],
        deepest: i32,
        alive: fn(u32) -> bool,
    ) -> Result<IdleLimit, Error> {
        if let Some((other, cpu)) = limited_by_another(save_dir, pid, cpus, alive) {
            return Err(Error::Unavailable(format!(
                "--deepest-idle-state: latscope {other} limits CPU {cpu}'s idle states \
                 already (one such run at a time: each writes back what it found)"
            )));
        }
        let mut saved = Vec::new();
        for &cpu in cpus {
            let n = state_count(root, cpu);
            if n == 0 {
                return Err(Error::Unavailable(format!(
                    "--deepest-idle-state: CPU {cpu} has no idle states \
                     (no cpuidle driver: nothing to limit)"
                )));
            }
            for state in 0..n {
                let path = state_dir(root, cpu, state).join("disable");
                let text = fs::read_to_string(&path).map_err(|e| {
                    Error::Unavailable(format!(
                        "--deepest-idle-state: reading {}: {e}",
                        path.display()
                    ))
                })?;
                saved.push(Saved {
                    cpu,
                    state,
                    disabled: text.trim() != "0",
                });
            }
        }
        let file = save_file(save_dir, pid);
        fs::write(&file, render(&saved)).map_err(|e| {
            Error::Unavailable(format!(
                "--deepest-idle-state: cannot save the idle states' settings in {} \
                 (they are restored from there after a kill): {e}",
                file.display()
            ))
        })?;
        let mut limit = IdleLimit {
            root: root.to_path_buf(),
            file,
            saved,
            disabled: 0,
        };
        let first = usize::try_from(deepest.saturating_add(1)).unwrap_or(0);
        let deeper: Vec<Saved> = limit
            .saved
            .iter()
            .filter(|v| v.state >= first && !v.disabled)
            .copied()
            .collect();
        for v in deeper {
            if let Err(e) = write_disable(root, v.cpu, v.state, true) {
                let path = state_dir(root, v.cpu, v.state).join("disable");
                let what = format!("--deepest-idle-state: writing {}: {e}", path.display());
                let _ = limit.restore();
                return Err(match e.kind() {
                    std::io::ErrorKind::PermissionDenied => {
                        Error::privilege(what, "leave out --deepest-idle-state")
                    }
                    _ => Error::Unavailable(what),
                });
            }
            limit.disabled += 1;
        }
        Ok(limit)
    }

    /// The limited CPUs, as `0,1`.
    pub fn cpus(&self) -> String {
        cpus_of(&self.saved)
    }

    /// Writes every state back as it was and removes the saved values
    /// (kept if a state could not be written, for the next start to try
    /// again). The states that could not be written, in one line.
    pub fn restore(self) -> Result<(), String> {
        let failed = write_back(&self.root, &self.saved);
        if failed.is_empty() {
            let _ = fs::remove_file(&self.file);
            Ok(())
        } else {
            Err(format!(
                "restoring the CPUs' idle states failed for {} (kept in {} for the next start)",
                failed.join(", "),
                self.file.display()
            ))
        }
    }
}

/// Restores the idle states this process saved, from its file (the panic
/// hook's way: it holds no [`IdleLimit`]).
pub fn restore_own() {
    let file = save_file(Path::new(SAVE_DIR), std::process::id());
    if let Ok(text) = fs::read_to_string(&file) {
        if write_back(Path::new(SYSFS), &parse(&text)).is_empty() {
            let _ = fs::remove_file(&file);
        }
    }
}

/// Restores the idle states saved by processes that are no longer a live
/// latscope, under the sysfs `root` from the files in `save_dir`; returns
/// (pid, what) of each restored, for the leftovers' line.
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
        let saved = parse(&text);
        let failed = write_back(root, &saved);
        if failed.is_empty() {
            let _ = fs::remove_file(&path);
            restored.push((
                pid,
                format!(
                    "its limit on the idle states of CPUs {} (written back)",
                    cpus_of(&saved)
                ),
            ));
        } else {
            restored.push((
                pid,
                format!(
                    "not its limit on the idle states of {} (kept in {})",
                    failed.join(", "),
                    path.display()
                ),
            ));
        }
    }
    restored
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sysfs of `states[c]` idle states per CPU, each `disable` as given.
    struct FakeSysfs {
        dir: PathBuf,
    }

    impl FakeSysfs {
        fn new(name: &str, states: &[&[&str]]) -> FakeSysfs {
            let dir = std::env::temp_dir()
                .join(format!("latscope-cpuidle-{}-{name}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            for (cpu, values) in states.iter().enumerate() {
                for (k, v) in values.iter().enumerate() {
                    let d = state_dir(&dir.join("sys"), cpu, k);
                    fs::create_dir_all(&d).unwrap();
                    fs::write(d.join("disable"), format!("{v}\n")).unwrap();
                }
            }
            fs::create_dir_all(dir.join("shm")).unwrap();
            FakeSysfs { dir }
        }
        fn root(&self) -> PathBuf {
            self.dir.join("sys")
        }
        fn shm(&self) -> PathBuf {
            self.dir.join("shm")
        }
        fn values(&self, cpu: usize) -> Vec<String> {
            (0..state_count(&self.root(), cpu))
                .map(|k| {
                    let p = state_dir(&self.root(), cpu, k).join("disable");
                    fs::read_to_string(p).unwrap().trim().to_string()
                })
                .collect()
        }
    }

    fn s2(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    impl Drop for FakeSysfs {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }

    #[test]
    fn deeper_states_are_disabled_on_the_measured_cpus_and_restored() {
        let s = FakeSysfs::new("limit", &[&["0", "0", "1", "0"], &["0", "0", "0", "0"]]);
        let limit = IdleLimit::apply(&s.root(), &s.shm(), 42, &[0], 0).unwrap();
        // state 2 was disabled already: only 1 and 3 are the run's
        assert_eq!(limit.disabled, 2);
        assert_eq!(s.values(0), ["0", "1", "1", "1"]);
        assert_eq!(s.values(1), ["0", "0", "0", "0"], "CPU 1 is not measured");
        let file = s.shm().join("latscope-cpuidle42");
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            "0 0 0\n0 1 0\n0 2 1\n0 3 0\n"
        );
        assert_eq!(limit.cpus(), "0");
        limit.restore().unwrap();
        assert_eq!(s.values(0), ["0", "0", "1", "0"]);
        assert!(!file.exists(), "the saved values go once written back");
    }

    #[test]
    fn minus_one_disables_every_state() {
        let s = FakeSysfs::new("all", &[&["0", "0"], &["0", "0"]]);
        let limit = IdleLimit::apply(&s.root(), &s.shm(), 7, &[0, 1], -1).unwrap();
        assert_eq!(limit.disabled, 4);
        assert_eq!(
            (s.values(0), s.values(1)),
            (s2(&["1", "1"]), s2(&["1", "1"]))
        );
        assert_eq!(limit.cpus(), "0,1");
        limit.restore().unwrap();
        assert_eq!(
            (s.values(0), s.values(1)),
            (s2(&["0", "0"]), s2(&["0", "0"]))
        );
    }

    #[test]
    fn a_cpu_without_idle_states_is_refused_in_one_line_and_nothing_changes() {
        let s = FakeSysfs::new("none", &[&["0", "0"]]);
        let e = IdleLimit::apply(&s.root(), &s.shm(), 7, &[0, 1], 0).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("CPU 1 has no idle states"), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");
        assert_eq!(s.values(0), ["0", "0"]);
        assert!(
            fs::read_dir(s.shm()).unwrap().next().is_none(),
            "nothing saved"
        );
    }

    #[test]
    fn values_that_cannot_be_saved_change_nothing() {
        let s = FakeSysfs::new("nosave", &[&["0", "0"]]);
        let missing = s.dir.join("no-such-dir");
        let e = IdleLimit::apply(&s.root(), &missing, 7, &[0], 0).unwrap_err();
        assert!(e.to_string().contains("cannot save"), "{e}");
        assert_eq!(s.values(0), ["0", "0"]);
    }

    #[test]
    fn a_killed_runs_states_are_restored_at_the_next_start() {
        let s = FakeSysfs::new("sweep", &[&["0", "0", "0"]]);
        // a pid that cannot exist (pid_max is at most 2^22)
        let dead = 4_194_304 + 5;
        let limit = IdleLimit::apply(&s.root(), &s.shm(), dead, &[0], 0).unwrap();
        assert_eq!(s.values(0), ["0", "1", "1"]);
        // SIGKILL: no restore; the file stays
        std::mem::forget(limit);
        // our own file is kept
        let mine = save_file(&s.shm(), std::process::id());
        fs::write(&mine, "0 1 0\n").unwrap();
        let restored = sweep(&s.root(), &s.shm());
        assert_eq!(restored.len(), 1, "{restored:?}");
        assert_eq!(restored[0].0, dead);
        assert_eq!(
            restored[0].1,
            "its limit on the idle states of CPUs 0 (written back)"
        );
        assert_eq!(s.values(0), ["0", "0", "0"]);
        assert!(!save_file(&s.shm(), dead).exists());
        assert!(mine.exists(), "our own file is not a leftover");
    }

    #[test]
    fn a_cpu_another_live_latscope_limits_is_refused() {
        let s = FakeSysfs::new("another", &[&["0", "0"], &["0", "0"]]);
        // pid 9 is a live latscope here, the other run
        let alive: fn(u32) -> bool = |pid| pid == 9;
        let other = 9;
        fs::write(save_file(&s.shm(), other), "1 0 0\n1 1 0\n").unwrap();
        let e = IdleLimit::apply_beside(&s.root(), &s.shm(), 7, &[0, 1], 0, alive).unwrap_err();
        assert!(
            e.to_string().contains(&format!(
                "latscope {other} limits CPU 1's idle states already"
            )),
            "{e}"
        );
        assert_eq!(
            (s.values(0), s.values(1)),
            (s2(&["0", "0"]), s2(&["0", "0"]))
        );
        // a CPU it does not limit is free; a dead latscope's limit is a
        // leftover, not a refusal
        let limit = IdleLimit::apply_beside(&s.root(), &s.shm(), 7, &[0], 0, alive).unwrap();
        assert_eq!(s.values(0), ["0", "1"]);
        limit.restore().unwrap();
        let nobody: fn(u32) -> bool = |_| false;
        let limit = IdleLimit::apply_beside(&s.root(), &s.shm(), 7, &[0, 1], 0, nobody).unwrap();
        assert_eq!(
            (s.values(0), s.values(1)),
            (s2(&["0", "1"]), s2(&["0", "1"]))
        );
        limit.restore().unwrap();
    }

    #[test]
    fn saved_values_round_trip_and_odd_lines_are_skipped() {
        let v = [
            Saved {
                cpu: 3,
                state: 0,
                disabled: false,
            },
            Saved {
                cpu: 3,
                state: 4,
                disabled: true,
            },
        ];
        assert_eq!(parse(&render(&v)), v);
        assert_eq!(parse("1 2\n1 2 3\nx 1 0\n1 2 0 9\n2 1 1\n").len(), 1);
    }
}
