//! A running process as its users look at it from outside: its threads by
//! name, where they may run (`taskset -p`, as people check cyclictest's
//! placement), their scheduling policy (`chrt -p`), and waiting for
//! something to happen.

use crate::target::tool;

/// The thread ids of process `pid` whose name (`comm`) is `name`, in
/// creation order.
pub fn threads_named(pid: u32, name: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut tids: Vec<i32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|tid| {
            std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
                .is_ok_and(|c| c.trim() == name)
        })
        .collect();
    tids.sort_unstable();
    tids
}

/// How often thread `tid` of process `pid` gave up the CPU of its own
/// accord (`voluntary_ctxt_switches` in its status; `None`: it is gone). A
/// measuring thread sleeps once a cycle, so past its few set-up waits
/// this counts its cycles.
pub fn voluntary_switches(pid: u32, tid: i32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))?
        .trim()
        .parse()
        .ok()
}

/// The CPUs thread `tid` may run on, as `taskset -p` prints them.
pub fn taskset_cpus(tid: i32) -> Vec<usize> {
    let out = tool("taskset")
        .args(["-p", &tid.to_string()])
        .output()
        .expect("taskset runs");
    let text = String::from_utf8_lossy(&out.stdout);
    // "pid 123's current affinity mask: 3"
    let mask = text
        .rsplit(':')
        .next()
        .and_then(|m| u128::from_str_radix(m.trim(), 16).ok())
        .unwrap_or_else(|| panic!("taskset -p {tid}: {text:?}"));
    (0..128).filter(|c| mask & (1 << c) != 0).collect()
}

/// The policy name and priority of thread `tid`, as `chrt -p` prints them
/// (`("SCHED_FIFO", 80)`).
pub fn chrt(tid: i32) -> (String, u32) {
    let out = tool("chrt")
        .args(["-p", &tid.to_string()])
        .output()
        .expect("chrt runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |key: &str| {
        text.lines()
            .find(|l| l.contains(key))
            .and_then(|l| l.rsplit(':').next())
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| panic!("chrt -p {tid}: {text:?}"))
    };
    let policy = field("scheduling policy");
    let prio = field("scheduling priority").parse().unwrap_or(0);
    (policy, prio)
}

/// Remove the snapshot file `/dev/shm/cyclictest<PID>` of a killed
/// process: a target ended by SIGKILL cannot remove it, and a stale file
/// makes `get_cyclictest_snapshot -s` signal whatever process gets the PID
/// next. Nothing to do for a process that ended on its own.
pub fn forget_snapshot_file(pid: u32) {
    let _ = std::fs::remove_file(format!("/dev/shm/cyclictest{pid}"));
}
