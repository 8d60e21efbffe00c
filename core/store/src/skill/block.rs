//! The frontmatter block of a skill file, read as the small YAML subset skills are written in:
//! `key: value` lines, quoted and plain scalars with comments, block and flow lists, and literal
//! and folded block text.

use super::{error, FrontmatterError, Raw};

/// The frontmatter block's lines and the body after it; `None` when the file opens with no
/// `---` line.
pub(super) fn split(text: &str) -> Result<Option<(Vec<&str>, &str)>, FrontmatterError> {
    let mut lines = text.split_inclusive('\n');
    match lines.next() {
        Some(first) if first.trim_end() == "---" => {}
        _ => return Ok(None),
    }
    let mut offset = text.find('\n').map_or(text.len(), |i| i + 1);
    let mut block = Vec::new();
    for line in lines {
        offset += line.len();
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.trim_end() == "---" || bare.trim_end() == "..." {
            let body = text[offset..].trim_start_matches(['\n', '\r']);
            return Ok(Some((block, body)));
        }
        block.push(bare);
    }
    Err(error(
        "frontmatter",
        "the file opens with --- but no line closes the block with ---",
    ))
}

/// The fields of a frontmatter block, in order, as written.
pub(super) fn read_block(lines: &[&str]) -> Result<Vec<(String, Raw)>, FrontmatterError> {
    let mut fields = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if skippable(line) {
            continue;
        }
        if line.starts_with([' ', '\t']) || line.starts_with('-') {
            return Err(error(
                "frontmatter",
                format!("line {i} belongs to no field: {}", line.trim()),
            ));
        }
        let Some((key, rest)) = line.split_once(':') else {
            return Err(error(
                "frontmatter",
                format!("line {i} is not `field: value`: {}", line.trim()),
            ));
        };
        let key = key.trim().to_owned();
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(error(
                "frontmatter",
                format!("line {i} does not start with a field name: {}", line.trim()),
            ));
        }
        let value = rest.trim();
        // The lines that belong to this field: indented ones, and `- item` lines.
        let start = i;
        while i < lines.len() && (skippable(lines[i]) || lines[i].starts_with([' ', '\t', '-'])) {
            i += 1;
        }
        let more = &lines[start..i];
        let raw = if value.is_empty() {
            block_list(&key, more)?
        } else if value.starts_with('|') || value.starts_with('>') {
            Raw::Text(block_text(&key, value, more)?)
        } else if more.iter().any(|l| !skippable(l)) {
            return Err(error(
                &key,
                "a value on the field's line cannot go on in the lines below (use | or > for text over several lines)",
            ));
        } else if let Some(inner) = value.strip_prefix('[') {
            let inner = strip_comment(inner);
            let inner = inner.strip_suffix(']').ok_or_else(|| {
                error(
                    &key,
                    "a list opened with [ must close with ] on the same line",
                )
            })?;
            Raw::List(flow_items(&key, inner)?)
        } else {
            Raw::Text(scalar(&key, value)?)
        };
        fields.push((key, raw));
    }
    Ok(fields)
}

/// A blank or comment line.
fn skippable(line: &str) -> bool {
    let trimmed = line.trim();
    trimmed.is_empty() || trimmed.starts_with('#')
}

/// `- item` lines (none: an empty value).
fn block_list(key: &str, lines: &[&str]) -> Result<Raw, FrontmatterError> {
    let mut items = Vec::new();
    for line in lines.iter().filter(|l| !skippable(l)) {
        let trimmed = line.trim();
        let item = trimmed
            .strip_prefix("- ")
            .or_else(|| (trimmed == "-").then_some(""))
            .ok_or_else(|| error(key, format!("expected `- item` lines, found: {trimmed}")))?;
        items.push(scalar(key, item.trim())?);
    }
    if items.is_empty() {
        return Ok(Raw::Text(String::new()));
    }
    Ok(Raw::List(items))
}

/// `|` (lines kept) or `>` (lines folded into one) block text.
fn block_text(key: &str, indicator: &str, lines: &[&str]) -> Result<String, FrontmatterError> {
    let folded = indicator.starts_with('>');
    if !matches!(strip_comment(&indicator[1..]).trim(), "" | "-" | "+") {
        return Err(error(
            key,
            format!("unexpected text after {}", &indicator[..1]),
        ));
    }
    // Its lines are the indented ones; a comment at the margin is no part of it.
    let lines: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.trim().is_empty() || l.starts_with([' ', '\t']) || !skippable(l))
        .collect();
    if let Some(stray) = lines
        .iter()
        .find(|l| !l.trim().is_empty() && !l.starts_with([' ', '\t']))
    {
        return Err(error(
            key,
            format!("expected indented lines of text, found: {}", stray.trim()),
        ));
    }
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut text = String::new();
    let mut paragraph_break = false;
    for line in &lines {
        let content = line.get(indent..).unwrap_or("").trim_end();
        if !folded {
            text.push_str(content);
            text.push('\n');
        } else if content.is_empty() {
            paragraph_break = true;
        } else {
            if paragraph_break {
                text.push('\n');
            } else if !text.is_empty() {
                text.push(' ');
            }
            paragraph_break = false;
            text.push_str(content);
        }
    }
    Ok(text.trim_end().to_owned())
}

/// The items of a `[a, b]` list (its inside).
fn flow_items(key: &str, inner: &str) -> Result<Vec<String>, FrontmatterError> {
    let mut items = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in inner.chars() {
        match quote {
            Some(q) => {
                current.push(c);
                if c == q {
                    quote = None;
                }
            }
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                current.push(c);
            }
            None if c == ',' => {
                items.push(scalar(key, current.trim())?);
                current.clear();
            }
            None if c == '[' || c == ']' || c == '{' || c == '}' => {
                return Err(error(key, "a list item cannot be a list or a map"));
            }
            None => current.push(c),
        }
    }
    if quote.is_some() {
        return Err(error(key, "a quoted item is not closed"));
    }
    if !current.trim().is_empty() || !items.is_empty() {
        items.push(scalar(key, current.trim())?);
    }
    Ok(items)
}

/// A plain (comment stripped) or quoted value.
fn scalar(key: &str, value: &str) -> Result<String, FrontmatterError> {
    let unclosed = || error(key, "a quoted value is not closed");
    if let Some(rest) = value.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return after_quote(key, out, chars.as_str()),
                '\\' => match chars.next().ok_or_else(unclosed)? {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    other @ ('"' | '\\' | '/') => out.push(other),
                    other => {
                        return Err(error(
                            key,
                            format!("unknown escape \\{other} in a quoted value"),
                        ))
                    }
                },
                other => out.push(other),
            }
        }
        return Err(unclosed());
    }
    if let Some(rest) = value.strip_prefix('\'') {
        let mut out = String::new();
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\'' {
                if chars.peek() == Some(&'\'') {
                    chars.next();
                    out.push('\'');
                    continue;
                }
                let rest: String = chars.collect();
                return after_quote(key, out, &rest);
            }
            out.push(c);
        }
        return Err(unclosed());
    }
    Ok(strip_comment(value).trim().to_owned())
}

/// A quoted value may be followed only by a comment.
fn after_quote(key: &str, value: String, rest: &str) -> Result<String, FrontmatterError> {
    let rest = rest.trim();
    if rest.is_empty() || rest.starts_with('#') {
        Ok(value)
    } else {
        Err(error(
            key,
            format!("unexpected text after the quoted value: {rest}"),
        ))
    }
}

/// A plain value without its ` # comment`.
fn strip_comment(value: &str) -> &str {
    match value.find(" #") {
        Some(at) => &value[..at],
        None if value.starts_with('#') => "",
        None => value,
    }
}
