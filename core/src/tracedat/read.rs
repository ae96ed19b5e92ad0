//! Reading a trace.dat, version 6: every section bounds-checked once, on
//! [`TraceDat::parse`], so that nothing read later can fail or panic.

use super::{Format, FLYRECORD, LATENCY, MAGIC, OPTIONS, OPTION_TRACECLOCK};
use crate::ringbuf::read_le;
use crate::Error;

/// A trace.dat's sections, borrowed from its bytes.
///
/// ```
/// use latscope_core::tracedat::{CpuData, Header, Layout, TraceDat};
/// let h = Header {
///     long_size: 4, page_size: 4096, header_page: "hp", header_event: "he",
///     formats: &[], cmdlines: "1 init\n", trace_clock: "[mono]", cpus: 2,
/// };
/// let page = [7u8; 4096];
/// let data = [CpuData { cpu: 1, pages: &page }];
/// let mut file = Vec::new();
/// Layout::new(h, &data).unwrap()
///     .write(&mut |b: &[u8]| { file.extend_from_slice(b); Ok::<(), ()>(()) }).unwrap();
/// let t = TraceDat::parse(&file).unwrap();
/// assert_eq!((t.long_size(), t.cpus(), t.cmdlines()), (4, 2, "1 init\n"));
/// assert_eq!((t.cpu(0), t.cpu(1)), (Some(&[][..]), Some(&page[..])));
/// assert_eq!(t.trace_clock(), Some("mono"));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TraceDat<'a> {
    bytes: &'a [u8],
    long_size: u8,
    page_size: u32,
    header_page: &'a str,
    header_event: &'a str,
    /// Where the ftrace formats' count is.
    formats_at: usize,
    cmdlines: &'a str,
    cpus: u32,
    /// Where the first option is.
    options_at: usize,
    /// Where the flyrecord table is.
    table_at: usize,
}

/// A cursor over the file's bytes; every read is checked.
#[derive(Debug, Clone, Copy)]
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn bad(&self, why: &'static str) -> Error {
        Error::BadTraceFile {
            offset: u64::try_from(self.at).unwrap_or(u64::MAX),
            why,
        }
    }

    fn take(&mut self, n: u64, what: &'static str) -> Result<&'a [u8], Error> {
        let n = usize::try_from(n).map_err(|_| self.bad(what))?;
        let end = self.at.checked_add(n).ok_or(self.bad(what))?;
        let s = self.b.get(self.at..end).ok_or(self.bad(what))?;
        self.at = end;
        Ok(s)
    }

    fn num(&mut self, n: usize, what: &'static str) -> Result<u64, Error> {
        let v = read_le(self.b, self.at, n).ok_or(self.bad(what))?;
        self.at += n;
        Ok(v)
    }

    fn text(&mut self, n: u64, what: &'static str) -> Result<&'a str, Error> {
        let at = *self;
        core::str::from_utf8(self.take(n, what)?).map_err(|_| at.bad("text not UTF-8"))
    }

    /// A NUL-terminated string (without its NUL).
    fn cstr(&mut self, what: &'static str) -> Result<&'a str, Error> {
        let rest = self.b.get(self.at..).unwrap_or(&[]);
        let n = rest.iter().position(|&c| c == 0).ok_or(self.bad(what))?;
        let s = self.text(n as u64, what)?;
        self.at += 1;
        Ok(s)
    }

    /// `count` formats of 8-byte size and text.
    fn skip_formats(&mut self, count: u64) -> Result<(), Error> {
        for _ in 0..count {
            let n = self.num(8, "format size past the end")?;
            self.text(n, "format past the end")?;
        }
        Ok(())
    }
}

impl<'a> TraceDat<'a> {
    /// Reads the sections of the trace.dat `bytes`.
    ///
    /// # Errors
    ///
    /// [`Error::TraceFileVersion`] for another version than 6 (trace-cmd
    /// writes 7 by default), [`Error::BadTraceFile`] with the offset of
    /// the first byte that is not what the format says.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        let mut c = Cursor { b: bytes, at: 0 };
        if c.take(10, "not a trace.dat")? != MAGIC {
            return Err(Cursor { b: bytes, at: 0 }.bad("not a trace.dat"));
        }
        let version = c.cstr("no version")?;
        if version != "6" {
            return Err(Error::TraceFileVersion(version.parse().unwrap_or(0)));
        }
        let endian = c.num(1, "no endianness")?;
        if endian != 0 {
            return Err(c.bad("big-endian trace"));
        }
        let long_size = c.num(1, "no long size")? as u8;
        if !matches!(long_size, 4 | 8) {
            return Err(c.bad("a long of neither 4 nor 8 bytes"));
        }
        let page_size = c.num(4, "no page size")? as u32;
        if !page_size.is_power_of_two() || page_size < 256 {
            return Err(c.bad("page size not a power of two of 256 bytes or more"));
        }
        let header_page = Self::named(&mut c, "header_page", "no header_page")?;
        let header_event = Self::named(&mut c, "header_event", "no header_event")?;
        let formats_at = c.at;
        let n = c.num(4, "no ftrace format count")?;
        c.skip_formats(n)?;
        for _ in 0..c.num(4, "no event system count")? {
            c.cstr("system name past the end")?;
            let n = c.num(4, "no format count")?;
            c.skip_formats(n)?;
        }
        let n = c.num(4, "no kallsyms size")?;
        c.take(n, "kallsyms past the end")?;
        let n = c.num(4, "no printk size")?;
        c.take(n, "printk formats past the end")?;
        let n = c.num(8, "no cmdlines size")?;
        let cmdlines = c.text(n, "cmdlines past the end")?;
        let cpus = c.num(4, "no CPU count")? as u32;
        let mut t = Self {
            bytes,
            long_size,
            page_size,
            header_page,
            header_event,
            formats_at,
            cmdlines,
            cpus,
            options_at: 0,
            table_at: 0,
        };
        let mut section = c.take(10, "no options or flyrecord")?;
        if section == OPTIONS {
            t.options_at = c.at;
            while c.num(2, "option past the end")? != 0 {
                let n = c.num(4, "option size past the end")?;
                c.take(n, "option past the end")?;
            }
            section = c.take(10, "no flyrecord")?;
        }
        if section == LATENCY {
            return Err(c.bad("a latency trace (text), not per-CPU pages"));
        }
        if section != FLYRECORD {
            return Err(c.bad("no flyrecord"));
        }
        t.table_at = c.at;
        for _ in 0..cpus {
            let at = c.num(8, "CPU offset past the end")?;
            let size = c.num(8, "CPU size past the end")?;
            let mut data = Cursor {
                b: bytes,
                at: usize::try_from(at).unwrap_or(usize::MAX),
            };
            if size > 0 {
                data.take(size, "CPU data past the end")?;
            }
        }
        Ok(t)
    }

    /// A section of a name, an 8-byte size, and text.
    fn named(c: &mut Cursor<'a>, name: &str, why: &'static str) -> Result<&'a str, Error> {
        if c.cstr(why)? != name {
            return Err(c.bad(why));
        }
        let n = c.num(8, why)?;
        c.text(n, why)
    }

    /// Bytes of a long in the target's user space.
    pub fn long_size(&self) -> u8 {
        self.long_size
    }

    /// The page size of the CPU data.
    pub fn page_size(&self) -> u32 {
        self.page_size
    }

    /// `events/header_page`.
    pub fn header_page(&self) -> &'a str {
        self.header_page
    }

    /// `events/header_event`.
    pub fn header_event(&self) -> &'a str {
        self.header_event
    }

    /// Every event format, `ftrace`'s first.
    pub fn formats(&self) -> Formats<'a> {
        let mut c = Cursor {
            b: self.bytes,
            at: self.formats_at,
        };
        let left = c.num(4, "").unwrap_or(0);
        Formats {
            c,
            system: "ftrace",
            left,
            systems: None,
        }
    }

    /// The pid-to-comm lines.
    pub fn cmdlines(&self) -> &'a str {
        self.cmdlines
    }

    /// The CPU count.
    pub fn cpus(&self) -> u32 {
        self.cpus
    }

    /// Every option: its id and its bytes.
    pub fn options(&self) -> Options<'a> {
        Options {
            c: Cursor {
                b: self.bytes,
                at: self.options_at,
            },
            done: self.options_at == 0,
        }
    }

    /// The trace clock, from the option that holds the `trace_clock`
    /// file (the bracketed name), if the file has one.
    pub fn trace_clock(&self) -> Option<&'a str> {
        let (_, b) = self.options().find(|(id, _)| *id == OPTION_TRACECLOCK)?;
        super::clock_in(core::str::from_utf8(b).ok()?)
    }

    /// The pages of `cpu` (empty for a CPU with none), or `None` for a CPU
    /// beyond the count.
    pub fn cpu(&self, cpu: u32) -> Option<&'a [u8]> {
        if cpu >= self.cpus {
            return None;
        }
        let mut c = Cursor {
            b: self.bytes,
            at: self.table_at + cpu as usize * 16,
        };
        let at = c.num(8, "").ok()?;
        let size = c.num(8, "").ok()?;
        if size == 0 {
            return Some(&[]);
        }
        let at = usize::try_from(at).ok()?;
        let end = at.checked_add(usize::try_from(size).ok()?)?;
        self.bytes.get(at..end)
    }
}

/// The formats of a [`TraceDat`], with their systems.
#[derive(Debug, Clone)]
pub struct Formats<'a> {
    c: Cursor<'a>,
    system: &'a str,
    /// Formats left in this system.
    left: u64,
    /// Systems left after `ftrace`'s formats (`None` while in them).
    systems: Option<u64>,
}

impl<'a> Iterator for Formats<'a> {
    type Item = Format<'a>;

    fn next(&mut self) -> Option<Format<'a>> {
        while self.left == 0 {
            let systems = match self.systems {
                None => self.c.num(4, "").ok()?,
                Some(n) => n,
            };
            if systems == 0 {
                self.systems = Some(0);
                return None;
            }
            self.systems = Some(systems - 1);
            self.system = self.c.cstr("").ok()?;
            self.left = self.c.num(4, "").ok()?;
        }
        self.left -= 1;
        let n = self.c.num(8, "").ok()?;
        let text = self.c.text(n, "").ok()?;
        Some(Format {
            system: self.system,
            text,
        })
    }
}

/// The options of a [`TraceDat`]: id and bytes.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    c: Cursor<'a>,
    done: bool,
}

impl<'a> Iterator for Options<'a> {
    type Item = (u16, &'a [u8]);

    fn next(&mut self) -> Option<(u16, &'a [u8])> {
        if self.done {
            return None;
        }
        let id = self.c.num(2, "").ok()? as u16;
        if id == 0 {
            self.done = true;
            return None;
        }
        let n = self.c.num(4, "").ok()?;
        Some((id, self.c.take(n, "").ok()?))
    }
}
