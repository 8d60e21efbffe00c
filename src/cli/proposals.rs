//! `approve` and `reject`: deciding a run's pending proposals by name, and running an accepted
//! command here when the run asks for it.

use super::args::{ApproveArgs, RejectArgs};
use super::exit::Exit;
use super::out::{eprintln_failure, print};
use super::render;
use super::session::{Failure, Intent, Session};
use rummy_client::params::GetEntriesParams;
use rummy_client::results::{HistoryItem, ProposalKind, State};
use rummy_client::Decision;
use serde_json::Value;
use std::io::Write;

/// `approve`: accepts the proposals named (by their paths or the files they act on), or every
/// pending one. A name that matches no pending proposal, or a file that several act on, is
/// refused (4) before anything is accepted.
pub async fn approve(args: ApproveArgs) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Open).await?;
    let pending = pending(&mut session, &args.run).await?;
    let mut paths: Vec<String> = Vec::new();
    if args.paths.is_empty() {
        paths.extend(pending.iter().map(|p| p.path.clone()));
    } else {
        for name in &args.paths {
            let proposal = named(&args.run, name, &pending)?;
            if !paths.contains(&proposal.path) {
                paths.push(proposal.path.clone());
            }
        }
    }
    if paths.is_empty() {
        print(&format!("run {} has no pending proposal", args.run));
        session.close().await;
        return Ok(Exit::Ok);
    }
    let mut exit = Exit::Ok;
    for path in paths {
        // What was listed is what is accepted: the server refuses it (-32005) if it changed.
        let approves = pending
            .iter()
            .find(|p| p.path == path)
            .and_then(|p| p.hash.clone());
        match session
            .client
            .resolve(
                &args.run,
                &path,
                Decision::Accept(None),
                approves.as_deref(),
            )
            .await
        {
            Ok(ack) => {
                let state = ack.state.unwrap_or(State::Resolved);
                let outcome = ack.outcome.map(|o| format!(" ({o})")).unwrap_or_default();
                print(&format!("{path}: {state}{outcome}"));
                if ack.runner.as_deref() == Some("client") {
                    run_here(&mut session, &args.run, &path).await?;
                }
            }
            Err(e) => {
                let failure = Failure::call(&path, e);
                eprintln_failure(&failure);
                exit = failure.exit;
            }
        }
    }
    session.close().await;
    Ok(exit)
}

/// Runs an accepted command this client must run (the server asked it to), streaming it back.
async fn run_here(session: &mut Session, run: &str, path: &str) -> Result<(), Failure> {
    let snapshot = session
        .client
        .get_run(run, None)
        .await
        .map_err(|e| Failure::call("reading the command", e))?;
    let command =
        |i: &&HistoryItem| matches!(i.proposal(), Some(ProposalKind::Sh | ProposalKind::Env));
    let Some(item) = snapshot
        .history
        .iter()
        .filter(command)
        .find(|i| i.path == path)
    else {
        return Ok(());
    };
    let command = render::target(item);
    let mut running = super::runner::Running::start(run, path, &command, &session.root);
    print(&format!("$ {command}"));
    while let Some(out) = running.output.recv().await {
        match out {
            super::runner::Output::Chunk { channel, text } => {
                let params = rummy_client::params::StreamParams {
                    run: run.to_owned(),
                    path: path.to_owned(),
                    channel,
                    chunk: text.clone(),
                };
                let _ = session.client.stream(&params).await;
                let _ = write!(std::io::stdout(), "{text}");
            }
            super::runner::Output::Exited(result) => {
                let (run, path, duration) = (run.to_owned(), path.to_owned(), running.duration());
                let why = match result {
                    Ok(Some(code)) => {
                        print(&format!("exit {code}"));
                        let end = rummy_client::params::StreamCompletedParams {
                            run,
                            path,
                            exit_code: Some(code),
                            duration: Some(duration),
                        };
                        let sent = session.client.stream_completed(&end).await;
                        sent.map_err(|e| Failure::call("recording the command's end", e))?;
                        continue;
                    }
                    Ok(None) => "killed by a signal".to_owned(),
                    Err(why) => why,
                };
                let end = rummy_client::params::StreamAbortedParams {
                    run,
                    path,
                    reason: Some(why),
                    duration: Some(duration),
                };
                let sent = session.client.stream_aborted(&end).await;
                sent.map_err(|e| Failure::call("recording the command's end", e))?;
            }
        }
    }
    Ok(())
}

/// A run's pending proposal, as `approve` and `reject` find it by name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pending {
    /// Its path (`set://turn_2/a.txt`).
    path: String,
    /// What `rummy show` calls it (`edit a.txt`, `sh ls -l`).
    label: String,
    /// The project files it acts on ([`render::proposal_files`]).
    files: Vec<String>,
    /// The hash of what it does, as listed: what accepting it approves.
    hash: Option<String>,
}

impl Pending {
    fn of(
        path: String,
        attributes: &serde_json::Map<String, Value>,
        hash: Option<String>,
    ) -> Pending {
        let kind = match attributes.get("kind").and_then(Value::as_str) {
            Some(kind) => kind.to_owned(),
            None => path.split("://").next().unwrap_or_default().to_owned(),
        };
        Pending {
            label: format!("{kind} {}", render::target_of(&path, attributes)),
            files: render::proposal_files(attributes),
            path,
            hash,
        }
    }
}

/// A run's pending proposals.
async fn pending(session: &mut Session, run: &str) -> Result<Vec<Pending>, Failure> {
    let entries = session
        .client
        .get_entries(&GetEntriesParams {
            run: run.to_owned(),
            state: Some(State::Proposed.as_str().to_owned()),
            with_body: false,
            limit: Some(1000),
            ..GetEntriesParams::default()
        })
        .await
        .map_err(|e| Failure::run_call(&session.project, run, e))?;
    Ok(entries
        .into_iter()
        .filter(|e| e.proposal().is_some())
        .map(|e| Pending::of(e.path, &e.attributes, e.hash))
        .collect())
}

/// The pending proposal of `run` that `name` names: the one whose path it is, else the one
/// acting on the project file it is (the name `rummy show` gives it: `edit a.txt`). None, or
/// several acting on that file, is refused (4), saying what is pending; nothing is resolved.
fn named<'p>(run: &str, name: &str, pending: &'p [Pending]) -> Result<&'p Pending, Failure> {
    if let Some(proposal) = pending.iter().find(|p| p.path == name) {
        return Ok(proposal);
    }
    let acting: Vec<&Pending> = pending
        .iter()
        .filter(|p| p.files.iter().any(|f| f == name))
        .collect();
    let list = |proposals: &[&Pending]| {
        proposals
            .iter()
            .map(|p| format!("{} ({})", p.path, p.label))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match acting.as_slice() {
        [one] => Ok(one),
        [] if pending.is_empty() => Err(Failure::new(
            Exit::Refused,
            format!("run {run} has no pending proposal (nothing is {name}); nothing was resolved"),
        )),
        [] => Err(Failure::new(
            Exit::Refused,
            format!(
                "no pending proposal of run {run} is {name} or acts on it; nothing was resolved"
            ),
        )
        .hint(format!(
            "pending: {}",
            list(&pending.iter().collect::<Vec<_>>())
        ))),
        several => Err(Failure::new(
            Exit::Refused,
            format!(
                "{} pending proposals of run {run} act on {name}; nothing was resolved",
                several.len()
            ),
        )
        .hint(format!("name one by its path: {}", list(several)))),
    }
}

/// `reject`: rejects the proposal named (by its path or the file it acts on), with the reason.
pub async fn reject(args: RejectArgs) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Open).await?;
    let pending = pending(&mut session, &args.run).await?;
    let path = named(&args.run, &args.path, &pending)?.path.clone();
    let ack = session
        .client
        .resolve(
            &args.run,
            &path,
            Decision::Reject(args.reason.clone()),
            None,
        )
        .await
        .map_err(|e| Failure::call(&path, e))?;
    let state = ack.state.unwrap_or(State::Cancelled);
    print(&match (state, ack.outcome.as_deref()) {
        (State::Cancelled, Some(reason)) if reason != "rejected" => {
            format!("{path}: rejected: {reason}")
        }
        (State::Cancelled, _) => format!("{path}: rejected"),
        (other, outcome) => format!(
            "{path}: {other}{}",
            outcome.map(|o| format!(" ({o})")).unwrap_or_default()
        ),
    });
    session.close().await;
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A proposal is named by its own path or by a project file it acts on, exactly; a name
    /// that matches none, or a file several act on, is refused 4 with what is pending.
    #[test]
    fn naming_a_pending_proposal() {
        let proposal = |path: &str, attributes: Value| {
            Pending::of(path.to_owned(), attributes.as_object().unwrap(), None)
        };
        let pending = [
            proposal(
                "set://turn_2/a.txt",
                serde_json::json!({"kind": "edit", "path": "a.txt", "commandIndex": 0}),
            ),
            proposal(
                "sh://turn_2/ls",
                serde_json::json!({"kind": "sh", "command": "ls -l", "commandIndex": 1}),
            ),
            proposal(
                "rm://turn_3/b.txt",
                serde_json::json!({"kind": "rm", "paths": ["b.txt", "c.txt"], "commandIndex": 0}),
            ),
            proposal(
                "mv://turn_3/known%3A%2F%2Fx",
                serde_json::json!({"kind": "mv", "from": "known://x", "to": "c.txt", "commandIndex": 1}),
            ),
        ];
        let path_of = |name: &str| named("r", name, &pending).map(|p| p.path.clone());

        assert_eq!(
            (
                path_of("a.txt").unwrap(),
                path_of("set://turn_2/a.txt").unwrap(),
                path_of("sh://turn_2/ls").unwrap(),
                path_of("b.txt").unwrap(),
            ),
            (
                "set://turn_2/a.txt".to_owned(),
                "set://turn_2/a.txt".to_owned(),
                "sh://turn_2/ls".to_owned(),
                "rm://turn_3/b.txt".to_owned(),
            )
        );
        assert_eq!(pending[0].label, "edit a.txt");
        let refusal = |name: &str| {
            let f = named("r", name, &pending).unwrap_err();
            (f.exit, f.message, f.hint)
        };
        assert_eq!(
            refusal("f.txt"),
            (
                Exit::Refused,
                "no pending proposal of run r is f.txt or acts on it; nothing was resolved"
                    .to_owned(),
                Some(
                    "pending: set://turn_2/a.txt (edit a.txt), sh://turn_2/ls (sh ls -l), \
                     rm://turn_3/b.txt (rm b.txt), mv://turn_3/known%3A%2F%2Fx (mv known://x)"
                        .to_owned()
                )
            )
        );
        for inexact in ["./a.txt", "A.txt", "a", "ls -l", "known://x"] {
            assert_eq!(refusal(inexact).0, Exit::Refused, "{inexact}");
        }
        assert_eq!(
            refusal("c.txt"),
            (
                Exit::Refused,
                "2 pending proposals of run r act on c.txt; nothing was resolved".to_owned(),
                Some(
                    "name one by its path: rm://turn_3/b.txt (rm b.txt), \
                     mv://turn_3/known%3A%2F%2Fx (mv known://x)"
                        .to_owned()
                )
            )
        );
        let none = named("r", "a.txt", &[]).unwrap_err();
        assert_eq!(
            (none.exit, none.message, none.hint),
            (
                Exit::Refused,
                "run r has no pending proposal (nothing is a.txt); nothing was resolved".to_owned(),
                None
            )
        );
    }
}
