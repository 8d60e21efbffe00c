//! Resolving dispatched proposals through the three phases (read, apply on disk, record) against a temporary project: what is recorded when the disk refuses, when the proposal was settled meanwhile, and when it is read again.

use super::{fixture, Fixture, APP, NOW};
use crate::turn::proposals::{self, Decision, Recorded, Resolution};
use pretty_assertions::assert_eq;
use rummy_store::entries::WriteCtx;
use rummy_store::entry::State;
use rummy_store::StoreError;
use tempfile::TempDir;

const EDIT: &str =
    r#"<set path="src/app.js" search="const port = 3000;" replace="const port = 8080;"/>"#;
const APP_8080: &str = "const port = 8080;\nconst host = \"localhost\";\nlisten(port, host);\n";

/// A fixture whose edit of `src/app.js` is pending, and its project on disk.
fn pending_edit() -> (Fixture, TempDir, String) {
    let mut f = fixture();
    let dir = TempDir::new().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/app.js"), APP).unwrap();
    let path = f.one(EDIT).path;
    (f, dir, path)
}

/// Reads, accepts on disk and records the proposal at `path`.
fn accept(f: &mut Fixture, dir: &TempDir, path: &str) -> Recorded {
    let run = f.ctx.t.run;
    let proposal = proposals::read(&mut f.conn, run, path).unwrap();
    let resolution = proposals::apply(&proposal, Decision::Accept(None), dir.path());
    proposals::record(
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
    .unwrap()
}

/// An accepted edit is written to disk and recorded resolved, and its file's entry follows;
/// read again, the proposal is refused as already resolved.
#[test]
fn an_accepted_edit_is_recorded_once() {
    let (mut f, dir, path) = pending_edit();

    let recorded = accept(&mut f, &dir, &path);
    let again = proposals::read(&mut f.conn, f.ctx.t.run, &path).unwrap_err();

    let Recorded::Resolved(resolved) = recorded else {
        panic!("not resolved: {recorded:?}")
    };
    assert_eq!(
        (resolved.state, resolved.outcome, f.body("src/app.js")),
        (State::Resolved, None, APP_8080.to_owned())
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/app.js")).unwrap(),
        APP_8080
    );
    assert!(
        matches!(&again, StoreError::Conflict(m) if m == &format!("{path} is not pending (it is resolved); it was already resolved")),
        "{again:?}"
    );
}

/// A symlinked directory on the edit's path is recorded as a 403 refusal with the message the
/// model reads; nothing is written and the file's entry keeps what the model saw.
#[test]
fn a_refusal_is_recorded_as_permission() {
    let (mut f, dir, path) = pending_edit();
    let outside = TempDir::new().unwrap();
    std::fs::write(outside.path().join("app.js"), "outside\n").unwrap();
    std::fs::rename(dir.path().join("src"), dir.path().join("moved")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("src")).unwrap();

    let recorded = accept(&mut f, &dir, &path);

    let Recorded::Resolved(resolved) = recorded else {
        panic!("not resolved: {recorded:?}")
    };
    let message = "refused: src/app.js escapes the project root (src is a symlink)";
    assert_eq!(
        (
            resolved.state,
            resolved.outcome.as_deref(),
            resolved.aborts_rest,
            f.body(&path),
            f.body("src/app.js"),
            std::fs::read_to_string(outside.path().join("app.js")).unwrap(),
        ),
        (
            State::Failed,
            Some("permission"),
            true,
            message.to_owned(),
            APP.to_owned(),
            "outside\n".to_owned(),
        )
    );
}

/// A proposal a cancel settled while its file was being written keeps the cancel's state, and
/// the file's entry still follows what reached the disk.
#[test]
fn a_proposal_cancelled_meanwhile_keeps_its_state() {
    let (mut f, dir, path) = pending_edit();
    let run = f.ctx.t.run;
    let proposal = proposals::read(&mut f.conn, run, &path).unwrap();
    let resolution = proposals::apply(&proposal, Decision::Accept(None), dir.path());
    assert!(matches!(resolution, Resolution::Accepted { .. }));
    proposals::cancel_pending(
        &mut f.conn,
        f.ctx.t,
        "cancelled",
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();

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

    assert_eq!(
        (
            recorded,
            f.entry(&path).unwrap().state,
            f.body("src/app.js")
        ),
        (
            Recorded::Stale(State::Cancelled),
            State::Cancelled,
            APP_8080.to_owned()
        )
    );
}
