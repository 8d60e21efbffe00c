//! The bounds a body filter checks before it parses a body: its size and, for XML and JSON, its nesting depth.
//!
//! Each check is one linear pass over the bytes with a counter, no allocation,
//! so a hostile body costs no more to refuse than to read.

/// Deepest nesting an XPath or JSONPath filter parses: the XML parser and the XPath
/// evaluator recurse once per level, so a deeper body could overflow the stack of the
/// thread that runs the filter; real documents stay far below this.
pub const MAX_DEPTH: usize = 256;

/// Largest body an XPath, JSONPath or regex filter reads: a parsed tree is several times
/// its text and every filter's time grows with the body, so this bounds one call's memory
/// and time while leaving room for any document a model or client filters in practice.
pub const MAX_BODY_BYTES: usize = 4 << 20;

/// Longest pattern read as an XPath: sxd-xpath parses and evaluates a chain of operators
/// (`1+1+…`, `a|b|…`) by recursing once per operator, so this bounds its stack use; real
/// XPaths are a line long.
pub const MAX_XPATH_BYTES: usize = 4096;

/// Deepest `(`/`[` nesting of a pattern read as an XPath: each level costs sxd-xpath's
/// parser several frames, so a few thousand nested parentheses would overflow a thread's
/// stack; real XPaths nest a handful of levels.
pub const MAX_XPATH_NESTING: usize = 64;

/// Why a filter refused a body before reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The body is over [`MAX_BODY_BYTES`].
    #[error("body larger than 4 MiB")]
    TooLarge,
    /// The body nests deeper than [`MAX_DEPTH`].
    #[error("body nested deeper than 256 levels")]
    TooDeep,
}

impl Refused {
    /// The refusal whose message is `message`, if one is.
    pub fn from_message(message: &str) -> Option<Refused> {
        [Refused::TooLarge, Refused::TooDeep]
            .into_iter()
            .find(|r| r.to_string() == message)
    }
}

/// `Err(TooLarge)` when `text` is over [`MAX_BODY_BYTES`].
pub fn check_size(text: &str) -> Result<(), Refused> {
    if text.len() > MAX_BODY_BYTES {
        return Err(Refused::TooLarge);
    }
    Ok(())
}

/// The size check, then `Err(TooDeep)` when `text` read as XML nests deeper than [`MAX_DEPTH`].
pub fn check_xml(text: &str) -> Result<(), Refused> {
    check_size(text)?;
    if xml_depth(text) > MAX_DEPTH {
        return Err(Refused::TooDeep);
    }
    Ok(())
}

/// The size check, then `Err(TooDeep)` when `text` read as JSON nests deeper than [`MAX_DEPTH`].
pub fn check_json(text: &str) -> Result<(), Refused> {
    check_size(text)?;
    if json_depth(text) > MAX_DEPTH {
        return Err(Refused::TooDeep);
    }
    Ok(())
}

/// The deepest element nesting of `text` read as XML: start tags open a level, end tags
/// close one; self-closing tags, comments, CDATA sections, processing instructions,
/// declarations and quoted attribute values (which may hold `<` and `>`) count nothing.
/// A `<` not followed by a name start is text. Malformed input is scanned all the same:
/// the parser judges well-formedness, this only bounds what the parser would see.
pub fn xml_depth(text: &str) -> usize {
    let bytes = text.as_bytes();
    let (mut at, mut depth, mut deepest) = (0, 0usize, 0usize);
    while let Some(open) = find_byte(bytes, at, b'<') {
        let rest = &bytes[open + 1..];
        let skip_to = |end: &[u8]| find(bytes, open + 1, end).map(|i| i + end.len());
        let next = if rest.starts_with(b"!--") {
            skip_to(b"-->")
        } else if rest.starts_with(b"![CDATA[") {
            skip_to(b"]]>")
        } else if rest.starts_with(b"?") {
            skip_to(b"?>")
        } else if rest.starts_with(b"!") {
            declaration_end(bytes, open + 1)
        } else if rest.starts_with(b"/") {
            depth = depth.saturating_sub(1);
            tag_end(bytes, open + 1)
        } else if rest.first().is_some_and(|&b| is_name_start(b)) {
            let end = tag_end(bytes, open + 1);
            if let Some(end) = end {
                if bytes[end - 2] != b'/' {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
            }
            end
        } else {
            Some(open + 1)
        };
        match next {
            Some(next) => at = next,
            None => break,
        }
    }
    deepest
}

/// True when `pattern` is within [`MAX_XPATH_BYTES`] and [`MAX_XPATH_NESTING`], so sxd-xpath
/// may parse it; brackets inside quoted literals count nothing.
pub fn xpath_within_bounds(pattern: &str) -> bool {
    if pattern.len() > MAX_XPATH_BYTES {
        return false;
    }
    let (mut depth, mut quote) = (0usize, None);
    for b in pattern.bytes() {
        match (quote, b) {
            (Some(q), _) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(b),
            (None, b'(' | b'[') => {
                depth += 1;
                if depth > MAX_XPATH_NESTING {
                    return false;
                }
            }
            (None, b')' | b']') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    true
}

/// The deepest nesting of `[` and `{` in `text` read as JSON; brackets inside strings count nothing.
pub fn json_depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in text.as_bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// A byte that may start an XML name (any non-ASCII byte may, being part of a letter).
fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b':' || b >= 0x80
}

/// Just past the `>` closing a tag that starts at `from`, skipping quoted attribute values.
fn tag_end(bytes: &[u8], from: usize) -> Option<usize> {
    let mut quote = None;
    for (i, &b) in bytes.iter().enumerate().skip(from) {
        match (quote, b) {
            (Some(q), _) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(b),
            (None, b'>') => return Some(i + 1),
            _ => {}
        }
    }
    None
}

/// Just past the `>` closing a `<!…>` declaration, skipping a `[…]` internal subset and quotes.
fn declaration_end(bytes: &[u8], from: usize) -> Option<usize> {
    let (mut quote, mut subset) = (None, false);
    for (i, &b) in bytes.iter().enumerate().skip(from) {
        match (quote, b) {
            (Some(q), _) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(b),
            (None, b'[') => subset = true,
            (None, b']') => subset = false,
            (None, b'>') if !subset => return Some(i + 1),
            _ => {}
        }
    }
    None
}

/// The first `byte` at or after `from`.
fn find_byte(bytes: &[u8], from: usize, byte: u8) -> Option<usize> {
    bytes
        .get(from..)?
        .iter()
        .position(|&b| b == byte)
        .map(|i| from + i)
}

/// The first `needle` at or after `from` (needles are a few bytes, so this stays linear).
fn find(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    bytes
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|i| from + i)
}
