//! What a turn cost and what its context held: usage, context buckets, telemetry, side tasks.

use serde::{Deserialize, Serialize};

/// Tokens and cost of a call, or of a run so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: i64,
    /// Cached prompt tokens.
    pub cached_tokens: i64,
    /// Completion tokens.
    pub completion_tokens: i64,
    /// Reasoning tokens.
    pub reasoning_tokens: i64,
    /// All tokens.
    pub total_tokens: i64,
    /// Cost in USD.
    pub cost: f64,
}

/// One category of the context (`files`, `known`, `history`, …) in telemetry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    /// The category.
    pub bucket: String,
    /// Its tokens.
    #[serde(default)]
    pub tokens: i64,
    /// Its entries.
    #[serde(default)]
    pub entries: i64,
}

/// A turn's telemetry (a turn-end `run/state`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Telemetry {
    /// The model alias the turn used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Tokens of the assembled context.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<i64>,
    /// The call's usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The context by category.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_distribution: Option<Vec<Bucket>>,
    /// Whether the turn went on after a restart (its call was made before it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub resumed: bool,
    /// The side tasks the turn made (the sidecar's calls: summaries and the like), each with its
    /// usage and cost, or why it failed; left out when there were none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sidecar: Vec<SidecarCall>,
}

/// One side task a turn made (the sidecar's call), in the turn's telemetry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SidecarCall {
    /// The task (`summary`, `compress`, …).
    pub task: String,
    /// The model alias asked.
    pub model: String,
    /// `ok`, `failed`, `timeout` or `unparseable`.
    pub outcome: String,
    /// Why it failed; absent when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The provider's usage and cost (zero without an answer).
    pub usage: Usage,
    /// How long it took, in ms.
    pub elapsed_ms: i64,
}
