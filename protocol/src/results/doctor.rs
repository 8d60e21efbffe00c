//! What `server/doctor` found: its checks, the command sandbox, the providers and the model aliases.

use serde::{Deserialize, Serialize};

/// What `server/doctor` found: each check the server alone can make, with what to do when it
/// failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DoctorReport {
    /// The server's version.
    pub version: String,
    /// Whether the database took a write (a probe row rewritten and committed).
    pub database: Check,
    /// Each configured provider, asked for its models.
    #[serde(default)]
    pub providers: Vec<ProviderCheck>,
    /// Each model alias, and whether its context length is known.
    #[serde(default)]
    pub models: Vec<ModelCheck>,
    /// The command sandbox: what the server does with accepted commands, and each layer its
    /// probe at start-up found.
    #[serde(default)]
    pub sandbox: SandboxCheck,
}

/// What the server does with the commands it runs, and the layers of their sandbox.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxCheck {
    /// Confined, unconfined or refused.
    pub mode: SandboxMode,
    /// The missing required layers, each with its reason (empty when confined).
    #[serde(default)]
    pub missing: String,
    /// Every layer the probe looked at, in the order they are listed to people.
    #[serde(default)]
    pub layers: Vec<SandboxLayer>,
}

/// What the server does with an accepted `sh` or `env` command.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SandboxMode {
    /// Runs it in the sandbox: every required layer is there.
    Confined,
    /// Runs it unconfined: a required layer is missing and `RUMMY_UNSANDBOXED_COMMANDS=1`.
    Unconfined,
    /// Runs none itself (a client runner still may): a required layer is missing. Also what an
    /// older server that says nothing of its sandbox reads as.
    #[default]
    Refused,
}

/// One layer of the command sandbox as the server's probe found it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxLayer {
    /// Its name: `userNamespace`, `landlock`, `mountNamespace`, `pidNamespace`, `proc`,
    /// `network` or `limits`.
    pub name: String,
    /// Its name for people (`file system (Landlock)`).
    pub label: String,
    /// Whether the server runs no command itself without it (unless told to).
    pub required: bool,
    /// Whether it works, and what it is or why it is missing.
    #[serde(flatten)]
    pub check: Check,
}

/// One check: passed or not, and what it found or what to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Whether it passed.
    pub ok: bool,
    /// What was found, or what to do.
    pub detail: String,
}

/// A configured provider's answer to its models endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderCheck {
    /// The provider's name (`openai`, `ollama`, `openrouter`, `xai`).
    pub name: String,
    /// Its base URL, without credentials.
    pub base_url: String,
    /// Whether it answered, and how many models it listed or what to do.
    #[serde(flatten)]
    pub check: Check,
}

/// A model alias: where it goes and whether its context length is known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCheck {
    /// The alias.
    pub alias: String,
    /// `provider/model`.
    pub actual: String,
    /// The context length, stored or asked of the provider; `None` when unknown.
    #[serde(default)]
    pub context_length: Option<i64>,
    /// Whether the context length is known, and what to do if not.
    #[serde(flatten)]
    pub check: Check,
}
