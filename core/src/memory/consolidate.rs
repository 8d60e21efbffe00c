//! Consolidation at a loop's end (`RUMMY_CONSOLIDATE`, off by default; a run's `consolidate` attribute): the sidecar reads the run's facts (and its session state, when it keeps one) beside the project's related memories, and proposes memories to add, update or remove — applied at once, each an ordinary memory write (a changed one superseded, a removed one archived: the old version is always kept).
//!
//! Removal: a memory that only held a task's transient
//! state (what was being done, not what is true of the project) leaves recall, its text kept
//! archived with who removed it and why.
//!
//! "Proposes" is the model's part only: nothing waits for a person (a proposal in rummy is
//! always a person's approval). An answer that is not the JSON asked for changes nothing; a
//! memory over the size gate or at a path that is no `memory://` is left out, the others are
//! written.

use super::terms::query_terms;
use crate::sidecar::SideTask;
use crate::tools::strip_rationale;
use rummy_store::db::Db;
use rummy_store::entries::{self, RunRef, WriteCtx};
use rummy_store::entry::Writer;
use rummy_store::memory::{self as store, Forgotten, MemoryWrite, Provenance, Remembered};
use rummy_store::{runs, StoreError};
use rummy_text::path::{normalize, scheme_of};
use rummy_text::token_estimate;
use serde::Deserialize;
use std::sync::LazyLock;

/// Most of the run's facts the sidecar reads (the newest).
pub const MAX_FACTS: i64 = 40;

/// Most related memories the sidecar is shown.
pub const MAX_MEMORIES: usize = 20;

/// Characters of a fact, a memory or the session state the sidecar reads.
pub const TEXT_CHARS: usize = 1_500;

/// The most tokens a consolidation's answer takes.
pub const MAX_TOKENS: u32 = 1_024;

static SYSTEM: LazyLock<String> = LazyLock::new(|| strip_rationale(include_str!("consolidate.md")));

/// What the sidecar reads: the loop's prompt, the run's facts and session state, and the
/// project's memories that share their words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// The loop's prompt.
    pub prompt: String,
    /// The run's `known://` facts, newest first: (path, body).
    pub facts: Vec<(String, String)>,
    /// The run's `session://state`, if it keeps one.
    pub session: Option<String>,
    /// Related memories: (path, body).
    pub memories: Vec<(String, String)>,
}

/// What the sidecar reads for run `run` whose loop was asked `prompt`; `None` when the run has
/// neither facts nor a session state (nothing to consolidate, no call).
pub fn gather(conn: &mut Db, run: RunRef, prompt: &str) -> Result<Option<Input>, StoreError> {
    let facts = store::run_facts(conn, run.run_id, MAX_FACTS)?;
    let session =
        entries::by_path(conn, run.run_id, crate::session_state::PATH)?.map(|row| row.body);
    if facts.is_empty() && session.is_none() {
        return Ok(None);
    }
    let mut words = facts
        .iter()
        .map(|(path, body)| format!("{path} {body}"))
        .collect::<Vec<_>>()
        .join(" ");
    words.push(' ');
    words.push_str(session.as_deref().unwrap_or_default());
    let terms = query_terms(&words);
    let query = store::RecallQuery {
        terms: &terms,
        project_id: run.project_id,
        except_run: Some(run.run_id),
    };
    let scored = store::recall_matches(conn, &query, 200)?;
    let ids: Vec<i32> = scored.iter().map(|s| s.id).collect();
    let mut rows = store::candidate_rows(conn, &ids)?;
    rows.retain(|r| r.scheme.as_deref() == Some("memory"));
    rows.sort_by_key(|r| ids.iter().position(|id| *id == r.id));
    let memories = rows
        .into_iter()
        .take(MAX_MEMORIES)
        .map(|r| (r.path, r.body))
        .collect();
    Ok(Some(Input {
        prompt: prompt.to_owned(),
        facts,
        session,
        memories,
    }))
}

fn cut(text: &str) -> String {
    text.chars().take(TEXT_CHARS).collect()
}

/// The side task that consolidates `input`.
pub fn task(input: &Input) -> SideTask<Vec<Proposal>> {
    let mut text = format!(
        "The task the run finished:\n{}\n\nIts facts:",
        input.prompt.trim()
    );
    for (path, body) in &input.facts {
        text.push_str(&format!("\n- {path}: {}", cut(body)));
    }
    if let Some(session) = &input.session {
        text.push_str(&format!("\n\nIts session state:\n{}", cut(session)));
    }
    text.push_str("\n\nRelated memories of the project:");
    if input.memories.is_empty() {
        text.push_str("\n(none)");
    }
    for (path, body) in &input.memories {
        text.push_str(&format!("\n- {path}: {}", cut(body)));
    }
    SideTask::new("consolidate", SYSTEM.as_str(), text, read).with_max_tokens(MAX_TOKENS)
}

/// One memory the sidecar proposes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Proposal {
    /// `add`, `update` or `remove`.
    pub action: Action,
    /// Its `memory://` path.
    pub path: String,
    /// Its whole content (none for `remove`).
    #[serde(default)]
    pub content: String,
    /// Why a memory is removed.
    #[serde(default)]
    pub reason: Option<String>,
    /// Its keywords.
    #[serde(default)]
    pub summary: Option<String>,
}

/// Whether a proposal adds a memory, updates (supersedes) one or removes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// A new memory.
    Add,
    /// A new version of a memory.
    Update,
    /// The memory only held transient state: archived, and gone from recall.
    Remove,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    memories: Vec<Proposal>,
}

/// Reads the sidecar's answer: the JSON object in it (code fences and words around it are
/// tolerated) with its `memories`.
pub fn read(text: &str) -> Result<Vec<Proposal>, String> {
    let start = text.find('{').ok_or("no JSON object in the answer")?;
    let end = text.rfind('}').ok_or("an unclosed JSON object")?;
    if end < start {
        return Err("no JSON object in the answer".into());
    }
    serde_json::from_str::<Answer>(&text[start..=end])
        .map(|a| a.memories)
        .map_err(|e| format!("not the memories asked for: {e}"))
}

/// What one proposal did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// Written (added, superseded or unchanged) at the path.
    Written(String, Remembered),
    /// Removed from the path, its last version archived at the second path.
    Removed(String, String),
    /// Left out, and why.
    Skipped(String, String),
}

/// Writes the proposals as memories of `run`'s project, by the server on the run's behalf
/// (provenance: the run, its last turn, its user, writer `plugin`).
pub fn apply(
    conn: &mut Db,
    run: RunRef,
    proposals: &[Proposal],
    max_entry_tokens: u32,
    at: WriteCtx,
) -> Result<Vec<Applied>, StoreError> {
    let stored = runs::by_id(conn, run.run_id)?;
    let provenance = Provenance {
        run: &stored.alias,
        turn: stored.last_turn().max(0),
        user: stored.user.as_deref(),
        writer: Writer::Plugin,
    };
    let max = i32::try_from(max_entry_tokens).unwrap_or(i32::MAX);
    let mut applied = Vec::new();
    for p in proposals {
        let path = match normalize(&p.path) {
            Ok(path) if scheme_of(&path).as_deref() == Some("memory") => path,
            _ => {
                applied.push(Applied::Skipped(
                    p.path.clone(),
                    "not a memory:// path".into(),
                ));
                continue;
            }
        };
        if p.action == Action::Remove {
            let reason = p.reason.as_deref().map(str::trim).filter(|r| !r.is_empty());
            applied.push(
                match store::forget(conn, run.project_id, &path, provenance, reason, at)? {
                    Forgotten::Removed { archived } => Applied::Removed(path, archived),
                    Forgotten::Absent => Applied::Skipped(path, "no such memory".into()),
                },
            );
            continue;
        }
        let content = p.content.trim();
        let size = token_estimate::estimate(content, at.divisor);
        if content.is_empty() || size > max {
            applied.push(Applied::Skipped(path, format!("{size} tokens (max {max})")));
            continue;
        }
        let w = MemoryWrite {
            project_id: run.project_id,
            path: &path,
            body: content,
            summary: p
                .summary
                .as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty()),
            provenance,
        };
        let remembered = store::remember(conn, &w, at)?;
        applied.push(Applied::Written(path, remembered));
    }
    Ok(applied)
}

#[cfg(test)]
mod tests;
