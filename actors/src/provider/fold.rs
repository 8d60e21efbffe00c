//! A streamed answer as it is read: events folded into a completion, the text they carry sent on as deltas, and a failure marked as one that showed text or not.

use super::client::Failed;
use super::{notify, Events, ProviderError, ProviderEvent};
use rummy_provider::reply_limit::{ReplyLimit, TooLarge};
use rummy_provider::retry::Fault;
use rummy_provider::sse::SseEvent;
use rummy_provider::stream::{StreamFailure, StreamReader};
use rummy_provider::{Completion, Wire};

/// Folds stream events into a completion, sending deltas, and knows whether any text was shown.
pub(super) struct Fold<'a> {
    /// The provider's name, for errors and logs.
    provider: &'static str,
    events: &'a Events,
    /// The answer so far; the caller asks it whether the stream ended.
    pub(super) reader: StreamReader,
    /// Delta text not sent yet: it goes out at [`Fold::flush`], at the latest when the fold ends.
    pending: String,
    /// Reasoning not sent yet, likewise (it goes out before the text).
    pending_reasoning: String,
    shown: bool,
}

impl<'a> Fold<'a> {
    /// A fold for one answer of `provider` in `wire`'s format, holding at most `limit`.
    pub(super) fn new(
        provider: &'static str,
        wire: Wire,
        limit: ReplyLimit,
        events: &'a Events,
    ) -> Fold<'a> {
        Fold {
            provider,
            events,
            reader: StreamReader::new(wire, limit),
            pending: String::new(),
            pending_reasoning: String::new(),
            shown: false,
        }
    }

    /// Folds one event in; its text, if any, goes out at the next flush.
    pub(super) fn event(&mut self, event: &SseEvent) -> Result<(), Failed> {
        let read = self.reader.event(event);
        let reasoning = self.reader.take_reasoning();
        if !reasoning.is_empty() {
            self.shown = true;
            self.pending_reasoning.push_str(&reasoning);
        }
        match read {
            Ok(Some(delta)) => {
                self.shown = true;
                self.pending.push_str(&delta);
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(failure) => Err(self.failed(failure)),
        }
    }

    /// Sends the reasoning, then the text, gathered since the last flush, each as one event.
    pub(super) fn flush(&mut self) {
        if !self.pending_reasoning.is_empty() {
            notify(
                self.events,
                ProviderEvent::Reasoning(std::mem::take(&mut self.pending_reasoning)),
            );
        }
        if !self.pending.is_empty() {
            notify(
                self.events,
                ProviderEvent::Delta(std::mem::take(&mut self.pending)),
            );
        }
    }

    /// The answer, once the stream ended; what is pending goes out first.
    pub(super) fn finish(mut self) -> Result<Completion, Failed> {
        self.flush();
        if self.reader.skipped() > 0 {
            tracing::warn!(
                provider = self.provider,
                skipped = self.reader.skipped(),
                "skipped stream events that were not JSON"
            );
        }
        let (provider, shown) = (self.provider, self.shown);
        self.reader
            .finish()
            .map_err(|failure| Fold::mark(provider, shown, stream_error(provider, failure)))
    }

    /// What was shown stays shown: the text gathered before the failure goes out first.
    pub(super) fn failed(&mut self, failure: StreamFailure) -> Failed {
        self.flush();
        Fold::mark(
            self.provider,
            self.shown,
            stream_error(self.provider, failure),
        )
    }

    /// The connection broke: as [`Fold::failed`], for an error of the transport.
    pub(super) fn broken(&mut self, error: ProviderError) -> Failed {
        self.flush();
        Fold::mark(self.provider, self.shown, error)
    }

    /// After text was shown a retry or a fallback would repeat it, so a failure that would take one becomes `Interrupted`.
    fn mark(provider: &'static str, shown: bool, error: ProviderError) -> Failed {
        let fault = error.fault();
        if shown && (fault.retryable() || fault.falls_back()) {
            return ProviderError::Interrupted {
                provider,
                reason: error.to_string(),
            }
            .into();
        }
        error.into()
    }
}

/// The error a stream's failure is, as the retry and fallback rules see it.
fn stream_error(provider: &'static str, failure: StreamFailure) -> ProviderError {
    match failure {
        StreamFailure::Unfinished => ProviderError::Transport {
            provider,
            reason: "the stream ended before the answer was finished".into(),
        },
        StreamFailure::TooLarge(TooLarge { limit }) => ProviderError::TooLarge { provider, limit },
        StreamFailure::Api { status, message } => {
            if Fault::of_api_error(status, &message) == Fault::ContextLength {
                ProviderError::ContextLength { provider, message }
            } else {
                ProviderError::Api {
                    provider,
                    code: status,
                    message,
                }
            }
        }
    }
}
