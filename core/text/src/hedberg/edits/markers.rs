//! Marker formats: merge-conflict SEARCH/REPLACE blocks, replace-only, and Claude's `<old_text>`/`<new_text>` pairs.

use super::Block;

/// Fewest and most repeated characters a marker may have.
const MARKER_LEN: std::ops::RangeInclusive<usize> = 3..=12;

/// True when `line` is 3–12 `c` followed, after optional spaces, by `word` (any case) and nothing else.
fn is_marker(line: &str, c: char, word: &str) -> bool {
    let line = line.trim_end();
    let run = line.chars().take_while(|&x| x == c).count();
    if !MARKER_LEN.contains(&run) {
        return false;
    }
    let rest = line[run..].trim_start();
    if word.is_empty() {
        return rest.is_empty();
    }
    rest.eq_ignore_ascii_case(word)
}

/// `<<<<<<< SEARCH`.
fn is_search(line: &str) -> bool {
    is_marker(line, '<', "SEARCH")
}

/// `=======`.
fn is_divider(line: &str) -> bool {
    is_marker(line, '=', "")
}

/// `>>>>>>> REPLACE`.
fn is_replace(line: &str) -> bool {
    is_marker(line, '>', "REPLACE")
}

/// True when some line is a SEARCH marker.
pub fn has_search_marker(text: &str) -> bool {
    text.split('\n').any(is_search)
}

/// True when some line is a REPLACE marker.
pub fn has_replace_marker(text: &str) -> bool {
    text.split('\n').any(is_replace)
}

/// Where the reader is inside a merge-conflict body.
enum State<'a> {
    Outside,
    Search(Vec<&'a str>),
    Replace(String, Vec<&'a str>),
}

/// Every SEARCH/REPLACE block in `text`, in order.
///
/// A second SEARCH marker before the divider restarts the block; a block
/// whose REPLACE marker is missing at the very end is kept (a model that
/// stops early still meant the block), and SEARCH must still match.
pub fn merge_conflict(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut state = State::Outside;
    for line in text.split('\n') {
        state = match state {
            State::Outside if is_search(line) => State::Search(Vec::new()),
            State::Outside => State::Outside,
            State::Search(_) if is_search(line) => State::Search(Vec::new()),
            State::Search(lines) if is_divider(line) => {
                State::Replace(lines.join("\n"), Vec::new())
            }
            State::Search(mut lines) => {
                lines.push(line);
                State::Search(lines)
            }
            State::Replace(search, lines) if is_replace(line) => {
                blocks.push(Block::literal(&search, &lines.join("\n")));
                State::Outside
            }
            State::Replace(search, mut lines) => {
                lines.push(line);
                State::Replace(search, lines)
            }
        };
    }
    if let State::Replace(search, mut lines) = state {
        while lines.last().is_some_and(|l| l.trim().is_empty()) {
            lines.pop();
        }
        blocks.push(Block::literal(&search, &lines.join("\n")));
    }
    blocks
}

/// `=======` … `>>>>>>> REPLACE` with no SEARCH marker: the text between is the whole content.
pub fn replace_only(text: &str) -> Option<Block> {
    let lines: Vec<&str> = text.split('\n').collect();
    let start = lines.iter().position(|l| is_divider(l))?;
    let end = start + 1 + lines[start + 1..].iter().position(|l| is_replace(l))?;
    Some(Block::whole(&lines[start + 1..end].join("\n")))
}

/// Every `<old_text>…</old_text>` + `<new_text>…</new_text>` pair (or `old_str`/`new_str`).
pub fn claude(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut rest = text;
    loop {
        let found = [("old_text", "new_text"), ("old_str", "new_str")]
            .into_iter()
            .filter_map(|(old, new)| {
                let (at, search, after) = tagged(rest, old)?;
                let (replace, after) = tagged(after.trim_start(), new)
                    .filter(|(at, _, _)| *at == 0)
                    .map(|(_, replace, after)| (replace, after))?;
                Some((at, search, replace, after))
            })
            .min_by_key(|(at, ..)| *at);
        let Some((_, search, replace, after)) = found else {
            return blocks;
        };
        blocks.push(Block::literal(search, replace));
        rest = after;
    }
}

/// The first `<tag>…</tag>` in `text`: where it starts, its inner text (one line break
/// trimmed at each end), and the text after it.
fn tagged<'a>(text: &'a str, tag: &str) -> Option<(usize, &'a str, &'a str)> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let at = text.find(&open)?;
    let inner_start = at + open.len();
    let inner_len = text[inner_start..].find(&close)?;
    let inner = &text[inner_start..inner_start + inner_len];
    let inner = inner.strip_prefix('\n').unwrap_or(inner);
    let inner = inner.strip_suffix('\n').unwrap_or(inner);
    Some((at, inner, &text[inner_start + inner_len + close.len()..]))
}
