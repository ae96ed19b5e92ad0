//! The values of latscope's own options: stream destinations and its
//! durations with units (`--warmup`, `--report-interval`).

use super::numbers::parse_u64;
use super::Dest;
use crate::error::Error;

/// A duration of latscope's own options: a whole number with an optional
/// unit `ms`, `s` (the default), `m`, `h` or `d`. Returns ns. (cyclictest's
/// `-D` has its own reading: [`super::numbers::duration_s`].)
pub(super) fn parse_duration(flag: &str, v: &str) -> Result<u64, Error> {
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let ns_per: u64 = match unit {
        "" | "s" => 1_000_000_000,
        "ms" => 1_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => {
            return Err(Error::usage(format!(
                "{flag} '{v}': unit must be ms, s, m, h or d"
            )))
        }
    };
    let n: u64 = num
        .parse()
        .map_err(|_| Error::usage(format!("{flag} '{v}': not a duration")))?;
    n.checked_mul(ns_per)
        .filter(|ns| *ns <= 100 * 365 * 86_400_000_000_000)
        .ok_or_else(|| Error::usage(format!("{flag} '{v}': too long")))
}

pub(super) fn parse_report_interval(v: &str) -> Result<u64, Error> {
    let ns = parse_duration("--report-interval", v)?;
    if ns < 100_000_000 {
        return Err(Error::usage(format!(
            "--report-interval {v}: must be at least 100ms"
        )));
    }
    Ok(ns)
}

/// `-`, a path, `tcp:IP:PORT` or `serial:/dev/ttyX[:BAUD]`.
pub(super) fn parse_dest(v: &str) -> Result<Dest, Error> {
    if v == "-" {
        return Ok(Dest::Stdout);
    }
    if let Some(addr) = v.strip_prefix("tcp:") {
        let sa: std::net::SocketAddr = addr.parse().map_err(|_| {
            Error::usage(format!(
                "--stream {v}: expected tcp:IP:PORT with an IP literal (e.g. tcp:192.168.1.2:5000, tcp:[::1]:5000); names are not resolved"
            ))
        })?;
        if sa.port() == 0 {
            return Err(Error::usage(format!("--stream {v}: port 0")));
        }
        return Ok(Dest::Tcp(sa));
    }
    if let Some(rest) = v.strip_prefix("serial:") {
        return parse_serial(v, rest);
    }
    if v.is_empty() {
        return Err(Error::usage("--stream: empty destination"));
    }
    Ok(Dest::File(v.to_string()))
}

/// `serial:PATH[:BAUD]` (`rest` is what follows `serial:` in `v`).
fn parse_serial(v: &str, rest: &str) -> Result<Dest, Error> {
    let (path, baud) = match rest.rsplit_once(':') {
        Some((p, b)) if !b.is_empty() && b.chars().all(|c| c.is_ascii_digit()) => (
            p,
            parse_u64("--stream serial baud", b, 50, 16_000_000)? as u32,
        ),
        _ => (rest, 115_200),
    };
    if !path.starts_with('/') {
        return Err(Error::usage(format!(
            "--stream {v}: expected serial:/dev/ttyX[:BAUD]"
        )));
    }
    Ok(Dest::Serial {
        path: path.to_string(),
        baud,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations() {
        assert_eq!(parse_dest("-"), Ok(Dest::Stdout));
        assert_eq!(
            parse_dest("/tmp/r.bin"),
            Ok(Dest::File("/tmp/r.bin".into()))
        );
        assert_eq!(
            parse_dest("tcp:10.0.0.2:5000"),
            Ok(Dest::Tcp("10.0.0.2:5000".parse().unwrap()))
        );
        assert!(matches!(parse_dest("tcp:[::1]:9"), Ok(Dest::Tcp(_))));
        assert_eq!(
            parse_dest("serial:/dev/ttyAMA1"),
            Ok(Dest::Serial {
                path: "/dev/ttyAMA1".into(),
                baud: 115_200
            })
        );
        assert_eq!(
            parse_dest("serial:/dev/ttyUSB0:921600"),
            Ok(Dest::Serial {
                path: "/dev/ttyUSB0".into(),
                baud: 921_600
            })
        );
        for bad in [
            "tcp:host:1",
            "tcp:1.2.3.4:0",
            "serial:tty",
            "serial:/dev/x:1",
            "",
        ] {
            assert!(parse_dest(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("--warmup", "10"), Ok(10_000_000_000));
        assert_eq!(parse_duration("--warmup", "2h"), Ok(7_200_000_000_000));
        assert_eq!(parse_duration("--warmup", "1d"), Ok(86_400_000_000_000));
        for bad in ["", "s", "1.5s", "-1", "10us", "3w", "99999999999d"] {
            assert!(parse_duration("--warmup", bad).is_err(), "{bad}");
        }
    }
}
