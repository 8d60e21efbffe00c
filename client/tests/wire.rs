//! The client's requests read back through the server's own params types: every field the
//! client sends lands in the field the server reads, so the two halves of the wire cannot drift.
#![expect(
    clippy::unwrap_used,
    reason = "a test harness should fail loudly at the first surprise"
)]

use pretty_assertions::assert_eq;
use rummy_client::params as client;
use rummy_client::results::{State, Visibility};
use rummy_core::wire::params as server;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};

/// The client's value as the server reads it.
fn read_back<C: Serialize, S: DeserializeOwned>(value: &C) -> S {
    let wire = serde_json::to_value(value).unwrap();
    serde_json::from_value(wire).unwrap()
}

fn map(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

/// Every method the server serves has a typed call in the client.
#[test]
fn every_catalogue_method_has_a_typed_call() {
    let missing: Vec<&str> = rummy_core::wire::methods::METHODS
        .iter()
        .map(|m| m.name)
        .filter(|name| !rummy_client::METHODS.contains(name))
        .collect();
    assert_eq!(missing, Vec::<&str>::new());
}

/// Absent options are left out of the request, not sent as `null`.
#[test]
fn absent_options_are_not_sent() {
    let params = client::SetParams {
        path: "run://a".into(),
        body: Some("hi".into()),
        ..client::SetParams::default()
    };
    assert_eq!(
        serde_json::to_value(&params).unwrap(),
        json!({"path": "run://a", "body": "hi"})
    );
    assert_eq!(
        serde_json::to_value(client::Page::default()).unwrap(),
        json!({})
    );
}

/// `rummy/hello` and the list pages.
#[test]
fn hello_and_pages_read_back() {
    let hello: server::HelloParams = read_back(&client::HelloParams {
        name: "p".into(),
        project_root: Some("/r".into()),
        config_path: Some("/c".into()),
        client_version: Some("2.0.0".into()),
        token: Some("rummy_abc".into()),
    });
    assert_eq!(hello.token.as_deref(), Some("rummy_abc"));
    assert_eq!(
        (
            hello.name,
            hello.project_root,
            hello.config_path,
            hello.client_version
        ),
        (
            "p".to_owned(),
            Some("/r".to_owned()),
            Some("/c".to_owned()),
            Some("2.0.0".to_owned())
        )
    );
    let page: server::Page = read_back(&client::Page {
        limit: Some(5),
        offset: Some(7),
    });
    assert_eq!((page.limit, page.offset), (Some(5), Some(7)));
}

/// Models, runs and entries.
#[test]
fn model_run_and_entry_queries_read_back() {
    let added: server::AddModelParams = read_back(&client::AddModelParams {
        alias: "a".into(),
        actual: "openai/m".into(),
        context_length: Some(4096),
        fallback: Some("b".into()),
    });
    assert_eq!(
        (
            added.alias,
            added.actual,
            added.context_length,
            added.fallback
        ),
        (
            "a".to_owned(),
            "openai/m".to_owned(),
            Some(4096),
            Some("b".to_owned())
        )
    );
    let removed: server::AliasParams = read_back(&client::AliasParams { alias: "a".into() });
    assert_eq!(removed.alias, "a");
    let run: server::GetRunParams = read_back(&client::GetRunParams {
        run: "r".into(),
        since_seq: Some(3),
        limit: Some(50),
        offset: Some(100),
    });
    assert_eq!(
        (run.run, run.since_seq, run.limit, run.offset),
        ("r".to_owned(), Some(3), Some(50), Some(100))
    );
    let entries: server::GetEntriesParams = read_back(&client::GetEntriesParams {
        run: "r".into(),
        pattern: Some("src/**".into()),
        scheme: Some("file".into()),
        state: Some(State::Proposed),
        visibility: Some(Visibility::Visible),
        body_filter: Some("x".into()),
        with_body: true,
        limit: Some(1),
        offset: Some(2),
    });
    assert_eq!(
        (
            entries.run,
            entries.pattern,
            entries.scheme,
            entries.state,
            entries.visibility,
            entries.body_filter,
            entries.with_body,
            entries.limit,
            entries.offset
        ),
        (
            "r".to_owned(),
            Some("src/**".to_owned()),
            Some("file".to_owned()),
            Some("proposed".to_owned()),
            Some("visible".to_owned()),
            Some("x".to_owned()),
            true,
            Some(1),
            Some(2)
        )
    );
}

/// `set`, with a run start's attributes.
#[test]
fn set_and_run_attributes_read_back() {
    let attributes = client::RunAttributes {
        model: Some("m".into()),
        mode: Some("act".into()),
        persona: Some("p".into()),
        temperature: Some(0.5),
        context_limit: Some(2048),
        no_repo: Some(true),
        no_interaction: Some(true),
        no_web: Some(false),
        no_proposals: Some(true),
        route: Some(true),
        fallback: Some(false),
        session_state: Some(true),
        recall: Some(false),
        recall_rerank: Some(true),
        consolidate: Some(true),
        skills: Some(vec!["review".into()]),
        fork: Some("parent".into()),
        inject: true,
    };
    let set: server::SetParams = read_back(&client::SetParams {
        run: Some("r".into()),
        path: "run://r".into(),
        body: Some("b".into()),
        state: Some(State::Resolved),
        visibility: Some(Visibility::Archived),
        outcome: Some("o".into()),
        attributes: Some(attributes.to_map()),
        append: true,
        pattern: true,
        body_filter: Some("f".into()),
        approves: Some("h".into()),
    });
    assert_eq!(
        (
            set.run,
            set.path,
            set.body,
            set.state,
            set.visibility,
            set.outcome,
            set.append,
            set.pattern,
            set.body_filter,
            set.approves
        ),
        (
            Some("r".to_owned()),
            "run://r".to_owned(),
            Some("b".to_owned()),
            Some("resolved".to_owned()),
            Some("archived".to_owned()),
            Some("o".to_owned()),
            true,
            true,
            Some("f".to_owned()),
            Some("h".to_owned())
        )
    );
    let read: server::RunAttributes =
        serde_json::from_value(Value::Object(set.attributes.unwrap())).unwrap();
    assert_eq!(
        (
            read.model,
            read.mode,
            read.persona,
            read.temperature,
            read.context_limit,
            read.no_repo,
            read.no_interaction,
            read.no_web,
            read.no_proposals,
            read.route,
            read.fork,
            read.inject
        ),
        (
            Some("m".to_owned()),
            Some("act".to_owned()),
            Some("p".to_owned()),
            Some(0.5),
            Some(2048),
            Some(true),
            Some(true),
            Some(false),
            Some(true),
            Some(true),
            Some("parent".to_owned()),
            true
        )
    );
    assert_eq!(
        (read.fallback, read.session_state),
        (Some(false), Some(true))
    );
    assert_eq!(read.recall, Some(false));
    assert_eq!(read.skills, Some(vec!["review".to_owned()]));
    assert_eq!(
        (read.recall_rerank, read.consolidate),
        (Some(true), Some(true))
    );
}

/// `route/check`, with and without a run.
#[test]
fn route_check_reads_back() {
    let with_run: server::RouteCheckParams = read_back(&client::RouteCheckParams {
        text: "why?".into(),
        run: Some("r".into()),
    });
    assert_eq!(
        (with_run.text, with_run.run),
        ("why?".to_owned(), Some("r".to_owned()))
    );
    let bare = client::RouteCheckParams {
        text: "x".into(),
        run: None,
    };
    assert_eq!(serde_json::to_value(&bare).unwrap(), json!({"text": "x"}));
    let read: server::RouteCheckParams = read_back(&bare);
    assert_eq!((read.text, read.run), ("x".to_owned(), None));
}

/// The entry primitives: `get`, `rm`, `cp`/`mv`, `update`.
#[test]
fn entry_primitives_read_back() {
    let get: server::GetParams = read_back(&client::GetParams {
        run: "r".into(),
        path: "known://*".into(),
        body_filter: Some("x".into()),
        visibility: Some(Visibility::Summarized),
    });
    assert_eq!(
        (get.run, get.path, get.body_filter, get.visibility),
        (
            "r".to_owned(),
            "known://*".to_owned(),
            Some("x".to_owned()),
            Some("summarized".to_owned())
        )
    );
    let rm: server::RmParams = read_back(&client::RmParams {
        run: "r".into(),
        path: "known://a".into(),
        body_filter: Some("y".into()),
    });
    assert_eq!(
        (rm.run, rm.path, rm.body_filter),
        ("r".to_owned(), "known://a".to_owned(), Some("y".to_owned()))
    );
    let moved: server::MoveParams = read_back(&client::MoveParams {
        run: "r".into(),
        from: "known://a".into(),
        to: "known://b".into(),
        visibility: Some(Visibility::Visible),
    });
    assert_eq!(
        (moved.run, moved.from, moved.to, moved.visibility),
        (
            "r".to_owned(),
            "known://a".to_owned(),
            "known://b".to_owned(),
            Some("visible".to_owned())
        )
    );
    let update: server::UpdateParams = read_back(&client::UpdateParams {
        run: "r".into(),
        body: "done".into(),
        status: Some(200),
        attributes: Some(map(json!({"k": 1}))),
    });
    assert_eq!(
        (update.run, update.body, update.status, update.attributes),
        (
            "r".to_owned(),
            "done".to_owned(),
            Some(200),
            Some(map(json!({"k": 1})))
        )
    );
}

/// Constraints, skills and personas.
#[test]
fn constraints_skills_and_personas_read_back() {
    let constraint: server::ConstraintParams = read_back(&client::ConstraintParams {
        pattern: "*.lock".into(),
        visibility: Some("ignore".into()),
    });
    assert_eq!(
        (constraint.pattern, constraint.visibility),
        ("*.lock".to_owned(), "ignore".to_owned())
    );
    let skill: server::SkillParams = read_back(&client::SkillParams {
        run: "r".into(),
        name: "s".into(),
    });
    assert_eq!((skill.run, skill.name), ("r".to_owned(), "s".to_owned()));
    let run: server::RunParams = read_back(&client::RunParams { run: "r".into() });
    assert_eq!(run.run, "r");
    let persona: server::PersonaParams = read_back(&client::PersonaParams {
        run: "r".into(),
        name: Some("n".into()),
        text: Some("t".into()),
    });
    assert_eq!(
        (persona.run, persona.name, persona.text),
        ("r".to_owned(), Some("n".to_owned()), Some("t".to_owned()))
    );
}

/// A command's stream: chunks and its end.
#[test]
fn streams_read_back() {
    let chunk: server::StreamParams = read_back(&client::StreamParams {
        run: "r".into(),
        path: "sh://turn_1/ls".into(),
        channel: 2,
        chunk: "out".into(),
    });
    assert_eq!(
        (chunk.run, chunk.path, chunk.channel, chunk.chunk),
        (
            "r".to_owned(),
            "sh://turn_1/ls".to_owned(),
            2,
            "out".to_owned()
        )
    );
    let completed: server::StreamCompletedParams = read_back(&client::StreamEndParams {
        run: "r".into(),
        path: "sh://turn_1/ls".into(),
        exit_code: Some(3),
        duration: Some("1s".into()),
        ..client::StreamEndParams::default()
    });
    assert_eq!(
        (
            completed.run,
            completed.path,
            completed.exit_code,
            completed.duration
        ),
        (
            "r".to_owned(),
            "sh://turn_1/ls".to_owned(),
            Some(3),
            Some("1s".to_owned())
        )
    );
    let aborted: server::StreamAbortedParams = read_back(&client::StreamEndParams {
        run: "r".into(),
        path: "sh://turn_1/ls".into(),
        duration: Some("1s".into()),
        reason: Some("why".into()),
        ..client::StreamEndParams::default()
    });
    assert_eq!(
        (aborted.reason, aborted.duration),
        (Some("why".to_owned()), Some("1s".to_owned()))
    );
    let cancel: server::StreamCancelParams = read_back(&client::StreamEndParams {
        run: "r".into(),
        path: "sh://turn_1/ls".into(),
        reason: Some("why".into()),
        ..client::StreamEndParams::default()
    });
    assert_eq!(cancel.reason, Some("why".to_owned()));
}

/// Tokens: what an admin sends to make and revoke one.
#[test]
fn tokens_read_back() {
    let made: server::TokenCreateParams = read_back(&client::TokenCreateParams {
        user: "alice".into(),
        admin: false,
        projects: vec!["web".into()],
        expires_in_days: Some(90),
    });
    assert_eq!(
        (made.user, made.admin, made.projects, made.expires_in_days),
        ("alice".to_owned(), false, vec!["web".to_owned()], Some(90))
    );
    let revoked: server::TokenRevokeParams = read_back(&client::TokenRevokeParams {
        token: "rummy_0a1b2c3d".into(),
    });
    assert_eq!(revoked.token, "rummy_0a1b2c3d");
}

/// A project's cost ceiling and command network: set, removed (null) or kept (absent).
#[test]
fn project_set_reads_back() {
    let set: server::ProjectSetParams = read_back(&client::ProjectSetParams {
        name: "web".into(),
        cost_ceiling: Some(Some(12.5)),
        period: Some("day".into()),
        command_network: Some(Some(false)),
    });
    assert_eq!(
        (set.name, set.cost_ceiling, set.period, set.command_network),
        (
            "web".to_owned(),
            Some(Some(12.5)),
            Some("day".to_owned()),
            Some(Some(false))
        )
    );
    let removed: server::ProjectSetParams = read_back(&client::ProjectSetParams {
        name: "web".into(),
        cost_ceiling: Some(None),
        period: None,
        command_network: Some(None),
    });
    assert_eq!(
        (removed.cost_ceiling, removed.command_network),
        (Some(None), Some(None))
    );
    let kept: server::ProjectSetParams = read_back(&client::ProjectSetParams {
        name: "web".into(),
        ..client::ProjectSetParams::default()
    });
    assert_eq!((kept.cost_ceiling, kept.command_network), (None, None));
}
