//! `ProviderActor`: the only caller of LLM APIs — one per configured provider, each with the server's one rate limiter for that provider.
//!
//! - `actor`: the actor and its messages;
//! - `client`: one call with retries (streaming, JSON fallback, errors), replies read within
//!   `RUMMY_MAX_REPLY_BYTES`;
//! - `fold`: a streamed answer folded as it is read, its text sent on as deltas;
//! - `limiter`: the concurrency cap, the per-minute buckets and the 429 pause;
//! - here: the errors and events callers see, routing a model to its
//!   provider, fallback to another model, and context-length discovery.

mod actor;
mod client;
mod fold;
mod limiter;

pub use actor::{Complete, DiscoverContext, ListModels, ProviderActor};

use crate::clock::now;
use crate::errors::HttpClientError;
use crate::store::Store;
use actix::prelude::*;
use actor::Call;
use rummy_core::config::Config;
use rummy_provider::retry::Fault;
use rummy_provider::{Completion, Endpoint, ProviderKind};
use rummy_store::models::ModelSeed;
use rummy_store::models::{self, Model};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use thiserror::Error;
use tokio::sync::mpsc::UnboundedSender;

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
    /// The provider reported an error inside a streamed answer.
    #[error("{provider} API error in the stream: {message}")]
    Api {
        /// Provider name.
        provider: &'static str,
        /// The error's numeric code, if it gave one.
        code: Option<u16>,
        /// The error's message.
        message: String,
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
    /// The provider refused the prompt as too long for the model; never retried, it ends the loop 413.
    #[error("{provider} context length exceeded: {message}")]
    ContextLength {
        /// Provider name.
        provider: &'static str,
        /// The provider's message.
        message: String,
    },
    /// The stream broke after text had been shown to clients; not retried, not sent to a fallback.
    #[error("{provider} stream interrupted after text was shown: {reason}")]
    Interrupted {
        /// Provider name.
        provider: &'static str,
        /// What broke.
        reason: String,
    },
    /// A 429 asked for a longer wait than `RUMMY_RETRY_CAP_MS`: the call fails rather than
    /// pausing every run on the provider; not retried, but sent to a fallback if there is one.
    #[error("{provider} asked to wait {wait_s} s before the next request (429 Retry-After), more than RUMMY_RETRY_CAP_MS allows ({cap_ms} ms)")]
    Throttled {
        /// Provider name.
        provider: &'static str,
        /// The wait asked for, in whole seconds (rounded up).
        wait_s: u64,
        /// The longest wait honoured.
        cap_ms: u64,
    },
    /// The reply passed `RUMMY_MAX_REPLY_BYTES` and the call was cut off; neither retried nor
    /// sent to a fallback (it would only repeat, and its text was usually shown already).
    #[error("{provider} reply passed RUMMY_MAX_REPLY_BYTES ({limit} bytes): the call was cut off")]
    TooLarge {
        /// Provider name.
        provider: &'static str,
        /// The limit, in bytes of text and reasoning.
        limit: usize,
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

impl ProviderError {
    /// The error with every appearance of `secret` (the provider's key) replaced: a provider
    /// that echoes the key it was sent in an error body must not put it in an `error://` entry,
    /// a notification or a log line.
    pub fn scrubbed(mut self, secret: Option<&str>) -> Self {
        let Some(secret) = secret.filter(|s| s.len() >= 8) else {
            return self;
        };
        match &mut self {
            ProviderError::Status { body: text, .. }
            | ProviderError::Api { message: text, .. }
            | ProviderError::Transport { reason: text, .. }
            | ProviderError::ContextLength { message: text, .. }
            | ProviderError::Interrupted { reason: text, .. }
            | ProviderError::Malformed { reason: text, .. } => {
                *text = text.replace(secret, rummy_store::rpc_log::REDACTED);
            }
            ProviderError::Timeout { .. }
            | ProviderError::Throttled { .. }
            | ProviderError::TooLarge { .. } => {}
        }
        self
    }

    /// The failure as the retry and fallback rules see it.
    pub fn fault(&self) -> Fault {
        match self {
            ProviderError::Status { status, body, .. } => Fault::of_status(*status, body),
            ProviderError::Api { code, message, .. } => Fault::of_api_error(*code, message),
            ProviderError::Transport { .. } => Fault::Unreachable,
            ProviderError::Timeout { .. } => Fault::Timeout,
            ProviderError::ContextLength { .. } => Fault::ContextLength,
            ProviderError::Interrupted { .. } => Fault::Interrupted,
            ProviderError::Malformed { .. } => Fault::Malformed,
            ProviderError::Throttled { .. } => Fault::Throttled,
            ProviderError::TooLarge { .. } => Fault::TooLarge,
        }
    }
}

/// What a call reports while it is under way; the turn forwards each to the run's clients.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderEvent {
    /// A streamed text delta (`ui/render`).
    Delta(String),
    /// A streamed reasoning delta (`ui/render` with `reasoning: true`).
    Reasoning(String),
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

/// Where a call reports its events.
pub(crate) type Events = Option<UnboundedSender<ProviderEvent>>;

/// Sends an event if anyone listens; a closed channel only means nobody does any more.
pub(crate) fn notify(events: &Events, event: ProviderEvent) {
    if let Some(tx) = events {
        let _ = tx.send(event);
    }
}

/// A model alias resolved to the actor that serves it.
#[derive(Clone)]
pub struct Route {
    /// The provider actor.
    pub provider: Addr<ProviderActor>,
    /// The provider's name (`openai`, …), for logs and metrics.
    pub provider_name: &'static str,
    /// The model name on the wire.
    pub wire_model: String,
    /// The alias this route serves.
    pub alias: String,
    /// The model's fallback alias, tried once for transport failures ([`Providers::complete`]).
    pub fallback: Option<String>,
}

/// What a client or the model reads about a model alias nobody defined.
pub fn undefined_model(alias: &str) -> String {
    format!("model \"{alias}\" is not defined: addModel it or set RUMMY_MODEL_{alias}=<provider>/<model>")
}

/// The configured providers, by name, and the store where discovered context lengths are cached.
#[derive(Clone)]
pub struct Providers {
    actors: BTreeMap<ProviderKind, Addr<ProviderActor>>,
    store: Store,
    /// The models whose unknown context length was warned about: once each, not at every
    /// loop that asks again.
    unknown_context: Arc<Mutex<BTreeSet<String>>>,
}

impl Providers {
    /// Starts an actor for every configured provider. Must run inside an actix system.
    pub fn start(config: &Config, store: Store) -> Result<Providers, HttpClientError> {
        let mut actors = BTreeMap::new();
        for kind in ProviderKind::ALL {
            if let Some(endpoint) = Endpoint::of(kind, &config.providers) {
                let actor = ProviderActor::new(endpoint, config, Arc::clone(store.metrics()))?;
                let arbiter = Arbiter::new();
                let addr = ProviderActor::start_in_arbiter(&arbiter.handle(), move |_| actor);
                actors.insert(kind, addr);
            }
        }
        Ok(Providers {
            actors,
            store,
            unknown_context: Arc::default(),
        })
    }

    /// Divides every provider's limits among `processes` processes (several on one PostgreSQL
    /// database): this process keeps its part.
    pub fn share(&self, processes: usize) {
        for actor in self.actors.values() {
            actor.do_send(actor::Share(processes));
        }
    }

    /// Asks every configured provider's models endpoint, all at once: its name and how many
    /// models it listed, or why it did not answer.
    pub async fn list_models(&self) -> Vec<(&'static str, Result<usize, String>)> {
        let asked = self.actors.iter().map(|(kind, actor)| async move {
            let answer = actor
                .send(ListModels)
                .await
                .unwrap_or_else(|e| Err(format!("provider actor unavailable: {e}")));
            (kind.name(), answer)
        });
        futures_util::future::join_all(asked).await
    }

    /// The actor for a model, or a message saying what to configure.
    pub fn route(&self, model: &Model) -> Result<Route, String> {
        let name = model.provider();
        let Some(kind) = ProviderKind::from_name(name) else {
            let known: Vec<&str> = ProviderKind::ALL.iter().map(|k| k.name()).collect();
            return Err(format!(
                "provider \"{name}\" for model \"{}\" is not supported (supported: {})",
                model.alias,
                known.join(", ")
            ));
        };
        let provider = self.actors.get(&kind).cloned().ok_or_else(|| {
            format!(
                "provider \"{name}\" for model \"{}\" is not configured: {}",
                model.alias,
                Endpoint::how_to_configure(kind)
            )
        })?;
        Ok(Route {
            provider,
            provider_name: kind.name(),
            wire_model: model.wire_name().to_owned(),
            alias: model.alias.clone(),
            fallback: model.fallback.clone().filter(|f| *f != model.alias),
        })
    }

    /// Calls the route's model; on a transport failure before any text streamed, tries its fallback once.
    ///
    /// Dropping the returned future (a cancelled turn) abandons the HTTP
    /// request and frees its place in the provider's queue.
    pub async fn complete(
        &self,
        route: &Route,
        call: Complete,
    ) -> Result<Completion, ProviderError> {
        // The fallback needs the request again; copy it only when there is one.
        let again = route.fallback.as_ref().map(|_| {
            let Complete {
                messages,
                temperature,
                max_tokens,
                events,
                ..
            } = &call;
            (messages.clone(), *temperature, *max_tokens, events.clone())
        });
        let error = match send(&route.provider, call).await {
            Ok(completion) => return Ok(completion),
            Err(error) => error,
        };
        let (Some(alias), Some((messages, temperature, max_tokens, events))) =
            (&route.fallback, again)
        else {
            return Err(error);
        };
        if !error.fault().falls_back() {
            return Err(error);
        }
        let target = match self.resolve(alias).await {
            Ok(target) => target,
            Err(why) => {
                tracing::warn!(model = %route.alias, fallback = %alias, reason = %why, "fallback unavailable");
                return Err(error);
            }
        };
        tracing::warn!(model = %route.alias, fallback = %alias, error = %error, "rerouting to the fallback model");
        notify(
            &events,
            ProviderEvent::Rerouted {
                reason: error.to_string(),
                to: alias.clone(),
            },
        );
        let call = Complete {
            model: target.wire_model,
            messages,
            temperature,
            max_tokens,
            events,
        };
        send(&target.provider, call).await
    }

    async fn resolve(&self, alias: &str) -> Result<Route, String> {
        let lookup = alias.to_owned();
        let model = self
            .store
            .read(move |c| models::by_alias(c, &lookup))
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("fallback model \"{alias}\" is not defined"))?;
        self.route(&model)
    }

    /// The model's context length: the stored one, else asked of its provider and cached in `models`.
    pub async fn context_length(&self, model: &Model) -> Option<i32> {
        if model.context_length.is_some() {
            return model.context_length;
        }
        let route = self.route(model).ok()?;
        let asked = route
            .provider
            .send(DiscoverContext {
                model: route.wire_model,
            })
            .await
            .ok()
            .flatten();
        let Some(discovered) = asked else {
            // Without it the budget cannot keep prompts within the model's context.
            let first = self
                .unknown_context
                .lock()
                .map(|mut warned| warned.insert(model.alias.clone()))
                .unwrap_or(true);
            if first {
                tracing::warn!(
                    model = %model.alias,
                    provider = route.provider_name,
                    "context length unknown: the provider does not say; set RUMMY_CONTEXT_{}=<tokens>",
                    model.alias
                );
            }
            return None;
        };
        let (alias, actual) = (model.alias.clone(), model.actual.clone());
        let cached = self
            .store
            .write(move |c| {
                // Only if the alias still means the model that was asked about.
                match models::by_alias(c, &alias)? {
                    Some(m) if m.actual == actual && m.context_length.is_none() => {
                        let seed = ModelSeed {
                            alias,
                            actual,
                            context_length: Some(discovered),
                            fallback: None,
                        };
                        models::upsert(c, &seed, now()).map(|_| ())
                    }
                    _ => Ok(()),
                }
            })
            .await;
        if let Err(e) = cached {
            tracing::warn!(model = %model.alias, error = %e, "cannot cache the context length");
        }
        Some(discovered)
    }
}

/// Sends one call to a provider actor; dropping the future cancels the call.
async fn send(
    provider: &Addr<ProviderActor>,
    request: Complete,
) -> Result<Completion, ProviderError> {
    // The actor's work ends when this sender is dropped, i.e. when the caller stops waiting.
    let (_cancel, cancelled) = tokio::sync::oneshot::channel::<()>();
    match provider.send(Call { request, cancelled }).await {
        Ok(result) => result,
        Err(e) => Err(ProviderError::Transport {
            provider: "provider",
            reason: format!("provider actor unavailable: {e}"),
        }),
    }
}
