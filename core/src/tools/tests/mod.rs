//! Tool dispatch against a real in-memory SQLite: every tool's results, refusals, proposals (and their resolution) and views, and the docs.

mod calls;
mod changes;
mod docs;
mod entries;
mod get;
mod lifecycle;
mod policy;
mod proposals;
mod resolution;
mod search;
mod set;
mod streams;

use crate::turn::dispatch::{dispatch, DispatchCtx, DispatchLimits, Dispatched, LoopFlags};
use crate::turn::views::project;
use crate::turn::TurnRef;
use rummy_provider::time::Millis;
use rummy_store::db::Db;
use rummy_store::entries::{self as store, EntryWrite, RunRef, ViewRow, WriteCtx};
use rummy_store::entry::{State, Visibility, Writer};
use rummy_store::flags::RunFlags;
use rummy_store::run::Mode;
use rummy_store::{loops, projects, runs, turns};
use rummy_text::parse::{parse_reply, ToolCall};
use serde_json::{json, Value};

/// The time every test writes at.
pub const NOW: Millis = Millis(1_700_000_000_000);

/// `src/util.js` of every fixture.
pub const UTIL: &str = "export const id = (x) => x;\n";

/// The app file every fixture starts with.
pub const APP: &str = "const port = 3000;\nconst host = \"localhost\";\nlisten(port, host);\n";

/// A test run with one turn in progress, some facts, a question, a prompt and two project files.
pub struct Fixture {
    /// The writing connection.
    pub conn: Db,
    /// What dispatch is given.
    pub ctx: DispatchCtx,
}

/// One dispatched command as the model will read it: result path, state, outcome and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The result entry's path.
    pub path: String,
    /// Its state.
    pub state: State,
    /// Its outcome.
    pub outcome: Option<String>,
    /// Its body.
    pub body: String,
}

/// A `Seen` from literals.
pub fn seen(path: &str, state: State, outcome: Option<&str>, body: &str) -> Seen {
    Seen {
        path: path.to_owned(),
        state,
        outcome: outcome.map(str::to_owned),
        body: body.to_owned(),
    }
}

/// A fixture in act mode with no flags and no search backend.
pub fn fixture() -> Fixture {
    fixture_with(Mode::Act, LoopFlags::default(), false)
}

/// A fixture in `mode` with `flags`, with or without a search backend.
pub fn fixture_with(mode: Mode, flags: LoopFlags, search_enabled: bool) -> Fixture {
    let mut conn = rummy_store::testing::memory();
    let p = projects::hello(&mut conn, "p", "/p", None, NOW).unwrap();
    let new = runs::NewRun {
        project_id: p.id,
        alias: Some("r".into()),
        model: "m".into(),
        flags: RunFlags::default(),
        ..Default::default()
    };
    let r = runs::create(&mut conn, &new, NOW).unwrap();
    let l = loops::enqueue(
        &mut conn,
        r.id,
        mode,
        "m",
        "What port?",
        &RunFlags::default(),
        NOW,
    )
    .unwrap();
    loops::claim_next(&mut conn, r.id, NOW).unwrap();
    let turn = turns::begin(&mut conn, r.id, l.id, NOW).unwrap();
    let t = TurnRef {
        run: RunRef {
            run_id: r.id,
            project_id: p.id,
        },
        loop_id: l.id,
        turn: turn.sequence,
    };
    let ctx = DispatchCtx {
        t,
        limits: DispatchLimits {
            token_divisor: 2,
            max_entry_tokens: 50,
            bounds: crate::wire::bounded::Bounds::default(),
        },
        mode,
        flags,
        command_index: 0,
        search_enabled,
        runner: crate::config::ShellRunner::Server,
        client_tools: std::sync::Arc::default(),
        web_domains: None,
    };
    let mut f = Fixture { conn, ctx };
    f.put(
        "prompt://1",
        "What port?",
        Writer::Plugin,
        Visibility::Visible,
        json!({"mode": "act"}),
    );
    f.put(
        "src/app.js",
        APP,
        Writer::System,
        Visibility::Summarized,
        json!({}),
    );
    f.put(
        "src/util.js",
        UTIL,
        Writer::System,
        Visibility::Summarized,
        json!({}),
    );
    f.put(
        "known://port",
        "The server listens on 3000.",
        Writer::Model,
        Visibility::Visible,
        json!({"summary": "port"}),
    );
    f.put(
        "known://auth/flow",
        "OAuth2 with PKCE.",
        Writer::Model,
        Visibility::Summarized,
        json!({"summary": "auth"}),
    );
    f.put(
        "unknown://host",
        "Which host?",
        Writer::Model,
        Visibility::Visible,
        json!({}),
    );
    f
}

impl Fixture {
    /// Writes an entry as `writer` at turn 0.
    pub fn put(
        &mut self,
        path: &str,
        body: &str,
        writer: Writer,
        visibility: Visibility,
        attributes: Value,
    ) {
        store::write(
            &mut self.conn,
            &EntryWrite {
                run: self.ctx.t.run,
                path,
                body,
                attributes: &attributes,
                state: State::Resolved,
                outcome: None,
                visibility,
                loop_id: None,
                turn: 0,
                writer,
            },
            WriteCtx {
                divisor: 2,
                now: NOW,
            },
        )
        .unwrap();
    }

    /// The run's view of an entry.
    pub fn entry(&mut self, path: &str) -> Option<ViewRow> {
        store::by_path(&mut self.conn, self.ctx.t.run.run_id, path).unwrap()
    }

    /// An entry's body (panics when it is missing).
    pub fn body(&mut self, path: &str) -> String {
        self.entry(path)
            .unwrap_or_else(|| panic!("{path} missing"))
            .body
    }

    /// Dispatches one command, not aborted.
    pub fn call(&mut self, call: &ToolCall) -> Dispatched {
        dispatch(&mut self.conn, &self.ctx, call, None, NOW).unwrap()
    }

    /// Parses a reply and dispatches its commands in order, aborting after the first failed action.
    pub fn reply(&mut self, reply: &str) -> Vec<Seen> {
        let parsed = parse_reply(reply, 15);
        let mut failed: Option<rummy_text::parse::ToolName> = None;
        let mut out = Vec::new();
        for (index, call) in parsed.commands.iter().enumerate() {
            let ctx = DispatchCtx {
                command_index: index,
                ..self.ctx.clone()
            };
            let d = dispatch(&mut self.conn, &ctx, call, failed, NOW).unwrap();
            if d.failed() && failed.is_none() && d.update.is_none() {
                failed = Some(d.tool);
            }
            if d.path.is_empty() {
                continue;
            }
            out.push(self.seen(&d));
        }
        out
    }

    /// Dispatches the one command of `reply` and returns what it recorded.
    pub fn one(&mut self, reply: &str) -> Seen {
        let mut all = self.reply(reply);
        assert_eq!(all.len(), 1, "{reply}: {all:?}");
        all.remove(0)
    }

    /// Dispatches the one command of `reply` and returns its result entry's attributes.
    pub fn attributes(&mut self, reply: &str) -> (Seen, Value) {
        let seen = self.one(reply);
        let row = self.entry(&seen.path).unwrap();
        (seen, row.attributes())
    }

    /// What the model reads of a dispatched result.
    pub fn seen(&mut self, d: &Dispatched) -> Seen {
        let row = self.entry(&d.path).unwrap();
        assert_eq!(
            (row.state, row.outcome.clone()),
            (d.state, d.outcome.map(String::from))
        );
        Seen {
            path: d.path.clone(),
            state: d.state,
            outcome: d.outcome.map(String::from),
            body: row.body,
        }
    }

    /// The visible projection of an entry.
    pub fn view(&mut self, path: &str) -> String {
        project(&self.entry(path).unwrap())
    }
}
