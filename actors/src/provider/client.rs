//! One provider's HTTP side: a call with retries through the limiter, the streamed (or whole) answer read into a completion, errors classified; and context-length discovery.

use super::fold::Fold;
use super::limiter::Limiter;
use super::{notify, Complete, Events, ProviderError, ProviderEvent};
use crate::clock::now;
use crate::errors::HttpClientError;
use crate::metrics::Metrics;
use futures_util::{FutureExt, StreamExt};
use rummy_core::config::Config;
use rummy_provider::context::{probes, Method};
use rummy_provider::reply_limit::ReplyLimit;
use rummy_provider::retry::{retry_after_ms, Fault, Pause, RetryPolicy};
use rummy_provider::sse::SseParser;
use rummy_provider::stream::StreamFailure;
use rummy_provider::{parse_response, Completion, Endpoint};
use rummy_text::tokens;
use serde_json::Value;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest error body kept in messages and entries.
const ERROR_BODY_CHARS: usize = 2000;
/// Most of an error body read: enough for [`ERROR_BODY_CHARS`] of any UTF-8; the rest is never read.
const ERROR_BODY_BYTES: usize = ERROR_BODY_CHARS * 4;
/// Longest reason shown to clients in a `retrying` progress event.
const REASON_CHARS: usize = 300;
/// Discovery is a quick metadata question; a slow answer is no answer.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(10);
/// Most of a discovery answer read: many times OpenRouter's whole model catalogue, yet bounded.
const DISCOVERY_MAX_BYTES: usize = 32 * 1024 * 1024;

/// A failed attempt, with the server's `Retry-After` if it sent one.
pub(super) struct Failed {
    /// What failed.
    pub(super) error: ProviderError,
    /// The wait the server asked for, in milliseconds.
    retry_after_ms: Option<u64>,
}

impl From<ProviderError> for Failed {
    fn from(error: ProviderError) -> Self {
        Failed {
            error,
            retry_after_ms: None,
        }
    }
}

/// Calls one provider.
pub(crate) struct Client {
    endpoint: Endpoint,
    http: reqwest::Client,
    limiter: Limiter,
    retry: RetryPolicy,
    /// `RUMMY_MAX_REPLY_BYTES`: past it a reply is cut off.
    reply_limit: ReplyLimit,
    timeout_ms: u64,
    divisor: u32,
    /// Where each attempt's outcome and durations are counted.
    metrics: Arc<Metrics>,
}

impl Client {
    /// Takes this process's part of the provider's limits (see `Limiter::share`).
    pub(crate) fn share(&self, processes: usize) {
        self.limiter.share(processes);
    }

    /// A client for a configured provider, with its share of the server's limits.
    pub fn new(
        endpoint: Endpoint,
        config: &Config,
        metrics: Arc<Metrics>,
    ) -> Result<Client, HttpClientError> {
        let timeout_ms = config.limits.fetch_timeout_ms;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_millis(timeout_ms))
            .build()?;
        let name = endpoint.kind.name();
        Ok(Client {
            limiter: Limiter::new(name, config.providers.limits_of(name), Arc::clone(&metrics)),
            metrics,
            endpoint,
            http,
            retry: config.providers.retry,
            reply_limit: ReplyLimit::new(config.limits.max_reply_bytes),
            timeout_ms,
            divisor: config.limits.token_divisor,
        })
    }

    /// The provider's name.
    pub fn name(&self) -> &'static str {
        self.endpoint.kind.name()
    }

    /// One call: waits its turn, retries transient failures within the budget, reports each wait.
    pub async fn complete(&self, call: Complete) -> Result<Completion, ProviderError> {
        // Serialised once, from the messages themselves: the prompt is the largest thing the
        // server sends, and a retry sends the same bytes.
        let body = self
            .endpoint
            .request_body_capped(
                &call.model,
                &call.messages,
                call.temperature,
                call.max_tokens,
            )
            .map(bytes::Bytes::from)
            .map_err(|e| self.transport(format!("cannot encode the request: {e}")))?;
        let estimated: u64 = call
            .messages
            .iter()
            .map(|m| u64::try_from(tokens::estimate(&m.content, self.divisor)).unwrap_or(0))
            .sum();
        let mut retries = 0;
        loop {
            let Some(slot) = self.limiter.acquire(estimated, &call.events).await else {
                return Err(self.transport("the provider is shutting down".into()));
            };
            let started = Instant::now();
            let mut first_chunk = None;
            let result = self
                .attempt(&body, &call.events, started, &mut first_chunk)
                .await
                .map_err(|mut failed| {
                    failed.error = failed.error.scrubbed(self.endpoint.secret());
                    failed
                });
            drop(slot);
            let outcome = match &result {
                Ok(_) => "ok",
                Err(failed) => failed.error.fault().name(),
            };
            self.metrics.provider_call(
                self.name(),
                &call.model,
                outcome,
                first_chunk,
                started.elapsed(),
            );
            let failed = match result {
                Ok(completion) => {
                    let used = u64::try_from(completion.usage.total_tokens).unwrap_or(0);
                    if used > 0 {
                        self.limiter.settle(estimated, used);
                    }
                    return Ok(completion);
                }
                Err(failed) => failed,
            };
            let fault = failed.error.fault();
            match self.retry.pause(fault, failed.retry_after_ms) {
                // The provider's limit is everyone's: hold the other runs' requests too.
                Pause::For(ms) => self.limiter.pause(ms),
                Pause::TooLong(ms) => {
                    tracing::warn!(
                        provider = self.name(),
                        retry_after_ms = ms,
                        cap_ms = self.retry.cap_ms,
                        "429 asked for a wait past the cap: failing the call"
                    );
                    return Err(ProviderError::Throttled {
                        provider: self.name(),
                        wait_s: ms.div_ceil(1000),
                        cap_ms: self.retry.cap_ms,
                    });
                }
                Pause::Nothing => {}
            }
            let Some(delay) =
                self.retry
                    .next_delay(fault, retries, failed.retry_after_ms, jitter())
            else {
                return Err(failed.error);
            };
            retries += 1;
            tracing::warn!(provider = self.name(), retry = retries, delay_ms = delay, error = %failed.error, "retrying");
            notify(
                &call.events,
                ProviderEvent::Retrying {
                    reason: failed
                        .error
                        .to_string()
                        .chars()
                        .take(REASON_CHARS)
                        .collect(),
                    delay_ms: delay,
                },
            );
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
    }

    /// One HTTP exchange, begun at `started`; `first_chunk` is set to when the first chunk of
    /// a streamed answer arrived.
    async fn attempt(
        &self,
        body: &bytes::Bytes,
        events: &Events,
        started: Instant,
        first_chunk: &mut Option<Duration>,
    ) -> Result<Completion, Failed> {
        let mut request = self
            .http
            .post(self.endpoint.completions_url())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.clone());
        for (name, value) in self.endpoint.headers() {
            request = request.header(name, value);
        }
        let response = request.send().await.map_err(|e| self.http_error(&e))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| retry_after_ms(v, now()));
            let (head, _) = read_up_to(response, ERROR_BODY_BYTES)
                .await
                .unwrap_or_default();
            let body: String = String::from_utf8_lossy(&head)
                .chars()
                .take(ERROR_BODY_CHARS)
                .collect();
            let error = if Fault::of_status(status.as_u16(), &body) == Fault::ContextLength {
                ProviderError::ContextLength {
                    provider: self.name(),
                    message: body,
                }
            } else {
                ProviderError::Status {
                    provider: self.name(),
                    status: status.as_u16(),
                    body,
                }
            };
            return Err(Failed {
                error,
                retry_after_ms: retry_after,
            });
        }
        let streamed = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if streamed {
            return self
                .read_stream(response, events, started, first_chunk)
                .await;
        }
        // A server that does not stream answers JSON; read it whole, but never more than the
        // limit allows: a longer body is cut off unread.
        let max = self.reply_limit.max_raw_bytes();
        let announced = response
            .content_length()
            .is_some_and(|n| n > u64::try_from(max).unwrap_or(u64::MAX));
        if announced {
            return Err(self.too_large().into());
        }
        let (body, whole) = read_up_to(response, max)
            .await
            .map_err(|e| self.http_error(&e))?;
        if !whole {
            return Err(self.too_large().into());
        }
        let text = String::from_utf8_lossy(&body);
        match serde_json::from_str::<Value>(&text) {
            Ok(json) => {
                let completion = parse_response(self.endpoint.kind.wire(), &json)
                    .map_err(|e| self.malformed(e.to_string()))?;
                self.reply_limit
                    .check_completion(&completion)
                    .map_err(|_| self.too_large())?;
                Ok(completion)
            }
            // Event-stream text under the wrong content type.
            Err(_) if text.trim_start().starts_with("data:") => {
                let mut fold = Fold::new(
                    self.name(),
                    self.endpoint.kind.wire(),
                    self.reply_limit,
                    events,
                );
                let mut parser = SseParser::default();
                for event in parser.push(text.as_bytes()).iter().chain(&parser.finish()) {
                    fold.event(event)?;
                }
                fold.finish()
            }
            Err(e) => Err(self.malformed(format!("not JSON: {e}")).into()),
        }
    }

    /// Reads an event stream, sending text deltas as they arrive.
    async fn read_stream(
        &self,
        response: reqwest::Response,
        events: &Events,
        started: Instant,
        first_chunk: &mut Option<Duration>,
    ) -> Result<Completion, Failed> {
        let mut fold = Fold::new(
            self.name(),
            self.endpoint.kind.wire(),
            self.reply_limit,
            events,
        );
        let mut parser = SseParser::default();
        let mut body = response.bytes_stream();
        loop {
            // What already arrived is read before the deltas gathered from it go out as one
            // event: a burst of chunks wakes the turn once, not once per chunk. The connection
            // decodes a chunk at a time on this thread, so it gets one turn of the thread
            // before the stream counts as waiting on the network.
            let mut chunk = body.next().now_or_never();
            if chunk.is_none() {
                tokio::task::yield_now().await;
                chunk = body.next().now_or_never();
            }
            let chunk = match chunk {
                Some(chunk) => chunk,
                None => {
                    fold.flush();
                    body.next().await
                }
            };
            let Some(chunk) = chunk else { break };
            if first_chunk.is_none() {
                *first_chunk = Some(started.elapsed());
            }
            match chunk {
                Ok(bytes) => {
                    for event in parser.push(&bytes) {
                        fold.event(&event)?;
                    }
                    if fold.reader.ended() {
                        return fold.finish();
                    }
                    // An event still being read counts too: one endless line must not grow
                    // without bound. Returning drops the response, which closes the connection.
                    if let Err(too_large) = self.reply_limit.check_raw(parser.buffered()) {
                        return Err(fold.failed(StreamFailure::TooLarge(too_large)));
                    }
                }
                // The answer was complete; a connection dropped while waiting for `[DONE]` loses nothing.
                Err(_) if fold.reader.finished() => break,
                Err(e) => return Err(fold.broken(self.http_error(&e).error)),
            }
        }
        if let Some(event) = parser.finish() {
            fold.event(&event)?;
        }
        fold.finish()
    }

    /// Asks the provider how long the model's context is; the first probe that answers wins.
    pub async fn context_length(&self, model: &str) -> Option<i32> {
        for probe in probes(&self.endpoint, model) {
            let mut request = match probe.method {
                Method::Get => self.http.get(&probe.url),
                Method::Post => self.http.post(&probe.url),
            }
            .timeout(DISCOVERY_TIMEOUT);
            if let Some(body) = &probe.body {
                request = request.json(body);
            }
            for (name, value) in self.endpoint.headers() {
                request = request.header(name, value);
            }
            let answer = match request.send().await {
                Ok(r) if r.status().is_success() => {
                    match read_up_to(r, DISCOVERY_MAX_BYTES).await {
                        Ok((body, true)) => serde_json::from_slice::<Value>(&body).ok(),
                        Ok((_, false)) => {
                            tracing::warn!(provider = self.name(), url = %probe.url, max_bytes = DISCOVERY_MAX_BYTES, "context length answer too large; not read");
                            None
                        }
                        Err(e) => {
                            tracing::debug!(provider = self.name(), url = %probe.url, error = %e, "context length answer broke off");
                            None
                        }
                    }
                }
                Ok(r) => {
                    tracing::debug!(provider = self.name(), url = %probe.url, status = %r.status(), "no context length here");
                    None
                }
                Err(e) => {
                    tracing::debug!(provider = self.name(), url = %probe.url, error = %e, "context length probe failed");
                    None
                }
            };
            if let Some(n) = answer.and_then(|a| probe.reader.context_length(&a, model)) {
                tracing::info!(
                    provider = self.name(),
                    model,
                    context_length = n,
                    "discovered the context length"
                );
                return Some(n);
            }
        }
        None
    }

    /// Asks the provider's models endpoint: how many models it lists, or what went wrong
    /// (`rummy doctor`). Never longer than the discovery timeout.
    pub async fn list_models(&self) -> Result<usize, String> {
        let url = self.endpoint.models_url();
        let mut request = self.http.get(&url).timeout(DISCOVERY_TIMEOUT);
        for (name, value) in self.endpoint.headers() {
            request = request.header(name, value);
        }
        let secret = self.endpoint.secret();
        let scrub = |text: String| match secret.filter(|s| s.len() >= 8) {
            Some(secret) => text.replace(secret, rummy_store::rpc_log::REDACTED),
            None => text,
        };
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => return Err(scrub(self.http_error(&e).error.to_string())),
        };
        let status = response.status();
        let (body, _) = read_up_to(response, DISCOVERY_MAX_BYTES)
            .await
            .map_err(|e| scrub(self.http_error(&e).error.to_string()))?;
        if !status.is_success() {
            let text: String = String::from_utf8_lossy(&body)
                .chars()
                .take(REASON_CHARS)
                .collect();
            return Err(scrub(format!("{url} answered {status}: {text}")));
        }
        let listed = serde_json::from_slice::<Value>(&body)
            .map_err(|e| format!("{url} answered something that is not JSON: {e}"))?;
        // OpenAI-compatible servers and OpenRouter answer `{data: [...]}`; Ollama's own API `{models: [...]}`.
        ["data", "models"]
            .iter()
            .find_map(|key| listed.get(key).and_then(Value::as_array))
            .map(Vec::len)
            .ok_or_else(|| format!("{url} answered JSON without a model list"))
    }

    fn http_error(&self, e: &reqwest::Error) -> Failed {
        if e.is_timeout() {
            return ProviderError::Timeout {
                provider: self.name(),
                ms: self.timeout_ms,
            }
            .into();
        }
        // reqwest's own message is terse ("error sending request"); the causes say what happened.
        let mut reason = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(cause) = source {
            reason.push_str(": ");
            reason.push_str(&cause.to_string());
            source = cause.source();
        }
        self.transport(reason).into()
    }

    fn transport(&self, reason: String) -> ProviderError {
        ProviderError::Transport {
            provider: self.name(),
            reason,
        }
    }

    fn too_large(&self) -> ProviderError {
        ProviderError::TooLarge {
            provider: self.name(),
            limit: self.reply_limit.max_bytes(),
        }
    }

    fn malformed(&self, reason: String) -> ProviderError {
        ProviderError::Malformed {
            provider: self.name(),
            reason,
        }
    }
}

/// A number in `[0, 1)` for backoff jitter: the standard library's randomly keyed hasher, no extra dependency.
fn jitter() -> f64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_i64(now().0);
    // The top 53 bits fill an f64 mantissa exactly.
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Reads a body up to `max` bytes; answers what was read and whether that was all of it. A longer
/// body is read no further: dropping the response closes its connection.
async fn read_up_to(
    mut response: reqwest::Response,
    max: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = max.saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, false));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, true))
}
