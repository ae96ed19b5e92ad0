//! `--explain` wired end to end: spikes above the threshold arrive in the
//! stream with an attribution whose cause lines add up to the spike, and
//! the trace instance is gone after the run.

use std::path::Path;

use latscope_core::explain::Attribution;
use latscope_core::wire::{Body, Frame};
use latscope_testkit::disturb::UdpFlood;
use latscope_testkit::precondition::tracefs;
use latscope_testkit::target::{decode_all, serial, tool};
use latscope_testkit::{have, is_root, missing, require, this_target};

/// The binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_latscope");

/// The tracefs root, if this run can create instances (root, mounted);
/// otherwise the test is [`missing`] what it needs.
fn tracefs_root() -> Option<&'static Path> {
    if !is_root() {
        missing("trace instances need root");
        return None;
    }
    let root = tracefs();
    if root.is_none() {
        missing("tracefs is not mounted");
    }
    root
}

/// The CPUs the runs here measure on (0 and 1, where there are two).
fn measured_cpus() -> Vec<usize> {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (0..n.min(2)).collect()
}

/// The attributions a stream carried, in order.
fn attributions(frames: &[Frame]) -> Vec<Attribution> {
    frames
        .iter()
        .filter_map(|f| match &f.body {
            Body::Explain(a) => Some(a.clone()),
            _ => None,
        })
        .collect()
}

/// Runs 2 threads for 3 s with `--explain 15` and the extra `args`;
/// checks that spikes came, that they were explained from the trace, that
/// the explanations add up, and that the trace instance is gone
/// afterwards. Returns the attributions.
fn explained_run(root: &Path, args: &[&str]) -> Vec<Attribution> {
    let mut all = vec![
        "-t",
        "2",
        "-D",
        "3s",
        "-q",
        "--explain",
        "15",
        "--stream",
        "-",
    ];
    all.extend(args);
    // the spikes come from a loopback UDP flood on the measured CPUs
    let flood = UdpFlood::on(&measured_cpus());
    let out = this_target!().run(&all);
    drop(flood);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let frames = decode_all(&out.stdout);
    let explained = attributions(&frames);
    let spikes = frames
        .iter()
        .filter(|f| matches!(&f.body, Body::Spike(s) if s.flags.spike))
        .count();
    assert!(spikes > 0, "no sample above 15 us in 3 s");
    assert!(!explained.is_empty(), "{spikes} spikes, none explained");
    // Root and a mounted tracefs: every spike is explained from the trace,
    // never by the coarse /proc counts, and its cause lines add up to it.
    for a in &explained {
        assert!(a.latency_ns >= 15_000, "{a:?}");
        assert!(!a.coarse, "a coarse attribution with tracefs: {a:?}");
        assert!(!a.causes.is_empty(), "no cause line: {a:?}");
        let sum: u64 = a.causes.iter().map(|c| c.ns).sum();
        assert_eq!(sum, a.latency_ns, "cause lines add up: {a:?}");
    }
    let pid_instances: Vec<_> = std::fs::read_dir(root.join("instances"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("latscope-"))
        .collect();
    assert!(pid_instances.is_empty(), "left behind: {pid_instances:?}");
    explained
}

#[test]
fn explained_spikes_arrive_and_the_instance_is_removed() {
    let Some(root) = tracefs_root() else { return };
    let _g = serial();
    let explained = explained_run(root, &["-a", "0,1"]);
    assert!(explained.iter().all(|a| a.cpu <= 1), "{explained:?}");
}

#[test]
fn unpinned_threads_are_explained_on_the_cpu_they_woke_on() {
    let Some(root) = tracefs_root() else { return };
    let _g = serial();
    // no -a: the threads may run anywhere, so every CPU is traced
    let explained = explained_run(root, &[]);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let located = explained.iter().filter(|a| a.cpu < cpus).count();
    // Spikes while an earlier marker froze the trace cannot be located;
    // the others are.
    assert!(located > 0, "no spike located on a CPU: {explained:?}");
    // a spike not located is one untraced line, flagged partial
    for a in explained.iter().filter(|a| a.cpu >= cpus) {
        assert_eq!(a.cpu, u32::MAX, "{a:?}");
        assert!(a.partial, "{a:?}");
    }
}

/// Runs `latscope --explain` as root in a private mount namespace in which
/// tracefs (and debugfs) are unmounted, through `wrap` (e.g. `setpriv ...
/// `, or empty), then lists the namespace's tracefs mounts. Returns
/// latscope's stderr, its frames and the mount lines after the run.
fn run_without_tracefs(wrap: &str) -> (String, Vec<Frame>, String) {
    let script = format!(
        "umount -l /sys/kernel/tracing 2>/dev/null; umount -l /sys/kernel/debug 2>/dev/null; \
         grep -q ' tracefs ' /proc/mounts && echo 'tracefs still mounted' >&2 && exit 90; \
         {wrap} {BIN} -t 2 -a 0,1 -D 3s -q --explain 15 --report-interval 500ms --stream - || exit $?; \
         grep ' tracefs ' /proc/mounts >&2; true"
    );
    let flood = UdpFlood::on(&measured_cpus());
    let out = tool("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .output()
        .unwrap();
    drop(flood);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    let mounts = err
        .lines()
        .filter(|l| l.split(' ').nth(2) == Some("tracefs"))
        .collect::<Vec<_>>()
        .join("\n");
    (err, decode_all(&out.stdout), mounts)
}

/// Whether the stream's hello says latscope mounted tracefs.
fn hello_says_mounted(frames: &[Frame]) -> Option<bool> {
    frames.iter().find_map(|f| match &f.body {
        Body::Hello(h) => Some(h.config.tracefs_mounted),
        _ => None,
    })
}

#[test]
fn without_tracefs_it_is_mounted_and_left_in_place() {
    require!(is_root(), "needs a private mount namespace (root)");
    require!(have("unshare"), "unshare is not installed");
    let _g = serial();
    let (err, frames, mounts) = run_without_tracefs("");
    let explained = attributions(&frames);
    assert!(
        err.contains("tracefs was not mounted: mounted it at /sys/kernel/tracing"),
        "{err}"
    );
    assert_eq!(hello_says_mounted(&frames), Some(true));
    assert!(!explained.is_empty(), "no attribution in 3 s\n{err}");
    assert!(explained.iter().all(|a| !a.coarse), "{explained:?}");
    assert!(
        mounts.contains("/sys/kernel/tracing tracefs rw,nosuid,nodev,noexec"),
        "the mount is gone or differs: {mounts:?}"
    );
}

#[test]
fn without_the_privilege_to_mount_tracefs_attribution_is_coarse() {
    require!(is_root(), "needs a private mount namespace (root)");
    require!(have("unshare"), "unshare is not installed");
    require!(have("setpriv"), "setpriv is not installed");
    let _g = serial();
    // root, but without CAP_SYS_ADMIN: it cannot mount
    let (err, frames, mounts) = run_without_tracefs("setpriv --bounding-set=-sys_admin");
    let coarse = attributions(&frames);
    assert_eq!(hello_says_mounted(&frames), Some(false));
    assert!(
        err.contains("no privilege to mount tracefs at /sys/kernel/tracing"),
        "{err}"
    );
    assert!(!err.contains("not mounted"), "{err}");
    assert!(err.contains("coarse attribution"), "{err}");
    assert!(mounts.is_empty(), "{mounts}");
    assert!(!coarse.is_empty(), "no coarse attribution in 3 s");
    assert!(coarse.iter().all(|a| a.coarse && a.latency_ns >= 15_000));
}
