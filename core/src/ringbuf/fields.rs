//! The `field:` lines of the kernel's format files, and reading a field
//! out of an event's payload.

use super::read_le;

/// How a field's bytes are found in an event's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Loc {
    /// At the field's offset, `size` bytes: an integer, or a fixed array
    /// such as `char prev_comm[16]`; size 0 is a trailing `char buf[]`
    /// that runs to the end of the payload.
    Fixed,
    /// `__data_loc`: a `u32` at the field's offset holds where the data
    /// lies in the payload (low 16 bits) and its length (high 16 bits).
    DataLoc,
    /// `__rel_loc`: the same, with the offset counted from the end of the
    /// `u32`.
    RelLoc,
}

/// Where a field lies in an event's payload, as its `format` file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Field {
    /// Byte offset in the payload (the common fields included).
    pub offset: u16,
    /// Size in bytes.
    pub size: u16,
    /// Whether an integer field is signed.
    pub signed: bool,
    /// How its bytes are found.
    pub loc: Loc,
}

impl Field {
    /// A fixed field.
    pub const fn fixed(offset: u16, size: u16, signed: bool) -> Self {
        Self {
            offset,
            size,
            signed,
            loc: Loc::Fixed,
        }
    }

    /// The field as an integer, sign-extended if it is signed; `None` past
    /// the payload's end or for a size other than 1, 2, 4 or 8.
    pub fn int(&self, payload: &[u8]) -> Option<i64> {
        let n = usize::from(self.size);
        if !matches!(n, 1 | 2 | 4 | 8) || self.loc != Loc::Fixed {
            return None;
        }
        let v = read_le(payload, usize::from(self.offset), n)?;
        let shift = 64 - 8 * n as u32;
        // The bits as they are; a signed field's top bit spreads left.
        let v = v.cast_signed();
        Some(if self.signed {
            (v << shift) >> shift
        } else {
            v
        })
    }

    /// The field's bytes: a fixed array whole, a trailing `char buf[]` to
    /// the payload's end, `__data_loc` and `__rel_loc` data where its word
    /// points; `None` where that lies past the payload.
    pub fn bytes<'a>(&self, payload: &'a [u8]) -> Option<&'a [u8]> {
        let at = usize::from(self.offset);
        let (start, len) = match self.loc {
            Loc::Fixed if self.size == 0 => return payload.get(at..),
            Loc::Fixed => (at, usize::from(self.size)),
            Loc::DataLoc | Loc::RelLoc => {
                let word = read_le(payload, at, 4)?;
                let off = usize::from(word as u16);
                let len = usize::from((word >> 16) as u16);
                let base = if self.loc == Loc::RelLoc {
                    at + usize::from(self.size)
                } else {
                    0
                };
                (base.checked_add(off)?, len)
            }
        };
        payload.get(start..start.checked_add(len)?)
    }

    /// The field's bytes as text, up to the first NUL; bytes that are not
    /// UTF-8 end it where they start.
    pub fn text<'a>(&self, payload: &'a [u8]) -> Option<&'a str> {
        Some(text_of(self.bytes(payload)?))
    }
}

/// `b` up to its first NUL, as text up to its first byte that is not
/// UTF-8.
pub(crate) fn text_of(b: &[u8]) -> &str {
    let b = b.split(|&x| x == 0).next().unwrap_or(b);
    match core::str::from_utf8(b) {
        Ok(s) => s,
        Err(e) => core::str::from_utf8(b.get(..e.valid_up_to()).unwrap_or(&[])).unwrap_or(""),
    }
}

/// One `field:` line of a format file (`\tfield:char prev_comm[16];\t
/// offset:8;\tsize:16;\tsigned:0;`): the field's name and where it lies.
/// `None` for any other line, or one whose numbers do not read.
pub(crate) fn parse_field(line: &str) -> Option<(&str, Field)> {
    let rest = line.trim_start().strip_prefix("field:")?;
    let mut parts = rest.split(';');
    let decl = parts.next()?.trim();
    let name = decl.rsplit(' ').next()?;
    let name = name.split('[').next().unwrap_or(name);
    let loc = if decl.starts_with("__data_loc ") {
        Loc::DataLoc
    } else if decl.starts_with("__rel_loc ") {
        Loc::RelLoc
    } else {
        Loc::Fixed
    };
    let (mut offset, mut size, mut signed) = (None, None, false);
    for p in parts {
        let p = p.trim();
        if let Some(v) = p.strip_prefix("offset:") {
            offset = v.parse::<u16>().ok();
        } else if let Some(v) = p.strip_prefix("size:") {
            size = v.parse::<u16>().ok();
        } else if let Some(v) = p.strip_prefix("signed:") {
            signed = v == "1";
        }
    }
    if name.is_empty() {
        return None;
    }
    Some((
        name,
        Field {
            offset: offset?,
            size: size?,
            signed,
            loc,
        },
    ))
}

/// The field called `name` in format text, if it has one.
pub(crate) fn find_field(text: &str, name: &str) -> Option<Field> {
    text.lines()
        .filter_map(parse_field)
        .find(|(n, _)| *n == name)
        .map(|(_, f)| f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_lines_as_the_kernel_writes_them() {
        let l = "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;";
        assert_eq!(
            parse_field(l),
            Some(("prev_comm", Field::fixed(8, 16, false)))
        );
        let l = "\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;";
        let (n, f) = parse_field(l).unwrap();
        assert_eq!((n, f.loc, f.offset), ("name", Loc::DataLoc, 12));
        // header_page puts a space after the colon and has no
        // `signed:` on old kernels.
        let l = "\tfield: local_t commit;\toffset:8;\tsize:8;";
        assert_eq!(parse_field(l), Some(("commit", Field::fixed(8, 8, false))));
        let l = "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;";
        assert_eq!(
            parse_field(l),
            Some(("common_pid", Field::fixed(4, 4, true)))
        );
        assert_eq!(parse_field("print fmt: \"x\""), None);
        assert_eq!(parse_field("\tfield:int x;\toffset:;\tsize:4;"), None);
        assert_eq!(parse_field("\tfield:int x;\toffset:99999;\tsize:4;"), None);
    }

    #[test]
    fn integers_are_little_endian_and_sign_extended() {
        let p = [
            0u8, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0x2a, 0, 0, 0, 0, 0, 0, 0x80,
        ];
        assert_eq!(Field::fixed(4, 4, true).int(&p), Some(-2));
        assert_eq!(Field::fixed(4, 4, false).int(&p), Some(0xffff_fffe));
        assert_eq!(Field::fixed(4, 2, true).int(&p), Some(-2));
        assert_eq!(Field::fixed(8, 8, true).int(&p), Some(i64::MIN + 0x2a));
        assert_eq!(Field::fixed(8, 1, false).int(&p), Some(0x2a));
        assert_eq!(Field::fixed(12, 8, false).int(&p), None, "past the end");
        assert_eq!(Field::fixed(0, 3, false).int(&p), None, "no such integer");
    }

    #[test]
    fn strings_fixed_dynamic_and_trailing() {
        // common fields (8 bytes), `int irq` at 8, `__data_loc name` at 12
        // pointing at offset 16, length 5; the data.
        let mut p = [0u8; 24];
        p[8] = 13;
        p[12..16].copy_from_slice(&(16u32 | (5 << 16)).to_le_bytes());
        p[16..21].copy_from_slice(b"uart\0");
        let name = Field {
            loc: Loc::DataLoc,
            ..Field::fixed(12, 4, false)
        };
        assert_eq!(name.text(&p), Some("uart"));
        // `__rel_loc`: offset counted from the end of the word (16).
        p[12..16].copy_from_slice(&(5u32 << 16).to_le_bytes());
        let rel = Field {
            loc: Loc::RelLoc,
            ..name
        };
        assert_eq!(rel.text(&p), Some("uart"));
        // A word pointing past the payload.
        p[12..16].copy_from_slice(&(20u32 | (9 << 16)).to_le_bytes());
        assert_eq!(name.text(&p), None);
        // A trailing array runs to the end; text stops at the NUL.
        assert_eq!(Field::fixed(16, 0, false).text(&p), Some("uart"));
        assert_eq!(Field::fixed(16, 3, false).text(&p), Some("uar"));
        assert_eq!(text_of(b"ab\xffcd"), "ab");
    }
}
