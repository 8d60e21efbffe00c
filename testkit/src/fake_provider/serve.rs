//! The HTTP side of the fake provider (and fake SearXNG): one catch-all handler that records, routes and answers.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse, HttpResponseBuilder};
use bytes::Bytes;
use futures_util::stream;
use serde_json::{json, Value};

use super::reply::{Reply, ReplyBody, ReplyKind};
use super::responses;
use super::{RecordedRequest, SearchAnswer, Shared};

/// Paths that are served from the scripted reply queue.
const COMPLETION_PATHS: [&str; 4] = [
    "/v1/chat/completions",
    "/chat/completions",
    "/v1/responses",
    "/responses",
];

/// Model name used when the request body does not name one.
const DEFAULT_MODEL: &str = "fake-model";

/// True for a request that consumes a scripted reply.
pub(crate) fn is_completion(method: &str, path: &str) -> bool {
    method == "POST" && COMPLETION_PATHS.contains(&path)
}

/// Catch-all handler: every request is recorded first so tests can see even unrouted ones.
pub(crate) async fn dispatch(
    req: HttpRequest,
    body: Bytes,
    shared: web::Data<Shared>,
) -> HttpResponse {
    // The whole request is in (`body` is extracted before the handler runs): a reply's delay
    // counts from here, so the fake's own parsing and recording do not add to it.
    let arrived = std::time::Instant::now();
    let method = req.method().as_str().to_owned();
    let path = req.path().to_owned();
    let query = web::Query::<Vec<(String, String)>>::from_query(req.query_string())
        .map(web::Query::into_inner)
        .unwrap_or_default();
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let headers = req
        .headers()
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_ascii_lowercase(), value)
        })
        .collect();
    // Enter "in flight" before recording, so a test that sees the request recorded also
    // sees it counted.
    let guard = is_completion(&method, &path).then(|| InFlight::enter(shared.clone().into_inner()));
    shared.record(RecordedRequest {
        method: method.clone(),
        path: path.clone(),
        query: query.clone(),
        headers,
        body: json.clone(),
        raw_body: String::from_utf8_lossy(&body).into_owned(),
    });

    if let Some(guard) = guard {
        return complete(&shared, &path, &json, body.len(), arrived, guard).await;
    }
    match (method.as_str(), path.as_str()) {
        ("GET", "/v1/models" | "/models") => HttpResponse::Ok().json(shared.models()),
        ("GET", "/props") => json_or_404(shared.props()),
        ("POST", "/api/show") => json_or_404(shared.show()),
        ("GET", "/search") => {
            if let Some(delay) = shared.search_delay() {
                tokio::time::sleep(delay).await;
            }
            search(&shared, &query)
        }
        ("GET", _) => match shared.page(&path) {
            Some(page) => {
                let mut builder = HttpResponse::build(
                    StatusCode::from_u16(page.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                );
                for (name, value) in page.headers {
                    builder.insert_header((name, value));
                }
                builder.body(page.body)
            }
            None => not_found(),
        },
        _ => not_found(),
    }
}

/// SearXNG's `GET /search?q=…&format=json`: the scripted results in its JSON shape, or the scripted failure.
fn search(shared: &Shared, query: &[(String, String)]) -> HttpResponse {
    let q = query
        .iter()
        .find(|(name, _)| name == "q")
        .map_or("", |(_, value)| value.as_str());
    match shared.search() {
        None => not_found(),
        Some(SearchAnswer::Results(results)) => HttpResponse::Ok().json(json!({
            "query": q,
            "number_of_results": results.as_array().map_or(0, Vec::len),
            "results": results,
            "answers": [],
            "corrections": [],
            "infoboxes": [],
            "suggestions": [],
            "unresponsive_engines": [],
        })),
        Some(SearchAnswer::Failure(code, body)) => {
            let mut builder = HttpResponse::build(
                StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            );
            match body {
                ReplyBody::Json(value) => builder.json(value),
                ReplyBody::Text(text) => builder.content_type("text/plain").body(text),
            }
        }
    }
}

fn json_or_404(value: Option<Value>) -> HttpResponse {
    match value {
        Some(value) => HttpResponse::Ok().json(value),
        None => not_found(),
    }
}

fn not_found() -> HttpResponse {
    HttpResponse::NotFound().json(json!({"error": {"message": "fake provider: not found"}}))
}

/// Counts a completion request as in flight for as long as this value lives.
///
/// For streamed answers it is moved into the body stream, so the request counts until
/// the last chunk is written (or the client goes away), not just until headers are sent.
pub(crate) struct InFlight(Arc<Shared>);

impl InFlight {
    fn enter(shared: Arc<Shared>) -> Self {
        shared.enter_flight();
        InFlight(shared)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.leave_flight();
    }
}

/// Facts about the request that shape the answer.
struct Ask {
    model: String,
    /// Asked on a Responses API path: answer in that shape.
    responses: bool,
    stream: bool,
    include_usage: bool,
    body_len: usize,
}

async fn complete(
    shared: &Shared,
    path: &str,
    body: &Value,
    body_len: usize,
    arrived: std::time::Instant,
    guard: InFlight,
) -> HttpResponse {
    let (reply, serial) = shared.next_reply(body);
    let Some(reply) = reply else {
        return HttpResponse::InternalServerError()
            .json(json!({"error": {"message": "fake provider: no scripted reply left"}}));
    };
    if let Some(delay) = reply.delay {
        shared.timer.sleep_until(arrived + delay).await;
    }
    if let Some(gate) = &reply.gate {
        gate.opened().await;
    }
    let ask = Ask {
        model: body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(DEFAULT_MODEL)
            .to_owned(),
        responses: path.ends_with("/responses"),
        stream: body.get("stream").and_then(Value::as_bool) == Some(true),
        include_usage: body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            == Some(true),
        body_len,
    };
    let id = format!("chatcmpl-fake-{serial}");
    render(reply, &ask, &id, guard).await
}

async fn render(reply: Reply, ask: &Ask, id: &str, guard: InFlight) -> HttpResponse {
    let mut builder = HttpResponse::Ok();
    for (name, value) in &reply.headers {
        builder.append_header((name.as_str(), value.as_str()));
    }
    match reply.kind {
        ReplyKind::Hang => {
            // Held until the server is stopped, which drops this future (and the guard).
            std::future::pending::<()>().await;
            HttpResponse::InternalServerError().finish()
        }
        ReplyKind::Status { code, body } => {
            builder.status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR));
            match body {
                ReplyBody::Json(value) => builder.json(value),
                ReplyBody::Text(text) => builder.content_type("text/plain").body(text),
            }
        }
        ReplyKind::RawSse {
            pieces,
            disconnect_after,
        } => sse(builder, pieces, disconnect_after, reply.chunk_delay, guard),
        ReplyKind::Content {
            text,
            reasoning,
            usage,
            cost,
        } => {
            let prompt_tokens = (ask.body_len / 4).max(1) as u64;
            let completion_tokens = (text.len() / 4).max(1) as u64;
            let (prompt, completion) = usage.unwrap_or((prompt_tokens, completion_tokens));
            let mut usage = json!({
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            });
            if let Some(cost) = cost {
                usage["cost"] = json!(cost);
            }
            if ask.responses {
                let response = responses::response(
                    &ask.model,
                    id,
                    &text,
                    reasoning.as_deref(),
                    (prompt, completion),
                );
                if ask.stream {
                    let pieces = responses::stream_events(&text, reasoning.as_deref(), response);
                    sse(builder, pieces, None, reply.chunk_delay, guard)
                } else {
                    builder.json(response)
                }
            } else if ask.stream {
                let pieces = stream_events(ask, id, &text, reasoning.as_deref(), usage);
                sse(builder, pieces, None, reply.chunk_delay, guard)
            } else {
                let mut message = json!({"role": "assistant", "content": text});
                if let Some(reasoning) = reasoning {
                    message["reasoning_content"] = Value::String(reasoning);
                }
                builder.json(json!({
                    "id": id,
                    "object": "chat.completion",
                    "created": 0,
                    "model": ask.model,
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": usage,
                }))
            }
        }
    }
}

/// The SSE events of a streamed content reply, shaped like OpenAI's: a role chunk,
/// reasoning then content deltas (word by word), a finish chunk, optional usage, `[DONE]`.
fn stream_events(
    ask: &Ask,
    id: &str,
    text: &str,
    reasoning: Option<&str>,
    usage: Value,
) -> Vec<String> {
    let chunk = |choices: Value| {
        let chunk = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": ask.model,
            "choices": choices,
        });
        format!("data: {chunk}\n\n")
    };
    let delta = |delta: Value, finish: Value| {
        chunk(json!([{"index": 0, "delta": delta, "finish_reason": finish}]))
    };

    let mut events = vec![delta(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    for word in reasoning.unwrap_or_default().split_inclusive(' ') {
        events.push(delta(json!({"reasoning_content": word}), Value::Null));
    }
    for word in text.split_inclusive(' ') {
        events.push(delta(json!({"content": word}), Value::Null));
    }
    events.push(delta(json!({}), json!("stop")));
    if ask.include_usage {
        let mut last = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": ask.model,
            "choices": [],
        });
        last["usage"] = usage;
        events.push(format!("data: {last}\n\n"));
    }
    events.push("data: [DONE]\n\n".to_owned());
    events
}

/// Streams `pieces` as separate body chunks; a body error after `disconnect_after` pieces
/// makes actix drop the connection without the closing chunk, i.e. a mid-stream disconnect.
fn sse(
    mut builder: HttpResponseBuilder,
    pieces: Vec<String>,
    disconnect_after: Option<usize>,
    chunk_delay: Option<Duration>,
    guard: InFlight,
) -> HttpResponse {
    let mut items: Vec<io::Result<Bytes>> =
        pieces.into_iter().map(|p| Ok(Bytes::from(p))).collect();
    if let Some(n) = disconnect_after {
        items.truncate(n);
        items.push(Err(io::Error::new(
            io::ErrorKind::ConnectionAborted,
            "fake provider: scripted disconnect",
        )));
    }
    let body = stream::unfold(
        (items.into_iter(), 0usize, guard),
        move |(mut items, index, guard)| async move {
            let item = items.next()?;
            if index > 0 {
                // Returning Pending once makes actix flush what it has, so each piece
                // goes out in its own write instead of being coalesced with the next.
                match chunk_delay {
                    Some(delay) => tokio::time::sleep(delay).await,
                    None => tokio::task::yield_now().await,
                }
            }
            Some((item, (items, index + 1, guard)))
        },
    );
    builder
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-cache"))
        .streaming(body)
}
