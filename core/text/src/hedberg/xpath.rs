//! XPath 1.0 patterns over XML texts (sxd-document and sxd-xpath).

use super::limits;
use sxd_xpath::{Context, Factory, XPath};

/// XPath axes; `axis::` after `/` marks a path as XPath.
const AXES: &[&str] = &[
    "ancestor",
    "ancestor-or-self",
    "attribute",
    "child",
    "descendant",
    "descendant-or-self",
    "following",
    "following-sibling",
    "namespace",
    "parent",
    "preceding",
    "preceding-sibling",
    "self",
];

/// XPath functions; a call to one inside a predicate marks a path as XPath.
const FUNCTIONS: &[&str] = &[
    "boolean",
    "ceiling",
    "comment",
    "concat",
    "contains",
    "count",
    "false",
    "floor",
    "id",
    "lang",
    "last",
    "local-name",
    "name",
    "namespace-uri",
    "node",
    "normalize-space",
    "not",
    "number",
    "position",
    "processing-instruction",
    "round",
    "starts-with",
    "string",
    "string-length",
    "substring",
    "substring-after",
    "substring-before",
    "sum",
    "text",
    "translate",
    "true",
];

/// Plausible XPath: `//name…`, or `/…` with an axis step (`child::`) or a
/// predicate holding `@attr`, a position, or a function call.
pub fn looks_like(pattern: &str) -> bool {
    if let Some(rest) = pattern.strip_prefix("//") {
        return rest
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || matches!(c, '_' | '*' | '@' | '.'));
    }
    pattern.starts_with('/') && (has_axis(pattern) || has_predicate(pattern))
}

/// True when `pattern` names an axis right after `/`, `[`, `(` or a space.
fn has_axis(pattern: &str) -> bool {
    pattern.match_indices("::").any(|(at, _)| {
        let before = &pattern[..at];
        let head = before.trim_end_matches(|c: char| c.is_ascii_lowercase() || c == '-');
        let boundary = head
            .chars()
            .next_back()
            .is_none_or(|c| matches!(c, '/' | '[' | '(' | ' '));
        boundary && AXES.contains(&&before[head.len()..])
    })
}

/// True when a `[…]` predicate starts with `@`, is a number, or calls an XPath function.
fn has_predicate(pattern: &str) -> bool {
    pattern.match_indices('[').any(|(at, _)| {
        let inside = &pattern[at + 1..];
        let Some(end) = inside.find(']') else {
            return false;
        };
        let inside = inside[..end].trim();
        inside.starts_with('@')
            || (!inside.is_empty() && inside.bytes().all(|b| b.is_ascii_digit()))
            || FUNCTIONS.iter().any(|name| calls(inside, name))
    })
}

/// True when `text` calls `name(` as a whole word.
fn calls(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before_ok = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'));
        let after = text[at + name.len()..].trim_start();
        before_ok && after.starts_with('(')
    })
}

/// True when the expression is within the XPath bounds and sxd-xpath accepts it.
pub fn compiles(pattern: &str) -> bool {
    build(pattern).is_some()
}

/// The expression compiled, when it is within the bounds ([`limits::xpath_within_bounds`]:
/// sxd-xpath recurses per nesting level and per operator, so an unbounded pattern could
/// overflow the stack), names no namespace prefix (see [`names_a_prefix`]) and sxd-xpath
/// accepts it.
fn build(pattern: &str) -> Option<XPath> {
    if !limits::xpath_within_bounds(pattern) || names_a_prefix(pattern) {
        return None;
    }
    Factory::new().build(pattern).ok().flatten()
}

/// True when `pattern` has a qualified name (`svg:rect`, `x:*`, `f:call()`) outside its string
/// literals. A pattern binds no namespaces, and sxd-xpath panics when it evaluates a name test
/// whose prefix is unbound, so such a pattern is not an XPath here. In XPath 1.0 a colon
/// outside a literal is either an axis's `::` or a prefix's `:`.
fn names_a_prefix(pattern: &str) -> bool {
    let (mut quote, mut bytes) = (None, pattern.bytes().peekable());
    while let Some(b) = bytes.next() {
        match (quote, b) {
            (Some(q), _) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(b),
            (None, b':') if bytes.peek() == Some(&b':') => {
                bytes.next();
            }
            (None, b':') => return true,
            _ => {}
        }
    }
    false
}

/// What evaluating an XPath against a text gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum XpathMatch {
    /// The text is not an XML document, so the XPath cannot apply to it.
    NotXml,
    /// The document has nothing the XPath selects.
    NoMatch,
    /// The string value of the first selected node (or of a scalar result).
    Match(String),
}

/// Evaluates `pattern` against `text` parsed as XML.
pub fn evaluate(pattern: &str, text: &str) -> XpathMatch {
    let Ok(package) = sxd_document::parser::parse(text) else {
        return XpathMatch::NotXml;
    };
    let document = package.as_document();
    let Some(xpath) = build(pattern) else {
        return XpathMatch::NoMatch;
    };
    let context = Context::new();
    match xpath.evaluate(&context, document.root()) {
        Ok(value) if value.boolean() => XpathMatch::Match(value.string()),
        _ => XpathMatch::NoMatch,
    }
}
