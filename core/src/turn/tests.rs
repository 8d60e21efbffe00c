//! Turn steps against a real in-memory SQLite: dispatch results, assembly of both messages, and run/state pushes.

use super::assemble::{assemble, AssemblyInput};
use super::dispatch::{dispatch, DispatchLimits};
use super::{record, state, TurnRef};
use crate::db::run_migrations;
use crate::entry::State;
use crate::parse::parse_reply;
use crate::run::Mode;
use crate::store::entries::{context_rows, RunRef};
use crate::store::{loops, projects, runs, schemes, turns};
use crate::time::Millis;
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use pretty_assertions::assert_eq;
use serde_json::json;

const NOW: Millis = Millis(1_700_000_000_000);
const LIMITS: DispatchLimits = DispatchLimits {
    token_divisor: 2,
    max_entry_tokens: 512,
};

struct Fixture {
    conn: SqliteConnection,
    run: RunRef,
    loop_id: i32,
}

fn fixture() -> Fixture {
    let mut conn = SqliteConnection::establish(":memory:").unwrap();
    conn.batch_execute("PRAGMA foreign_keys = ON;").unwrap();
    run_migrations(&mut conn).unwrap();
    schemes::seed(&mut conn).unwrap();
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
        &json!({}),
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
        let mut failed: Option<String> = None;
        let mut out = Vec::new();
        for call in parsed.commands.iter().filter(|c| c.name != "think") {
            let d = dispatch(&mut self.conn, t, call, failed.as_deref(), LIMITS, NOW).unwrap();
            if d.failed() && failed.is_none() && d.update.is_none() {
                failed = Some(d.tool.clone());
            }
            out.push((d.path, d.state, d.outcome));
        }
        out
    }

    fn messages(&mut self) -> super::assemble::Messages {
        let rows = context_rows(&mut self.conn, self.run.run_id).unwrap();
        assemble(AssemblyInput {
            rows: &rows,
            instructions: "INSTRUCTIONS",
            mode: Mode::Ask,
        })
    }
}

/// The first turn of a first loop shows only the instructions and the prompt.
#[test]
fn first_turn_shows_instructions_and_prompt() {
    let mut f = fixture();
    let t = f.turn();
    record::prompt(&mut f.conn, t, "What port?", Mode::Ask, 2, NOW).unwrap();
    let m = f.messages();
    assert_eq!(m.system, "INSTRUCTIONS");
    assert_eq!(m.user, "<prompt mode=\"ask\">What port?</prompt>");
}

/// A continuation turn shows the facts in <knowns>, questions in <unknowns> and this loop's results in <performed>.
#[test]
fn continuation_turn_shows_what_was_done() {
    let mut f = fixture();
    let t = f.turn();
    record::prompt(&mut f.conn, t, "What port?", Mode::Ask, 2, NOW).unwrap();
    let results = f.run_reply(
        t,
        r#"<set path="known://port" summary="port,config">8080</set>
<set path="unknown://host">Which host?</set>
<get path="src/main.rs"/>
<set path="known://other">never written</set>
<update status="102">looking</update>"#,
    );
    assert_eq!(
        results,
        vec![
            (
                "set://turn_1/known%3A%2F%2Fport".into(),
                State::Resolved,
                None
            ),
            (
                "set://turn_1/unknown%3A%2F%2Fhost".into(),
                State::Resolved,
                None
            ),
            (
                "get://turn_1/src%2Fmain.rs".into(),
                State::Failed,
                Some("501".into())
            ),
            (
                "set://turn_1/known%3A%2F%2Fother".into(),
                State::Failed,
                Some("aborted".into())
            ),
            ("update://turn_1".into(), State::Resolved, None),
        ]
    );
    f.turn();
    let m = f.messages();
    assert_eq!(
        m.system,
        "INSTRUCTIONS\n\n<knowns>\n<known path=\"known://port\" turn=\"1\" status=\"200\" summary=\"port,config\" visibility=\"visible\" tokens=\"2\">8080</known>\n</knowns>\n\n<unknowns>\n<unknown path=\"unknown://host\" turn=\"1\" visibility=\"visible\" tokens=\"6\">Which host?</unknown>\n</unknowns>"
    );
    assert_eq!(
        m.user,
        "<performed>\n\
<set path=\"known://port\" turn=\"1\" status=\"200\" visibility=\"visible\" tokens=\"16\">known://port written (2 tokens)</set>\n\
<set path=\"unknown://host\" turn=\"1\" status=\"200\" visibility=\"visible\" tokens=\"17\">unknown://host written (6 tokens)</set>\n\
<get path=\"src/main.rs\" turn=\"1\" status=\"501\" state=\"failed\" outcome=\"501\" visibility=\"visible\" tokens=\"30\">get is not available on this server yet; use set and update.</get>\n\
<set path=\"known://other\" turn=\"1\" status=\"409\" state=\"failed\" outcome=\"aborted\" visibility=\"visible\" tokens=\"16\">Aborted — preceding get failed.</set>\n\
<update turn=\"1\" status=\"102\" visibility=\"visible\" tokens=\"4\">looking</update>\n\
</performed>\n<prompt mode=\"ask\">What port?</prompt>"
            .replace("<update turn", "<update path=\"\" turn")
    );
}

/// On a second loop's first turn the first loop's prompt and results move to <previous>.
#[test]
fn second_loop_moves_earlier_work_to_previous() {
    let mut f = fixture();
    let t = f.turn();
    record::prompt(&mut f.conn, t, "What port?", Mode::Ask, 2, NOW).unwrap();
    f.run_reply(t, r#"<update status="200">8080</update>"#);
    let t2 = f.turn();
    record::prompt(&mut f.conn, t2, "And the host?", Mode::Act, 2, NOW).unwrap();
    let m = f.messages();
    assert_eq!(
        m.system,
        "INSTRUCTIONS\n\n<previous>\n<prompt path=\"\" turn=\"1\" status=\"200\" visibility=\"visible\" tokens=\"5\">What port?</prompt>\n<update path=\"\" turn=\"1\" status=\"200\" visibility=\"visible\" tokens=\"2\">8080</update>\n</previous>"
    );
    assert_eq!(m.user, "<prompt mode=\"act\">And the host?</prompt>");
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
            dispatch(&mut f.conn, t, c, None, LIMITS, NOW)
                .unwrap()
                .outcome
        })
        .collect();
    assert_eq!(
        outcomes,
        vec![
            Some("overflow:550".into()),
            Some("validation".into()),
            Some("501".into()),
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
    let first = state::push(&mut f.conn, f.run.run_id, 1, 102, json!(null), NOW).unwrap();
    assert_eq!(first["seq"], json!(1));
    assert_eq!(first["history"].as_array().map(Vec::len), Some(2));
    f.run_reply(t, r#"<update status="200">done</update>"#);
    let second = state::push(&mut f.conn, f.run.run_id, 1, 200, json!({}), NOW).unwrap();
    assert_eq!(second["seq"], json!(2));
    assert_eq!(second["summary"], json!("done"));
    let paths: Vec<&str> = second["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, vec!["update://turn_1"]);
}
