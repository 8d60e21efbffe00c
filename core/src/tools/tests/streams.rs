//! An accepted `sh`/`env` and its output channels: opened visible on accept, marked as awaited, filled, settled by each kind of end, and failed by a restart — whose recovery lets the waiting turn go on.

use super::{fixture, Fixture, NOW};
use crate::config::ShellRunner;
use crate::turn::proposals::{self, Decision, Recorded};
use crate::turn::recovery::{recover, INTERRUPTED};
use crate::turn::streams::{self, Awaited, StreamEnd, StreamWrite};
use pretty_assertions::assert_eq;
use rummy_store::entries::{RunRef, WriteCtx};
use rummy_store::entry::{State, Visibility};
use rummy_store::ids::RunId;
use rummy_store::run::RunStatus;
use rummy_store::runs;
use serde_json::json;

/// Dispatches `<sh>make test</sh>`, accepts it and marks it awaited, as the server does; its path.
fn accepted(f: &mut Fixture) -> String {
    let path = f.one("<sh>make test</sh>").path;
    let run = f.ctx.t.run;
    let proposal = proposals::read(&mut f.conn, run, &path).unwrap();
    let resolution = proposals::apply(&proposal, Decision::Accept(None), std::path::Path::new("/"));
    let recorded = proposals::record(
        &mut f.conn,
        run,
        &proposal,
        &resolution,
        None,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    assert!(matches!(recorded, Recorded::Resolved(_)), "{recorded:?}");
    streams::await_output(&mut f.conn, at(f.ctx.t.run), &path, ShellRunner::Server).unwrap();
    path
}

fn at(run: RunRef) -> StreamWrite {
    StreamWrite {
        run,
        ctx: WriteCtx {
            divisor: 2,
            now: NOW,
        },
    }
}

/// (state, outcome, visibility, body) of an entry.
fn channel(f: &mut Fixture, path: &str) -> (State, Option<String>, Visibility, String) {
    let row = f.entry(path).unwrap();
    (row.state, row.outcome.clone(), row.visibility, row.body)
}

/// Accepting opens two visible streaming channels; the log says who runs it and that its turn
/// waits, until the turn goes on.
#[test]
fn an_accepted_command_opens_visible_channels_and_is_awaited() {
    let mut f = fixture();
    let path = accepted(&mut f);
    let turn = f.ctx.t.turn;

    let open = (
        channel(&mut f, &format!("{path}_1")),
        channel(&mut f, &format!("{path}_2")),
    );
    let log = f.entry(&path).unwrap().attributes();
    let waited = streams::awaited(&mut f.conn, f.ctx.t.run.run_id, turn).unwrap();
    streams::stop_awaiting(&mut f.conn, at(f.ctx.t.run), &path).unwrap();
    let after = streams::awaited(&mut f.conn, f.ctx.t.run.run_id, turn).unwrap();

    let streaming = (State::Streaming, None, Visibility::Visible, String::new());
    assert_eq!(open, (streaming.clone(), streaming));
    assert_eq!(
        log,
        json!({
            "kind": "sh", "command": "make test", "summary": "make test", "runner": "server",
            "commandIndex": 0, "channels": [format!("{path}_1"), format!("{path}_2")],
            "awaiting": true, "resolvedAt": NOW.to_rfc3339(),
        })
    );
    assert_eq!(
        (waited, after),
        (
            Some(Awaited {
                path: path.clone(),
                tool: rummy_text::parse::ToolName::Sh,
                turn,
                command_index: 0
            }),
            None
        )
    );
    assert_eq!(f.entry(&path).unwrap().attributes().get("awaiting"), None);
}

/// Output appended to each channel, then a non-zero exit: both channels fail `exit:3` with
/// their output, and the log says how it ran.
#[test]
fn a_non_zero_exit_fails_the_channels() {
    let mut f = fixture();
    let path = accepted(&mut f);
    streams::append(&mut f.conn, at(f.ctx.t.run), &path, 1, "hi\n").unwrap();
    streams::append(&mut f.conn, at(f.ctx.t.run), &path, 2, "err\n").unwrap();

    let end = StreamEnd::Completed {
        exit_code: 3,
        duration: Some("0.1 s".to_owned()),
    };
    streams::settle(&mut f.conn, at(f.ctx.t.run), &path, &end).unwrap();

    let failed = |body: &str| {
        (
            State::Failed,
            Some("exit:3".to_owned()),
            Visibility::Visible,
            body.to_owned(),
        )
    };
    assert_eq!(
        (
            channel(&mut f, &format!("{path}_1")),
            channel(&mut f, &format!("{path}_2")),
            streams::channel_states(&mut f.conn, f.ctx.t.run.run_id, &path).unwrap(),
        ),
        (
            failed("hi\n"),
            failed("err\n"),
            vec![State::Failed, State::Failed]
        )
    );
    assert_eq!(
        f.body(&path),
        format!(
            "ran 'make test', exit=3 (0.1 s). Output: {path}_1 (2 tokens), {path}_2 (2 tokens)"
        )
    );
}

/// A command that could not finish fails its channels with the reason, and the log says why
/// and after how long.
#[test]
fn a_failed_command_says_why() {
    let mut f = fixture();
    let path = accepted(&mut f);
    let end = StreamEnd::Failed {
        reason: "timed out after 5 s".to_owned(),
        duration: Some("5 s".to_owned()),
    };
    streams::settle(&mut f.conn, at(f.ctx.t.run), &path, &end).unwrap();

    assert_eq!(
        channel(&mut f, &format!("{path}_1")),
        (
            State::Failed,
            Some("timed out after 5 s".to_owned()),
            Visibility::Visible,
            String::new()
        )
    );
    assert_eq!(
        f.body(&path),
        format!("failed 'make test' (timed out after 5 s, after 5 s). Output: {path}_1 (empty), {path}_2 (empty)")
    );
}

/// At a restart every channel still streaming fails "interrupted by restart", and a turn that
/// waited for that command's output is listed to go on after it rather than being failed.
#[test]
fn a_restart_fails_the_channels_and_the_turn_goes_on() {
    let mut f = fixture();
    let path = accepted(&mut f);
    let run_id = f.ctx.t.run.run_id;
    runs::set_status(&mut f.conn, run_id, RunStatus::Running, NOW).unwrap();
    streams::append(&mut f.conn, at(f.ctx.t.run), &path, 1, "partial").unwrap();

    let report = recover(
        &mut f.conn,
        crate::turn::recovery::Scope::All,
        true,
        crate::wire::bounded::Bounds::default(),
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();

    let resumed: Vec<(RunId, Awaited)> = report
        .to_resume
        .iter()
        .map(|(run, _, _, awaited)| (run.id, awaited.clone()))
        .collect();
    assert_eq!(
        (report.interrupted, resumed),
        (
            0,
            vec![(
                run_id,
                Awaited {
                    path: path.clone(),
                    tool: rummy_text::parse::ToolName::Sh,
                    turn: f.ctx.t.turn,
                    command_index: 0
                }
            )]
        )
    );
    assert_eq!(
        channel(&mut f, &format!("{path}_1")),
        (
            State::Failed,
            Some(INTERRUPTED.to_owned()),
            Visibility::Visible,
            "partial".to_owned()
        )
    );
    assert_eq!(
        runs::by_id(&mut f.conn, run_id).unwrap().run_status(),
        RunStatus::Running
    );
    assert_eq!(
        report.pushed.len(),
        1,
        "clients hear of the failed channels"
    );

    // A second restart before the turn went on finds nothing streaming, and still resumes it.
    let again = recover(
        &mut f.conn,
        crate::turn::recovery::Scope::All,
        true,
        crate::wire::bounded::Bounds::default(),
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    assert_eq!((again.to_resume.len(), again.pushed.len()), (1, 0));
}

/// Turn Demotion summarizes a command's output channels even when the command failed (its
/// output is no short message), while a rejected proposal keeps its reason in view.
#[test]
fn turn_demotion_takes_failed_output_but_not_a_rejection() {
    let mut f = fixture();
    let path = accepted(&mut f);
    streams::append(&mut f.conn, at(f.ctx.t.run), &path, 1, &"x".repeat(400)).unwrap();
    let end = StreamEnd::Completed {
        exit_code: 1,
        duration: None,
    };
    streams::settle(&mut f.conn, at(f.ctx.t.run), &path, &end).unwrap();
    let rejected = f.one("<sh>rm -rf build</sh>").path;
    let proposal = proposals::read(&mut f.conn, f.ctx.t.run, &rejected).unwrap();
    let resolution = proposals::apply(
        &proposal,
        Decision::Reject(Some("not now".to_owned())),
        std::path::Path::new("/"),
    );
    proposals::record(
        &mut f.conn,
        f.ctx.t.run,
        &proposal,
        &resolution,
        None,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();

    crate::turn::budget::demote_turn(&mut f.conn, f.ctx.t, NOW).unwrap();

    let visibility = |f: &mut Fixture, p: &str| f.entry(p).unwrap().visibility;
    assert_eq!(
        [
            visibility(&mut f, &format!("{path}_1")),
            visibility(&mut f, &format!("{path}_2")),
            visibility(&mut f, &rejected),
        ],
        [
            Visibility::Summarized,
            Visibility::Summarized,
            Visibility::Visible
        ]
    );
}
