//! The OpenAI-compatible chat-completions format: `POST {base}/v1/chat/completions`.

use super::{ChatMessage, Completion};
use crate::store::turns::Usage;
use serde_json::{json, Value};
use thiserror::Error;

/// The endpoint for a base URL (already stripped of `/v1`).
pub fn endpoint(base: &str) -> String {
    format!("{base}/v1/chat/completions")
}

/// The request body: model, messages and temperature only (nothing real servers reject).
pub fn request_body(model: &str, messages: &[ChatMessage], temperature: f64) -> Value {
    json!({ "model": model, "messages": messages, "temperature": temperature })
}

/// A response that is not a usable chat completion.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("malformed chat completion: {0}")]
pub struct MalformedResponse(pub String);

/// Reads a non-streaming chat completion.
pub fn parse_response(body: &Value) -> Result<Completion, MalformedResponse> {
    let message = body
        .get("choices")
        .and_then(|c| c.get(0))
        .and_then(|c| c.get("message"))
        .ok_or_else(|| MalformedResponse("no choices[0].message".into()))?;
    let content = match message.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(MalformedResponse(format!("content is {other}"))),
    };
    Ok(Completion {
        content,
        reasoning: reasoning(message),
        usage: usage(body.get("usage").unwrap_or(&Value::Null)),
        model: body.get("model").and_then(Value::as_str).map(str::to_owned),
    })
}

/// Reasoning from the fields providers use, de-duplicated, joined by newlines.
fn reasoning(message: &Value) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for key in ["reasoning_content", "reasoning", "thinking"] {
        if let Some(text) = message.get(key).and_then(Value::as_str).map(str::trim) {
            if !text.is_empty() && !parts.contains(&text) {
                parts.push(text);
            }
        }
    }
    (!parts.is_empty()).then(|| parts.join("\n"))
}

fn int(v: &Value, paths: &[&[&str]]) -> i32 {
    paths
        .iter()
        .find_map(|path| {
            path.iter()
                .try_fold(v, |node, key| node.get(key))
                .and_then(Value::as_i64)
        })
        .map_or(0, |n| i32::try_from(n.max(0)).unwrap_or(i32::MAX))
}

/// Usage under the field names providers use (ref §9.5).
pub fn usage(u: &Value) -> Usage {
    let prompt = int(u, &[&["prompt_tokens"], &["input_tokens"]]);
    let completion = int(u, &[&["completion_tokens"], &["output_tokens"]]);
    let total = int(u, &[&["total_tokens"]]);
    Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: if total > 0 {
            total
        } else {
            prompt.saturating_add(completion)
        },
        cached_tokens: int(
            u,
            &[
                &["cached_tokens"],
                &["prompt_tokens_details", "cached_tokens"],
                &["input_tokens_details", "cached_tokens"],
                &["cache_read_input_tokens"],
            ],
        ),
        reasoning_tokens: int(
            u,
            &[
                &["reasoning_tokens"],
                &["completion_tokens_details", "reasoning_tokens"],
                &["output_tokens_details", "reasoning_tokens"],
            ],
        ),
        cost: u
            .get("cost")
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
            .max(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// The request carries model, messages and temperature and nothing else.
    #[test]
    fn request_has_only_what_servers_accept() {
        let body = request_body(
            "gpt-x",
            &[
                ChatMessage {
                    role: "system",
                    content: "s".into(),
                },
                ChatMessage {
                    role: "user",
                    content: "u".into(),
                },
            ],
            0.5,
        );
        assert_eq!(
            body,
            json!({"model":"gpt-x","messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}],"temperature":0.5})
        );
    }

    /// Content, reasoning and usage (with nested cached/reasoning counts) are read.
    #[test]
    fn parses_completion() {
        let body = json!({
            "model": "gpt-x",
            "choices": [{"message": {"role": "assistant", "content": "hi", "reasoning_content": "think", "reasoning": "think"}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
                      "prompt_tokens_details": {"cached_tokens": 4},
                      "completion_tokens_details": {"reasoning_tokens": 2}}
        });
        let c = parse_response(&body).unwrap();
        assert_eq!(c.content, "hi");
        assert_eq!(c.reasoning.as_deref(), Some("think"));
        assert_eq!(
            c.usage,
            Usage {
                prompt_tokens: 10,
                cached_tokens: 4,
                completion_tokens: 5,
                reasoning_tokens: 2,
                total_tokens: 15,
                cost: 0.0
            }
        );
    }

    /// A body without choices is a clear error, not a panic or an empty answer.
    #[test]
    fn malformed_bodies_are_errors() {
        assert!(parse_response(&json!({"error": {"message": "x"}})).is_err());
        assert!(parse_response(&json!({"choices": [{"message": {"content": 5}}]})).is_err());
        let null_content = parse_response(&json!({"choices": [{"message": {"content": null}}]}));
        assert_eq!(null_content.map(|c| c.content), Ok(String::new()));
    }
}
