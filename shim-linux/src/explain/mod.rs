//! Spike attribution on Linux: a private tracefs instance, the measuring
//! thread's marker, and the `/proc` fallback.
//!
//! * [`Tracer`] owns the trace instance `instances/latscope-PID`: it creates
//!   it (removing stale instances of dead latscope processes first), enables
//!   the irq, softirq, irq_vectors, hrtimer, idle and sched events for the
//!   measured CPUs only, sets `trace_clock` to `mono` so event times compare
//!   with `CLOCK_MONOTONIC` deadlines, and sizes the buffers small. The
//!   non-RT sender thread calls [`Tracer::explain`] after a spike; it reads
//!   `per_cpu/cpuN/trace` and runs the core classifier
//!   ([`latscope_core::explain`]). Dropping the tracer (or
//!   [`Tracer::close`]) removes the instance. The user's top-level buffer
//!   and settings are never touched, so there is nothing else to restore.
//! * [`Marker`] is the pre-opened `trace_marker` fd of the instance. The
//!   measuring thread owns it and, on a spike, makes its one rate-limited
//!   `write(2)`: no allocation, no other syscall.
//! * [`ProcInterrupts`] snapshots `/proc/interrupts` and `/proc/softirqs`
//!   for the measured CPUs; the difference of two snapshots is a coarse
//!   attribution (counts per report interval), for kernels without tracefs.
//!
//! Nothing here forks, execs or needs `unsafe`.

mod procfs;
mod tracefs;

pub use procfs::{parse_interrupts, parse_softirqs, Counter, ProcInterrupts};
pub use tracefs::{find_tracefs, Marker, Tracer, BUFFER_KB, EVENTS, MARK_MIN_INTERVAL_NS};
