//! `run/state` and `getRun` as the server writes them: borrowed from the store's rows, so a push
//! copies no path, body or attributes on its way to text — the stored attributes go out as the
//! JSON text they are. Their fields are those of the protocol's `RunState` and `RunSnapshot`
//! (a test keeps them so); `turn::state` fills them.

use crate::fair::admission::Queued;
use crate::wire::bounded;
use rummy_protocol::results::{MissedNotification, Recall};
use rummy_protocol::ProposalKind;
use rummy_provider::routing::Routed;
use rummy_provider::Usage;
use rummy_store::entries::ViewRow;
use rummy_store::entry::http_status;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

/// One history item as clients see it (the protocol's `HistoryItem`), serialised straight from
/// the row.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryItem<'a> {
    path: &'a str,
    tool: &'a str,
    state: &'a str,
    outcome: Option<&'a str>,
    status: i32,
    visibility: &'a str,
    turn: i32,
    tokens: i32,
    /// The stored JSON as it is (it is only checked, not rebuilt).
    attributes: Attributes<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<&'a str>,
    /// The body's whole size in bytes, when `body` is not all of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    body_bytes: Option<usize>,
    /// `body` is the body's first bytes only (`getBody` reads the rest).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    body_truncated: bool,
    /// `body` is what was appended at `offset`, not the whole body.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    append: bool,
    /// With `append`: the byte offset the appended text starts at.
    #[serde(skip_serializing_if = "Option::is_none")]
    offset: Option<usize>,
    /// A pending proposal's hash (what an accept approves).
    #[serde(skip_serializing_if = "Option::is_none")]
    hash: Option<String>,
    /// A tool's proposal's kind, pending or not.
    #[serde(skip_serializing_if = "Option::is_none")]
    proposal: Option<ProposalKind>,
}

/// Stored attributes: the stored JSON text, or `{}` when the text is not JSON.
enum Attributes<'a> {
    Stored(&'a RawValue),
    Unreadable,
}

impl Serialize for Attributes<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Attributes::Stored(raw) => raw.serialize(s),
            Attributes::Unreadable => serde_json::Map::new().serialize(s),
        }
    }
}

impl<'a> HistoryItem<'a> {
    /// The row as a history item, with its body's first `inline` bytes at most.
    pub fn of(row: &'a ViewRow, inline: usize) -> Self {
        let attributes = serde_json::from_str::<&RawValue>(&row.attributes)
            .map_or(Attributes::Unreadable, Attributes::Stored);
        let body = bounded::inline(&row.body, inline);
        HistoryItem {
            path: &row.path,
            tool: row.tag(),
            state: row.state.as_str(),
            outcome: row.outcome.as_deref(),
            status: http_status(row.state, row.outcome.as_deref()),
            visibility: row.visibility.as_str(),
            turn: row.turn,
            tokens: row.tokens,
            attributes,
            body: Some(body.text),
            body_bytes: body.truncated_from,
            body_truncated: body.truncated_from.is_some(),
            append: false,
            offset: None,
            hash: row.proposal_hash(),
            proposal: row.proposal(),
        }
    }

    /// The row as what was appended to its body from byte `offset` (a channel's growth), when
    /// the whole body is within `inline` bytes and `offset` is a character's start in it;
    /// otherwise the row as [`HistoryItem::of`] sends it.
    pub fn appended(row: &'a ViewRow, offset: usize, inline: usize) -> Self {
        let mut item = HistoryItem::of(row, inline);
        if row.body.len() <= inline && row.body.is_char_boundary(offset) {
            item.body = Some(&row.body[offset..]);
            item.append = true;
            item.offset = Some(offset);
        }
        item
    }

    /// Sends the item without its body (`bodyTruncated`, `bodyBytes` the whole size): what a
    /// push too large for one message does with its largest bodies.
    pub fn without_body(&mut self, full: usize) {
        self.body = Some("");
        self.body_bytes = Some(full);
        self.body_truncated = true;
        self.append = false;
        self.offset = None;
    }
}

/// An open question as clients see it (the protocol's `Unknown`).
#[derive(Serialize)]
pub struct UnknownItem<'a> {
    path: &'a str,
    body: &'a str,
    shared: bool,
}

impl<'a> UnknownItem<'a> {
    /// The `unknown://` row as an open question.
    pub fn of(row: &'a ViewRow) -> Self {
        UnknownItem {
            path: &row.path,
            body: &row.body,
            shared: rummy_store::shared::is_shared_text(&row.attributes),
        }
    }
}

/// A `run/state` push (the protocol's `RunState`); `seq` is added when it is recorded.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatePush<'a> {
    /// The run's alias.
    pub run: &'a str,
    /// The turn.
    pub turn: i32,
    /// The run's status.
    pub status: i32,
    /// The latest status report.
    pub summary: &'a str,
    /// The entries changed since the previous push.
    pub history: Vec<HistoryItem<'a>>,
    /// The open questions.
    pub unknowns: Vec<UnknownItem<'a>>,
    /// The turn's telemetry at its end; `null` mid-turn.
    pub telemetry: &'a Value,
    /// The current loop's routing decision.
    pub route: Option<Routed>,
    /// Why the last loop ended; `null` while one is under way.
    pub stop_reason: Option<&'a str>,
    /// Left out unless a loop waits: every push carries it otherwise, and clients parse each.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queued: Option<Queued>,
    /// How many changed entries did not fit the message and were left out (a client reads the
    /// run again with `getRun`); left out when none was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_omitted: Option<usize>,
}

/// `getRun`'s answer (the protocol's `RunSnapshot`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot<'a> {
    /// The run's alias.
    pub run: &'a str,
    /// Its status.
    pub status: i32,
    /// Why its last loop ended; `null` while one is under way.
    pub stop_reason: Option<&'a str>,
    /// Why a loop waits; `null` when none does.
    pub queued: Option<Queued>,
    /// Its mode.
    pub mode: &'a str,
    /// Its last turn.
    pub turn: i32,
    /// Its model alias.
    pub model: &'a str,
    /// The current loop's routing decision.
    pub route: Option<Routed>,
    /// Its temperature.
    pub temperature: Option<f64>,
    /// Its persona.
    pub persona: Option<&'a str>,
    /// Its context limit.
    pub context_limit: Option<i32>,
    /// The latest status report.
    pub summary: &'a str,
    /// Every history entry, or the page asked for.
    pub history: Vec<HistoryItem<'a>>,
    /// With a page: how many history entries the run has; left out without.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_total: Option<usize>,
    /// The open questions.
    pub unknowns: Vec<UnknownItem<'a>>,
    /// What the current loop recalled, and why.
    pub recall: Option<Recall>,
    /// Tokens and cost of the whole run.
    pub telemetry: Usage,
    /// The seq of its last push.
    pub last_seq: i32,
    /// When it was created (RFC 3339).
    pub created: String,
    /// With `sinceSeq`: the pushes after it; left out without.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missed: Option<Vec<MissedNotification>>,
    /// With `sinceSeq`: `true` when more pushes followed than fit the answer (ask again from
    /// the last one replayed); left out otherwise.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub missed_more: bool,
}
