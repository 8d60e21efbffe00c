//! A run's entries: `getEntries`, `getBody`'s slices and `getConstraints`.

use super::failure;
use crate::values::{FailureKind, ProposalKind, State, Visibility};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `getBody`'s answer: a slice of an entry's body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BodySlice {
    /// The entry's path.
    pub path: String,
    /// Where the slice starts, in bytes of the body's UTF-8 text.
    pub offset: i64,
    /// The slice (never a cut character).
    pub body: String,
    /// The body's whole size in bytes.
    pub body_bytes: i64,
    /// Where the next slice starts; `null` when this one reaches the end.
    #[serde(default)]
    pub next: Option<i64>,
}

/// One entry of `getEntries`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Its path.
    pub path: String,
    /// Its scheme (`null` for project files).
    #[serde(default)]
    pub scheme: Option<String>,
    /// Its state.
    pub state: State,
    /// Why it failed (see [`Entry::failure`]) or was cancelled.
    #[serde(default)]
    pub outcome: Option<String>,
    /// Its HTTP status.
    #[serde(default)]
    pub status: i64,
    /// Its visibility.
    #[serde(default)]
    pub visibility: Visibility,
    /// The turn that wrote it.
    #[serde(default)]
    pub turn: i64,
    /// What it costs in the context.
    #[serde(default)]
    pub tokens: i64,
    /// Its attributes.
    #[serde(default)]
    pub attributes: Map<String, Value>,
    /// Its body (with `withBody`; left out without): its first `RUMMY_INLINE_BODY_BYTES` when
    /// `body_truncated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The body's whole size in bytes, when `body` is not all of it.
    #[serde(default, rename = "bodyBytes", skip_serializing_if = "Option::is_none")]
    pub body_bytes: Option<i64>,
    /// `body` is the body's first bytes only: `getBody` reads the rest.
    #[serde(
        default,
        rename = "bodyTruncated",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub body_truncated: bool,
    /// While it is a pending proposal: the hash of what it does, which an accept sends as
    /// `approves` (see `run/proposal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// When it is (or was) a tool's proposal: its kind. Left out for every other entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<ProposalKind>,
}

impl Entry {
    /// When this entry is (or was) a tool's proposal, its kind: the `proposal` field, or from a
    /// server that does not send it, what its attributes say ([`ProposalKind::of`]).
    pub fn proposal(&self) -> Option<ProposalKind> {
        self.proposal.or_else(|| ProposalKind::of(&self.attributes))
    }

    /// Why it failed, when it did.
    pub fn failure(&self) -> Option<FailureKind> {
        failure(self.state, self.outcome.as_deref())
    }
}

/// One file constraint of `getConstraints`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Constraint {
    /// Path or glob.
    pub pattern: String,
    /// `active`, `readonly` or `ignore`.
    pub visibility: String,
}
