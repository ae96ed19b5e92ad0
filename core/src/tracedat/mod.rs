//! trace.dat files, version 6: what `trace-cmd report` and KernelShark
//! open, laid out as trace-cmd's `trace-cmd.dat.v6(5)` says.
//!
//! A spike's window leaves a target as one ([`Layout`]), and the host
//! explains one again ([`TraceDat`]), with the same decoder and classifier
//! as the target ([`crate::ringbuf`]). The file holds, in order:
//!
//! 1. the magic, `"6\0"`, the endianness (0, little), the size of a long
//!    of the target's user space (4 on armv7) and the page size;
//! 2. `header_page` and `header_event`, as the kernel gives them;
//! 3. the `ftrace` system's event formats, then every other system's;
//! 4. kallsyms and printk formats, both empty: `/proc/kallsyms` would give
//!    away the kernel's address layout (KASLR), and these files are meant
//!    for mailing lists;
//! 5. the pid-to-comm lines (`saved_cmdlines`) and the CPU count;
//! 6. the options (the trace clock), then `flyrecord`: an offset and a
//!    size per CPU (0 for a CPU with no pages), and each CPU's pages,
//!    page-aligned, whole, as `per_cpu/cpuN/trace_pipe_raw` gave them.
//!
//! Nothing here allocates. Every number is little-endian: big-endian
//! kernels are not supported ([`crate::ringbuf`]).

mod read;
mod write;

pub use read::{Formats, Options, TraceDat};
pub use write::{CpuData, Format, Header, Layout};

/// The first ten bytes of every trace.dat.
pub const MAGIC: [u8; 10] = *b"\x17\x08\x44tracing";

/// The option that holds the `trace_clock` file's text.
pub const OPTION_TRACECLOCK: u16 = 4;

/// The clock a `trace_clock` file's text names in brackets (`local
/// global [mono] boot` names `mono`), if it does: what a trace.dat's
/// TRACECLOCK option holds, and what a target reads to write one.
///
/// ```
/// use latscope_core::tracedat::clock_in;
/// assert_eq!(clock_in("local global [mono] boot\n"), Some("mono"));
/// assert_eq!(clock_in("local global"), None);
/// ```
pub fn clock_in(text: &str) -> Option<&str> {
    let from = text.find('[')? + 1;
    let to = from + text[from..].find(']')?;
    Some(&text[from..to])
}

/// The section names the header's last part begins with.
const OPTIONS: &[u8; 10] = b"options  \0";
const FLYRECORD: &[u8; 10] = b"flyrecord\0";
const LATENCY: &[u8; 10] = b"latency  \0";

#[cfg(test)]
mod tests;
