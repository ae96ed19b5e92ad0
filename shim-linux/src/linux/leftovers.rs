//! What latscope processes that ended without cleaning up (SIGKILL, a
//! crash, a power cut of a container) left behind: their trace instances
//! `instances/latscope-PID`, their status files `/dev/shm/cyclictest<PID>`,
//! the idle states they limited (`--deepest-idle-state`, saved in
//! `/dev/shm/latscope-cpuidle<PID>`) and the global timerlat settings
//! they changed (`--timerlat`, saved in `/dev/shm/latscope-timerlat<PID>`). Every run removes them (writing the
//! idle states back) at start and says so in one line.
//!
//! A trace instance goes when its process is not a live latscope (see
//! [`remove_stale_instances`]); a status file when its process no longer
//! exists (rt-tests' cyclictest names its file the same way, and a dead
//! one's file is as stale). tracefs is never mounted for this: without a
//! mounted tracefs there are no instances.

use std::fs;
use std::path::Path;

use super::procfs::pid_after;
use super::tracefs::{find_tracefs, remove_stale_instances};
use super::{cpuidle, timerlat};

/// Where status files are.
const SHM: &str = "/dev/shm";

/// Prefix of a status file's name; the pid follows.
const STATUS_PREFIX: &str = "cyclictest";

/// Removes the leftovers of ended processes; returns the one line that
/// says what went, or `None` if there were none.
pub fn sweep() -> Option<String> {
    let mut removed: Vec<(u32, String)> = Vec::new();
    if let Some(root) = find_tracefs() {
        for (pid, name) in remove_stale_instances(&root) {
            removed.push((pid, format!("trace instance {name}")));
        }
    }
    for (pid, path) in remove_stale_status_files(Path::new(SHM)) {
        removed.push((pid, path));
    }
    removed.extend(cpuidle::sweep(Path::new(cpuidle::SYSFS), Path::new(SHM)));
    // after the instances: removing a killed run's instance stops its
    // timerlat tracer, and only then may the globals go back
    if let Some(root) = find_tracefs() {
        removed.extend(timerlat::sweep(&root, Path::new(SHM)));
    }
    line(&removed)
}

/// The line for `removed` (pid, what), or `None` if it is empty.
fn line(removed: &[(u32, String)]) -> Option<String> {
    if removed.is_empty() {
        return None;
    }
    let mut pids: Vec<u32> = Vec::new();
    for &(p, _) in removed {
        if !pids.contains(&p) {
            pids.push(p);
        }
    }
    let what: Vec<&str> = removed.iter().map(|(_, w)| w.as_str()).collect();
    let procs = if pids.len() == 1 {
        "an ended latscope process".to_string()
    } else {
        format!("{} ended latscope processes", pids.len())
    };
    Some(format!(
        "# removed what {procs} left behind: {}",
        what.join(", ")
    ))
}

/// Unlinks `dir/cyclictest<PID>` of every pid that is not ours and has no
/// `/proc/PID`; returns (pid, path) of each removed.
fn remove_stale_status_files(dir: &Path) -> Vec<(u32, String)> {
    let me = std::process::id();
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = pid_after(&entry.file_name(), STATUS_PREFIX) else {
            continue;
        };
        if pid == me || pid == 0 || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let path = entry.path();
        if fs::remove_file(&path).is_ok() {
            removed.push((pid, path.display().to_string()));
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_names_each_leftover_and_counts_processes() {
        assert_eq!(line(&[]), None);
        let one = line(&[
            (7, "trace instance latscope-7".into()),
            (7, "/dev/shm/cyclictest7".into()),
        ]);
        assert_eq!(
            one.as_deref(),
            Some(
                "# removed what an ended latscope process left behind: \
                 trace instance latscope-7, /dev/shm/cyclictest7"
            )
        );
        let two = line(&[(7, "a".into()), (9, "b".into())]).unwrap();
        assert!(
            two.starts_with("# removed what 2 ended latscope processes"),
            "{two}"
        );
    }

    #[test]
    fn status_files_of_live_processes_stay() {
        let dir = std::env::temp_dir().join(format!("latscope-leftovers-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        // pid 1 is alive; ours is ours; the largest pid cannot exist
        // (pid_max is at most 2^22); a name with more after the digits is
        // not a status file.
        let dead = 4_194_304 + 17;
        for n in [
            "cyclictest1".to_string(),
            format!("cyclictest{}", std::process::id()),
            format!("cyclictest{dead}"),
            format!("cyclictest{dead}.bak"),
            "cyclictest".to_string(),
        ] {
            fs::write(dir.join(n), "").unwrap();
        }
        let removed = remove_stale_status_files(&dir);
        assert_eq!(removed.len(), 1, "{removed:?}");
        assert_eq!(removed[0].0, dead);
        assert!(!dir.join(format!("cyclictest{dead}")).exists());
        assert!(dir.join("cyclictest1").exists());
        assert!(dir.join(format!("cyclictest{dead}.bak")).exists());
        let _ = fs::remove_dir_all(&dir);
    }
}
