//! xAI's Responses API: `input` instead of `messages`, and `output[]` items (reasoning vs message) normalised into a [`Completion`].

use super::openai::{self, usage};
use super::{join_reasoning, ChatMessage, Completion, MalformedResponse};
use serde_json::Value;

/// The streamed request body: model, the messages as `input`, temperature, the output cap
/// (`max_output_tokens`, `RUMMY_MAX_OUTPUT_TOKENS`) if any, and `stream`, nothing else.
///
/// The Responses API reports usage in its `response.completed` event, so it
/// needs no `stream_options`.
pub fn request_body<'a>(
    model: &'a str,
    messages: &'a [ChatMessage],
    temperature: f64,
    max_output_tokens: Option<u32>,
) -> Request<'a> {
    Request {
        model,
        input: messages,
        temperature,
        max_output_tokens,
        stream: true,
    }
}

/// A Responses API request, serialised straight from the borrowed messages.
#[derive(Debug, serde::Serialize)]
pub struct Request<'a> {
    model: &'a str,
    input: &'a [ChatMessage],
    temperature: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    stream: bool,
}

/// Reads a whole Responses API answer: message items make the content, reasoning items the reasoning.
pub fn parse_response(body: &Value) -> Result<Completion, MalformedResponse> {
    if let Some(message) = body
        .get("error")
        .filter(|e| !e.is_null())
        .map(|e| e.get("message").and_then(Value::as_str).unwrap_or("error"))
    {
        return Err(MalformedResponse(format!("response failed: {message}")));
    }
    let Some(output) = body.get("output").and_then(Value::as_array) else {
        // Some gateways answer the Responses endpoint in the chat shape.
        if body.get("choices").is_some() {
            return openai::parse_response(body);
        }
        return Err(MalformedResponse("no output[]".into()));
    };
    let mut content = String::new();
    let mut reasoning: Vec<&str> = Vec::new();
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => content.push_str(&message_text(item)),
            Some("reasoning") => reasoning.extend(reasoning_texts(item)),
            _ => {}
        }
    }
    Ok(Completion {
        content,
        reasoning: join_reasoning(reasoning),
        usage: usage(body.get("usage").unwrap_or(&Value::Null)),
        model: body.get("model").and_then(Value::as_str).map(str::to_owned),
    })
}

/// The text of a message item: `content` as a string or as `text`/`output_text` parts.
fn message_text(item: &Value) -> String {
    match item.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| {
                matches!(
                    p.get("type").and_then(Value::as_str),
                    Some("output_text" | "text")
                )
            })
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// The texts of a reasoning item: its summary parts, its content parts and any plain reasoning field.
fn reasoning_texts(item: &Value) -> Vec<&str> {
    let mut texts: Vec<&str> = ["summary", "content"]
        .iter()
        .filter_map(|key| item.get(key).and_then(Value::as_array))
        .flatten()
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect();
    texts.extend(openai::reasoning_parts(item));
    texts.extend(item.get("text").and_then(Value::as_str));
    texts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Usage;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    /// The request sends the messages as `input` and nothing a Responses server rejects.
    #[test]
    fn request_uses_input() {
        let messages = vec![ChatMessage {
            role: "user",
            content: "u".into(),
        }];
        assert_eq!(
            serde_json::to_value(request_body("grok-4", &messages, 0.2, None)).unwrap(),
            json!({"model": "grok-4", "input": [{"role": "user", "content": "u"}], "temperature": 0.2, "stream": true})
        );
    }

    /// Reasoning items and message items are told apart; cost comes from ticks.
    #[test]
    fn normalises_output_items() {
        let body = json!({
            "model": "grok-4",
            "output": [
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "weigh it"}],
                 "content": [{"type": "reasoning_text", "text": "weigh it"}]},
                {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": "Hello "}, {"type": "refusal", "refusal": "no"}, {"type": "text", "text": "world"}]},
                {"type": "function_call", "name": "x"}
            ],
            "usage": {"input_tokens": 12, "output_tokens": 4, "total_tokens": 16,
                      "output_tokens_details": {"reasoning_tokens": 2}, "cost_in_usd_ticks": 20_000_000}
        });
        assert_eq!(
            parse_response(&body),
            Ok(Completion {
                content: "Hello world".into(),
                reasoning: Some("weigh it".into()),
                usage: Usage {
                    prompt_tokens: 12,
                    cached_tokens: 0,
                    completion_tokens: 4,
                    reasoning_tokens: 2,
                    total_tokens: 16,
                    cost: 0.002
                },
                model: Some("grok-4".into()),
            })
        );
    }

    /// String content, a chat-shaped answer and an error body are each handled.
    #[test]
    fn other_shapes() {
        let string_content =
            json!({"output": [{"type": "message", "content": "plain", "role": "assistant"}]});
        assert_eq!(
            parse_response(&string_content).map(|c| c.content),
            Ok("plain".to_owned())
        );
        let chat = json!({"choices": [{"message": {"content": "chat"}}]});
        assert_eq!(
            parse_response(&chat).map(|c| c.content),
            Ok("chat".to_owned())
        );
        let failed = json!({"error": {"message": "bad model"}, "output": []});
        assert_eq!(
            parse_response(&failed),
            Err(MalformedResponse("response failed: bad model".into()))
        );
        assert!(parse_response(&json!({})).is_err());
    }
}
