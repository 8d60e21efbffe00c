//! Entry paths: `scheme://rest` with a lower-case scheme and consistently encoded segments, or bare project file paths.

use thiserror::Error;

/// The longest path the store accepts.
pub const MAX_PATH_CHARS: usize = 2048;

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PathError {
    /// Empty, too long, or containing control characters.
    #[error("invalid path: {0}")]
    Invalid(&'static str),
    /// A bare path that is absolute or climbs out of the project root.
    #[error("path escapes the project root: {0}")]
    Escapes(String),
}

/// The scheme of a path (`known` for `known://a`), or `None` for a bare project file path.
pub fn scheme_of(path: &str) -> Option<String> {
    let (scheme, _) = path.split_once("://")?;
    let valid = !scheme.is_empty()
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'+' | b'.'));
    valid.then(|| scheme.to_ascii_lowercase())
}

/// Normalises a path: lower-cases the scheme and re-encodes each segment of the rest,
/// so `known://a b` and `known://a%20b` name the same entry; bare paths are checked
/// to stay inside the project root.
pub fn normalize(path: &str) -> Result<String, PathError> {
    if path.is_empty() {
        return Err(PathError::Invalid("empty"));
    }
    if path.chars().count() > MAX_PATH_CHARS {
        return Err(PathError::Invalid("longer than 2048 characters"));
    }
    if path.chars().any(char::is_control) {
        return Err(PathError::Invalid("contains control characters"));
    }
    match path.split_once("://") {
        Some((_, rest)) if scheme_of(path).is_some() => {
            let scheme = scheme_of(path).unwrap_or_default();
            let rest: Vec<String> = rest
                .split('/')
                .map(|seg| encode_component(&decode_component(seg)))
                .collect();
            Ok(format!("{scheme}://{}", rest.join("/")))
        }
        _ => normalize_file(path),
    }
}

fn normalize_file(path: &str) -> Result<String, PathError> {
    let unified = path.replace('\\', "/");
    if unified.starts_with('/') || unified.as_bytes().get(1) == Some(&b':') {
        return Err(PathError::Escapes(path.to_owned()));
    }
    let mut parts = Vec::new();
    for seg in unified.split('/') {
        match seg {
            "" | "." => {}
            ".." => return Err(PathError::Escapes(path.to_owned())),
            s => parts.push(s),
        }
    }
    if parts.is_empty() {
        return Err(PathError::Invalid("empty"));
    }
    Ok(parts.join("/"))
}

/// Percent-encodes like JavaScript's `encodeURIComponent` (keeps `A-Z a-z 0-9 - _ . ! ~ * ' ( )`).
pub fn encode_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` escapes; text that does not decode to UTF-8 is returned unchanged.
pub fn decode_component(text: &str) -> String {
    if !text.contains('%') {
        return text.to_owned();
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

/// The base of a tool's result path for a turn: `<tool>://turn_<N>/<encoded target>`,
/// or `<tool>://turn_<N>` when the command has no target.
pub fn result_path(tool: &str, turn: i32, target: &str) -> String {
    if target.is_empty() {
        format!("{tool}://turn_{turn}")
    } else {
        format!("{tool}://turn_{turn}/{}", encode_component(target))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Schemes are recognised and lower-cased; bare paths have none.
    #[test]
    fn schemes() {
        assert_eq!(scheme_of("known://a/b").as_deref(), Some("known"));
        assert_eq!(scheme_of("KNOWN://a").as_deref(), Some("known"));
        assert_eq!(scheme_of("src/app.rs"), None);
        assert_eq!(scheme_of("://x"), None);
    }

    /// Scheme paths are re-encoded per segment so equivalent spellings meet.
    #[test]
    fn normalizes_scheme_paths() {
        assert_eq!(normalize("Known://a b/c").as_deref(), Ok("known://a%20b/c"));
        assert_eq!(
            normalize("known://a%20b/c").as_deref(),
            Ok("known://a%20b/c")
        );
        assert_eq!(normalize("known://what?").as_deref(), Ok("known://what%3F"));
        assert_eq!(
            normalize("known://people/*").as_deref(),
            Ok("known://people/*")
        );
        assert_eq!(normalize("run://").as_deref(), Ok("run://"));
    }

    /// Bare paths stay relative and inside the project root.
    #[test]
    fn refuses_escaping_file_paths() {
        assert_eq!(normalize("./src//app.rs").as_deref(), Ok("src/app.rs"));
        assert!(matches!(
            normalize("../etc/passwd"),
            Err(PathError::Escapes(_))
        ));
        assert!(matches!(normalize("a/../../b"), Err(PathError::Escapes(_))));
        assert!(matches!(
            normalize("/etc/passwd"),
            Err(PathError::Escapes(_))
        ));
        assert!(matches!(normalize("C:\\x"), Err(PathError::Escapes(_))));
        assert!(matches!(normalize("a\nb"), Err(PathError::Invalid(_))));
        assert!(matches!(normalize(""), Err(PathError::Invalid(_))));
        assert!(normalize(&"a".repeat(2049)).is_err());
    }

    /// Result paths encode the whole target into one segment.
    #[test]
    fn result_paths() {
        assert_eq!(
            result_path("set", 3, "known://a b"),
            "set://turn_3/known%3A%2F%2Fa%20b"
        );
        assert_eq!(result_path("update", 4, ""), "update://turn_4");
    }
}
