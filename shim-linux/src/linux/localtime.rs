//! The local time zone, found as the C library's `localtime` finds it,
//! without a C library: `TZ` if set (empty: UTC; a zone file by name,
//! absolute or under `TZDIR` or `/usr/share/zoneinfo`, with or without a
//! leading `:`; else a POSIX rule such as `CET-1CEST,M3.5.0,M10.5.0/3`),
//! else `/etc/localtime`, else UTC. The core does the arithmetic
//! ([`latscope_core::tz`]); this module only reads the files, once, at
//! start-up.

use latscope_core::tz::{WallTime, Zone};
use rustix::fs::{Mode, OFlags};

use super::clock::realtime_s;

/// Largest zone file read (real ones are a few KiB).
const MAX_TZIF: usize = 64 * 1024;
/// Where zone files are found by name.
const ZONEINFO: &str = "/usr/share/zoneinfo";

/// The process's local time zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalZone {
    /// UTC.
    Utc,
    /// The contents of a TZif file.
    Tzif(Vec<u8>),
    /// A POSIX `TZ` rule.
    Rule(String),
}

impl LocalZone {
    /// The zone of this process (from `TZ` and the files).
    pub fn load() -> LocalZone {
        let tz = std::env::var("TZ").ok();
        let dir = std::env::var("TZDIR").unwrap_or_else(|_| ZONEINFO.into());
        Self::resolve(tz.as_deref(), &dir, read_file)
    }

    /// The zone for a `TZ` value (`None`: unset), reading files with `read`.
    fn resolve(tz: Option<&str>, dir: &str, read: impl Fn(&str) -> Option<Vec<u8>>) -> LocalZone {
        let tzif = |path: &str| read(path).filter(|d| Zone::Tzif(d).utc_offset(0).is_ok());
        let Some(tz) = tz else {
            return tzif("/etc/localtime").map_or(LocalZone::Utc, LocalZone::Tzif);
        };
        let name = tz.strip_prefix(':').unwrap_or(tz);
        if name.is_empty() {
            return LocalZone::Utc;
        }
        let path = if name.starts_with('/') {
            name.to_string()
        } else {
            format!("{dir}/{name}")
        };
        if let Some(d) = tzif(&path) {
            return LocalZone::Tzif(d);
        }
        if Zone::Posix(name).utc_offset(0).is_ok() {
            return LocalZone::Rule(name.to_string());
        }
        LocalZone::Utc
    }

    /// The core's view of the zone.
    pub fn zone(&self) -> Zone<'_> {
        match self {
            LocalZone::Utc => Zone::Utc,
            LocalZone::Tzif(d) => Zone::Tzif(d),
            LocalZone::Rule(r) => Zone::Posix(r),
        }
    }

    /// Now, in this zone.
    pub fn now(&self) -> WallTime {
        WallTime::in_zone(realtime_s(), &self.zone())
    }
}

/// A whole file of at most [`MAX_TZIF`] bytes.
fn read_file(path: &str) -> Option<Vec<u8>> {
    let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let mut buf = vec![0u8; MAX_TZIF];
    let mut n = 0;
    while n < buf.len() {
        match rustix::io::read(&fd, &mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return None,
        }
    }
    buf.truncate(n);
    Some(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BERLIN: &str = "CET-1CEST,M3.5.0,M10.5.0/3";

    /// A TZif v1 file of one zone at `off` seconds.
    fn fixed(off: i32) -> Vec<u8> {
        let mut v = b"TZif".to_vec();
        v.extend_from_slice(&[0; 16]);
        for c in [0u32, 0, 0, 0, 1, 4] {
            v.extend_from_slice(&c.to_be_bytes());
        }
        v.extend_from_slice(&off.to_be_bytes());
        v.extend_from_slice(&[0, 0]);
        v.extend_from_slice(b"ABC\0");
        v
    }

    fn files(path: &str) -> Option<Vec<u8>> {
        match path {
            "/etc/localtime" => Some(fixed(3600)),
            "/zi/Asia/Kolkata" | "/abs/zone" => Some(fixed(19_800)),
            "/zi/Broken" => Some(b"not a zone".to_vec()),
            _ => None,
        }
    }

    #[test]
    fn found_as_the_c_library_finds_it() {
        let r = |tz| LocalZone::resolve(tz, "/zi", files);
        assert_eq!(r(None), LocalZone::Tzif(fixed(3600)), "/etc/localtime");
        assert_eq!(r(Some("")), LocalZone::Utc);
        assert_eq!(r(Some(":")), LocalZone::Utc);
        assert_eq!(r(Some("Asia/Kolkata")), LocalZone::Tzif(fixed(19_800)));
        assert_eq!(r(Some(":Asia/Kolkata")), LocalZone::Tzif(fixed(19_800)));
        assert_eq!(r(Some("/abs/zone")), LocalZone::Tzif(fixed(19_800)));
        assert_eq!(r(Some(BERLIN)), LocalZone::Rule(BERLIN.into()));
        assert_eq!(
            r(Some("Broken")),
            LocalZone::Utc,
            "neither a zone nor a rule"
        );
        assert_eq!(r(Some("Nowhere/Zone")), LocalZone::Utc);
        let none = LocalZone::resolve(None, "/zi", |_| None);
        assert_eq!(none, LocalZone::Utc);
        assert_eq!(
            LocalZone::Rule(BERLIN.into()).zone().utc_offset(0),
            Ok(3600)
        );
    }
}
