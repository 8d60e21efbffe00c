//! The `ProviderActor` and its messages: one actor per configured provider, handing each call to its client.

use super::client::Client;
use super::ProviderError;
use crate::errors::HttpClientError;
use actix::prelude::*;
use futures_util::future::{select, Either};
use rummy_core::config::Config;
use rummy_provider::{ChatMessage, Completion, Endpoint};
use std::sync::Arc;

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
    /// This call's own reply cap (a side task's `max_tokens`); the smaller of it and
    /// `RUMMY_MAX_OUTPUT_TOKENS` is sent. `None` for a turn: only the server's cap applies.
    pub max_tokens: Option<u32>,
    /// Where to report progress and deltas (dropped events are fine).
    pub events: Option<tokio::sync::mpsc::UnboundedSender<super::ProviderEvent>>,
}

/// Ask the provider for a model's context length (the wire name); `None` when it does not say.
#[derive(Message)]
#[rtype(result = "Option<i32>")]
pub struct DiscoverContext {
    /// The model name on the wire.
    pub model: String,
}

/// Ask the provider's models endpoint whether it answers: how many models it lists, or why not.
#[derive(Message)]
#[rtype(result = "Result<usize, String>")]
pub struct ListModels;

/// A call that stops when its caller stops waiting (`cancelled` resolves when the sender drops).
#[derive(Message)]
#[rtype(result = "Result<Completion, ProviderError>")]
pub(crate) struct Call {
    /// The call.
    pub request: Complete,
    /// Resolves when the caller is gone.
    pub cancelled: tokio::sync::oneshot::Receiver<()>,
}

/// Calls one provider for every run of the server, through that provider's one limiter.
pub struct ProviderActor {
    client: Arc<Client>,
}

impl ProviderActor {
    /// An actor for a configured provider.
    pub fn new(
        endpoint: Endpoint,
        config: &Config,
        metrics: Arc<crate::metrics::Metrics>,
    ) -> Result<ProviderActor, HttpClientError> {
        Ok(ProviderActor {
            client: Arc::new(Client::new(endpoint, config, metrics)?),
        })
    }
}

impl Actor for ProviderActor {
    type Context = Context<Self>;

    /// The arbiter thread exists for this actor alone; it ends with it.
    fn stopped(&mut self, _: &mut Self::Context) {
        Arbiter::current().stop();
    }
}

/// Several processes share the provider's limits: this process takes its part.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Share(pub usize);

impl Handler<Share> for ProviderActor {
    type Result = ();

    fn handle(&mut self, Share(processes): Share, _: &mut Context<Self>) {
        self.client.share(processes);
    }
}

impl Handler<Complete> for ProviderActor {
    type Result = ResponseFuture<Result<Completion, ProviderError>>;

    /// Runs the call to the end, whoever is still waiting for it.
    fn handle(&mut self, msg: Complete, _: &mut Context<Self>) -> Self::Result {
        let client = Arc::clone(&self.client);
        Box::pin(async move { client.complete(msg).await })
    }
}

impl Handler<Call> for ProviderActor {
    type Result = ResponseFuture<Result<Completion, ProviderError>>;

    /// Runs the call until it ends or its caller goes away, which drops the request and frees its slot.
    fn handle(&mut self, msg: Call, _: &mut Context<Self>) -> Self::Result {
        let client = Arc::clone(&self.client);
        let provider = client.name();
        Box::pin(async move {
            let work = Box::pin(client.complete(msg.request));
            match select(work, msg.cancelled).await {
                Either::Left((result, _)) => result,
                Either::Right(_) => Err(ProviderError::Transport {
                    provider,
                    reason: "the call was cancelled".into(),
                }),
            }
        })
    }
}

impl Handler<DiscoverContext> for ProviderActor {
    type Result = ResponseFuture<Option<i32>>;

    fn handle(&mut self, msg: DiscoverContext, _: &mut Context<Self>) -> Self::Result {
        let client = Arc::clone(&self.client);
        Box::pin(async move { client.context_length(&msg.model).await })
    }
}

impl Handler<ListModels> for ProviderActor {
    type Result = ResponseFuture<Result<usize, String>>;

    fn handle(&mut self, _: ListModels, _: &mut Context<Self>) -> Self::Result {
        let client = Arc::clone(&self.client);
        Box::pin(async move { client.list_models().await })
    }
}
