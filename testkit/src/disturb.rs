//! Disturbances that tests make themselves instead of hoping this machine
//! is noisy: a loopback UDP flood raises NET_RX softirqs (and network
//! interrupt work) on the CPUs it is pinned to.

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

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
