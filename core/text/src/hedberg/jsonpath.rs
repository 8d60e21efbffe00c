//! A small JSONPath: `$`, `.key`, `..` (the node and all its descendants), `*`, `[*]`, `['k']`, `["k"]`, `[n]`, `[-n]` and unions `[a,b]`.
//!
//! Filters (`[?(…)]`) and slices are not supported; such a pattern does not
//! compile and is read as literal text instead.

use serde_json::Value;

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// The named member of an object.
    Key(String),
    /// An array item; negative counts from the end.
    Index(i64),
    /// Every item of an array or value of an object.
    Wildcard,
    /// The node itself and every node below it.
    Descendants,
    /// The union of several keys or indexes.
    Union(Vec<Step>),
}

/// A parsed JSONPath.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

/// Plausible JSONPath text: `$.` followed by a name start and no `/`, `$[` without `/`, or `$..`.
pub fn looks_like(pattern: &str) -> bool {
    if pattern.starts_with("$..") {
        return true;
    }
    if let Some(rest) = pattern.strip_prefix("$.") {
        return rest
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || matches!(c, '_' | '*' | '@' | '[' | '$'))
            && !pattern.contains('/');
    }
    pattern.starts_with("$[") && !pattern.contains('/')
}

/// Parses `pattern`, or `None` if it is not a path this module supports.
pub fn parse(pattern: &str) -> Option<JsonPath> {
    let mut rest = pattern.strip_prefix('$')?;
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("..") {
            steps.push(Step::Descendants);
            rest = after;
            // `$..name` and `$..*` name what to take below; `$..[0]` goes on with the bracket.
            if !rest.starts_with('[') && !rest.is_empty() {
                let (step, after) = name(rest)?;
                steps.push(step);
                rest = after;
            }
        } else if let Some(after) = rest.strip_prefix('.') {
            let (step, after) = name(after)?;
            steps.push(step);
            rest = after;
        } else if let Some(after) = rest.strip_prefix('[') {
            let (step, after) = bracket(after)?;
            steps.push(step);
            rest = after;
        } else {
            return None;
        }
    }
    Some(JsonPath { steps })
}

/// Reads a dotted name (or `*`) at the start of `text`.
fn name(text: &str) -> Option<(Step, &str)> {
    if let Some(after) = text.strip_prefix('*') {
        return Some((Step::Wildcard, after));
    }
    let end = text.find(['.', '[']).unwrap_or(text.len());
    let key = &text[..end];
    if key.is_empty() || key.contains(char::is_whitespace) {
        return None;
    }
    Some((Step::Key(key.to_owned()), &text[end..]))
}

/// Reads a bracket's content after `[` up to and including `]`.
fn bracket(text: &str) -> Option<(Step, &str)> {
    let mut items = Vec::new();
    let mut rest = text.trim_start();
    loop {
        let (item, after) = bracket_item(rest)?;
        items.push(item);
        rest = after.trim_start();
        if let Some(after) = rest.strip_prefix(',') {
            rest = after.trim_start();
        } else if let Some(after) = rest.strip_prefix(']') {
            let step = if items.len() == 1 {
                items.pop()?
            } else {
                Step::Union(items)
            };
            return Some((step, after));
        } else {
            return None;
        }
    }
}

/// Reads one bracket item: `*`, a quoted key, or an integer index.
fn bracket_item(text: &str) -> Option<(Step, &str)> {
    if let Some(after) = text.strip_prefix('*') {
        return Some((Step::Wildcard, after));
    }
    if let Some(quote @ ('\'' | '"')) = text.chars().next() {
        let body = &text[1..];
        let mut key = String::new();
        let mut chars = body.char_indices();
        while let Some((at, c)) = chars.next() {
            match c {
                '\\' => key.push(chars.next()?.1),
                c if c == quote => return Some((Step::Key(key), &body[at + 1..])),
                c => key.push(c),
            }
        }
        return None;
    }
    let end = text
        .char_indices()
        .find(|&(at, c)| !(c.is_ascii_digit() || (at == 0 && c == '-')))
        .map_or(text.len(), |(at, _)| at);
    let index = text[..end].parse().ok()?;
    Some((Step::Index(index), &text[end..]))
}

impl JsonPath {
    /// The values the path selects in `root`, in document order.
    pub fn select<'v>(&self, root: &'v Value) -> Vec<&'v Value> {
        let mut nodes = vec![root];
        for step in &self.steps {
            let mut next = Vec::new();
            for node in nodes {
                apply(step, node, &mut next);
            }
            if next.is_empty() {
                return next;
            }
            nodes = next;
        }
        nodes
    }
}

/// Adds what `step` selects from `node` to `out`.
fn apply<'v>(step: &Step, node: &'v Value, out: &mut Vec<&'v Value>) {
    match (step, node) {
        (Step::Key(key), Value::Object(map)) => out.extend(map.get(key)),
        (Step::Index(index), Value::Array(items)) => {
            let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
            let at = if *index < 0 { len + index } else { *index };
            if let Some(item) = usize::try_from(at).ok().and_then(|at| items.get(at)) {
                out.push(item);
            }
        }
        (Step::Wildcard, Value::Array(items)) => out.extend(items),
        (Step::Wildcard, Value::Object(map)) => out.extend(map.values()),
        (Step::Descendants, _) => descend(node, out),
        (Step::Union(steps), _) => {
            for step in steps {
                apply(step, node, out);
            }
        }
        _ => {}
    }
}

/// Adds `node` and everything below it, depth first.
fn descend<'v>(node: &'v Value, out: &mut Vec<&'v Value>) {
    out.push(node);
    match node {
        Value::Array(items) => items.iter().for_each(|item| descend(item, out)),
        Value::Object(map) => map.values().for_each(|value| descend(value, out)),
        _ => {}
    }
}

/// How a selected value reads as match text: strings raw, anything else as compact JSON.
pub fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}
