//! Standard base64, decoded: what the DevTools protocol sends binary data
//! as ([`crate::chromium`]) and how a board's console carries files
//! (`cargo xtask board-fixtures`).

/// Standard base64, whitespace and padding ignored; `None` on any other
/// byte.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0);
    for c in text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
    {
        acc = (acc << 6) | u32::from(value(c)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn decodes_every_padding_and_refuses_other_bytes() {
        assert_eq!(decode("TWFu").as_deref(), Some(&b"Man"[..]));
        assert_eq!(decode("TWE=").as_deref(), Some(&b"Ma"[..]));
        assert_eq!(decode("TQ==").as_deref(), Some(&b"M"[..]));
        assert_eq!(decode("").as_deref(), Some(&b""[..]));
        assert_eq!(
            decode("iVBORw0KGgo=").as_deref(),
            Some(&b"\x89PNG\r\n\x1a\n"[..])
        );
        assert_eq!(
            decode("aGVsbG8g\nd29ybGQ=").as_deref(),
            Some(&b"hello world"[..])
        );
        assert_eq!(decode("a*b"), None);
    }
}
