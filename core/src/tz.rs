//! Local time without a C library: the UTC offset of an instant from TZif
//! data (RFC 8536, versions 1 to 4, as in `/etc/localtime`) or from a POSIX
//! `TZ` rule string (`CET-1CEST,M3.5.0,M10.5.0/3`), and the civil calendar.
//!
//! The caller reads the file; this module only looks at the bytes, so it
//! needs no allocator and any input costs bounded work. Leap-second records
//! are skipped (Linux's clocks do not count them).

use postcard::experimental::max_size::MaxSize;
use postcard_schema::Schema;
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// A wall-clock instant and the local time zone's offset from UTC then.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, MaxSize, Schema)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WallTime {
    /// Seconds since 1970-01-01 UTC.
    pub unix_s: i64,
    /// Offset of local time from UTC in seconds, east positive.
    pub utc_offset_s: i32,
}

impl WallTime {
    /// `unix_s` in `zone` (UTC if the zone data cannot be read).
    pub fn in_zone(unix_s: i64, zone: &Zone<'_>) -> WallTime {
        WallTime {
            unix_s,
            utc_offset_s: zone.utc_offset(unix_s).unwrap_or(0),
        }
    }
}

/// The time zone a program's local time follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone<'a> {
    /// UTC (no `TZ` and no `/etc/localtime`, or `TZ` empty).
    Utc,
    /// The contents of a TZif file.
    Tzif(&'a [u8]),
    /// A POSIX `TZ` rule string.
    Posix(&'a str),
}

impl Zone<'_> {
    /// Offset from UTC in seconds (east positive) at `unix_s`.
    ///
    /// # Errors
    ///
    /// [`Error::BadTimeZone`] if the TZif data or the POSIX rule does not read.
    pub fn utc_offset(&self, unix_s: i64) -> Result<i32, Error> {
        match self {
            Zone::Utc => Ok(0),
            Zone::Tzif(data) => tzif_offset(data, unix_s),
            Zone::Posix(s) => posix_offset(s, unix_s),
        }
    }
}

const BAD_TZIF: Error = Error::BadTimeZone("not TZif data");
const BAD_RULE: Error = Error::BadTimeZone("not a POSIX TZ rule");

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`).
pub(crate) const fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day since 1970-01-01: (year, month 1-12, day 1-31).
pub const fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

/// Day of the week of a day since 1970-01-01 (0 = Sunday).
pub(crate) const fn weekday(days: i64) -> u32 {
    (days + 4).rem_euclid(7) as u32
}

const fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// A bounds-checked big-endian reader.
struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let end = self.at.checked_add(n).ok_or(BAD_TZIF)?;
        let s = self.data.get(self.at..end).ok_or(BAD_TZIF)?;
        self.at = end;
        Ok(s)
    }

    fn u32(&mut self) -> Result<u32, Error> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// The counts of a TZif header.
struct Header {
    version: u8,
    isutcnt: usize,
    isstdcnt: usize,
    leapcnt: usize,
    timecnt: usize,
    typecnt: usize,
    charcnt: usize,
}

impl Header {
    fn read(r: &mut Bytes<'_>) -> Result<Header, Error> {
        if r.take(4)? != b"TZif" {
            return Err(BAD_TZIF);
        }
        let version = r.take(16)?[0];
        let mut c = [0usize; 6];
        for v in c.iter_mut() {
            *v = r.u32()? as usize;
        }
        let h = Header {
            version,
            isutcnt: c[0],
            isstdcnt: c[1],
            leapcnt: c[2],
            timecnt: c[3],
            typecnt: c[4],
            charcnt: c[5],
        };
        if h.typecnt == 0 {
            return Err(BAD_TZIF);
        }
        Ok(h)
    }

    /// Length of the data block with `tsize`-byte times.
    fn block_len(&self, tsize: usize) -> usize {
        self.timecnt * (tsize + 1)
            + self.typecnt * 6
            + self.charcnt
            + self.leapcnt * (tsize + 4)
            + self.isstdcnt
            + self.isutcnt
    }
}

/// The offset at `t` from one TZif data block; `None` when `t` is at or
/// after the last transition and a footer rule exists to decide instead.
fn block_offset(
    d: &[u8],
    h: &Header,
    tsize: usize,
    t: i64,
    has_rule: bool,
) -> Result<Option<i32>, Error> {
    let time = |i: usize| -> i64 {
        let b = &d[i * tsize..(i + 1) * tsize];
        if tsize == 8 {
            i64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
        } else {
            i32::from_be_bytes([b[0], b[1], b[2], b[3]]) as i64
        }
    };
    let types = h.timecnt * tsize;
    let infos = types + h.timecnt;
    let utoff = |ty: usize| -> Result<i32, Error> {
        let at = infos + ty * 6;
        let b = d
            .get(at..at + 4)
            .filter(|_| ty < h.typecnt)
            .ok_or(BAD_TZIF)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    // transitions at or before t (they are sorted)
    let (mut lo, mut hi) = (0usize, h.timecnt);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if time(mid) <= t {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if lo == 0 {
        return utoff(0).map(Some);
    }
    if lo == h.timecnt && has_rule {
        return Ok(None);
    }
    utoff(d[types + lo - 1] as usize).map(Some)
}

/// UTC offset (s, east positive) at `unix_s` from TZif file contents.
pub(crate) fn tzif_offset(data: &[u8], unix_s: i64) -> Result<i32, Error> {
    let mut r = Bytes { data, at: 0 };
    let h1 = Header::read(&mut r)?;
    if h1.version == 0 {
        let d = r.take(h1.block_len(4))?;
        return block_offset(d, &h1, 4, unix_s, false).map(|o| o.unwrap_or(0));
    }
    r.take(h1.block_len(4))?;
    let h2 = Header::read(&mut r)?;
    let d = r.take(h2.block_len(8))?;
    // the footer: "\n<rule>\n"
    let rest = &data[r.at..];
    let rule = match rest.split_first() {
        Some((b'\n', tail)) => match tail.iter().position(|&b| b == b'\n') {
            Some(n) => core::str::from_utf8(&tail[..n]).map_err(|_| BAD_TZIF)?,
            None => return Err(BAD_TZIF),
        },
        _ => "",
    };
    match block_offset(d, &h2, 8, unix_s, !rule.is_empty())? {
        Some(o) => Ok(o),
        None => posix_offset(rule, unix_s),
    }
}

/// A parser over a POSIX TZ string.
struct Rule<'a> {
    s: &'a [u8],
    at: usize,
}

impl Rule<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// A zone name: three or more letters, or `<...>`.
    fn name(&mut self) -> Result<(), Error> {
        let start = self.at;
        if self.eat(b'<') {
            while let Some(c) = self.peek() {
                self.at += 1;
                if c == b'>' {
                    return if self.at - start >= 5 {
                        Ok(())
                    } else {
                        Err(BAD_RULE)
                    };
                }
            }
            return Err(BAD_RULE);
        }
        while self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
            self.at += 1;
        }
        if self.at - start >= 3 {
            Ok(())
        } else {
            Err(BAD_RULE)
        }
    }

    fn number(&mut self, max: i64) -> Result<i64, Error> {
        let start = self.at;
        let mut v: i64 = 0;
        while let Some(c) = self.peek().filter(u8::is_ascii_digit) {
            v = v * 10 + (c - b'0') as i64;
            if v > max {
                return Err(BAD_RULE);
            }
            self.at += 1;
        }
        if self.at == start {
            Err(BAD_RULE)
        } else {
            Ok(v)
        }
    }

    /// `[+-]hh[:mm[:ss]]` in seconds.
    fn time(&mut self, max_h: i64) -> Result<i64, Error> {
        let neg = if self.eat(b'-') {
            true
        } else {
            self.eat(b'+');
            false
        };
        let mut s = self.number(max_h)? * 3600;
        if self.eat(b':') {
            s += self.number(59)? * 60;
            if self.eat(b':') {
                s += self.number(59)?;
            }
        }
        Ok(if neg { -s } else { s })
    }

    /// `Jn`, `n` or `Mm.w.d` and an optional `/time`.
    fn date(&mut self) -> Result<(When, i64), Error> {
        let when = if self.eat(b'J') {
            When::Julian(self.number(365)?)
        } else if self.eat(b'M') {
            let m = self.number(12)?;
            let w = if self.eat(b'.') {
                self.number(5)?
            } else {
                return Err(BAD_RULE);
            };
            let d = if self.eat(b'.') {
                self.number(6)?
            } else {
                return Err(BAD_RULE);
            };
            if m == 0 || w == 0 {
                return Err(BAD_RULE);
            }
            When::Month(m as u32, w as u32, d as u32)
        } else {
            When::Zero(self.number(365)?)
        };
        let t = if self.eat(b'/') {
            self.time(167)?
        } else {
            7200
        };
        Ok((when, t))
    }
}

/// A day of the year in a rule.
#[derive(Clone, Copy)]
enum When {
    /// `Jn`: 1..365, February 29 never counted.
    Julian(i64),
    /// `n`: 0..365, February 29 counted.
    Zero(i64),
    /// `Mm.w.d`: day `d` (0 = Sunday) of week `w` (5 = last) of month `m`.
    Month(u32, u32, u32),
}

impl When {
    /// Days since 1970-01-01 of this date in year `y`.
    fn day(self, y: i64) -> i64 {
        let jan1 = days_from_civil(y, 1, 1);
        match self {
            When::Julian(n) => jan1 + n - 1 + i64::from(is_leap(y) && n >= 60),
            When::Zero(n) => jan1 + n,
            When::Month(m, w, d) => {
                let first = days_from_civil(y, m, 1);
                let to_d = (d as i64 - weekday(first) as i64).rem_euclid(7);
                let mut day = first + to_d + 7 * (w as i64 - 1);
                let next = if m == 12 {
                    days_from_civil(y + 1, 1, 1)
                } else {
                    days_from_civil(y, m + 1, 1)
                };
                while day >= next {
                    day -= 7;
                }
                day
            }
        }
    }
}

/// UTC offset (s, east positive) at `unix_s` under a POSIX TZ rule.
pub(crate) fn posix_offset(tz: &str, unix_s: i64) -> Result<i32, Error> {
    let mut r = Rule {
        s: tz.strip_prefix(':').unwrap_or(tz).as_bytes(),
        at: 0,
    };
    r.name()?;
    let std_off = -r.time(24)?;
    if r.peek().is_none() {
        return Ok(std_off as i32);
    }
    r.name()?;
    let dst_off = match r.peek() {
        Some(b',') | None => std_off + 3600,
        _ => -r.time(24)?,
    };
    let (start, end) = if r.eat(b',') {
        let s = r.date()?;
        if !r.eat(b',') {
            return Err(BAD_RULE);
        }
        (s, r.date()?)
    } else {
        // glibc's default for a DST zone without a rule (US rules)
        ((When::Month(3, 2, 0), 7200), (When::Month(11, 1, 0), 7200))
    };
    if r.peek().is_some() {
        return Err(BAD_RULE);
    }
    let (y, _, _) = civil_from_days(unix_s.div_euclid(86_400));
    // transitions are in local time: the start in standard, the end in DST
    let on = start.0.day(y) * 86_400 + start.1 - std_off;
    let off = end.0.day(y) * 86_400 + end.1 - dst_off;
    let dst = if on < off {
        unix_s >= on && unix_s < off
    } else {
        !(unix_s >= off && unix_s < on)
    };
    Ok(if dst { dst_off } else { std_off } as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A precondition of the running test is missing. Under CI (`CI=true`,
    /// which installs it) this fails; elsewhere it prints the line
    /// `skipped: <test>: <why>` that `scripts/test` counts, as
    /// latscope-tests' `precondition::missing` does (core cannot depend on
    /// it): to standard error past the capture, and appended to the file
    /// `LATSCOPE_SKIP_LOG` names.
    fn missing(why: &str) {
        use std::io::Write;
        assert!(
            std::env::var_os("CI").is_none_or(|v| v != "true"),
            "CI=true and this test cannot run: {why}"
        );
        let current = std::thread::current();
        let test = current.name().unwrap_or("<unnamed test>");
        let line = std::format!("skipped: {test}: {why}\n");
        let _ = std::io::stderr().write_all(line.as_bytes());
        if let Some(log) = std::env::var_os("LATSCOPE_SKIP_LOG") {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
                .and_then(|mut f| f.write_all(line.as_bytes()))
                .unwrap_or_else(|e| panic!("cannot count this skip in {log:?}: {e}"));
        }
    }

    const BERLIN: &str = "CET-1CEST,M3.5.0,M10.5.0/3";
    const NEW_YORK: &str = "EST5EDT,M3.2.0,M11.1.0";

    #[test]
    fn calendar_round_trips() {
        for days in [-800_000i64, -1, 0, 59, 11_016, 20_000, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(weekday(0), 4, "1970-01-01 was a Thursday");
    }

    #[test]
    fn posix_rules_switch_at_the_documented_instants() {
        // 2026-03-29 01:00 UTC: Berlin goes to CEST
        let spring = days_from_civil(2026, 3, 29) * 86_400 + 3600;
        assert_eq!(posix_offset(BERLIN, spring - 1), Ok(3600));
        assert_eq!(posix_offset(BERLIN, spring), Ok(7200));
        // 2026-10-25 01:00 UTC: back to CET
        let autumn = days_from_civil(2026, 10, 25) * 86_400 + 3600;
        assert_eq!(posix_offset(BERLIN, autumn - 1), Ok(7200));
        assert_eq!(posix_offset(BERLIN, autumn), Ok(3600));
        // 2026-03-08 07:00 UTC: New York goes to EDT
        let ny = days_from_civil(2026, 3, 8) * 86_400 + 7 * 3600;
        assert_eq!(posix_offset(NEW_YORK, ny - 1), Ok(-5 * 3600));
        assert_eq!(posix_offset(NEW_YORK, ny), Ok(-4 * 3600));
        assert_eq!(posix_offset("UTC0", ny), Ok(0));
        assert_eq!(posix_offset("<+0530>-5:30", 0), Ok(19_800));
        // southern hemisphere: DST spans the new year
        let syd = "AEST-10AEDT,M10.1.0,M4.1.0/3";
        assert_eq!(
            posix_offset(syd, days_from_civil(2026, 1, 15) * 86_400),
            Ok(39_600)
        );
        assert_eq!(
            posix_offset(syd, days_from_civil(2026, 6, 15) * 86_400),
            Ok(36_000)
        );
    }

    #[test]
    fn bad_rules_are_errors_not_panics() {
        for s in [
            "",
            "C",
            "CET",
            "CET-1CEST,M3",
            "CET-1CEST,M13.5.0,M10.5.0",
            "X-99999999999",
        ] {
            assert!(posix_offset(s, 0).is_err(), "{s:?}");
        }
    }

    /// A minimal TZif v2 file: one transition per `times`, types from `offs`.
    fn tzif(times: &[i64], idx: &[u8], offs: &[i32], footer: &str) -> std::vec::Vec<u8> {
        let mut v = std::vec::Vec::new();
        let header = |v: &mut std::vec::Vec<u8>, n: usize| {
            v.extend_from_slice(b"TZif2");
            v.extend_from_slice(&[0; 15]);
            for c in [0, 0, 0, n as u32, offs.len() as u32, 4] {
                v.extend_from_slice(&c.to_be_bytes());
            }
        };
        // an empty-ish v1 block (no transitions, same types)
        header(&mut v, 0);
        for o in offs {
            v.extend_from_slice(&o.to_be_bytes());
            v.extend_from_slice(&[0, 0]);
        }
        v.extend_from_slice(b"ABC\0");
        header(&mut v, times.len());
        for t in times {
            v.extend_from_slice(&t.to_be_bytes());
        }
        v.extend_from_slice(idx);
        for o in offs {
            v.extend_from_slice(&o.to_be_bytes());
            v.extend_from_slice(&[0, 0]);
        }
        v.extend_from_slice(b"ABC\0");
        v.push(b'\n');
        v.extend_from_slice(footer.as_bytes());
        v.push(b'\n');
        v
    }

    #[test]
    fn tzif_uses_the_table_then_the_footer() {
        let data = tzif(&[0, 1_000], &[1, 0], &[3600, 7200], BERLIN);
        assert_eq!(tzif_offset(&data, -5), Ok(3600), "before: type 0");
        assert_eq!(tzif_offset(&data, 500), Ok(7200));
        let summer = days_from_civil(2026, 7, 1) * 86_400;
        assert_eq!(tzif_offset(&data, summer), Ok(7200), "footer rule");
        let no_footer = tzif(&[0, 1_000], &[1, 0], &[3600, 7200], "");
        assert_eq!(tzif_offset(&no_footer, summer), Ok(3600), "last type");
        for cut in 0..data.len() - 1 {
            let _ = tzif_offset(&data[..cut], summer);
        }
        assert!(tzif_offset(b"TZif", 0).is_err());
        assert_eq!(Zone::Utc.utc_offset(1), Ok(0));
    }

    #[test]
    fn the_systems_zone_files_parse() {
        // what the tests can check without a fixed time zone database
        for (path, winter, summer) in [
            ("/usr/share/zoneinfo/Europe/Berlin", 3600, 7200),
            ("/usr/share/zoneinfo/America/New_York", -18_000, -14_400),
            ("/usr/share/zoneinfo/Etc/UTC", 0, 0),
        ] {
            let Ok(data) = std::fs::read(path) else {
                return missing(&std::format!("no {path} (package tzdata)"));
            };
            let jan = days_from_civil(2026, 1, 15) * 86_400;
            let jul = days_from_civil(2026, 7, 15) * 86_400;
            assert_eq!(tzif_offset(&data, jan), Ok(winter), "{path}");
            assert_eq!(tzif_offset(&data, jul), Ok(summer), "{path}");
            assert_eq!(
                tzif_offset(&data, jul + 40 * 365 * 86_400),
                Ok(summer),
                "{path}"
            );
        }
    }
}
