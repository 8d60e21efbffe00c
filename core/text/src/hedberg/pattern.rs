//! Pattern detection and the three operations on a compiled pattern: whole match, search, replace.

use regex::{NoExpand, Regex};

use super::glob::{self, Glob};
use super::jsonpath::{self, JsonPath};
use super::limits::{self, Refused};
use super::patch::{breaks, Splice};
use super::rx::{self, Style};
use super::sed::{self, SedCommand};
use super::xpath::{self, Outcome};

/// The kinds of pattern, in the order detection tries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PatternKind {
    /// `s<d>search<d>replace<d>flags`, a regex substitution.
    Sed,
    /// `/body/flags` whose body is plainly a regex.
    Regex,
    /// `$.key`, `$[0]`, `$..key`: selects inside JSON texts.
    Jsonpath,
    /// `//name`, `/a[@x]`, `/child::a`: selects inside XML texts.
    Xpath,
    /// Text with an unescaped `*` or `?`.
    Glob,
    /// Anything else: the exact text.
    Literal,
}

/// Where a pattern was found inside a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The matched text (for xpath and jsonpath, the selected value's text).
    pub text: String,
    /// The byte offset of the match in the searched text (0 for xpath and jsonpath).
    pub index: usize,
}

/// A pattern compiled once, to be matched against many texts.
#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    compiled: Compiled,
}

/// The compiled form of each kind.
#[derive(Debug, Clone)]
enum Compiled {
    Literal,
    Glob(Glob),
    Regex {
        regex: Regex,
        global: bool,
    },
    Jsonpath(JsonPath),
    Xpath,
    /// `regex` is the search escaped as literal text when it is not a valid regex.
    Sed {
        command: SedCommand,
        regex: Regex,
    },
}

/// Regex flag letters accepted after `/body/` (each at most once).
const REGEX_FLAGS: &str = "dgimsuvy";

/// Characters whose presence makes a `/…/` body plainly a regex rather than a path.
const REGEX_MARKERS: &[char] = &[
    '\\', '^', '$', '*', '+', '?', '(', ')', '[', ']', '{', '}', '|',
];

/// Splits `/body/flags` into body and flags when it is plainly a regex (see the module doc).
pub fn regex_parts(pattern: &str) -> Option<(&str, &str)> {
    let inner = pattern.strip_prefix('/')?;
    let mut escaped = false;
    let mut in_class = false;
    let mut close = None;
    for (at, c) in inner.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '[' => in_class = true,
            ']' => in_class = false,
            '/' if !in_class => {
                close = Some(at);
                break;
            }
            _ => {}
        }
    }
    let close = close?;
    let (body, flags) = (&inner[..close], &inner[close + 1..]);
    let flags_ok = flags.chars().all(|c| REGEX_FLAGS.contains(c))
        && flags
            .char_indices()
            .all(|(at, c)| !flags[at + 1..].contains(c));
    (flags_ok && body.contains(REGEX_MARKERS)).then_some((body, flags))
}

/// True when `pattern` has a `*` or `?` not escaped by a backslash.
pub fn is_glob(pattern: &str) -> bool {
    let mut escaped = false;
    for c in pattern.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '*' | '?' => return true,
            _ => {}
        }
    }
    false
}

impl Pattern {
    /// Detects the kind of `pattern` and compiles it; a kind whose text does not compile falls through to the next.
    pub fn compile(pattern: &str) -> Pattern {
        let compiled = Self::detect(pattern).unwrap_or(Compiled::Literal);
        Pattern {
            source: pattern.to_owned(),
            compiled,
        }
    }

    fn detect(pattern: &str) -> Option<Compiled> {
        if let Some(command) = sed::parse_pattern(pattern) {
            let regex = rx::build(&command.search, &command.flags, true)
                .or_else(|_| rx::build(&regex::escape(&command.search), &command.flags, true))
                .ok()?;
            return Some(Compiled::Sed { command, regex });
        }
        if let Some((body, flags)) = regex_parts(pattern) {
            if let Ok(regex) = rx::build(body, flags, false) {
                let global = flags.contains('g');
                return Some(Compiled::Regex { regex, global });
            }
        }
        if jsonpath::looks_like(pattern) {
            if let Some(path) = jsonpath::parse(pattern) {
                return Some(Compiled::Jsonpath(path));
            }
        }
        if xpath::looks_like(pattern) && xpath::compiles(pattern) {
            return Some(Compiled::Xpath);
        }
        if is_glob(pattern) {
            return glob::compile(pattern).map(Compiled::Glob);
        }
        None
    }

    /// The pattern as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Which kind the pattern was read as.
    pub fn kind(&self) -> PatternKind {
        match self.compiled {
            Compiled::Literal => PatternKind::Literal,
            Compiled::Glob(_) => PatternKind::Glob,
            Compiled::Regex { .. } => PatternKind::Regex,
            Compiled::Jsonpath(_) => PatternKind::Jsonpath,
            Compiled::Xpath => PatternKind::Xpath,
            Compiled::Sed { .. } => PatternKind::Sed,
        }
    }

    /// hedmatch: does `text` match? Literal and glob cover the whole text; regex and sed need only a hit inside it.
    pub fn is_match(&self, text: &str) -> bool {
        match &self.compiled {
            Compiled::Literal => text == self.source,
            Compiled::Glob(glob) => glob.whole.is_match(text),
            Compiled::Regex { regex, .. } => regex.is_match(text),
            Compiled::Sed { regex, .. } => regex.is_match(text),
            Compiled::Jsonpath(_) | Compiled::Xpath => match self.select(text) {
                Some(found) => found.is_some(),
                None => text == self.source,
            },
        }
    }

    /// hedsearch: the first place the pattern occurs inside `text`.
    pub fn search(&self, text: &str) -> Option<Found> {
        let found = |m: regex::Match<'_>| Found {
            text: m.as_str().to_owned(),
            index: m.start(),
        };
        match &self.compiled {
            Compiled::Literal => literal_find(&self.source, text),
            Compiled::Glob(glob) => glob.find.find(text).map(found),
            Compiled::Regex { regex, .. } => regex.find(text).map(found),
            Compiled::Sed { regex, .. } => regex.find(text).map(found),
            Compiled::Jsonpath(_) | Compiled::Xpath => match self.select(text) {
                Some(selected) => selected.map(|text| Found { text, index: 0 }),
                None => literal_find(&self.source, text),
            },
        }
    }

    /// A body filter's search: [`search`](Self::search), after refusing a body over the
    /// limits its kind must respect before reading it (see [`limits`]): for xpath and
    /// jsonpath the size and the nesting depth, for regex and sed the size.
    pub fn filter(&self, text: &str) -> Result<Option<Found>, Refused> {
        match &self.compiled {
            Compiled::Xpath => limits::check_xml(text)?,
            Compiled::Jsonpath(_) => limits::check_json(text)?,
            Compiled::Regex { .. } | Compiled::Sed { .. } => limits::check_size(text)?,
            Compiled::Literal | Compiled::Glob(_) => {}
        }
        Ok(self.search(text))
    }

    /// hedreplace: `text` with the pattern's matches replaced, or `None` when nothing matched.
    ///
    /// A sed pattern brings its own replacement and ignores `replacement`;
    /// xpath and jsonpath patterns select but never replace.
    pub fn replace(&self, replacement: &str, text: &str) -> Option<String> {
        match &self.compiled {
            Compiled::Literal => literal_replace(&self.source, replacement, text),
            Compiled::Glob(glob) => {
                let hit = glob.find.is_match(text);
                hit.then(|| {
                    glob.find
                        .replace_all(text, NoExpand(replacement))
                        .into_owned()
                })
            }
            Compiled::Regex { regex, global } => {
                let limit = if *global { usize::MAX } else { 1 };
                replace_regex(regex, text, replacement, Style::Js, limit)
            }
            Compiled::Sed { command, regex } => {
                sed_replace(regex, text, &command.replace, command.flags.contains('g'))
            }
            Compiled::Jsonpath(_) | Compiled::Xpath => match self.select(text) {
                Some(_) => None,
                None => literal_replace(&self.source, replacement, text),
            },
        }
    }

    /// For xpath and jsonpath: `None` when `text` is not XML/JSON (so the pattern is
    /// read as literal text), else the first selected value's text, if any. A text over
    /// the [`limits`] is never parsed (its depth could overflow the stack): it counts as
    /// not XML/JSON here, and [`filter`](Self::filter) refuses it outright.
    fn select(&self, text: &str) -> Option<Option<String>> {
        match &self.compiled {
            Compiled::Jsonpath(_) if limits::check_json(text).is_err() => None,
            Compiled::Xpath if limits::check_xml(text).is_err() => None,
            Compiled::Jsonpath(path) => {
                let value: serde_json::Value = serde_json::from_str(text).ok()?;
                Some(path.select(&value).first().map(|v| jsonpath::value_text(v)))
            }
            Compiled::Xpath => match xpath::evaluate(&self.source, text) {
                Outcome::NotXml => None,
                Outcome::NoMatch => Some(None),
                Outcome::Match(text) => Some(Some(text)),
            },
            _ => Some(None),
        }
    }
}

/// The first occurrence of a literal.
fn literal_find(needle: &str, text: &str) -> Option<Found> {
    text.find(needle).map(|index| Found {
        text: needle.to_owned(),
        index,
    })
}

/// Every occurrence of a non-empty literal replaced, or `None` if there is none.
fn literal_replace(needle: &str, replacement: &str, text: &str) -> Option<String> {
    (!needle.is_empty() && text.contains(needle)).then(|| text.replace(needle, replacement))
}

/// The first `limit` regex matches replaced by the expanded template, or `None` if none matched.
fn replace_regex(
    regex: &Regex,
    text: &str,
    template: &str,
    style: Style,
    limit: usize,
) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut count = 0;
    for caps in regex.captures_iter(text).take(limit) {
        let Some(whole) = caps.get(0) else { continue };
        out.push_str(&text[last..whole.start()]);
        rx::expand(&caps, template, style, &mut out);
        last = whole.end();
        count += 1;
    }
    if count == 0 {
        return None;
    }
    out.push_str(&text[last..]);
    Some(out)
}

/// sed semantics: every match with `g`, otherwise the first match on each line.
pub fn sed_replace(regex: &Regex, text: &str, template: &str, global: bool) -> Option<String> {
    sed_replace_lines(regex, text, template, global).map(|replaced| replaced.text)
}

/// What a sed replacement did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SedReplaced {
    /// The new text.
    pub text: String,
    /// The 1-based line of every replaced match.
    pub lines: Vec<usize>,
    /// Every replaced match as a splice of the old text.
    pub splices: Vec<Splice>,
}

/// [`sed_replace`], also saying where it replaced.
pub fn sed_replace_lines(
    regex: &Regex,
    text: &str,
    template: &str,
    global: bool,
) -> Option<SedReplaced> {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut line = 1;
    let mut counted_to = 0;
    let mut lines: Vec<usize> = Vec::new();
    let mut splices = Vec::new();
    for caps in regex.captures_iter(text) {
        let Some(whole) = caps.get(0) else { continue };
        line += breaks(&text[counted_to..whole.start()]);
        counted_to = whole.start();
        if !global && lines.last() == Some(&line) {
            continue;
        }
        out.push_str(&text[last..whole.start()]);
        let expansion_start = out.len();
        rx::expand(&caps, template, Style::Sed, &mut out);
        splices.push(Splice {
            start: whole.start(),
            end: whole.end(),
            inserted_breaks: breaks(&out[expansion_start..]),
        });
        last = whole.end();
        lines.push(line);
    }
    if lines.is_empty() {
        return None;
    }
    out.push_str(&text[last..]);
    Some(SedReplaced {
        text: out,
        lines,
        splices,
    })
}
