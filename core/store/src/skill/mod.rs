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

mod block;

use block::{read_block, split};
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
