//! Decoding of XML character references in tool bodies, attributes and prose.

/// Longest reference we try to decode (`&#x10FFFF;` is 10 bytes); anything
/// longer cannot be one of ours, so the `&` is kept as written.
const MAX_REFERENCE_LEN: usize = 12;

/// Appends `raw` to `out` with the five XML entities and numeric references
/// decoded; unknown or malformed references stay exactly as written.
pub(crate) fn decode_into(out: &mut String, raw: &str) {
    let mut rest = raw;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp..];
        match decode_reference(after) {
            Some((ch, len)) => {
                out.push(ch);
                rest = &after[len..];
            }
            None => {
                out.push('&');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
}

/// `raw` as an owned string with references decoded.
pub(crate) fn decode(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    decode_into(&mut out, raw);
    out
}

/// Decodes the reference at the start of `s` (which starts with `&`),
/// returning the character and the byte length consumed.
fn decode_reference(s: &str) -> Option<(char, usize)> {
    let window = &s.as_bytes()[..s.len().min(MAX_REFERENCE_LEN)];
    let semi = window.iter().position(|&b| b == b';')?;
    let name = &s[1..semi];
    let ch = match name {
        "lt" => '<',
        "gt" => '>',
        "amp" => '&',
        "quot" => '"',
        "apos" => '\'',
        _ => {
            let digits = name.strip_prefix('#')?;
            let (digits, radix) = match digits.strip_prefix(['x', 'X']) {
                Some(hex) => (hex, 16),
                None => (digits, 10),
            };
            // `from_str_radix` would also accept a sign, which no reference has.
            if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
                return None;
            }
            let code = u32::from_str_radix(digits, radix).ok()?;
            // NUL is not a character a model means to write; keep it literal.
            char::from_u32(code).filter(|&c| c != '\0')?
        }
    };
    Some((ch, semi + 1))
}
