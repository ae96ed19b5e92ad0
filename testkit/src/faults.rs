//! The fault harness: a target and a recorder in network namespaces of the
//! test's own, joined by a veth pair, and the faults a lab network, a
//! host and its disk have: packets dropped at random and connections reset
//! (nftables), a slow line (`tbf`), the link set down, the recorder stopped
//! or killed, a recordings directory that fills up. Everything is real:
//! kernels, processes, sockets; nothing is mocked.
//!
//! A namespace pair is named after the test process and a counter, and
//! removed on drop (so also when an assertion fails); pairs left by a
//! killed test process are removed by the next one. The addresses are
//! from 198.18.0.0/15 (set aside for network testing) and exist only
//! inside the pair.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::host::{bins, Reaper};
use crate::precondition::{have, is_root, missing};

/// Prefix of every namespace the harness makes.
const PREFIX: &str = "lsfault";

/// Whether this machine can run the harness (root, `ip`, `nft`, `tc`);
/// if not, [`missing`] says what lacks (under `CI=true` the test fails).
pub fn available() -> bool {
    if !is_root() {
        missing("root (network namespaces, nftables, tmpfs mounts)");
        return false;
    }
    for tool in ["ip", "nft", "tc"] {
        if !have(tool) {
            missing(tool);
            return false;
        }
    }
    true
}

/// Run `cmd` to its end; it must succeed.
#[track_caller]
pub fn sh<S: AsRef<OsStr>>(cmd: &str, args: impl IntoIterator<Item = S>) {
    let mut c = Command::new(cmd);
    c.args(args);
    let out = c.output().unwrap_or_else(|e| panic!("run {cmd}: {e}"));
    assert!(
        out.status.success(),
        "{c:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn sh_words(words: &str) {
    let mut w = words.split_whitespace();
    let cmd = w.next().expect("a command");
    sh(cmd, w);
}

/// Two network namespaces, the target's and the recorder's, joined by a
/// veth pair: the target at [`Pair::target_ip`], the recorder at
/// [`Pair::recorder_ip`].
pub struct Pair {
    /// The target's namespace.
    pub target_ns: String,
    /// The recorder's namespace.
    pub recorder_ns: String,
    /// The target's address.
    pub target_ip: String,
    /// The recorder's address.
    pub recorder_ip: String,
}

impl Pair {
    /// A new pair, the link up.
    pub fn new() -> Pair {
        static N: AtomicU64 = AtomicU64::new(0);
        remove_stale();
        let pid = std::process::id();
        let n = N.fetch_add(1, Ordering::Relaxed);
        let base = format!("{PREFIX}-{pid}-{n}");
        let p = Pair {
            target_ns: format!("{base}-t"),
            recorder_ns: format!("{base}-r"),
            target_ip: format!("198.18.{}.1", n % 250),
            recorder_ip: format!("198.18.{}.2", n % 250),
        };
        sh("ip", ["netns", "add", &p.target_ns]);
        sh("ip", ["netns", "add", &p.recorder_ns]);
        sh_words(&format!(
            "ip link add vt{pid}x{n} netns {} type veth peer name vr{pid}x{n} netns {}",
            p.target_ns, p.recorder_ns
        ));
        for (ns, dev, ip) in [
            (&p.target_ns, format!("vt{pid}x{n}"), &p.target_ip),
            (&p.recorder_ns, format!("vr{pid}x{n}"), &p.recorder_ip),
        ] {
            p.exec_words(ns, &format!("ip link set dev {dev} name veth0"));
            p.exec_words(ns, &format!("ip addr add {ip}/24 dev veth0"));
            p.exec_words(ns, "ip link set dev veth0 up");
            p.exec_words(ns, "ip link set dev lo up");
        }
        p
    }

    fn exec_words(&self, ns: &str, words: &str) {
        sh(
            "ip",
            ["netns", "exec", ns]
                .into_iter()
                .map(str::to_string)
                .chain(words.split_whitespace().map(str::to_string)),
        );
    }

    /// A command run inside namespace `ns`.
    pub fn command(&self, ns: &str, program: &Path) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns]).arg(program);
        c
    }

    /// Run the words of `cmd` in the recorder's namespace.
    pub fn in_recorder(&self, cmd: &str) {
        self.exec_words(&self.recorder_ns.clone(), cmd);
    }

    /// Run the words of `cmd` in the target's namespace.
    pub fn in_target(&self, cmd: &str) {
        self.exec_words(&self.target_ns.clone(), cmd);
    }

    /// Load an nftables ruleset (`nft -f -`) into namespace `ns`.
    pub fn nft(&self, ns: &str, rules: &str) {
        use std::io::Write;
        let mut c = Command::new("ip")
            .args(["netns", "exec", ns, "nft", "-f", "-"])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run nft");
        c.stdin
            .take()
            .expect("stdin")
            .write_all(rules.as_bytes())
            .expect("write rules");
        let out = c.wait_with_output().expect("nft");
        assert!(
            out.status.success(),
            "nft {rules}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Remove the harness's nftables table from namespace `ns`.
    pub fn nft_flush(&self, ns: &str) {
        let _ = Command::new("ip")
            .args(["netns", "exec", ns, "nft", "delete", "table", "inet", "lsf"])
            .stderr(Stdio::null())
            .status();
    }

    /// The packet counter of the rule with `comment` in namespace `ns`'s
    /// table: how often the fault struck.
    pub fn nft_hits(&self, ns: &str, comment: &str) -> u64 {
        let out = Command::new("ip")
            .args(["netns", "exec", ns, "nft", "list", "table", "inet", "lsf"])
            .output()
            .expect("nft list");
        let text = String::from_utf8_lossy(&out.stdout);
        text.lines()
            .filter(|l| l.contains(&format!("comment \"{comment}\"")))
            .filter_map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                let i = w.iter().position(|x| *x == "packets")?;
                w.get(i + 1)?.parse::<u64>().ok()
            })
            .sum()
    }

    /// Set the recorder's end of the link down or up.
    pub fn link(&self, up: bool) {
        let state = if up { "up" } else { "down" };
        self.in_recorder(&format!("ip link set dev veth0 {state}"));
    }
}

impl Default for Pair {
    fn default() -> Self {
        Pair::new()
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for ns in [&self.target_ns, &self.recorder_ns] {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Remove the namespaces of harness processes that no longer run.
fn remove_stale() {
    let Ok(rd) = fs::read_dir("/run/netns") else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(&format!("{PREFIX}-")) else {
            continue;
        };
        let pid = rest.split('-').next().unwrap_or("");
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = Command::new("ip")
                .args(["netns", "del", &name])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// A tmpfs of `kib` KiB mounted on a directory of its own, unmounted on
/// drop.
pub struct SmallDisk {
    /// The mount point.
    pub dir: PathBuf,
}

impl SmallDisk {
    /// Mount it under `parent` (after unmounting those that test
    /// processes no longer running left behind).
    pub fn mount(parent: &Path, kib: u64) -> SmallDisk {
        unmount_stale();
        let dir = parent.join("disk");
        fs::create_dir_all(&dir).expect("mount point");
        sh(
            "mount",
            [
                OsStr::new("-t"),
                OsStr::new("tmpfs"),
                OsStr::new("-o"),
                OsStr::new(&format!("size={kib}k")),
                OsStr::new("lsfault"),
                dir.as_os_str(),
            ],
        );
        SmallDisk { dir }
    }

    /// Fill the disk with a file (the writes that fail with ENOSPC end
    /// it); its path.
    pub fn fill(&self) -> PathBuf {
        use std::io::Write;
        let p = self.dir.join("filler");
        let mut f = fs::File::create(&p).expect("filler");
        let chunk = vec![0x55u8; 4096];
        while f.write_all(&chunk).is_ok() {}
        // Byte by byte to the last page.
        while f.write_all(&chunk[..1]).is_ok() {}
        let _ = f.sync_all();
        p
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(&self.dir)
            .stderr(Stdio::null())
            .status();
    }
}

/// Unmount the harness's tmpfs mounts (source `lsfault`, under a scratch
/// directory `...-PID-N/disk`) whose test process is gone.
fn unmount_stale() {
    let Ok(mounts) = fs::read_to_string("/proc/self/mounts") else {
        return;
    };
    for l in mounts.lines() {
        let mut w = l.split_whitespace();
        let (Some("lsfault"), Some(at)) = (w.next(), w.next()) else {
            continue;
        };
        let scratch = at.strip_suffix("/disk").unwrap_or(at);
        let pid = scratch.rsplit('-').nth(1).unwrap_or("");
        if !pid.is_empty() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = Command::new("umount").args(["-l", at]).status();
        }
    }
}

/// Descriptors process `pid` holds.
pub fn fds(pid: u32) -> usize {
    fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Resident memory of process `pid`, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// The frames a target says it never delivered (`latscope: stream: N
/// frame(s) never delivered`), 0 if it says nothing.
pub fn target_lost(stderr: &str) -> u64 {
    stderr
        .lines()
        .find_map(|l| {
            l.split_once("stream: ")
                .and_then(|(_, r)| r.split_once(" frame(s) never delivered"))
                .and_then(|(n, _)| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The frames a target sent over TCP that were not acknowledged by the
/// end (`latscope: stream: N frame(s) sent but not acknowledged`), 0 if it
/// says nothing.
pub fn target_unacked(stderr: &str) -> u64 {
    stderr
        .lines()
        .find_map(|l| {
            l.split_once("stream: ")
                .and_then(|(_, r)| r.split_once(" frame(s) sent but not acknowledged"))
                .and_then(|(n, _)| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The target over TCP to `addr`: [`crate::host::target_args`] for
/// `secs` seconds, its JSON to `json`, started in namespace `ns` of `pair`
/// (or here), its stderr kept.
pub fn target_to(pair: Option<&Pair>, addr: &str, secs: u64, json: &Path) -> Reaper {
    let bin = bins().latscope;
    let mut c = match pair {
        Some(p) => p.command(&p.target_ns, &bin),
        None => Command::new(&bin),
    };
    c.args(crate::host::target_args(&secs.to_string(), json))
        .arg(format!("--stream=tcp:{addr}"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    Reaper::new(c.spawn().expect("run latscope"))
}

/// The exit status a `report --format json` document calls for: 1 when
/// the report says a run is incomplete (each run's `complete` field, or,
/// where it has none, its `exact_at_end`), else 0.
pub fn verdict(doc: &serde_json::Value) -> i32 {
    let complete = doc["runs"].as_array().is_some_and(|r| {
        r.iter()
            .all(|r| match r.get("complete").and_then(|c| c.as_bool()) {
                Some(c) => c,
                None => r["exact_at_end"] == true,
            })
    });
    i32::from(!complete)
}

/// The frames a recording lacks in truth: its sequence numbers run from 0
/// to the last one recorded, so every number missing below it is a frame
/// lost (those after the last one recorded cannot be seen here).
pub fn truth_lost(recording: &Path) -> u64 {
    let bytes = fs::read(recording).unwrap_or_default();
    let (frames, _) = crate::host::decode_frames(&bytes);
    let seqs: std::collections::BTreeSet<u32> = frames.iter().map(|f| f.seq).collect();
    seqs.last()
        .map_or(0, |&last| u64::from(last) + 1 - seqs.len() as u64)
}
