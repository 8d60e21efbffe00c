//! A run's entries: `getEntries`, `set` (on an entry, or every match of a pattern; on a pending
//! proposal's path it resolves it), `get`, `rm`, `cp`, `mv` and `update`.

use super::runs;
use crate::errors::Error;
use crate::registry::ResolveProposal;
use crate::session::call::Call;
use rummy_core::entry::{http_status, State, Visibility};
use rummy_core::path::normalize;
use rummy_core::store::entries::{self, EntryFilter, RunRef};
use rummy_core::store::ops::{self, ContentWrite, ViewChange};
use rummy_core::store::StoreError;
use rummy_core::turn::proposals::Decision as ProposalDecision;
use rummy_core::wire::params::{
    GetEntriesParams, GetParams, MoveParams, Page, RmParams, SetParams, UpdateParams,
};
use rummy_core::wire::results::{CountAck, Entry, PathAck, PathsAck, Resolution, RunAck};
use rummy_core::wire::{ErrorKind, RpcError};
use serde::Serialize;

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

/// `getEntries`: a page of the run's entries, filtered.
pub async fn get_entries(call: Call, p: GetEntriesParams) -> Result<Vec<Entry>, Error> {
    let state = state_param(p.state.as_deref())?;
    let visibility = visibility_param(p.visibility.as_deref())?;
    let run = call.run(&p.run).await?;
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
    let (limit, offset) = Page {
        limit: p.limit,
        offset: p.offset,
    }
    .bounds();
    let rows = call
        .read(move |c| entries::list(c, run.id, &filter, limit, offset))
        .await?;
    Ok(rows
        .into_iter()
        .map(|r| Entry {
            status: i64::from(http_status(r.state, r.outcome.as_deref())),
            attributes: r.attribute_map(),
            path: r.path,
            scheme: r.scheme,
            state: r.state.as_str().to_owned(),
            outcome: r.outcome,
            visibility: r.visibility.as_str().to_owned(),
            turn: i64::from(r.turn),
            tokens: i64::from(r.tokens),
            body: p.with_body.then_some(r.body),
        })
        .collect())
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
    let (rr, turn) = (run.run_ref(), run.last_turn().max(0));
    let state = state_param(p.state.as_deref())?;
    if let (Some(state), false) = (state, p.pattern || p.body_filter.is_some()) {
        if let Some(answer) =
            resolve_if_proposed(&call, &alias, rr, &p.path, state, p.body.clone()).await?
        {
            return Ok(SetAnswer::Resolution(answer));
        }
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
        let count = call
            .write(move |c| {
                let pattern = normalize(&p.path).map_err(|e| StoreError::Invalid(e.to_string()))?;
                let rows = ops::matching(c, rr.run_id, &pattern, p.body_filter.as_deref())?;
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
            let w = ContentWrite {
                path: p.path,
                body,
                append: p.append,
                state,
                outcome: p.outcome,
                visibility,
                attributes: p.attributes,
            };
            call.write(move |c| ops::write_content(c, &op, &w, turn))
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

/// `set {state}` on a pending proposal resolves it: resolved = accept, cancelled = reject,
/// failed = error. `None` when the path holds no proposal (an ordinary entry's state is set).
async fn resolve_if_proposed(
    call: &Call,
    alias: &str,
    rr: RunRef,
    path: &str,
    state: State,
    body: Option<String>,
) -> Result<Option<Resolution>, Error> {
    let path = normalize(path).map_err(|e| RpcError::invalid_param("path", e))?;
    let lookup = path.clone();
    let row = call
        .read(move |c| entries::by_path(c, rr.run_id, &lookup))
        .await?;
    let Some(row) = row else { return Ok(None) };
    let was_proposal = row.attributes().get("commandIndex").is_some();
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
        state: resolved.state.as_str().to_owned(),
        outcome: resolved.outcome,
    }))
}

/// `get`: promotes the matching entries (to visible, or the visibility given).
pub async fn get(call: Call, p: GetParams) -> Result<CountAck, Error> {
    let visibility = visibility_param(p.visibility.as_deref())?;
    let op = call.op(call.run(&p.run).await?.run_ref());
    let count = call
        .write(move |c| ops::get(c, &op, &p.path, p.body_filter.as_deref(), visibility))
        .await?;
    Ok(CountAck {
        ok: true,
        count: i64::try_from(count).unwrap_or(i64::MAX),
    })
}

/// `rm`: removes the run's view of every matching entry.
pub async fn rm(call: Call, p: RmParams) -> Result<PathsAck, Error> {
    let op = call.op(call.run(&p.run).await?.run_ref());
    let paths = call
        .write(move |c| ops::rm(c, &op, &p.path, p.body_filter.as_deref()))
        .await?;
    Ok(PathsAck { ok: true, paths })
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
