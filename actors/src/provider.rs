//! `ProviderActor`: the only caller of LLM APIs; one per configured provider, with a concurrency cap shared by every run.

use actix::prelude::*;
use rummy_core::config::{Config, OpenAiConfig};
use rummy_core::provider::{openai, ChatMessage, Completion};
use rummy_core::store::models::Model;
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;
use tokio::sync::Semaphore;

/// Why a model call failed; the turn records the message as an `error://` entry.
#[derive(Debug, Clone, Error)]
pub enum ProviderError {
    /// The provider answered with an error status.
    #[error("{provider} API error: {status} - {body}")]
    Status {
        /// Provider name.
        provider: &'static str,
        /// HTTP status.
        status: u16,
        /// Response body (truncated).
        body: String,
    },
    /// No answer: connection refused or reset, DNS, TLS.
    #[error("{provider} unreachable: {reason}")]
    Transport {
        /// Provider name.
        provider: &'static str,
        /// What failed.
        reason: String,
    },
    /// No answer within `RUMMY_FETCH_TIMEOUT`.
    #[error("{provider} timeout after {ms} ms")]
    Timeout {
        /// Provider name.
        provider: &'static str,
        /// The timeout.
        ms: u64,
    },
    /// An answer that is not a chat completion.
    #[error("{provider} sent a malformed response: {reason}")]
    Malformed {
        /// Provider name.
        provider: &'static str,
        /// What was wrong.
        reason: String,
    },
}

/// What a call reports while it is under way; the turn forwards each to the run's clients.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderEvent {
    /// A streamed text delta (`ui/render`).
    Delta(String),
    /// Waiting for capacity (`run/progress` queued), with the reason.
    Queued(String),
    /// A transient failure; retrying after a delay (`run/progress` retrying).
    Retrying {
        /// Why.
        reason: String,
        /// Wait before the next attempt.
        delay_ms: u64,
    },
    /// Sent to the fallback model instead (`run/progress` rerouted).
    Rerouted {
        /// Why.
        reason: String,
        /// The fallback alias.
        to: String,
    },
}

/// One model call.
#[derive(Message)]
#[rtype(result = "Result<Completion, ProviderError>")]
pub struct Complete {
    /// The model name on the wire (without the provider segment).
    pub model: String,
    /// System and user message.
    pub messages: Vec<ChatMessage>,
    /// Sampling temperature.
    pub temperature: f64,
    /// Where to report progress and deltas (dropped events are fine).
    pub events: Option<tokio::sync::mpsc::UnboundedSender<ProviderEvent>>,
}

/// Calls one OpenAI-compatible provider.
pub struct ProviderActor {
    http: reqwest::Client,
    endpoint: String,
    api_key: Option<String>,
    /// Caps concurrent requests to this provider across all runs.
    permits: Arc<Semaphore>,
    timeout_ms: u64,
}

impl Actor for ProviderActor {
    type Context = Context<Self>;
}

/// Longest error body kept in messages and entries.
const ERROR_BODY_CHARS: usize = 2000;

impl ProviderActor {
    fn openai(config: &OpenAiConfig, concurrency: usize, timeout_ms: u64) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_millis(timeout_ms))
            .build()
            .map_err(|e| format!("cannot build HTTP client: {e}"))?;
        Ok(ProviderActor {
            http,
            endpoint: openai::endpoint(&config.base_url),
            api_key: config.api_key.clone(),
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
            timeout_ms,
        })
    }
}

impl Handler<Complete> for ProviderActor {
    type Result = ResponseFuture<Result<Completion, ProviderError>>;

    fn handle(&mut self, msg: Complete, _: &mut Context<Self>) -> Self::Result {
        const NAME: &str = "openai";
        let mut request = self.http.post(&self.endpoint).json(&openai::request_body(
            &msg.model,
            &msg.messages,
            msg.temperature,
        ));
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let permits = Arc::clone(&self.permits);
        let timeout_ms = self.timeout_ms;
        Box::pin(async move {
            let _permit = permits
                .acquire_owned()
                .await
                .map_err(|_| ProviderError::Transport {
                    provider: NAME,
                    reason: "provider is shutting down".into(),
                })?;
            let transport = |e: reqwest::Error| {
                if e.is_timeout() {
                    ProviderError::Timeout {
                        provider: NAME,
                        ms: timeout_ms,
                    }
                } else {
                    ProviderError::Transport {
                        provider: NAME,
                        reason: e.to_string(),
                    }
                }
            };
            let response = request.send().await.map_err(transport)?;
            let status = response.status();
            let text = response.text().await.map_err(transport)?;
            if !status.is_success() {
                return Err(ProviderError::Status {
                    provider: NAME,
                    status: status.as_u16(),
                    body: text.chars().take(ERROR_BODY_CHARS).collect(),
                });
            }
            let body: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| ProviderError::Malformed {
                    provider: NAME,
                    reason: format!("not JSON: {e}"),
                })?;
            openai::parse_response(&body).map_err(|e| ProviderError::Malformed {
                provider: NAME,
                reason: e.to_string(),
            })
        })
    }
}

/// The configured providers, by name.
#[derive(Clone, Default)]
pub struct Providers {
    openai: Option<Addr<ProviderActor>>,
}

/// A model alias resolved to the actor that serves it.
#[derive(Clone)]
pub struct Route {
    /// The provider actor.
    pub provider: Addr<ProviderActor>,
    /// The model name on the wire.
    pub wire_model: String,
}

impl Providers {
    /// Starts an actor for every configured provider. Must run inside an actix system.
    pub fn start(config: &Config) -> Result<Providers, String> {
        let timeout = config.limits.fetch_timeout_ms;
        let openai = match &config.providers.openai {
            Some(c) => {
                let actor =
                    ProviderActor::openai(c, config.providers.concurrency_of("openai"), timeout)?;
                Some(actor.start())
            }
            None => None,
        };
        Ok(Providers { openai })
    }

    /// The actor for a model, or a message saying what to configure.
    pub fn route(&self, model: &Model) -> Result<Route, String> {
        match model.provider() {
            "openai" => self
                .openai
                .clone()
                .map(|provider| Route { provider, wire_model: model.wire_name().to_owned() })
                .ok_or_else(|| {
                    format!(
                        "provider \"openai\" for model \"{}\" is not configured: set OPENAI_BASE_URL (and OPENAI_API_KEY if it needs one)",
                        model.alias
                    )
                }),
            other => Err(format!(
                "provider \"{other}\" for model \"{}\" is not supported by this server yet (supported: openai)",
                model.alias
            )),
        }
    }
}
