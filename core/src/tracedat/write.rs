//! Writing a trace.dat, version 6.

use super::{FLYRECORD, MAGIC, OPTIONS, OPTION_TRACECLOCK};
use crate::Error;

/// One event's `format` file and the system (`events/<system>/`) it is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format<'a> {
    /// `irq`, `sched`, `ftrace`, ...
    pub system: &'a str,
    /// The `format` file's text.
    pub text: &'a str,
}

/// What a trace.dat says before its CPU data.
#[derive(Debug, Clone, Copy)]
pub struct Header<'a> {
    /// Bytes of a long in the target's user space: 4 or 8.
    pub long_size: u8,
    /// The kernel's page size, and so the size of every page of data.
    pub page_size: u32,
    /// `events/header_page`.
    pub header_page: &'a str,
    /// `events/header_event`.
    pub header_event: &'a str,
    /// The events' formats, in any order (grouped by system on writing,
    /// `ftrace` apart as the format wants).
    pub formats: &'a [Format<'a>],
    /// `saved_cmdlines`: `PID COMM` lines.
    pub cmdlines: &'a str,
    /// The `trace_clock` file's text (`... [mono] ...`), or empty.
    pub trace_clock: &'a str,
    /// CPUs the file has a slot for (the highest CPU with data, plus one,
    /// at least).
    pub cpus: u32,
}

/// One CPU's pages: whole pages, oldest first.
#[derive(Debug, Clone, Copy)]
pub struct CpuData<'a> {
    /// The CPU.
    pub cpu: u32,
    /// Its pages, a whole number of [`Header::page_size`].
    pub pages: &'a [u8],
}

/// A checked header and its data, ready to write: the size of the file,
/// and the file itself by [`Layout::write`].
///
/// ```
/// use latscope_core::tracedat::{CpuData, Header, Layout};
/// let h = Header {
///     long_size: 8, page_size: 4096, header_page: "", header_event: "",
///     formats: &[], cmdlines: "", trace_clock: "", cpus: 2,
/// };
/// let page = [0u8; 4096];
/// let data = [CpuData { cpu: 1, pages: &page }];
/// let layout = Layout::new(h, &data).unwrap();
/// let mut file = Vec::new();
/// layout.write(&mut |b: &[u8]| { file.extend_from_slice(b); Ok::<(), ()>(()) }).unwrap();
/// assert_eq!(file.len() as u64, layout.size());
/// assert_eq!(file.len() % 4096, 0);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Layout<'a> {
    header: Header<'a>,
    data: &'a [CpuData<'a>],
    /// Where the CPU data begins, page-aligned.
    data_at: u64,
}

/// Writes the section of each `system` in `formats` (each once, in order
/// of first appearance) through `each`: the system, and how many formats
/// it has.
fn systems<'a>(formats: &[Format<'a>], mut each: impl FnMut(&'a str, u32)) {
    for (i, f) in formats.iter().enumerate() {
        if f.system == "ftrace" || formats[..i].iter().any(|g| g.system == f.system) {
            continue;
        }
        let n = formats.iter().filter(|g| g.system == f.system).count();
        each(f.system, u32::try_from(n).unwrap_or(u32::MAX));
    }
}

impl<'a> Layout<'a> {
    /// Checks `header` and `data`.
    ///
    /// # Errors
    ///
    /// [`Error::BadTraceFile`] if the long size is not 4 or 8, the page
    /// size not a power of two of at least 256 bytes, a CPU's data not
    /// whole pages, a CPU at or beyond [`Header::cpus`] or given twice, or
    /// a system name with a NUL.
    pub fn new(header: Header<'a>, data: &'a [CpuData<'a>]) -> Result<Self, Error> {
        let bad = |why| Error::BadTraceFile { offset: 0, why };
        if !matches!(header.long_size, 4 | 8) {
            return Err(bad("a long is 4 or 8 bytes"));
        }
        let page = header.page_size;
        if !page.is_power_of_two() || page < 256 {
            return Err(bad("page size not a power of two of 256 bytes or more"));
        }
        for (i, d) in data.iter().enumerate() {
            if d.pages.len() % page as usize != 0 {
                return Err(bad("CPU data not whole pages"));
            }
            if d.cpu >= header.cpus || data[..i].iter().any(|e| e.cpu == d.cpu) {
                return Err(bad("CPU beyond the CPU count, or given twice"));
            }
        }
        if header.formats.iter().any(|f| f.system.contains('\0')) {
            return Err(bad("system name with a NUL"));
        }
        let mut layout = Self {
            header,
            data,
            data_at: 0,
        };
        let mut len = 0u64;
        layout
            .header_bytes(&mut |b: &[u8]| {
                len += b.len() as u64;
                Ok::<(), ()>(())
            })
            .ok();
        layout.data_at = len.next_multiple_of(u64::from(page));
        Ok(layout)
    }

    /// The file's size in bytes.
    pub fn size(&self) -> u64 {
        self.data_at + self.data.iter().map(|d| d.pages.len() as u64).sum::<u64>()
    }

    /// Writes the file through `out`, in order, to its end.
    ///
    /// # Errors
    ///
    /// The first error of `out`; nothing is written after it.
    pub fn write<E>(&self, out: &mut impl FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
        let mut at = self.header_bytes(out)?;
        const ZEROS: [u8; 512] = [0; 512];
        while at < self.data_at {
            let n = (self.data_at - at).min(ZEROS.len() as u64) as usize;
            out(&ZEROS[..n])?;
            at += n as u64;
        }
        for cpu in 0..self.header.cpus {
            if let Some(d) = self.data.iter().find(|d| d.cpu == cpu) {
                out(d.pages)?;
            }
        }
        Ok(())
    }

    /// Every byte before the CPU data's padding; returns how many.
    fn header_bytes<E>(&self, out: &mut impl FnMut(&[u8]) -> Result<(), E>) -> Result<u64, E> {
        let h = &self.header;
        let mut n = 0u64;
        let mut put = |b: &[u8]| {
            n += b.len() as u64;
            out(b)
        };
        put(&MAGIC)?;
        put(b"6\0")?;
        put(&[0, h.long_size])?;
        put(&h.page_size.to_le_bytes())?;
        put(b"header_page\0")?;
        put(&(h.header_page.len() as u64).to_le_bytes())?;
        put(h.header_page.as_bytes())?;
        put(b"header_event\0")?;
        put(&(h.header_event.len() as u64).to_le_bytes())?;
        put(h.header_event.as_bytes())?;
        let ftrace = h.formats.iter().filter(|f| f.system == "ftrace");
        put(&(ftrace.clone().count() as u32).to_le_bytes())?;
        for f in ftrace {
            put(&(f.text.len() as u64).to_le_bytes())?;
            put(f.text.as_bytes())?;
        }
        let mut count = 0u32;
        systems(h.formats, |_, _| count += 1);
        put(&count.to_le_bytes())?;
        let mut result = Ok(());
        systems(h.formats, |system, _| {
            if result.is_ok() {
                result = self.system(system, &mut put);
            }
        });
        result?;
        // kallsyms and printk formats: empty
        put(&0u32.to_le_bytes())?;
        put(&0u32.to_le_bytes())?;
        put(&(h.cmdlines.len() as u64).to_le_bytes())?;
        put(h.cmdlines.as_bytes())?;
        put(&h.cpus.to_le_bytes())?;
        put(OPTIONS)?;
        if !h.trace_clock.is_empty() {
            put(&OPTION_TRACECLOCK.to_le_bytes())?;
            put(&(h.trace_clock.len() as u32 + 1).to_le_bytes())?;
            put(h.trace_clock.as_bytes())?;
            put(&[0])?;
        }
        put(&0u16.to_le_bytes())?;
        put(FLYRECORD)?;
        let mut at = self.data_at;
        for cpu in 0..h.cpus {
            let size = self
                .data
                .iter()
                .find(|d| d.cpu == cpu)
                .map_or(0, |d| d.pages.len() as u64);
            put(&at.to_le_bytes())?;
            put(&size.to_le_bytes())?;
            at += size;
        }
        // trace-cmd's version-6 writer puts the clock here too, and its
        // `dump --clock` reads it from here, not from the option
        put(&(h.trace_clock.len() as u64).to_le_bytes())?;
        put(h.trace_clock.as_bytes())?;
        Ok(n)
    }

    /// One system's name, count and formats.
    fn system<E>(
        &self,
        system: &str,
        put: &mut impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let formats = self.header.formats.iter().filter(|f| f.system == system);
        put(system.as_bytes())?;
        put(&[0])?;
        put(&(formats.clone().count() as u32).to_le_bytes())?;
        for f in formats {
            put(&(f.text.len() as u64).to_le_bytes())?;
            put(f.text.as_bytes())?;
        }
        Ok(())
    }
}
