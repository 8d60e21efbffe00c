//! Turn steps against a real in-memory SQLite: dispatch results, assembly of both messages, and run/state pushes.

use super::assemble::{assemble, AssemblyInput};
use super::dispatch::{dispatch, DispatchCtx, DispatchLimits, LoopFlags};
use super::{record, state, TurnRef};
use crate::wire::bounded::Bounds;
use crate::wire::params::HistoryPage;
use pretty_assertions::assert_eq;
use rummy_provider::time::Millis;
use rummy_store::db::Db;
use rummy_store::entries::{context_rows, RunRef, WriteCtx};
use rummy_store::entry::{FailureKind, State};
use rummy_store::flags::RunFlags;
use rummy_store::ids::LoopId;
use rummy_store::run::Mode;
use rummy_store::selection::Judgements;
use rummy_store::{loops, projects, runs, turns};
use rummy_text::parse::parse_reply;
use serde_json::json;

const NOW: Millis = Millis(1_700_000_000_000);
const LIMITS: DispatchLimits = DispatchLimits {
    token_divisor: 2,
    max_entry_tokens: 512,
    bounds: Bounds {
        inline_body_bytes: 256 * 1024,
        max_message_bytes: 4 * 1024 * 1024,
    },
};

fn ctx(t: TurnRef) -> DispatchCtx {
    DispatchCtx {
        t,
        limits: LIMITS,
        mode: Mode::Act,
        flags: LoopFlags::default(),
        command_index: 0,
        search_enabled: false,
        runner: crate::config::ShellRunner::Server,
        client_tools: std::sync::Arc::default(),
        web_domains: None,
    }
}

struct Fixture {
    conn: Db,
    run: RunRef,
    loop_id: LoopId,
}

fn fixture() -> Fixture {
    let mut conn = rummy_store::testing::memory();
    let p = projects::hello(&mut conn, "p", "/p", None, NOW).unwrap();
    let new = runs::NewRun {
        project_id: p.id,
        alias: Some("r".into()),
        model: "m".into(),
        ..Default::default()
    };
    let r = runs::create(&mut conn, &new, NOW).unwrap();
    let l = loops::enqueue(
        &mut conn,
        r.id,
        Mode::Ask,
        "m",
        "What port?",
        &RunFlags::default(),
        NOW,
    )
    .unwrap();
    loops::claim_next(&mut conn, r.id, NOW).unwrap();
    Fixture {
        conn,
        run: RunRef {
            run_id: r.id,
            project_id: p.id,
        },
        loop_id: l.id,
    }
}

impl Fixture {
    fn turn(&mut self) -> TurnRef {
        let t = turns::begin(&mut self.conn, self.run.run_id, self.loop_id, NOW).unwrap();
        TurnRef {
            run: self.run,
            loop_id: self.loop_id,
            turn: t.sequence,
        }
    }

    fn run_reply(&mut self, t: TurnRef, reply: &str) -> Vec<(String, State, Option<String>)> {
        let parsed = parse_reply(reply, 15);
        let mut failed: Option<rummy_text::parse::ToolName> = None;
        let mut out = Vec::new();
        for call in parsed
            .commands
            .iter()
            .filter(|c| c.name != rummy_text::parse::ToolName::Think)
        {
            let d = dispatch(&mut self.conn, &ctx(t), call, failed, NOW).unwrap();
            if d.failed() && failed.is_none() && d.update.is_none() {
                failed = Some(d.tool);
            }
            out.push((d.path, d.state, d.outcome.map(String::from)));
        }
        out
    }

    fn messages(&mut self) -> super::assemble::Messages {
        self.messages_with(false)
    }

    /// The messages of a run that keeps session state (`session_state`) or not.
    fn messages_with(&mut self, session_state: bool) -> super::assemble::Messages {
        let rows = context_rows(&mut self.conn, self.run.run_id).unwrap();
        assemble(AssemblyInput {
            rows: &rows,
            instructions: &crate::tools::instructions(
                &crate::tools::active_tools(Mode::Act, LoopFlags::default(), false),
                15,
                None,
                &crate::tools::CommandReach::Offline,
                &[],
            ),
            mode: Mode::Act,
            budget: None,
            divisor: 2,
            session_state,
        })
    }
}

/// The paths of a `run/state` push's history, in order.
fn history_paths(push: &serde_json::Value) -> Vec<&str> {
    push["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["path"].as_str().unwrap())
        .collect()
}

fn snapshot(m: &super::assemble::Messages) -> String {
    format!("--- system ---\n{}\n--- user ---\n{}\n", m.system, m.user)
}

const TURN_ONE: &str = r#"<set path="known://port" summary="port,config">8080</set>
<set path="unknown://host">Which host?</set>
<get path="src/main.rs"/>
<set path="known://other">never written</set>
<update status="102">looking</update>"#;

/// The first turn of a first loop shows the instructions and the prompt, nothing else.
#[test]
fn first_turn_of_first_loop() {
    let mut f = fixture();
    let t = f.turn();
    record::prompt(
        &mut f.conn,
        t,
        "What port?",
        Mode::Act,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    insta::assert_snapshot!(snapshot(&f.messages()));
}

/// A continuation turn shows facts in <knowns>, questions in <unknowns> and this loop's results in <performed>.
#[test]
fn continuation_turn() {
    let mut f = fixture();
    let t = f.turn();
    record::prompt(
        &mut f.conn,
        t,
        "What port?",
        Mode::Act,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    let results = f.run_reply(t, TURN_ONE);
    assert_eq!(
        results.iter().map(|r| r.1).collect::<Vec<_>>(),
        vec![
            State::Resolved,
            State::Resolved,
            State::Resolved,
            State::Resolved,
            State::Resolved
        ]
    );
    f.turn();
    insta::assert_snapshot!(snapshot(&f.messages()));
}

/// On a second loop's first turn the first loop's prompt and results move to <previous>.
#[test]
fn first_turn_of_second_loop() {
    let mut f = fixture();
    let t = f.turn();
    record::prompt(
        &mut f.conn,
        t,
        "What port?",
        Mode::Act,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    f.run_reply(
        t,
        r#"<set path="known://port">8080</set><update status="200">8080</update>"#,
    );
    let t2 = f.turn();
    record::prompt(
        &mut f.conn,
        t2,
        "And the host?",
        Mode::Ask,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    insta::assert_snapshot!(snapshot(&f.messages()));
}

/// After Turn Demotion the turn's promotions render summarized, and the budget entry explains why.
#[test]
fn turn_after_demotion() {
    let mut f = fixture();
    let t = f.turn();
    record::prompt(
        &mut f.conn,
        t,
        "What port?",
        Mode::Act,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    f.run_reply(t, TURN_ONE);
    let budget = super::budget::Budget::new(Some(2048), None, 0.9, None).unwrap();
    let demoted = super::budget::demote_turn(&mut f.conn, t, NOW).unwrap();
    super::budget::record_overflow(
        &mut f.conn,
        t,
        120,
        &budget,
        demoted,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    f.turn();
    insta::assert_snapshot!(snapshot(&f.messages()));
}

/// Oversized facts, unwritable schemes and missing paths fail with their own codes.
#[test]
fn set_refusals_have_their_codes() {
    let mut f = fixture();
    let t = f.turn();
    let big = "x".repeat(1100);
    let reply = format!(
        "<set path=\"known://big\">{big}</set><set>no path</set><set path=\"prompt://9\">x</set><set path=\"../x\">x</set>"
    );
    let parsed = parse_reply(&reply, 15);
    let outcomes: Vec<Option<String>> = parsed
        .commands
        .iter()
        .map(|c| {
            dispatch(&mut f.conn, &ctx(t), c, None, NOW)
                .unwrap()
                .outcome
                .map(String::from)
        })
        .collect();
    assert_eq!(
        outcomes,
        vec![
            Some("overflow:550".into()),
            Some("validation".into()),
            Some("permission".into()),
            Some("validation".into())
        ]
    );
}

/// Pushes are incremental and numbered: the second push carries only what changed after the first.
#[test]
fn run_state_pushes_are_incremental() {
    let mut f = fixture();
    let t = f.turn();
    f.run_reply(t, r#"<set path="known://a">1</set>"#);
    let first = state::push(
        &mut f.conn,
        f.run.run_id,
        1,
        102,
        json!(null),
        Bounds::default(),
        NOW,
    )
    .unwrap()
    .value();
    assert_eq!(first["seq"], json!(1));
    assert_eq!(first["history"].as_array().map(Vec::len), Some(2));
    f.run_reply(t, r#"<update status="200">done</update>"#);
    let second = state::push(
        &mut f.conn,
        f.run.run_id,
        1,
        200,
        json!({}),
        Bounds::default(),
        NOW,
    )
    .unwrap()
    .value();
    assert_eq!(second["seq"], json!(2));
    assert_eq!(second["summary"], json!("done"));
    assert_eq!(history_paths(&second), vec!["update://turn_1"]);
}

/// What a turn writes after assembly never costs more than the growth bound says, so a
/// context that fits with the bound fits when assembled again.
#[test]
fn growth_since_assembly_bounds_the_reassembled_context() {
    let mut f = fixture();
    let t = f.turn();
    f.run_reply(t, r#"<set path="known://a">short</set>"#);
    let before = f.messages().tokens;
    // Views written from now on get this revision or later.
    let rev = runs::by_id(&mut f.conn, f.run.run_id).unwrap().next_rev;
    let long = "word ".repeat(200);
    f.run_reply(
        t,
        &format!(
            r#"<set path="known://a">{long}</set><set path="known://b" summary="b">{long}</set>"#
        ),
    );
    let after = f.messages().tokens;
    let growth = super::budget::growth_since(&mut f.conn, f.run.run_id, rev).unwrap();
    assert!(after > before, "the context grew: {before} → {after}");
    assert!(
        before + growth >= after,
        "bound {before} + {growth} below reassembled {after}"
    );
    assert_eq!(
        super::budget::growth_since(&mut f.conn, f.run.run_id, rev + 100).unwrap(),
        0
    );
}

/// Project files given to the run at loop start are context, not history: the push after
/// attaching them carries none, and what a turn does to a file is history as its result entry.
#[test]
fn attached_files_are_not_history_until_a_turn_touches_them() {
    let mut f = fixture();
    let scan = crate::files::Scan {
        files: ["a.txt", "b.txt"]
            .iter()
            .map(|p| crate::files::ScannedFile {
                path: (*p).to_owned(),
                body: "text\n".into(),
                hash: rummy_store::entries::hex_sha256("text\n"),
            })
            .collect(),
        ..Default::default()
    };
    let project_id = f.run.project_id;
    crate::files::sync::sync_project(
        &mut f.conn,
        project_id,
        &scan,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    let attached = crate::files::sync::attach(&mut f.conn, f.run, &[], |_, _| false, NOW).unwrap();
    assert_eq!(attached, 2);
    let first = state::push(
        &mut f.conn,
        f.run.run_id,
        1,
        102,
        json!(null),
        Bounds::default(),
        NOW,
    )
    .unwrap()
    .value();
    assert_eq!(first["history"], json!([]));

    let t = f.turn();
    f.run_reply(
        t,
        r#"<set path="a.txt">changed
</set>"#,
    );
    let second = state::push(
        &mut f.conn,
        f.run.run_id,
        1,
        102,
        json!(null),
        Bounds::default(),
        NOW,
    )
    .unwrap()
    .value();
    assert_eq!(history_paths(&second), vec!["set://turn_1/a.txt"]);
}

/// A search the server was asking when it stopped fails on restart (502, "interrupted by
/// restart") rather than streaming forever.
#[test]
fn restart_fails_a_search_in_flight() {
    let mut f = fixture();
    let t = f.turn();
    let call = parse_reply(r#"<search>rust actors</search>"#, 15).commands[0].clone();
    let ctx = DispatchCtx {
        search_enabled: true,
        ..ctx(t)
    };
    let done = dispatch(&mut f.conn, &ctx, &call, None, NOW).unwrap();
    assert_eq!(done.state, State::Streaming);

    let recovered = super::recovery::recover(
        &mut f.conn,
        super::recovery::Scope::All,
        true,
        Bounds::default(),
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    assert_eq!(recovered.interrupted, 1);
    let row = rummy_store::entries::by_path(&mut f.conn, f.run.run_id, &done.path)
        .unwrap()
        .unwrap();
    assert_eq!(
        (row.state, row.outcome.as_deref(), row.body.as_str()),
        (State::Failed, Some("502"), super::recovery::INTERRUPTED)
    );
}

/// Attribute values escape exactly the characters that would end or break a double-quoted
/// value (`&`, `"`, `<`); everything else, multi-byte text included, is kept.
#[test]
fn attribute_values_escape_what_would_break_them() {
    use super::assemble::attr_escape;
    assert_eq!(attr_escape("plain"), "plain");
    assert_eq!(
        attr_escape(r#"a & "b" <c> ünï"#),
        "a &amp; &quot;b&quot; &lt;c> ünï"
    );
    assert_eq!(attr_escape("&&"), "&amp;&amp;");
    assert_eq!(attr_escape(""), "");
}

/// The summary is the body of the latest concluding update (200, 204 or 422): a progress
/// update after it leaves it standing. The prompt's audit entries are never history; a
/// history item carries the entry's fields, its attributes as stored and its body.
#[test]
fn the_summary_is_the_latest_concluding_update_and_audit_is_not_history() {
    let mut f = fixture();
    let t = f.turn();
    f.run_reply(t, r#"<update status="200">first answer</update>"#);
    let sent = [("system", "the system prompt"), ("user", "the user prompt")];
    record::audit_all(
        &mut f.conn,
        t,
        &sent,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    f.run_reply(t, r#"<update status="102">still going</update>"#);
    let pushed = state::push(
        &mut f.conn,
        f.run.run_id,
        1,
        102,
        json!(null),
        Bounds::default(),
        NOW,
    )
    .unwrap()
    .value();
    assert_eq!(pushed["summary"], json!("first answer"));
    assert_eq!(
        pushed["history"][0],
        json!({
            "path": "update://turn_1",
            "tool": "update",
            "state": "resolved",
            "outcome": null,
            "status": 200,
            "visibility": "visible",
            "turn": 1,
            "tokens": 6,
            "attributes": {"status": 200},
            "body": "first answer",
        })
    );
    assert_eq!(
        history_paths(&pushed),
        vec!["update://turn_1", "update://turn_1_2"]
    );
}

/// The keys of a JSON object, sorted.
fn keys(value: &serde_json::Value) -> Vec<String> {
    value
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// The wire names a protocol type reads, sorted, less those `absent` from the value at hand.
fn fields<'de, T: serde::Deserialize<'de>>(absent: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = crate::wire::params::fields_of::<T>()
        .iter()
        .filter(|f| !absent.contains(f))
        .map(|f| (*f).to_owned())
        .collect();
    names.sort_unstable();
    names
}

/// The fields a history item leaves out when it is no proposal and its body is whole.
const UNCUT_ITEM: &[&str] = &[
    "hash",
    "bodyBytes",
    "bodyTruncated",
    "append",
    "offset",
    "proposal",
];

/// What the server writes from rows — a `run/state` push, a `getRun` snapshot and their items —
/// has exactly the fields of the protocol's types, which clients read (`queued` is left out of
/// a push when no loop waits, an item's `hash` when it is no pending proposal), and reads back
/// into them.
#[test]
fn pushes_and_snapshots_have_the_protocol_fields() {
    use crate::fair::admission::{QueueReason, Queued};
    use crate::wire::notifications::RunState;
    use crate::wire::results::{self, RunSnapshot};
    let mut f = fixture();
    let t = f.turn();
    f.run_reply(t, TURN_ONE);
    let push = state::push(
        &mut f.conn,
        f.run.run_id,
        1,
        102,
        json!(null),
        Bounds::default(),
        NOW,
    )
    .unwrap()
    .value();
    assert_eq!(
        keys(&push),
        fields::<RunState>(&["queued", "historyOmitted"])
    );
    assert_eq!(
        keys(&push["history"][0]),
        fields::<results::HistoryItem>(UNCUT_ITEM)
    );
    assert_eq!(keys(&push["unknowns"][0]), fields::<results::Unknown>(&[]));
    assert!(serde_json::from_value::<RunState>(push).is_ok());

    let run = runs::by_id(&mut f.conn, f.run.run_id).unwrap();
    let queued = Queued {
        reason: QueueReason::RunsLimit,
        position: 1,
    };
    let page = HistoryPage {
        limit: 10,
        offset: 0,
    };
    let snapshot = state::snapshot(
        &mut f.conn,
        &run,
        Some(queued),
        Some(0),
        Some(page),
        Bounds::default(),
    )
    .unwrap();
    assert_eq!(keys(&snapshot), fields::<RunSnapshot>(&["missedMore"]));
    assert_eq!(
        keys(&snapshot["history"][0]),
        fields::<results::HistoryItem>(UNCUT_ITEM)
    );
    assert_eq!(keys(&snapshot["queued"]), fields::<results::Queued>(&[]));
    assert_eq!(
        keys(&snapshot["missed"][0]),
        fields::<results::MissedNotification>(&[])
    );
    assert!(serde_json::from_value::<RunSnapshot>(snapshot).is_ok());
    // Without sinceSeq nothing is replayed, and the field is left out.
    // Without a page the whole history goes out, and its total is left out too.
    let plain = state::snapshot(&mut f.conn, &run, None, None, None, Bounds::default()).unwrap();
    assert_eq!(
        keys(&plain),
        fields::<RunSnapshot>(&["historyTotal", "missed", "missedMore"])
    );
}

/// Each dispatched command of a batch as (result path, state, the status and history paths of
/// its `run/state`, if it was pushed).
type BatchSeen = Vec<(String, State, Option<(i64, Vec<String>)>)>;

fn batch_seen(batch: &super::batch::Batch) -> BatchSeen {
    batch
        .dispatched
        .iter()
        .map(|(d, pushed)| {
            let pushed = pushed.as_ref().map(|p| {
                let v = p.value();
                let paths = history_paths(&v).into_iter().map(str::to_owned).collect();
                (v["status"].as_i64().unwrap(), paths)
            });
            (d.path.clone(), d.state, pushed)
        })
        .collect()
}

/// A batch dispatches in order up to the first proposal, which makes the run `proposed`; each
/// command has its own `run/state` but the last, left for the caller; the turn resumed after
/// the proposal dispatches the rest.
#[test]
fn a_batch_stops_at_the_first_proposal_and_the_resumed_turn_goes_on_after_it() {
    use super::batch::Commands;
    use rummy_store::run::RunStatus;
    let mut f = fixture();
    runs::set_status(&mut f.conn, f.run.run_id, RunStatus::Running, NOW).unwrap();
    let t = f.turn();
    let reply = "<think>plan</think><set path=\"known://a\">1</set>\
        <set path=\"src/new.js\">export {};\n</set><set path=\"known://b\">2</set>";
    let parsed = parse_reply(reply, 15);
    let mut commands = Commands::new(&parsed.commands);
    let mut batch = commands
        .dispatch_batch(&mut f.conn, &ctx(t), NOW, &Judgements::default())
        .unwrap();
    assert!(batch.waits());
    assert!(commands.pending());
    let first = "set://turn_1/known%3A%2F%2Fa".to_owned();
    let proposal = "set://turn_1/src%2Fnew.js".to_owned();
    assert_eq!(
        batch_seen(&batch),
        vec![
            (
                first.clone(),
                State::Resolved,
                Some((102, vec!["known://a".to_owned(), first.clone()]))
            ),
            (proposal.clone(), State::Proposed, None),
        ]
    );
    assert_eq!(
        runs::by_id(&mut f.conn, f.run.run_id).unwrap().run_status(),
        RunStatus::Proposed
    );
    batch
        .push_last(&mut f.conn, t, Bounds::default(), NOW)
        .unwrap();
    assert_eq!(
        batch_seen(&batch)[1],
        (
            proposal.clone(),
            State::Proposed,
            Some((202, vec![proposal.clone()]))
        )
    );

    let mut resumed = Commands::resume_at(&parsed.commands, 2, None);
    let rest = resumed
        .dispatch_batch(&mut f.conn, &ctx(t), NOW, &Judgements::default())
        .unwrap();
    assert!(!rest.waits());
    assert!(!resumed.pending());
    assert_eq!(
        batch_seen(&rest),
        vec![(
            "set://turn_1/known%3A%2F%2Fb".to_owned(),
            State::Resolved,
            None
        )]
    );
}

/// The first failed action aborts the rest of the turn, across batches and through a resume;
/// an `update` still applies and is the turn's latest.
#[test]
fn the_first_failed_action_aborts_the_rest_and_the_update_still_applies() {
    use super::batch::Commands;
    let mut f = fixture();
    let t = f.turn();
    let reply = r#"<set path="known://a">1</set><set path="prompt://9">x</set><set path="known://b">2</set><update status="200">done</update>"#;
    let parsed = parse_reply(reply, 15);
    let mut commands = Commands::new(&parsed.commands);
    let batch = commands
        .dispatch_batch(&mut f.conn, &ctx(t), NOW, &Judgements::default())
        .unwrap();
    let states: Vec<(State, Option<String>)> = batch
        .dispatched
        .iter()
        .map(|(d, _)| (d.state, d.outcome.map(String::from)))
        .collect();
    assert_eq!(
        states,
        vec![
            (State::Resolved, None),
            (State::Failed, Some("permission".to_owned())),
            (State::Failed, Some("aborted".to_owned())),
            (State::Resolved, None),
        ]
    );
    assert!(commands.any_failed());
    let done = super::dispatch::UpdateSignal {
        status: 200,
        status_given: true,
        body: "done".to_owned(),
    };
    assert_eq!(commands.update(), Some(&done));

    // A turn resumed at the update after a failed proposal knows both.
    let resumed = Commands::resume_at(&parsed.commands, 4, Some(rummy_text::parse::ToolName::Set));
    assert_eq!(
        (resumed.any_failed(), resumed.update()),
        (true, Some(&done))
    );
}

/// A search waits for its backend: the batch stops at it, and once its answer failed it, the
/// actions after it are aborted.
#[test]
fn a_search_ends_its_batch_and_its_failure_aborts_the_rest() {
    use super::batch::Commands;
    let mut f = fixture();
    let t = f.turn();
    let ctx = DispatchCtx {
        search_enabled: true,
        ..ctx(t)
    };
    let reply = r#"<search>rust actors</search><set path="known://a">1</set>"#;
    let mut commands = Commands::new(&parse_reply(reply, 15).commands);
    let batch = commands
        .dispatch_batch(&mut f.conn, &ctx, NOW, &Judgements::default())
        .unwrap();
    let (searched, _) = batch.dispatched.last().unwrap();
    assert_eq!((searched.state, batch.waits()), (State::Streaming, true));
    assert!(!commands.any_failed());

    let mut failed = searched.clone();
    failed.state = State::Failed;
    commands.note(&failed);
    let rest = commands
        .dispatch_batch(&mut f.conn, &ctx, NOW, &Judgements::default())
        .unwrap();
    let outcomes: Vec<(State, Option<String>)> = rest
        .dispatched
        .iter()
        .map(|(d, _)| (d.state, d.outcome.map(String::from)))
        .collect();
    assert_eq!(outcomes, vec![(State::Failed, Some("aborted".to_owned()))]);
}

/// A run that keeps session state is shown it first in the system message, right after the
/// instructions and apart from the knowns; a run that does not, or whose active skill's
/// `memoryScope` withholds it, is not shown it at all.
#[test]
fn session_state_opens_the_system_message() {
    use crate::session_state::{stored, Section, SessionState};
    let mut f = fixture();
    let t = f.turn();
    f.run_reply(t, TURN_ONE);
    let mut state = SessionState::empty();
    state.set(Section::Title, "Find the port");
    state.set(Section::NextSteps, "- ask for the host");
    stored::write(
        &mut f.conn,
        f.run,
        &state,
        1,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    let instructions = crate::tools::instructions(
        &crate::tools::active_tools(Mode::Act, LoopFlags::default(), false),
        15,
        None,
        &crate::tools::CommandReach::Offline,
        &[],
    );

    let kept = f.messages_with(true).system;
    let off = f.messages_with(false).system;
    let quiet = rummy_store::skill::parse(
        "quiet",
        "---\nmemoryScope: relevant\n---\n",
        &crate::tools::TOOL_ORDER,
    )
    .unwrap();
    rummy_store::skills::add(
        &mut f.conn,
        f.run,
        "quiet",
        &quiet,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    let withheld = f.messages_with(true).system;

    let expected = format!(
        "{instructions}\n\n<session path=\"session://state\" turn=\"1\">\n{}\n\n{}</session>\n\n<knowns>",
        crate::session_state::intro(),
        state.render()
    );
    assert!(kept.starts_with(&expected), "{kept}");
    assert_eq!(kept.matches("session://state").count(), 1);
    assert!(!off.contains("session://state"), "{off}");
    assert!(off.starts_with(&format!("{instructions}\n\n<knowns>")));
    assert!(!withheld.contains("session://state"), "{withheld}");
}

/// A loop's recall is one block just before its prompt, never in `<performed>`; once the loop
/// ended it is archived, so no later loop's `<previous>` shows it, and the loop's history line
/// is written.
#[test]
fn a_loops_recall_is_one_block_before_its_prompt_for_that_loop_only() {
    use crate::memory::history;
    use crate::memory::recall::{record as remember_recall, Recalled};
    use rummy_protocol::results::Recall;
    let mut f = fixture();
    let t = f.turn();
    record::prompt(
        &mut f.conn,
        t,
        "Which host?",
        Mode::Act,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    let recalled = Recalled {
        body: "Recalled:\n<memory path=\"memory://deploy/host\">prod-3</memory>".into(),
        why: Recall {
            path: String::new(),
            loop_number: 0,
            terms: vec!["host".into()],
            candidates: 1,
            reranked: false,
            items: vec![],
        },
    };
    remember_recall(
        &mut f.conn,
        t,
        1,
        &recalled,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    f.run_reply(
        t,
        r#"<set path="known://host">prod-3</set><update status="102">noted</update>"#,
    );
    f.turn();
    let user = f.messages().user;
    let performed = user.split("</performed>").next().unwrap_or_default();
    assert!(!performed.contains("prod-3</memory>"), "{user}");
    assert!(
        user.ends_with("</performed>\n<recall>\nRecalled:\n<memory path=\"memory://deploy/host\">prod-3</memory>\n</recall>\n<prompt mode=\"act\">Which host?</prompt>"),
        "{user}"
    );
    history::loop_ended(
        &mut f.conn,
        f.run,
        "r",
        f.loop_id,
        history::LoopEnding {
            status: 200,
            stop_reason: rummy_store::run::StopReason::Concluded,
            error: None,
            kept: true,
        },
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    let t2 = f.turn();
    record::prompt(
        &mut f.conn,
        t2,
        "And the port?",
        Mode::Act,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    let later = f.messages();
    assert!(!later.system.contains("prod-3</memory>") && !later.user.contains("<recall>"));
    let lines: Vec<String> =
        rummy_store::memory::list(&mut f.conn, f.run.project_id, "history", None, None, 10, 0)
            .unwrap()
            .into_iter()
            .map(|r| r.body)
            .collect();
    assert_eq!(
        lines,
        vec!["r loop 1 (ask): \"What port?\" → concluded: noted".to_owned()]
    );
}

/// A model command with a body filter is never judged in the write: the batch stops before it
/// (the commands before it dispatched); judged off the write over the candidates read, the next
/// batch dispatches it with that judgement; a candidate changed between judgement and write
/// sends it back to be judged; judged anew too often, it fails as a conflict.
#[test]
fn a_body_filter_is_judged_off_the_write_and_checked_in_it() {
    use super::batch::Commands;
    use rummy_store::entries;
    use rummy_store::selection::{self, FilterCall};
    let mut f = fixture();
    let t = f.turn();
    let run_id = f.run.run_id;
    let call = FilterCall {
        pattern: "known://*".to_owned(),
        filter: "//x".to_owned(),
    };
    let reply = r#"<set path="known://a"><x>1</x></set><set path="known://b">plain</set><get path="known://*">//x</get>"#;
    let mut commands = Commands::new(&parse_reply(reply, 15).commands);
    let mut judged = Judgements::default();
    let batch = commands
        .dispatch_batch(&mut f.conn, &ctx(t), NOW, &judged)
        .unwrap();
    assert_eq!(
        (
            batch.dispatched.len(),
            batch.unjudged.clone(),
            batch.waits()
        ),
        (2, Some(call.clone()), true)
    );
    assert!(commands.pending(), "the get is still to dispatch");

    let candidates = selection::candidates(&mut f.conn, run_id, &call).unwrap();
    judged.insert(call.clone(), selection::judge(&call, &candidates));
    let batch = commands
        .dispatch_batch(&mut f.conn, &ctx(t), NOW, &judged)
        .unwrap();
    let (got, _) = &batch.dispatched[0];
    let body = entries::by_path(&mut f.conn, run_id, &got.path)
        .unwrap()
        .unwrap()
        .body;
    let a = entries::by_path(&mut f.conn, run_id, "known://a")
        .unwrap()
        .unwrap();
    assert_eq!(
        (got.state, body.lines().nth(1), batch.unjudged.clone()),
        (
            State::Resolved,
            Some(format!("known://a ({})", a.tokens).as_str()),
            None
        )
    );

    // known://b changes in the same turn: the judgement no longer fits it.
    let reply = r#"<set path="known://b"><x>2</x></set><get path="known://*">//x</get>"#;
    let mut commands = Commands::new(&parse_reply(reply, 15).commands);
    let batch = commands
        .dispatch_batch(&mut f.conn, &ctx(t), NOW, &judged)
        .unwrap();
    assert_eq!(
        (batch.dispatched.len(), batch.unjudged.clone()),
        (1, Some(call.clone()))
    );
    for _ in 0..selection::MAX_REJUDGED {
        assert!(!judged.exhausted(&call));
        judged.insert(call.clone(), selection::judge(&call, &candidates));
    }
    assert!(judged.exhausted(&call));
    judged.give_up(call.clone());
    let batch = commands
        .dispatch_batch(&mut f.conn, &ctx(t), NOW, &judged)
        .unwrap();
    let (failed, _) = &batch.dispatched[0];
    assert_eq!(
        (failed.state, failed.outcome),
        (State::Failed, Some(FailureKind::Conflict))
    );
}

/// A body over the filter limits is refused in the judgement, off the write: the command fails
/// with the refusal, as the model's tool error.
#[test]
fn a_refused_body_fails_the_judged_command() {
    use rummy_store::selection::{self, FilterCall};
    let call = FilterCall {
        pattern: "known://*".to_owned(),
        filter: "//a".to_owned(),
    };
    let deep = format!("{}x{}", "<a>".repeat(300), "</a>".repeat(300));
    let judged = selection::judge(&call, &[(1, "<a>flat</a>".to_owned()), (2, deep)]);
    let refused = judged.apply(Vec::new()).map(|rows| rows.len());
    assert_eq!(
        refused.map_err(|e| e.to_string()),
        Err("body filter: body nested deeper than 256 levels".to_owned())
    );
}

/// A `run/state` body over the inline limit goes out as its first bytes with its size; a push
/// over the message limit sends its largest body empty (still saying its size) instead.
#[test]
fn a_push_bounds_its_bodies_and_its_size() {
    let long = "é".repeat(3000);
    let bounded = |inline, message| {
        let mut f = fixture();
        let t = f.turn();
        f.run_reply(t, &format!("<update status=\"102\">{long}</update>"));
        let bounds = Bounds {
            inline_body_bytes: inline,
            max_message_bytes: message,
        };
        let push = state::push(&mut f.conn, f.run.run_id, 1, 102, json!(null), bounds, NOW)
            .unwrap()
            .value();
        let item = push["history"][0].clone();
        (
            item["body"].as_str().map(str::len),
            item["bodyBytes"].clone(),
            item["bodyTruncated"].clone(),
            push["historyOmitted"].clone(),
        )
    };
    // 1,001 bytes would split an "é": the cut moves back to 1,000.
    assert_eq!(
        bounded(1001, 1 << 20),
        (
            Some(1000),
            json!(6000),
            json!(true),
            serde_json::Value::Null
        )
    );
    assert_eq!(
        bounded(1 << 20, 1 << 20),
        (
            Some(6000),
            serde_json::Value::Null,
            serde_json::Value::Null,
            serde_json::Value::Null
        )
    );
    assert_eq!(
        bounded(1 << 20, 4096),
        (Some(0), json!(6000), json!(true), serde_json::Value::Null)
    );
}

/// A channel appended to in the write goes out as what was appended and where; the others as
/// they are.
#[test]
fn an_appended_channel_is_pushed_as_its_growth() {
    let mut f = fixture();
    let t = f.turn();
    f.run_reply(t, "<update status=\"102\">first</update>");
    let appended = [state::Appended {
        path: "update://turn_1".into(),
        offset: 2,
    }];
    let push = state::push_appended(
        &mut f.conn,
        f.run.run_id,
        1,
        102,
        Bounds::default(),
        &appended,
        NOW,
    )
    .unwrap()
    .value();
    let item = &push["history"][0];
    assert_eq!(
        (
            item["path"].clone(),
            item["body"].clone(),
            item["append"].clone(),
            item["offset"].clone()
        ),
        (
            json!("update://turn_1"),
            json!("rst"),
            json!(true),
            json!(2)
        )
    );
}
