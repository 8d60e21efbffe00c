//! The demo's scripted model: an OpenAI-compatible chat-completions server on loopback in this
//! process. It needs no key and no network: the server reaches it over real HTTP, and it
//! answers each turn with the script's reply for that turn, streamed as server-sent events
//! piece by piece, as a real model streams.

use actix_web::web::Bytes;
use actix_web::{web, App, HttpResponse, HttpServer};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::Duration;

/// The script: the reply of each turn, in order (the last one is repeated past the end).
const SCRIPT: [&str; 4] = [
    include_str!("script/turn_1.xml"),
    include_str!("script/turn_2.xml"),
    include_str!("script/turn_3.xml"),
    include_str!("script/turn_4.xml"),
];

/// The last reply when the check did not pass (it failed, was rejected, or could not run):
/// the demo never claims a check it did not see pass.
const UNCHECKED: &str = include_str!("script/turn_4_unchecked.xml");

/// The one reply to any task but the demo's (`rummy serve --demo-model`): what this model is.
const OTHER_TASK: &str = include_str!("script/other_task.xml");

/// What the user message shows of the check that passed (the accepted command's log entry).
const CHECK_PASSED: &str = "ran 'sh check.sh', exit=0";

/// The model's name, as the server asks for it.
pub const NAME: &str = "rummy-demo";

/// Characters per streamed piece, and the pause after each: a reply of 400 characters streams
/// in about half a second.
const PIECE_CHARS: usize = 8;
const PIECE_PAUSE: Duration = Duration::from_millis(10);

/// The running scripted model.
pub struct DemoModel {
    server: actix_web::dev::ServerHandle,
    addr: SocketAddr,
}

impl DemoModel {
    /// Starts it on 127.0.0.1 on a free port (inside the current actix system).
    pub fn start() -> std::io::Result<DemoModel> {
        let server = HttpServer::new(|| {
            App::new()
                .route("/v1/chat/completions", web::post().to(complete))
                .route("/chat/completions", web::post().to(complete))
                .route("/v1/models", web::get().to(models))
                .route("/models", web::get().to(models))
        })
        .workers(1)
        .disable_signals()
        .bind(("127.0.0.1", 0))?;
        let addr = server
            .addrs()
            .first()
            .copied()
            .ok_or_else(|| std::io::Error::other("the demo model bound no address"))?;
        let server = server.run();
        let handle = server.handle();
        actix_rt::spawn(server);
        Ok(DemoModel {
            server: handle,
            addr,
        })
    }

    /// Its base URL (`http://127.0.0.1:<port>`), as `OPENAI_BASE_URL` would be.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.addr.port())
    }

    /// Stops it.
    pub async fn stop(self) {
        self.server.stop(false).await;
    }
}

async fn models() -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "object": "list",
        "data": [{ "id": NAME, "object": "model", "owned_by": "rummy" }],
    }))
}

/// The turn a request is for: one more than the status reports (`<update`) the user message
/// already shows of the loop's earlier turns.
pub fn turn_of(request: &Value) -> usize {
    user_message(request).matches("<update ").count() + 1
}

/// The script's reply for `turn` (1-based).
pub fn reply_for(turn: usize) -> &'static str {
    SCRIPT[turn.clamp(1, SCRIPT.len()) - 1]
}

/// The reply to `request`: the script's for its turn, but the last one says the fix is
/// unconfirmed unless the user message shows the check passing; a task other than the demo's
/// gets one line saying what this model is.
pub fn reply_to(request: &Value) -> &'static str {
    if !request["messages"].to_string().contains(super::TASK.trim()) {
        return OTHER_TASK;
    }
    let turn = turn_of(request);
    if turn >= SCRIPT.len() && !user_message(request).contains(CHECK_PASSED) {
        return UNCHECKED;
    }
    reply_for(turn)
}

/// The text of the request's last user message.
fn user_message(request: &Value) -> &str {
    request["messages"]
        .as_array()
        .and_then(|messages| {
            messages
                .iter()
                .rev()
                .find(|m| m["role"] == "user")
                .and_then(|m| m["content"].as_str())
        })
        .unwrap_or_default()
}

async fn complete(request: web::Json<Value>) -> HttpResponse {
    let reply = reply_to(&request);
    let prompt_tokens = request.to_string().len() / 4;
    let completion_tokens = reply.len() / 4;
    let usage = json!({
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    });
    if request["stream"] != json!(true) {
        return HttpResponse::Ok().json(json!({
            "id": "demo",
            "object": "chat.completion",
            "created": 0,
            "model": NAME,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
            "usage": usage,
        }));
    }
    let with_usage = request["stream_options"]["include_usage"] == json!(true);
    let events = events(reply, with_usage.then_some(usage));
    let body = futures_util::stream::unfold(events.into_iter(), |mut events| async move {
        let event = events.next()?;
        tokio::time::sleep(PIECE_PAUSE).await;
        Some((Ok::<Bytes, std::io::Error>(Bytes::from(event)), events))
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-cache"))
        .streaming(body)
}

/// The server-sent events of a streamed reply, shaped as OpenAI's: a role chunk, the text in
/// pieces, a finish chunk, the usage when asked for, and `[DONE]`.
fn events(reply: &str, usage: Option<Value>) -> Vec<String> {
    let chunk = |choices: Value, usage: Option<Value>| {
        let mut chunk = json!({
            "id": "demo",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": NAME,
            "choices": choices,
        });
        if let Some(usage) = usage {
            chunk["usage"] = usage;
        }
        format!("data: {chunk}\n\n")
    };
    let delta = |delta: Value, finish: Value| {
        chunk(
            json!([{"index": 0, "delta": delta, "finish_reason": finish}]),
            None,
        )
    };
    let mut events = vec![delta(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let chars: Vec<char> = reply.chars().collect();
    for piece in chars.chunks(PIECE_CHARS) {
        let text: String = piece.iter().collect();
        events.push(delta(json!({ "content": text }), Value::Null));
    }
    events.push(delta(json!({}), json!("stop")));
    if let Some(usage) = usage {
        events.push(chunk(json!([]), Some(usage)));
    }
    events.push("data: [DONE]\n\n".to_owned());
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// The turn is read from the status reports the user message already holds.
    #[test]
    fn the_turn_follows_the_reports_so_far() {
        let request = |user: &str| {
            json!({"messages": [{"role": "system", "content": "<update status=\"102\">x</update>"},
                                {"role": "user", "content": user}]})
        };
        let turns: Vec<usize> = [
            "<prompt>go</prompt>",
            "<update status=\"102\">a</update>",
            "<update status=\"102\">a</update><update status=\"102\">b</update>",
        ]
        .into_iter()
        .map(|u| turn_of(&request(u)))
        .collect();
        assert_eq!(turns, vec![1, 2, 3]);
        assert_eq!(reply_for(9), SCRIPT[3]);
    }

    /// The last turn claims the check passed only when the user message shows it passing.
    #[test]
    fn the_last_reply_follows_the_check() {
        let request = |user: &str| {
            json!({"messages": [{"role": "user", "content": format!(
                "<prompt>{}</prompt><update status=\"102\">a</update><update status=\"102\">b</update>\
                 <update status=\"102\">c</update>{user}", super::super::TASK.trim())}]})
        };
        assert_eq!(
            [
                reply_to(&request("ran 'sh check.sh', exit=0 (12ms)")),
                reply_to(&request("ran 'sh check.sh', exit=1 (12ms)")),
                reply_to(&request("could not start: no sandbox")),
            ],
            [SCRIPT[3], UNCHECKED, UNCHECKED]
        );
    }

    /// Any task but the demo's gets the one line saying what this model is, at every turn.
    #[test]
    fn another_task_gets_the_line_that_says_what_the_model_is() {
        let request = |user: &str| json!({"messages": [{"role": "user", "content": user}]});
        assert_eq!(
            [
                reply_to(&request("<prompt>What does this project do?</prompt>")),
                reply_to(&request(
                    "<prompt>x</prompt><update status=\"102\">a</update>"
                )),
            ],
            [OTHER_TASK, OTHER_TASK]
        );
    }

    /// The streamed events put the whole reply back together, then finish and end.
    #[test]
    fn the_events_carry_the_whole_reply() {
        let events = events("<update status=\"200\">done</update>", None);
        let text: String = events
            .iter()
            .filter_map(|e| e.strip_prefix("data: "))
            .filter_map(|e| serde_json::from_str::<Value>(e.trim()).ok())
            .filter_map(|e| {
                e["choices"][0]["delta"]["content"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect();
        assert_eq!(text, "<update status=\"200\">done</update>");
        assert_eq!(events.last().map(String::as_str), Some("data: [DONE]\n\n"));
    }
}
