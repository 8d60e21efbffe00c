//! What every tool handler shares: the handler's context, the result it hands back to dispatch, and the store look-ups and writes tools make.
//!
//! A handler decides; `turn::dispatch` records. Handlers return a
//! [`ToolResult`] (the result entry to write) and may `?` store errors: dispatch
//! turns the ones the model caused (writer tier, bad path) into failed
//! results. A handler checks permissions before it writes anything, so a
//! refusal never leaves half an effect behind.

use super::context::DispatchCtx;
use super::proposal::Proposed;
use super::wording;
use rummy_provider::time::Millis;
use rummy_store::db::Db;
use rummy_store::entries::{self, EntryWrite, ViewRow, WriteCtx};
use rummy_store::entry::{FailureKind, State, Visibility, Writer};
use rummy_store::files;
use rummy_store::ids::RunId;
use rummy_store::ops::{self, check_writer, Op, ViewChange};
use rummy_store::schemes;
use rummy_store::selection::{self, FilterCall, Judgements};
use rummy_store::{views, StoreError};
use rummy_text::hedberg::{self, PatternKind};
use rummy_text::parse::{ToolCall, ToolName};
use rummy_text::path::{normalize, scheme_of};
use rummy_text::token_estimate;
use serde_json::{Map, Value};

/// Characters of a `summary` attribute that are kept.
pub const SUMMARY_CHARS: usize = 80;

/// A handler's view of the dispatch: the writing connection, the turn and the time.
pub struct Handler<'a> {
    /// The writing connection (the caller's transaction).
    pub conn: &'a mut Db,
    /// The turn, limits, mode and flags.
    pub ctx: &'a DispatchCtx,
    /// The time of the dispatch.
    pub now: Millis,
    /// The body filters judged off the writer (a turn's dispatch); `None`: a filter is judged
    /// here, on `conn`.
    pub judged: Option<&'a Judgements>,
}

/// The result entry a handler asks dispatch to write.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The command's target: it names the result path and fills the target attribute.
    pub target: String,
    /// The result's state.
    pub state: State,
    /// Why it failed.
    pub outcome: Option<FailureKind>,
    /// The result body the model reads.
    pub body: String,
    /// The result's attributes.
    pub attributes: Map<String, Value>,
    /// Whether the target is stored under the tool's target attribute (`path`, `command`, `question`).
    pub keep_target: bool,
}

impl ToolResult {
    fn new(target: &str, state: State, body: String) -> ToolResult {
        ToolResult {
            target: target.to_owned(),
            state,
            outcome: None,
            body,
            attributes: Map::new(),
            keep_target: true,
        }
    }

    /// A resolved result.
    pub fn resolved(target: &str, body: impl Into<String>) -> ToolResult {
        ToolResult::new(target, State::Resolved, body.into())
    }

    /// A proposal of `kind`, stored as its attributes (dispatch adds `commandIndex`).
    pub fn proposed(target: &str, body: impl Into<String>, kind: &Proposed) -> ToolResult {
        ToolResult {
            attributes: kind.attributes(),
            ..ToolResult::new(target, State::Proposed, body.into())
        }
    }

    /// A result still being produced outside the core (a web search).
    pub fn streaming(target: &str, kind: &str) -> ToolResult {
        ToolResult::new(target, State::Streaming, String::new()).with("kind", kind)
    }

    /// A failed result with its outcome (`validation`, `permission`, `overflow:N`, `501`, …).
    pub fn failed(target: &str, outcome: FailureKind, body: impl Into<String>) -> ToolResult {
        ToolResult {
            outcome: Some(outcome),
            ..ToolResult::new(target, State::Failed, body.into())
        }
    }

    /// The same result with one more attribute.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> ToolResult {
        self.attributes.insert(key.to_owned(), value.into());
        self
    }

    /// The same result without the target attribute (its target only names the path).
    pub fn bare(mut self) -> ToolResult {
        self.keep_target = false;
        self
    }
}

/// The `bases` attribute of a file proposal: each file its acceptance writes, removes or copies, with the
/// hash of the content the model saw (`null`: no such file). Accepting checks the disk against it
/// (`turn::proposals`), so a change made after the model read the file is never overwritten or
/// deleted unseen.
pub fn bases<'a>(files: impl IntoIterator<Item = (&'a str, Option<&'a str>)>) -> Value {
    Value::Object(
        files
            .into_iter()
            .map(|(path, body)| {
                let base = body.map_or(Value::Null, |b| Value::String(entries::hex_sha256(b)));
                (path.to_owned(), base)
            })
            .collect(),
    )
}

/// The attribute a tool's target is stored under; `update` has none.
pub fn target_key(tool: ToolName) -> Option<&'static str> {
    match tool {
        // A call's target (`server/tool`) is its `server` and `tool` attributes already.
        ToolName::Update | ToolName::Think | ToolName::Call => None,
        ToolName::Sh | ToolName::Env => Some("command"),
        ToolName::AskUser => Some("question"),
        ToolName::Get
        | ToolName::Search
        | ToolName::Set
        | ToolName::Cp
        | ToolName::Mv
        | ToolName::Rm => Some("path"),
    }
}

/// A non-empty trimmed attribute.
pub fn attr<'c>(call: &'c ToolCall, name: &str) -> Option<&'c str> {
    call.attr(name).map(str::trim).filter(|v| !v.is_empty())
}

/// The trimmed body, if it has text.
pub fn body(call: &ToolCall) -> Option<&str> {
    Some(call.body.trim()).filter(|b| !b.is_empty())
}

/// The command's target: the path, command or question it is about.
pub fn target_of(call: &ToolCall) -> String {
    let attr_target = match call.name {
        ToolName::Call => {
            return match (attr(call, "server"), attr(call, "tool")) {
                (Some(server), Some(tool)) => super::call::qualified(server, tool),
                _ => String::new(),
            }
        }
        ToolName::Sh | ToolName::Env => attr(call, "command"),
        ToolName::AskUser => attr(call, "question"),
        ToolName::Search => attr(call, "path").or_else(|| attr(call, "query")),
        ToolName::Get
        | ToolName::Think
        | ToolName::Set
        | ToolName::Cp
        | ToolName::Mv
        | ToolName::Rm
        | ToolName::Update => attr(call, "path"),
    };
    attr_target.or_else(|| body(call)).unwrap_or("").to_owned()
}

/// A `get`/`rm` target and its body filter: `path` with the body (or `body=`) as filter, or the body as path.
pub fn path_and_filter(call: &ToolCall) -> (Option<&str>, Option<&str>) {
    match attr(call, "path") {
        Some(path) => (Some(path), attr(call, "body").or_else(|| body(call))),
        None => (body(call), attr(call, "body")),
    }
}

/// The `visibility` attribute: absent, valid (legacy names accepted), or the message refusing it.
pub fn visibility_of(call: &ToolCall) -> Result<Option<Visibility>, &'static str> {
    match attr(call, "visibility") {
        None => Ok(None),
        Some(v) => Visibility::parse(v)
            .map(Some)
            .ok_or(wording::BAD_VISIBILITY),
    }
}

/// The `summary` attribute, cut to [`SUMMARY_CHARS`].
pub fn summary_of(call: &ToolCall) -> Option<String> {
    attr(call, "summary").map(|s| s.chars().take(SUMMARY_CHARS).collect())
}

/// Whether a (normalised) path is a project file rather than a scheme entry.
pub fn is_file(path: &str) -> bool {
    scheme_of(path).is_none()
}

/// What a path attribute names: one entry, or every entry a pattern (or body filter) selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// One normalised path.
    Exact(String),
    /// A hedberg pattern over paths (normalised where its kind allows).
    Pattern(String),
}

/// Reads a path attribute: a literal path without a filter is exact; anything else is a pattern.
pub fn read_target(raw: &str, filter: Option<&str>) -> Result<Target, String> {
    let clean = |p: &str| normalize(p).map_err(|e| e.to_string());
    match hedberg::detect(raw) {
        PatternKind::Literal if filter.is_none() => clean(raw).map(Target::Exact),
        PatternKind::Literal => clean(raw).map(Target::Pattern),
        // Normalising encodes `?` in scheme paths; a glob needs it back as a wildcard.
        PatternKind::Glob => clean(raw).map(|p| Target::Pattern(p.replace("%3F", "?"))),
        _ => Ok(Target::Pattern(raw.to_owned())),
    }
}

impl Target {
    /// The path or pattern as text.
    pub fn as_str(&self) -> &str {
        match self {
            Target::Exact(p) | Target::Pattern(p) => p,
        }
    }
}

fn model_visible(row: &ViewRow) -> bool {
    schemes::lookup(row.scheme.as_deref()).is_some_and(|s| s.model_visible)
}

impl Handler<'_> {
    /// The run's id.
    pub fn run_id(&self) -> RunId {
        self.ctx.t.run.run_id
    }

    /// Characters per estimated token.
    pub fn divisor(&self) -> u32 {
        self.ctx.limits.token_divisor
    }

    /// The token divisor and the time of this dispatch's writes.
    pub fn at(&self) -> WriteCtx {
        WriteCtx {
            divisor: self.divisor(),
            now: self.now,
        }
    }

    /// A store operation by `writer` for this run.
    pub fn op(&self, writer: Writer) -> Op {
        Op {
            run: self.ctx.t.run,
            writer,
            max_entry_tokens: self.ctx.limits.max_entry_tokens,
            at: self.at(),
        }
    }

    /// One entry the model may see (archived ones included), by exact path.
    pub fn find(&mut self, path: &str) -> Result<Option<ViewRow>, StoreError> {
        let run_id = self.run_id();
        Ok(entries::by_path(self.conn, run_id, path)?.filter(model_visible))
    }

    /// Every entry the model may see that `target` selects, oldest first. With a body filter
    /// in a turn's dispatch, the filter's judgement made off the writer decides: without one
    /// that fits the matches as they are now, this fails with [`StoreError::Unjudged`]. A
    /// handler selects before it writes anything, so that failure leaves nothing behind.
    pub fn select(
        &mut self,
        target: &Target,
        filter: Option<&str>,
    ) -> Result<Vec<ViewRow>, StoreError> {
        match target {
            Target::Exact(path) => Ok(self.find(path)?.into_iter().collect()),
            Target::Pattern(pattern) => {
                let run_id = self.run_id();
                let mut rows = match (filter, self.judged) {
                    (Some(filter), Some(judgements)) => {
                        let rows = selection::matching(self.conn, run_id, pattern, None)?;
                        let call = FilterCall {
                            pattern: pattern.clone(),
                            filter: filter.to_owned(),
                        };
                        match judgements.get(&call) {
                            Some(judged) if judged.fits(&rows) => judged.apply(rows)?,
                            _ => return Err(StoreError::Unjudged(Box::new(call))),
                        }
                    }
                    _ => selection::matching(self.conn, run_id, pattern, filter)?,
                };
                rows.retain(model_visible);
                Ok(rows)
            }
        }
    }

    /// The current content of a project file, whether or not this run sees it yet.
    pub fn file_body(&mut self, path: &str) -> Result<Option<String>, StoreError> {
        if let Some(row) = self.find(path)? {
            return Ok(Some(row.body));
        }
        files::body(self.conn, self.ctx.t.run.project_id, path)
    }

    /// Writes a scheme entry for the model: resolved, in this turn, after the writer check.
    pub fn write(
        &mut self,
        path: &str,
        body: &str,
        attributes: &Value,
        visibility: Visibility,
    ) -> Result<(), StoreError> {
        let t = self.ctx.t;
        entries::write(
            self.conn,
            &EntryWrite {
                run: t.run,
                path,
                body,
                attributes,
                state: State::Resolved,
                outcome: None,
                visibility,
                loop_id: Some(t.loop_id),
                turn: t.turn,
                writer: Writer::Model,
            },
            self.at(),
        )
        .map(|_| ())
    }

    /// The `known://` and `memory://` size gate: a failed `overflow:<tokens>` outcome when `body` is too large for `path`.
    pub fn size_gate(&self, target: &str, path: &str, body: &str) -> Option<ToolResult> {
        if !ops::gated(path) {
            return None;
        }
        let size = token_estimate::estimate(body, self.divisor());
        let max = i32::try_from(self.ctx.limits.max_entry_tokens).unwrap_or(i32::MAX);
        (size > max).then(|| {
            ToolResult::failed(
                target,
                FailureKind::Overflow {
                    tokens: Some(i64::from(size)),
                },
                wording::too_large(path, size, max),
            )
        })
    }

    /// Fails unless the model may write every one of `paths`.
    pub fn check_all<'p>(
        &self,
        paths: impl IntoIterator<Item = &'p str>,
    ) -> Result<(), StoreError> {
        paths
            .into_iter()
            .try_for_each(|p| check_writer(p, Writer::Model))
    }

    /// Removes the run's views of `rows` (the entries stay for other runs).
    pub fn remove_views(&mut self, rows: &[ViewRow]) -> Result<(), StoreError> {
        let ids: Vec<i32> = rows.iter().map(|r| r.view_id).collect();
        views::remove_all(self.conn, &ids)
    }

    /// Sets the visibility of `rows` as `writer`, and dates them to this turn so the turn's budget check sees them.
    pub fn show(
        &mut self,
        rows: &[ViewRow],
        visibility: Visibility,
        writer: Writer,
    ) -> Result<(), StoreError> {
        let op = self.op(writer);
        for row in rows {
            check_writer(&row.path, writer)?;
        }
        let change = ViewChange {
            visibility: Some(visibility),
            ..ViewChange::default()
        };
        for row in rows {
            ops::change_view(self.conn, &op, row, &change)?;
        }
        let ids: Vec<i32> = rows.iter().map(|r| r.view_id).collect();
        views::set_turn(self.conn, &ids, self.ctx.t.turn)
    }

    /// A body-less change (visibility, summary) of every entry `raw` selects, by the model.
    pub fn change_views(
        &mut self,
        raw: &str,
        filter: Option<&str>,
        visibility: Option<Visibility>,
        summary: Option<String>,
    ) -> Result<ToolResult, StoreError> {
        let target = match read_target(raw, filter) {
            Ok(target) => target,
            Err(reason) => return Ok(ToolResult::failed(raw, FailureKind::Validation, reason)),
        };
        let rows = self.select(&target, filter)?;
        if rows.is_empty() {
            return Ok(ToolResult::failed(
                target.as_str(),
                FailureKind::NotFound,
                wording::not_found(raw),
            ));
        }
        self.check_all(rows.iter().map(|r| r.path.as_str()))?;
        let merge = summary.clone().map(|s| {
            let mut map = Map::new();
            map.insert("summary".to_owned(), Value::from(s));
            map
        });
        let change = ViewChange {
            visibility,
            merge,
            ..ViewChange::default()
        };
        let op = self.op(Writer::Model);
        for row in &rows {
            ops::change_view(self.conn, &op, row, &change)?;
        }
        let what = wording::view_change(visibility.map(Visibility::as_str), summary.as_deref());
        let body = wording::listing(rows.iter().map(|r| format!("{} → {what}", r.path)));
        Ok(ToolResult::resolved(target.as_str(), body))
    }
}
