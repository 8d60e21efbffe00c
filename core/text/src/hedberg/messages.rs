//! Every text the model reads about an edit: failures, ambiguity and healing warnings.
//!
//! Kept in one place so wording changes are reviewed together; the texts say
//! what happened and what to do next time, never how the matcher works inside.

/// Why a SEARCH block that matched nowhere failed, with the fix the model should make.
pub const NOT_FOUND: &str = "Could not find the SEARCH text in the entry. SEARCH text is matched \
literally, not as a pattern: copy the lines exactly as they are, with a few unchanged lines \
around them.";

/// Added to [`NOT_FOUND`] when the block's first line does occur, so the model knows where to look.
pub const FIRST_LINE_AT: &str =
    "Its first line occurs at line {line}, but the lines after it differ.";

/// An edit body with SEARCH/REPLACE markers but no complete block.
pub const NO_BLOCKS: &str = "The edit has SEARCH/REPLACE markers but no complete block. Each \
block is `<<<<<<< SEARCH`, the current lines, `=======`, the new lines, then `>>>>>>> REPLACE`, \
each marker on its own line.";

/// The heading of a failed edit that had no blocks at all.
pub const NOTHING_CHANGED: &str = "No change was made.";

/// The heading of a failed edit: nothing was changed.
pub const FAILED: &str =
    "No change was made: {failed} of {total} edit block(s) failed, and an edit applies only when \
every block matches.";

/// A SEARCH block found in several places; one of them was changed.
pub const AMBIGUOUS: &str = "The SEARCH text matched {count} places (lines {lines}); the edit was \
applied at line {used}. Include more unchanged lines around the change to make it unique.";

/// The SEARCH text matched only after its regex escapes (`\(`, `\.`) were removed.
pub const ESCAPES_HEALED: &str = "The SEARCH text matched only after removing its backslash \
escapes. SEARCH text is literal: do not escape it.";

/// The SEARCH text matched only when trailing whitespace or blank lines were ignored.
pub const WHITESPACE_HEALED: &str = "The SEARCH text matched only when whitespace was ignored. \
Copy SEARCH lines exactly, including their spacing.";

/// The SEARCH text matched with other indentation; the replacement was re-indented.
pub const INDENT_HEALED: &str = "Indentation healing applied: the entry is indented with \
'{file}' where your SEARCH text used '{search}', so the replacement was re-indented to match. \
Copy indentation exactly in future edits.";

/// An empty SEARCH text on a non-empty entry: the replacement went to the end.
pub const APPENDED: &str =
    "The SEARCH text was empty, so the replacement was appended at the end of the entry.";

/// A sed block that changed more than one place.
pub const SED_MANY: &str = "The sed command replaced {count} matches, on lines {lines}.";

/// A sed block whose regex did not compile, so its text was matched literally.
pub const SED_LITERAL: &str =
    "The sed search is not a valid regular expression ({error}); it was matched as literal text.";

/// Names one block of several in a diagnostic or warning.
pub const BLOCK_PREFIX: &str = "Block {index} of {total} ({what}): ";

/// Fills `{name}` placeholders in a message template.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = template.to_owned();
    for (name, value) in values {
        out = out.replace(&format!("{{{name}}}"), value);
    }
    out
}

/// Joins line numbers for a message, eliding the middle of long lists.
pub fn line_list(lines: &[usize]) -> String {
    const SHOWN: usize = 8;
    let mut parts: Vec<String> = lines.iter().take(SHOWN).map(usize::to_string).collect();
    if lines.len() > SHOWN {
        parts.push(format!("… {} more", lines.len() - SHOWN));
    }
    parts.join(", ")
}

/// Renders indentation so the model can see it: tabs as `\t`, spaces as `s`.
pub fn show_indent(indent: &str) -> String {
    indent
        .chars()
        .map(|c| match c {
            '\t' => "\\t".to_owned(),
            ' ' => "s".to_owned(),
            other => other.to_string(),
        })
        .collect()
}

/// The first non-blank line of a block's SEARCH text, shortened, to name the block.
pub fn block_name(search: Option<&str>) -> String {
    const MAX_CHARS: usize = 60;
    let Some(search) = search else {
        return "whole content".to_owned();
    };
    let first = search
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("");
    if first.is_empty() {
        return "empty SEARCH".to_owned();
    }
    let mut shown: String = first.chars().take(MAX_CHARS).collect();
    if first.chars().count() > MAX_CHARS {
        shown.push('…');
    }
    format!("SEARCH starting `{shown}`")
}
