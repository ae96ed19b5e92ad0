//! compare.md, rendered from the typed result.

use std::fmt::Write;

use super::{Compare, Condition, Figure, Latency};
use crate::stats::{cell, g3, ratio_text};

const HEAD: &str = "| figure | latscope | cyclictest | median ratio | bootstrap 95 % | claim | sign test | per-pair ratios |\n|---|---|---|---|---|---|---|---|\n";

/// The like-for-like flags of both programs.
pub const COMMON: &str = "-t 2 -a 0,1 -d 0 -p 80 -i 200";
/// The memory runs' flags.
pub const MEM_FLAGS: &str = "-t 2 -a -d 0 -i 1000 -p 80 -m";
/// The histogram's buckets.
pub const HIST_US: u64 = 20000;

/// One row of a statistics table.
pub fn row(label: &str, f: &Figure) -> String {
    let (a, b) = (cell(f.latscope), cell(f.cyclictest));
    let Some(s) = &f.ratio else {
        return format!("| {label} | {a} | {b} | - | - | - | - | - |\n");
    };
    let ratios: Vec<String> = s.ratios.iter().map(|r| format!("{r:.2}")).collect();
    format!(
        "| {label} | {a} | {b} | {:.2} | [{:.2}, {:.2}] | {} | {} below, {} above of {}; p = {} | {} |\n",
        s.median,
        s.lo,
        s.hi,
        s.claim().label(),
        s.below,
        s.above,
        s.n,
        g3(s.p),
        ratios.join(", ")
    )
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

/// The document.
pub fn render(c: &Compare) -> String {
    let m = &c.meta;
    let explain = m
        .explain_us
        .map(|us| format!(" --explain {us}"))
        .unwrap_or_default();
    let mut s = String::new();
    let _ = write!(
        s,
        "# latscope vs cyclictest\n\n\
         Produced by `bench/compare-cyclictest{} --secs {}{explain}` ({} alternating pairs: latscope first in odd pairs, cyclictest first in even ones), started {}, took {} s; its figures and statistics by `cargo xtask compare-table` from the raw outputs, typed in `{}.json` beside this file.\n\n\
         Per figure: the median of each program over the pairs, the median of the per-pair ratios latscope / cyclictest (below 1: latscope is lower), its bootstrap 95 % interval (percentile method, 4000 resamples of the pairs, fixed seed), a claim only when that interval excludes 1, the two-sided exact sign test of the pairs below against above 1 (ties left out), and every pair's ratio in pair order.\n\n## Machine\n\n",
        if m.quick { " --quick" } else { "" },
        m.secs,
        m.pairs,
        m.started,
        m.elapsed_s,
        if m.explain_us.is_some() { "compare-explain" } else { "compare" },
    );
    s.push_str(&c.machine.markdown());
    let _ = writeln!(s, "- cyclictest: {}\n- latscope: {}\n- a shared machine: other engineers' builds and tests ran meanwhile; compare ratios, not absolute times\n", c.cyclictest_version, c.latscope_version);
    commands(&mut s, c);
    cost(&mut s, c);
    latency(&mut s, c);
    s
}

fn commands(s: &mut String, c: &Compare) {
    let m = &c.meta;
    let explain = m
        .explain_us
        .map(|us| format!(" --explain {us}"))
        .unwrap_or_default();
    let (l, sh, d, ml) = (m.loops(), m.short(), m.cycles(), m.memory_loops());
    let _ = write!(
        s,
        "## Commands\n\nLike-for-like flags (the program path shortened):\n\n\
         - latscope: `latscope {COMMON} -m{explain} -l N -q` (memory is locked by default; -m is accepted)\n\
         - cyclictest: `cyclictest {COMMON} -m -l N -q`\n\
         - CPU time: `/usr/bin/time -f '%U %S'` of `-l {l}` minus `-l {sh}`, over {d} cycles (2 threads).\n\
         - syscalls: `strace -f -c` of `-l {l}` minus `-l {sh}`, over the same cycles.\n\
         - memory: `PROG {MEM_FLAGS} -l {ml} -q` (glibc builds; latscope dynamically linked as `cargo install` builds it): VmLck and VmRSS (`/proc/PID/status`) and Locked (`/proc/PID/smaps_rollup`), peak after the first second, sampled every 0.1 s; private locked: the sum of Private_Clean and Private_Dirty over the mappings of `/proc/PID/smaps` whose Locked is not 0, read once 1.2 s after the start (Locked is proportional: it counts shared libc pages only in part), and split into code (the program's own file and the libraries it loads other than libc and ld.so) and the rest. The std floor is `std_floor 2 S` (shim-linux/examples/std_floor.rs, the workspace's release profile): the smallest program on Rust's standard library that locks its memory as latscope does and runs two threads with latscope's stack size; what it locks, latscope cannot lock less of without leaving std.\n\
         - faults: minor and major faults of the real-time (measuring) threads from `/proc/PID/task/TID/stat`, from 1 s after start to their end; the same sampler for both programs.\n\
         - instructions: `bench/instructions` (callgrind, measuring thread matched by thread; its method is in `instructions.md` beside this file's raw outputs); deterministic, so one run, no interval.\n\
         - latency: `-l {l}` ({l} x 200 us = {} s); both programs' figures from their `-h {HIST_US} --histfile` histograms (1 us buckets, each sample truncated to whole microseconds as cyclictest does; avg is the mean of the buckets, not cyclictest's integer `# Avg Latencies`, see `max-latency.md`). p50, p99, p99.9 and max: the worse thread; min: the better; avg: the mean. In microseconds.\n\
         \x20 - idle: nothing else running (but see the load average);\n\
         \x20 - cpu: `stress-ng --cpu 2 --timeout 0`;\n\
         \x20 - hackbench: `hackbench -g 4 -l 2000` in a loop;\n\
         \x20 - reclaim: `evict PID 100` (tests/src/bin/evict.rs: `process_madvise(MADV_PAGEOUT)` over every mapping of the measured process every 100 ms, through a pidfd); `-nomlock` rows: latscope `--no-mlock`, cyclictest without `-m`.\n\n",
        m.secs
    );
}

/// The cost table's rows: label and figure.
pub fn cost_rows(c: &Compare) -> Vec<(String, &Figure)> {
    let k = &c.cost;
    let mut rows: Vec<(String, &Figure)> = vec![
        ("syscalls per cycle (all)".into(), &k.syscalls_per_cycle),
        (
            "clock_nanosleep per cycle".into(),
            &k.clock_nanosleep_per_cycle,
        ),
        ("CPU time per cycle (us)".into(), &k.cpu_us_per_cycle),
        (format!("VmLck (kB), `{MEM_FLAGS}`"), &k.vmlck_kb),
        ("Locked, smaps_rollup (kB)".into(), &k.locked_kb),
        ("private locked (kB)".into(), &k.private_locked_kb),
        (
            "private locked in code: the program file and its libraries but libc and ld.so (kB)"
                .into(),
            &k.private_locked_code_kb,
        ),
        (
            "private locked, the rest: heap, stacks, libc's private pages (kB)".into(),
            &k.private_locked_rest_kb,
        ),
        ("VmRSS (kB)".into(), &k.vmrss_kb),
        (
            "std floor (`std_floor 2 S`): Locked (kB), against cyclictest's".into(),
            &k.std_floor_locked_kb,
        ),
        (
            "std floor: private locked (kB)".into(),
            &k.std_floor_private_locked_kb,
        ),
        (
            "std floor: private locked in code (kB)".into(),
            &k.std_floor_private_locked_code_kb,
        ),
        ("std floor: VmRSS (kB)".into(), &k.std_floor_vmrss_kb),
    ];
    if let Some(m) = &k.musl {
        rows.push((
            "Locked, latscope static musl build (kB)".into(),
            &m.locked_kb,
        ));
        rows.push((
            "private locked, latscope static musl build (kB)".into(),
            &m.private_locked_kb,
        ));
        rows.push(("VmRSS, latscope static musl build (kB)".into(), &m.vmrss_kb));
    }
    rows.push((
        "minor faults after 1 s (measuring threads)".into(),
        &k.minor_faults,
    ));
    rows.push((
        "major faults after 1 s (measuring threads)".into(),
        &k.major_faults,
    ));
    rows
}

fn cost(s: &mut String, c: &Compare) {
    s.push_str("## Cost\n\n");
    s.push_str(HEAD);
    for (label, f) in cost_rows(c) {
        s.push_str(&row(&label, f));
    }
    let o = &c.other;
    let [ol, oc] = o.other_syscalls_per_cycle;
    let (il, ic) = o.instructions();
    let [bl, bc] = o.binary_bytes;
    let _ = write!(
        s,
        "\n| figure | latscope | cyclictest | ratio |\n|---|---|---|---|\n\
         | other syscalls per cycle (median) | {} | {} | - |\n\
         | user-space instructions per loop iteration, measuring thread (`bench/instructions`) | {} | {} | {} |\n\
         | stripped binary size (bytes; both dynamically linked against glibc) | {} | {} | {} |\n",
        cell(ol),
        cell(oc),
        cell(il),
        cell(ic),
        ratio_text(il, ic),
        opt(bl),
        opt(bc),
        ratio_text(bl.map(|v| v as f64), bc.map(|v| v as f64)),
    );
    if c.meta.musl {
        let _ = writeln!(
            s,
            "| stripped binary size, latscope musl static-pie build (bytes; cyclictest would add glibc) | {} | - | - |",
            opt(o.musl_binary_bytes)
        );
    }
    s.push('\n');
}

/// A condition's rows: label and figure.
pub fn latency_rows(l: &Latency) -> Vec<(&'static str, &Figure)> {
    let mut rows = vec![
        ("min", &l.min),
        ("avg", &l.avg),
        ("p50", &l.p50),
        ("p99", &l.p99),
        ("p99.9", &l.p999),
        ("max", &l.max),
        ("minor faults", &l.minor_faults),
        ("major faults", &l.major_faults),
    ];
    if let Some(u) = &l.unlocked {
        rows.push(("p99, unlocked (`--no-mlock` / no `-m`)", &u.p99));
        rows.push(("p99.9, unlocked (`--no-mlock` / no `-m`)", &u.p999));
        rows.push(("max, unlocked (`--no-mlock` / no `-m`)", &u.max));
        rows.push(("major faults, unlocked", &u.major_faults));
    }
    rows
}

fn latency(s: &mut String, c: &Compare) {
    s.push_str("## Latency (us) per condition\n\n");
    for cond in Condition::ALL {
        let _ = write!(s, "### {}\n\n{HEAD}", cond.name());
        for (label, f) in latency_rows(c.latency.get(cond)) {
            s.push_str(&row(label, f));
        }
        s.push('\n');
    }
    s.push_str("Eviction requests (`evict` output, first pair):\n\n");
    for e in &c.evictions {
        let _ = writeln!(s, "- {}: `{}`", e.run, e.output);
    }
    s.push_str(
        "  (refused calls with errno 22, EINVAL: the kernel does not page out locked mappings.)\n",
    );
}
