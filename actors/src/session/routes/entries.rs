//! A run's entries: `getEntries`, `set` (on an entry, or every match of a pattern; on a pending
//! proposal's path it resolves it), `get`, `rm`, `cp`, `mv` and `update`. A project file's
//! body or state is never a client's to change (-32003, [`ops::check_file_change`]): a write,
//! a state, a pattern's match or a copy onto it is refused, so the entry keeps the disk's
//! content; a proposal on the file is resolved by the proposal's own path.

use super::runs;
use crate::errors::Error;
use crate::registry::ResolveProposal;
use crate::session::call::Call;
use rummy_core::turn::proposals::Decision as ProposalDecision;
use rummy_core::wire::bounded::{self, SliceError};
use rummy_core::wire::params::{
    self, GetBodyParams, GetEntriesParams, GetParams, MoveParams, Page, RmParams, SetParams,
    UpdateParams,
};
use rummy_core::wire::results::{
    BodySlice, CountAck, Entry, PathAck, PathsAck, Resolution, RunAck,
};
use rummy_core::wire::{ErrorKind, RpcError};
use rummy_store::entries::{self, EntryFilter, RunRef, ViewRow};
use rummy_store::entry::{State, Visibility};
use rummy_store::export;
use rummy_store::ids::RunId;
use rummy_store::memory::{self, MemoryWrite, Provenance};
use rummy_store::ops::{self, ContentWrite, ViewChange};
use rummy_store::runs::Run;
use rummy_store::selection::{self, Selection};
use rummy_store::shared::{self, Ask};
use rummy_store::StoreError;
use rummy_text::path::{normalize, scheme_of};
use serde::Serialize;
use serde_json::Value;

/// A `state` param: one of the entry states, -32602 otherwise.
fn state_param(state: Option<&str>) -> Result<Option<State>, RpcError> {
    state
        .map(|s| {
            State::parse(s).ok_or_else(|| {
                RpcError::invalid_param(
                    "state",
                    "expected proposed, streaming, resolved, failed or cancelled",
                )
            })
        })
        .transpose()
}

/// A `visibility` param: one of the visibilities, -32602 otherwise.
fn visibility_param(visibility: Option<&str>) -> Result<Option<Visibility>, RpcError> {
    visibility
        .map(|v| {
            Visibility::parse(v).ok_or_else(|| {
                RpcError::invalid_param("visibility", "expected visible, summarized or archived")
            })
        })
        .transpose()
}

/// `getEntries`: a page of the run's entries, filtered; for the schemes `memory` and `history`,
/// the project's (no run has views of them; a superseded memory is listed archived). Each body
/// at most `RUMMY_INLINE_BODY_BYTES` (`bodyTruncated`, `bodyBytes`); a page that would still pass
/// `RUMMY_MAX_MESSAGE_BYTES` is refused -32007 with `data.limit`, how many of its entries fit.
pub async fn get_entries(call: Call, p: GetEntriesParams) -> Result<Vec<Entry>, Error> {
    let bounds = call.store().bounds();
    let listed = list_entries(&call, &p).await?;
    let listed: Vec<Entry> = listed
        .into_iter()
        .map(|r| {
            bounded::inline_entry(export::wire_entry(r, p.with_body), bounds.inline_body_bytes)
        })
        .collect();
    let sizes = listed
        .iter()
        .map(|e| serde_json::to_vec(e).map(|v| v.len()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(StoreError::Json)?;
    let fit = bounded::fitting(sizes.iter().copied(), bounds.result_bytes());
    if fit < listed.len() {
        let total: usize = sizes.iter().sum::<usize>() + sizes.len() + 1;
        return Err(StoreError::TooMany {
            message: format!(
                "too large: these {} entries take {total} bytes, over the {}-byte message \
                 limit; ask for at most {fit} at a time (limit), or without withBody, and read \
                 long bodies with getBody",
                listed.len(),
                bounds.max_message_bytes
            ),
            limit: fit,
        }
        .into());
    }
    Ok(listed)
}

/// The rows `getEntries` lists: the run's entries, or the project's memory or history.
async fn list_entries(call: &Call, p: &GetEntriesParams) -> Result<Vec<ViewRow>, Error> {
    let state = state_param(p.state.as_deref())?;
    let visibility = visibility_param(p.visibility.as_deref())?;
    let run = call.run(&p.run).await?;
    let p = p.clone();
    let pattern = p
        .pattern
        .as_deref()
        .filter(|x| *x != "*")
        .map(|x| normalize(x).map_err(|e| RpcError::invalid_param("pattern", e)))
        .transpose()?;
    let filter = EntryFilter {
        scheme: p.scheme.clone(),
        state,
        visibility,
        pattern,
        body_filter: p.body_filter.clone(),
    };
    let (limit, offset) = params::bounds(Page {
        limit: p.limit,
        offset: p.offset,
    });
    // The project's memory and history have no views: listed from the project's entries.
    let viewless = filter
        .scheme
        .as_deref()
        .filter(|s| memory::is_viewless(Some(s)))
        .map(str::to_owned);
    let rows = call
        .read(move |c| match viewless {
            Some(scheme) => {
                let mut rows = memory::list(
                    c,
                    run.project_id,
                    &scheme,
                    filter.pattern.as_deref(),
                    filter.body_filter.as_deref(),
                    limit,
                    offset,
                )?;
                rows.retain(|r| {
                    filter.state.is_none_or(|s| r.state == s)
                        && filter.visibility.is_none_or(|v| r.visibility == v)
                });
                Ok(rows)
            }
            None => entries::list(c, run.id, &filter, limit, offset),
        })
        .await?;
    Ok(rows)
}

/// `getBody`: a slice of one entry's body (of those `getEntries` lists), in bytes, at most
/// what fits a message; -32602 for an offset past the end or inside a character, -32004 for a
/// path the run does not have.
pub async fn get_body(call: Call, p: GetBodyParams) -> Result<BodySlice, Error> {
    let bounds = call.store().bounds();
    let run = call.run(&p.run).await?;
    let path = normalize(&p.path).map_err(|e| RpcError::invalid_param("path", e))?;
    let lookup = path.clone();
    let row = call
        .read(move |c| {
            let scheme = scheme_of(&lookup);
            if !memory::is_viewless(scheme.as_deref()) {
                return entries::by_path(c, run.id, &lookup);
            }
            let scheme = scheme.unwrap_or_default();
            let rows = memory::list(c, run.project_id, &scheme, Some(&lookup), None, 1000, 0)?;
            Ok(rows.into_iter().find(|r| r.path == lookup))
        })
        .await?
        .ok_or_else(|| {
            RpcError::new(
                ErrorKind::NotFound,
                format!("no entry {path} in run \"{}\"", p.run),
            )
        })?;
    let offset = usize::try_from(p.offset.unwrap_or(0)).unwrap_or(usize::MAX);
    let room = bounds
        .result_bytes()
        .saturating_sub(row.path.len() * 6 + 128);
    let rest = row.body.get(offset..).unwrap_or_default();
    let most = bounded::json_fit(rest, room);
    let length = p
        .length
        .map_or(most, |l| usize::try_from(l).unwrap_or(usize::MAX).min(most));
    let slice = bounded::slice(&row.body, offset, length).map_err(|e| match e {
        SliceError::PastEnd { size } => RpcError::invalid_param(
            "offset",
            format!("{offset} is past the body's end: it has {size} bytes"),
        ),
        SliceError::InsideCharacter { start } => RpcError::invalid_param(
            "offset",
            format!("{offset} falls inside a character, which starts at byte {start}"),
        ),
    })?;
    let int = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    Ok(BodySlice {
        offset: int(slice.offset),
        body: slice.text.to_owned(),
        body_bytes: int(row.body.len()),
        next: slice.next.map(int),
        path: row.path,
    })
}

/// What `set` answers, by what it did: a run's `{ok, alias}`, an entry's `{ok, path}`, a
/// pattern's `{ok, count}` or a proposal's resolution.
#[derive(Serialize)]
#[serde(untagged)]
pub enum SetAnswer {
    /// On `run://`.
    Run(RunAck),
    /// One entry written.
    Path(PathAck),
    /// Every match of a pattern.
    Count(CountAck),
    /// A pending proposal resolved.
    Resolution(Resolution),
}

/// `set`: on `run://` a run's start, continuation, configuration or cancel; otherwise an entry.
pub async fn set(call: Call, p: SetParams) -> Result<SetAnswer, Error> {
    match p.path.strip_prefix("run://") {
        Some(alias) => {
            let alias = alias.to_owned();
            Ok(SetAnswer::Run(runs::set_run(call, p, &alias).await?))
        }
        None => set_entry(call, p).await,
    }
}

/// `set` on an entry: write, append, body-less state/visibility/attribute change, or the same
/// on every pattern match.
async fn set_entry(call: Call, p: SetParams) -> Result<SetAnswer, Error> {
    let alias = p
        .run
        .clone()
        .ok_or_else(|| RpcError::invalid_param("run", "required for entries other than run://"))?;
    let run = call.run(&alias).await?;
    // A path that does not normalise is refused below, as every entry's is.
    let exact = (!p.pattern && p.body_filter.is_none())
        .then(|| normalize(&p.path).ok())
        .flatten();
    if let Some(path) = exact {
        match scheme_of(&path).as_deref() {
            Some("memory") => return set_memory(&call, p, &run, path).await,
            Some("unknown") if p.body.is_some() => {
                let asked = p
                    .attributes
                    .as_ref()
                    .is_some_and(|a| shared::is_shared(&Value::Object(a.clone())));
                let (run_id, lookup) = (run.id, path.clone());
                let already = call
                    .read(move |c| entries::by_path(c, run_id, &lookup))
                    .await?
                    .is_some_and(|r| shared::is_shared_text(&r.attributes));
                if asked || already {
                    return set_shared_question(&call, p, &run, path).await;
                }
            }
            _ => {}
        }
    }
    let (rr, turn) = (run.run_ref(), run.last_turn().max(0));
    let state = state_param(p.state.as_deref())?;
    if let (Some(state), false) = (state, p.pattern || p.body_filter.is_some()) {
        let decided = Decided {
            state,
            body: p.body.clone(),
            approves: p.approves.clone(),
            edits: p.attributes.is_some() || p.append,
        };
        if let Some(answer) = resolve_if_proposed(&call, &alias, rr, &p.path, decided).await? {
            return Ok(SetAnswer::Resolution(answer));
        }
    }
    if p.approves.is_some() {
        return Err(RpcError::invalid_param(
            "approves",
            "only a pending proposal's resolution (set its path's state) approves a hash",
        )
        .into());
    }
    let visibility = visibility_param(p.visibility.as_deref())?;
    let op = call.op(rr);
    let change = ViewChange {
        state,
        outcome: p.outcome.clone(),
        visibility,
        merge: p.attributes.clone(),
    };
    if p.pattern || p.body_filter.is_some() {
        let selection = choose(&call, rr.run_id, &p.path, p.body_filter.clone()).await?;
        let count = call
            .write(move |c| {
                let rows = selection::rows(c, rr.run_id, &selection)?;
                for row in &rows {
                    match &p.body {
                        Some(body) => {
                            let w = ContentWrite {
                                path: row.path.clone(),
                                body: body.clone(),
                                append: p.append,
                                state,
                                outcome: p.outcome.clone(),
                                visibility,
                                attributes: None,
                            };
                            ops::write_content(c, &op, &w, turn)?;
                        }
                        None => ops::change_view(c, &op, row, &change)?,
                    }
                }
                Ok(rows.len())
            })
            .await?;
        return Ok(SetAnswer::Count(CountAck {
            ok: true,
            count: i64::try_from(count).unwrap_or(i64::MAX),
        }));
    }
    let path = match p.body {
        Some(body) => {
            let answers = answers_of(p.attributes.as_ref())?;
            let w = ContentWrite {
                path: p.path,
                body,
                append: p.append,
                state,
                outcome: p.outcome,
                visibility,
                attributes: p.attributes,
            };
            let (alias, user) = (run.alias.clone(), call.user());
            call.write(move |c| {
                let path = ops::write_content(c, &op, &w, turn)?;
                if let Some(question) = &answers {
                    let by = Provenance {
                        run: &alias,
                        turn,
                        user: user.as_deref(),
                        writer: op.writer,
                    };
                    shared::close(c, rr, question, &path, by, op.at.now)?;
                }
                Ok(path)
            })
            .await?
        }
        None => {
            if change == ViewChange::default() {
                return Err(RpcError::invalid_param(
                    "body",
                    "nothing to change: give a body, state, visibility or attributes",
                )
                .into());
            }
            call.write(move |c| {
                let path = normalize(&p.path).map_err(|e| StoreError::Invalid(e.to_string()))?;
                let row = ops::exact(c, rr.run_id, &path)?;
                ops::change_view(c, &op, &row, &change)?;
                Ok(path)
            })
            .await?
        }
    };
    Ok(SetAnswer::Path(PathAck { ok: true, path }))
}

/// `set` on a `memory://` path: the project's memory, written now with the run, its last turn
/// and the caller's user as provenance; a new content supersedes the one before (kept,
/// archived). A memory has a body and a summary, no state or visibility (no run views it).
async fn set_memory(
    call: &Call,
    p: SetParams,
    run: &Run,
    path: String,
) -> Result<SetAnswer, Error> {
    if p.state.is_some() || p.visibility.is_some() || p.outcome.is_some() {
        return Err(RpcError::invalid_param(
            "path",
            "a memory:// entry has no state or visibility (no run views it): send its body",
        )
        .into());
    }
    let Some(body) = p.body else {
        return Err(
            RpcError::invalid_param("body", "a memory:// entry is written with a body").into(),
        );
    };
    let attributes = p.attributes.unwrap_or_default();
    if let Some(other) = attributes.keys().find(|k| *k != "summary") {
        return Err(RpcError::invalid_param(
            "attributes",
            format!("a memory:// entry takes only a summary, not {other}: its provenance and version are the server's"),
        )
        .into());
    }
    let summary = match attributes.get("summary") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            return Err(RpcError::invalid_param("attributes.summary", "expected a string").into())
        }
    };
    let op = call.op(run.run_ref());
    let (alias, turn, user) = (run.alias.clone(), run.last_turn().max(0), call.user());
    let (project_id, append, written) = (run.project_id, p.append, path.clone());
    call.write(move |c| {
        let body = match (append, memory::current(c, project_id, &written)?) {
            (true, Some(current)) => format!("{}{body}", current.body),
            _ => body,
        };
        ops::size_gate(&op, &written, &body)?;
        let w = MemoryWrite {
            project_id,
            path: &written,
            body: &body,
            summary: summary.as_deref(),
            provenance: Provenance {
                run: &alias,
                turn,
                user: user.as_deref(),
                writer: op.writer,
            },
        };
        memory::remember(c, &w, op.at)
    })
    .await?;
    Ok(SetAnswer::Path(PathAck { ok: true, path }))
}

/// The question an entry's `answers` attribute names (normalised), if it names one.
fn answers_of(
    attributes: Option<&serde_json::Map<String, Value>>,
) -> Result<Option<String>, RpcError> {
    match attributes.and_then(|a| a.get(shared::ANSWERS)) {
        None => Ok(None),
        Some(Value::String(question)) => normalize(question)
            .map(Some)
            .map_err(|e| RpcError::invalid_param("attributes.answers", e)),
        Some(_) => Err(RpcError::invalid_param(
            "attributes.answers",
            "expected the path of the unknown:// it answers",
        )),
    }
}

/// `set` on an `unknown://` with `attributes.shared: true`, or on a question already shared: the
/// project's question, asked (or reworded) for every run of the project with the caller as
/// provenance. It takes a body, a summary and the asking run's visibility.
async fn set_shared_question(
    call: &Call,
    p: SetParams,
    run: &Run,
    path: String,
) -> Result<SetAnswer, Error> {
    if p.state.is_some() || p.outcome.is_some() || p.append {
        return Err(RpcError::invalid_param(
            "path",
            "a shared question is written whole: a body, a summary, a visibility",
        )
        .into());
    }
    let attributes = p.attributes.unwrap_or_default();
    if let Some(other) = attributes
        .keys()
        .find(|k| *k != shared::SHARED && *k != "summary")
    {
        return Err(RpcError::invalid_param(
            "attributes",
            format!("a shared question takes shared and summary, not {other}: who asked it is the server's"),
        )
        .into());
    }
    let summary = attributes
        .get("summary")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let visibility = visibility_param(p.visibility.as_deref())?.unwrap_or(Visibility::Visible);
    let body = p.body.unwrap_or_default();
    let op = call.op(run.run_ref());
    let (rr, alias, turn, user) = (
        run.run_ref(),
        run.alias.clone(),
        run.last_turn().max(0),
        call.user(),
    );
    let asked = path.clone();
    call.write(move |c| {
        let a = Ask {
            run: rr,
            path: &asked,
            body: &body,
            summary: summary.as_deref(),
            visibility,
            loop_id: None,
            provenance: Provenance {
                run: &alias,
                turn,
                user: user.as_deref(),
                writer: op.writer,
            },
        };
        shared::ask(c, &a, op.at)
    })
    .await?;
    Ok(SetAnswer::Path(PathAck { ok: true, path }))
}

/// What a `set {state}` on a proposal's path says: the decision, its body (output, reason or
/// answer), the hash it approves, and whether it would also edit the proposal.
struct Decided {
    /// resolved, cancelled or failed.
    state: State,
    /// The output, the reason or the answer.
    body: Option<String>,
    /// The hash of the proposal the client decided on.
    approves: Option<String>,
    /// Whether it also sends attributes or an append: an edit, which a proposal never takes.
    edits: bool,
}

/// `set {state}` on a pending proposal resolves it: resolved = accept, cancelled = reject,
/// failed = error. `None` when the path holds no proposal (an ordinary entry's state is set;
/// a project file's is refused). A resolution that would also change the proposal's attributes
/// is refused (-32003); one whose `approves` is not the proposal's hash, -32005.
async fn resolve_if_proposed(
    call: &Call,
    alias: &str,
    rr: RunRef,
    path: &str,
    decided: Decided,
) -> Result<Option<Resolution>, Error> {
    let Decided {
        state,
        body,
        approves,
        edits,
    } = decided;
    let path = normalize(path).map_err(|e| RpcError::invalid_param("path", e))?;
    let lookup = path.clone();
    let row = call
        .read(move |c| entries::by_path(c, rr.run_id, &lookup))
        .await?;
    let Some(row) = row else { return Ok(None) };
    let was_proposal = row.proposal().is_some();
    if row.state != State::Proposed {
        if was_proposal {
            return Err(RpcError::new(
                ErrorKind::Conflict,
                format!("{path} was already resolved (it is {})", row.state),
            )
            .into());
        }
        return Ok(None);
    }
    if edits && was_proposal {
        return Err(StoreError::Refused(format!(
            "permission denied: {path} is a pending proposal, fixed once announced: it is \
             resolved with a state and a body (the reason or the answer), never with attributes"
        ))
        .into());
    }
    if let (Some(approved), Some(hash)) = (&approves, row.proposal_hash()) {
        if *approved != hash {
            return Err(RpcError::new(
                ErrorKind::Conflict,
                format!(
                    "{path} is not the proposal you approved: its hash is {hash}, you approved \
                     {approved}; read it again (getEntries) and decide on what it is"
                ),
            )
            .into());
        }
    }
    let decision = match state {
        State::Resolved => ProposalDecision::Accept(body),
        State::Cancelled => ProposalDecision::Reject(body),
        State::Failed => ProposalDecision::Error(body),
        _ => return Err(RpcError::invalid_param(
            "state",
            "a proposal is resolved with resolved (accept), cancelled (reject) or failed (error)",
        )
        .into()),
    };
    let root = std::path::PathBuf::from(&call.project()?.root);
    let run = call.run(alias).await?;
    let resolve = crate::run::Resolve {
        path: path.clone(),
        decision,
        root,
        by: call.user(),
    };
    let resolved = call
        .deps
        .registry
        .send(ResolveProposal { run, resolve })
        .await??;
    // An accepted sh/env: who runs it (a client told `client` runs it and streams it back).
    let command = crate::proposals::awaits_output(&resolved);
    Ok(Some(Resolution {
        ok: true,
        runner: command.then(|| call.svc().config.commands.runner.as_str().to_owned()),
        channels: command.then(|| vec![format!("{path}_1"), format!("{path}_2")]),
        path,
        state: resolved.state.into(),
        outcome: resolved.outcome,
    }))
}

/// `get`: promotes the matching entries (to visible, or the visibility given).
pub async fn get(call: Call, p: GetParams) -> Result<CountAck, Error> {
    let visibility = visibility_param(p.visibility.as_deref())?;
    let op = call.op(call.run(&p.run).await?.run_ref());
    let selection = choose(&call, op.run.run_id, &p.path, p.body_filter).await?;
    let count = call
        .write(move |c| ops::get(c, &op, &selection, visibility))
        .await?;
    Ok(CountAck {
        ok: true,
        count: i64::try_from(count).unwrap_or(i64::MAX),
    })
}

/// `rm`: removes the run's view of every matching entry.
pub async fn rm(call: Call, p: RmParams) -> Result<PathsAck, Error> {
    let op = call.op(call.run(&p.run).await?.run_ref());
    let selection = choose(&call, op.run.run_id, &p.path, p.body_filter).await?;
    let paths = call.write(move |c| ops::rm(c, &op, &selection)).await?;
    Ok(PathsAck { ok: true, paths })
}

/// What a pattern call changes. A body filter is judged here, on a read connection in the
/// blocking pool: never on the store's writer, which every run's writes wait on, nor on the
/// threads that serve other clients.
async fn choose(
    call: &Call,
    run_id: RunId,
    pattern: &str,
    body_filter: Option<String>,
) -> Result<Selection, Error> {
    let Some(filter) = body_filter else {
        return Ok(Selection::pattern(pattern)?);
    };
    let pattern = pattern.to_owned();
    call.read(move |c| selection::choose(c, run_id, &pattern, Some(&filter)))
        .await
}

/// `cp`: copies an entry (runs are copied with a fork, not here).
pub async fn cp(call: Call, p: MoveParams) -> Result<PathAck, Error> {
    copy_or_move(call, p, false).await
}

/// `mv`: moves an entry, or renames a run (`run://old` → `run://new`).
pub async fn mv(call: Call, p: MoveParams) -> Result<PathAck, Error> {
    copy_or_move(call, p, true).await
}

async fn copy_or_move(call: Call, p: MoveParams, moving: bool) -> Result<PathAck, Error> {
    if let (Some(old), Some(new)) = (p.from.strip_prefix("run://"), p.to.strip_prefix("run://")) {
        if !moving {
            return Err(RpcError::invalid_param(
                "from",
                "runs are copied with a fork: set run://<new> with attributes.fork",
            )
            .into());
        }
        return runs::rename(&call, old, new).await;
    }
    let visibility = visibility_param(p.visibility.as_deref())?;
    let op = call.op(call.run(&p.run).await?.run_ref());
    let path = call
        .write(move |c| {
            if moving {
                ops::mv(c, &op, &p.from, &p.to, visibility)
            } else {
                ops::cp(c, &op, &p.from, &p.to, visibility)
            }
        })
        .await?;
    Ok(PathAck { ok: true, path })
}

/// `update`: writes a status report.
pub async fn update(call: Call, p: UpdateParams) -> Result<PathAck, Error> {
    let status = p.status.unwrap_or(102);
    if ![102, 200, 204, 422].contains(&status) {
        return Err(RpcError::invalid_param("status", "expected 102, 200, 204 or 422").into());
    }
    let op = call.op(call.run(&p.run).await?.run_ref());
    let path = call
        .write(move |c| ops::update(c, &op, &p.body, status, p.attributes.as_ref()))
        .await?;
    Ok(PathAck { ok: true, path })
}
