//! Globs translated to regexes: `*`, `?`, `**`, `[…]`, `[!…]` and `\x`; braces are literal text.
//!
//! In a bare file path `*` and `?` stop at `/` and `**` crosses it (`**/`
//! also matches no directory at all). In a scheme path (`known://…`) entries
//! are keys rather than files, so `*` and `?` cross `/` too: `known://*`,
//! `known://people/*` and `known://api_*` each match everything below them.

use regex::Regex;

/// A glob compiled twice: anchored for whole-string matching, unanchored for search.
#[derive(Debug, Clone)]
pub struct Glob {
    /// `^(?:…)$`: the glob must cover the whole string.
    pub whole: Regex,
    /// The bare translation: finds the glob anywhere in a text.
    pub find: Regex,
}

/// Compiles a glob; `None` only if the translation is too large to compile.
pub fn compile(pattern: &str) -> Option<Glob> {
    let body = translate(pattern);
    let whole = Regex::new(&format!("(?s)^(?:{body})$")).ok()?;
    let find = Regex::new(&format!("(?s){body}")).ok()?;
    Some(Glob { whole, find })
}

/// The regex for a glob (without anchors).
pub fn translate(pattern: &str) -> String {
    let keys = crate::path::scheme_of(pattern).is_some();
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() * 2);
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' => {
                let run = chars[i..].iter().take_while(|&&c| c == '*').count();
                let at_segment_start = i == 0 || chars[i - 1] == '/';
                i += run;
                if keys {
                    out.push_str(".*");
                } else if run == 1 {
                    out.push_str("[^/]*");
                } else if at_segment_start && chars.get(i) == Some(&'/') {
                    out.push_str("(?:.*/)?");
                    i += 1;
                } else {
                    out.push_str(".*");
                }
                continue;
            }
            '?' => out.push_str(if keys { "." } else { "[^/]" }),
            '[' => match class(&chars[i..]) {
                Some((regex, used)) => {
                    out.push_str(&regex);
                    i += used;
                    continue;
                }
                None => out.push_str("\\["),
            },
            '\\' => {
                if let Some(&next) = chars.get(i + 1) {
                    push_literal(&mut out, next);
                    i += 1;
                } else {
                    out.push_str("\\\\");
                }
            }
            c => push_literal(&mut out, c),
        }
        i += 1;
    }
    out
}

/// Appends `c` escaped for a regex.
fn push_literal(out: &mut String, c: char) {
    let mut buf = [0u8; 4];
    out.push_str(&regex::escape(c.encode_utf8(&mut buf)));
}

/// Translates a bracket class at the start of `chars`: the regex and how many chars it used.
/// `None` when the bracket never closes, so it is a literal `[`.
fn class(chars: &[char]) -> Option<(String, usize)> {
    let mut i = 1;
    let negated = matches!(chars.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut out = String::from(if negated { "[^" } else { "[" });
    let start = i;
    loop {
        let c = *chars.get(i)?;
        match c {
            ']' if i > start => return Some((out + "]", i + 1)),
            '\\' => {
                let next = *chars.get(i + 1)?;
                push_class_literal(&mut out, next);
                i += 1;
            }
            // A range needs a character on both sides; otherwise `-` is itself.
            '-' if i > start && chars.get(i + 1).is_some_and(|&n| n != ']') => out.push('-'),
            c => push_class_literal(&mut out, c),
        }
        i += 1;
    }
}

/// Appends `c` escaped for use inside a regex class.
fn push_class_literal(out: &mut String, c: char) {
    if c.is_ascii_punctuation() {
        out.push('\\');
    }
    out.push(c);
}
