//! `events/header_page`: where a ring-buffer page keeps its timestamp,
//! its commit word and its events.

use super::fields::find_field;
use crate::Error;

/// Where a page of the kernel's ring buffer keeps its fields, as
/// `events/header_page` says.
///
/// ```
/// use latscope_core::ringbuf::PageHeader;
/// let text = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;
/// \tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;
/// \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;
/// \tfield: char data;\toffset:12;\tsize:4084;\tsigned:0;";
/// assert_eq!(PageHeader::parse(text), Ok(PageHeader::LONG_4));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PageHeader {
    /// Offset of the page's `u64` timestamp, the base of its events'
    /// deltas.
    pub timestamp: u16,
    /// Offset of the commit word (`local_t`): the length of the data, and
    /// the lost-events flags.
    pub commit: u16,
    /// The commit word's size: 8 on 64-bit kernels, 4 on 32-bit ones. A
    /// stored lost-events count has the same size.
    pub commit_size: u8,
    /// Offset where the events start.
    pub data: u16,
}

impl PageHeader {
    /// A 64-bit kernel's pages (aarch64, x86-64): commit, 8 bytes at 8;
    /// events from 16.
    pub const LONG_8: Self = Self {
        timestamp: 0,
        commit: 8,
        commit_size: 8,
        data: 16,
    };

    /// A 32-bit kernel's pages (armv7): commit, 4 bytes at 8; events from
    /// 12.
    pub const LONG_4: Self = Self {
        timestamp: 0,
        commit: 8,
        commit_size: 4,
        data: 12,
    };

    /// Reads `events/header_page`.
    ///
    /// # Errors
    ///
    /// [`Error::BadTraceFormat`] if a field is missing, or sized or placed
    /// as no kernel places it.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let missing = Error::BadTraceFormat("header_page lacks timestamp, commit or data");
        let ts = find_field(text, "timestamp").ok_or(missing)?;
        let commit = find_field(text, "commit").ok_or(missing)?;
        let data = find_field(text, "data").ok_or(missing)?;
        let commit_size = match commit.size {
            4 => 4,
            8 => 8,
            _ => {
                return Err(Error::BadTraceFormat(
                    "header_page: commit is not 4 or 8 bytes",
                ))
            }
        };
        let ts_end = ts.offset.checked_add(8);
        let commit_end = commit.offset.checked_add(commit.size);
        let placed = ts.size == 8
            && ts_end.is_some_and(|e| e <= data.offset)
            && commit_end.is_some_and(|e| e <= data.offset)
            && data.offset <= 64;
        if !placed {
            return Err(Error::BadTraceFormat(
                "header_page: fields overlap the data or lie past 64 bytes",
            ));
        }
        Ok(Self {
            timestamp: ts.offset,
            commit: commit.offset,
            commit_size,
            data: data.offset,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `events/header_page` of an x86-64 kernel (6.18) and the aarch64
    /// board's (6.12), which are the same.
    const LONG_8_TEXT: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;
";

    #[test]
    fn both_word_sizes() {
        assert_eq!(PageHeader::parse(LONG_8_TEXT), Ok(PageHeader::LONG_8));
        let long_4 = LONG_8_TEXT
            .replace("commit;\toffset:8;\tsize:8", "commit;\toffset:8;\tsize:4")
            .replace("offset:16;\tsize:4080", "offset:12;\tsize:4084");
        assert_eq!(PageHeader::parse(&long_4), Ok(PageHeader::LONG_4));
    }

    #[test]
    fn refuses_what_no_kernel_writes() {
        assert!(PageHeader::parse("").is_err());
        let odd = LONG_8_TEXT.replace("commit;\toffset:8;\tsize:8", "commit;\toffset:8;\tsize:2");
        assert!(PageHeader::parse(&odd).is_err());
        let overlap = LONG_8_TEXT.replace("offset:16;", "offset:10;");
        assert!(PageHeader::parse(&overlap).is_err());
        let far = LONG_8_TEXT.replace("offset:16;", "offset:4000;");
        assert!(PageHeader::parse(&far).is_err());
    }
}
