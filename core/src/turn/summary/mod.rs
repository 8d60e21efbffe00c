//! Summarisation on eviction (docs/design/memory.md): before the budget takes logging entries out of the model's view, the sidecar folds them into the run's rolling `summary://run`, shown inside the system message.
//!
//! Opt-in per run (`attributes: {summarize: true}`; the server's default is `RUMMY_SUMMARIZE`).
//! The fold has the signature `(prior summary, evicted entries)`:
//! - `(none, evicted)` → a first summary ([`Fold::First`]);
//! - `(prior, evicted)` → the summary extended ([`Fold::Extend`]);
//! - `(prior, none)` → the summary compressed, when it passed `RUMMY_SUMMARY_MAX_CHARS`
//!   ([`Fold::Compress`]; lossy by design);
//!
//! and a failed fold leaves the summary as it was: the entries are demoted plainly ([`next`]).
//! The summary is one entry, rewritten; each earlier text is kept as an archived
//! `summary://run/<n>` ([`store`]). It renders first in `<previous>` (`turn::assemble`), never
//! as a message of its own, and counts against the budget like everything assembled: History
//! Demotion plans room for it to grow to the cap, and drops it when even that cannot fit
//! ([`plan_history`], [`leave_context`]).

use super::budget::{plan_demotion, Demotion};
use super::TurnRef;
use crate::sidecar::{SideTask, SidecarFailure};
use crate::tools::strip_rationale;
use rummy_store::db::Db;
use rummy_store::entries::WriteCtx;
use rummy_store::entries::{self as store_entries, EntryWrite, ViewRow};
use rummy_store::entry::Visibility;
use rummy_store::ids::RunId;
use rummy_store::StoreError;
use serde_json::{json, Value};
use std::sync::LazyLock;

/// The scheme of the run's summary and its archived earlier texts.
pub const SCHEME: &str = "summary";

/// The run's rolling summary.
pub const PATH: &str = "summary://run";

/// Characters of one evicted entry's body the sidecar reads (a longer one is cut, marked).
pub const ENTRY_CHARS: usize = 4_000;

/// Characters of evicted entries the sidecar reads in one fold (later entries are left out,
/// counted): bounds what one side task costs.
pub const EVICTED_CHARS: usize = 48_000;

/// Characters the summary's element and, when it is alone there, the `<previous>` section add
/// around its text in the system message (an upper bound).
pub const TAG_CHARS: usize = 128;

/// Whether a context row is the run's summary (`summary://run` itself: an earlier text the
/// model promoted back into view is an ordinary logging entry, demoted like the others).
pub fn is_summary(row: &ViewRow) -> bool {
    row.scheme.as_deref() == Some(SCHEME) && row.path == PATH
}

/// Tokens to keep free for a summary of at most `max_chars` (its element included).
pub fn reserve(max_chars: usize, divisor: u32) -> i32 {
    let chars = u64::try_from(max_chars + TAG_CHARS).unwrap_or(u64::MAX);
    i32::try_from(chars.div_ceil(u64::from(divisor.max(1)))).unwrap_or(i32::MAX)
}

/// One question to the sidecar about the summary, by the `(prior, evicted)` signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fold {
    /// `(none, evicted)`: the run's first summary.
    First {
        /// The evicted entries, rendered ([`render_evicted`]).
        evicted: String,
    },
    /// `(prior, evicted)`: the summary extended with what the entries add.
    Extend {
        /// The summary so far.
        prior: String,
        /// The evicted entries, rendered.
        evicted: String,
    },
    /// `(prior, none)`: the summary, grown past the cap, compressed.
    Compress {
        /// The summary to compress.
        prior: String,
    },
}

/// The three prompts, their rationale stripped once.
static PROMPTS: LazyLock<[String; 3]> = LazyLock::new(|| {
    [
        include_str!("first.md"),
        include_str!("extend.md"),
        include_str!("compress.md"),
    ]
    .map(strip_rationale)
});

impl Fold {
    /// The fold for a prior summary (if any) and evicted entries (if any): `None` when there is
    /// nothing to fold.
    pub fn of(prior: Option<&str>, evicted: Option<&str>) -> Option<Fold> {
        let prior = prior.map(str::trim).filter(|p| !p.is_empty());
        let evicted = evicted.map(str::trim).filter(|e| !e.is_empty());
        match (prior, evicted) {
            (None, Some(evicted)) => Some(Fold::First {
                evicted: evicted.to_owned(),
            }),
            (Some(prior), Some(evicted)) => Some(Fold::Extend {
                prior: prior.to_owned(),
                evicted: evicted.to_owned(),
            }),
            (Some(prior), None) => Some(Fold::Compress {
                prior: prior.to_owned(),
            }),
            (None, None) => None,
        }
    }

    /// The task's name in telemetry.
    pub fn name(&self) -> &'static str {
        match self {
            Fold::First { .. } => "summary",
            Fold::Extend { .. } => "summary.extend",
            Fold::Compress { .. } => "summary.compress",
        }
    }

    /// The side task that answers this fold with a summary of at most `max_chars` (asked for;
    /// [`next`] enforces it).
    pub fn task(&self, max_chars: usize) -> SideTask<String> {
        let (prompt, prior, evicted) = match self {
            Fold::First { evicted } => (&PROMPTS[0], "", evicted.as_str()),
            Fold::Extend { prior, evicted } => (&PROMPTS[1], prior.as_str(), evicted.as_str()),
            Fold::Compress { prior } => (&PROMPTS[2], prior.as_str(), ""),
        };
        let (system, input) = prompt.split_once("[%INPUT%]").unwrap_or((prompt, ""));
        let system = system.trim().replace("[%MAX%]", &max_chars.to_string());
        let input = fill(
            input.trim(),
            &[("[%PRIOR%]", prior), ("[%EVICTED%]", evicted)],
        );
        SideTask::new(self.name(), system, input, parse)
    }
}

/// `template` with each placeholder replaced by its text, in one pass: nothing in the texts
/// (a summary, an entry's body) is ever read as a placeholder.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out =
        String::with_capacity(template.len() + values.iter().map(|v| v.1.len()).sum::<usize>());
    let mut rest = template;
    loop {
        let found = values
            .iter()
            .filter_map(|(key, value)| rest.find(key).map(|at| (at, *key, *value)))
            .min_by_key(|(at, _, _)| *at);
        let Some((at, key, value)) = found else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..at]);
        out.push_str(value);
        rest = &rest[at + key.len()..];
    }
}

/// What follows a fold's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Ask the sidecar this fold next (a summary past the cap is compressed).
    Ask(Fold),
    /// The new summary, at most the cap.
    Done(String),
    /// No new summary: the entries are demoted plainly and the summary stays as it was.
    Fallback,
}

/// The update flow after `fold` was answered with `answer`: a first or extended summary
/// within `max_chars` is the new summary; past it, it is compressed (once); a compression is
/// the new summary, cut to the cap if it is still longer, and if the compression failed the
/// summary it was given is cut instead (it was already a valid summary). A failed first or
/// extended summary falls back to plain demotion.
pub fn next(fold: Fold, answer: Result<String, SidecarFailure>, max_chars: usize) -> Step {
    match (fold, answer) {
        (Fold::Compress { prior }, answer) => Step::Done(cap(&answer.unwrap_or(prior), max_chars)),
        (_, Err(_)) => Step::Fallback,
        (_, Ok(text)) if text.chars().count() > max_chars => {
            Step::Ask(Fold::Compress { prior: text })
        }
        (_, Ok(text)) => Step::Done(text),
    }
}

/// `text` cut to at most `max_chars` characters: the start goes (the oldest history), marked
/// with `…`.
pub fn cap(text: &str, max_chars: usize) -> String {
    let count = text.chars().count();
    if count <= max_chars {
        return text.to_owned();
    }
    let keep = max_chars.saturating_sub(1);
    let tail: String = text.chars().skip(count - keep).collect();
    format!("…{tail}")
}

/// Reads the sidecar's answer as a summary: the text without a wrapping code fence or
/// `<summary>` element and without `<think>` blocks; an empty answer is refused.
pub fn parse(text: &str) -> Result<String, String> {
    let mut text = text.to_owned();
    while let Some(start) = text.find("<think>") {
        match text[start..].find("</think>") {
            Some(end) => text.replace_range(start..start + end + "</think>".len(), ""),
            None => text.truncate(start),
        }
    }
    let mut text = text.trim();
    if let Some(inner) = text.strip_prefix("```") {
        let inner = inner.split_once('\n').map_or("", |(_, rest)| rest);
        text = inner.trim_end().strip_suffix("```").unwrap_or(inner).trim();
    }
    if let Some(inner) = text
        .strip_prefix("<summary>")
        .and_then(|t| t.strip_suffix("</summary>"))
    {
        text = inner.trim();
    }
    if text.is_empty() {
        return Err("the summary is empty".into());
    }
    Ok(text.to_owned())
}

/// The evicted entries as the sidecar reads them, oldest first: one per paragraph, its kind,
/// target and turn, then its body (cut at [`ENTRY_CHARS`]); past [`EVICTED_CHARS`] the rest are
/// counted, not shown. `None` when there are none.
pub fn render_evicted<'r>(rows: impl IntoIterator<Item = &'r ViewRow>) -> Option<String> {
    let mut rows: Vec<&ViewRow> = rows.into_iter().collect();
    rows.sort_by_key(|r| {
        (
            r.turn,
            r.category() != Some(rummy_store::entry::Category::Prompt),
            r.view_id,
        )
    });
    let mut out = String::new();
    let mut left_out = 0;
    for row in &rows {
        if out.len() >= EVICTED_CHARS {
            left_out += 1;
            continue;
        }
        let attributes = row.attributes();
        let target = attributes
            .get("path")
            .or_else(|| attributes.get("command"))
            .and_then(Value::as_str)
            .unwrap_or(&row.path);
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&format!("[turn {}] {} {target}", row.turn, row.tag()));
        if let Some(outcome) = &row.outcome {
            out.push_str(&format!(" ({outcome})"));
        }
        out.push('\n');
        let body = row.body.trim();
        match body.char_indices().nth(ENTRY_CHARS) {
            None => out.push_str(body),
            Some((cut, _)) => {
                out.push_str(&body[..cut]);
                out.push_str(" […]");
            }
        }
    }
    if left_out > 0 {
        out.push_str(&format!("\n\n[{left_out} more entries left out]"));
    }
    (!out.is_empty()).then_some(out)
}

/// What History Demotion does with summarisation in the picture.
#[derive(Debug, Clone, PartialEq)]
pub enum HistoryPlan {
    /// Demote plainly; the summary stays as it is.
    Plain(Demotion),
    /// Fold the entries `demotion` archives into the summary first (room is left for the
    /// summary to grow to its cap); should the fold fail, demote by `fallback` instead.
    Fold {
        /// The demotion that leaves room for the summary at its cap.
        demotion: Demotion,
        /// The rows it archives, to fold.
        evicted: Vec<ViewRow>,
        /// The plain demotion (the summary as it is), for a fold that fails.
        fallback: Demotion,
    },
    /// Even with everything else demoted the summary does not fit: it leaves the context too
    /// (archived, kept as `summary://run/<n>`).
    DropSummary(Demotion),
}

/// The History Demotion for context `rows`, with summarisation on (`summarizing`) or off:
/// `fits(rows, extra)` says whether the rows assemble within the budget with `extra` tokens
/// more, and `reserve` is what a summary at its cap costs ([`reserve`]). `None` when nothing
/// fits, the summary dropped included.
///
/// The plain plan (the summary as it is, never demoted by it) is taken when summarisation is
/// off or when it archives nothing (summarized entries keep their tags: nothing is evicted).
/// Otherwise the plan is made again without the summary and with room for one at its cap, so
/// the folded summary fits whatever its length: the budget stays a hard bound. When that room
/// cannot be made, the plain plan stands without a fold; when not even the plain plan fits,
/// the summary is dropped.
pub fn plan_history(
    rows: &[ViewRow],
    summarizing: bool,
    reserve: i32,
    fits: impl Fn(&[ViewRow], i32) -> bool,
) -> Option<HistoryPlan> {
    let plain = plan_demotion(rows, |r| fits(r, 0));
    if let Some(d) = &plain {
        if !summarizing || d.archive.is_empty() {
            return plain.map(HistoryPlan::Plain);
        }
    }
    if !summarizing && plain.is_none() && !rows.iter().any(is_summary) {
        return None;
    }
    let without: Vec<ViewRow> = rows.iter().filter(|r| !is_summary(r)).cloned().collect();
    if summarizing {
        if let Some(demotion) = plan_demotion(&without, |r| fits(r, reserve)) {
            let evicted: Vec<ViewRow> = rows
                .iter()
                .filter(|r| demotion.archive.contains(&r.view_id))
                .cloned()
                .collect();
            // Nothing archived with the room made: the summary as it is fits beside it.
            return Some(match (plain, evicted.is_empty()) {
                (Some(fallback), true) => HistoryPlan::Plain(fallback),
                (None, true) => HistoryPlan::Plain(demotion),
                (plain, false) => HistoryPlan::Fold {
                    fallback: plain.unwrap_or_else(|| demotion.clone()),
                    demotion,
                    evicted,
                },
            });
        }
    }
    if let Some(d) = plain {
        return Some(HistoryPlan::Plain(d));
    }
    if without.len() == rows.len() {
        return None;
    }
    plan_demotion(&without, |r| fits(r, 0)).map(HistoryPlan::DropSummary)
}

/// The run's summary text, if it has one in view.
pub fn current(conn: &mut Db, run_id: RunId) -> Result<Option<String>, StoreError> {
    Ok(store_entries::by_path(conn, run_id, PATH)?
        .filter(|r| r.visibility == Visibility::Visible)
        .map(|r| r.body)
        .filter(|b| !b.trim().is_empty()))
}

/// Writes `text` as the run's summary at turn `t`; the text it replaces (if any) is kept as
/// the archived `summary://run/<n>`, `n` its version. Answers the new version.
pub fn store(conn: &mut Db, t: TurnRef, text: &str, at: WriteCtx) -> Result<i64, StoreError> {
    let version = keep_prior(conn, t, at)?;
    write(
        conn,
        t,
        PATH,
        text,
        json!({ "version": version, "chars": text.chars().count() }),
        Visibility::Visible,
        at,
    )?;
    Ok(version)
}

/// Takes the run's summary out of the context (it did not fit): its text is kept as the
/// archived `summary://run/<n>` and `summary://run` is archived too, so the next fold starts a
/// first summary.
pub fn leave_context(conn: &mut Db, t: TurnRef, at: WriteCtx) -> Result<(), StoreError> {
    let Some(prior) = store_entries::by_path(conn, t.run.run_id, PATH)? else {
        return Ok(());
    };
    let version = keep_prior(conn, t, at)?;
    write(
        conn,
        t,
        PATH,
        &prior.body,
        json!({ "version": version - 1, "dropped": true }),
        Visibility::Archived,
        at,
    )
}

/// Keeps the current summary's text as the archived `summary://run/<n>`; answers the version
/// the next text takes (1 for the first).
fn keep_prior(conn: &mut Db, t: TurnRef, at: WriteCtx) -> Result<i64, StoreError> {
    let Some(prior) = store_entries::by_path(conn, t.run.run_id, PATH)? else {
        return Ok(1);
    };
    let version = prior
        .attributes()
        .get("version")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let dropped = prior.attributes().get("dropped").is_some();
    if !dropped {
        let path = format!("{PATH}/{version}");
        let attributes = json!({ "version": version, "replacedAtTurn": t.turn });
        write(
            conn,
            t,
            &path,
            &prior.body,
            attributes,
            Visibility::Archived,
            at,
        )?;
    }
    Ok(version + 1)
}

fn write(
    conn: &mut Db,
    t: TurnRef,
    path: &str,
    body: &str,
    attributes: Value,
    visibility: Visibility,
    at: WriteCtx,
) -> Result<(), StoreError> {
    let write = EntryWrite {
        visibility,
        ..EntryWrite::plugin(t, path, body, &attributes)
    };
    store_entries::write(conn, &write, at)?;
    Ok(())
}

#[cfg(test)]
mod tests;
