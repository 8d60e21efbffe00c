//! Users and tokens: open on loopback while no token exists; then
//! every connection needs one — as a Bearer header or in hello — granted the project; admin
//! methods need an admin token; revoked and expired tokens are refused and their connections
//! closed; the audit names the user.

use crate::support::{TestServer, WAIT};
use rummy_provider::time::Millis;
use rummy_store::tokens::{self, NewToken};
use rummy_testkit::{ClientError, RpcClient};
use serde_json::{json, Value};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A token made over the protocol by `admin` (any owner connection while none exists).
async fn token(admin: &mut RpcClient, user: &str, admin_token: bool, projects: &[&str]) -> String {
    let made = admin
        .call(
            "token/create",
            json!({ "user": user, "admin": admin_token, "projects": projects }),
        )
        .await
        .unwrap();
    made["token"].as_str().unwrap().to_owned()
}

async fn bearer(server: &TestServer, token: &str) -> Result<RpcClient, ClientError> {
    RpcClient::connect_with_headers(
        &server.url(),
        &[("Authorization", &format!("Bearer {token}"))],
    )
    .await
}

fn hello(server: &TestServer, name: &str) -> Value {
    json!({ "name": name, "projectRoot": server.project_root(name) })
}

/// A server with projects `web` and `api`, an admin token `ops` made by the owner before any
/// token existed (the owner's connection then closes), and a member token `alice` for `web`
/// made by `ops`.
async fn team() -> (TestServer, String, String) {
    let server = TestServer::start().await;
    let mut owner = server.client().await;
    for name in ["web", "api"] {
        owner
            .call("rummy/hello", hello(&server, name))
            .await
            .unwrap();
    }
    let ops = token(&mut owner, "ops", true, &[]).await;
    let mut admin = bearer(&server, &ops).await.unwrap();
    let alice = token(&mut admin, "alice", false, &["web"]).await;
    (server, ops, alice)
}

/// Once a token exists, a connection without one is refused -32001 and closed (1008); a bad
/// Bearer header is refused before the upgrade (HTTP 401).
#[actix_rt::test]
async fn once_a_token_exists_every_connection_needs_one() {
    let (server, _, _) = team().await;
    let mut anonymous = server.client().await;
    assert_eq!(anonymous.call("ping", json!({})).await.unwrap(), json!({}));
    let err = anonymous
        .call_err("rummy/hello", hello(&server, "web"))
        .await;
    assert_eq!(err.code, -32001);
    assert_eq!(
        err.message,
        "unauthorized: this server needs a token: send Authorization: Bearer <token> on the upgrade, or rummy/hello {token}"
    );
    assert_eq!(
        anonymous.close_reason(WAIT).await,
        Some((1008, "unauthorized".to_owned()))
    );
    let mut lister = server.client().await;
    assert_eq!(lister.call_err("getProjects", json!({})).await.code, -32001);
    match bearer(&server, "rummy_0000").await {
        Err(ClientError::Rejected { status, body }) => {
            assert_eq!(
                (status, body.as_str()),
                (401, "unauthorized: the token is not valid\n")
            )
        }
        other => panic!("a bad token was let in: {:?}", other.map(|_| ())),
    }
    match RpcClient::connect_with_headers(&server.url(), &[("Authorization", "Basic b3BzOg==")])
        .await
    {
        Err(ClientError::Rejected { status, .. }) => assert_eq!(status, 401),
        other => panic!("Basic auth was let in: {:?}", other.map(|_| ())),
    }
    server.stop().await;
}

/// A member token opens the projects granted to it — by Bearer or in hello — and lists only
/// those; any other name is -32001 whether or not it exists; it cannot create a project.
#[actix_rt::test]
async fn a_member_token_opens_its_projects_only() {
    let (server, _, alice) = team().await;
    let mut by_header = bearer(&server, &alice).await.unwrap();
    let projects = by_header.call("getProjects", json!({})).await.unwrap();
    let names: Vec<&str> = projects
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, vec!["web"]);
    by_header
        .call("rummy/hello", json!({ "name": "web" }))
        .await
        .unwrap();
    assert_eq!(
        by_header.call("getRuns", json!({})).await.unwrap(),
        json!([])
    );
    let mut by_param = server.client().await;
    by_param
        .call("rummy/hello", json!({ "name": "web", "token": alice }))
        .await
        .unwrap();
    for name in ["api", "nowhere"] {
        let mut client = bearer(&server, &alice).await.unwrap();
        let err = client
            .call_err("rummy/hello", json!({ "name": name }))
            .await;
        assert_eq!(
            (err.code, err.message),
            (
                -32001,
                format!("unauthorized: this token does not open project \"{name}\"")
            )
        );
    }
    let mut stranger = server.client().await;
    let err = stranger
        .call_err("getProjects", json!({ "token": "rummy_nope" }))
        .await;
    assert_eq!(
        (err.code, err.message.as_str()),
        (-32001, "unauthorized: the token is not valid")
    );
    server.stop().await;
}

/// Admin methods answer -32003 to a member and work for an admin, who also creates projects.
#[actix_rt::test]
async fn admin_methods_need_an_admin_token() {
    let (server, ops, alice) = team().await;
    let mut member = bearer(&server, &alice).await.unwrap();
    member
        .call("rummy/hello", json!({ "name": "web" }))
        .await
        .unwrap();
    for (method, params) in [
        ("addModel", json!({ "alias": "evil", "actual": "openai/x" })),
        ("removeModel", json!({ "alias": "fast" })),
        ("token/list", json!({})),
        ("token/create", json!({ "user": "mallory", "admin": true })),
        ("token/revoke", json!({ "token": "1" })),
    ] {
        let err = member.call_err(method, params).await;
        assert_eq!(
            (err.code, err.message),
            (
                -32003,
                format!("permission denied: {method} needs an admin token")
            )
        );
    }
    let mut admin = bearer(&server, &ops).await.unwrap();
    let listed = admin.call("token/list", json!({})).await.unwrap();
    let users: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["user"].as_str())
        .collect();
    assert_eq!(users, vec!["ops", "alice"]);
    // A listing shows a prefix to tell tokens apart, never a token's text.
    for listed in listed.as_array().unwrap() {
        assert!(listed.get("token").is_none());
        assert_eq!(listed["prefix"].as_str().map(str::len), Some(14));
    }
    admin
        .call("rummy/hello", hello(&server, "newproj"))
        .await
        .unwrap();
    admin
        .call(
            "addModel",
            json!({ "alias": "big", "actual": "openai/big-model" }),
        )
        .await
        .unwrap();
    let mut member2 = bearer(&server, &alice).await.unwrap();
    let err = member2
        .call_err("rummy/hello", json!({ "name": "newproj" }))
        .await;
    assert_eq!(err.code, -32001);
    server.stop().await;
}

/// Revoking a token closes its open connections at once and refuses it afterwards; an expired
/// token is refused, and a connection whose token expires is closed.
#[actix_rt::test]
async fn revoked_and_expired_tokens_end_their_connections() {
    let (server, ops, alice) = team().await;
    let mut victim = bearer(&server, &alice).await.unwrap();
    victim
        .call("rummy/hello", json!({ "name": "web" }))
        .await
        .unwrap();
    let mut admin = bearer(&server, &ops).await.unwrap();
    let listed = admin.call("token/list", json!({})).await.unwrap();
    let id = listed[1]["id"].as_i64().unwrap().to_string();
    let revoked = admin
        .call("token/revoke", json!({ "token": id }))
        .await
        .unwrap();
    assert!(revoked["revokedAt"].is_i64());
    assert_eq!(
        victim.close_reason(WAIT).await,
        Some((1008, "token revoked or expired".to_owned()))
    );
    assert!(matches!(
        bearer(&server, &alice).await,
        Err(ClientError::Rejected { status: 401, .. })
    ));
    // A token made straight on the database (as `rummy token create` does) that expires soon.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut conn = rummy_store::database::open(&server.database()).unwrap();
    let brief = NewToken {
        user: "brief".into(),
        admin: false,
        projects: vec!["web".into()],
        expires_at: Some(Millis(now + 400)),
    };
    let (text, _) = tokens::create(&mut conn, &brief, &[5; 32], Millis(now)).unwrap();
    drop(conn);
    let mut short = bearer(&server, &text).await.unwrap();
    short
        .call("rummy/hello", json!({ "name": "web" }))
        .await
        .unwrap();
    assert_eq!(
        short.close_reason(Duration::from_secs(5)).await,
        Some((1008, "token revoked or expired".to_owned()))
    );
    let mut late = server.client().await;
    let err = late
        .call_err("rummy/hello", json!({ "name": "web", "token": text }))
        .await;
    assert_eq!(
        (err.code, err.message.as_str()),
        (-32001, "unauthorized: the token expired")
    );
    server.stop().await;
}

/// The RPC log names the user behind every call made with a token.
#[actix_rt::test]
async fn the_rpc_log_names_the_user() {
    let (server, _, alice) = team().await;
    let mut member = bearer(&server, &alice).await.unwrap();
    member
        .call("rummy/hello", json!({ "name": "web" }))
        .await
        .unwrap();
    member.call("getRuns", json!({})).await.unwrap();
    use diesel::prelude::*;
    use rummy_store::schema::rpc_log::dsl as l;
    let db = rummy_store::database::open_read_pool(&server.database(), 1).unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    let rows: Vec<(String, Option<String>)> = loop {
        let mut conn = db.get().unwrap();
        let rows: Vec<(String, Option<String>)> = l::rpc_log
            .filter(l::user.is_not_null())
            .order(l::id.asc())
            .select((l::method, l::user))
            .load(&mut *conn)
            .unwrap();
        if rows.len() >= 2 || std::time::Instant::now() > deadline {
            break rows;
        }
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        rows,
        vec![
            ("rummy/hello".to_owned(), Some("alice".to_owned())),
            ("getRuns".to_owned(), Some("alice".to_owned()))
        ]
    );
    server.stop().await;
}

/// Runs `rummy token …` on the home `home`; its exit code, stdout and stderr.
fn token_cli(home: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rummy"))
        .arg("token")
        .args(args)
        .env_clear()
        .env("RUMMY_HOME", home)
        .envs(crate::support::database::vars(home))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `rummy token create` works on a home whose server never ran (a container's bootstrap) and
/// prints only the token on stdout; the server then needs it; `token list` shows it without
/// its text; `token revoke` on the database closes its connection while the server runs.
#[actix_rt::test]
async fn the_token_command_works_on_the_database_itself() {
    let home = tempfile::TempDir::new().unwrap();
    let (code, token, said) = token_cli(home.path(), &["create", "--user", "ops", "--admin"]);
    assert_eq!(code, 0, "{said}");
    let token = token.trim().to_owned();
    assert!(token.starts_with("rummy_") && token.len() == 70, "{token}");
    assert!(
        said.starts_with("rummy: token 1 for ops (admin: every project); shown once"),
        "{said}"
    );
    let (code, _, said) = token_cli(
        home.path(),
        &[
            "create",
            "--user",
            "bo",
            "--projects",
            "web,api",
            "--expires",
            "2x",
        ],
    );
    assert_eq!((code, said.trim()), (2, "rummy: --expires 2x: expected a number of days, hours or minutes, such as 90d, 12h or 30m"));

    let server = crate::support::process::ServerProcess::start(
        home.path(),
        &[],
        std::process::Stdio::null(),
    );
    let url = format!("ws://127.0.0.1:{}/", server.port);
    let mut anonymous = RpcClient::connect(&url).await.unwrap();
    assert_eq!(
        anonymous.call_err("getProjects", json!({})).await.code,
        -32001
    );
    let header = format!("Bearer {token}");
    let mut ops = RpcClient::connect_with_headers(&url, &[("Authorization", &header)])
        .await
        .unwrap();
    assert_eq!(ops.call("getProjects", json!({})).await.unwrap(), json!([]));

    let (code, listed, _) = token_cli(home.path(), &["list", "--json"]);
    assert_eq!(code, 0);
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed[0]["user"], json!("ops"));
    assert!(!listed.to_string().contains(&token));
    let (code, _, said) = token_cli(home.path(), &["revoke", &token[..14]]);
    assert_eq!(code, 0, "{said}");
    assert_eq!(
        ops.close_reason(Duration::from_secs(10)).await,
        Some((1008, "token revoked or expired".to_owned()))
    );
    let (code, _, said) = token_cli(home.path(), &["revoke", "99"]);
    assert_eq!((code, said.trim()), (4, "rummy: no token 99"));
    drop(server);
}
