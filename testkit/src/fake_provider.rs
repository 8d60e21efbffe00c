//! A fake OpenAI-compatible HTTP provider on 127.0.0.1 with scripted replies and request recording.
//!
//! The server runs on its own thread with its own `actix_rt::System`, so it works the same
//! whether the test calling it runs on actix, plain tokio, or no runtime at all.
//!
//! `POST /v1/chat/completions`, `/chat/completions`, `/v1/responses` and `/responses` all
//! draw from one FIFO reply queue. Content replies take the chat-completion shape, or the
//! Responses API shape (`output[]` items, `response.*` events) on the `/responses` paths.
//!
//! It also stands in for a SearXNG instance: `GET /search?q=…&format=json` answers
//! the results set with [`FakeProvider::set_search_results`] (or the failure set with
//! [`FakeProvider::set_search_failure`]), so one loopback server plays every backend; and for
//! the web the model fetches: `GET` of a path scripted with [`FakeProvider::set_page`] or
//! [`FakeProvider::set_redirect`] answers that page.

mod reply;
mod responses;
mod serve;
mod timer;

use std::collections::VecDeque;
use std::net::{SocketAddr, TcpListener};
use std::sync::{mpsc, Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::{web, App, HttpServer};
use serde_json::{json, Value};
use tokio::sync::watch;

pub use reply::{Gate, Reply, ReplyBody};

/// Largest request body the fake accepts; big enough for any prompt a test or benchmark sends.
const MAX_BODY: usize = 64 << 20;

/// One HTTP request as the fake provider received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// HTTP method, e.g. `"POST"`.
    pub method: String,
    /// Request path without the query string, e.g. `"/v1/chat/completions"`.
    pub path: String,
    /// The query string's parameters, decoded, in order.
    pub query: Vec<(String, String)>,
    /// All headers in arrival order, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON, or `Value::Null` when it is not JSON.
    pub body: Value,
    /// The body as (lossy UTF-8) text.
    pub raw_body: String,
}

impl RecordedRequest {
    /// The first value of a header, looked up case-insensitively.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The first value of a query-string parameter, decoded.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// True when this request was served from the scripted reply queue.
    pub fn is_completion(&self) -> bool {
        serve::is_completion(&self.method, &self.path)
    }
}

/// Computes a reply from the request body; see [`FakeProvider::set_responder`].
type Responder = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

/// What `GET /search` answers once scripted.
#[derive(Debug, Clone)]
pub(crate) enum SearchAnswer {
    /// SearXNG's JSON with these `results`.
    Results(Value),
    /// This status and body instead.
    Failure(u16, ReplyBody),
}

/// What a `GET` of a scripted page path answers: a status, its headers and a body.
#[derive(Debug, Clone)]
pub(crate) struct Page {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

/// Mutable provider state; always locked briefly and never across an await.
#[derive(Default)]
struct State {
    queue: VecDeque<Reply>,
    responder: Option<Responder>,
    fallback: Option<Reply>,
    models: Option<Value>,
    props: Option<Value>,
    show: Option<Value>,
    search: Option<SearchAnswer>,
    search_delay: Option<std::time::Duration>,
    pages: std::collections::HashMap<String, Page>,
    requests: Vec<RecordedRequest>,
    served: u64,
    in_flight: usize,
    max_in_flight: usize,
}

/// State shared between the test side and the server thread.
pub(crate) struct Shared {
    state: Mutex<State>,
    /// (all requests, completion requests) recorded so far; lets waiters wake without polling.
    counts: watch::Sender<(usize, usize)>,
    /// Keeps replies' simulated latency to the microsecond (see [`timer`]).
    timer: timer::PreciseTimer,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking test thread must not take every later assertion down with it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn record(&self, request: RecordedRequest) {
        let completion = request.is_completion();
        self.lock().requests.push(request);
        self.counts.send_modify(|(all, chat)| {
            *all += 1;
            *chat += usize::from(completion);
        });
    }

    /// The next scripted reply (else the responder's, else the fallback) and the serial number of this completion.
    fn next_reply(&self, body: &Value) -> (Option<Reply>, u64) {
        let (queued, responder, served) = {
            let mut state = self.lock();
            state.served += 1;
            let queued = state.queue.pop_front().or_else(|| {
                state
                    .responder
                    .is_none()
                    .then(|| state.fallback.clone())
                    .flatten()
            });
            (queued, state.responder.clone(), state.served)
        };
        // The responder runs unlocked: it is test code and may take its time.
        let reply = queued.or_else(|| responder.map(|respond| respond(body)));
        (reply, served)
    }

    fn enter_flight(&self) {
        let mut state = self.lock();
        state.in_flight += 1;
        state.max_in_flight = state.max_in_flight.max(state.in_flight);
    }

    fn leave_flight(&self) {
        let mut state = self.lock();
        state.in_flight = state.in_flight.saturating_sub(1);
    }

    fn models(&self) -> Value {
        let models = self.lock().models.clone();
        models.unwrap_or_else(|| json!({"object": "list", "data": []}))
    }

    fn props(&self) -> Option<Value> {
        self.lock().props.clone()
    }

    fn show(&self) -> Option<Value> {
        self.lock().show.clone()
    }

    fn search(&self) -> Option<SearchAnswer> {
        self.lock().search.clone()
    }

    fn search_delay(&self) -> Option<std::time::Duration> {
        self.lock().search_delay
    }

    pub(crate) fn page(&self, path: &str) -> Option<Page> {
        self.lock().pages.get(path).cloned()
    }
}

/// A running fake provider; stops when dropped.
pub struct FakeProvider {
    addr: SocketAddr,
    shared: Arc<Shared>,
    handle: Option<ServerHandle>,
    thread: Option<JoinHandle<()>>,
}

impl FakeProvider {
    /// Binds 127.0.0.1 on a free port and serves from a dedicated thread; returns once bound.
    pub fn start() -> std::io::Result<FakeProvider> {
        // Binding here (not on the server thread) means the port is listening before we return
        // and bind errors reach the caller directly.
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            counts: watch::Sender::new((0, 0)),
            timer: timer::PreciseTimer::start()?,
        });
        let data = web::Data::from(shared.clone());
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(format!("fake-provider-{}", addr.port()))
            .spawn(move || {
                actix_rt::System::new().block_on(async move {
                    let bound = HttpServer::new(move || {
                        App::new()
                            .app_data(data.clone())
                            .app_data(web::PayloadConfig::new(MAX_BODY))
                            .default_service(web::to(serve::dispatch))
                    })
                    .workers(1)
                    // SSE chunks are small writes; without this each waits for a delayed ACK.
                    .tcp_nodelay(true)
                    .disable_signals()
                    .shutdown_timeout(0)
                    .listen(listener);
                    match bound {
                        Ok(server) => {
                            let server = server.run();
                            let _ = tx.send(Ok(server.handle()));
                            let _ = server.await;
                        }
                        Err(err) => {
                            let _ = tx.send(Err(err));
                        }
                    }
                });
            })?;
        let handle = rx
            .recv()
            .map_err(|_| std::io::Error::other("fake provider thread died while starting"))??;
        Ok(FakeProvider {
            addr,
            shared,
            handle: Some(handle),
            thread: Some(thread),
        })
    }

    /// Root URL of the server, `http://127.0.0.1:<port>` (no trailing slash, no `/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues a reply; completion requests consume queued replies first in, first out.
    pub fn push(&self, reply: Reply) {
        self.shared.lock().queue.push_back(reply);
    }

    /// Number of queued replies not yet consumed.
    pub fn pending_replies(&self) -> usize {
        self.shared.lock().queue.len()
    }

    /// Answers every completion request the queue does not with `respond(request body)`,
    /// so one script can serve many concurrent conversations (it takes precedence over the fallback).
    pub fn set_responder(&self, respond: impl Fn(&Value) -> Reply + Send + Sync + 'static) {
        self.shared.lock().responder = Some(Arc::new(respond));
    }

    /// Sets the reply used (repeatedly) once the queue is empty; without one the answer is a 500.
    pub fn set_fallback(&self, reply: Reply) {
        self.shared.lock().fallback = Some(reply);
    }

    /// Sets the body of `GET /v1/models` (default `{"object":"list","data":[]}`).
    pub fn set_models(&self, models: Value) {
        self.shared.lock().models = Some(models);
    }

    /// Sets the body of `GET /props` (default 404), as llama.cpp's server answers it.
    pub fn set_props(&self, props: Value) {
        self.shared.lock().props = Some(props);
    }

    /// Sets the body of `POST /api/show` (default 404), as Ollama answers it.
    pub fn set_show(&self, show: Value) {
        self.shared.lock().show = Some(show);
    }

    /// Makes `GET /search` (SearXNG's JSON API; 404 until scripted) answer these `results`
    /// (an array of `{url, title, content}` objects) for every query.
    pub fn set_search_results(&self, results: Value) {
        self.shared.lock().search = Some(SearchAnswer::Results(results));
    }

    /// Makes `GET /search` answer this status and body instead, e.g. a `500` of a broken instance.
    pub fn set_search_failure(&self, code: u16, body: impl Into<ReplyBody>) {
        self.shared.lock().search = Some(SearchAnswer::Failure(code, body.into()));
    }

    /// Makes `GET /search` wait this long before answering, as a slow instance does.
    pub fn set_search_delay(&self, delay: std::time::Duration) {
        self.shared.lock().search_delay = Some(delay);
    }

    /// Makes `GET <path>` answer 200 with this content type and body: a web page for the
    /// model's web fetch (`/robots.txt` included).
    pub fn set_page(&self, path: &str, content_type: &str, body: &str) {
        let page = Page {
            status: 200,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.into(),
        };
        self.shared.lock().pages.insert(path.into(), page);
    }

    /// Makes `GET <path>` answer `302` to `location`.
    pub fn set_redirect(&self, path: &str, location: &str) {
        let page = Page {
            status: 302,
            headers: vec![("location".into(), location.into())],
            body: String::new(),
        };
        self.shared.lock().pages.insert(path.into(), page);
    }

    /// Only the `GET /search` requests, in arrival order.
    pub fn search_requests(&self) -> Vec<RecordedRequest> {
        let state = self.shared.lock();
        state
            .requests
            .iter()
            .filter(|r| r.method == "GET" && r.path == "/search")
            .cloned()
            .collect()
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// Only the requests to completion endpoints, in arrival order.
    pub fn chat_requests(&self) -> Vec<RecordedRequest> {
        let state = self.shared.lock();
        state
            .requests
            .iter()
            .filter(|r| r.is_completion())
            .cloned()
            .collect()
    }

    /// Waits until at least `n` requests arrived (or `timeout` passed) and returns them all.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> Vec<RecordedRequest> {
        self.wait_counts(timeout, |(all, _)| all >= n).await;
        self.requests()
    }

    /// Waits until at least `n` completion requests arrived (or `timeout` passed) and returns them.
    pub async fn wait_for_chat_requests(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Vec<RecordedRequest> {
        self.wait_counts(timeout, |(_, chat)| chat >= n).await;
        self.chat_requests()
    }

    async fn wait_counts(&self, timeout: Duration, done: impl Fn((usize, usize)) -> bool) {
        let mut counts = self.shared.counts.subscribe();
        // Timing out is not an error here: the caller asserts on what it gets back.
        let _ = tokio::time::timeout(timeout, counts.wait_for(|c| done(*c))).await;
    }

    /// Completion requests being served right now (streams count until their last chunk).
    pub fn in_flight(&self) -> usize {
        self.shared.lock().in_flight
    }

    /// The most completion requests ever served at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.shared.lock().max_in_flight
    }

    /// Stops the server, dropping open connections (including hanging ones); idempotent.
    pub fn stop(&mut self) {
        if let Some(handle) = self.handle.take() {
            // `stop` sends the command eagerly; the returned future only reports completion,
            // which joining the thread below waits for anyway.
            drop(handle.stop(false));
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        self.stop();
    }
}

impl std::fmt::Debug for FakeProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeProvider")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}
