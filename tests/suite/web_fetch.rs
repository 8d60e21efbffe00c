//! The model's web fetch: `<get path="https://…">` fetches the page where the server allows it
//! (`RUMMY_WEB_FETCH`) and an admin listed the project's domains; a page outside them is a
//! `fetch` proposal; the server's own addresses, a site's `robots.txt` and off-list redirects
//! keep a fetch out, and no connection is made to a refused address. The pages are served by
//! the fake provider on loopback, reached by names the test resolves (`WebSettings::resolve`).

use crate::support::{accept, entry, scheme_entries, wait_status, TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy::config::Config;
use rummy_core::web::address::AllowList;
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};
use std::net::IpAddr;

const DONE: &str = "<update status=\"200\">done</update>";

const GUIDE: &str = "<html><head><title>Retry guide</title><script>var x = 1;</script></head>\
    <body><h1>Retries</h1><p>Retry <b>three</b> times with backoff.</p></body></html>";

/// A server whose web fetch is on, reaching the fake provider's loopback port by the names
/// `docs.test` and `other.test`; `evil.test`, `meta.test` and `six.test` resolve to a private,
/// the metadata and the IPv6 loopback address.
async fn server() -> TestServer {
    let server = TestServer::start_with(web).await;
    server
        .provider
        .set_page("/guide", "text/html; charset=utf-8", GUIDE);
    server.provider.set_page(
        "/robots.txt",
        "text/plain",
        "User-agent: *\nDisallow: /private\n",
    );
    server
}

/// The web settings of [`server`].
fn web(c: &mut Config) {
    c.web.fetch = true;
    c.web.allow_private = AllowList::parse("127.0.0.1").unwrap();
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    c.web.resolve = vec![
        ("docs.test".into(), ip("127.0.0.1")),
        ("other.test".into(), ip("127.0.0.1")),
        ("evil.test".into(), ip("10.0.0.1")),
        ("meta.test".into(), ip("169.254.169.254")),
        ("six.test".into(), ip("::1")),
        ("mapped.test".into(), ip("::ffff:169.254.169.254")),
    ];
}

/// A URL of the fake provider's port under `host`.
fn url(server: &TestServer, host: &str, path: &str) -> String {
    format!("http://{host}:{}{path}", server.provider.addr().port())
}

/// The path of the entry a page is stored at: its URL as entry paths are written (the port's
/// colon escaped).
fn stored(url: &str) -> String {
    match url.rsplit_once(':') {
        Some((head, tail)) if tail.starts_with(|c: char| c.is_ascii_digit()) => {
            format!("{head}%3A{tail}")
        }
        _ => url.to_owned(),
    }
}

/// A project `name` whose model fetches from `domains` without asking.
async fn project(server: &TestServer, name: &str, domains: Value) -> RpcClient {
    let mut client = server.project_client(name).await;
    let set = client
        .call(
            "project/set",
            json!({ "name": name, "webDomains": domains }),
        )
        .await
        .unwrap();
    assert_eq!(set["webDomains"], domains);
    client
}

/// Runs one loop whose model writes `reply` first, in run `alias`.
async fn run(client: &mut RpcClient, alias: &str) {
    client
        .call(
            "set",
            json!({ "path": format!("run://{alias}"), "body": "read it",
                    "attributes": { "model": "fast", "mode": "act" } }),
        )
        .await
        .unwrap();
}

fn get(url: &str) -> String {
    format!("<get path=\"{url}\"/>\n<update status=\"102\">reading</update>")
}

/// The GET requests the fake provider served for pages (not the model's calls), by path.
fn page_requests(server: &TestServer) -> Vec<String> {
    server
        .provider
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET" && r.path != "/v1/models")
        .map(|r| r.path)
        .collect()
}

/// A page of the project's domains is fetched at once, as readable text, into its URL's entry,
/// which the model reads next turn; the site's robots.txt is read first, and the request names
/// rummy. A second `get` of it in the run reads the stored page.
#[actix_rt::test]
async fn a_page_of_the_projects_domains_is_fetched_as_readable_text() {
    let server = server().await;
    let page = url(&server, "docs.test", "/guide");
    server.provider.push(Reply::content(get(&page)));
    server.provider.push(Reply::content(get(&page)));
    server.provider.push(Reply::content(DONE));
    let mut client = project(&server, "docs", json!(["docs.test"])).await;
    run(&mut client, "r").await;
    wait_status(&mut client, "r", 200).await;
    let pages: Vec<Value> = scheme_entries(&mut client, "r", "http").await;
    let fetched: Vec<(Value, Value, Value)> = pages
        .iter()
        .map(|p| {
            (
                p["path"].clone(),
                p["body"].clone(),
                p["attributes"]["fetched"].clone(),
            )
        })
        .collect();
    assert_eq!(
        fetched,
        vec![(
            json!(stored(&page)),
            json!("Title: Retry guide\n\n# Retries\n\nRetry three times with backoff."),
            json!(true)
        )]
    );
    let gets = scheme_entries(&mut client, "r", "get").await;
    let results: Vec<(Value, Value)> = gets
        .iter()
        .map(|g| (g["state"].clone(), g["body"].clone()))
        .collect();
    assert_eq!(results[0].0, json!("resolved"));
    let body = results[0].1.as_str().unwrap_or_default();
    assert!(
        body.starts_with(&format!("{} fetched (", stored(&page))),
        "{body}"
    );
    assert_eq!(
        page_requests(&server),
        ["/robots.txt", "/guide"],
        "fetched once, robots first"
    );
    let agent = server
        .provider
        .requests()
        .into_iter()
        .find(|r| r.path == "/guide")
        .and_then(|r| r.headers.into_iter().find(|(n, _)| n == "user-agent"))
        .map(|(_, v)| v)
        .unwrap_or_default();
    assert!(agent.starts_with("rummy/"), "{agent}");
    let second = server.provider.chat_requests()[1].body["messages"].to_string();
    assert!(
        second.contains("Retry three times with backoff."),
        "{second}"
    );
    server.stop().await;
}

/// A page outside the project's domains is a `fetch` proposal; accepted, the server fetches
/// it, its channel says where the page is, and the model reads it next turn.
#[actix_rt::test]
async fn a_page_outside_the_domains_is_fetched_once_a_person_accepts() {
    let server = server().await;
    let page = url(&server, "other.test", "/guide");
    server.provider.push(Reply::content(get(&page)));
    server.provider.push(Reply::content(DONE));
    let mut client = project(&server, "ask", json!(["docs.test"])).await;
    run(&mut client, "r").await;
    let proposal = client
        .next_notification("run/proposal", WAIT)
        .await
        .unwrap();
    let item = &proposal["proposed"][0];
    let path = item["path"].as_str().unwrap_or_default().to_owned();
    assert_eq!(
        (item["proposal"].clone(), item["attributes"]["url"].clone()),
        (json!("fetch"), json!(page))
    );
    assert_eq!(
        page_requests(&server),
        Vec::<String>::new(),
        "nothing fetched before the accept"
    );
    let accepted = accept(&mut client, "r", &path).await;
    assert_eq!(
        (accepted["channels"].clone(), accepted.get("runner")),
        (json!([format!("{path}_1")]), None)
    );
    wait_status(&mut client, "r", 200).await;
    let channel = entry(&mut client, "r", &format!("{path}_1")).await.unwrap();
    assert_eq!(channel["state"], json!("resolved"));
    let body = channel["body"].as_str().unwrap_or_default();
    assert!(
        body.starts_with(&format!("{} fetched (", stored(&page))),
        "{body}"
    );
    let second = server.provider.chat_requests()[1].body["messages"].to_string();
    assert!(
        second.contains("Retry three times with backoff."),
        "{second}"
    );
    server.stop().await;
}

/// The server's own addresses — by a name resolving to them or written in the URL, IPv6 and
/// IPv4-mapped forms too — a path the site's robots.txt keeps rummy out of, and a redirect
/// off the project's domains are refused with the reason the model reads, and no request
/// reaches a refused address.
#[actix_rt::test]
async fn a_fetch_never_reaches_the_servers_own_addresses() {
    let server = server().await;
    server
        .provider
        .set_redirect("/moved", &url(&server, "other.test", "/guide"));
    let urls = [
        url(&server, "evil.test", "/"),
        url(&server, "meta.test", "/latest/meta-data"),
        url(&server, "six.test", "/"),
        "http://10.0.0.1/".to_owned(),
        url(&server, "mapped.test", "/"),
        url(&server, "docs.test", "/private/notes"),
        url(&server, "docs.test", "/moved"),
    ];
    for u in &urls {
        server.provider.push(Reply::content(get(u)));
    }
    server.provider.push(Reply::content(DONE));
    let mut client = project(
        &server,
        "safe",
        json!([
            "docs.test",
            "evil.test",
            "meta.test",
            "six.test",
            "10.0.0.1",
            "mapped.test"
        ]),
    )
    .await;
    run(&mut client, "r").await;
    wait_status(&mut client, "r", 200).await;
    let gets = scheme_entries(&mut client, "r", "get").await;
    let seen: Vec<(Value, Value, Value)> = gets
        .iter()
        .map(|g| (g["state"].clone(), g["outcome"].clone(), g["body"].clone()))
        .collect();
    let refused = |body: String| (json!("failed"), json!("permission"), json!(body));
    assert_eq!(
        seen,
        vec![
            refused(format!("{} was not fetched: evil.test is not fetched: 10.0.0.1 is a private address, which a fetch never reaches", urls[0])),
            refused(format!("{} was not fetched: meta.test is not fetched: 169.254.169.254 is a link-local address, which a fetch never reaches", urls[1])),
            refused(format!("{} was not fetched: six.test is not fetched: ::1 is a loopback address, which a fetch never reaches", urls[2])),
            refused("http://10.0.0.1/ is not fetched: 10.0.0.1 is a private address, which a fetch never reaches".to_owned()),
            refused(format!("{} was not fetched: mapped.test is not fetched: ::ffff:169.254.169.254 is a link-local address, which a fetch never reaches", urls[4])),
            refused(format!("{} is not fetched: the site's robots.txt keeps rummy out of /private/notes", urls[5])),
            refused(format!("{} is not fetched: other.test is outside the domains this project fetches from without asking", url(&server, "other.test", "/guide"))),
        ]
    );
    assert_eq!(
        page_requests(&server),
        ["/robots.txt", "/moved"],
        "only the loopback page was reached"
    );
    server.stop().await;
}

/// Where the project's admin has not turned fetch on, a URL's `get` reads the stored entry as
/// before: nothing is fetched.
#[actix_rt::test]
async fn without_the_projects_domains_nothing_is_fetched() {
    let server = server().await;
    let page = url(&server, "docs.test", "/guide");
    server.provider.push(Reply::content(get(&page)));
    server.provider.push(Reply::content(DONE));
    let mut client = server.project_client("off").await;
    run(&mut client, "r").await;
    wait_status(&mut client, "r", 200).await;
    let gets = scheme_entries(&mut client, "r", "get").await;
    assert_eq!(gets[0]["state"], json!("resolved"));
    assert!(
        gets[0]["body"]
            .as_str()
            .unwrap_or_default()
            .contains("not found"),
        "{:?}",
        gets[0]
    );
    assert_eq!(page_requests(&server), Vec::<String>::new());
    let refused = client
        .call_err(
            "project/set",
            json!({ "name": "off", "webDomains": ["https://docs.test"] }),
        )
        .await;
    assert_eq!(
        (refused.code, refused.message),
        (
            -32602,
            "invalid params: webDomains: \"https://docs.test\" is not a host name (write example.com, not a URL)".to_owned()
        )
    );
    server.stop().await;
}

/// A loop with `noWeb` fetches nothing, even within the project's domains; after a restart the
/// project's domains still hold and a page is fetched.
#[actix_rt::test]
async fn no_web_fetches_nothing_and_a_restart_keeps_the_domains() {
    let mut server = server().await;
    let page = url(&server, "docs.test", "/guide");
    server.provider.push(Reply::content(get(&page)));
    server.provider.push(Reply::content(DONE));
    let mut client = project(&server, "kept", json!(["docs.test"])).await;
    client
        .call(
            "set",
            json!({ "path": "run://quiet", "body": "read it",
                    "attributes": { "model": "fast", "mode": "act", "noWeb": true } }),
        )
        .await
        .unwrap();
    wait_status(&mut client, "quiet", 200).await;
    assert_eq!(
        page_requests(&server),
        Vec::<String>::new(),
        "noWeb fetches nothing"
    );
    drop(client);
    server.restart_with(web).await;
    server.provider.push(Reply::content(get(&page)));
    server.provider.push(Reply::content(DONE));
    let mut client = server.project_client("kept").await;
    run(&mut client, "after").await;
    wait_status(&mut client, "after", 200).await;
    assert_eq!(page_requests(&server), ["/robots.txt", "/guide"]);
    let gets = scheme_entries(&mut client, "after", "get").await;
    assert_eq!(gets[0]["state"], json!("resolved"));
    server.stop().await;
}
