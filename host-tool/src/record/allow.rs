//! `--allow NET`: the peer networks a recorder accepts targets from.

use std::net::IpAddr;

/// One network: an address and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Net {
    addr: IpAddr,
    prefix: u8,
}

impl Net {
    /// Parse `ADDR` or `ADDR/PREFIX` (IPv4 or IPv6).
    pub fn parse(s: &str) -> Result<Net, String> {
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = a
            .parse()
            .map_err(|_| format!("--allow {s}: not an IP address or network (ADDR[/PREFIX])"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|&n| n <= max)
                .ok_or_else(|| format!("--allow {s}: prefix must be 0 to {max}"))?,
        };
        Ok(Net { addr, prefix })
    }

    /// Whether `ip` is in this network (an IPv4-mapped IPv6 peer counts as
    /// its IPv4 address).
    pub(crate) fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                masked(u32::from(n).into(), self.prefix, 32)
                    == masked(u32::from(a).into(), self.prefix, 32)
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                masked(u128::from(n), self.prefix, 128) == masked(u128::from(a), self.prefix, 128)
            }
            _ => false,
        }
    }
}

fn masked(v: u128, prefix: u8, bits: u32) -> u128 {
    if prefix == 0 {
        return 0;
    }
    let keep = u32::from(prefix).min(bits);
    v >> (bits - keep)
}

/// Whether `ip` may connect: always with no list, else if a network holds it.
pub(crate) fn allowed(list: &[Net], ip: IpAddr) -> bool {
    list.is_empty() || list.iter().any(|n| n.contains(ip))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn networks_hold_their_addresses_and_no_others() {
        let n = Net::parse("10.1.0.0/16").unwrap();
        assert!(n.contains(ip("10.1.200.3")));
        assert!(!n.contains(ip("10.2.0.1")));
        assert!(n.contains(ip("::ffff:10.1.0.9")), "IPv4-mapped peer");
        let one = Net::parse("192.168.7.7").unwrap();
        assert!(one.contains(ip("192.168.7.7")) && !one.contains(ip("192.168.7.8")));
        let v6 = Net::parse("fd00::/8").unwrap();
        assert!(v6.contains(ip("fd12::1")) && !v6.contains(ip("fe80::1")));
        assert!(Net::parse("0.0.0.0/0").unwrap().contains(ip("8.8.8.8")));
        assert!(allowed(&[], ip("1.2.3.4")));
        assert!(!allowed(&[n], ip("1.2.3.4")));
    }

    #[test]
    fn bad_networks_are_refused_with_a_message() {
        for bad in ["10.0.0.0/33", "fd00::/129", "board-7", "10.0.0.0/x", ""] {
            let e = Net::parse(bad).unwrap_err();
            assert!(e.starts_with("--allow"), "{bad}: {e}");
        }
    }
}
