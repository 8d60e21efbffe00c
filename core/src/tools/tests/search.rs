//! `search`: refused without a backend (see `policy`), streaming with one, and the executor's hits recorded.

use super::{fixture_with, seen, NOW};
use crate::tools::search::{record_failure, record_results, request_of, SearchHit};
use crate::turn::dispatch::LoopFlags;
use pretty_assertions::assert_eq;
use rummy_store::entries::WriteCtx;
use rummy_store::entry::State::{Failed, Resolved, Streaming};
use rummy_store::entry::Visibility;
use rummy_store::run::Mode;
use serde_json::json;

const NO_FLAGS: LoopFlags = LoopFlags {
    client_tools: false,
    no_repo: false,
    no_interaction: false,
    no_web: false,
    no_proposals: false,
    skill_tools: crate::tools::context::SkillTools::ALL,
};

/// With a backend, search streams; the executor's hits then become summarized page entries and a result list.
#[test]
fn search_streams_and_records_results() {
    let mut f = fixture_with(Mode::Act, NO_FLAGS, true);
    let (result, attributes) = f.attributes(r#"<search results="5">rust wal</search>"#);
    assert_eq!(
        result,
        seen("search://turn_1/rust%20wal", Streaming, None, "")
    );
    assert_eq!(
        attributes,
        json!({"kind": "search", "path": "rust wal", "query": "rust wal", "results": 5})
    );
    let hits = [
        SearchHit {
            url: "https://sqlite.org/wal.html".into(),
            title: "Write-Ahead Logging".into(),
            snippet: "WAL mode.".into(),
        },
        SearchHit {
            url: "ftp://nope".into(),
            title: "x".into(),
            snippet: "y".into(),
        },
        SearchHit {
            url: "http://a.org/b c".into(),
            title: "B".into(),
            snippet: "C".into(),
        },
    ];
    let streaming = f.entry(&result.path).unwrap();
    assert_eq!(request_of(&streaming), ("rust wal".to_owned(), 5));
    let t = f.ctx.t;
    let at = WriteCtx {
        divisor: f.ctx.limits.token_divisor,
        now: NOW,
    };
    record_results(&mut f.conn, t, &result.path, &hits, at).unwrap();
    let row = f.entry(&result.path).unwrap();
    assert_eq!(
        (row.state, row.body.as_str()),
        (
            Resolved,
            "2 results for \"rust wal\"\nhttps://sqlite.org/wal.html\nhttp://a.org/b%20c"
        )
    );
    let page = f.entry("https://sqlite.org/wal.html").unwrap();
    assert_eq!(
        (page.body.as_str(), page.visibility, page.attributes()),
        (
            "# Write-Ahead Logging\n\nWAL mode.",
            Visibility::Summarized,
            json!({"title": "Write-Ahead Logging", "snippet": "WAL mode.", "query": "rust wal", "summary": "Write-Ahead Logging"})
        )
    );
    assert_eq!(crate::turn::views::project(&page), "WAL mode.");
    let second = f.one("<search>down</search>");
    let asked = f.entry(&second.path).unwrap();
    assert_eq!(request_of(&asked), ("down".to_owned(), 12));
    record_failure(&mut f.conn, t, &second.path, "backend unreachable", at).unwrap();
    let failed = f.entry(&second.path).unwrap();
    assert_eq!(
        (
            failed.state,
            failed.outcome.as_deref(),
            failed.body.as_str()
        ),
        (Failed, Some("502"), "backend unreachable")
    );
    let bad = f.one(r#"<search results="50">x</search>"#);
    assert_eq!(
        (bad.outcome.as_deref(), bad.body.as_str()),
        (
            Some("validation"),
            "results must be a whole number from 1 to 20"
        )
    );
}
