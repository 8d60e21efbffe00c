//! The web page against attributes of a shape it does not expect: a proposal whose attributes
//! are not what its kind is drawn from shows as their text, and the run around it still loads.

use crate::browser::wait_status;
use crate::support::{TestServer, WAIT};
use crate::webdriver::Browser;
use diesel::{Connection, ExpressionMethods, QueryDsl, RunQueryDsl};
use pretty_assertions::assert_eq;
use rummy_store::db::Db;
use rummy_store::location::Location;
use rummy_store::schema::entries;
use rummy_testkit::Reply;
use serde_json::{json, Value};

/// Replaces the stored attributes of the entry at `path` with what `change` makes of them,
/// under the server (as a database written by another version could hold them).
fn change_attributes(server: &TestServer, path: &str, change: impl FnOnce(&mut Value)) {
    let url = match server.database() {
        Location::Sqlite(file) => file.display().to_string(),
        Location::Postgres(url) => url,
    };
    let mut db = Db::establish(&url).unwrap();
    let stored: String = entries::table
        .filter(entries::path.eq(path))
        .select(entries::attributes)
        .first(&mut db)
        .unwrap();
    let mut attributes: Value = serde_json::from_str(&stored).unwrap();
    change(&mut attributes);
    let changed = diesel::update(entries::table.filter(entries::path.eq(path)))
        .set(entries::attributes.eq(attributes.to_string()))
        .execute(&mut db)
        .unwrap();
    assert_eq!(changed, 1, "{path} is stored once");
}

/// An `ask_user` whose `options` is a text, not a list: the page shows the proposal as its
/// attributes' text (no exception draws half of it), the run's prompt and status are there,
/// a viewer who opens the run afresh sees it all, and the question is answered from the page.
pub(super) async fn a_proposal_of_an_unexpected_shape_shows_as_text(page: &Browser) {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(
        "<ask_user question=\"Which database?\">PostgreSQL; SQLite</ask_user>\n<update status=\"102\">asking</update>",
    ));
    page.start_afresh().await;
    let mut client = server.project_client("shapes").await;
    client
        .call(
            "set",
            json!({ "path": "run://q", "body": "Pick a database", "attributes": { "model": "fast" } }),
        )
        .await
        .unwrap();
    let proposal = client
        .next_notification("run/proposal", WAIT)
        .await
        .expect("a proposal");
    let path = proposal["proposed"][0]["path"].as_str().unwrap().to_owned();
    change_attributes(&server, &path, |a| {
        a["options"] = json!("PostgreSQL or SQLite");
    });

    let url = format!("http://127.0.0.1:{}/#/shapes/q", server.port());
    for viewer in ["first", "afresh"] {
        if viewer == "afresh" {
            page.start_afresh().await;
        }
        page.goto(&url).await;
        page.wait_for_text("#timeline", "Pick a database").await;
        page.wait_for_text(
            ".proposal[data-kind=\"ask_user\"] pre.unexpected",
            "\"options\": \"PostgreSQL or SQLite\"",
        )
        .await;
        page.wait_for_text(".proposal[data-kind=\"ask_user\"]", "Which database?")
            .await;
        assert_eq!(
            page.console_errors().await,
            Vec::<String>::new(),
            "{viewer}"
        );
    }
    page.screenshot("unexpected-shape").await;

    server.provider.push(Reply::content(
        "<update status=\"200\">SQLite it is</update>",
    ));
    page.type_into(".proposal input.reason", "SQLite\u{E007}")
        .await;
    wait_status(page, 200).await;
    let waiting = page
        .run(
            "return document.querySelectorAll('.proposal').length;",
            json!([]),
        )
        .await;
    assert_eq!(waiting, json!(0), "the question no longer waits");
    server.stop().await;
}
