//! A project's command network: an admin's `project/set {commandNetwork}` overrides the server's `RUMMY_COMMAND_NETWORK` for that project — what `getProjects` shows, whether an accepted command reaches the network, and what the `sh`/`env` docs tell the model.

use crate::support::{accept, entry, wait_status, TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};

/// `project/set {name, commandNetwork}` on `client`'s connection; the answer's
/// `commandNetwork`.
async fn set_network(client: &mut RpcClient, name: &str, network: Value) -> Value {
    client
        .call(
            "project/set",
            json!({ "name": name, "commandNetwork": network }),
        )
        .await
        .unwrap()["commandNetwork"]
        .clone()
}

/// `commandNetwork` of every project `getProjects` lists, by name.
async fn listed(client: &mut RpcClient) -> Vec<(Value, Value)> {
    let projects = client.call("getProjects", json!({})).await.unwrap();
    projects
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].clone(), p["commandNetwork"].clone()))
        .collect()
}

/// An admin sets a project's command network on (`true`), off (`false`) and back to the
/// server's (`null`); absent keeps it; `getProjects` shows it each time; a value that is no
/// boolean is -32602; a member is refused -32003 and nothing changes.
#[actix_rt::test]
async fn an_admin_sets_a_projects_command_network() {
    let server = TestServer::start().await;
    let mut owner = server.project_client("net").await;
    assert_eq!(
        listed(&mut owner).await,
        [(json!("net"), json!(null))],
        "no override at first"
    );
    // Each value sent: what the answer and then getProjects say.
    let mut seen = Vec::new();
    for network in [json!(true), json!(false), json!(null)] {
        let answered = set_network(&mut owner, "net", network).await;
        let (_, shown) = listed(&mut owner).await.remove(0);
        seen.push(json!([answered, shown]));
    }
    assert_eq!(
        seen,
        [
            json!([true, true]),
            json!([false, false]),
            json!([null, null])
        ]
    );

    set_network(&mut owner, "net", json!(false)).await;
    let kept = owner
        .call("project/set", json!({ "name": "net", "costCeiling": 5 }))
        .await
        .unwrap();
    assert_eq!(
        (kept["costCeiling"].clone(), kept["commandNetwork"].clone()),
        (json!(5.0), json!(false)),
        "absent keeps the override"
    );
    let err = owner
        .call_err(
            "project/set",
            json!({ "name": "net", "commandNetwork": "yes" }),
        )
        .await;
    assert_eq!(err.code, -32602, "{err:?}");

    let made = owner
        .call(
            "token/create",
            json!({ "user": "alice", "projects": ["net"] }),
        )
        .await
        .unwrap();
    let token = made["token"].as_str().unwrap();
    let mut alice = RpcClient::connect_with_headers(
        &server.url(),
        &[("Authorization", &format!("Bearer {token}"))],
    )
    .await
    .unwrap();
    let err = alice
        .call_err(
            "project/set",
            json!({ "name": "net", "commandNetwork": true }),
        )
        .await;
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            -32003,
            "permission denied: project/set needs an admin token"
        )
    );
    assert_eq!(listed(&mut alice).await, [(json!("net"), json!(false))]);
    server.stop().await;
}

/// What a command accepted in project `name` sees of the network, with the server's
/// `RUMMY_COMMAND_NETWORK` at `server_network` and the project's override `project`: the
/// interfaces `/proc/net/dev` lists, and the line of the `env` doc the model read about it.
async fn seen_by_a_command(server_network: bool, project: Value) -> (Vec<String>, String) {
    let server = TestServer::start_with(|c| c.shell.sandbox.network = server_network).await;
    let mut client = server.project_client("net").await;
    if !project.is_null() {
        set_network(&mut client, "net", project).await;
    }
    server.provider.push(Reply::content(
        "<env>cat /proc/net/dev</env>\n<update status=\"102\">looking</update>",
    ));
    server
        .provider
        .push(Reply::content("<update status=\"200\">done</update>"));
    client
        .call(
            "set",
            json!({ "path": "run://look", "body": "Look", "attributes": { "model": "fast", "mode": "act" } }),
        )
        .await
        .unwrap();
    let proposed = client
        .next_notification("run/proposal", WAIT)
        .await
        .expect("a proposal")["proposed"][0]
        .clone();
    let path = proposed["path"].as_str().unwrap().to_owned();
    accept(&mut client, "look", &path).await;
    wait_status(&mut client, "look", 200).await;
    let out = entry(&mut client, "look", &format!("{path}_1"))
        .await
        .expect("stdout channel");
    let interfaces = out["body"]
        .as_str()
        .unwrap()
        .lines()
        .skip(2)
        .filter_map(|l| l.split_once(':'))
        .map(|(name, _)| name.trim().to_owned())
        .collect();
    let system = server.provider.chat_requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let doc = system
        .lines()
        .find(|l| l.starts_with("* It is read-only in every mode"))
        .unwrap_or_default()
        .to_owned();
    server.stop().await;
    (interfaces, doc)
}

/// With the server's network on, a project whose override is off runs its commands in a
/// network namespace of their own (only `lo`), and its model reads that they have no network.
#[actix_rt::test]
async fn a_project_set_off_runs_commands_without_network_on_a_server_with_it() {
    let (interfaces, doc) = seen_by_a_command(true, json!(false)).await;
    assert_eq!(
        (interfaces, doc.as_str()),
        (
            vec!["lo".to_owned()],
            "* It is read-only in every mode: it writes nothing but a private /tmp, with no network."
        )
    );
}

/// With the server's network off, a project whose override is on runs its commands on the
/// host's network (more than `lo`), and its model reads the ports it may reach.
#[actix_rt::test]
async fn a_project_set_on_runs_commands_with_network_on_a_server_without() {
    let (interfaces, doc) = seen_by_a_command(false, json!(true)).await;
    assert!(
        interfaces.iter().any(|i| i != "lo"),
        "the host's interfaces: {interfaces:?}"
    );
    assert_eq!(
        doc,
        "* It is read-only in every mode: it writes nothing but a private /tmp, with network only by TCP to ports 80, 443."
    );
}

/// Without an override a project's commands follow the server: off by default, only `lo`.
#[actix_rt::test]
async fn without_an_override_commands_follow_the_server() {
    let (interfaces, doc) = seen_by_a_command(false, Value::Null).await;
    assert_eq!(
        (interfaces, doc.ends_with("with no network.")),
        (vec!["lo".to_owned()], true)
    );
}
