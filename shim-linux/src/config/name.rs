//! The board's name in the hello: `--name`, or by default the host name
//! and a short keyed hash of `/etc/machine-id`. machine-id(5) calls the id
//! confidential and asks applications for a keyed hash of it instead, so
//! only 24 bits of SipHash-2-4 under latscope's own key leave the board:
//! enough to tell apart boards that share a host name, nothing to recover
//! the id from.

/// latscope's key for the machine-id hash (fixed: the name must be the
/// same on every run and every release).
const KEY: (u64, u64) = (0x6c61_7473_636f_7065, 0x626f_6172_642d_6964);

/// Longest board name carried (bytes).
pub const MAX_NAME: usize = 32;

/// `HOSTNAME-XXXXXX` from the machine-id `id` (whitespace trimmed), or
/// the host name alone without one.
pub fn default_name(hostname: &str, id: Option<&str>) -> String {
    let host = if hostname.is_empty() {
        "board"
    } else {
        hostname
    };
    match id.map(str::trim).filter(|s| !s.is_empty()) {
        Some(id) => {
            let h = siphash24(KEY, id.as_bytes()) & 0xff_ffff;
            let suffix = format!("-{h:06x}");
            let keep = MAX_NAME.saturating_sub(suffix.len());
            let mut cut = host.len().min(keep);
            while !host.is_char_boundary(cut) {
                cut -= 1;
            }
            format!("{}{suffix}", &host[..cut])
        }
        None => host.to_string(),
    }
}

/// Whether `name` can be a board name: 1 to [`MAX_NAME`] bytes of
/// letters, digits, `-`, `_` and `.` (it becomes a file name and a label).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// SipHash-2-4 of `data` under `key`.
fn siphash24(key: (u64, u64), data: &[u8]) -> u64 {
    let mut v = [
        key.0 ^ 0x736f_6d65_7073_6575,
        key.1 ^ 0x646f_7261_6e64_6f6d,
        key.0 ^ 0x6c79_6765_6e65_7261,
        key.1 ^ 0x7465_6462_7974_6573,
    ];
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let m = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        v[3] ^= m;
        round(&mut v);
        round(&mut v);
        v[0] ^= m;
    }
    let mut last = [0u8; 8];
    let rest = chunks.remainder();
    last[..rest.len()].copy_from_slice(rest);
    last[7] = data.len() as u8;
    let m = u64::from_le_bytes(last);
    v[3] ^= m;
    round(&mut v);
    round(&mut v);
    v[0] ^= m;
    v[2] ^= 0xff;
    for _ in 0..4 {
        round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

fn round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13) ^ v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16) ^ v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21) ^ v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17) ^ v[2];
    v[2] = v[2].rotate_left(32);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siphash_matches_the_reference_vector() {
        // The SipHash paper's test vector: key 00..0f, message 00..0e.
        let key = (
            u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]),
            u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15]),
        );
        let msg: Vec<u8> = (0..15).collect();
        assert_eq!(siphash24(key, &msg), 0xa129_ca61_49be_45e5);
    }

    #[test]
    fn the_default_name_hides_the_machine_id_and_tells_clones_apart() {
        let id = "4c4c4544003510308035b4c04f4d4d32\n";
        let a = default_name("vm", Some(id));
        assert!(a.starts_with("vm-") && a.len() == 9, "{a}");
        assert!(!a.contains("4c4c"), "{a}");
        assert_eq!(a, default_name("vm", Some(id)), "stable");
        assert_ne!(
            a,
            default_name("vm", Some("00000000000000000000000000000001"))
        );
        assert_eq!(default_name("vm", None), "vm");
        assert!(valid_name(&default_name(&"h".repeat(64), Some(id))));
    }

    #[test]
    fn names_must_be_short_plain_words() {
        assert!(valid_name("rack3-slot7") && valid_name("a.b_c"));
        for bad in ["", "two words", "x/y", "é", &"n".repeat(33)] {
            assert!(!valid_name(bad), "{bad:?}");
        }
    }
}
