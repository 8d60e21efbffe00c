//! Content replies in the shape of the Responses API (xAI, OpenAI): `output[]` items, and `response.*` events when streamed.

use serde_json::{json, Value};

/// The whole response: an optional reasoning item, then the message item, then usage.
pub(crate) fn response(
    model: &str,
    id: &str,
    text: &str,
    reasoning: Option<&str>,
    (prompt, completion): (u64, u64),
) -> Value {
    let mut output = Vec::new();
    if let Some(reasoning) = reasoning {
        output.push(json!({
            "type": "reasoning",
            "id": format!("rs_{id}"),
            "summary": [{"type": "summary_text", "text": reasoning}],
        }));
    }
    output.push(json!({
        "type": "message",
        "id": format!("msg_{id}"),
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }));
    json!({
        "id": id,
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": "completed",
        "output": output,
        "usage": {
            "input_tokens": prompt,
            "output_tokens": completion,
            "total_tokens": prompt + completion,
        },
    })
}

/// The streamed events: created, reasoning-summary deltas, output-text deltas (word by word), completed.
pub(crate) fn stream_events(text: &str, reasoning: Option<&str>, response: Value) -> Vec<String> {
    let event = |kind: &str, mut data: Value| {
        data["type"] = Value::String(kind.to_owned());
        format!("event: {kind}\ndata: {data}\n\n")
    };
    let mut created = response.clone();
    created["status"] = json!("in_progress");
    created["output"] = json!([]);
    let mut events = vec![event("response.created", json!({ "response": created }))];
    for word in reasoning.unwrap_or_default().split_inclusive(' ') {
        events.push(event(
            "response.reasoning_summary_text.delta",
            json!({ "delta": word }),
        ));
    }
    for word in text.split_inclusive(' ') {
        events.push(event(
            "response.output_text.delta",
            json!({ "delta": word }),
        ));
    }
    events.push(event("response.completed", json!({ "response": response })));
    events
}
