//! Disturbances that tests make themselves instead of hoping this machine
//! is noisy: a loopback UDP flood raises NET_RX softirqs (and network
//! interrupt work) on the CPUs it is pinned to; the burster takes CPU 0
//! from a lower real-time priority in bursts it logs.

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::Path;
use std::process::{ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

use crate::host::Reaper;

/// A loopback UDP flood, one thread per CPU at nice 19, until dropped.
pub struct UdpFlood {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl UdpFlood {
    /// Start flooding on each of `cpus`.
    pub fn on(cpus: &[usize]) -> UdpFlood {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = cpus
            .iter()
            .map(|&cpu| {
                let stop = Arc::clone(&stop);
                thread::spawn(move || flood(cpu, &stop))
            })
            .collect();
        UdpFlood { stop, threads }
    }
}

impl Drop for UdpFlood {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn flood(cpu: usize, stop: &AtomicBool) {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    let _ = rustix::thread::sched_setaffinity(None, &set);
    let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19);
    let (Ok(rx), Ok(tx)) = (
        UdpSocket::bind("127.0.0.1:0"),
        UdpSocket::bind("127.0.0.1:0"),
    ) else {
        return;
    };
    let (Ok(()), Ok(to)) = (rx.set_nonblocking(true), rx.local_addr()) else {
        return;
    };
    let msg = [0x5au8; 1400];
    let mut buf = [0u8; 2048];
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..64 {
            let _ = tx.send_to(&msg, to);
        }
        while rx.recv_from(&mut buf).is_ok() {}
    }
}

/// The test crate's burster (`tests/src/bin/burster.rs`): a `SCHED_FIFO`
/// task that makes bursts of busy time on CPU 0 and logs each.
pub struct Burster;

impl Burster {
    /// Starts the burster at `bin` on CPU 0 with `args` (`PRIO BURST_US
    /// PERIOD_US SECS`), logging its bursts to `log`, and waits until it
    /// is ready: it, its output still to read (its last line sums up),
    /// and its pid.
    pub fn start(bin: &str, args: &[&str], log: &Path) -> (Reaper, BufReader<ChildStdout>, u32) {
        let mut child = Command::new(bin)
            .arg("0")
            .args(args)
            .arg(log)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("run the burster");
        let out = child.stdout.take().expect("the burster's output");
        let mut out = BufReader::new(out);
        let mut line = String::new();
        out.read_line(&mut line).expect("the burster's first line");
        let pid: u32 = line
            .strip_prefix("burster: pid ")
            .and_then(|l| l.strip_suffix(" ready\n"))
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the burster did not get ready: {line:?}"));
        (Reaper::new(child), out, pid)
    }
}
