//! The chat-completions format (`messages` in, `choices[0].message` out) that openai, ollama and openrouter speak, and the usage fields every provider reports.

use super::Usage;
use super::{join_reasoning, ChatMessage, Completion, MalformedResponse};
use serde::Serialize;
use serde_json::Value;

/// The cap on a chat-completions answer's tokens (`RUMMY_MAX_OUTPUT_TOKENS`), in the field its server reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputLimit {
    /// No cap sent: the server's own default.
    #[default]
    Unset,
    /// `max_tokens`: the field Ollama's and OpenRouter's chat completions read.
    MaxTokens(u32),
    /// `max_completion_tokens`: OpenAI's field, the only one its reasoning models accept
    /// (vLLM and recent llama.cpp read it too).
    MaxCompletionTokens(u32),
}

/// The streamed request body: model, messages, temperature, the output cap if any, and
/// streaming with usage, nothing else.
///
/// `stream_options.include_usage` is the only way chat-completions servers
/// report usage on a streamed answer; servers that do not stream answer JSON,
/// which the caller reads as a whole.
pub fn request_body<'a>(
    model: &'a str,
    messages: &'a [ChatMessage],
    temperature: f64,
    limit: OutputLimit,
) -> Request<'a> {
    let (max_tokens, max_completion_tokens) = match limit {
        OutputLimit::Unset => (None, None),
        OutputLimit::MaxTokens(n) => (Some(n), None),
        OutputLimit::MaxCompletionTokens(n) => (None, Some(n)),
    };
    Request {
        model,
        messages,
        temperature,
        max_tokens,
        max_completion_tokens,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
    }
}

/// A chat-completions request, serialised straight from the borrowed messages.
#[derive(Debug, Serialize)]
pub struct Request<'a> {
    model: &'a str,
    messages: &'a [ChatMessage],
    temperature: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    stream: bool,
    stream_options: StreamOptions,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// Reads a non-streamed chat completion.
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
        reasoning: join_reasoning(reasoning_parts(message)),
        usage: usage(body.get("usage").unwrap_or(&Value::Null)),
        model: body.get("model").and_then(Value::as_str).map(str::to_owned),
    })
}

/// The reasoning texts of a message or delta, under every field name providers use.
///
/// `reasoning_content` (llama.cpp, vLLM, DeepSeek), `reasoning` (openrouter,
/// ollama), `thinking` (ollama's native field), and openrouter's structured
/// `reasoning_details[].text`.
pub(crate) fn reasoning_parts(message: &Value) -> Vec<&str> {
    let mut parts: Vec<&str> = ["reasoning_content", "reasoning", "thinking"]
        .iter()
        .filter_map(|key| message.get(key).and_then(Value::as_str))
        .collect();
    if let Some(details) = message.get("reasoning_details").and_then(Value::as_array) {
        parts.extend(
            details
                .iter()
                .filter_map(|d| d.get("text").and_then(Value::as_str)),
        );
    }
    parts
}

fn int(v: &Value, paths: &[&[&str]]) -> i32 {
    paths
        .iter()
        .find_map(|path| {
            path.iter()
                .try_fold(v, |node, key| node.get(key))
                .and_then(Value::as_i64)
                .filter(|n| *n > 0)
        })
        .map_or(0, |n| i32::try_from(n).unwrap_or(i32::MAX))
}

/// xAI cost ticks per US dollar (`cost_in_usd_ticks` counts ten-billionths).
const TICKS_PER_USD: f64 = 1e10;

/// Usage under the field names providers use: chat-completions and Responses names, openrouter's `cost`, xAI's ticks.
pub fn usage(u: &Value) -> Usage {
    let prompt = int(u, &[&["prompt_tokens"], &["input_tokens"]]);
    let completion = int(u, &[&["completion_tokens"], &["output_tokens"]]);
    let total = int(u, &[&["total_tokens"]]);
    let cost = u.get("cost").and_then(Value::as_f64).or_else(|| {
        u.get("cost_in_usd_ticks")
            .and_then(Value::as_f64)
            .map(|ticks| ticks / TICKS_PER_USD)
    });
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
        cost: cost.filter(|c| c.is_finite()).unwrap_or(0.0).max(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn messages() -> Vec<ChatMessage> {
        vec![
            ChatMessage {
                role: "system",
                content: "s".into(),
            },
            ChatMessage {
                role: "user",
                content: "u".into(),
            },
        ]
    }

    /// The request carries model, messages, temperature and streaming with usage, nothing else.
    #[test]
    fn request_has_only_what_servers_accept() {
        assert_eq!(
            serde_json::to_value(request_body("gpt-x", &messages(), 0.5, OutputLimit::Unset))
                .unwrap(),
            json!({
                "model": "gpt-x",
                "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
                "temperature": 0.5,
                "stream": true,
                "stream_options": {"include_usage": true}
            })
        );
    }

    /// Content, merged reasoning and usage (with nested cached/reasoning counts) are read.
    #[test]
    fn parses_completion() {
        let body = json!({
            "model": "gpt-x",
            "choices": [{"message": {"role": "assistant", "content": "hi", "reasoning_content": "think", "reasoning": "think",
                                     "reasoning_details": [{"type": "reasoning.text", "text": "more"}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
                      "prompt_tokens_details": {"cached_tokens": 4},
                      "completion_tokens_details": {"reasoning_tokens": 2}}
        });
        assert_eq!(
            parse_response(&body),
            Ok(Completion {
                content: "hi".into(),
                reasoning: Some("think\nmore".into()),
                usage: Usage {
                    prompt_tokens: 10,
                    cached_tokens: 4,
                    completion_tokens: 5,
                    reasoning_tokens: 2,
                    total_tokens: 15,
                    cost: 0.0
                },
                model: Some("gpt-x".into()),
            })
        );
    }

    /// Each provider's usage field names map to the same columns.
    #[test]
    fn usage_field_names_per_provider() {
        let cases = [
            (
                "openrouter: cost and flat counts",
                json!({"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10, "cost": 0.0021,
                       "cached_tokens": 2, "reasoning_tokens": 1}),
                Usage {
                    prompt_tokens: 7,
                    cached_tokens: 2,
                    completion_tokens: 3,
                    reasoning_tokens: 1,
                    total_tokens: 10,
                    cost: 0.0021,
                },
            ),
            (
                "xai: Responses names and ticks",
                json!({"input_tokens": 20, "output_tokens": 5, "total_tokens": 25,
                       "input_tokens_details": {"cached_tokens": 8}, "output_tokens_details": {"reasoning_tokens": 3},
                       "cost_in_usd_ticks": 150_000_000}),
                Usage {
                    prompt_tokens: 20,
                    cached_tokens: 8,
                    completion_tokens: 5,
                    reasoning_tokens: 3,
                    total_tokens: 25,
                    cost: 0.015,
                },
            ),
            (
                "anthropic-style cache reads, total derived",
                json!({"input_tokens": 4, "output_tokens": 6, "cache_read_input_tokens": 3}),
                Usage {
                    prompt_tokens: 4,
                    cached_tokens: 3,
                    completion_tokens: 6,
                    reasoning_tokens: 0,
                    total_tokens: 10,
                    cost: 0.0,
                },
            ),
            (
                "nothing usable",
                json!({"prompt_tokens": -1, "cost": "free"}),
                Usage::default(),
            ),
        ];
        for (name, raw, expected) in cases {
            assert_eq!(usage(&raw), expected, "{name}");
        }
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
