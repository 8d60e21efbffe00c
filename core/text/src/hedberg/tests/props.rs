//! Property tests: a block and its inverse restore the text, and nothing panics on arbitrary input.

use proptest::prelude::*;

use crate::hedberg::{apply, hedmatch, hedreplace, hedsearch, parse_edit, Block, Edit, EditAttrs};

/// Pieces that steer random strings into every pattern kind and edit format.
const FRAGMENTS: &[&str] = &[
    "<<<<<<< SEARCH\n",
    "<<< SEARCH\n",
    "=======\n",
    "===\n",
    ">>>>>>> REPLACE\n",
    ">>> REPLACE",
    "@@ -1,2 +1,2 @@\n",
    "@@\n",
    "@@ -99999999999999999999999 +1 @@\n",
    "--- a/x\n",
    "+++ b/x\n",
    "+++ \n",
    "-",
    "+",
    " ",
    "\n",
    "\r\n",
    "\\",
    "s/",
    "s|",
    "/",
    "|",
    "#",
    ";",
    "g",
    "$",
    "$1",
    "\\1",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "*",
    "**",
    "?",
    ".",
    "^",
    "$.",
    "$..",
    "$[0]",
    "//",
    "<old_text>",
    "</old_text>",
    "<new_text>",
    "</new_text>",
    "{\"search\":\"",
    "\"}",
    "search=\"",
    "<a>",
    "</a>",
    "<a x='1'>",
    "child::",
    "[@x]",
    "known://",
    "é",
    "日本",
    "\u{3000}",
    "\t",
    "x",
    "ab",
    "```",
    "```diff\n",
    "\\ No newline at end of file\n",
];

/// A string built from fragments, or any string at all.
fn soup() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(prop::sample::select(FRAGMENTS), 0..16).prop_map(|v| v.concat()),
        any::<String>(),
    ]
}

/// A character-boundary slice of `text` from char `start` for `len` chars.
fn char_slice(text: &str, start: usize, len: usize) -> &str {
    let offsets: Vec<usize> = text
        .char_indices()
        .map(|(at, _)| at)
        .chain([text.len()])
        .collect();
    let from = offsets[start.min(offsets.len() - 1)];
    let to = offsets[(start + len).min(offsets.len() - 1)];
    &text[from..to]
}

/// Applies a unified diff strictly: every context and removed line must be exactly where its hunk says.
fn replay(old: &str, patch: &str) -> Option<String> {
    if patch.is_empty() {
        return Some(old.to_owned());
    }
    let rest = patch.strip_prefix("--- p\n+++ p\n")?;
    // (mark, line) pairs; a "\ No newline" note takes the break off the line before it.
    let mut entries: Vec<(char, String)> = Vec::new();
    for line in rest.split_inclusive('\n') {
        if line.starts_with('\\') {
            let last = entries.last_mut()?;
            last.1.pop();
            continue;
        }
        let mark = line.chars().next()?;
        entries.push((mark, line[mark.len_utf8()..].to_owned()));
    }
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let mut out = String::new();
    let mut at = 0;
    for (mark, line) in entries {
        match mark {
            '@' => {
                let range = line.split_whitespace().find_map(|p| p.strip_prefix('-'))?;
                let mut parts = range.split(',');
                let start: usize = parts.next()?.parse().ok()?;
                let len: usize = parts.next().map_or(Some(1), |n| n.parse().ok())?;
                let index = if len == 0 {
                    start
                } else {
                    start.checked_sub(1)?
                };
                if index < at {
                    return None;
                }
                out.extend(old_lines.get(at..index)?.iter().copied());
                at = index;
            }
            ' ' | '-' => {
                if *old_lines.get(at)? != line {
                    return None;
                }
                if mark == ' ' {
                    out.push_str(&line);
                }
                at += 1;
            }
            '+' => out.push_str(&line),
            _ => return None,
        }
    }
    out.extend(old_lines.get(at..)?.iter().copied());
    Some(out)
}

/// One random block: a literal slice of `text` or a sed command, with a replacement.
fn random_block(
    text: &str,
    start: prop::sample::Index,
    len: usize,
    replace: &str,
    sed: bool,
) -> Option<Block> {
    let search = char_slice(text, start.index(text.chars().count().max(1)), len);
    if search.trim().is_empty() {
        return None;
    }
    if sed {
        let word: String = search
            .chars()
            .filter(char::is_ascii_alphabetic)
            .take(2)
            .collect();
        return (!word.is_empty()).then(|| Block::sed(&word, replace, "g"));
    }
    Some(Block::literal(search, replace))
}

proptest! {
    #![proptest_config(ProptestConfig {
        max_global_rejects: 1 << 16,
        ..ProptestConfig::with_cases(256)
    })]

    /// Replacing a slice of a text and then replacing the replacement with the slice restores the text.
    #[test]
    fn block_then_inverse_restores(
        text in "[a-cé \t\n]{1,80}",
        start in any::<prop::sample::Index>(),
        len in 1usize..24,
        replace in "[x-zü][x-zü\n]{0,7}",
    ) {
        let search = char_slice(&text, start.index(text.chars().count()), len);
        prop_assume!(!search.trim().is_empty() && !replace.trim().is_empty());
        let forward = Edit::Blocks(vec![Block::literal(search, &replace)]);
        let changed = apply("p", &text, &forward, 4).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assume!(changed.content.matches(replace.as_str()).count() == 1);
        let inverse = Edit::Blocks(vec![Block::literal(&replace, search)]);
        let restored = apply("p", &changed.content, &inverse, 4)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(restored.content, text);
    }

    /// Pattern detection and the three operations never panic, whatever the pattern and text.
    #[test]
    fn patterns_never_panic(pattern in soup(), text in soup(), replacement in soup()) {
        let _ = hedmatch(&pattern, &text);
        let _ = hedsearch(&pattern, &text);
        let _ = hedreplace(&pattern, &replacement, &text);
    }

    /// Arbitrary bytes as pattern, text and edit body: nothing panics, and every call ends in
    /// bounded time (no pattern makes matching explode).
    #[test]
    fn arbitrary_bytes_never_panic_or_hang(
        pattern in prop::collection::vec(any::<u8>(), 0..256),
        text in prop::collection::vec(any::<u8>(), 0..2048),
        body in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        let (pattern, text, body) = (
            String::from_utf8_lossy(&pattern),
            String::from_utf8_lossy(&text),
            String::from_utf8_lossy(&body),
        );
        let started = std::time::Instant::now();
        let _ = hedmatch(&pattern, &text);
        let _ = hedsearch(&pattern, &text);
        let _ = hedreplace(&pattern, &body, &text);
        let _ = apply("p", &text, &parse_edit(&body, &EditAttrs::default()), 4);
        prop_assert!(started.elapsed() < std::time::Duration::from_secs(2), "took {:?}", started.elapsed());
    }

    /// Reading any body and applying it to any text never panics.
    #[test]
    fn edits_never_panic(body in soup(), text in soup(), search in proptest::option::of(soup())) {
        let attrs = EditAttrs { search, replace: None };
        for edit in [parse_edit(&body, &EditAttrs::default()), parse_edit(&body, &attrs)] {
            let _ = apply("p", &text, &edit, 4);
        }
    }

    /// The patch of any edit, applied strictly to the old text, gives the new text (also for CRLF texts).
    #[test]
    fn patch_replays_exactly(
        lines in prop::collection::vec("[a-c]{0,3}", 0..40),
        final_break in any::<bool>(),
        crlf in any::<bool>(),
        blocks in prop::collection::vec(
            (any::<prop::sample::Index>(), 1usize..30, "[a-dx\n]{0,10}", any::<bool>()),
            1..5,
        ),
    ) {
        let mut text = lines.join("\n");
        if final_break && !text.is_empty() {
            text.push('\n');
        }
        if crlf {
            text = text.replace('\n', "\r\n");
        }
        let blocks: Vec<Block> = blocks
            .iter()
            .filter_map(|(start, len, replace, sed)| random_block(&text, *start, *len, replace, *sed))
            .collect();
        prop_assume!(!blocks.is_empty());
        let edit = Edit::Blocks(blocks);
        if let Ok(applied) = apply("p", &text, &edit, 4) {
            prop_assert_eq!(replay(&text, &applied.patch), Some(applied.content.clone()));
        }
        let whole = Edit::Replace(lines.join("\n") + "\nend");
        let replaced = apply("p", &text, &whole, 4).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(replay(&text, &replaced.patch), Some(replaced.content.clone()));
    }
}
