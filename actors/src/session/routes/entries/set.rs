//! `set`: on an entry (its body, state, visibility or attributes), on every match of a pattern,
//! on a memory or a shared question's answer; on a pending proposal's path it resolves it.

use super::super::runs;
use super::{choose, state_param, visibility_param};
use crate::errors::Error;
use crate::run::RunCall;
use crate::session::call::Call;
use rummy_core::orchestration::RunCommand;
use rummy_core::turn::proposals::Decision as ProposalDecision;
use rummy_core::wire::params::SetParams;
use rummy_core::wire::results::{CountAck, PathAck, Resolution, RunAck};
use rummy_core::wire::{ErrorKind, RpcError};
use rummy_store::entries::{self, RunRef};
use rummy_store::entry::{State, Visibility};
use rummy_store::memory::{self, MemoryWrite, Provenance};
use rummy_store::ops::{self, ContentWrite, ViewChange};
use rummy_store::runs::Run;
use rummy_store::selection::{self};
use rummy_store::shared::{self, Ask};
use rummy_store::StoreError;
use rummy_text::parse::ToolName;
use rummy_text::path::{normalize, scheme_of};
use serde::Serialize;
use serde_json::Value;

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
    let command = RunCommand::Resolve {
        path: path.clone(),
        decision,
        root,
        by: call.user(),
    };
    let answer = call.deps.registry.send(RunCall { run, command }).await??;
    let resolved = answer.resolved()?;
    // An accepted sh/env: who runs it (a client told `client` runs it and streams it back).
    // An accepted call is made by the client offering its tool, and an accepted fetch by the
    // server, never the accepting client: each names its one channel and no runner.
    let awaits = crate::proposals::awaits_output(&resolved);
    let command = awaits && matches!(resolved.tool, ToolName::Sh | ToolName::Env);
    let channels = match (awaits, command) {
        (true, true) => Some(vec![format!("{path}_1"), format!("{path}_2")]),
        (true, false) => Some(vec![format!("{path}_1")]),
        (false, _) => None,
    };
    Ok(Some(Resolution {
        ok: true,
        runner: command.then(|| call.svc().config.shell.runner.as_str().to_owned()),
        channels,
        path,
        state: resolved.state.into(),
        outcome: resolved.outcome,
    }))
}
