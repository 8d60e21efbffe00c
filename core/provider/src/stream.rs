//! A streamed answer: the SSE events of either wire format folded into one [`Completion`], text deltas handed out as they arrive.

use super::openai::usage;
use super::reply_limit::{ReplyLimit, TooLarge};
use super::sse::SseEvent;
use super::Usage;
use super::{join_reasoning, xai, Completion, Wire};
use serde_json::Value;

/// Why a stream did not produce an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamFailure {
    /// The provider sent an error event (an HTTP-like code when it gave one).
    Api {
        /// The error's numeric code, if any.
        status: Option<u16>,
        /// The error's message.
        message: String,
    },
    /// The stream ended before the answer was finished.
    Unfinished,
    /// The answer's text and reasoning passed `RUMMY_MAX_REPLY_BYTES`.
    TooLarge(TooLarge),
}

/// Folds the events of one streamed answer.
#[derive(Debug)]
pub struct StreamReader {
    wire: Wire,
    limit: ReplyLimit,
    /// Bytes of text and reasoning held so far, counted against `limit`.
    held: usize,
    content: String,
    /// Reasoning per source field, in first-seen order, so each is joined whole.
    reasoning: Vec<(String, String)>,
    /// Reasoning read since it was last taken to be shown ([`StreamReader::take_reasoning`]).
    reasoning_unshown: String,
    usage: Option<Usage>,
    model: Option<String>,
    /// A finish reason (chat) or `response.completed` (Responses) was seen.
    finished: bool,
    /// `[DONE]` was seen.
    done: bool,
    /// Data that was not JSON; skipped rather than failing the answer.
    skipped: usize,
    /// The whole response a Responses stream ends with.
    last: Option<Completion>,
}

impl StreamReader {
    /// A reader for one answer in this wire format, holding at most `limit` of text and reasoning.
    pub fn new(wire: Wire, limit: ReplyLimit) -> StreamReader {
        StreamReader {
            wire,
            limit,
            held: 0,
            content: String::new(),
            reasoning: Vec::new(),
            reasoning_unshown: String::new(),
            usage: None,
            model: None,
            finished: false,
            done: false,
            skipped: 0,
            last: None,
        }
    }

    /// Whether the answer is complete (the rest of the stream may only add usage).
    pub fn finished(&self) -> bool {
        self.finished || self.done
    }

    /// Whether nothing more is to come: `[DONE]`, or a Responses stream's final event.
    pub fn ended(&self) -> bool {
        self.done || (self.wire == Wire::Responses && self.finished)
    }

    /// How many events carried data that was not JSON.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// Folds one event in; answers the text to show now, if it carried any.
    ///
    /// Text or reasoning past the limit is not taken, nor an event past the
    /// raw bound: the answer fails [`StreamFailure::TooLarge`] and the caller
    /// stops reading.
    pub fn event(&mut self, event: &SseEvent) -> Result<Option<String>, StreamFailure> {
        self.limit
            .check_raw(event.data.len())
            .map_err(StreamFailure::TooLarge)?;
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(None);
        }
        let Ok(json) = serde_json::from_str::<Value>(data) else {
            self.skipped += 1;
            return Ok(None);
        };
        if let Some(error) = json.get("error").filter(|e| !e.is_null()) {
            return Err(api_failure(error));
        }
        match self.wire {
            Wire::ChatCompletions => self.chat_chunk(&json),
            Wire::Responses => self.responses_event(&json),
        }
    }

    fn chat_chunk(&mut self, chunk: &Value) -> Result<Option<String>, StreamFailure> {
        if let Some(model) = chunk.get("model").and_then(Value::as_str) {
            if !model.is_empty() {
                self.model = Some(model.to_owned());
            }
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage(u));
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return Ok(None);
        };
        if choice.get("finish_reason").is_some_and(|f| !f.is_null()) {
            self.finished = true;
        }
        let Some(delta) = choice.get("delta").or_else(|| choice.get("message")) else {
            return Ok(None);
        };
        for (key, text) in ["reasoning_content", "reasoning", "thinking"]
            .iter()
            .filter_map(|k| delta.get(k).and_then(Value::as_str).map(|t| (*k, t)))
        {
            self.add_reasoning(key, text)?;
        }
        if let Some(details) = delta.get("reasoning_details").and_then(Value::as_array) {
            for text in details
                .iter()
                .filter_map(|d| d.get("text").and_then(Value::as_str))
            {
                self.add_reasoning("reasoning_details", text)?;
            }
        }
        match delta.get("content").and_then(Value::as_str) {
            Some(text) => self.content_delta(text),
            None => Ok(None),
        }
    }

    fn responses_event(&mut self, event: &Value) -> Result<Option<String>, StreamFailure> {
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let delta = event.get("delta").and_then(Value::as_str);
        match kind {
            "response.output_text.delta" => match delta {
                Some(d) => self.content_delta(d),
                None => Ok(None),
            },
            "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
                if let Some(d) = delta {
                    self.add_reasoning(kind, d)?;
                }
                Ok(None)
            }
            "response.completed" | "response.incomplete" => {
                self.finished = true;
                if let Some(response) = event.get("response") {
                    self.last = xai::parse_response(response).ok();
                }
                if let Some(last) = &self.last {
                    self.limit
                        .check_completion(last)
                        .map_err(StreamFailure::TooLarge)?;
                }
                Ok(None)
            }
            "response.failed" => Err(api_failure(
                event.pointer("/response/error").unwrap_or(&Value::Null),
            )),
            _ => Ok(None),
        }
    }

    fn content_delta(&mut self, text: &str) -> Result<Option<String>, StreamFailure> {
        if text.is_empty() {
            return Ok(None);
        }
        self.hold(text)?;
        self.content.push_str(text);
        Ok(Some(text.to_owned()))
    }

    /// The reasoning read since the last call, to show as it streams (the completion keeps it
    /// all regardless).
    pub fn take_reasoning(&mut self) -> String {
        std::mem::take(&mut self.reasoning_unshown)
    }

    fn add_reasoning(&mut self, source: &str, text: &str) -> Result<(), StreamFailure> {
        self.hold(text)?;
        self.reasoning_unshown.push_str(text);
        match self.reasoning.iter_mut().find(|(s, _)| s == source) {
            Some((_, buffer)) => buffer.push_str(text),
            None => self.reasoning.push((source.to_owned(), text.to_owned())),
        }
        Ok(())
    }

    /// Counts `text` against the limit before it is kept.
    fn hold(&mut self, text: &str) -> Result<(), StreamFailure> {
        let held = self.held.saturating_add(text.len());
        self.limit.check(held).map_err(StreamFailure::TooLarge)?;
        self.held = held;
        Ok(())
    }

    /// The answer, once the stream ended; an unfinished stream is a failure.
    pub fn finish(self) -> Result<Completion, StreamFailure> {
        if !self.finished() {
            return Err(StreamFailure::Unfinished);
        }
        let last = self.last.unwrap_or_default();
        let reasoning = join_reasoning(self.reasoning.iter().map(|(_, text)| text.as_str()));
        Ok(Completion {
            content: if self.content.is_empty() {
                last.content
            } else {
                self.content
            },
            reasoning: reasoning.or(last.reasoning),
            usage: self.usage.unwrap_or(last.usage),
            model: self.model.or(last.model),
        })
    }
}

fn api_failure(error: &Value) -> StreamFailure {
    let message = match error {
        Value::String(s) => s.clone(),
        other => other
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| other.to_string(), str::to_owned),
    };
    let status = error
        .get("code")
        .and_then(|c| {
            c.as_u64()
                .or_else(|| c.as_str().and_then(|s| s.parse().ok()))
        })
        .and_then(|c| u16::try_from(c).ok());
    StreamFailure::Api { status, message }
}

#[cfg(test)]
mod tests;
