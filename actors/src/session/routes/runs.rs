//! Runs: `getRuns`, `getRun`, and `set` / `mv` on `run://` paths — start, continue, inject,
//! configure, cancel and rename, each handed to the run registry (a call on an existing run as
//! one `RunCommand`).

use crate::errors::Error;
use crate::registry::{validate_settings, ConfigureRun, StartRun};
use crate::run::RunCall;
use crate::session::call::{Call, Json};
use rummy_core::orchestration::RunCommand;
use rummy_core::turn::state::snapshot;
use rummy_core::wire::jsonrpc::params_at;
use rummy_core::wire::params::{self, GetRunParams, Page, RunAttributes, SetParams};
use rummy_core::wire::results::{PathAck, RunAck, RunSummary};
use rummy_core::wire::{ErrorKind, RpcError};
use rummy_provider::time::Millis;
use rummy_store::ids::ProjectId;
use rummy_store::run::RunStatus;
use rummy_store::{entries, runs, turns};
use serde_json::Value;

/// `getRuns`: a page of the project's runs, newest first.
pub async fn get_runs(call: Call, page: Page) -> Result<Vec<RunSummary>, Error> {
    let project_id = call.project()?.project_id;
    let (limit, offset) = params::bounds(page);
    let list = call
        .read(move |c| {
            let runs = runs::list(c, project_id, limit, offset)?;
            runs.into_iter()
                .map(|r| {
                    let summary = entries::latest_summary(c, r.id)?;
                    let totals = turns::totals(c, r.id)?;
                    Ok((summary, totals, r))
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .await?;
    Ok(list
        .into_iter()
        .map(|(summary, totals, r)| RunSummary {
            turn: i64::from(r.last_turn()),
            created: Some(Millis(r.created_at).to_rfc3339()),
            run: r.alias,
            status: i64::from(r.status),
            summary: Some(summary),
            model: Some(r.model),
            tokens: i64::from(totals.total_tokens),
            cost: totals.cost,
        })
        .collect())
}

/// `getRun`: the run's whole state; with `sinceSeq`, the pushes it made after that seq; with
/// `limit`/`offset`, a page of its history (counted from the newest entry).
pub async fn get_run(call: Call, p: GetRunParams) -> Result<Json, Error> {
    let run = call.run(&p.run).await?;
    // A run at 100 may wait for a place: admission knows why and where.
    let admission = &call.svc().admission;
    let held = if run.status == RunStatus::Queued.code() && admission.applies(run.project_id) {
        admission.queued(run.id).await
    } else {
        None
    };
    let (since, page) = (p.since_seq, params::history_page(&p));
    let bounds = call.store().bounds();
    Ok(Json(
        call.read(move |c| snapshot(c, &run, held, since, page, bounds))
            .await?,
    ))
}

/// `set` on `run://<alias>` (`run://` alone: the server names it): start, continue (with
/// attributes: configure first), inject, configure or cancel the run.
pub async fn set_run(call: Call, p: SetParams, alias: &str) -> Result<RunAck, Error> {
    let project_id = call.project()?.project_id;
    refuse_entry_fields(&p, alias)?;
    let attributes: RunAttributes = match &p.attributes {
        Some(map) => params_at(&Value::Object(map.clone()), "attributes.")?,
        None => RunAttributes::default(),
    };
    let existing = if alias.is_empty() {
        None
    } else {
        Some(call.run(alias).await)
    };
    let registry = &call.deps.registry;
    match (p.state.as_deref(), p.body) {
        (Some("cancelled"), _) => {
            let run = existing
                .ok_or_else(|| RpcError::invalid_param("path", "name the run to cancel"))??;
            let command = RunCommand::Cancel;
            registry.send(RunCall { run, command }).await??.done()?;
            Ok(ack(alias, None))
        }
        (Some(other), _) => Err(RpcError::invalid_param(
            "state",
            format!("a run accepts only state \"cancelled\", not \"{other}\""),
        )
        .into()),
        (None, Some(body)) => match existing {
            Some(Ok(run)) => {
                let alias = run.alias.clone();
                if attributes.fork.is_some() {
                    return Err(RpcError::new(
                        ErrorKind::Conflict,
                        format!("run \"{alias}\" already exists; fork into a new alias"),
                    )
                    .into());
                }
                let settings = settings_in(p.attributes.as_ref());
                if attributes.inject {
                    if let Some(field) = settings.first() {
                        return Err(RpcError::invalid_param(
                            &format!("attributes.{field}"),
                            "an inject joins the active loop as it runs; configure the run (or continue it without inject) to change its settings",
                        ).into());
                    }
                    let command = RunCommand::Inject { prompt: body };
                    let answer = registry.send(RunCall { run, command }).await??;
                    let injected = answer.folded()?;
                    return Ok(ack(&alias, Some(injected)));
                }
                // A continuation runs in the run's mode and settings; one that names some
                // configures the run first, so they stay for the loops after it (docs/protocol.md).
                // Named skills are read and checked before anything changes.
                let names = attributes.skills.clone().unwrap_or_default();
                let skills = super::skills::load_all(&call, &names).await?;
                let run = if settings.is_empty() {
                    run
                } else {
                    validate_settings(&attributes)?;
                    registry.send(ConfigureRun { run, attributes }).await??
                };
                // The skills it names are the run's before the loop is queued.
                if !skills.is_empty() {
                    let (rr, divisor) = (run.run_ref(), call.divisor());
                    call.write(move |c| {
                        for (name, skill) in &skills {
                            let at = crate::clock::write_ctx(divisor);
                            rummy_store::skills::add(c, rr, name, skill, at)?;
                        }
                        Ok(())
                    })
                    .await?;
                }
                let command = RunCommand::Continue { prompt: body };
                registry.send(RunCall { run, command }).await??.done()?;
                Ok(ack(&alias, None))
            }
            // An inject joins a run that exists: one into no run is not a start.
            Some(Err(e @ Error::Rpc(_))) if attributes.inject && not_found(&e) => Err(e),
            Some(Err(Error::Rpc(e))) if e.kind == ErrorKind::NotFound => {
                start(&call, project_id, alias, body, attributes).await
            }
            Some(Err(e)) => Err(e),
            None => start(&call, project_id, alias, body, attributes).await,
        },
        (None, None) if p.attributes.is_some() => {
            let run = existing
                .ok_or_else(|| RpcError::invalid_param("path", "name the run to configure"))??;
            let alias = run.alias.clone();
            registry.send(ConfigureRun { run, attributes }).await??;
            Ok(ack(&alias, None))
        }
        (None, None) => Err(RpcError::invalid_param(
            "body",
            "a run:// set needs a body (prompt), attributes (configure) or state \"cancelled\"",
        )
        .into()),
    }
}

/// Whether `e` says a run was not found.
fn not_found(e: &Error) -> bool {
    matches!(e, Error::Rpc(e) if e.kind == ErrorKind::NotFound)
}

/// Starts a run named `alias` (the server names it when empty) with its first prompt.
async fn start(
    call: &Call,
    project_id: ProjectId,
    alias: &str,
    prompt: String,
    attributes: RunAttributes,
) -> Result<RunAck, Error> {
    let names = attributes.skills.clone().unwrap_or_default();
    let skills = super::skills::load_all(call, &names).await?;
    let start = StartRun {
        project_id,
        alias: (!alias.is_empty()).then(|| alias.to_owned()),
        prompt,
        attributes,
        user: call.user(),
        skills,
    };
    let alias = call.deps.registry.send(start).await??;
    Ok(ack(&alias, None))
}

/// `set` on `run://`'s answer.
fn ack(alias: &str, injected: Option<bool>) -> RunAck {
    RunAck {
        ok: true,
        alias: alias.to_owned(),
        injected,
    }
}

/// `mv run://<old> run://<new>`: renames the run.
pub async fn rename(call: &Call, old: &str, new: &str) -> Result<PathAck, Error> {
    let run = call.run(old).await?;
    let alias = new.to_owned();
    let command = RunCommand::Rename {
        alias: alias.clone(),
    };
    let answer = call.deps.registry.send(RunCall { run, command }).await??;
    answer.done()?;
    Ok(PathAck {
        ok: true,
        path: format!("run://{alias}"),
    })
}

/// The run settings a `set` on `run://` names: its attributes other than `inject`.
fn settings_in(attributes: Option<&serde_json::Map<String, Value>>) -> Vec<&str> {
    attributes
        .into_iter()
        .flat_map(|map| map.keys())
        .map(String::as_str)
        .filter(|key| !matches!(*key, "inject" | "skills"))
        .collect()
}

/// Fields of `set` that concern entries, refused on `run://` paths rather than ignored; `run`
/// is accepted there only when it names the same run.
fn refuse_entry_fields(p: &SetParams, alias: &str) -> Result<(), RpcError> {
    let given = [
        ("visibility", p.visibility.is_some()),
        ("outcome", p.outcome.is_some()),
        ("append", p.append),
        ("pattern", p.pattern),
        ("bodyFilter", p.body_filter.is_some()),
    ];
    if let Some((field, _)) = given.iter().find(|(_, given)| *given) {
        return Err(RpcError::invalid_param(
            field,
            "not used on run:// paths (a run is started, continued, configured or cancelled)",
        ));
    }
    match &p.run {
        Some(run) if run != alias => Err(RpcError::invalid_param(
            "run",
            format!("names run \"{run}\" but the path is run://{alias}"),
        )),
        _ => Ok(()),
    }
}
