//! Provider wire formats: request bodies and response parsing, without any network code.

pub mod openai;

use crate::store::turns::Usage;

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
