//! The sidecar (docs/design/memory.md): side tasks — summaries, session state, re-ranking, consolidation — as pure data: what to ask, how to read the answer, and what is recorded of the call.
//!
//! A [`SideTask`] is a system prompt, an input, a parser for the model's text, a time limit and
//! a `max_tokens`. The actors' `sidecar::run` sends it through the same provider actors and the
//! same limiter as turns, to `RUMMY_SIDECAR_MODEL` (default: the model of the loop that caused
//! it), records a [`SidecarRecord`] on that turn (`sidecar_calls`: its usage and cost count in
//! the run's totals and its project's spending) and answers the parsed value or a
//! [`SidecarFailure`]. A side task never fails a turn: the caller takes its fallback.

use rummy_provider::{ChatMessage, Usage};
use rummy_store::ids::RunId;
use rummy_store::sidecar_calls::SidecarCall;
use serde::Serialize;

/// The sampling temperature of every side task: summaries and rankings want the likeliest
/// answer, not variety.
pub const TEMPERATURE: f64 = 0.2;

/// Reads the model's text into the task's value, or says why it cannot.
pub type Parser<T> = Box<dyn Fn(&str) -> Result<T, String> + Send + Sync>;

/// One side task: what the sidecar model is asked and how its answer is read.
pub struct SideTask<T> {
    /// The task's name (`summary`, `compress`, `rerank`, …), as telemetry and logs show it.
    pub name: &'static str,
    /// The system message: what the model is to do (model-facing text, kept in `.md` files).
    pub system: String,
    /// The user message: what it is to do it with.
    pub input: String,
    /// Reads the reply's text; an `Err` makes the task [`SidecarFailure::Unparseable`].
    pub parse: Parser<T>,
    /// Cap on the reply's tokens (`None`: `RUMMY_SIDECAR_MAX_TOKENS`); the provider's field is
    /// sent with the smaller of it and `RUMMY_MAX_OUTPUT_TOKENS`.
    pub max_tokens: Option<u32>,
    /// Longest the task may take, in ms (`None`: `RUMMY_SIDECAR_TIMEOUT`; never longer than it).
    pub time_limit_ms: Option<u64>,
}

impl<T> SideTask<T> {
    /// A task with the server's default `max_tokens` and time limit.
    pub fn new(
        name: &'static str,
        system: impl Into<String>,
        input: impl Into<String>,
        parse: impl Fn(&str) -> Result<T, String> + Send + Sync + 'static,
    ) -> SideTask<T> {
        SideTask {
            name,
            system: system.into(),
            input: input.into(),
            parse: Box::new(parse),
            max_tokens: None,
            time_limit_ms: None,
        }
    }

    /// The task with its reply capped at `max_tokens`.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> SideTask<T> {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// The task with a time limit shorter than the server's (a caller with a deadline of its
    /// own passes what is left of it).
    pub fn within_ms(mut self, ms: u64) -> SideTask<T> {
        self.time_limit_ms = Some(ms);
        self
    }

    /// The two messages sent: the system prompt, then the input.
    pub fn messages(&self) -> Vec<ChatMessage> {
        vec![
            ChatMessage {
                role: "system",
                content: self.system.clone(),
            },
            ChatMessage {
                role: "user",
                content: self.input.clone(),
            },
        ]
    }

    /// The time limit in ms under the server's `setting_ms` (`RUMMY_SIDECAR_TIMEOUT`).
    pub fn time_limit(&self, setting_ms: u64) -> u64 {
        self.time_limit_ms
            .map_or(setting_ms, |ms| ms.min(setting_ms))
    }

    /// The reply cap sent, given the server's default for side tasks and its global cap
    /// (`RUMMY_MAX_OUTPUT_TOKENS`, if set).
    pub fn reply_cap(&self, default: u32, global: Option<u32>) -> u32 {
        let own = self.max_tokens.unwrap_or(default);
        global.map_or(own, |g| own.min(g))
    }

    /// The reply's text read by the task's parser.
    pub fn read(&self, text: &str) -> Result<T, SidecarFailure> {
        (self.parse)(text).map_err(SidecarFailure::Unparseable)
    }
}

/// How a side task ended, as stored (`sidecar_calls.outcome`) and shown in telemetry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The model answered and the parser read it.
    Ok,
    /// No answer: the model is not defined, its provider is not configured, or the call failed.
    Failed,
    /// No answer within the task's time limit.
    Timeout,
    /// An answer the parser refused.
    Unparseable,
}

impl Outcome {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
            Outcome::Timeout => "timeout",
            Outcome::Unparseable => "unparseable",
        }
    }
}

/// Why a side task gave no value. The caller takes its fallback (a summary falls back to plain
/// demotion); the turn goes on. Each is logged once: in the turn's `sidecar` telemetry, in
/// `sidecar_calls`, and as one warning.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SidecarFailure {
    /// The sidecar's model cannot be called: not defined, or its provider not configured.
    #[error("sidecar model unavailable: {0}")]
    Unavailable(String),
    /// The provider call failed (after its retries and any fallback model).
    #[error("sidecar call failed: {0}")]
    Provider(String),
    /// No answer within the time limit; the call was abandoned (its place in the provider's
    /// queue freed).
    #[error("sidecar call timed out after {ms} ms")]
    Timeout {
        /// The limit that passed.
        ms: u64,
    },
    /// The answer could not be read.
    #[error("sidecar answer unreadable: {0}")]
    Unparseable(String),
}

impl SidecarFailure {
    /// The outcome stored for this failure.
    pub fn outcome(&self) -> Outcome {
        match self {
            SidecarFailure::Unavailable(_) | SidecarFailure::Provider(_) => Outcome::Failed,
            SidecarFailure::Timeout { .. } => Outcome::Timeout,
            SidecarFailure::Unparseable(_) => Outcome::Unparseable,
        }
    }
}

/// One side task's call as recorded on the turn that caused it: the `sidecar` telemetry of the
/// turn-end `run/state`, and its `sidecar_calls` row.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SidecarRecord {
    /// The task's name.
    pub task: &'static str,
    /// The model alias asked.
    pub model: String,
    /// How it ended.
    pub outcome: Outcome,
    /// Why it failed (`None` when it did not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The provider's usage and cost (zero when there was no answer).
    pub usage: Usage,
    /// How long the call took, in ms.
    pub elapsed_ms: u64,
}

impl SidecarRecord {
    /// The record of a call that ended with `result` after `elapsed_ms`; `usage` is what the
    /// provider reported, if it answered.
    pub fn of<T>(
        task: &'static str,
        model: &str,
        result: &Result<T, SidecarFailure>,
        usage: Usage,
        elapsed_ms: u64,
    ) -> SidecarRecord {
        let (outcome, error) = match result {
            Ok(_) => (Outcome::Ok, None),
            Err(failure) => (failure.outcome(), Some(failure.to_string())),
        };
        SidecarRecord {
            task,
            model: model.to_owned(),
            outcome,
            error,
            usage,
            elapsed_ms,
        }
    }

    /// The row stored for the record, on turn `turn` of run `run_id`.
    pub fn row(&self, run_id: RunId, turn: i32) -> SidecarCall<'_> {
        SidecarCall {
            run_id,
            turn,
            task: self.task,
            model: &self.model,
            outcome: self.outcome.as_str(),
            error: self.error.as_deref(),
            usage: self.usage,
            elapsed_ms: self.elapsed_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn words(text: &str) -> Result<usize, String> {
        match text.split_whitespace().count() {
            0 => Err("empty".into()),
            n => Ok(n),
        }
    }

    /// A task sends its system prompt and input as the two messages, and reads the reply with
    /// its parser; what the parser refuses is `Unparseable` with the parser's reason.
    #[test]
    fn a_task_is_two_messages_and_a_parser() {
        let task = SideTask::new("count", "Count the words.", "one two three", words);
        let sent: Vec<(&str, String)> = task
            .messages()
            .into_iter()
            .map(|m| (m.role, m.content))
            .collect();
        assert_eq!(
            sent,
            vec![
                ("system", "Count the words.".to_owned()),
                ("user", "one two three".to_owned())
            ]
        );
        assert_eq!(task.read("a b"), Ok(2));
        assert_eq!(
            task.read("  "),
            Err(SidecarFailure::Unparseable("empty".into()))
        );
    }

    /// The time limit is the server's unless the task asks for less; the reply cap is the
    /// task's (else the sidecar default), never above the server's global cap.
    #[test]
    fn limits_never_exceed_the_servers() {
        let task = || SideTask::new("count", "", "", words);
        assert_eq!(task().time_limit(30_000), 30_000);
        assert_eq!(task().within_ms(5_000).time_limit(30_000), 5_000);
        assert_eq!(task().within_ms(60_000).time_limit(30_000), 30_000);
        assert_eq!(task().reply_cap(1_024, None), 1_024);
        assert_eq!(task().with_max_tokens(300).reply_cap(1_024, None), 300);
        assert_eq!(task().with_max_tokens(300).reply_cap(1_024, Some(200)), 200);
    }

    /// The telemetry of a call: its task, model, outcome, the error's text when it failed,
    /// usage and time, in the shape the turn-end `run/state` carries.
    #[test]
    fn the_telemetry_shape() {
        let usage = Usage {
            prompt_tokens: 120,
            completion_tokens: 30,
            total_tokens: 150,
            cost: 0.002,
            ..Usage::default()
        };
        let ok = SidecarRecord::of("summary", "side", &Ok::<(), _>(()), usage, 40);
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            json!({
                "task": "summary", "model": "side", "outcome": "ok",
                "usage": { "promptTokens": 120, "cachedTokens": 0, "completionTokens": 30,
                           "reasoningTokens": 0, "totalTokens": 150, "cost": 0.002 },
                "elapsedMs": 40
            })
        );
        let late: Result<(), _> = Err(SidecarFailure::Timeout { ms: 500 });
        let timed_out = SidecarRecord::of("summary", "side", &late, Usage::default(), 500);
        assert_eq!(
            (timed_out.outcome, timed_out.error.as_deref()),
            (
                Outcome::Timeout,
                Some("sidecar call timed out after 500 ms")
            )
        );
        let row = timed_out.row(RunId(7), 3);
        assert_eq!(
            (row.run_id, row.turn, row.outcome, row.elapsed_ms),
            (RunId(7), 3, "timeout", 500)
        );
    }

    /// Every failure maps to its stored outcome.
    #[test]
    fn failures_and_outcomes() {
        let cases = [
            (SidecarFailure::Unavailable("x".into()), Outcome::Failed),
            (SidecarFailure::Provider("x".into()), Outcome::Failed),
            (SidecarFailure::Timeout { ms: 1 }, Outcome::Timeout),
            (
                SidecarFailure::Unparseable("x".into()),
                Outcome::Unparseable,
            ),
        ];
        for (failure, outcome) in cases {
            assert_eq!(failure.outcome(), outcome, "{failure}");
        }
    }
}
