//! Numbers as cyclictest 2.4 reads them: C's `atoi` (and `strtol` for
//! `-D`), which skip leading white space, take an optional sign and the
//! digits that follow, and ignore the rest of the word.
//!
//! latscope reads the same value, says so when it ignored part of the word
//! (a warning, never silence), and refuses a value too large for 64 bits
//! (C's `atoi` would wrap it).

use crate::error::Error;

/// A number read from the front of a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read<'a> {
    /// The value (0 if the word has no digits).
    pub value: i64,
    /// What followed the digits ("" for a clean number).
    pub rest: &'a str,
    /// Whether there was at least one digit.
    pub digits: bool,
}

impl Read<'_> {
    /// Whether the whole word was the number.
    pub fn clean(&self) -> bool {
        self.digits && self.rest.is_empty()
    }
}

/// C's white space (`isspace` in the C locale).
fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// `atoi(word)`, as glibc reads it, without its wrap-around: a value
/// beyond 64 bits is an error naming `flag`.
pub fn atoi<'a>(flag: &str, word: &'a str) -> Result<Read<'a>, Error> {
    let s = word.trim_start_matches(is_c_space);
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, rest) = s.split_at(end);
    let mut value: i64 = 0;
    for d in digits.bytes() {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(i64::from(d - b'0')))
            .ok_or_else(|| Error::usage(format!("{flag} '{word}': too large")))?;
    }
    Ok(Read {
        value: if negative { -value } else { value },
        rest,
        digits: !digits.is_empty(),
    })
}

/// The note for a word that was not all number, if any; `zero` says
/// what 0 means for `flag` (`-l`: no limit), if it means more than 0.
pub fn note(flag: &str, word: &str, r: &Read<'_>, zero: Option<&str>) -> Option<String> {
    let meaning = match zero {
        Some(m) if r.value == 0 => format!(" ({m})"),
        _ => String::new(),
    };
    if r.clean() {
        None
    } else if !r.digits {
        Some(format!(
            "{flag} '{word}' is not a number: read as 0{meaning}, as cyclictest's atoi() does"
        ))
    } else {
        Some(format!(
            "{flag} '{word}' read as {}{meaning}, as cyclictest's atoi() does (ignored '{}')",
            r.value, r.rest
        ))
    }
}

/// `-D`: cyclictest's `parse_time_string`: a number, then `m`, `h` or `d`
/// (either case) for minutes, hours or days; anything else means seconds.
/// Returns the seconds and a note if a suffix was not one of those (or
/// `s`).
pub fn duration_s(word: &str) -> Result<(i64, Option<String>), Error> {
    let r = atoi("-D", word)?;
    let unit = r.rest.chars().next();
    let factor = match unit {
        Some('m' | 'M') => 60,
        Some('h' | 'H') => 3600,
        Some('d' | 'D') => 86_400,
        _ => 1,
    };
    let secs = r
        .value
        .checked_mul(factor)
        .ok_or_else(|| Error::usage(format!("-D '{word}': too long")))?;
    let plain = matches!(r.rest, "" | "s" | "m" | "M" | "h" | "H" | "d" | "D");
    let note = if !r.digits {
        Some(format!(
            "-D '{word}' is not a duration: read as 0 (no limit), as cyclictest does"
        ))
    } else if !plain {
        let meaning = if secs == 0 { " (no limit)" } else { "" };
        Some(format!(
            "-D '{word}' read as {secs} s{meaning}, as cyclictest does (it reads only the first letter after the number: m, h or d, else seconds)"
        ))
    } else {
        None
    };
    Ok((secs, note))
}

/// A decimal integer in `lo..=hi` (latscope's own options: no `atoi`).
pub fn parse_u64(flag: &str, v: &str, lo: u64, hi: u64) -> Result<u64, Error> {
    let n: u64 = v
        .parse()
        .map_err(|_| Error::usage(format!("{flag} '{v}': not a whole number")))?;
    if n < lo || n > hi {
        return Err(Error::usage(format!(
            "{flag} {n}: must be between {lo} and {hi}"
        )));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(word: &str) -> i64 {
        atoi("-x", word).unwrap().value
    }

    #[test]
    fn reads_like_glibc_atoi() {
        assert_eq!(v("3500"), 3500);
        assert_eq!(v(" 3500"), 3500, "rteval's \"-h 3500\" word");
        assert_eq!(v("\t+12"), 12);
        assert_eq!(v("-7"), -7);
        assert_eq!(v("1e5"), 1);
        assert_eq!(v("all"), 0);
        assert_eq!(v(""), 0);
        assert_eq!(v("- 5"), 0);
        assert_eq!(v("=100"), 0);
        assert!(atoi("-l", "99999999999999999999").is_err());
        let r = atoi("-l", "1e5").unwrap();
        assert_eq!(
            note("-l", "1e5", &r, Some("no limit")).unwrap(),
            "-l '1e5' read as 1, as cyclictest's atoi() does (ignored 'e5')"
        );
        assert_eq!(
            note("-h", " 3500", &atoi("-h", " 3500").unwrap(), None),
            None
        );
        assert_eq!(
            note("-i", "abc", &atoi("-i", "abc").unwrap(), None).unwrap(),
            "-i 'abc' is not a number: read as 0, as cyclictest's atoi() does"
        );
        // what 0 means is said only where it is read as 0
        assert_eq!(
            note("-l", "abc", &atoi("-l", "abc").unwrap(), Some("no limit")).unwrap(),
            "-l 'abc' is not a number: read as 0 (no limit), as cyclictest's atoi() does"
        );
        assert_eq!(
            note("-l", "0x", &atoi("-l", "0x").unwrap(), Some("no limit")).unwrap(),
            "-l '0x' read as 0 (no limit), as cyclictest's atoi() does (ignored 'x')"
        );
    }

    #[test]
    fn durations_like_parse_time_string() {
        assert_eq!(duration_s("10").unwrap(), (10, None));
        assert_eq!(duration_s("10s").unwrap(), (10, None));
        assert_eq!(duration_s("2m").unwrap(), (120, None));
        assert_eq!(duration_s("2H").unwrap(), (7200, None));
        assert_eq!(duration_s("1d").unwrap(), (86_400, None));
        let (s, note) = duration_s("500ms").unwrap();
        assert_eq!(s, 30_000, "m is minutes whatever follows");
        assert!(note.unwrap().contains("500ms"));
        let (s, note) = duration_s("10x").unwrap();
        assert_eq!((s, note.is_some()), (10, true));
        assert!(!note.unwrap().contains("no limit"));
        let (s, note) = duration_s("0x").unwrap();
        assert_eq!(s, 0);
        assert!(note.unwrap().contains("read as 0 s (no limit)"));
        let (s, note) = duration_s("abc").unwrap();
        assert_eq!(s, 0);
        assert!(note.unwrap().contains("read as 0 (no limit)"));
        assert!(duration_s("99999999999999999d").is_err());
    }
}
