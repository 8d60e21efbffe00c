//! Recall: on a loop's first turn, what the project remembers that bears on the prompt, scored lexically and injected as one block before the prompt.
//!
//! The candidates are the sections ([`sections`]) of the entries the full-text index matches
//! for the prompt's rarest terms ([`terms`]; sections are matched against all of them): the project's memory, its other runs' history lines,
//! facts (`known://`) and session states (`session://`, where runs keep them) — at most
//! `RUMMY_RECALL_MAX_CANDIDATES` entries, best bm25 first. Each section is scored
//! ([`select`]): the share of the prompt's terms the section matches, times the entry's bm25
//! relative to the best match (which moves the score by at most half), times its source's
//! weight — a session's current state above memory, memory above facts, history lowest and
//! lower with age. A section must match
//! two of the terms (one when the prompt has only one), so a prompt that only shares a word
//! with the project's past recalls nothing. The best, each once, up to
//! `RUMMY_RECALL_MAX_INJECTED` items and `RUMMY_RECALL_MAX_CHARS` characters, are rendered
//! with their source paths and stored as the loop's `recall://<loop>` entry, whose attributes
//! say what was injected and why ([`Recall`]). Nothing relevant: no block and no entry.
//!
//! No model is called; the one read is [`recall`], on a read connection before the loop's
//! first write, which records the result ([`record`]).

use super::sections::{self, Section};
use super::terms::{self, query_terms};
use super::wording;
use crate::config::RecallSettings;
use rummy_protocol::results::{Recall, RecallItem};
use rummy_provider::time::{Millis, DAY_MS};
use rummy_store::db::Db;
use rummy_store::entries::WriteCtx;
use rummy_store::entries::{self, RunRef, TurnRef};
use rummy_store::entry::Scope;
use rummy_store::flags::RunFlags;
use rummy_store::memory as store;
use rummy_store::StoreError;
use serde_json::Value;
use std::collections::HashMap;

/// Whether the project keeps what a loop with `flags` did for later recall — its history line,
/// its facts and session state indexed: when the server recalls (`default`), or the loop itself
/// asks to. With recall off everywhere, memory costs a turn nothing.
pub fn kept(flags: &RunFlags, default: bool) -> bool {
    default || flags.recall == Some(true)
}

/// Where a candidate comes from: its entry's scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The project's memory (`memory://`).
    Memory,
    /// Another run's session state (`session://`).
    Session,
    /// Another run's fact (`known://`).
    Known,
    /// A finished loop of the project (`history://`).
    History,
}

impl Source {
    /// The source of an entry of `scheme`, if recall reads that scheme.
    pub fn of(scheme: Option<&str>) -> Option<Source> {
        match scheme? {
            "memory" => Some(Source::Memory),
            "session" => Some(Source::Session),
            "known" => Some(Source::Known),
            "history" => Some(Source::History),
            _ => None,
        }
    }

    /// The scheme name, which is also the item's tag in the block.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Memory => "memory",
            Source::Session => "session",
            Source::Known => "known",
            Source::History => "history",
        }
    }

    /// How much a section of this source weighs against the others (before a history line's
    /// age): where a run stands now counts most, what is kept for good next, a fact of another
    /// run then, and a past loop's line least.
    fn weight(self, title: &str) -> f64 {
        match self {
            Source::Session if title.to_lowercase().contains("current") => 1.5,
            Source::Session | Source::Memory => 1.2,
            Source::Known => 1.0,
            Source::History => 0.7,
        }
    }
}

/// How a history line's weight falls with its age: halved at 30 days.
fn recency(age_ms: i64) -> f64 {
    let days = age_ms.max(0) as f64 / DAY_MS as f64;
    1.0 / (1.0 + days / 30.0)
}

/// An entry the index matched, as scoring reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Matched {
    /// Its path.
    pub path: String,
    /// Its source.
    pub source: Source,
    /// The run it belongs to (its alias), for a run's entry.
    pub run: Option<String>,
    /// Its summary keywords, if any.
    pub summary: String,
    /// Its content.
    pub body: String,
    /// Its bm25 (negative; lower is better).
    pub bm25: f64,
    /// When it last changed.
    pub updated_at: Millis,
}

/// The text of an entry that is indexed besides its body: the path after its scheme (not for
/// history, whose path is a date and numbers) and its summary.
fn label(m: &Matched) -> String {
    let path = match m.source {
        Source::History => "",
        _ => m.path.split_once("://").map_or("", |(_, rest)| rest),
    };
    format!("{path} {}", m.summary)
}

/// A section chosen for the block, with its content (the protocol item says only why).
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    /// Where it came from and why.
    pub item: RecallItem,
    /// The section's text.
    pub content: String,
}

/// Rounds a score for display (the order is decided on the exact value).
fn rounded(score: f64) -> f64 {
    (score * 1000.0).round() / 1000.0
}

/// The sections of `matched` that bear on `terms`, best first, each once, at most
/// `max_injected` of them: scored as the module doc says.
pub fn select(
    terms: &[String],
    matched: &[Matched],
    max_injected: usize,
    now: Millis,
) -> Vec<Chosen> {
    let best = matched
        .iter()
        .map(|m| -m.bm25)
        .fold(f64::MIN_POSITIVE, f64::max);
    let need = terms.len().min(2);
    let mut scored: Vec<(f64, Chosen)> = Vec::new();
    for m in matched {
        let label = label(m);
        // The index's judgement of the entry, relative to the best: it moves a score by at
        // most half, so what a section covers and where it comes from decide too.
        let relevance = 0.5 + 0.5 * (-m.bm25).max(0.0) / best;
        for Section { title, content } in sections::split(&m.body) {
            let hit = terms::matched(terms, &format!("{label} {title} {content}"));
            if hit.len() < need.max(1) {
                continue;
            }
            let coverage = hit.len() as f64 / terms.len() as f64;
            let age = match m.source {
                Source::History => recency(now.0 - m.updated_at.0),
                _ => 1.0,
            };
            let score = coverage * relevance * m.source.weight(&title) * age;
            let item = RecallItem {
                path: m.path.clone(),
                source: m.source.as_str().to_owned(),
                run: m.run.clone(),
                section: Some(title).filter(|t| !t.is_empty()),
                score: rounded(score),
                matched: hit.into_iter().map(str::to_owned).collect(),
            };
            scored.push((score, Chosen { item, content }));
        }
    }
    scored.sort_by(|(a, x), (b, y)| {
        b.total_cmp(a)
            .then_with(|| x.item.path.cmp(&y.item.path))
            .then_with(|| x.item.section.cmp(&y.item.section))
    });
    let mut chosen: Vec<Chosen> = Vec::new();
    for (_, c) in scored {
        let seen = chosen.iter().any(|o| {
            o.item.source == c.item.source
                && o.item.section == c.item.section
                && o.content == c.content
        });
        if !seen {
            chosen.push(c);
        }
        if chosen.len() == max_injected {
            break;
        }
    }
    chosen
}

/// Fewest characters of content worth injecting for an item cut to fit what is left.
const MIN_CUT_CHARS: usize = 160;

/// Text for a double-quoted attribute value.
fn attr_escape(value: &str) -> String {
    value
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
}

/// One item as the model reads it: the source's tag with the path, the run and the section.
fn item_text(c: &Chosen, content: &str) -> String {
    let tag = c.item.source.as_str();
    let mut out = format!("<{tag} path=\"{}\"", attr_escape(&c.item.path));
    if let Some(run) = &c.item.run {
        out.push_str(&format!(" run=\"{}\"", attr_escape(run)));
    }
    if let Some(section) = &c.item.section {
        out.push_str(&format!(" section=\"{}\"", attr_escape(section)));
    }
    out.push_str(&format!(">{content}</{tag}>"));
    out
}

/// The block's text for `chosen` within `max_chars` characters of items, and the items it holds:
/// an item that does not fit is cut to what is left (with a marker) when that leaves at least
/// [`MIN_CUT_CHARS`] of it, and left out otherwise. `None` when no item fits.
pub fn render(chosen: Vec<Chosen>, max_chars: usize) -> Option<(String, Vec<Chosen>)> {
    let mut lines = Vec::new();
    let mut kept = Vec::new();
    let mut used = 0;
    for c in chosen {
        let whole = item_text(&c, &c.content);
        let size = whole.chars().count();
        if used + size <= max_chars {
            used += size;
            lines.push(whole);
            kept.push(c);
            continue;
        }
        let overhead = size - c.content.chars().count() + wording::CUT.chars().count();
        let room = max_chars.saturating_sub(used + overhead);
        if room >= MIN_CUT_CHARS {
            let cut: String = c.content.chars().take(room).collect();
            let text = item_text(&c, &format!("{}{}", cut.trim_end(), wording::CUT));
            used += text.chars().count();
            lines.push(text);
            kept.push(c);
        }
    }
    if kept.is_empty() {
        return None;
    }
    Some((
        format!("{}\n{}", wording::RECALL_HEADER, lines.join("\n")),
        kept,
    ))
}

/// What a loop's first turn recalled: the block the model reads and why each item is in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recalled {
    /// The block's text (the header and the items).
    pub body: String,
    /// The terms, the candidates and the items (the entry's attributes, without its path and
    /// loop, which [`record`] fills in).
    pub why: Recall,
}

/// What the full-text index found for a prompt, scored and ordered, before the caps of the
/// block: what re-ranking (`memory::rerank`) may reorder.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidates {
    /// The prompt's terms.
    pub terms: Vec<String>,
    /// How many entries the index matched.
    pub matched: i64,
    /// The sections that bear on the prompt, best first (at most the pool asked for).
    pub chosen: Vec<Chosen>,
}

/// Recalls for `prompt` in `run`'s project — its memory, its other runs' history lines, facts
/// and session states — within `settings`' caps; `None` when nothing is relevant. A read: run
/// it on a read connection before the write that records it.
pub fn recall(
    conn: &mut Db,
    run: RunRef,
    prompt: &str,
    settings: &RecallSettings,
    now: Millis,
) -> Result<Option<Recalled>, StoreError> {
    let max_injected = usize::try_from(settings.max_injected).unwrap_or(usize::MAX);
    Ok(candidates(conn, run, prompt, settings, max_injected, now)?
        .and_then(|found| conclude(found, None, settings)))
}

/// The sections recall found for `prompt`, best first, at most `pool` of them; `None` when
/// nothing is relevant.
pub fn candidates(
    conn: &mut Db,
    run: RunRef,
    prompt: &str,
    settings: &RecallSettings,
    pool: usize,
    now: Millis,
) -> Result<Option<Candidates>, StoreError> {
    let terms = query_terms(prompt);
    let searched = terms::rarest(&terms, |term, prefix| {
        store::term_frequency(conn, term, prefix)
    })?;
    if searched.is_empty() {
        return Ok(None);
    }
    let query = store::RecallQuery {
        terms: &searched,
        project_id: run.project_id,
        except_run: Some(run.run_id),
    };
    let limit = i32::try_from(settings.max_candidates).unwrap_or(i32::MAX);
    let scored = store::recall_matches(conn, &query, limit)?;
    if scored.is_empty() {
        return Ok(None);
    }
    let ids: Vec<i32> = scored.iter().map(|s| s.id).collect();
    let mut rows: HashMap<i32, store::CandidateRow> = store::candidate_rows(conn, &ids)?
        .into_iter()
        .map(|r| (r.id, r))
        .collect();
    let run_of = |scope: &str| {
        scope
            .strip_prefix("run:")
            .and_then(|id| id.parse::<i32>().ok())
    };
    let run_ids: Vec<i32> = rows.values().filter_map(|r| run_of(&r.scope)).collect();
    let aliases: HashMap<i32, String> = store::run_aliases(conn, &run_ids)?.into_iter().collect();
    // A fork holds copies of its parent's facts: those it has as they are are no news to it.
    let paths: Vec<&str> = rows
        .values()
        .filter(|r| run_of(&r.scope).is_some())
        .map(|r| r.path.as_str())
        .collect();
    let held = store::held_by_run(conn, run.run_id, &paths)?;
    let own_scope = Scope::Run(run.run_id).key();
    let matched: Vec<Matched> = scored
        .iter()
        .filter_map(|s| {
            let row = rows.remove(&s.id)?;
            let source = Source::of(row.scheme.as_deref())?;
            let run_id = run_of(&row.scope);
            let copy = run_id.is_some()
                && held
                    .iter()
                    .any(|(path, hash)| *path == row.path && *hash == row.hash);
            if copy || row.scope == own_scope {
                return None;
            }
            let attributes: Value = serde_json::from_str(&row.attributes).unwrap_or(Value::Null);
            Some(Matched {
                run: run_id.and_then(|id| aliases.get(&id).cloned()),
                summary: rummy_store::entry::text_attr(&attributes, "summary").to_owned(),
                path: row.path,
                source,
                body: row.body,
                bm25: s.bm25,
                updated_at: Millis(row.updated_at),
            })
        })
        .collect();
    let chosen = select(&terms, &matched, pool, now);
    if chosen.is_empty() {
        return Ok(None);
    }
    Ok(Some(Candidates {
        terms,
        matched: i64::try_from(scored.len()).unwrap_or(i64::MAX),
        chosen,
    }))
}

/// The recall of `found`, in its lexical order or — when the sidecar re-ranked it — in
/// `reranked`'s (indexes into `found.chosen`, best first; those it left out are not injected),
/// within `settings`' caps; `None` when nothing is left to inject.
pub fn conclude(
    found: Candidates,
    reranked: Option<Vec<usize>>,
    settings: &RecallSettings,
) -> Option<Recalled> {
    let was_reranked = reranked.is_some();
    let chosen = match reranked {
        None => found.chosen,
        Some(order) => {
            let mut slots: Vec<Option<Chosen>> = found.chosen.into_iter().map(Some).collect();
            order
                .into_iter()
                .filter_map(|i| slots.get_mut(i).and_then(Option::take))
                .collect()
        }
    };
    let max_injected = usize::try_from(settings.max_injected).unwrap_or(usize::MAX);
    let chosen: Vec<Chosen> = chosen.into_iter().take(max_injected).collect();
    let max_chars = usize::try_from(settings.max_chars).unwrap_or(usize::MAX);
    let (body, kept) = render(chosen, max_chars)?;
    Some(Recalled {
        body,
        why: Recall {
            path: String::new(),
            loop_number: 0,
            terms: found.terms,
            candidates: found.matched,
            reranked: was_reranked,
            items: kept.into_iter().map(|c| c.item).collect(),
        },
    })
}

/// The path of loop `loop_number`'s recall.
pub fn path(loop_number: i32) -> String {
    format!("recall://{loop_number}")
}

/// Writes what the loop recalled as its `recall://<loop>` entry (visible, in the loop's first
/// turn, by the server), its attributes saying what was injected and why.
pub fn record(
    conn: &mut Db,
    t: TurnRef,
    loop_number: i32,
    recalled: &Recalled,
    at: WriteCtx,
) -> Result<(), StoreError> {
    let path = path(loop_number);
    let why = Recall {
        path: path.clone(),
        loop_number: i64::from(loop_number),
        ..recalled.why.clone()
    };
    let attributes = serde_json::to_value(&why)?;
    let write = entries::EntryWrite::plugin(t, &path, &recalled.body, &attributes);
    entries::write(conn, &write, at).map(|_| ())
}

#[cfg(test)]
mod tests;
