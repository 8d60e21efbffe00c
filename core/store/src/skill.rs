//! Skill files (`$RUMMY_HOME/skills/<name>.md`): the frontmatter that may open one, parsed and
//! checked, and what a run's active skills decide together.
//!
//! The frontmatter is a YAML-style block between two `---` lines:
//!
//! ```text
//! ---
//! description: Reviews Rust changes
//! whenToUse: when the user asks for a review
//! allowedTools: [get, env, think, update]
//! paths:
//!   - src/**/*.rs
//!   - Cargo.toml
//! memoryScope: relevant
//! ---
//! The instructions the model reads.
//! ```
//!
//! Only that much YAML is read — `key: value` lines, quoted (`"…"`, `'…'`) or plain values,
//! `|`/`>` block text, lists as `[a, b]`, as `- item` lines, or (for `allowedTools` and `paths`,
//! as other agents write them) comma-separated text — because the five fields need no more, and
//! a full YAML reader brings its surprises (`no` read as false, anchors, tags) for nothing.
//! Every key is checked: an unknown one, a duplicate, a value of the wrong shape or out of range
//! is refused with an error naming the field. `allowed-tools`, `when-to-use` and `memory-scope`
//! (and their snake_case forms) are read as the camelCase fields.
//!
//! A skill is *active* while it is in the run's view and not archived: exactly while the model
//! reads it. Each active skill with `allowedTools` narrows the tools the loop is offered (and
//! dispatch accepts) to those it lists; `update` and `think` stay, since a loop cannot end
//! without `update`. The run's memory scope is the narrowest `memoryScope` of its active skills
//! ([`memory_scope`]; [`MemoryScope::Session`], everything, when none sets one).

use rummy_text::parse::ToolName;
use serde_json::{json, Map, Value};
use std::fmt;

/// The frontmatter fields, as they are stored and shown (camelCase).
pub const FIELDS: &[&str] = &[
    "name",
    "description",
    "whenToUse",
    "allowedTools",
    "paths",
    "memoryScope",
];

/// Longest `description` or `whenToUse`, in characters.
pub const MAX_TEXT_CHARS: usize = 1024;
/// Most `paths` a skill may list.
pub const MAX_PATHS: usize = 64;
/// Longest path pattern, in characters.
pub const MAX_PATH_CHARS: usize = 512;

/// How much of the run's memory the model gets while a skill is active (`memoryScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MemoryScope {
    /// No recall and no session state.
    None,
    /// Recall only.
    Relevant,
    /// Recall and session state: everything the server is configured for.
    Session,
}

impl MemoryScope {
    /// Every scope, narrowest first.
    pub const ALL: [MemoryScope; 3] = [
        MemoryScope::None,
        MemoryScope::Relevant,
        MemoryScope::Session,
    ];

    /// Its name in frontmatter and on the wire (`none`, `relevant`, `session`).
    pub fn name(self) -> &'static str {
        match self {
            MemoryScope::None => "none",
            MemoryScope::Relevant => "relevant",
            MemoryScope::Session => "session",
        }
    }

    /// The scope of that name.
    pub fn parse(name: &str) -> Option<MemoryScope> {
        MemoryScope::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether recall may run (`relevant` or `session`).
    pub fn allows_recall(self) -> bool {
        self != MemoryScope::None
    }

    /// Whether session state is kept and shown (`session` only).
    pub fn allows_session_state(self) -> bool {
        self == MemoryScope::Session
    }
}

/// What a skill's frontmatter says; every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillMeta {
    /// What the skill is for.
    pub description: Option<String>,
    /// When to add it.
    pub when_to_use: Option<String>,
    /// The only tools the loop is offered while it is active (besides `update` and `think`);
    /// `None`: no restriction.
    pub allowed_tools: Option<Vec<String>>,
    /// Project files (paths or globs) made visible when it is added.
    pub paths: Vec<String>,
    /// The memory the model gets while it is active; `None`: no restriction.
    pub memory_scope: Option<MemoryScope>,
}

impl SkillMeta {
    /// The skill entry's attributes: its name and the fields it sets (camelCase).
    pub fn to_attributes(&self, name: &str) -> Value {
        let mut map = Map::new();
        map.insert("name".into(), json!(name));
        if let Some(d) = &self.description {
            map.insert("description".into(), json!(d));
        }
        if let Some(w) = &self.when_to_use {
            map.insert("whenToUse".into(), json!(w));
        }
        if let Some(tools) = &self.allowed_tools {
            map.insert("allowedTools".into(), json!(tools));
        }
        if !self.paths.is_empty() {
            map.insert("paths".into(), json!(self.paths));
        }
        if let Some(scope) = self.memory_scope {
            map.insert("memoryScope".into(), json!(scope.name()));
        }
        Value::Object(map)
    }

    /// The fields a skill entry's attributes hold (what [`SkillMeta::to_attributes`] wrote;
    /// anything unreadable is left out).
    pub fn from_attributes(attributes: &Value) -> SkillMeta {
        let text = |key: &str| {
            attributes
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let list = |key: &str| {
            attributes.get(key).and_then(Value::as_array).map(|items| {
                items
                    .iter()
                    .filter_map(|i| i.as_str().map(str::to_owned))
                    .collect::<Vec<String>>()
            })
        };
        SkillMeta {
            description: text("description"),
            when_to_use: text("whenToUse"),
            allowed_tools: list("allowedTools"),
            paths: list("paths").unwrap_or_default(),
            memory_scope: text("memoryScope").as_deref().and_then(MemoryScope::parse),
        }
    }
}

/// A skill file read: its frontmatter and the text the model reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// The frontmatter.
    pub meta: SkillMeta,
    /// The text after the frontmatter (the whole file when it has none).
    pub body: String,
}

/// Invalid frontmatter: the field at fault (as the file spells it) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontmatterError {
    /// The field, or `frontmatter` for the block itself.
    pub field: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for FrontmatterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid frontmatter field {}: {}",
            self.field, self.reason
        )
    }
}

impl std::error::Error for FrontmatterError {}

fn error(field: &str, reason: impl Into<String>) -> FrontmatterError {
    FrontmatterError {
        field: field.to_owned(),
        reason: reason.into(),
    }
}

/// A value as written: text, or a list of texts.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Raw {
    Text(String),
    List(Vec<String>),
}

/// Reads skill `name`'s file: its frontmatter, checked (`tools` are the tool names
/// `allowedTools` may list), and its body.
pub fn parse(name: &str, text: &str, tools: &[ToolName]) -> Result<Skill, FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some((block, body)) = split(text)? else {
        return Ok(Skill {
            meta: SkillMeta::default(),
            body: text.to_owned(),
        });
    };
    let mut meta = SkillMeta::default();
    let mut seen: Vec<&str> = Vec::new();
    for (key, raw) in read_block(&block)? {
        let field = canonical(&key).ok_or_else(|| {
            error(
                &key,
                format!("unknown field (the fields are {})", FIELDS.join(", ")),
            )
        })?;
        if seen.contains(&field) {
            return Err(error(&key, "given twice"));
        }
        seen.push(field);
        match field {
            "name" => {
                let given = text_of(&key, raw)?;
                if given != name {
                    return Err(error(
                        &key,
                        format!("\"{given}\" is not this skill's name \"{name}\" (its file name without .md)"),
                    ));
                }
            }
            "description" => meta.description = Some(bounded_text(&key, raw)?),
            "whenToUse" => meta.when_to_use = Some(bounded_text(&key, raw)?),
            "allowedTools" => meta.allowed_tools = Some(tool_list(&key, raw, tools)?),
            "paths" => meta.paths = path_list(&key, raw)?,
            _ => {
                let given = text_of(&key, raw)?;
                let scope = MemoryScope::parse(&given).ok_or_else(|| {
                    error(
                        &key,
                        format!("\"{given}\" is not a memory scope (none, relevant or session)"),
                    )
                })?;
                meta.memory_scope = Some(scope);
            }
        }
    }
    Ok(Skill {
        meta,
        body: body.to_owned(),
    })
}

/// The frontmatter block's lines and the body after it; `None` when the file opens with no
/// `---` line.
fn split(text: &str) -> Result<Option<(Vec<&str>, &str)>, FrontmatterError> {
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
fn read_block(lines: &[&str]) -> Result<Vec<(String, Raw)>, FrontmatterError> {
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

/// The camelCase field a key means, if it is one.
fn canonical(key: &str) -> Option<&'static str> {
    match key {
        "name" => Some("name"),
        "description" => Some("description"),
        "whenToUse" | "when-to-use" | "when_to_use" => Some("whenToUse"),
        "allowedTools" | "allowed-tools" | "allowed_tools" => Some("allowedTools"),
        "paths" => Some("paths"),
        "memoryScope" | "memory-scope" | "memory_scope" => Some("memoryScope"),
        _ => None,
    }
}

fn text_of(key: &str, raw: Raw) -> Result<String, FrontmatterError> {
    match raw {
        Raw::Text(text) if !text.is_empty() => Ok(text),
        Raw::Text(_) => Err(error(key, "is empty")),
        Raw::List(_) => Err(error(key, "expected text, not a list")),
    }
}

fn bounded_text(key: &str, raw: Raw) -> Result<String, FrontmatterError> {
    let text = text_of(key, raw)?;
    let chars = text.chars().count();
    if chars > MAX_TEXT_CHARS {
        return Err(error(
            key,
            format!("{chars} characters, more than the {MAX_TEXT_CHARS} allowed"),
        ));
    }
    Ok(text)
}

/// A list (`[]` is an empty one), or text read as a comma-separated list; no value at all is
/// refused, since it could mean either nothing or everything.
fn list_of(key: &str, raw: Raw) -> Result<Vec<String>, FrontmatterError> {
    let items = match raw {
        Raw::List(items) => items,
        Raw::Text(text) if text.trim().is_empty() => {
            return Err(error(
                key,
                "is empty: list the items, or leave the field out",
            ))
        }
        Raw::Text(text) => text.split(',').map(|s| s.trim().to_owned()).collect(),
    };
    if items.iter().any(String::is_empty) {
        return Err(error(key, "holds an empty item"));
    }
    Ok(items)
}

fn tool_list(key: &str, raw: Raw, tools: &[ToolName]) -> Result<Vec<String>, FrontmatterError> {
    let mut listed: Vec<String> = Vec::new();
    for tool in list_of(key, raw)? {
        if !tools.iter().any(|t| t.as_str() == tool) {
            let names: Vec<&str> = tools.iter().map(|t| t.as_str()).collect();
            return Err(error(
                key,
                format!(
                    "\"{tool}\" is not a tool (the tools are {})",
                    names.join(", ")
                ),
            ));
        }
        if !listed.contains(&tool) {
            listed.push(tool);
        }
    }
    Ok(listed)
}

fn path_list(key: &str, raw: Raw) -> Result<Vec<String>, FrontmatterError> {
    let paths = list_of(key, raw)?;
    if paths.len() > MAX_PATHS {
        return Err(error(
            key,
            format!("{} paths, more than the {MAX_PATHS} allowed", paths.len()),
        ));
    }
    for path in &paths {
        let bad = if path.chars().count() > MAX_PATH_CHARS {
            Some(format!("longer than {MAX_PATH_CHARS} characters"))
        } else if path.starts_with('/') || path.starts_with('~') {
            Some("must be relative to the project's root".to_owned())
        } else if path.split('/').any(|segment| segment == "..") {
            Some("must not leave the project (..)".to_owned())
        } else if path.chars().any(char::is_control) {
            Some("holds a control character".to_owned())
        } else {
            None
        };
        if let Some(why) = bad {
            return Err(error(key, format!("\"{path}\" {why}")));
        }
    }
    Ok(paths)
}

/// The narrowest `memoryScope` among active skills' attributes; [`MemoryScope::Session`]
/// (nothing withheld) when none sets one.
pub fn memory_scope<'a>(skills: impl IntoIterator<Item = &'a Value>) -> MemoryScope {
    skills
        .into_iter()
        .filter_map(|a| a.get("memoryScope").and_then(Value::as_str))
        .filter_map(MemoryScope::parse)
        .min()
        .unwrap_or(MemoryScope::Session)
}

/// The tools active skills' attributes leave the loop: those every restricting skill lists
/// (its `allowedTools`); `None` when no skill restricts them.
pub fn allowed_tools<'a>(skills: impl IntoIterator<Item = &'a Value>) -> Option<Vec<String>> {
    let mut allowed: Option<Vec<String>> = None;
    for listed in skills
        .into_iter()
        .filter_map(|a| a.get("allowedTools").and_then(Value::as_array))
    {
        let names: Vec<String> = listed
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect();
        allowed = Some(match allowed {
            None => names,
            Some(before) => before.into_iter().filter(|t| names.contains(t)).collect(),
        });
    }
    allowed
}

#[cfg(test)]
mod tests;
