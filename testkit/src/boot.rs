//! Booting an emulated board: `qemu-system-* -M virt` with a Debian kernel
//! and an initramfs, its two PL011 UARTs wired to this test.
//!
//! - The console (`ttyAMA0`) goes to qemu's stdout, or to a TCP connection
//!   through which the test can also flood the console's receive side: a
//!   real interrupt load on the board, on another IRQ than the stream's.
//! - The second UART (`ttyAMA1`, latscope's stream) goes to a TCP
//!   connection the test reads with arrival times, or to a pseudo-terminal
//!   (`-serial pty`) that `latscope-host record --serial` reads like a USB
//!   serial adapter, writing the spikes' evidence the stream carries
//!   beside its recording.
//!
//! Every connection is made before the guest runs, so no byte is lost: qemu
//! connects to the test's listeners at start-up, and with a pty it starts
//! paused until the host has opened the device.

use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::qemu::{kernel, make_initramfs, unavailable, which, Arch, ChildGuard};
use crate::Scratch;

/// The part of a boot's limit that is not the work it holds: the kernel's
/// boot to `/init`, the image's own steps and power-off. Those take 5 to
/// 15 s under emulation on an idle 2-core host; this is a safety net four
/// times over that, for a loaded host, not a guess.
pub const BOOT_ALLOWANCE: Duration = Duration::from_secs(60);

/// How many times its nominal length each piece of a boot's work may take
/// before the boot counts as hung. A guest's clock keeps the host's time
/// under TCG, so a `-D 5s` run takes 5 s and then its exit; three times
/// that is far above it.
pub const WORK_MARGIN: u32 = 3;

/// The fixed part of each piece of work (a program's start, its set-up of
/// tracefs, its exit and analysis under emulation): 20 s, several times
/// the 2 to 5 s they take.
pub const PER_RUN_ALLOWANCE: Duration = Duration::from_secs(20);

/// The limit of one boot, from starting qemu to its exit, that holds
/// `runs` pieces of work of `each` nominal length (latscope's `-D`,
/// rtla's `-d`): [`BOOT_ALLOWANCE`] plus, for each run, [`WORK_MARGIN`]
/// times its length and [`PER_RUN_ALLOWANCE`]. The limit follows from
/// the work, so a boot that holds more gets more; a boot that ends within
/// it says how long it took against it ([`Boot::limit_line`]).
pub fn boot_limit(work: &[(u32, Duration)]) -> Duration {
    work.iter().fold(BOOT_ALLOWANCE, |sum, &(runs, each)| {
        sum + (each * WORK_MARGIN + PER_RUN_ALLOWANCE) * runs
    })
}

/// The console line after which the image's init starts latscope (and the
/// flood may begin), and the one after which latscope has exited.
pub const START_LINE: &str = "image: start";
/// See [`START_LINE`].
pub const STOP_LINE: &str = "image: stop";

/// Where the guest's console (`ttyAMA0`) goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Console {
    /// qemu's stdout.
    Stdio,
    /// A TCP connection to the test. With `flood`, the test writes into the
    /// console's receive side, as fast as the board takes it, from the
    /// [`START_LINE`] to the [`STOP_LINE`] the guest prints.
    Socket { flood: bool },
}

/// Where the guest's second UART (`ttyAMA1`, the stream) goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Port {
    /// A TCP connection to the test, read with arrival times.
    Socket,
    /// A pseudo-terminal that `host record --serial /dev/pts/N --baud
    /// BAUD` reads (`host` is the `latscope-host` binary, `baud` the rate
    /// latscope's `--stream serial:...:BAUD` gives); needs
    /// [`Console::Socket`].
    Pty { host: PathBuf, baud: u32 },
}

/// One boot.
#[derive(Clone, Debug)]
pub struct Spec<'a> {
    /// The gzip-compressed initramfs.
    pub initrd: &'a Path,
    /// Arguments for `/init` (after `--` on the kernel command line).
    pub args: &'a str,
    pub console: Console,
    pub port: Port,
    pub timeout: Duration,
}

/// An emulated board: `qemu-system-* -M virt` with a Debian kernel.
pub struct Board {
    pub arch: Arch,
    pub qemu: PathBuf,
    pub kernel: PathBuf,
    pub smp: u32,
    pub mem_mib: u32,
}

/// What one boot produced.
pub struct Boot {
    /// Everything the guest wrote to its console (ttyAMA0), plus qemu's stderr.
    pub console: String,
    /// The bytes the guest wrote to its second serial port (ttyAMA1).
    pub stream: Vec<u8>,
    /// From starting qemu to the end of the first complete frame
    /// (non-zero bytes followed by a 0x00 delimiter; socket port only).
    pub first_frame: Option<Duration>,
    /// Every read from the stream port: when it returned (since qemu
    /// started) and how many bytes it brought (socket port only).
    pub arrivals: Vec<(Duration, usize)>,
    /// Bytes written into the console's receive side.
    pub flood_bytes: u64,
    /// The recording host's stderr (pty port only).
    pub host_log: String,
    /// The files the recording host wrote beside its recording
    /// (`RECORDING.evidence/`: each whole window's trace.dat and its
    /// sidecar), by name (pty port only).
    pub evidence: Vec<(String, Vec<u8>)>,
    /// From starting qemu to its exit.
    pub total: Duration,
    /// The limit the boot was held to ([`boot_limit`]).
    pub limit: Duration,
    pub status: ExitStatus,
}

impl Boot {
    /// `boot limit: 41.2 s of 245 s (17 %)`: the bound as observed.
    pub fn limit_line(&self) -> String {
        format!(
            "boot limit: {:.1} s of {:.0} s ({:.0} %)",
            self.total.as_secs_f64(),
            self.limit.as_secs_f64(),
            100.0 * self.total.as_secs_f64() / self.limit.as_secs_f64()
        )
    }
}

/// The stream's load on the board's serial line, as its bytes arrived.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LineLoad {
    /// Bytes per second from the first byte to the last.
    pub average: f64,
    /// From the first byte to the last.
    pub span: Duration,
    /// The most bytes in any window `[t, t + 1 s)`, and its `t` after the
    /// first byte.
    pub busiest: u64,
    pub busiest_at: Duration,
    /// The bytes of the last second, up to and including the last byte.
    pub last: u64,
}

impl Boot {
    /// The stream's load (`None` for a pty port, whose bytes the host
    /// reads, or an empty stream).
    pub fn load(&self) -> Option<LineLoad> {
        line_load(&self.arrivals)
    }
}

/// See [`Boot::load`]; `arrivals` in time order.
fn line_load(arrivals: &[(Duration, usize)]) -> Option<LineLoad> {
    const SEC: Duration = Duration::from_secs(1);
    let (first, last_t) = (arrivals.first()?.0, arrivals.last()?.0);
    let total: usize = arrivals.iter().map(|a| a.1).sum();
    let span = last_t - first;
    let (mut busiest, mut busiest_at, mut sum, mut lo) = (0, Duration::ZERO, 0, 0);
    for &(t, n) in arrivals {
        sum += n;
        while arrivals[lo].0 + SEC <= t {
            sum -= arrivals[lo].1;
            lo += 1;
        }
        if sum > busiest {
            (busiest, busiest_at) = (sum, arrivals[lo].0 - first);
        }
    }
    let last = arrivals
        .iter()
        .filter(|a| a.0 + SEC > last_t)
        .map(|a| a.1)
        .sum::<usize>();
    Some(LineLoad {
        average: total as f64 / span.as_secs_f64().max(1.0),
        span,
        busiest: busiest as u64,
        busiest_at,
        last: last as u64,
    })
}

impl Board {
    /// Finds qemu and the kernel for `arch` (`None`: skipped outside CI).
    pub fn find(arch: Arch) -> Option<Board> {
        let Some(qemu) = which(arch.qemu_system()) else {
            return unavailable(&format!("{} is not installed", arch.qemu_system()));
        };
        let kernel = kernel(arch)?;
        Some(Board {
            arch,
            qemu,
            kernel,
            smp: 2,
            mem_mib: 256,
        })
    }

    /// Boots with the program `init` as `/init` (PID 1), passing
    /// `init_args` to it; console on stdout, stream on a socket. The guest
    /// must power off; qemu runs with `-no-reboot`.
    pub fn boot(&self, init: &Path, init_args: &str, timeout: Duration) -> io::Result<Boot> {
        let scratch = Scratch::try_new("board")?;
        let initrd = make_initramfs(init, scratch.path())?;
        self.run(&Spec {
            initrd: &initrd,
            args: init_args,
            console: Console::Stdio,
            port: Port::Socket,
            timeout,
        })
    }

    /// Boots as `spec` says and collects what the board wrote.
    pub fn run(&self, spec: &Spec<'_>) -> io::Result<Boot> {
        if matches!(spec.port, Port::Pty { .. }) && spec.console == Console::Stdio {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a pty stream port needs the console on a socket (stdio is the monitor)",
            ));
        }
        let console_l = TcpListener::bind("127.0.0.1:0")?;
        let stream_l = TcpListener::bind("127.0.0.1:0")?;
        let mut cmd = self.command(spec, &console_l, &stream_l)?;
        let start = Instant::now();
        let deadline = start + spec.timeout;
        let mut guard = ChildGuard::new(cmd.spawn()?);
        let out = drain_shared(guard.child().stdout.take().expect("piped stdout"));
        let err = drain_shared(guard.child().stderr.take().expect("piped stderr"));
        let console = match spec.console {
            Console::Stdio => None,
            Console::Socket { flood } => {
                let sock = accept(&console_l, &mut guard, deadline)?;
                Some(spawn_console(sock, flood))
            }
        };
        let read = match &spec.port {
            Port::Socket => read_stream(&stream_l, &mut guard, start, deadline),
            Port::Pty { host, baud } => {
                read_pty(host, *baud, &mut guard, [&out.0, &err.0], deadline)
            }
        };
        let status = match &read {
            Ok(_) => guard.wait_until(deadline),
            Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
        };
        let total = start.elapsed();
        // On a timeout or error the guard kills qemu here, which ends the pipes.
        drop(guard);
        let (console_text, flood_bytes) = match console {
            Some(h) => h.join().unwrap_or_default(),
            None => (String::new(), 0),
        };
        let console = format!("{console_text}{}{}", out.finish(), err.finish());
        let fail =
            |e: io::Error| io::Error::new(e.kind(), format!("{e}\n--- console ---\n{console}"));
        let read = read.map_err(fail)?;
        let status = status.map_err(fail)?;
        Ok(Boot {
            console,
            stream: read.data,
            first_frame: read.first_frame,
            arrivals: read.arrivals,
            flood_bytes,
            host_log: read.host_log,
            evidence: read.evidence,
            total,
            limit: spec.timeout,
            status,
        })
    }

    /// The qemu command line for `spec`.
    fn command(
        &self,
        spec: &Spec<'_>,
        console: &TcpListener,
        stream: &TcpListener,
    ) -> io::Result<Command> {
        let append = format!("console=ttyAMA0 panic=-1 quiet -- {}", spec.args);
        let mut cmd = Command::new(&self.qemu);
        cmd.args(["-M", "virt", "-cpu", self.arch.cpu()])
            .args(["-smp", &self.smp.to_string()])
            .args(["-m", &self.mem_mib.to_string()])
            .args(["-display", "none", "-nic", "none", "-no-reboot"])
            .arg("-kernel")
            .arg(&self.kernel)
            .arg("-initrd")
            .arg(spec.initrd)
            .args(["-append", &append]);
        match spec.console {
            Console::Stdio => cmd.args(["-serial", "stdio"]),
            Console::Socket { .. } => {
                let port = console.local_addr()?.port();
                cmd.args(["-chardev", &uart_socket("uart0", port)])
                    .args(["-serial", "chardev:uart0"])
            }
        };
        match spec.port {
            Port::Socket => {
                let port = stream.local_addr()?.port();
                cmd.args(["-chardev", &uart_socket("uart1", port)])
                    .args(["-serial", "chardev:uart1", "-monitor", "none"])
                    .stdin(Stdio::null())
            }
            // Paused (-S) until the host has opened the pty; the monitor on
            // stdin says `cont` then.
            Port::Pty { .. } => cmd
                .args(["-serial", "pty", "-S", "-monitor", "stdio"])
                .stdin(Stdio::piped()),
        };
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        Ok(cmd)
    }
}

/// The `-chardev` of a UART wired to the test's TCP listener on `port`.
///
/// `nodelay=on`: each write leaves at once, as on a serial line. With
/// Nagle's algorithm the kernel may hold qemu's short writes of a UART
/// until the test acknowledges the last; and when the board powers off
/// while qemu still holds unread flood bytes, closing the socket resets
/// the connection and discards whatever is held: it would be the
/// console's last lines, the verdict among them.
fn uart_socket(id: &str, port: u16) -> String {
    format!("socket,id={id},host=127.0.0.1,port={port},nodelay=on")
}

/// A pipe read to a shared string on a thread of its own.
struct Shared(Arc<Mutex<String>>, JoinHandle<()>);

impl Shared {
    /// Waits for the end of the pipe and returns everything read.
    fn finish(self) -> String {
        let _ = self.1.join();
        let text = self.0.lock().map(|s| s.clone()).unwrap_or_default();
        text
    }
}

fn drain_shared<R: Read + Send + 'static>(r: R) -> Shared {
    let text = Arc::new(Mutex::new(String::new()));
    let t = Arc::clone(&text);
    let h = thread::spawn(move || {
        let mut r = BufReader::new(r);
        let mut line = Vec::new();
        while r.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            if let Ok(mut s) = t.lock() {
                s.push_str(&String::from_utf8_lossy(&line));
            }
            line.clear();
        }
    });
    Shared(text, h)
}

/// Accepts qemu's connection to `listener` (made at qemu's start-up).
fn accept(
    listener: &TcpListener,
    guard: &mut ChildGuard,
    deadline: Instant,
) -> io::Result<TcpStream> {
    listener.set_nonblocking(true)?;
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)?;
                return Ok(s);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if let Some(st) = guard.child().try_wait()? {
                    return Err(io::Error::other(format!(
                        "qemu exited ({st}) before connecting its serial port"
                    )));
                }
                if Instant::now() >= deadline {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "qemu never connected",
                    ));
                }
                thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Reads the console until qemu closes it; with `flood`, writes into it
/// between the [`START_LINE`] and the [`STOP_LINE`]. Returns the text and
/// the bytes flooded.
fn spawn_console(sock: TcpStream, flood: bool) -> JoinHandle<(String, u64)> {
    thread::spawn(move || {
        let on = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let mut writer = None;
        let mut text = Vec::new();
        let mut buf = [0u8; 4096];
        let mut r = &sock;
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => text.extend_from_slice(&buf[..n]),
            }
            if !flood {
                continue;
            }
            let seen = String::from_utf8_lossy(&text);
            if writer.is_none() && seen.contains(START_LINE) {
                on.store(true, Ordering::Release);
                writer = sock.try_clone().ok().map(|w| spawn_flood(w, &on, &sent));
            }
            if seen.contains(STOP_LINE) {
                on.store(false, Ordering::Release);
            }
        }
        on.store(false, Ordering::Release);
        if let Some(h) = writer {
            let _ = h.join();
        }
        let text = String::from_utf8_lossy(&text).into_owned();
        (text, sent.load(Ordering::Acquire))
    })
}

/// Writes into the console's receive side while `on` is set.
fn spawn_flood(mut w: TcpStream, on: &Arc<AtomicBool>, sent: &Arc<AtomicU64>) -> JoinHandle<()> {
    let (on, sent) = (Arc::clone(on), Arc::clone(sent));
    thread::spawn(move || {
        // A short timeout, so that a board that stopped reading does not
        // hold the writer past the stop line.
        let _ = w.set_write_timeout(Some(Duration::from_millis(50)));
        let block = [b'U'; 256];
        while on.load(Ordering::Acquire) {
            match w.write(&block) {
                Ok(n) => {
                    sent.fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => break,
            }
        }
    })
}

/// What was read from the stream port.
#[derive(Default)]
struct StreamRead {
    data: Vec<u8>,
    first_frame: Option<Duration>,
    arrivals: Vec<(Duration, usize)>,
    host_log: String,
    evidence: Vec<(String, Vec<u8>)>,
}

impl StreamRead {
    /// Adds `bytes` that arrived at `now` (since qemu started).
    fn add(&mut self, bytes: &[u8], now: Duration) {
        self.arrivals.push((now, bytes.len()));
        if self.first_frame.is_none() {
            let mut in_frame = self.data.last().is_some_and(|&b| b != 0);
            for &b in bytes {
                if b != 0 {
                    in_frame = true;
                } else if in_frame {
                    self.first_frame = Some(now);
                    break;
                }
            }
        }
        self.data.extend_from_slice(bytes);
    }
}

/// Accepts qemu's connection and reads the second serial port until qemu
/// closes it (at exit).
fn read_stream(
    listener: &TcpListener,
    guard: &mut ChildGuard,
    start: Instant,
    deadline: Instant,
) -> io::Result<StreamRead> {
    let mut sock = accept(listener, guard, deadline)?;
    sock.set_read_timeout(Some(Duration::from_millis(100)))?;
    let mut got = StreamRead::default();
    let mut buf = [0u8; 4096];
    loop {
        match sock.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.add(&buf[..n], start.elapsed()),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if Instant::now() >= deadline {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "board still running after its limit of {:.0} s; {} stream bytes",
                            (deadline - start).as_secs_f64(),
                            got.data.len()
                        ),
                    ));
                }
                // qemu closes the socket when it exits; a hung guest is
                // caught by the deadline above.
            }
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The output of qemu so far (stdout and stderr).
type QemuOut<'a> = [&'a Mutex<String>; 2];

/// The pty qemu made for the second UART, from its output
/// (`char device redirected to /dev/pts/N (label serial1)`).
fn pty_path(
    qemu_out: QemuOut<'_>,
    guard: &mut ChildGuard,
    deadline: Instant,
) -> io::Result<PathBuf> {
    loop {
        let text: String = qemu_out
            .iter()
            .map(|m| m.lock().map(|s| s.clone()).unwrap_or_default())
            .collect();
        let found = text.lines().find_map(|l| {
            let rest = l.strip_prefix("char device redirected to ")?;
            let (dev, label) = rest.split_once(' ')?;
            (label == "(label serial1)").then(|| PathBuf::from(dev))
        });
        if let Some(p) = found {
            return Ok(p);
        }
        if let Some(st) = guard.child().try_wait()? {
            return Err(io::Error::other(format!(
                "qemu exited ({st}) before making its pty: {text}"
            )));
        }
        if Instant::now() >= deadline {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "qemu named no pty"));
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// True once process `pid` has `dev` open.
fn has_open(pid: u32, dev: &Path) -> bool {
    fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.flatten()
                .any(|fd| fs::read_link(fd.path()).is_ok_and(|t| t == dev))
        })
        .unwrap_or(false)
}

/// Records the stream from qemu's pty with `host record --serial` at
/// `baud`: starts the host, waits until it has opened the device, lets the
/// paused guest run, and returns the recording and the evidence written
/// beside it once qemu and the host are done.
fn read_pty(
    host: &Path,
    baud: u32,
    guard: &mut ChildGuard,
    qemu_out: QemuOut<'_>,
    deadline: Instant,
) -> io::Result<StreamRead> {
    let dev = pty_path(qemu_out, guard, deadline)?;
    let scratch = Scratch::try_new("pty")?;
    let rec = scratch.path().join("board.lsr");
    let mut rec_host = ChildGuard::new(
        Command::new(host)
            .args(["record", "-q", "--baud", &baud.to_string(), "--serial"])
            .arg(&dev)
            .arg("-o")
            .arg(&rec)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?,
    );
    let log = drain_shared(rec_host.child().stderr.take().expect("piped stderr"));
    let pid = rec_host.child().id();
    while !has_open(pid, &dev) {
        if let Some(st) = rec_host.child().try_wait()? {
            let text = log.finish();
            return Err(io::Error::other(format!(
                "{} record exited ({st}): {text}",
                host.display()
            )));
        }
        if Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the host never opened the pty",
            ));
        }
        thread::sleep(Duration::from_millis(10));
    }
    guard
        .child()
        .stdin
        .as_mut()
        .expect("piped stdin")
        .write_all(b"cont\n")?;
    guard.wait_until(deadline)?;
    // The host stops at the bye; without one (a serial line has no end of
    // file) it is stopped after a grace period, and the check of the
    // recording reports what is missing.
    let _ = rec_host.wait_until(Instant::now() + Duration::from_secs(10));
    drop(rec_host);
    let mut dir = rec.clone().into_os_string();
    dir.push(".evidence");
    let mut evidence = Vec::new();
    // no directory: no window came whole
    if let Ok(entries) = fs::read_dir(&dir) {
        for e in entries {
            let e = e?;
            evidence.push((
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path())?,
            ));
        }
    }
    evidence.sort();
    Ok(StreamRead {
        data: fs::read(&rec)?,
        host_log: log.finish(),
        evidence,
        ..StreamRead::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boot_limit_grows_with_the_work_it_holds() {
        let s = Duration::from_secs;
        assert_eq!(boot_limit(&[]), BOOT_ALLOWANCE);
        // the flood boot: latscope for 5 s, then rtla 5 times for 4 s
        assert_eq!(boot_limit(&[(1, s(5)), (5, s(4))]), s(60 + 35 + 5 * 32));
        // a link-budget boot of a minute
        assert_eq!(boot_limit(&[(1, s(60))]), s(60 + 200));
    }

    #[test]
    fn stream_read_times_the_first_frame_and_the_load() {
        let ms = Duration::from_millis;
        let mut r = StreamRead::default();
        r.add(&[0, 1, 2], ms(2_500));
        assert_eq!(r.first_frame, None);
        r.add(&[3, 0, 9], ms(3_700));
        r.add(&[9; 10], ms(4_100));
        r.add(&[9; 4], ms(6_500));
        assert_eq!(r.first_frame, Some(ms(3_700)));
        assert_eq!(r.data.len(), 20);
        let load = line_load(&r.arrivals).expect("bytes arrived");
        // 20 B over 4 s; the busiest window starts at 3.7 s (1.2 s after
        // the first byte) and holds 13 B; the last second only the last 4.
        assert_eq!(load.span, ms(4_000));
        assert!((load.average - 5.0).abs() < 1e-9, "{load:?}");
        assert_eq!((load.busiest, load.busiest_at), (13, ms(1_200)));
        assert_eq!(load.last, 4);
        assert_eq!(line_load(&[]), None);
    }
}
