//! Provider wire formats and policies, without any network code or clock: the crate sits below
//! the store (which records each call's [`Usage`] and the routing a loop took) and needs
//! nothing of the server.
//!
//! - [`endpoint`]: which URL, headers and request body each provider takes;
//! - [`openai`] (chat completions: openai, ollama, openrouter) and [`xai`]
//!   (the Responses API): response, usage and reasoning parsing;
//! - [`sse`] and [`stream`]: server-sent events and the streamed answer they build;
//! - [`limits`] and [`retry`]: token buckets, backoff and which failures are
//!   retried or fall back, as arithmetic over a `now` passed in;
//! - [`reply_limit`]: how much of a reply the server holds before it cuts the call off;
//! - [`context`]: asking a provider for a model's context length;
//! - [`routing`]: the prompt classifier that picks a model per loop;
//! - [`settings`]: what the configuration says of each provider;
//! - [`time`]: timestamps in milliseconds and their calendar (here, not in a crate of its own:
//!   this is the lowest crate that reads time, for rate limits and backoff; the store and the
//!   domain take their timestamps from it). Times are passed in: nothing here reads the clock.

pub mod context;
pub mod endpoint;
pub mod limits;
pub mod openai;
pub mod reply_limit;
pub mod retry;
pub mod routing;
pub mod settings;
pub mod sse;
pub mod stream;
pub mod time;
pub mod xai;

use serde_json::Value;

pub use endpoint::Endpoint;

/// A chat message sent to a model.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ChatMessage {
    /// `system` or `user`.
    pub role: &'static str,
    /// The text.
    pub content: String,
}

/// What a model answered.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Completion {
    /// The reply text.
    pub content: String,
    /// Reasoning the provider returned separately.
    pub reasoning: Option<String>,
    /// Token usage and cost.
    pub usage: Usage,
    /// The model the provider says answered.
    pub model: Option<String>,
}

/// Token usage and cost of one call, or of a run so far.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: i32,
    /// Cached prompt tokens.
    pub cached_tokens: i32,
    /// Completion tokens.
    pub completion_tokens: i32,
    /// Reasoning tokens.
    pub reasoning_tokens: i32,
    /// Total tokens.
    pub total_tokens: i32,
    /// Cost in USD.
    pub cost: f64,
}

/// The providers this server speaks to, named by the first path segment of a model's `actual`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProviderKind {
    /// Any OpenAI-compatible chat-completions server (OpenAI, llama.cpp, vLLM, LM Studio).
    OpenAi,
    /// Ollama, through its OpenAI-compatible endpoint.
    Ollama,
    /// OpenRouter's chat-completions API.
    OpenRouter,
    /// xAI's Responses API.
    Xai,
}

/// The two request/response formats the providers use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// `messages` in, `choices[0].message` out.
    ChatCompletions,
    /// `input` in, `output[]` items out.
    Responses,
}

impl ProviderKind {
    /// Every provider, in the order their settings are documented.
    pub const ALL: [ProviderKind; 4] = [
        ProviderKind::OpenAi,
        ProviderKind::Ollama,
        ProviderKind::OpenRouter,
        ProviderKind::Xai,
    ];

    /// The name used in model aliases and variable names (`openai`, `ollama`, …).
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Ollama => "ollama",
            ProviderKind::OpenRouter => "openrouter",
            ProviderKind::Xai => "xai",
        }
    }

    /// The provider a model's first path segment names, if this server knows it.
    pub fn from_name(name: &str) -> Option<ProviderKind> {
        ProviderKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The request/response format this provider speaks.
    pub fn wire(self) -> Wire {
        match self {
            ProviderKind::Xai => Wire::Responses,
            _ => Wire::ChatCompletions,
        }
    }
}

/// A response that is not a usable completion.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed completion: {0}")]
pub struct MalformedResponse(pub String);

/// Reads a whole (non-streamed) answer in the provider's format.
pub fn parse_response(wire: Wire, body: &Value) -> Result<Completion, MalformedResponse> {
    match wire {
        Wire::ChatCompletions => openai::parse_response(body),
        Wire::Responses => xai::parse_response(body),
    }
}

/// Joins reasoning fragments: trimmed, empty ones dropped, repeats dropped, one per line.
pub(crate) fn join_reasoning<'a>(parts: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut kept: Vec<&str> = Vec::new();
    for part in parts.into_iter().map(str::trim) {
        if !part.is_empty() && !kept.contains(&part) {
            kept.push(part);
        }
    }
    (!kept.is_empty()).then(|| kept.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Every provider name round-trips, and unknown names are not guessed.
    #[test]
    fn provider_names_round_trip() {
        for kind in ProviderKind::ALL {
            assert_eq!(ProviderKind::from_name(kind.name()), Some(kind));
        }
        assert_eq!(ProviderKind::from_name("x.ai"), None);
        assert_eq!(ProviderKind::from_name("OpenAI"), None);
        assert_eq!(ProviderKind::Xai.wire(), Wire::Responses);
        assert_eq!(ProviderKind::Ollama.wire(), Wire::ChatCompletions);
    }

    /// Reasoning fragments are trimmed and de-duplicated in order.
    #[test]
    fn reasoning_fragments_join() {
        let cases: [(&[&str], Option<&str>); 3] = [
            (&[], None),
            (&[" ", ""], None),
            (&["a ", "b", "a", " b "], Some("a\nb")),
        ];
        for (parts, expected) in cases {
            assert_eq!(
                join_reasoning(parts.iter().copied()).as_deref(),
                expected,
                "{parts:?}"
            );
        }
    }
}
