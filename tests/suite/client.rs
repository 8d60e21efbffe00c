//! `rummy-client` against the real server: its typed calls read the real answers, and a
//! connection dropped mid-run is reconnected with nothing missed and nothing seen twice.

use crate::support::{TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy_client::params::{ConstraintParams, GetEntriesParams, HelloParams, Page, RunAttributes};
use rummy_client::results::State;
use rummy_client::{Client, ClientOptions, Decision, Notification, Reconnect};
use rummy_testkit::{Gate, Reply};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

const NOTE_AND_GO_ON: &str =
    "<set path=\"known://step\">noted</set>\n<update status=\"102\">noted</update>";
const DONE: &str = "<update status=\"200\">all done</update>";

async fn client_for(server: &TestServer, url: &str, name: &str) -> Client {
    let mut options = ClientOptions::new(url);
    options.reconnect = Some(Reconnect {
        attempts: 20,
        delay: Duration::from_millis(50),
        max_delay: Duration::from_millis(200),
    });
    let mut client = Client::connect(options).await.unwrap();
    client
        .hello(HelloParams {
            name: name.into(),
            project_root: Some(server.project_root(name)),
            ..HelloParams::default()
        })
        .await
        .unwrap();
    client
}

fn act_on_fast() -> RunAttributes {
    RunAttributes {
        model: Some("fast".into()),
        mode: Some("act".into()),
        ..RunAttributes::default()
    }
}

/// The `run/state` pushes of `run` until its status is `status`, each typed.
async fn states_until(
    client: &mut Client,
    run: &str,
    status: i64,
) -> Vec<rummy_client::notifications::RunState> {
    let mut states = Vec::new();
    loop {
        let n = client.next_notification(Some(WAIT)).await.unwrap();
        if let Notification::RunState(state) = n {
            if state.run == run {
                let done = state.status == status;
                states.push(state);
                if done {
                    return states;
                }
            }
        }
    }
}

/// The typed calls read the server's real answers: hello, models, a run started and
/// followed to its end, the run list, the run's state and entries, constraints, discover.
#[actix_rt::test]
async fn typed_calls_read_the_servers_answers() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(NOTE_AND_GO_ON));
    server.provider.push(Reply::content(DONE));
    let url = server.url();
    let mut client = client_for(&server, &url, "typed").await;

    let models = client.get_models(Page::default()).await.unwrap();
    let alias = client
        .start_run(Some("first"), "Note something", &act_on_fast())
        .await
        .unwrap();
    let states = states_until(&mut client, &alias, 200).await;
    let runs = client.get_runs(Page::default()).await.unwrap();
    let run = client.get_run(&alias, None).await.unwrap();
    let known = client
        .get_entries(&GetEntriesParams {
            run: alias.clone(),
            scheme: Some("known".into()),
            with_body: true,
            ..GetEntriesParams::default()
        })
        .await
        .unwrap();
    client
        .file_constraint(&ConstraintParams {
            pattern: "*.lock".into(),
            visibility: "ignore".into(),
        })
        .await
        .unwrap();
    let constraints = client.get_constraints().await.unwrap();
    let catalogue = client.discover().await.unwrap();

    assert_eq!(
        models
            .iter()
            .map(|m| (m.alias.as_str(), m.actual.as_str(), m.context_length))
            .collect::<Vec<_>>(),
        vec![("fast", "openai/fake-model", Some(32_768))]
    );
    assert_eq!(alias, "first");
    let last = states.last().unwrap();
    assert_eq!(
        (last.status, last.summary.as_deref(), last.seq),
        (200, Some("all done"), Some(run.last_seq))
    );
    assert_eq!(
        runs.iter()
            .map(|r| (r.run.as_str(), r.status, r.turn))
            .collect::<Vec<_>>(),
        vec![("first", 200, 2)]
    );
    assert_eq!(
        (run.status, run.turn, run.model.as_deref()),
        (200, 2, Some("fast"))
    );
    assert_eq!(
        known
            .iter()
            .map(|e| (e.path.as_str(), e.body.as_deref()))
            .collect::<Vec<_>>(),
        vec![("known://step", Some("noted"))]
    );
    assert_eq!(
        constraints
            .iter()
            .map(|c| (c.pattern.as_str(), c.visibility.as_str()))
            .collect::<Vec<_>>(),
        vec![("*.lock", "ignore")]
    );
    assert!(catalogue.methods.contains_key("getRun"));
    assert!(catalogue.notifications.contains_key("run/state"));
    server.stop().await;
}

/// A proposal arrives as a typed `run/proposal`, and `resolve` accepts it: the edit lands.
#[actix_rt::test]
async fn a_proposal_is_typed_and_resolved() {
    let server = TestServer::start().await;
    let root = server.project_root("proposing");
    std::fs::write(format!("{root}/a.txt"), "old\n").unwrap();
    server.provider.push(Reply::content(
        "<set path=\"a.txt\" search=\"old\" replace=\"new\"/>\n<update status=\"102\">edited</update>",
    ));
    server.provider.push(Reply::content(DONE));
    let url = server.url();
    let mut client = client_for(&server, &url, "proposing").await;
    let alias = client
        .start_run(None, "Edit a.txt", &act_on_fast())
        .await
        .unwrap();

    let proposal = loop {
        if let Notification::RunProposal(p) = client.next_notification(Some(WAIT)).await.unwrap() {
            break p;
        }
    };
    let proposed = &proposal.proposed[0];
    let ack = client
        .resolve(
            &alias,
            &proposed.path,
            Decision::Accept(None),
            proposed.hash.as_deref(),
        )
        .await
        .unwrap();
    states_until(&mut client, &alias, 200).await;

    assert_eq!(
        (
            proposed.attributes.get("kind").and_then(|k| k.as_str()),
            proposed.body.contains("-old\n+new"),
            ack.state,
            std::fs::read_to_string(format!("{root}/a.txt")).unwrap()
        ),
        (
            Some("edit"),
            true,
            Some(State::Resolved),
            "new\n".to_owned()
        )
    );
    server.stop().await;
}

/// A loopback TCP proxy whose connections can all be cut at once, as a broken network would.
struct Proxy {
    url: String,
    cut: watch::Sender<u32>,
}

impl Proxy {
    async fn start(target_port: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (cut, cuts) = watch::channel(0u32);
        actix_rt::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let mut cuts = cuts.clone();
                cuts.mark_unchanged();
                actix_rt::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(("127.0.0.1", target_port)).await
                    else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cuts.changed() => {}
                    }
                });
            }
        });
        Proxy {
            url: format!("ws://127.0.0.1:{port}/ws"),
            cut,
        }
    }

    /// Drops every connection open now; new ones are still accepted.
    fn cut(&self) {
        self.cut.send_modify(|n| *n += 1);
    }
}

/// The connection drops mid-run while the run goes on: the client reconnects, says hello
/// again, and replays with `getRun {sinceSeq}`: every `run/state` of the run arrives exactly
/// once, up to the run's last.
#[actix_rt::test]
async fn a_dropped_connection_is_replayed_with_nothing_missed() {
    let server = TestServer::start().await;
    let gate = Gate::new();
    server.provider.push(Reply::content(NOTE_AND_GO_ON));
    server
        .provider
        .push(Reply::content(NOTE_AND_GO_ON.replace("step", "second")).held(&gate));
    server.provider.push(Reply::content(DONE));
    let proxy = Proxy::start(server.port()).await;
    let mut client = client_for(&server, &proxy.url, "replayed").await;
    let alias = client
        .start_run(Some("r"), "Work in steps", &act_on_fast())
        .await
        .unwrap();

    let mut seqs = Vec::new();
    // The first turn's pushes, up to its end (telemetry marks a turn's end).
    loop {
        if let Notification::RunState(s) = client.next_notification(Some(WAIT)).await.unwrap() {
            seqs.push(s.seq.unwrap());
            if s.telemetry.is_some() {
                break;
            }
        }
    }
    proxy.cut();
    gate.open();
    // The second turn and the conclusion happen while the client is away or coming back.
    let rest = states_until(&mut client, &alias, 200).await;
    seqs.extend(rest.iter().map(|s| s.seq.unwrap()));
    let last = client.get_run(&alias, None).await.unwrap().last_seq;
    // Pushes are sent as their writes commit, which is not always in number order.
    seqs.sort_unstable();

    assert_eq!(seqs, (1..=last).collect::<Vec<i64>>());
    assert_eq!(client.reconnects(), 1);
    server.stop().await;
}

/// More is missed while away than one message holds (`RUMMY_MAX_MESSAGE_BYTES` 64 KiB, three
/// turns of 30 KB updates): `getRun {sinceSeq}` answers what fits with `missedMore`, and the
/// client asks again until every `run/state` has arrived exactly once.
#[actix_rt::test]
async fn a_replay_longer_than_one_message_is_read_in_pages() {
    let server = TestServer::start_with(|c| c.limits.max_message_bytes = 64 * 1024).await;
    let gate = Gate::new();
    let fact = |n: usize| {
        format!(
            "<update status=\"102\">step {n}: {}</update>",
            "x".repeat(30_000)
        )
    };
    server.provider.push(Reply::content(NOTE_AND_GO_ON));
    server.provider.push(Reply::content(fact(1)).held(&gate));
    server.provider.push(Reply::content(fact(2)));
    server.provider.push(Reply::content(fact(3)));
    server.provider.push(Reply::content(DONE));
    let proxy = Proxy::start(server.port()).await;
    let mut client = client_for(&server, &proxy.url, "paged").await;
    let alias = client
        .start_run(Some("r"), "Work in steps", &act_on_fast())
        .await
        .unwrap();

    let mut seqs = Vec::new();
    loop {
        if let Notification::RunState(s) = client.next_notification(Some(WAIT)).await.unwrap() {
            seqs.push(s.seq.unwrap());
            if s.telemetry.is_some() {
                break;
            }
        }
    }
    proxy.cut();
    gate.open();
    // The run ends while the client is away: all of it is replayed when it reads again.
    let mut watcher = server.project_client("paged").await;
    crate::support::wait_status(&mut watcher, &alias, 200).await;
    let rest = states_until(&mut client, &alias, 200).await;
    seqs.extend(rest.iter().map(|s| s.seq.unwrap()));
    let last = client.get_run_page(&alias, 0, 0).await.unwrap().last_seq;
    seqs.sort_unstable();

    assert_eq!(seqs, (1..=last).collect::<Vec<i64>>());
    server.stop().await;
}

/// `getProjects` lists the projects the connection may open, before any hello.
#[actix_rt::test]
async fn get_projects_lists_the_projects() {
    let server = TestServer::start().await;
    let url = server.url();
    let _bound = client_for(&server, &url, "listed").await;
    let mut fresh = Client::connect(ClientOptions::new(&url)).await.unwrap();

    let projects = fresh.get_projects().await.unwrap();

    assert_eq!(
        projects
            .iter()
            .map(|p| (p.name.as_str(), p.project_root.as_str()))
            .collect::<Vec<_>>(),
        vec![("listed", server.project_root("listed").as_str())]
    );
    server.stop().await;
}
