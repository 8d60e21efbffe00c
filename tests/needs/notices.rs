//! The server's notices (`ui/notify`) on the web page: each a toast toned by its level, the run it
//! names linked to the run's page, dismissed by its button; an error stays until dismissed.

use crate::support::{wait_status, TestServer};
use crate::webdriver::Browser;
use pretty_assertions::assert_eq;
use rummy_testkit::Reply;
use serde_json::json;

/// A run that waits for a decision shows an info toast linking the run, which the person
/// dismisses; a run whose loop fails shows an error toast.
pub(crate) async fn notices_show_as_toasts(page: &Browser) {
    let server = TestServer::start().await;
    server
        .provider
        .push(Reply::content("<update status=\"200\">ready</update>"));
    let mut client = server.project_client("team").await;
    client
        .call(
            "set",
            json!({ "path": "run://first", "body": "hi", "attributes": { "model": "fast" } }),
        )
        .await
        .unwrap();
    wait_status(&mut client, "first", 200).await;
    page.start_afresh().await;
    page.goto(&format!("http://127.0.0.1:{}/#/team", server.port()))
        .await;
    // The run list is read after the page bound itself to the project: from now on it hears
    // the project's notifications.
    page.wait_for("#runs a[data-run=\"first\"]").await;

    server.provider.push(Reply::content(
        "<ask_user question=\"Which database?\">PostgreSQL; SQLite</ask_user>\n<update status=\"102\">asking</update>",
    ));
    client
        .call(
            "set",
            json!({ "path": "run://asks", "body": "pick one", "attributes": { "model": "fast" } }),
        )
        .await
        .unwrap();
    page.wait_for_text(
        ".notice[data-level=\"info\"]",
        "run asks waits for your decision: ask_user Which database?",
    )
    .await;
    let href = page
        .run(
            "const a = document.querySelector('.notice[data-level=\"info\"] a[data-run=\"asks\"]'); return a && a.getAttribute('href');",
            json!([]),
        )
        .await;
    assert_eq!(href, json!("#/team/asks"));
    page.screenshot("notice-info").await;
    page.click(".notice[data-level=\"info\"] .notice-close")
        .await;
    page.wait_until(
        "the info notice to be dismissed",
        "return !document.querySelector('.notice[data-level=\"info\"]');",
        json!([]),
    )
    .await;

    // A 400 is not retried: the loop fails at once.
    server.provider.push(Reply::status(
        400,
        json!({ "error": { "message": "invalid request" } }),
    ));
    client
        .call(
            "set",
            json!({ "path": "run://flaky", "body": "hello", "attributes": { "model": "fast" } }),
        )
        .await
        .unwrap();
    page.wait_for_text(".notice[data-level=\"error\"]", "run flaky failed: ")
        .await;
    page.screenshot("notice-error").await;
    assert_eq!(page.console_errors().await, Vec::<String>::new());
}
