//! Notifications between rummy processes sharing one database, over PostgreSQL's
//! `LISTEN`/`NOTIFY`: a [`Listener`] holds one connection that listens on a few channels and
//! hands every notification to the server as an [`Event`]; [`notify`] sends one from inside a
//! transaction.
//!
//! What PostgreSQL guarantees and this keeps: a notification is delivered only if its
//! transaction commits, once to each listening connection, and notifications arrive in commit
//! order. What it cannot keep: those sent while no connection listens. So a lost connection is
//! reported ([`Event::Lost`]), the listener reconnects by itself, and [`Event::Listening`] says
//! when it hears again — the consumer re-reads from the tables whatever it may have missed.
//!
//! The connection is driven by a task on this crate's runtime, like every other socket here;
//! the events cross to the consumer through a tokio channel, which any runtime can await.

use crate::admin::quoted;
use crate::raw::{describe, Raw, Target};
use crate::runtime::{block_on, runtime};
use crate::PgConn;
use diesel::result::Error as DieselError;
use diesel::sql_types::Text;
use diesel::{QueryResult, RunQueryDsl};
use futures_util::future::{select, Either};
use futures_util::Stream;
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::{AsyncMessage, Client};

/// PostgreSQL refuses a payload of this many bytes or more (`BLCKSZ - NAMEDATALEN - 128`).
pub const PAYLOAD_LIMIT: usize = 8000;

/// The longest channel name PostgreSQL keeps: `LISTEN` would cut a longer one short and then
/// never hear the notifications sent to the full name.
const CHANNEL_LIMIT: usize = 63;

/// The wait before the first reconnect; it doubles after each failed attempt.
const FIRST_DELAY: Duration = Duration::from_millis(100);

/// The longest wait between reconnect attempts.
const LAST_DELAY: Duration = Duration::from_secs(5);

/// How long a dropped listener waits for the server to acknowledge its goodbye.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// The `application_name` a listener's connection shows in `pg_stat_activity` unless the URL
/// names one.
const APPLICATION_NAME: &str = "rummy-listen";

/// What a [`Listener`] reports, in the order it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Listening on every channel: the first event, and again after each reconnect, when
    /// notifications committed since the [`Event::Lost`] before it may have been missed.
    Listening,
    /// A notification whose transaction committed, in commit order.
    Notification {
        /// The channel it was sent on.
        channel: String,
        /// What the sender attached (empty when nothing).
        payload: String,
    },
    /// The connection ended or failed, for this reason; the listener is reconnecting.
    Lost(String),
}

/// A connection listening on some channels, reporting [`Event`]s until it is dropped, which
/// closes the connection. Read it with [`Listener::recv`] or as a [`Stream`].
pub struct Listener {
    /// What the listening task reports.
    events: mpsc::UnboundedReceiver<Event>,
    /// Never sent on: dropping it (with the listener) stops the task.
    _stop: oneshot::Sender<()>,
}

impl Listener {
    /// Connects to `url` as [`PgConn::connect`] does, listens on `channels` (matched exactly,
    /// case included, as `pg_notify` names them), and keeps listening from then on. The first
    /// event is [`Event::Listening`].
    ///
    /// # Errors
    /// No channel, a channel name PostgreSQL cannot keep, a URL that cannot be used, or the
    /// server's refusal in its words. Later failures are [`Event::Lost`], not errors.
    pub fn start(url: &str, channels: &[&str]) -> Result<Listener, String> {
        if channels.is_empty() {
            return Err("a listener needs at least one channel".to_string());
        }
        for channel in channels {
            check_channel(channel)?;
        }
        let mut target = Target::from_url(url)?;
        for_listening(&mut target.config);
        let listen_sql = channels
            .iter()
            .map(|channel| format!("LISTEN {};", quoted(channel)))
            .collect();
        let setup = Setup { target, listen_sql };
        let (link, early) = block_on(listen(&setup))??;
        let (sender, events) = mpsc::unbounded_channel();
        let (stop, stopped) = oneshot::channel();
        announce(&sender, early);
        runtime()?.spawn(run(setup, link, sender, stopped));
        Ok(Listener {
            events,
            _stop: stop,
        })
    }

    /// The next event, waiting for it. `None` only if the listening task is gone, which does
    /// not happen while the listener lives unless the task panicked.
    pub async fn recv(&mut self) -> Option<Event> {
        self.events.recv().await
    }
}

impl Stream for Listener {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        self.events.poll_recv(cx)
    }
}

/// Sends `payload` on `channel` (`SELECT pg_notify(channel, payload)`): inside a transaction it
/// is delivered when the transaction commits, and never if it rolls back. PostgreSQL delivers
/// one of several identical notifications sent in one transaction, so make payloads distinct
/// (a row's id) when each one counts.
///
/// # Errors
/// A payload over PostgreSQL's limit (checked here, before the server is asked), or the
/// server's refusal (an empty or too long channel name).
pub fn notify(conn: &mut PgConn, channel: &str, payload: &str) -> QueryResult<()> {
    check_payload(payload).map_err(|e| DieselError::QueryBuilderError(e.into()))?;
    diesel::sql_query("SELECT pg_notify($1, $2)")
        .bind::<Text, _>(channel)
        .bind::<Text, _>(payload)
        .execute(conn)?;
    Ok(())
}

/// Settings for a listening connection where the URL leaves them to tokio-postgres: a name to
/// find it by in `pg_stat_activity`, and TCP keepalives that notice a vanished server in about
/// a minute, not two hours (tokio-postgres's default, kept for the store's connections) — a
/// listener sits idle, and is the one connection whose silent loss costs something.
fn for_listening(config: &mut tokio_postgres::Config) {
    if config.get_application_name().is_none() {
        config.application_name(APPLICATION_NAME);
    }
    if config.get_keepalives_idle() == Duration::from_secs(2 * 60 * 60) {
        config.keepalives_idle(Duration::from_secs(30));
    }
    if config.get_keepalives_interval().is_none() {
        config.keepalives_interval(Duration::from_secs(10));
    }
    if config.get_keepalives_retries().is_none() {
        config.keepalives_retries(3);
    }
}

/// Refuses a payload PostgreSQL would refuse.
fn check_payload(payload: &str) -> Result<(), String> {
    if payload.len() >= PAYLOAD_LIMIT {
        return Err(format!(
            "payload of {} bytes is over PostgreSQL's {PAYLOAD_LIMIT}-byte limit (at most {})",
            payload.len(),
            PAYLOAD_LIMIT - 1
        ));
    }
    Ok(())
}

/// Refuses a channel name a listener could not listen on as named.
fn check_channel(channel: &str) -> Result<(), String> {
    if channel.is_empty() {
        return Err("a channel name cannot be empty".to_string());
    }
    if channel.len() > CHANNEL_LIMIT {
        return Err(format!(
            "channel name {channel:?} is {} bytes; PostgreSQL keeps at most {CHANNEL_LIMIT}",
            channel.len()
        ));
    }
    Ok(())
}

/// What every (re)connection needs.
struct Setup {
    /// Where to connect, and how.
    target: Target,
    /// The `LISTEN` statements for every channel, in one batch.
    listen_sql: String,
}

/// A connection that is listening.
struct Link {
    /// Unused once listening, but dropping it would close the connection.
    client: Client,
    /// Polled for the notifications.
    raw: Raw,
}

/// Connects and listens; also returns the notifications that arrived while `LISTEN` ran, so
/// they can follow [`Event::Listening`].
async fn listen(setup: &Setup) -> Result<(Link, Vec<Event>), String> {
    let (client, mut raw) = setup.target.connect().await?;
    let mut early = Vec::new();
    beside(
        &mut raw,
        client.batch_execute(&setup.listen_sql),
        &mut early,
    )
    .await?
    .map_err(describe)?;
    Ok((Link { client, raw }, early))
}

/// Runs `work` (a query on the client of `raw`) while polling `raw`, without which the query
/// never gets its answer; notifications that arrive meanwhile go to `early`.
async fn beside<F: Future>(
    raw: &mut Raw,
    work: F,
    early: &mut Vec<Event>,
) -> Result<F::Output, String> {
    let mut work = pin!(work);
    poll_fn(|cx| {
        if let Poll::Ready(output) = work.as_mut().poll(cx) {
            return Poll::Ready(Ok(output));
        }
        loop {
            match raw.poll_message(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(message))) => early.extend(event(message)),
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(describe(e))),
                Poll::Ready(None) => return Poll::Ready(Err(closed())),
            }
        }
    })
    .await
}

/// The listening task: forwards notifications, reconnects when the connection is lost, and
/// ends when the listener is dropped (`stopped` then resolves), closing its connection.
async fn run(
    setup: Setup,
    mut link: Link,
    events: mpsc::UnboundedSender<Event>,
    mut stopped: oneshot::Receiver<()>,
) {
    loop {
        let lost = match select(&mut stopped, pin!(forward(&mut link.raw, &events))).await {
            Either::Left(_) => None,
            Either::Right((reason, _)) => Some(reason),
        };
        let Some(reason) = lost else {
            return close(link).await;
        };
        tracing::warn!(%reason, "lost the PostgreSQL listening connection; reconnecting");
        // The receiver lives as long as `stopped` does, so sending cannot fail here.
        let _ = events.send(Event::Lost(reason));
        let Some((next, early)) = reconnect(&setup, &mut stopped).await else {
            return;
        };
        link = next;
        announce(&events, early);
    }
}

/// Forwards every notification of `raw` to `events` until the connection ends; returns why
/// it ended.
async fn forward(raw: &mut Raw, events: &mpsc::UnboundedSender<Event>) -> String {
    loop {
        match poll_fn(|cx| raw.poll_message(cx)).await {
            Some(Ok(message)) => {
                if let Some(event) = event(message) {
                    // Only fails once the listener is dropped, which also stops this task.
                    let _ = events.send(event);
                }
            }
            Some(Err(e)) => return describe(e),
            None => return closed(),
        }
    }
}

/// Connects and listens again, waiting [`FIRST_DELAY`] first and twice as long after each
/// failure, up to [`LAST_DELAY`]; `None` when the listener is dropped meanwhile.
async fn reconnect(
    setup: &Setup,
    stopped: &mut oneshot::Receiver<()>,
) -> Option<(Link, Vec<Event>)> {
    let mut delay = FIRST_DELAY;
    loop {
        let attempt = async move {
            tokio::time::sleep(delay).await;
            listen(setup).await
        };
        match select(&mut *stopped, pin!(attempt)).await {
            Either::Left(_) => return None,
            Either::Right((Ok(listening), _)) => return Some(listening),
            Either::Right((Err(error), _)) => {
                tracing::warn!(%error, retry_in = ?delay * 2, "cannot listen on PostgreSQL yet");
                delay = (delay * 2).min(LAST_DELAY);
            }
        }
    }
}

/// Reports listening, then the notifications that arrived while `LISTEN` ran.
fn announce(events: &mpsc::UnboundedSender<Event>, early: Vec<Event>) {
    for event in std::iter::once(Event::Listening).chain(early) {
        // Only fails once the listener is dropped, which also stops the task.
        let _ = events.send(event);
    }
}

/// Says goodbye to the server (dropping the client makes the connection send `Terminate`)
/// and waits briefly for the socket to close, so the server sees a clean exit.
async fn close(link: Link) {
    let Link { client, mut raw } = link;
    drop(client);
    let ended = poll_fn(|cx| loop {
        match raw.poll_message(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Some(Ok(_))) => {}
            Poll::Ready(_) => return Poll::Ready(()),
        }
    });
    // A server that does not answer in time is left to notice the closed socket itself.
    let _ = tokio::time::timeout(CLOSE_WAIT, ended).await;
}

/// The event a message from the server makes, if any: notices are only logged.
fn event(message: AsyncMessage) -> Option<Event> {
    match message {
        AsyncMessage::Notification(notification) => Some(Event::Notification {
            channel: notification.channel().to_string(),
            payload: notification.payload().to_string(),
        }),
        AsyncMessage::Notice(notice) => {
            tracing::info!(
                severity = notice.severity(),
                "PostgreSQL listening connection: {}",
                notice.message()
            );
            None
        }
        _ => None,
    }
}

/// Why a connection that ended without an error ended.
fn closed() -> String {
    "the server closed the connection".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use diesel::connection::SimpleConnection;
    use diesel::Connection;
    use pretty_assertions::assert_eq;
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use tokio::sync::mpsc::error::TryRecvError;

    /// The server the PostgreSQL tests run against. The tests that need it are ignored in this
    /// crate's own run: the workspace's `needs` test binary runs them (`--ignored`) when
    /// PostgreSQL is there, and says by name that they were skipped when it is not.
    fn server() -> String {
        std::env::var("RUMMY_TEST_POSTGRES_URL").expect("RUMMY_TEST_POSTGRES_URL names the server")
    }

    /// A channel name no other test, nor another test process on the same server, uses.
    fn channel(name: &str) -> String {
        format!("t{}_{name}", std::process::id())
    }

    /// A notification event.
    fn note(channel: &str, payload: &str) -> Event {
        Event::Notification {
            channel: channel.to_string(),
            payload: payload.to_string(),
        }
    }

    /// The listener's next event, failing the test after ten seconds.
    fn next(listener: &mut Listener) -> Event {
        // The timer is made inside `block_on`, where the crate's runtime (and its clock) is.
        block_on(async { tokio::time::timeout(Duration::from_secs(10), listener.recv()).await })
            .unwrap()
            .expect("an event within ten seconds")
            .expect("the listening task is running")
    }

    /// The listener's events up to and including the notification carrying `last`.
    fn until(listener: &mut Listener, last: &str) -> Vec<Event> {
        let mut events = Vec::new();
        loop {
            let event = next(listener);
            let done = matches!(&event, Event::Notification { payload, .. } if payload == last);
            events.push(event);
            if done {
                return events;
            }
        }
    }

    /// The backend process of the connection whose last statement was `query`, if any.
    fn backend_running(conn: &mut PgConn, query: &str) -> Option<i32> {
        #[derive(diesel::QueryableByName)]
        struct Pid {
            #[diesel(sql_type = diesel::sql_types::Integer)]
            pid: i32,
        }
        let pids: Vec<Pid> = diesel::sql_query("SELECT pid FROM pg_stat_activity WHERE query = $1")
            .bind::<Text, _>(query)
            .load(conn)
            .unwrap();
        assert!(pids.len() <= 1, "one listener per channel");
        pids.first().map(|p| p.pid)
    }

    /// Notifications arrive once each, with their channel, in the order their transactions
    /// committed — not the order they were sent in.
    #[test]
    #[ignore = "needs PostgreSQL (RUMMY_TEST_POSTGRES_URL): the needs test binary runs it"]
    fn notifications_arrive_once_in_commit_order() {
        let url = server();
        let ch = channel("order");
        let mut listener = Listener::start(&url, &[&ch]).unwrap();
        assert_eq!(next(&mut listener), Event::Listening);
        let mut first = PgConn::connect(&url).unwrap();
        let mut second = PgConn::connect(&url).unwrap();
        first.batch_execute("BEGIN").unwrap();
        notify(&mut first, &ch, "first 1").unwrap();
        notify(&mut first, &ch, "first 2").unwrap();
        second.batch_execute("BEGIN").unwrap();
        notify(&mut second, &ch, "second 1").unwrap();
        second.batch_execute("COMMIT").unwrap();
        first.batch_execute("COMMIT").unwrap();
        notify(&mut second, &ch, "end").unwrap();
        assert_eq!(
            until(&mut listener, "end"),
            vec![
                note(&ch, "second 1"),
                note(&ch, "first 1"),
                note(&ch, "first 2"),
                note(&ch, "end"),
            ]
        );
        assert_eq!(listener.events.try_recv(), Err(TryRecvError::Empty));
    }

    /// A notification sent in a transaction that rolls back never arrives.
    #[test]
    #[ignore = "needs PostgreSQL (RUMMY_TEST_POSTGRES_URL): the needs test binary runs it"]
    fn a_rolled_back_notification_never_arrives() {
        let url = server();
        let ch = channel("rollback");
        let mut listener = Listener::start(&url, &[&ch]).unwrap();
        assert_eq!(next(&mut listener), Event::Listening);
        let mut conn = PgConn::connect(&url).unwrap();
        let rolled_back = conn.transaction::<(), DieselError, _>(|conn| {
            notify(conn, &ch, "rolled back")?;
            Err(DieselError::RollbackTransaction)
        });
        assert_eq!(rolled_back, Err(DieselError::RollbackTransaction));
        conn.transaction(|conn| notify(conn, &ch, "committed"))
            .unwrap();
        assert_eq!(
            until(&mut listener, "committed"),
            vec![note(&ch, "committed")]
        );
    }

    /// One listener hears each of its channels under its own name, matched exactly (case
    /// included), and nothing sent to a channel it does not listen on.
    #[test]
    #[ignore = "needs PostgreSQL (RUMMY_TEST_POSTGRES_URL): the needs test binary runs it"]
    fn each_channel_arrives_under_its_own_name() {
        let url = server();
        let (one, two, lower_two) = (channel("one"), channel("Two"), channel("two"));
        let mut listener = Listener::start(&url, &[&one, &two]).unwrap();
        assert_eq!(next(&mut listener), Event::Listening);
        let mut conn = PgConn::connect(&url).unwrap();
        notify(&mut conn, &one, "1").unwrap();
        notify(&mut conn, &lower_two, "not listened to").unwrap();
        notify(&mut conn, &two, "2").unwrap();
        notify(&mut conn, &one, "end").unwrap();
        assert_eq!(
            until(&mut listener, "end"),
            vec![note(&one, "1"), note(&two, "2"), note(&one, "end")]
        );
    }

    /// When its connection is killed the listener reports it lost, reconnects, reports
    /// listening again, and later notifications arrive.
    #[test]
    #[ignore = "needs PostgreSQL (RUMMY_TEST_POSTGRES_URL): the needs test binary runs it"]
    fn listening_resumes_after_the_connection_is_killed() {
        let url = server();
        let ch = channel("killed");
        let mut listener = Listener::start(&url, &[&ch]).unwrap();
        assert_eq!(next(&mut listener), Event::Listening);
        let mut conn = PgConn::connect(&url).unwrap();
        let listening = format!("LISTEN \"{ch}\";");
        let pid = backend_running(&mut conn, &listening).expect("the listener's backend");
        diesel::sql_query("SELECT pg_terminate_backend($1)")
            .bind::<diesel::sql_types::Integer, _>(pid)
            .execute(&mut conn)
            .unwrap();
        match next(&mut listener) {
            Event::Lost(reason) => assert!(
                reason.contains("terminating connection due to administrator command"),
                "{reason}"
            ),
            other => panic!("expected the connection lost, got {other:?}"),
        }
        assert_eq!(next(&mut listener), Event::Listening);
        let again = backend_running(&mut conn, &listening).expect("a new backend");
        assert_ne!(again, pid);
        notify(&mut conn, &ch, "after").unwrap();
        assert_eq!(until(&mut listener, "after"), vec![note(&ch, "after")]);
    }

    /// A TCP relay to the test server that the test can take down: an outage it controls.
    struct Relay {
        /// Where the relay accepts connections, on loopback.
        port: u16,
        /// While set, connections are accepted and closed at once.
        down: Arc<AtomicBool>,
        /// How many connections were closed that way.
        refused: Arc<AtomicUsize>,
        /// Both ends of every relayed connection, to cut them.
        open: Arc<Mutex<Vec<TcpStream>>>,
    }

    impl Relay {
        /// Relays 127.0.0.1:<some port> to the server `url` names.
        fn to(url: &str) -> Relay {
            let options: crate::ConnectOptions = url.parse().unwrap();
            let host = match &options.config.get_hosts()[0] {
                tokio_postgres::config::Host::Tcp(host) => host.clone(),
                other => panic!("the relay needs a TCP server, not {other:?}"),
            };
            let upstream = (host, options.config.get_ports()[0]);
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let relay = Relay {
                port: listener.local_addr().unwrap().port(),
                down: Arc::default(),
                refused: Arc::default(),
                open: Arc::default(),
            };
            let (down, refused, open) = (
                Arc::clone(&relay.down),
                Arc::clone(&relay.refused),
                Arc::clone(&relay.open),
            );
            std::thread::spawn(move || {
                for client in listener.incoming() {
                    let client = client.unwrap();
                    if down.load(Ordering::SeqCst) {
                        refused.fetch_add(1, Ordering::SeqCst);
                        continue;
                    }
                    let server = TcpStream::connect((upstream.0.as_str(), upstream.1)).unwrap();
                    let mut ends = open.lock().unwrap();
                    ends.push(client.try_clone().unwrap());
                    ends.push(server.try_clone().unwrap());
                    for (mut from, mut to) in [
                        (client.try_clone().unwrap(), server.try_clone().unwrap()),
                        (server, client),
                    ] {
                        std::thread::spawn(move || {
                            let _ = std::io::copy(&mut from, &mut to);
                            let _ = to.shutdown(Shutdown::Both);
                        });
                    }
                }
            });
            relay
        }

        /// `url` pointed at the relay instead.
        fn url(&self, url: &str) -> String {
            let (scheme, rest) = url.split_once("://").unwrap();
            let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
            let user = authority
                .rsplit_once('@')
                .map(|(user, _)| format!("{user}@"))
                .unwrap_or_default();
            format!("{scheme}://{user}127.0.0.1:{}/{path}", self.port)
        }

        /// Cuts every relayed connection and refuses new ones.
        fn cut(&self) {
            self.down.store(true, Ordering::SeqCst);
            for end in self.open.lock().unwrap().drain(..) {
                let _ = end.shutdown(Shutdown::Both);
            }
        }
    }

    /// While the server cannot be reached the listener keeps trying; once it can, the
    /// listener reports listening again and notifications arrive.
    #[test]
    #[ignore = "needs PostgreSQL (RUMMY_TEST_POSTGRES_URL): the needs test binary runs it"]
    fn the_listener_keeps_trying_until_the_server_is_back() {
        let url = server();
        let ch = channel("outage");
        let relay = Relay::to(&url);
        let mut listener = Listener::start(&relay.url(&url), &[&ch]).unwrap();
        assert_eq!(next(&mut listener), Event::Listening);
        relay.cut();
        assert!(matches!(next(&mut listener), Event::Lost(_)));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while relay.refused.load(Ordering::SeqCst) < 3 {
            assert!(std::time::Instant::now() < deadline, "no more attempts");
            std::thread::sleep(Duration::from_millis(10));
        }
        relay.down.store(false, Ordering::SeqCst);
        assert_eq!(next(&mut listener), Event::Listening);
        let mut conn = PgConn::connect(&url).unwrap();
        notify(&mut conn, &ch, "back").unwrap();
        assert_eq!(until(&mut listener, "back"), vec![note(&ch, "back")]);
    }

    /// Over a megabyte of payload in 2,000 notifications, sent in transactions of 100,
    /// arrives whole and in order.
    #[test]
    #[ignore = "needs PostgreSQL (RUMMY_TEST_POSTGRES_URL): the needs test binary runs it"]
    fn two_thousand_notifications_over_a_megabyte_all_arrive() {
        let url = server();
        let ch = channel("bulk");
        let mut listener = Listener::start(&url, &[&ch]).unwrap();
        assert_eq!(next(&mut listener), Event::Listening);
        let payloads: Vec<String> = (0..2000)
            .map(|i| format!("{i:04} {}", "x".repeat(600)))
            .collect();
        assert!(payloads.iter().map(String::len).sum::<usize>() > 1_000_000);
        let mut conn = PgConn::connect(&url).unwrap();
        for batch in payloads.chunks(100) {
            conn.transaction(|conn| {
                batch
                    .iter()
                    .try_for_each(|payload| notify(conn, &ch, payload))
            })
            .unwrap();
        }
        let received: Vec<Event> = (0..payloads.len()).map(|_| next(&mut listener)).collect();
        let sent: Vec<Event> = payloads.iter().map(|p| note(&ch, p)).collect();
        assert!(received == sent, "the notifications differ from those sent");
        assert_eq!(listener.events.try_recv(), Err(TryRecvError::Empty));
    }

    /// The longest payload PostgreSQL takes is sent and arrives; one byte more is refused
    /// before the server is asked.
    #[test]
    #[ignore = "needs PostgreSQL (RUMMY_TEST_POSTGRES_URL): the needs test binary runs it"]
    fn the_longest_payload_arrives_and_a_longer_one_is_refused() {
        let url = server();
        let ch = channel("long");
        let mut listener = Listener::start(&url, &[&ch]).unwrap();
        assert_eq!(next(&mut listener), Event::Listening);
        let mut conn = PgConn::connect(&url).unwrap();
        let longest = "x".repeat(PAYLOAD_LIMIT - 1);
        notify(&mut conn, &ch, &longest).unwrap();
        assert_eq!(next(&mut listener), note(&ch, &longest));
        assert_eq!(
            notify(&mut conn, &ch, &"x".repeat(PAYLOAD_LIMIT))
                .unwrap_err()
                .to_string(),
            "payload of 8000 bytes is over PostgreSQL's 8000-byte limit (at most 7999)"
        );
    }

    /// Dropping the listener closes its connection on the server.
    #[test]
    #[ignore = "needs PostgreSQL (RUMMY_TEST_POSTGRES_URL): the needs test binary runs it"]
    fn dropping_the_listener_closes_its_connection() {
        let url = server();
        let ch = channel("dropped");
        let mut listener = Listener::start(&url, &[&ch]).unwrap();
        assert_eq!(next(&mut listener), Event::Listening);
        let mut conn = PgConn::connect(&url).unwrap();
        let listening = format!("LISTEN \"{ch}\";");
        assert!(backend_running(&mut conn, &listening).is_some());
        drop(listener);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while backend_running(&mut conn, &listening).is_some() {
            assert!(
                std::time::Instant::now() < deadline,
                "the backend is still there"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Payloads PostgreSQL would refuse are refused up front, saying why.
    #[test]
    fn payload_over_the_limit_is_refused() {
        assert_eq!(check_payload(&"x".repeat(PAYLOAD_LIMIT - 1)), Ok(()));
        assert_eq!(
            check_payload(&"é".repeat(4000)),
            Err(
                "payload of 8000 bytes is over PostgreSQL's 8000-byte limit (at most 7999)"
                    .to_string()
            )
        );
    }

    /// A listener needs channels PostgreSQL can listen on as named; nothing is contacted
    /// before they are checked.
    #[test]
    fn start_refuses_channels_postgres_cannot_listen_on() {
        let nowhere = "postgres://u@127.0.0.1:1/db?sslmode=disable";
        let refused = |channels: &[&str]| Listener::start(nowhere, channels).err();
        assert_eq!(
            refused(&[]),
            Some("a listener needs at least one channel".to_string())
        );
        assert_eq!(
            refused(&["ok", ""]),
            Some("a channel name cannot be empty".to_string())
        );
        let long = "c".repeat(64);
        assert_eq!(
            refused(&[&long]),
            Some(format!(
                "channel name \"{long}\" is 64 bytes; PostgreSQL keeps at most 63"
            ))
        );
    }

    /// A server that cannot be reached is an error from `start`, not an event.
    #[test]
    fn start_reports_an_unreachable_server() {
        let error = Listener::start("postgres://u@127.0.0.1:1/db?sslmode=disable", &["c"])
            .err()
            .expect("no server listens on port 1");
        assert!(error.starts_with("error connecting to server"), "{error}");
    }
}
