//! Core's binary trace decoder (`latscope_core::ringbuf`) against the
//! kernel itself, on an instance of the test's own:
//!
//! * every event of every CPU, decoded from `trace_pipe_raw`, equals the
//!   kernel's own text rendering of it in `per_cpu/cpuN/trace`, event by
//!   event (timestamps to the microsecond the text prints);
//! * a tiny buffer and a stalled reader: the pages say the kernel lost
//!   events, where the kernel put the flag (the first page read), and the
//!   counts they store add up to the overrun in `per_cpu/cpuN/stats`.

use std::fs;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use latscope_core::explain::{parse_line, Event};
use latscope_core::ringbuf::{Decoder, EventFormats, Missed, Page, PageHeader};
use latscope_testkit::precondition::tracefs;
use latscope_testkit::wait::until;
use latscope_testkit::{is_root, missing};

/// A trace instance of the test's own, removed when dropped.
struct Instance {
    dir: PathBuf,
}

impl Instance {
    /// Creates `instances/ringbuf-<what>-<pid>` with `kb` KiB per CPU and
    /// the classifier's events on; `None` (after [`missing`]) where this
    /// run cannot trace.
    fn new(what: &str, kb: u32) -> Option<Self> {
        if !is_root() {
            missing("trace instances need root");
            return None;
        }
        let Some(root) = tracefs() else {
            missing("tracefs is not mounted");
            return None;
        };
        let dir = root
            .join("instances")
            .join(format!("ringbuf-{what}-{}", std::process::id()));
        fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        let i = Self { dir };
        i.write("tracing_on", "0");
        i.write("buffer_size_kb", &kb.to_string());
        for e in EventFormats::ENABLE {
            i.write(&format!("events/{e}/enable"), "1");
        }
        for v in i.vectors() {
            i.write(&format!("events/irq_vectors/{v}/enable"), "1");
        }
        Some(i)
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    fn write(&self, rel: &str, v: &str) {
        let p = self.path(rel);
        fs::write(&p, v).unwrap_or_else(|e| panic!("write {v:?} to {}: {e}", p.display()));
    }

    fn read(&self, rel: &str) -> String {
        let p = self.path(rel);
        fs::read_to_string(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
    }

    /// A file read in one `read(2)` of 64 KiB: `events/header_page` gives
    /// its text to the first read only (a reader that starts small, as
    /// `read_to_string` does with 32 bytes, gets the first field alone).
    fn read_once(&self, rel: &str) -> String {
        let p = self.path(rel);
        let mut b = vec![0u8; 65536];
        let n = fs::File::open(&p)
            .and_then(|mut f| f.read(&mut b))
            .unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
        String::from_utf8_lossy(&b[..n]).into_owned()
    }

    /// The interrupt vectors' entry and exit events (x86 only).
    fn vectors(&self) -> Vec<String> {
        let Ok(rd) = fs::read_dir(self.path("events/irq_vectors")) else {
            return Vec::new();
        };
        let mut v: Vec<String> = rd
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with("_entry") || n.ends_with("_exit"))
            .collect();
        v.sort();
        v
    }

    /// The decoder, from the instance's own format files.
    fn decoder(&self) -> (PageHeader, Decoder) {
        let text = self.read_once("events/header_page");
        let header = PageHeader::parse(&text).unwrap_or_else(|e| panic!("{e}: {text:?}"));
        let mut f = EventFormats::new();
        for e in EventFormats::ENABLE.iter().chain([&EventFormats::MARKER]) {
            assert!(
                f.add(&self.read(&format!("events/{e}/format"))).unwrap(),
                "{e}"
            );
        }
        for v in self.vectors() {
            f.add(&self.read(&format!("events/irq_vectors/{v}/format")))
                .unwrap();
        }
        (header, Decoder::new(f))
    }

    fn cpus(&self) -> Vec<u32> {
        let mut c: Vec<u32> = fs::read_dir(self.path("per_cpu"))
            .unwrap()
            .filter_map(|e| {
                e.ok()?
                    .file_name()
                    .to_str()?
                    .strip_prefix("cpu")?
                    .parse()
                    .ok()
            })
            .collect();
        c.sort_unstable();
        c
    }

    /// A number from `per_cpu/cpuN/stats` (`entries`, `overrun`).
    fn stat(&self, cpu: u32, key: &str) -> u64 {
        self.read(&format!("per_cpu/cpu{cpu}/stats"))
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {key} in cpu{cpu}'s stats"))
    }

    /// Every page `trace_pipe_raw` of `cpu` holds, read without blocking
    /// until it has none.
    fn pages(&self, cpu: u32) -> Vec<Vec<u8>> {
        let size = fs::read_to_string(self.path("buffer_subbuf_size_kb"))
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .map_or(4096, |kb| kb * 1024);
        let p = self.path(&format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
        let mut f = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&p)
            .unwrap_or_else(|e| panic!("open {}: {e}", p.display()));
        let mut pages = Vec::new();
        loop {
            let mut b = vec![0u8; size];
            match f.read(&mut b) {
                Ok(0) => break,
                Ok(n) => {
                    b.truncate(n);
                    pages.push(b);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => panic!("read {}: {e}", p.display()),
            }
        }
        pages
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = fs::write(self.path("tracing_on"), "0");
        let _ = fs::remove_dir(&self.dir);
    }
}

/// One thread per CPU, pinned there, sleeping 50 µs at a time (wake-ups,
/// switches, timer interrupts and softirqs on every CPU) `sleeps` times,
/// or until dropped; with `spin`, another per CPU that spins in the kernel
/// until dropped, which the sleepers' wake-ups preempt (`prev_state=R+`).
struct Sleepers {
    stop: Arc<AtomicBool>,
    sleepers: Vec<thread::JoinHandle<()>>,
    spinners: Vec<thread::JoinHandle<()>>,
}

impl Sleepers {
    fn start(cpus: &[u32], sleeps: u64, spin: bool) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let pinned = |cpu: u32, stop: Arc<AtomicBool>, sleeps: Option<u64>| {
            thread::spawn(move || {
                let mut set = rustix::thread::CpuSet::new();
                set.set(cpu as usize);
                rustix::thread::sched_setaffinity(None, &set)
                    .unwrap_or_else(|e| panic!("pin to CPU {cpu}: {e}"));
                let mut left = sleeps;
                // A spinner spins in the kernel, copying zeros, where a
                // wake-up preempts it (in user space it would show `R`).
                let mut zero = fs::File::open("/dev/zero").expect("open /dev/zero");
                let mut b = vec![0u8; 1 << 20];
                while !stop.load(Ordering::Relaxed) && left != Some(0) {
                    match &mut left {
                        Some(n) => {
                            *n -= 1;
                            thread::sleep(Duration::from_micros(50));
                        }
                        None => zero.read_exact(&mut b).expect("read /dev/zero"),
                    }
                }
            })
        };
        let mut sleepers = Vec::new();
        let mut spinners = Vec::new();
        for &cpu in cpus {
            sleepers.push(pinned(cpu, stop.clone(), Some(sleeps)));
            if spin {
                spinners.push(pinned(cpu, stop.clone(), None));
            }
        }
        Self {
            stop,
            sleepers,
            spinners,
        }
    }

    /// Waits for every sleeper to finish its sleeps, then stops the
    /// spinners.
    fn join(mut self) {
        for t in self.sleepers.drain(..) {
            t.join().expect("a sleeper panicked");
        }
    }
}

impl Drop for Sleepers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.sleepers.drain(..).chain(self.spinners.drain(..)) {
            let _ = t.join();
        }
    }
}

/// An event as both sides can say it: the microsecond the text prints
/// (rounded to the nearest, as the kernel's `ns2usecs` does), the CPU, the
/// current task's pid, and what happened.
fn said(e: &Event<'_>) -> String {
    let us = (e.ts_ns + 500) / 1000;
    format!("{us} cpu{} pid {} {:?}", e.cpu, e.task.pid, e.kind)
}

#[test]
fn decoded_pages_equal_the_kernels_own_text() {
    let Some(inst) = Instance::new("text", 2048) else {
        return;
    };
    let cpus = inst.cpus();
    inst.write("tracing_on", "1");
    // A bounded load, so that the buffers (2 MiB a CPU, some 50,000
    // events) hold all of it on a slow machine too.
    let load = Sleepers::start(&cpus, 1000, true);
    for n in 0..20 {
        inst.write("trace_marker", &format!("ringbuf test marker {n}"));
    }
    load.join();
    inst.write("tracing_on", "0");
    let (header, mut dec) = inst.decoder();
    let mut total = 0;
    let mut preempted = 0;
    for &cpu in &cpus {
        assert_eq!(
            inst.stat(cpu, "overrun"),
            0,
            "cpu{cpu} lost events: make the buffer larger"
        );
        let entries = inst.stat(cpu, "entries");
        let text = inst.read(&format!("per_cpu/cpu{cpu}/trace"));
        let want: Vec<String> = text
            .lines()
            .filter_map(parse_line)
            .map(|e| said(&e))
            .collect();
        let mut got = Vec::new();
        for (i, bytes) in inst.pages(cpu).iter().enumerate() {
            let page =
                Page::new(header, bytes).unwrap_or_else(|e| panic!("cpu{cpu} page {i}: {e}"));
            assert_eq!(page.missed(), Missed::Nothing, "cpu{cpu} page {i}");
            for raw in page.events() {
                let raw = raw.unwrap_or_else(|e| panic!("cpu{cpu} page {i}: {e}"));
                let e = dec
                    .decode(cpu, &raw)
                    .unwrap_or_else(|e| panic!("cpu{cpu} page {i}: {e}"));
                got.push(said(&e));
            }
        }
        assert_eq!(
            got.len() as u64,
            entries,
            "cpu{cpu}: decoded events against the stats' entries"
        );
        if let Some(i) = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i)) {
            panic!(
                "cpu{cpu}: event {i} of {} decoded, {} in the text:\n decoded: {:?}\n text:    {:?}",
                got.len(),
                want.len(),
                got.get(i),
                want.get(i)
            );
        }
        total += got.len();
        preempted += got
            .iter()
            .filter(|e| e.contains("prev_state: \"R+\""))
            .count();
    }
    eprintln!(
        "ringbuf: {total} events decoded, each equal to the kernel's text, \
         {preempted} of them a preempted task's switch"
    );
    assert!(total >= 3000, "{total} events");
    assert!(
        preempted > 0,
        "the spinners were never preempted: no R+ to compare"
    );
}

#[test]
fn lost_events_add_up_to_the_kernels_overrun() {
    // The smallest buffer: a few pages per CPU, overwritten at once.
    let Some(inst) = Instance::new("lost", 4) else {
        return;
    };
    inst.write("tracing_on", "1");
    let cpus = inst.cpus();
    {
        let _load = Sleepers::start(&cpus, u64::MAX, false);
        until(Duration::from_secs(30), "an overrun on every CPU", || {
            cpus.iter()
                .all(|&c| inst.stat(c, "overrun") > 0)
                .then_some(())
        });
    }
    inst.write("tracing_on", "0");
    let (header, mut dec) = inst.decoder();
    for &cpu in &cpus {
        let overrun = inst.stat(cpu, "overrun");
        let entries = inst.stat(cpu, "entries");
        let pages = inst.pages(cpu);
        assert!(!pages.is_empty(), "cpu{cpu}: no pages");
        let mut missed = Vec::new();
        let mut decoded = 0u64;
        for b in &pages {
            let page = Page::new(header, b).unwrap();
            missed.push(page.missed());
            for raw in page.events() {
                dec.decode(cpu, &raw.unwrap()).unwrap();
                decoded += 1;
            }
        }
        // What was not overwritten is all there.
        assert_eq!(
            decoded, entries,
            "cpu{cpu}: decoded events against the stats' entries"
        );
        // Tracing stopped before the read: the whole loss is before the
        // first page read, and only there.
        assert_ne!(
            missed[0],
            Missed::Nothing,
            "cpu{cpu}: overrun {overrun}, first page unflagged"
        );
        assert!(
            missed[1..].iter().all(|m| *m == Missed::Nothing),
            "cpu{cpu}: {missed:?}"
        );
        match missed[0] {
            Missed::Events(n) => assert_eq!(n, overrun, "cpu{cpu}: stored count against the stats"),
            Missed::Unknown => eprintln!("cpu{cpu}: lost count not stored (the page was full)"),
            Missed::Nothing => unreachable!(),
        }
        eprintln!(
            "cpu{cpu}: {} pages, {:?} before the first, overrun {overrun}",
            pages.len(),
            missed[0]
        );
    }
}
