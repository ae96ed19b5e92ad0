//! Helpers for the end-to-end tests that run `latscope` on this machine and
//! stream into `latscope-host`: building both binaries, running the target,
//! reading its `--json`, a pty pair with a pacing (and optionally noisy)
//! relay, and comparing the host's figures with the target's.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::Value;

use latscope_core::wire::{encode, Decoder, Frame, LinkStats, MAX_FRAME};

/// Paths of the two programs under test, built for this machine.
#[derive(Debug, Clone)]
pub struct Bins {
    /// The target program.
    pub latscope: PathBuf,
    /// The host tool.
    pub host: PathBuf,
}

use crate::{target_dir, workspace_root};

/// The target program built with the `proof` feature, once per test
/// process: the proof scripts' hidden options (`--ballast-mib`,
/// `--no-exit-demote`, `--self-check-probe`), which the shipped binary
/// refuses. Release code without LTO, in a target directory of its own.
/// `LATSCOPE_PROOF_BIN` names a prebuilt one (CI's release stage builds
/// it).
pub fn proof_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("LATSCOPE_PROOF_BIN") {
            return PathBuf::from(p);
        }
        build_for_tests(
            "proof-for-tests",
            &["-p", "latscope", "--features", "proof"],
        )
        .join("latscope")
    })
    .clone()
}

/// `cargo build --release ARGS` without LTO, into `SUBDIR` of the target
/// directory (so the build never waits on the lock of the build running
/// the tests); the directory of the binaries. Release code without LTO:
/// these tests check behaviour, not the last percent of speed, and a
/// fat-LTO link of the host tool costs minutes on a small machine.
fn build_for_tests(subdir: &str, args: &[&str]) -> PathBuf {
    let dir = target_dir().join(subdir);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let status = Command::new(cargo)
        .args(["build", "--release"])
        .args(args)
        .args(["--config", "profile.release.lto=false"])
        .args(["--config", "profile.release.codegen-units=16"])
        .current_dir(workspace_root())
        .env("CARGO_TARGET_DIR", &dir)
        .status()
        .expect("run cargo build");
    assert!(status.success(), "cargo build --release {args:?} failed");
    dir.join("release")
}

/// Build `latscope` and `latscope-host` (release) once per test process,
/// into a target directory of their own so the build never waits on the
/// lock of the build running the tests. `LATSCOPE_HOST_BIN` and
/// `LATSCOPE_NATIVE_BIN` name prebuilt binaries instead.
pub fn bins() -> Bins {
    static BINS: OnceLock<Bins> = OnceLock::new();
    BINS.get_or_init(|| {
        if let (Some(l), Some(h)) = (
            std::env::var_os("LATSCOPE_NATIVE_BIN"),
            std::env::var_os("LATSCOPE_HOST_BIN"),
        ) {
            return Bins {
                latscope: PathBuf::from(l),
                host: PathBuf::from(h),
            };
        }
        let dir = build_for_tests("host-for-tests", &["-p", "latscope", "-p", "latscope-host"]);
        Bins {
            latscope: dir.join("latscope"),
            host: dir.join("latscope-host"),
        }
    })
    .clone()
}

/// Kills its child on drop (a failed assertion never leaves one behind).
pub struct Reaper(pub Option<Child>);

impl Reaper {
    /// Guard `c`.
    pub fn new(c: Child) -> Reaper {
        Reaper(Some(c))
    }

    /// The child.
    pub fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("child")
    }

    /// Wait for the child to exit within `timeout`; kill it after that.
    pub fn wait(&mut self, timeout: Duration) -> Output {
        let mut c = self.0.take().expect("child");
        let deadline = Instant::now() + timeout;
        loop {
            match c.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
                _ => {
                    let _ = c.kill();
                    crate::procs::forget_snapshot_file(c.id());
                    let out = c.wait_with_output().expect("wait");
                    panic!(
                        "timed out after {timeout:?}; stderr: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            }
        }
        c.wait_with_output().expect("wait")
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
            crate::procs::forget_snapshot_file(c.id());
        }
    }
}

/// The common target arguments: 2 threads on CPUs 0 and 1, 1 ms, no
/// distance, histogram text range 1000 µs, `--best-effort` so the test
/// also runs without privileges, quiet.
pub fn target_args(duration: &str, json: &Path) -> Vec<String> {
    [
        "-t",
        "2",
        "-a",
        "0,1",
        "-i",
        "1000",
        "-d",
        "0",
        "-h",
        "1000",
        "-D",
        duration,
        "-q",
        "--best-effort",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("--json={}", json.display())])
    .collect()
}

/// Run the target with `args` and `--stream=REC` to its end; it must
/// succeed. The recording's bytes.
pub fn record_file<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>, rec: &Path) -> Vec<u8> {
    let st = Command::new(bins().latscope)
        .args(args)
        .arg(format!("--stream={}", rec.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run latscope");
    assert!(st.success(), "latscope {st}");
    fs::read(rec).unwrap_or_else(|e| panic!("read {}: {e}", rec.display()))
}

/// Spawn the target with [`target_args`] and `--stream=STREAM`, its
/// standard output to null and its standard error kept.
pub fn spawn_target(duration: &str, json: &Path, stream: &str) -> Reaper {
    Reaper::new(
        Command::new(bins().latscope)
            .args(target_args(duration, json))
            .arg(format!("--stream={stream}"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run latscope"),
    )
}

/// `127.0.0.1:PORT` with a port that was free a moment ago: for a host
/// that must listen where a restarted one listened before.
pub fn free_local_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    format!(
        "127.0.0.1:{}",
        l.local_addr().expect("local address").port()
    )
}

/// Start `latscope-host record -q --exit-after 1 --listen LISTEN --out-dir
/// OUT` (creating `out`) and wait until it listens.
pub fn listening_host(listen: &str, out: &Path) -> Reaper {
    try_listening_host(listen, out)
        .unwrap_or_else(|s| panic!("latscope-host ended before it listened on {listen}: {s}"))
}

/// [`listening_host`] on a port of its own, and its `ADDR:PORT`: a port
/// picked free beforehand ([`free_local_addr`]) can be handed to another
/// test's socket before the host binds it, so a host that ended without
/// listening starts again on a new one, up to five times. For a test that
/// restarts its host on the same address, the first start.
pub fn listening_host_anywhere(out: &Path) -> (Reaper, String) {
    listening_host_first_of((0..5).map(|_| free_local_addr()), out)
}

/// A listening host on the first of `addrs` it can listen on, and that
/// address.
fn listening_host_first_of(
    addrs: impl IntoIterator<Item = String>,
    out: &Path,
) -> (Reaper, String) {
    let mut tried = Vec::new();
    for listen in addrs {
        match try_listening_host(&listen, out) {
            Ok(h) => return (h, listen),
            Err(s) => eprintln!("the host could not listen on {listen} ({s}): the next address"),
        }
        tried.push(listen);
    }
    panic!("latscope-host could not listen on any of {tried:?}");
}

/// [`listening_host`], or how the host ended when it ended before it
/// listened.
fn try_listening_host(listen: &str, out: &Path) -> Result<Reaper, ExitStatus> {
    fs::create_dir_all(out).expect("out dir");
    let port = port_of(listen);
    try_recorder(
        Command::new(bins().host)
            .args(["record", "-q", "--exit-after", "1", "--listen", listen])
            .arg("--out-dir")
            .arg(out),
        "the host listening",
        // its own socket: another process's on the port does not count
        |pid| crate::wait::listens_on(pid, port),
    )
}

/// The port of `ADDR:PORT`.
///
/// # Panics
///
/// When `addr` has no port.
pub fn port_of(addr: &str) -> u16 {
    addr.rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{addr:?} is not ADDR:PORT"))
}

/// Start `latscope-host record -q` on the serial line `tty` at 115200
/// baud, recording to `rec`, and wait until it has the line open.
pub fn serial_host(tty: &Path, rec: &Path) -> Reaper {
    recorder(
        Command::new(bins().host)
            .args(["record", "-q", "--baud", "115200", "--serial"])
            .arg(tty)
            .arg("-o")
            .arg(rec),
        "the host opening the line",
        |pid| crate::wait::has_open(pid, tty),
    )
}

/// Spawn a recording host (stdout to null, stderr kept for failure
/// messages) and wait until `ready(pid)`: it has opened its input.
fn recorder(cmd: &mut Command, what: &str, ready: impl Fn(u32) -> bool) -> Reaper {
    try_recorder(cmd, what, ready)
        .unwrap_or_else(|s| panic!("latscope-host ended before it was ready: {s}"))
}

/// [`recorder`], or how the host ended when it ended before it was ready.
fn try_recorder(
    cmd: &mut Command,
    what: &str,
    ready: impl Fn(u32) -> bool,
) -> Result<Reaper, ExitStatus> {
    let mut h = Reaper::new(
        cmd.stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run latscope-host"),
    );
    let pid = h.child().id();
    let ended = crate::wait::until(Duration::from_secs(10), what, || {
        if let Ok(Some(s)) = h.child().try_wait() {
            return Some(Some(s));
        }
        ready(pid).then_some(None)
    });
    match ended {
        Some(s) => Err(s),
        None => Ok(h),
    }
}

/// The recordings (`.lsr` files) in `dir`, sorted; none when there is no
/// `dir`.
pub fn recordings(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "lsr"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Wait until a recording in `dir` holds report 2 of a run: a target is
/// connected and streaming.
pub fn wait_streaming(dir: &Path) {
    crate::wait::until(
        Duration::from_secs(15),
        "a target streaming report 2",
        || {
            recordings(dir)
                .iter()
                .filter_map(|r| fs::read(r).ok())
                .any(|b| {
                    crate::wait::frames_of(&b).iter().any(
                        |f| matches!(f.body, latscope_core::wire::Body::Stats(s) if s.epoch >= 2),
                    )
                })
                .then_some(())
        },
    );
}

/// The one recording in `dir`.
pub fn only_recording(dir: &Path) -> PathBuf {
    let mut p = recordings(dir);
    assert_eq!(p.len(), 1, "{}: {p:?}", dir.display());
    p.remove(0)
}

/// The one recording in `dir` is from a host killed mid-run: it decodes,
/// without a CRC error, and the host calls its run incomplete (status 1).
pub fn assert_cut_recording(dir: &Path) {
    let p = only_recording(dir);
    let (doc, code, _) = host_report_json(&p);
    assert_eq!(
        code,
        1,
        "{}: a cut recording is an incomplete run",
        p.display()
    );
    assert!(doc["link"]["frames"].as_u64().unwrap() > 0);
    assert_eq!(doc["link"]["crc_errors"], 0);
}

/// Read a JSON file.
pub fn read_json(p: &Path) -> Value {
    let text = fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}\n{text}", p.display()))
}

/// Run `latscope-host` with `args` to completion.
pub fn host(args: &[&str]) -> Output {
    Command::new(bins().host)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run latscope-host")
}

/// `latscope-host report --format json FILE`: the document and exit status.
pub fn host_report_json(file: &Path) -> (Value, i32, String) {
    let out = host(&["report", "--format", "json", &file.display().to_string()]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "report of {} is not JSON ({e}); stderr: {stderr}",
            file.display()
        )
    });
    (v, out.status.code().unwrap_or(-1), stderr)
}

/// The first run of a `report --format json` document.
pub fn first_run(doc: &Value) -> &Value {
    &doc["runs"][0]
}

/// Assert that the host's figures for `run` equal the target's own
/// `--json` exactly: per thread cycles, count, min, max, the histogram
/// rows below the text range, and the quantiles.
pub fn assert_matches_target(run: &Value, target: &Value) {
    assert_eq!(
        run["exact_at_end"],
        Value::Bool(true),
        "host not exact: {run}"
    );
    let threads = run["threads"].as_array().expect("threads");
    let tt = target["thread"].as_object().expect("target threads");
    assert_eq!(threads.len(), tt.len(), "thread count");
    for (i, h) in threads.iter().enumerate() {
        let t = &tt[&i.to_string()];
        for (hk, tk) in [
            ("cycles", "cycles"),
            ("count", "count"),
            ("min_ns", "min_ns"),
            ("max_ns", "max_ns"),
            ("missed", "missed"),
            ("minflt", "minflt"),
            ("majflt", "majflt"),
        ] {
            assert_eq!(
                h[hk], t[tk],
                "thread {i} {hk}: host {} target {}",
                h[hk], t[tk]
            );
        }
        // Histogram rows 0..hist_us (1 µs each).
        let mut host_rows = std::collections::BTreeMap::new();
        for b in h["buckets"].as_array().expect("buckets") {
            let lo = b["lower_us"].as_u64().expect("lower");
            if lo < 1000 {
                host_rows.insert(lo.to_string(), b["count"].as_u64().expect("count"));
            }
        }
        let target_rows: std::collections::BTreeMap<String, u64> = t["histogram"]
            .as_object()
            .expect("target histogram")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().expect("count")))
            .collect();
        assert_eq!(host_rows, target_rows, "thread {i} histogram");
        // Quantiles.
        for q in h["quantiles"].as_array().expect("quantiles") {
            let name = q[0].as_str().expect("name");
            assert_eq!(
                q[1], t["quantiles_ns"][name],
                "thread {i} {name}: host {} target {}",
                q[1], t["quantiles_ns"][name]
            );
        }
    }
}

/// fcntl(F_SETFL): reads of `file` return `WouldBlock` instead of waiting,
/// so a relay's reader can stop.
pub fn nonblocking(file: &fs::File) -> io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(file)?;
    rustix::fs::fcntl_setfl(file, flags | rustix::fs::OFlags::NONBLOCK)?;
    Ok(())
}

/// A pseudo-terminal pair: the master side and the path of the slave.
pub struct Pty {
    /// The master.
    pub master: fs::File,
    /// `/dev/pts/N`.
    pub slave_path: PathBuf,
    _slave: OwnedFd,
}

impl Pty {
    /// Open a new pair, the slave in raw mode (and held open so the master
    /// never sees a hangup between users).
    pub fn open() -> io::Result<Pty> {
        use rustix::fs::OFlags;
        use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
        // Close-on-exec: a child must not hold the master open, or closing
        // it here would not hang up the line.
        let m = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
        grantpt(&m)?;
        unlockpt(&m)?;
        let name = ptsname(&m, Vec::new())?;
        let slave_path = PathBuf::from(name.to_string_lossy().into_owned());
        let slave = rustix::fs::open(
            &slave_path,
            OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        let mut t = rustix::termios::tcgetattr(&slave)?;
        t.make_raw();
        rustix::termios::tcsetattr(&slave, rustix::termios::OptionalActions::Now, &t)?;
        Ok(Pty {
            master: fs::File::from(m),
            slave_path,
            _slave: slave,
        })
    }
}

/// What the relay did.
#[derive(Debug, Default)]
pub struct RelayStats {
    /// Bytes passed on.
    pub bytes: AtomicU64,
    /// Bytes with flipped bits.
    pub flipped: AtomicU64,
    /// Bytes dropped.
    pub dropped: AtomicU64,
}

/// Decode every good frame of a byte stream; the link statistics tell what
/// was rejected.
pub fn decode_frames(bytes: &[u8]) -> (Vec<Frame>, LinkStats) {
    let mut d = Decoder::<MAX_FRAME>::new();
    let out = d.frames(bytes).filter_map(Result::ok).collect();
    (out, *d.stats())
}

/// Encode `frames` as a stream, giving protocol version `v` to those from
/// index `from` on.
pub fn encode_frames(frames: &[Frame], v: u8, from: usize) -> Vec<u8> {
    let mut buf = vec![0u8; MAX_FRAME];
    let mut out = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        let mut f = f.clone();
        if i >= from {
            f.version = v;
        }
        let n = encode(&f, &mut buf).expect("encode a decoded frame");
        out.extend_from_slice(&buf[..n]);
    }
    out
}

/// A xorshift64 generator seeded through splitmix64: xorshift from a small
/// seed starts with small numbers, which would hit the first bytes of a
/// noisy line every time.
pub fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut x = {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) | 1
    };
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// A relay from one pty master to another at `bytes_per_s`, flipping a
/// random bit of a byte with probability `flip` and dropping a byte with
/// probability `drop` (both per byte).
pub struct Relay {
    stop: Arc<AtomicBool>,
    /// Counters.
    pub stats: Arc<RelayStats>,
    handle: Option<JoinHandle<()>>,
}

impl Relay {
    /// Start relaying `from` (read) to `to` (write).
    pub fn start(
        mut from: fs::File,
        mut to: fs::File,
        bytes_per_s: u64,
        flip: f64,
        drop: f64,
        seed: u64,
    ) -> Relay {
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(RelayStats::default());
        let (s2, st2) = (Arc::clone(&stop), Arc::clone(&stats));
        // Reads must not block forever, so the relay can stop.
        if let Err(e) = nonblocking(&from) {
            panic!("relay: fcntl(O_NONBLOCK) of its input: {e}");
        }
        let handle = thread::spawn(move || {
            let mut rnd = rng(seed);
            let flip_t = (flip * u64::MAX as f64) as u64;
            let drop_t = (drop * u64::MAX as f64) as u64;
            let start = Instant::now();
            let mut sent: u64 = 0;
            let mut buf = [0u8; 256];
            while !s2.load(Ordering::Relaxed) {
                let n = match from.read(&mut buf) {
                    Ok(0) => {
                        thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        thread::sleep(Duration::from_millis(2));
                        continue;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    // EIO: the writer closed its side for a moment.
                    Err(_) => {
                        thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                };
                for &b in &buf[..n] {
                    if rnd() < drop_t {
                        st2.dropped.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    let mut b = b;
                    let r = rnd();
                    if r < flip_t {
                        b ^= 1 << ((r >> 40) % 8);
                        st2.flipped.fetch_add(1, Ordering::Relaxed);
                    }
                    // Pace: byte k leaves no earlier than k / rate seconds.
                    sent += 1;
                    let due = Duration::from_nanos(sent * 1_000_000_000 / bytes_per_s);
                    let now = start.elapsed();
                    if due > now {
                        thread::sleep(due - now);
                    }
                    if to.write_all(&[b]).is_err() {
                        return;
                    }
                    st2.bytes.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        Relay {
            stop,
            stats,
            handle: Some(handle),
        }
    }

    /// Stop the relay.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Read a child's stderr in the background, line by line, and hand each
/// line to a channel.
pub fn stderr_lines(child: &mut Child) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let err = child.stderr.take().expect("stderr piped");
    thread::spawn(move || {
        use std::io::BufRead;
        for line in io::BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    rx
}

/// Wait for a stderr line containing `needle`; returns the text after it.
pub fn wait_for_line(
    rx: &std::sync::mpsc::Receiver<String>,
    needle: &str,
    timeout: Duration,
) -> String {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) => {
                if let Some(i) = l.find(needle) {
                    return l[i + needle.len()..].to_string();
                }
            }
            Err(_) => panic!("no line with {needle:?} within {timeout:?}"),
        }
    }
}

/// An HTTP GET with a plain socket: (status line, body).
pub fn http_get(addr: &str, path: &str) -> io::Result<(String, String)> {
    let mut s = std::net::TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut resp = String::new();
    s.read_to_string(&mut resp)?;
    let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
    Ok((
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A port another socket holds: the host ends without listening
    /// there, and the next address is taken.
    #[test]
    fn a_host_that_cannot_listen_starts_again_on_the_next_address() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port to hold");
        let busy = taken.local_addr().expect("its address").to_string();
        let dir = crate::Scratch::new("listening-host");
        let (mut h, listen) =
            listening_host_first_of([busy.clone(), free_local_addr()], dir.path());
        assert_ne!(listen, busy);
        assert!(crate::wait::listens_on(h.child().id(), port_of(&listen)));
        drop(taken);
    }
}
