//! Messages in, answers out: a message read as one call or a batch, each call started on its
//! route (after the rate bucket), a batch's answers gathered within the message limit, the
//! `rummy/hello` barrier (what arrives while a hello is in flight waits, in order), the
//! per-call timeout, and the notifications of runs with a call in flight held until its answer
//! is out.

use super::call::{Call, CallAnswer};
use super::rpc_log::CallLog;
use super::ws;
use super::{routes, Bind, SessionActor, ShownToken};
use crate::hub::Notify;
use actix::prelude::*;
use futures_util::future::{join_all, LocalBoxFuture};
use rummy_core::wire::jsonrpc::{
    error_response, parse_request, read_message, response, Message, RequestId,
};
use rummy_core::wire::{ErrorKind, Request, RpcError};
use rummy_protocol::methods::{self, Method};
use rummy_store::principal::Caller;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

/// The run key of requests whose run is not known yet (server-named starts): holds every notification.
const ANY_RUN: &str = "*";

/// Messages a connection may send while a `rummy/hello` is in flight (they wait for it); one
/// more is answered -32006. A client that waits for hello's answer never comes near it.
const MAX_DEFERRED: usize = 100;

impl SessionActor {
    /// Takes a call of `method` from the connection's rate bucket; the -32006 (with the exact
    /// `retryAfterMs`) when the bucket cannot cover it. `ping` is free.
    fn over_rate(&mut self, method: &str) -> Option<RpcError> {
        let bucket = self.rate.as_mut()?;
        if method == methods::Ping::NAME {
            return None;
        }
        let now_us = u64::try_from(self.opened.elapsed().as_micros()).unwrap_or(u64::MAX);
        let retry_after_ms = bucket.take(now_us).err()?;
        let per_second = self
            .deps
            .svc
            .config
            .fair
            .max_requests_per_second
            .unwrap_or(1);
        Some(
            RpcError::new(
                ErrorKind::Overloaded,
                format!("overloaded: this connection sends more than {per_second} calls a second; send this again in {retry_after_ms} ms"),
            )
            .with("retryAfterMs", Value::from(retry_after_ms)),
        )
    }

    fn max_message(&self) -> usize {
        self.deps.svc.config.limits.max_message_bytes
    }

    pub(super) fn send_error(
        &self,
        ctx: &mut ws::WebsocketContext<Self>,
        id: Option<&RequestId>,
        err: &RpcError,
    ) {
        self.counted_out();
        ctx.text(error_response(id, err));
    }

    pub(super) fn on_text(&mut self, text: &str, ctx: &mut ws::WebsocketContext<Self>) {
        if self.barrier {
            return self.defer(text, ctx);
        }
        self.handle_text(text, ctx);
    }

    /// Keeps a message that arrived while a hello is in flight, to handle after it; past
    /// [`MAX_DEFERRED`] messages or `RUMMY_MAX_MESSAGE_BYTES` waiting, answers -32006 instead.
    fn defer(&mut self, text: &str, ctx: &mut ws::WebsocketContext<Self>) {
        let bytes = self.deferred_bytes + text.len();
        if self.deferred.len() >= MAX_DEFERRED || bytes > self.max_message() {
            let err = RpcError::new(
                ErrorKind::Overloaded,
                format!("overloaded: {} messages wait for rummy/hello to complete; send this again after its answer", self.deferred.len()),
            )
            .with("retryAfterMs", Value::from(1000));
            return self.send_error(ctx, None, &err);
        }
        self.deferred_bytes = bytes;
        self.deferred.push_back(text.to_owned());
    }

    /// Lifts the hello barrier and handles the messages that waited for it, in order, until
    /// one of them is another hello.
    fn lift_barrier(&mut self, ctx: &mut ws::WebsocketContext<Self>) {
        self.barrier = false;
        self.drain(ctx);
    }

    fn drain(&mut self, ctx: &mut ws::WebsocketContext<Self>) {
        while !self.barrier {
            let Some(text) = self.deferred.pop_front() else {
                return;
            };
            self.deferred_bytes -= text.len();
            self.handle_text(&text, ctx);
        }
    }

    /// Counts a message sent to the client (`rummy_websocket_messages_total{direction="out"}`).
    fn counted_out(&self) {
        self.messages_out.inc();
    }

    fn handle_text(&mut self, text: &str, ctx: &mut ws::WebsocketContext<Self>) {
        self.messages_in.inc();
        if text.len() > self.max_message() {
            let err = RpcError::new(
                ErrorKind::TooLarge,
                format!(
                    "message of {} bytes is over the {}-byte limit",
                    text.len(),
                    self.max_message()
                ),
            )
            .with("limit", Value::from(self.max_message()));
            return self.send_error(ctx, None, &err);
        }
        match read_message(text) {
            Err(err) => self.send_error(ctx, None, &err),
            Ok(Message::Batch(items)) => {
                let items = items.into_iter().map(RawValue::to_owned).collect();
                self.on_batch(items, ctx);
            }
            Ok(Message::Single(single)) => {
                let started = self.start_call(single, ctx);
                let (keys, barrier) = (started.keys, started.barrier);
                self.hold(&keys);
                self.barrier |= barrier;
                self.calls += 1;
                let reply = started
                    .answer
                    .into_actor(self)
                    .map(move |answer, act, ctx| {
                        if let Some(answer) = answer {
                            act.counted_out();
                            ctx.text(answer);
                        }
                        act.close_if_refused(ctx);
                        act.release(&keys, ctx);
                        if barrier {
                            act.lift_barrier(ctx);
                        }
                        act.calls -= 1;
                        act.close_if_leaving(ctx);
                    });
                ctx.spawn(reply);
            }
        }
    }

    /// Runs a batch's calls concurrently and sends their answers as one array, bounded by
    /// `RUMMY_MAX_MESSAGE_BYTES`: an answer that would pass it is replaced by a -32007 for its
    /// call, so no batch makes an unbounded frame. A hello in the batch splits it: the calls
    /// after it start once it (and the calls before it) have completed.
    fn on_batch(&mut self, items: Vec<Box<RawValue>>, ctx: &mut ws::WebsocketContext<Self>) {
        let batch = Batch {
            rest: items.into(),
            ids: Vec::new(),
            keys: Vec::new(),
            answers: Vec::new(),
        };
        self.calls += 1;
        self.batch_segment(batch, ctx);
    }

    /// Starts the batch's next calls, up to and including a hello; when that segment has
    /// completed, starts the next one, and after the last sends the batch's answer.
    fn batch_segment(&mut self, mut batch: Batch, ctx: &mut ws::WebsocketContext<Self>) {
        let mut calls = Vec::new();
        let mut barrier = false;
        while let Some(item) = batch.rest.pop_front() {
            let started = self.start_call(&item, ctx);
            self.hold(&started.keys);
            batch.keys.extend(started.keys);
            batch.ids.push(started.id);
            calls.push(started.answer);
            if started.barrier {
                barrier = true;
                break;
            }
        }
        self.barrier |= barrier;
        let limit = self.max_message();
        let segment = join_all(calls)
            .into_actor(self)
            .map(move |answers, act, ctx| {
                batch.answers.extend(answers);
                if barrier {
                    // The barrier's own calls go first, then what waited behind it.
                    act.barrier = false;
                    if batch.rest.is_empty() {
                        act.finish_batch(batch, limit, ctx);
                    } else {
                        act.batch_segment(batch, ctx);
                    }
                    act.drain(ctx);
                } else {
                    act.finish_batch(batch, limit, ctx);
                }
            });
        ctx.spawn(segment);
    }

    fn finish_batch(&mut self, batch: Batch, limit: usize, ctx: &mut ws::WebsocketContext<Self>) {
        if let Some(text) = batch_answer(batch.answers, &batch.ids, limit) {
            self.counted_out();
            ctx.text(text);
        }
        self.close_if_refused(ctx);
        self.release(&batch.keys, ctx);
        self.calls -= 1;
        self.close_if_leaving(ctx);
    }

    /// Starts one call; answers the run keys it concerns, its id, and a future of its response
    /// text (`None` for client notifications).
    fn start_call(&mut self, raw: &RawValue, ctx: &mut ws::WebsocketContext<Self>) -> Started {
        let req = match parse_request(raw) {
            Ok(req) => req,
            Err((id, err)) => {
                let answer = error_response(id.as_ref(), &err);
                return Started::answered(id, Some(answer));
            }
        };
        let Request { id, method, params } = req;
        let refuse = |id: Option<RequestId>, err: RpcError| {
            let answer = id.as_ref().map(|id| error_response(Some(id), &err));
            Started::answered(id, answer)
        };
        if self.going_away {
            let err = RpcError::new(
                ErrorKind::Overloaded,
                format!("overloaded: the server is shutting down; {method} was not started: send it again once the server is back"),
            )
            .with("retryAfterMs", Value::from(1000));
            return refuse(id, err);
        }
        if let Some(err) = self.over_rate(&method) {
            return refuse(id, err);
        }
        let Some(route) = routes::find(&method) else {
            let err = RpcError::new(
                ErrorKind::MethodNotFound,
                format!("method not found: {method}"),
            );
            return refuse(id, err);
        };
        if route.spec.requires_hello && self.project.is_none() {
            let err = RpcError::new(
                ErrorKind::NotInitialized,
                format!("not initialized: call rummy/hello before {method}"),
            );
            return refuse(id, err);
        }
        let keys = run_keys(&params);
        // `getProjects` and `rummy/hello` carry a token for clients that cannot set headers;
        // when such a call succeeds, the token was valid.
        let shows_token = params
            .get("token")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty());
        let log = CallLog {
            store: self.deps.svc.store.clone(),
            project_id: self.project.as_ref().map(|p| p.project_id),
            method: route.spec.name,
            rpc_id: id.as_ref().map(|id| id.as_str().to_owned()),
            params: params.clone(),
            user: self
                .caller
                .as_ref()
                .and_then(Caller::user)
                .map(str::to_owned),
        };
        let call = Call {
            deps: self.deps.clone(),
            project: self.project.clone(),
            caller: self.caller.clone(),
            session: self.id,
        };
        let refused = Rc::clone(&self.refused);
        let span = tracing::info_span!(
            "rpc",
            method = route.spec.name,
            user = log.user.as_deref().unwrap_or("-"),
            session = self.id,
        );
        let fut = (route.handler)(call, params);
        let limit = (!route.spec.long_running)
            .then(|| Duration::from_millis(self.deps.svc.config.limits.rpc_timeout_ms));
        let addr = ctx.address();
        let answer_id = id.clone();
        let most = self.max_message();
        Started {
            keys,
            id,
            barrier: route.spec.name == methods::Hello::NAME,
            answer: Box::pin(async move {
                let result = within(route.spec.name, limit, fut).instrument(span).await;
                log.record(&result);
                // The session takes larger frames before the client reads this answer.
                if shows_token && result.is_ok() && addr.send(ShownToken).await.is_err() {
                    return None;
                }
                let answer = match result {
                    Ok(CallAnswer::Reply(value)) => Ok(value),
                    Ok(CallAnswer::Bind(binding, value)) => {
                        // The binding must be in place before the response leaves.
                        if addr.send(Bind(binding)).await.is_err() {
                            return None;
                        }
                        Ok(value)
                    }
                    Err(err) => {
                        if err.kind == ErrorKind::Unauthorized {
                            refused.set(true);
                        }
                        Err(err)
                    }
                };
                let id = answer_id?;
                Some(match answer {
                    Ok(value) => bounded_response(&id, &value, most),
                    Err(err) => error_response(Some(&id), &err),
                })
            }),
        }
    }

    fn hold(&mut self, keys: &[Arc<str>]) {
        for key in keys {
            *self.inflight.entry(Arc::clone(key)).or_default() += 1;
        }
    }

    fn release(&mut self, keys: &[Arc<str>], ctx: &mut ws::WebsocketContext<Self>) {
        for key in keys {
            if let Some(n) = self.inflight.get_mut(key) {
                *n -= 1;
                if *n == 0 {
                    self.inflight.remove(key);
                }
            }
        }
        let held = std::mem::take(&mut self.held);
        for notify in held {
            self.deliver(notify, ctx);
        }
    }

    fn is_held(&self, run: &str) -> bool {
        self.inflight.contains_key(run) || self.inflight.contains_key(ANY_RUN)
    }

    pub(super) fn deliver(&mut self, notify: Notify, ctx: &mut ws::WebsocketContext<Self>) {
        if self.is_held(&notify.run) {
            self.held.push_back(notify);
        } else {
            self.counted_out();
            ctx.text(&*notify.text);
            self.backlog.written(notify.text.len());
        }
    }
}

/// One call as started: the run keys it concerns, its id, the future of its response text
/// (`None` for a client notification), and whether it is a barrier (a hello).
struct Started {
    keys: Vec<Arc<str>>,
    id: Option<RequestId>,
    answer: LocalBoxFuture<'static, Option<String>>,
    barrier: bool,
}

impl Started {
    /// A call answered without running (refused, or not a call at all).
    fn answered(id: Option<RequestId>, answer: Option<String>) -> Started {
        Started {
            keys: Vec::new(),
            id,
            answer: Box::pin(async move { answer }),
            barrier: false,
        }
    }
}

/// A batch under way: the calls not started yet, and what the started ones answered.
struct Batch {
    rest: VecDeque<Box<RawValue>>,
    ids: Vec<Option<RequestId>>,
    keys: Vec<Arc<str>>,
    answers: Vec<Option<String>>,
}

/// A batch's answer text: the answers that fit `limit` bytes in order, each one that would
/// pass it replaced by a -32007 naming the limit; `None` when the batch held only notifications.
fn batch_answer(
    answers: Vec<Option<String>>,
    ids: &[Option<RequestId>],
    limit: usize,
) -> Option<String> {
    let mut out = String::from("[");
    let mut any = false;
    for (answer, id) in answers.into_iter().zip(ids) {
        let Some(mut answer) = answer else { continue };
        if out.len() + answer.len() + 2 > limit {
            let err = RpcError::new(
                ErrorKind::TooLarge,
                format!("the batch's answer passed the {limit}-byte message limit at this call; send it again alone or in a smaller batch"),
            )
            .with("limit", Value::from(limit));
            answer = error_response(id.as_ref(), &err);
        }
        if any {
            out.push(',');
        }
        out.push_str(&answer);
        any = true;
    }
    out.push(']');
    any.then_some(out)
}

/// The answer to request `id`, or -32007 when it would pass `RUMMY_MAX_MESSAGE_BYTES`
/// (`data.limit`: the limit in bytes): no answer is a bigger message. The methods whose
/// answers can grow (lists, bodies) hold themselves to the limit first and say what fits.
fn bounded_response(id: &RequestId, value: &Value, limit: usize) -> String {
    let text = response(id, value);
    if text.len() <= limit {
        return text;
    }
    let err = RpcError::new(
        ErrorKind::TooLarge,
        format!(
            "too large: the answer of {} bytes is over the {limit}-byte message limit",
            text.len()
        ),
    )
    .with("limit", Value::from(limit));
    error_response(Some(id), &err)
}

/// `call`'s outcome, or an error when `limit` passes first. The work it started is not
/// undone: a write already queued may still commit, and the message says so.
async fn within<T>(
    method: &str,
    limit: Option<Duration>,
    call: impl std::future::Future<Output = Result<T, RpcError>>,
) -> Result<T, RpcError> {
    let Some(limit) = limit else {
        return call.await;
    };
    actix_rt::time::timeout(limit, call)
        .await
        .unwrap_or_else(|_| {
            tracing::warn!(method, limit_ms = limit.as_millis(), "RPC timed out");
            Err(RpcError::new(
                ErrorKind::Internal,
                format!(
                    "RPC '{method}' timed out after {} ms; what it started may still take effect",
                    limit.as_millis()
                ),
            ))
        })
}

/// The run aliases a request concerns: `params.run`, or the alias of a `run://` path (`*` when the server names it).
fn run_keys(params: &Value) -> Vec<Arc<str>> {
    if let Some(run) = params.get("run").and_then(Value::as_str) {
        return vec![Arc::from(run)];
    }
    match params
        .get("path")
        .and_then(Value::as_str)
        .and_then(|p| p.strip_prefix("run://"))
    {
        Some("") => vec![Arc::from(ANY_RUN)],
        Some(alias) => vec![Arc::from(alias)],
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call still unanswered at `RUMMY_RPC_TIMEOUT` is answered with an error naming the
    /// method and the limit; one that answers in time, or has no limit, is untouched.
    #[actix_rt::test]
    async fn a_call_past_the_rpc_timeout_is_answered_with_an_error() {
        let limit = Some(Duration::from_millis(20));
        let stuck = within::<()>("getRun", limit, std::future::pending()).await;
        let err = stuck.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Internal);
        assert_eq!(
            err.message,
            "RPC 'getRun' timed out after 20 ms; what it started may still take effect"
        );
        let quick = within("getRun", limit, async { Ok::<_, RpcError>(7) }).await;
        assert_eq!(quick.ok(), Some(7));
        let slow = async {
            actix_rt::time::sleep(Duration::from_millis(40)).await;
            Ok::<_, RpcError>(8)
        };
        assert_eq!(within("rummy/hello", None, slow).await.ok(), Some(8));
    }

    /// Only `rummy/hello` (a first scan reads the whole project) runs without the limit.
    #[test]
    fn only_hello_is_long_running() {
        let long: Vec<&str> = routes::ROUTES
            .iter()
            .filter(|r| r.spec.long_running)
            .map(|r| r.spec.name)
            .collect();
        assert_eq!(long, vec!["rummy/hello"]);
    }
}
