//! Reading `/proc` and `/sys`: per-thread fault counts and the facts about
//! the target system that go into the hello.

use latscope_core::wire::{bounded, ClockKind, Platform, TargetInfo, NS_CLOCK_HZ};
use rustix::fs::{Mode, OFlags};

/// `MemTotal` of `/proc/meminfo`, in KiB.
pub fn mem_total_kb() -> Option<u64> {
    read_text("/proc/meminfo")?
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()
}

/// Minor and major faults of one thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Faults {
    /// Minor faults (field 10 of `stat`).
    pub minflt: u64,
    /// Major faults (field 12 of `stat`).
    pub majflt: u64,
}

/// Parse the fault counts out of a `/proc/.../stat` line. The command name
/// (field 2) may hold spaces and parentheses, so fields are counted from the
/// last `)`.
pub fn parse_stat_faults(line: &str) -> Option<Faults> {
    let rest = &line[line.rfind(')')? + 1..];
    // rest starts at field 3 (state): field n is index n - 3.
    let mut it = rest.split_ascii_whitespace();
    let minflt = it.nth(10 - 3)?.parse().ok()?;
    let majflt = it.nth(12 - 10 - 1)?.parse().ok()?;
    Some(Faults { minflt, majflt })
}

/// Read a small file into `buf` without allocating; returns the text read.
pub fn read_into<'b>(path: &str, buf: &'b mut [u8]) -> Option<&'b str> {
    let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let mut n = 0;
    while n < buf.len() {
        match rustix::io::read(&fd, &mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return None,
        }
    }
    std::str::from_utf8(buf.get(..n)?).ok()
}

/// Faults of a thread from `path` (`/proc/self/task/TID/stat` or
/// `/proc/thread-self/stat`), without allocating.
pub fn thread_faults(path: &str) -> Option<Faults> {
    let mut buf = [0u8; 1024];
    parse_stat_faults(read_into(path, &mut buf)?)
}

/// A small text file, trimmed; `None` if it cannot be read.
pub fn read_text(path: &str) -> Option<String> {
    let mut buf = vec![0u8; 4096];
    read_into(path, &mut buf).map(|s| s.trim().to_string())
}

/// The preemption model named in a kernel version string.
pub fn preempt_model(version: &str) -> &'static str {
    if version.contains("PREEMPT_RT") {
        "PREEMPT_RT"
    } else if version.contains("PREEMPT_DYNAMIC") {
        "PREEMPT_DYNAMIC"
    } else if version.contains("PREEMPT") {
        "PREEMPT"
    } else {
        "none"
    }
}

/// Number of CPUs in a list like `0-3,5` (`/sys/devices/system/cpu/online`).
pub fn count_cpu_list(s: &str) -> u16 {
    let mut n: u32 = 0;
    for item in s.trim().split(',').filter(|i| !i.is_empty()) {
        match item.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    n += b.saturating_sub(a) + 1;
                }
            }
            None => n += 1,
        }
    }
    n.min(u16::MAX as u32) as u16
}

/// uname fields as strings.
pub struct Uname {
    /// sysname.
    pub sysname: String,
    /// nodename.
    pub nodename: String,
    /// release.
    pub release: String,
    /// version.
    pub version: String,
    /// machine.
    pub machine: String,
}

/// `uname(2)`.
pub fn uname() -> Uname {
    let u = rustix::system::uname();
    let s = |c: &std::ffi::CStr| c.to_string_lossy().into_owned();
    Uname {
        sysname: s(u.sysname()),
        nodename: s(u.nodename()),
        release: s(u.release()),
        version: s(u.version()),
        machine: s(u.machine()),
    }
}

/// Whether the kernel says it is PREEMPT_RT (`/sys/kernel/realtime` is 1).
pub fn is_realtime() -> bool {
    read_text("/sys/kernel/realtime").as_deref() == Some("1")
}

/// Where Linux names the hardware, in order of preference: the device
/// tree's model (ARM and RISC-V boards), then the DMI product name (PCs).
const MODEL_FILES: [&str; 3] = [
    "/proc/device-tree/model",
    "/sys/firmware/devicetree/base/model",
    "/sys/class/dmi/id/product_name",
];

/// The hardware's model as one of [`MODEL_FILES`] holds it: the text
/// without the device tree's terminating NUL and surrounding blanks;
/// `None` if nothing is left.
pub fn model_text(raw: &str) -> Option<&str> {
    let t = raw.trim_matches(|c: char| c == '\0' || c.is_whitespace());
    (!t.is_empty()).then_some(t)
}

/// The hardware's model ([`MODEL_FILES`]), or empty if none says.
pub fn machine_model() -> String {
    let mut buf = [0u8; 256];
    MODEL_FILES
        .iter()
        .find_map(|p| {
            read_into(p, &mut buf)
                .and_then(model_text)
                .map(str::to_string)
        })
        .unwrap_or_default()
}

/// The facts about this system that go into the hello, under the board
/// name `name`. `clock` is the clock the samples are measured with: a
/// nanosecond clock, of the resolution `clock_getres` gives it.
pub fn target_info(argv: &str, name: &str, clock: ClockKind) -> TargetInfo {
    let u = uname();
    let cpus = read_text("/sys/devices/system/cpu/online")
        .map(|s| count_cpu_list(&s))
        .unwrap_or(0);
    TargetInfo {
        hostname: bounded(&u.nodename),
        arch: bounded(&u.machine),
        kernel: bounded(&u.release),
        kernel_version: bounded(&u.version),
        preempt_rt: is_realtime(),
        preempt_model: bounded(preempt_model(&u.version)),
        cpus,
        cmdline: bounded(&read_text("/proc/cmdline").unwrap_or_default()),
        clocksource: bounded(
            &read_text("/sys/devices/system/clocksource/clocksource0/current_clocksource")
                .unwrap_or_default(),
        ),
        rt_runtime_us: read_text("/proc/sys/kernel/sched_rt_runtime_us")
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
        argv: bounded(argv),
        name: bounded(name),
        platform: Platform::Linux,
        model: bounded(&machine_model()),
        clock_hz: NS_CLOCK_HZ,
        clock_resolution_ns: u32::try_from(super::clock::LinuxClock::new(clock).getres_ns())
            .unwrap_or(0),
    }
}

/// `/proc/loadavg` whole, as cyclictest's header shows it (the three load
/// averages, runnable/total tasks and the last PID), read into `buf`
/// without allocating (empty if it cannot be read).
pub fn loadavg(buf: &mut [u8; 128]) -> &str {
    read_into("/proc/loadavg", buf).map_or("", str::trim_end)
}

/// The pid a file named `PREFIX<PID>` belongs to (`cyclictest4242`,
/// `latscope-cpuidle4242`): digits only after `prefix`, else `None`.
pub fn pid_after(name: &std::ffi::OsStr, prefix: &str) -> Option<u32> {
    name.to_str()
        .and_then(|n| n.strip_prefix(prefix))
        .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|p| p.parse().ok())
}

/// True if `pid` is a live latscope process (its comm starts with
/// `latscope`): what such a process left behind is still its own.
pub fn latscope_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.starts_with("latscope"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_lose_the_device_trees_nul_and_blanks() {
        assert_eq!(
            model_text("Raspberry Pi 4 Model B Rev 1.4\0"),
            Some("Raspberry Pi 4 Model B Rev 1.4")
        );
        assert_eq!(model_text("linux,dummy-virt\0"), Some("linux,dummy-virt"));
        assert_eq!(
            model_text("Standard PC (Q35 + ICH9, 2009)\n"),
            Some("Standard PC (Q35 + ICH9, 2009)")
        );
        assert_eq!(model_text("\0"), None);
        assert_eq!(model_text(" \n"), None);
    }

    #[test]
    fn stat_faults_from_real_shapes() {
        let line =
            "4242 (latscope-m0) S 1 4242 4242 0 -1 4194624 37 0 2 0 12 34 0 0 -2 0 3 0 100 0 0";
        assert_eq!(
            parse_stat_faults(line),
            Some(Faults {
                minflt: 37,
                majflt: 2
            })
        );
        // a command name with spaces and parentheses
        let line = "7 (a b) (c)) R 1 7 7 0 -1 0 5 0 9 0 1 1 0 0 20 0 1 0 1 0 0";
        assert_eq!(
            parse_stat_faults(line),
            Some(Faults {
                minflt: 5,
                majflt: 9
            })
        );
        assert_eq!(parse_stat_faults("garbage"), None);
        assert_eq!(parse_stat_faults("1 (x) S 1 2"), None);
        assert_eq!(parse_stat_faults("1 (x) S 1 2 3 4 5 6 z 0 q 0"), None);
    }

    #[test]
    fn own_stat_parses() {
        let f = thread_faults("/proc/self/stat").expect("readable");
        // qemu-user emulates /proc/self/stat with zero fault counts, so the
        // count is checked on the host build only (the ARM builds run there).
        if cfg!(target_arch = "x86_64") {
            assert!(f.minflt > 0, "a running process has taken minor faults");
        }
    }

    #[test]
    fn loadavg_has_five_fields() {
        let mut buf = [0u8; 128];
        let l = loadavg(&mut buf);
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f.len(), 5, "{l:?}");
        assert!(f[3].contains('/'), "runnable/total: {l:?}");
        assert!(f[4].parse::<u32>().is_ok(), "last PID: {l:?}");
    }

    #[test]
    fn cpu_lists_and_models() {
        assert_eq!(count_cpu_list("0-3,5\n"), 5);
        assert_eq!(count_cpu_list("0"), 1);
        assert_eq!(count_cpu_list(""), 0);
        assert_eq!(preempt_model("#1 SMP PREEMPT_RT Tue"), "PREEMPT_RT");
        assert_eq!(
            preempt_model("#1 SMP PREEMPT_DYNAMIC @0"),
            "PREEMPT_DYNAMIC"
        );
        assert_eq!(preempt_model("#1 SMP PREEMPT Tue"), "PREEMPT");
        assert_eq!(preempt_model("#1 SMP"), "none");
    }
}
