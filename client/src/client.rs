//! [`Client`]: typed calls, typed notifications, and reconnection that replays what a dropped
//! connection missed.
//!
//! The client does its work when its owner awaits it: a call reads the connection until its
//! answer arrives, keeping the notifications it reads meanwhile for
//! [`Client::next_notification`]. When the connection drops and reconnection is on, the client
//! connects again, says the same hello, and asks `getRun {run, sinceSeq}` for every run it
//! follows: the `run/state` pushes it missed come next, in order, each exactly once (a push
//! whose `seq` it has already seen is dropped).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio::time::Instant;

use crate::connection::{
    into_result, method_of, params_of, response_id, ConnectOptions, Connection, Incoming,
};
use crate::error::{CallError, ClientError};
use crate::notifications::Notification;
use crate::params::{
    AddModelParams, AliasParams, ConstraintParams, GetBodyParams, GetEntriesParams, GetParams,
    GetRunParams, HelloParams, MoveParams, NoParams, Page, PersonaParams, RmParams,
    RouteCheckParams, RunAttributes, RunParams, SetParams, SkillParams, StreamEndParams,
    StreamParams, UpdateParams,
};
use crate::results::{
    Ack, AddedModel, BodySlice, Catalogue, Constraint, Entry, Hello, Model, NamedFile, Project,
    RouteCheck, RouteClass, RunSkill, RunSnapshot, RunSummary, SkillFile, State,
};

/// The most notifications one `getRun {sinceSeq}` answer replays; a full page means ask again.
const REPLAY_PAGE: usize = 1000;

/// Every method of the protocol this client has a typed call for.
pub const METHODS: &[&str] = &[
    "ping",
    "discover",
    "rummy/hello",
    "getProjects",
    "getModels",
    "addModel",
    "removeModel",
    "getRoutes",
    "route/check",
    "getRuns",
    "getRun",
    "getEntries",
    "getBody",
    "set",
    "get",
    "rm",
    "cp",
    "mv",
    "update",
    "file/constraint",
    "file/drop",
    "getConstraints",
    "skill/add",
    "skill/remove",
    "getSkills",
    "listSkills",
    "persona/set",
    "listPersonas",
    "stream",
    "stream/completed",
    "stream/aborted",
    "stream/cancel",
    "token/create",
    "token/list",
    "token/revoke",
    "project/set",
    "server/doctor",
];

/// The `run/state` seqs seen of one run. Pushes are numbered when they are written but sent
/// when their writes commit, and two writers (a turn, a stream's end) may commit out of
/// number order: so a later seq does not mean the earlier ones were seen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Seen {
    /// Every seq up to this one was seen.
    floor: i64,
    /// Seqs above `floor` seen so far.
    above: BTreeSet<i64>,
}

impl Seen {
    /// Records `seq`; false when it was seen before.
    fn insert(&mut self, seq: i64) -> bool {
        if seq <= self.floor || !self.above.insert(seq) {
            return false;
        }
        while self.above.remove(&(self.floor + 1)) {
            self.floor += 1;
        }
        true
    }

    /// Counts every seq up to `seq` as seen.
    fn all_up_to(&mut self, seq: i64) {
        if seq > self.floor {
            self.floor = seq;
            self.above.retain(|s| *s > seq);
            while self.above.remove(&(self.floor + 1)) {
                self.floor += 1;
            }
        }
    }
}

/// How to reach the server.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// `ws://host:port/ws`.
    pub url: String,
    /// Sent as `Authorization: Bearer` on every upgrade.
    pub token: Option<String>,
    /// How long a call may wait for its answer (`rummy/hello` waits as long as it takes: its
    /// first scan reads the whole project).
    pub timeout: Duration,
    /// Whether and how to reconnect when the connection drops.
    pub reconnect: Option<Reconnect>,
}

impl ClientOptions {
    /// Options for `url`: no token, 30 s calls, reconnection on.
    pub fn new(url: impl Into<String>) -> ClientOptions {
        ClientOptions {
            url: url.into(),
            token: None,
            timeout: Duration::from_secs(30),
            reconnect: Some(Reconnect::default()),
        }
    }
}

/// Reconnection: up to `attempts` tries, waiting `delay` before the first and twice as long
/// before each next one, at most `max_delay`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reconnect {
    /// Tries before giving up.
    pub attempts: u32,
    /// The wait before the first try.
    pub delay: Duration,
    /// The longest wait between tries.
    pub max_delay: Duration,
}

impl Default for Reconnect {
    fn default() -> Reconnect {
        Reconnect {
            attempts: 10,
            delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(5),
        }
    }
}

/// A proposal's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Accept (with an optional note for the model).
    Accept(Option<String>),
    /// Reject, with the reason the model reads.
    Reject(Option<String>),
    /// Report that applying it failed, with why.
    Error(Option<String>),
}

/// A connected client of a rummy server.
pub struct Client {
    options: ClientOptions,
    conn: Connection,
    /// The hello to say again after a reconnect.
    hello: Option<HelloParams>,
    /// Notifications read and not yet taken, each with its params as sent.
    notifications: VecDeque<(Notification, Value)>,
    /// Answers read while waiting for another, by id.
    answers: BTreeMap<u64, Value>,
    /// The `run/state` seqs seen of each run.
    seqs: BTreeMap<String, Seen>,
    /// The runs whose pushes a reconnect replays.
    followed: BTreeSet<String>,
    /// While a reconnect replays: notifications of the new connection wait here, behind the replay.
    held: Option<Vec<(Notification, Value)>>,
    /// A new connection that has not yet said hello and replayed (a reconnect was interrupted).
    unsynced: bool,
    reconnects: u32,
}

impl Client {
    /// Connects to the server.
    pub async fn connect(options: ClientOptions) -> Result<Client, ClientError> {
        let conn = Connection::open(&options.url, &connect_options(&options)).await?;
        Ok(Client {
            options,
            conn,
            hello: None,
            notifications: VecDeque::new(),
            answers: BTreeMap::new(),
            seqs: BTreeMap::new(),
            followed: BTreeSet::new(),
            held: None,
            unsynced: false,
            reconnects: 0,
        })
    }

    /// How many times the client has reconnected.
    pub fn reconnects(&self) -> u32 {
        self.reconnects
    }

    /// Binds the connection to a project; said again after every reconnect.
    pub async fn hello(&mut self, params: HelloParams) -> Result<Hello, CallError> {
        let id = self.send("rummy/hello", &params).await?;
        let hello = self.answer_within(id, None).await?;
        self.hello = Some(params);
        Ok(hello)
    }

    /// Calls `method` and reads its answer as `R`.
    pub async fn call<P: Serialize, R: DeserializeOwned>(
        &mut self,
        method: &str,
        params: &P,
    ) -> Result<R, CallError> {
        let id = self.send(method, params).await?;
        self.answer(id).await
    }

    /// Sends a call without waiting; pair with [`Client::answer`] (calls may be pipelined).
    pub async fn send<P: Serialize>(&mut self, method: &str, params: &P) -> Result<u64, CallError> {
        let params = serde_json::to_value(params)
            .map_err(|e| ClientError::Unexpected(format!("{method} params: {e}")))?;
        match self.conn.send_request(method, params).await {
            Ok(id) => Ok(id),
            Err(e) => {
                self.recover_or(e.clone()).await?;
                Err(CallError::Client(e))
            }
        }
    }

    /// Waits for the answer to call `id` and reads it as `R`.
    pub async fn answer<R: DeserializeOwned>(&mut self, id: u64) -> Result<R, CallError> {
        let timeout = self.options.timeout;
        self.answer_within(id, Some(timeout)).await
    }

    async fn answer_within<R: DeserializeOwned>(
        &mut self,
        id: u64,
        timeout: Option<Duration>,
    ) -> Result<R, CallError> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let value = loop {
            if let Some(answer) = self.answers.remove(&id) {
                break into_result(answer)?;
            }
            if let Err(e) = self.pump(deadline).await {
                if !matches!(e, ClientError::Timeout | ClientError::InvalidMessage(_)) {
                    // The answer went with the connection; what the call started may still
                    // have happened.
                    self.recover_or(e.clone()).await?;
                }
                return Err(CallError::Client(e));
            }
        };
        R::deserialize(&value)
            .map_err(|e| CallError::Client(ClientError::Unexpected(format!("answer {value}: {e}"))))
    }

    /// The next notification; waits at most `timeout` (forever with `None`). A dropped
    /// connection is reconnected (when configured) and what it missed comes first.
    pub async fn next_notification(
        &mut self,
        timeout: Option<Duration>,
    ) -> Result<Notification, ClientError> {
        self.next_message(timeout).await.map(|(n, _)| n)
    }

    /// As [`Client::next_notification`], with the params as the server sent them.
    pub async fn next_message(
        &mut self,
        timeout: Option<Duration>,
    ) -> Result<(Notification, Value), ClientError> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if let Some(n) = self.notifications.pop_front() {
                return Ok(n);
            }
            match self.pump(deadline).await {
                Ok(()) => {}
                Err(ClientError::InvalidMessage(_)) => {}
                Err(ClientError::Timeout) => return Err(ClientError::Timeout),
                Err(e) => self.recover_or(e).await?,
            }
        }
    }

    /// Takes the notifications already read, oldest first.
    pub fn drain_notifications(&mut self) -> Vec<Notification> {
        self.notifications.drain(..).map(|(n, _)| n).collect()
    }

    /// Follows `run`: after a reconnect, its `run/state` pushes after `since_seq` (or after the
    /// last one seen, if later) are replayed.
    pub fn follow(&mut self, run: &str, since_seq: i64) {
        self.followed.insert(run.to_owned());
        self.seqs
            .entry(run.to_owned())
            .or_default()
            .all_up_to(since_seq);
    }

    /// Stops following `run`.
    pub fn unfollow(&mut self, run: &str) {
        self.followed.remove(run);
    }

    /// The highest `run/state` seq of a run up to which every push has been seen.
    pub fn last_seq(&self, run: &str) -> Option<i64> {
        self.seqs.get(run).map(|seen| seen.floor)
    }

    /// Closes the connection politely.
    pub async fn close(self) {
        self.conn.close().await;
    }

    /// Reads one message and files it.
    async fn pump(&mut self, deadline: Option<Instant>) -> Result<(), ClientError> {
        if self.unsynced {
            self.after_reconnect().await?;
        }
        self.pump_raw(deadline).await
    }

    /// Reads one message of the current connection and files it.
    async fn pump_raw(&mut self, deadline: Option<Instant>) -> Result<(), ClientError> {
        match self.conn.read(deadline).await? {
            Incoming::Notification(message) => {
                let method = method_of(&message).unwrap_or_default().to_owned();
                let params = params_of(message);
                let n = Notification::parse(&method, params.clone());
                self.accept(n, params);
            }
            Incoming::Response(message) => {
                if let Some(id) = response_id(&message) {
                    self.answers.insert(id, message);
                }
            }
        }
        Ok(())
    }

    /// Files a notification: held during a replay; a push already seen (by its seq) dropped.
    fn accept(&mut self, n: Notification, params: Value) {
        if let Some(held) = self.held.as_mut() {
            held.push((n, params));
            return;
        }
        if let Notification::RunState(state) = &n {
            if let Some(seq) = state.seq {
                if !self.seqs.entry(state.run.clone()).or_default().insert(seq) {
                    return;
                }
            }
        }
        self.notifications.push_back((n, params));
    }

    /// Reconnects after `error` when reconnection is on; otherwise (or when every try failed)
    /// answers the error.
    async fn recover_or(&mut self, error: ClientError) -> Result<(), ClientError> {
        let Some(plan) = self.options.reconnect else {
            return Err(error);
        };
        if matches!(error, ClientError::Rejected { .. }) {
            return Err(error);
        }
        let mut delay = plan.delay;
        let mut last = error;
        for _ in 0..plan.attempts {
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(plan.max_delay);
            let options = connect_options(&self.options);
            match Connection::open(&self.options.url, &options).await {
                Ok(conn) => {
                    self.conn = conn;
                    self.unsynced = true;
                    match self.after_reconnect().await {
                        Ok(()) => return Ok(()),
                        Err(e) => last = e,
                    }
                }
                Err(e @ ClientError::Rejected { .. }) => return Err(e),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// One try at a new connection in place of a lost one: the same hello again, then what the
    /// followed runs missed, as an automatic reconnect does. For an owner that reconnects on
    /// its own schedule (with [`ClientOptions::reconnect`] off) and says so meanwhile.
    pub async fn reconnect(&mut self) -> Result<(), ClientError> {
        let options = connect_options(&self.options);
        let conn = Connection::open(&self.options.url, &options).await?;
        self.conn = conn;
        self.unsynced = true;
        self.after_reconnect().await
    }

    /// On a new connection: the hello again, then the replay of every followed run.
    async fn after_reconnect(&mut self) -> Result<(), ClientError> {
        self.unsynced = false;
        self.reconnects += 1;
        self.answers.clear();
        self.held = Some(Vec::new());
        let replayed = self.replay().await;
        let held = self.held.take().unwrap_or_default();
        for (n, params) in held {
            self.accept(n, params);
        }
        if replayed.is_err() {
            self.unsynced = true;
        }
        replayed
    }

    async fn replay(&mut self) -> Result<(), ClientError> {
        let transport = |e: CallError| match e {
            CallError::Client(e) => e,
            CallError::Rpc(e) => ClientError::Unexpected(format!("after reconnecting: {e}")),
        };
        if let Some(hello) = self.hello.clone() {
            let id = self.conn_send("rummy/hello", &hello).await?;
            self.raw_answer::<Hello>(id, None)
                .await
                .map_err(transport)?;
        }
        let runs: Vec<String> = self.followed.iter().cloned().collect();
        for run in runs {
            loop {
                let since = self.last_seq(&run).unwrap_or(0);
                // Only the missed pushes are read here: an empty history page spares the
                // server shipping the whole run again on every reconnect.
                let params = GetRunParams {
                    run: run.clone(),
                    since_seq: Some(since),
                    limit: Some(0),
                    offset: None,
                };
                let id = self.conn_send("getRun", &params).await?;
                let timeout = Some(self.options.timeout);
                let snapshot: RunSnapshot =
                    self.raw_answer(id, timeout).await.map_err(transport)?;
                let page = snapshot.missed.len();
                let held = self.held.take();
                for missed in snapshot.missed {
                    let n = Notification::parse(&missed.method, missed.params.clone());
                    self.accept(n, missed.params);
                }
                self.held = held;
                // More followed when the answer says so (the pushes that fit one message were
                // sent) or when a whole page came; an empty page ends it either way.
                if page == 0 || (!snapshot.missed_more && page < REPLAY_PAGE) {
                    break;
                }
            }
        }
        Ok(())
    }

    async fn conn_send<P: Serialize>(
        &mut self,
        method: &str,
        params: &P,
    ) -> Result<u64, ClientError> {
        let params = serde_json::to_value(params)
            .map_err(|e| ClientError::Unexpected(format!("{method} params: {e}")))?;
        self.conn.send_request(method, params).await
    }

    /// An answer on the current connection, without reconnecting.
    async fn raw_answer<R: DeserializeOwned>(
        &mut self,
        id: u64,
        timeout: Option<Duration>,
    ) -> Result<R, CallError> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if let Some(answer) = self.answers.remove(&id) {
                let value = into_result(answer)?;
                return R::deserialize(&value).map_err(|e| {
                    CallError::Client(ClientError::Unexpected(format!("answer {value}: {e}")))
                });
            }
            self.pump_raw(deadline).await?;
        }
    }
}

/// The typed calls, one per method.
impl Client {
    /// `ping`.
    pub async fn ping(&mut self) -> Result<(), CallError> {
        self.call::<_, Value>("ping", &NoParams {})
            .await
            .map(|_| ())
    }

    /// `discover`: the methods and notifications the server serves.
    pub async fn discover(&mut self) -> Result<Catalogue, CallError> {
        self.call("discover", &NoParams {}).await
    }

    /// `getProjects`: the projects this connection may open.
    pub async fn get_projects(&mut self) -> Result<Vec<Project>, CallError> {
        self.call("getProjects", &NoParams {}).await
    }

    /// `project/set` (admin): sets or removes a project's cost ceiling; answers the project as
    /// `getProjects` lists it.
    pub async fn project_set(
        &mut self,
        params: &crate::params::ProjectSetParams,
    ) -> Result<Value, CallError> {
        self.call("project/set", params).await
    }

    /// `token/create` (admin): a new token, its text shown this once.
    pub async fn token_create(
        &mut self,
        params: &crate::params::TokenCreateParams,
    ) -> Result<crate::results::MadeToken, CallError> {
        self.call("token/create", params).await
    }

    /// `server/doctor` (admin): what only the server can check — the database takes a write,
    /// each provider answers, each model's context length is known.
    pub async fn server_doctor(&mut self) -> Result<crate::results::DoctorReport, CallError> {
        self.call("server/doctor", &NoParams {}).await
    }

    /// `token/list` (admin): every token, without its text.
    pub async fn token_list(&mut self) -> Result<Vec<crate::results::TokenInfo>, CallError> {
        self.call("token/list", &NoParams {}).await
    }

    /// `token/revoke` (admin): revokes a token by id or listed prefix.
    pub async fn token_revoke(
        &mut self,
        token: &str,
    ) -> Result<crate::results::TokenInfo, CallError> {
        let params = crate::params::TokenRevokeParams {
            token: token.to_owned(),
        };
        self.call("token/revoke", &params).await
    }

    /// `getModels`.
    pub async fn get_models(&mut self, page: Page) -> Result<Vec<Model>, CallError> {
        self.call("getModels", &page).await
    }

    /// `addModel`.
    pub async fn add_model(&mut self, params: &AddModelParams) -> Result<AddedModel, CallError> {
        self.call("addModel", params).await
    }

    /// `removeModel`.
    pub async fn remove_model(&mut self, alias: &str) -> Result<Ack, CallError> {
        let params = AliasParams {
            alias: alias.to_owned(),
        };
        self.call("removeModel", &params).await
    }

    /// `getRoutes`: routing's class → model map as the server is configured.
    pub async fn get_routes(&mut self) -> Result<Vec<RouteClass>, CallError> {
        self.call("getRoutes", &NoParams {}).await
    }

    /// `route/check`: what routing would do with `text`, for `run` or a run with routing on.
    pub async fn route_check(
        &mut self,
        params: &RouteCheckParams,
    ) -> Result<RouteCheck, CallError> {
        self.call("route/check", params).await
    }

    /// `getRuns`: the project's runs, newest first.
    pub async fn get_runs(&mut self, page: Page) -> Result<Vec<RunSummary>, CallError> {
        self.call("getRuns", &page).await
    }

    /// `getRun`: a run's whole state; with `since_seq`, also the pushes after it (`missed`).
    pub async fn get_run(
        &mut self,
        run: &str,
        since_seq: Option<i64>,
    ) -> Result<RunSnapshot, CallError> {
        let params = GetRunParams {
            run: run.to_owned(),
            since_seq,
            ..GetRunParams::default()
        };
        self.call("getRun", &params).await
    }

    /// `getRun` with a page of the history: at most `limit` entries, the newest after skipping
    /// the `offset` newest; `history_total` says how many there are.
    pub async fn get_run_page(
        &mut self,
        run: &str,
        limit: i64,
        offset: i64,
    ) -> Result<RunSnapshot, CallError> {
        let params = GetRunParams {
            run: run.to_owned(),
            limit: Some(limit),
            offset: Some(offset),
            ..GetRunParams::default()
        };
        self.call("getRun", &params).await
    }

    /// `getEntries`.
    pub async fn get_entries(
        &mut self,
        params: &GetEntriesParams,
    ) -> Result<Vec<Entry>, CallError> {
        self.call("getEntries", params).await
    }

    /// `getBody`: one slice of an entry's body.
    pub async fn get_body(&mut self, params: &GetBodyParams) -> Result<BodySlice, CallError> {
        self.call("getBody", params).await
    }

    /// An entry's whole body, read slice by slice with `getBody` (what a body sent with
    /// `bodyTruncated` takes).
    pub async fn read_body(&mut self, run: &str, path: &str) -> Result<String, CallError> {
        let mut body = String::new();
        let mut next = Some(0);
        while let Some(offset) = next {
            let params = GetBodyParams {
                run: run.to_owned(),
                path: path.to_owned(),
                offset: Some(offset),
                length: None,
            };
            let slice = self.get_body(&params).await?;
            body.push_str(&slice.body);
            next = slice.next;
        }
        Ok(body)
    }

    /// `set`.
    pub async fn set(&mut self, params: &SetParams) -> Result<Ack, CallError> {
        self.call("set", params).await
    }

    /// `get`.
    pub async fn get(&mut self, params: &GetParams) -> Result<Ack, CallError> {
        self.call("get", params).await
    }

    /// `rm`.
    pub async fn rm(&mut self, params: &RmParams) -> Result<Ack, CallError> {
        self.call("rm", params).await
    }

    /// `cp`.
    pub async fn cp(&mut self, params: &MoveParams) -> Result<Ack, CallError> {
        self.call("cp", params).await
    }

    /// `mv` (`run://old` → `run://new` renames a run).
    pub async fn mv(&mut self, params: &MoveParams) -> Result<Ack, CallError> {
        self.call("mv", params).await
    }

    /// `update`.
    pub async fn update(&mut self, params: &UpdateParams) -> Result<Ack, CallError> {
        self.call("update", params).await
    }

    /// `file/constraint`.
    pub async fn file_constraint(&mut self, params: &ConstraintParams) -> Result<Ack, CallError> {
        self.call("file/constraint", params).await
    }

    /// `file/drop`.
    pub async fn file_drop(&mut self, params: &ConstraintParams) -> Result<Ack, CallError> {
        self.call("file/drop", params).await
    }

    /// `getConstraints`.
    pub async fn get_constraints(&mut self) -> Result<Vec<Constraint>, CallError> {
        self.call("getConstraints", &NoParams {}).await
    }

    /// `skill/add`.
    pub async fn skill_add(&mut self, params: &SkillParams) -> Result<Ack, CallError> {
        self.call("skill/add", params).await
    }

    /// `skill/remove`.
    pub async fn skill_remove(&mut self, params: &SkillParams) -> Result<Ack, CallError> {
        self.call("skill/remove", params).await
    }

    /// `getSkills`.
    pub async fn get_skills(&mut self, run: &str) -> Result<Vec<RunSkill>, CallError> {
        let params = RunParams {
            run: run.to_owned(),
        };
        self.call("getSkills", &params).await
    }

    /// `listSkills`.
    pub async fn list_skills(&mut self) -> Result<Vec<SkillFile>, CallError> {
        self.call("listSkills", &NoParams {}).await
    }

    /// `persona/set`.
    pub async fn persona_set(&mut self, params: &PersonaParams) -> Result<Ack, CallError> {
        self.call("persona/set", params).await
    }

    /// `listPersonas`.
    pub async fn list_personas(&mut self) -> Result<Vec<NamedFile>, CallError> {
        self.call("listPersonas", &NoParams {}).await
    }

    /// `stream`: a chunk of an accepted command's output.
    pub async fn stream(&mut self, params: &StreamParams) -> Result<Ack, CallError> {
        self.call("stream", params).await
    }

    /// `stream/completed`.
    pub async fn stream_completed(&mut self, params: &StreamEndParams) -> Result<Ack, CallError> {
        self.call("stream/completed", params).await
    }

    /// `stream/aborted`.
    pub async fn stream_aborted(&mut self, params: &StreamEndParams) -> Result<Ack, CallError> {
        self.call("stream/aborted", params).await
    }

    /// `stream/cancel`.
    pub async fn stream_cancel(&mut self, params: &StreamEndParams) -> Result<Ack, CallError> {
        self.call("stream/cancel", params).await
    }
}

/// Runs through `set` on `run://<alias>`.
impl Client {
    /// Starts a run (`alias` `None`: the server names it) and follows it; answers its alias.
    pub async fn start_run(
        &mut self,
        alias: Option<&str>,
        prompt: &str,
        attributes: &RunAttributes,
    ) -> Result<String, CallError> {
        let params = SetParams {
            path: format!("run://{}", alias.unwrap_or_default()),
            body: Some(prompt.to_owned()),
            attributes: Some(attributes.to_map()),
            ..SetParams::default()
        };
        let ack = self.set(&params).await?;
        let alias = ack
            .alias
            .ok_or_else(|| ClientError::Unexpected("a run start answered no alias".into()))?;
        self.follow(&alias, 0);
        Ok(alias)
    }

    /// Continues a run with a new prompt (a new loop, queued behind any running one).
    pub async fn continue_run(
        &mut self,
        run: &str,
        prompt: &str,
        attributes: &RunAttributes,
    ) -> Result<Ack, CallError> {
        let attributes = attributes.to_map();
        let params = SetParams {
            path: format!("run://{run}"),
            body: Some(prompt.to_owned()),
            attributes: (!attributes.is_empty()).then_some(attributes),
            ..SetParams::default()
        };
        self.set(&params).await
    }

    /// Folds a prompt into the run's active loop (a new loop when none is active).
    pub async fn inject(&mut self, run: &str, prompt: &str) -> Result<Ack, CallError> {
        let attributes = RunAttributes {
            inject: true,
            ..RunAttributes::default()
        };
        self.continue_run(run, prompt, &attributes).await
    }

    /// Forks `parent` into a new run `alias` with a prompt; answers the new alias.
    pub async fn fork_run(
        &mut self,
        parent: &str,
        alias: &str,
        prompt: &str,
        attributes: &RunAttributes,
    ) -> Result<String, CallError> {
        let attributes = RunAttributes {
            fork: Some(parent.to_owned()),
            ..attributes.clone()
        };
        self.start_run(Some(alias), prompt, &attributes).await
    }

    /// Cancels a run.
    pub async fn cancel_run(&mut self, run: &str) -> Result<Ack, CallError> {
        let params = SetParams {
            path: format!("run://{run}"),
            state: Some(State::Cancelled),
            ..SetParams::default()
        };
        self.set(&params).await
    }

    /// Resolves the proposal at `path` of `run`; `approves`: the hash of the proposal decided
    /// on (`run/proposal`'s, or the entry's `hash`), refused (-32005) when it changed.
    pub async fn resolve(
        &mut self,
        run: &str,
        path: &str,
        decision: Decision,
        approves: Option<&str>,
    ) -> Result<Ack, CallError> {
        let (state, body) = match decision {
            Decision::Accept(note) => (State::Resolved, note),
            Decision::Reject(reason) => (State::Cancelled, reason),
            Decision::Error(why) => (State::Failed, why),
        };
        let params = SetParams {
            run: Some(run.to_owned()),
            path: path.to_owned(),
            state: Some(state),
            body,
            approves: approves.map(str::to_owned),
            ..SetParams::default()
        };
        self.set(&params).await
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("url", &self.options.url)
            .field("followed", &self.followed)
            .field("buffered", &self.notifications.len())
            .field("reconnects", &self.reconnects)
            .finish_non_exhaustive()
    }
}

fn connect_options(options: &ClientOptions) -> ConnectOptions {
    ConnectOptions {
        token: options.token.clone(),
        ..ConnectOptions::default()
    }
}

#[cfg(test)]
mod tests {
    use super::Seen;
    use pretty_assertions::assert_eq;

    /// Seqs arriving out of number order are each taken once, and the floor moves only over
    /// an unbroken run of them (a replay asks from the floor).
    #[test]
    fn seqs_out_of_order_are_taken_once() {
        let mut seen = Seen::default();
        let taken: Vec<bool> = [1, 2, 4, 3, 4, 2, 6]
            .into_iter()
            .map(|seq| seen.insert(seq))
            .collect();
        assert_eq!(
            (
                taken,
                seen.floor,
                seen.above.into_iter().collect::<Vec<_>>()
            ),
            (vec![true, true, true, true, false, false, true], 4, vec![6])
        );
    }

    /// Following from a seq counts everything up to it as seen.
    #[test]
    fn following_from_a_seq_skips_what_came_before() {
        let mut seen = Seen::default();
        seen.insert(7);
        seen.all_up_to(5);
        assert_eq!(
            (seen.floor, seen.insert(3), seen.insert(6)),
            (5, false, true)
        );
        assert_eq!(seen.floor, 7);
    }
}
