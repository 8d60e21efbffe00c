//! Skills and personas: a run's skills (`getSkills`) and the files of the server's home
//! (`listSkills`, `listPersonas`).

use crate::values::State;
use serde::{Deserialize, Serialize};

/// One skill of a run (`getSkills`), with its frontmatter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSkill {
    /// Its name.
    pub name: String,
    /// Its entry's state.
    pub state: State,
    /// Whether it is active: in the run's view and not archived (what the model reads).
    #[serde(default)]
    pub active: bool,
    /// What it is for.
    #[serde(default)]
    pub description: Option<String>,
    /// When to add it.
    #[serde(default)]
    pub when_to_use: Option<String>,
    /// The only tools the run is offered while it is active (besides `update` and `think`);
    /// `None`: no restriction.
    #[serde(default)]
    pub allowed_tools: Option<Vec<String>>,
    /// The project files (paths or globs) made visible when it was added.
    #[serde(default)]
    pub paths: Vec<String>,
    /// `none`, `relevant` or `session`; `None`: no restriction.
    #[serde(default)]
    pub memory_scope: Option<String>,
}

/// A skill file in the server's home (`listSkills`), with what its frontmatter says of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillFile {
    /// Its name.
    pub name: String,
    /// Its file.
    pub path: String,
    /// What it is for.
    #[serde(default)]
    pub description: Option<String>,
    /// When to add it.
    #[serde(default)]
    pub when_to_use: Option<String>,
    /// Why `skill/add` would refuse it (its frontmatter is invalid), if it would.
    #[serde(default)]
    pub error: Option<String>,
}

/// A skill or persona file in the server's home (`listSkills`, `listPersonas`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedFile {
    /// Its name.
    pub name: String,
    /// Its file.
    pub path: String,
}
