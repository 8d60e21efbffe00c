//! LLM providers against fake servers on loopback: each provider's request and answer shapes, streaming, retries, fallback, bounded replies, discovery and the shared limiter.
//!
//! Most tests drive `Providers` directly (the same object the server uses)
//! to see every event a call reports; `server` goes through a real server
//! and client for what runs and their clients see.

mod bounds;
mod faults;
mod routing;
mod server;
mod shapes;

use rummy::config::Config;
use rummy_actors::provider::{Complete, ProviderError, ProviderEvent, Providers};
use rummy_actors::store::Store;
use rummy_provider::retry::RetryPolicy;
use rummy_provider::time::Millis;
use rummy_provider::{ChatMessage, Completion};
use rummy_store::models::ModelSeed;
use rummy_store::models::{self, Model};
use tempfile::TempDir;

/// Retries quick enough for tests: the policy is the same, only the base and the cap are small
/// (so a `Retry-After` past 40 ms fails its call).
pub fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 3,
        base_ms: 10,
        cap_ms: 40,
    }
}

/// The providers of a server, with their store, in a temp home.
pub struct Rig {
    /// The providers under test.
    pub providers: Providers,
    /// The store they cache context lengths in.
    pub store: Store,
    _home: TempDir,
}

/// What one call gave: its result (errors as their message) and every event it reported.
pub type Outcome = (Result<Completion, String>, Vec<ProviderEvent>);

impl Rig {
    /// Providers started from a configuration `adjust` filled in (quick retries by default).
    pub async fn start(adjust: impl FnOnce(&mut Config)) -> Rig {
        let home = TempDir::new().expect("temp home");
        let mut config = crate::support::database::on_home_database(Config::with_home(
            home.path().to_path_buf(),
        ));
        config.providers.retry = quick_retries();
        adjust(&mut config);
        let store = Store::open(
            &config.database(),
            2,
            std::sync::Arc::new(rummy_actors::metrics::Metrics::new().unwrap()),
        )
        .expect("store opens");
        let providers = Providers::start(&config, store.clone()).expect("providers start");
        Rig {
            providers,
            store,
            _home: home,
        }
    }

    /// Defines a model alias.
    pub async fn model(&self, alias: &str, actual: &str, fallback: Option<&str>) -> Model {
        let seed = ModelSeed {
            alias: alias.into(),
            actual: actual.into(),
            context_length: None,
            fallback: fallback.map(str::to_owned),
        };
        self.store
            .write(move |c| models::upsert(c, &seed, Millis(0)))
            .await
            .expect("model stored")
    }

    /// Calls a model the way a turn does and collects what the call reported, deltas in a row
    /// joined: how a reply's text splits into deltas follows how its chunks arrived (text that
    /// arrived together goes out as one), so tests compare the text.
    pub async fn call(&self, model: &Model) -> Outcome {
        let (result, events) = self.call_raw(model).await;
        (result.map_err(|e| e.to_string()), joined(events))
    }

    /// Like [`Rig::call`], keeping the typed error and the deltas as they were sent.
    pub async fn call_raw(
        &self,
        model: &Model,
    ) -> (Result<Completion, ProviderError>, Vec<ProviderEvent>) {
        let route = self.providers.route(model).expect("model routes");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let result = self
            .providers
            .complete(&route, request(&route.wire_model, Some(tx)))
            .await;
        let mut events = Vec::new();
        while let Ok(event) = rx.try_recv() {
            events.push(event);
        }
        (result, events)
    }
}

/// `events` with every run of consecutive deltas joined into one.
pub fn joined(events: Vec<ProviderEvent>) -> Vec<ProviderEvent> {
    let mut out: Vec<ProviderEvent> = Vec::with_capacity(events.len());
    for event in events {
        match (out.last_mut(), event) {
            (Some(ProviderEvent::Delta(text)), ProviderEvent::Delta(more)) => text.push_str(&more),
            (_, event) => out.push(event),
        }
    }
    out
}

/// The call every test makes: a short system and user message at temperature 0.5.
pub fn request(
    model: &str,
    events: Option<tokio::sync::mpsc::UnboundedSender<ProviderEvent>>,
) -> Complete {
    Complete {
        model: model.to_owned(),
        messages: vec![
            ChatMessage {
                role: "system",
                content: "You are terse.".into(),
            },
            ChatMessage {
                role: "user",
                content: "Say ok.".into(),
            },
        ],
        temperature: 0.5,
        max_tokens: None,
        events,
    }
}

/// Events with backoff delays (which carry jitter) zeroed, after checking they stay within the policy's cap.
pub fn without_jitter(events: Vec<ProviderEvent>) -> Vec<ProviderEvent> {
    events
        .into_iter()
        .map(|event| match event {
            ProviderEvent::Retrying { reason, delay_ms } => {
                assert!(delay_ms <= quick_retries().cap_ms, "{delay_ms} ms");
                ProviderEvent::Retrying {
                    reason,
                    delay_ms: 0,
                }
            }
            other => other,
        })
        .collect()
}

/// A loopback URL nothing listens on: connecting is refused.
pub fn refused_url() -> String {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// A completion with this content, no reasoning, and the fake's usage for `Reply::usage`.
pub fn answer(content: &str, model: &str, prompt: i32, completion: i32) -> Completion {
    Completion {
        content: content.into(),
        reasoning: None,
        usage: rummy_provider::Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt + completion,
            ..Default::default()
        },
        model: Some(model.into()),
    }
}
