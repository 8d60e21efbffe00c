//! Where a configured provider lives: its completion URL, headers and request body, derived from configuration alone.

use super::openai::OutputLimit;
use super::settings::Providers;
use super::{openai, xai, ChatMessage, ProviderKind};

/// One configured provider's address and credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Which provider.
    pub kind: ProviderKind,
    /// The base its URLs hang off: the server root (openai, ollama, xai) or the API base (openrouter).
    pub base: String,
    api_key: Option<String>,
    /// Headers besides authorization (openrouter's attribution).
    extra: Vec<(&'static str, String)>,
    /// `RUMMY_MAX_OUTPUT_TOKENS`, sent with every request in this provider's own field.
    max_output_tokens: Option<u32>,
}

impl Endpoint {
    /// The endpoint of a provider, if its variables are set.
    pub fn of(kind: ProviderKind, providers: &Providers) -> Option<Endpoint> {
        let endpoint = |base: &str, api_key: &Option<String>| Endpoint {
            kind,
            base: base.to_owned(),
            api_key: api_key.clone(),
            extra: Vec::new(),
            max_output_tokens: providers.max_output_tokens,
        };
        match kind {
            ProviderKind::OpenAi => providers
                .openai
                .as_ref()
                .map(|c| endpoint(&c.base_url, &c.api_key)),
            ProviderKind::Ollama => providers
                .ollama
                .as_ref()
                .map(|c| endpoint(&c.base_url, &None)),
            ProviderKind::OpenRouter => providers.openrouter.as_ref().map(|c| Endpoint {
                extra: [("HTTP-Referer", &c.referer), ("X-Title", &c.title)]
                    .into_iter()
                    .filter_map(|(name, value)| value.clone().map(|v| (name, v)))
                    .collect(),
                ..endpoint(&c.base_url, &c.api_key)
            }),
            ProviderKind::Xai => providers
                .xai
                .as_ref()
                .map(|c| endpoint(&c.base_url, &c.api_key)),
        }
    }

    /// What an operator sets to configure a provider, for the error a run gets when it is missing.
    pub fn how_to_configure(kind: ProviderKind) -> &'static str {
        match kind {
            ProviderKind::OpenAi => "set OPENAI_BASE_URL (and OPENAI_API_KEY if it needs one)",
            ProviderKind::Ollama => "set OLLAMA_BASE_URL",
            ProviderKind::OpenRouter => {
                "set OPENROUTER_API_KEY (and OPENROUTER_BASE_URL for another host)"
            }
            ProviderKind::Xai => "set XAI_API_KEY (and XAI_BASE_URL for another host)",
        }
    }

    /// Where the provider lists its models (`rummy doctor` asks it whether the provider answers).
    pub fn models_url(&self) -> String {
        let base = &self.base;
        match self.kind {
            ProviderKind::OpenAi | ProviderKind::Ollama | ProviderKind::Xai => {
                format!("{base}/v1/models")
            }
            ProviderKind::OpenRouter => format!("{base}/models"),
        }
    }

    /// Where completions are posted.
    pub fn completions_url(&self) -> String {
        let base = &self.base;
        match self.kind {
            ProviderKind::OpenAi | ProviderKind::Ollama => format!("{base}/v1/chat/completions"),
            ProviderKind::OpenRouter => format!("{base}/chat/completions"),
            ProviderKind::Xai => format!("{base}/v1/responses"),
        }
    }

    /// The API key, if the provider takes one (for scrubbing it out of error texts).
    pub fn secret(&self) -> Option<&str> {
        self.api_key.as_deref()
    }

    /// The headers every request carries: the bearer key if there is one, then the provider's own.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let auth = self
            .api_key
            .as_ref()
            .map(|key| ("Authorization", format!("Bearer {key}")));
        auth.into_iter().chain(self.extra.iter().cloned()).collect()
    }

    /// The request body in this provider's shape, with the output cap in the field it reads.
    ///
    /// OpenAI takes `max_completion_tokens` (its reasoning models refuse
    /// `max_tokens`); Ollama's and OpenRouter's chat completions read `max_tokens`;
    /// the Responses API reads `max_output_tokens`.
    pub fn request_body(
        &self,
        model: &str,
        messages: &[ChatMessage],
        temperature: f64,
    ) -> serde_json::Result<Vec<u8>> {
        self.request_body_capped(model, messages, temperature, None)
    }

    /// [`Endpoint::request_body`] for a call with a reply cap of its own (a side task's
    /// `max_tokens`): the smaller of it and `RUMMY_MAX_OUTPUT_TOKENS` is sent.
    pub fn request_body_capped(
        &self,
        model: &str,
        messages: &[ChatMessage],
        temperature: f64,
        max_tokens: Option<u32>,
    ) -> serde_json::Result<Vec<u8>> {
        let cap = match (self.max_output_tokens, max_tokens) {
            (Some(global), Some(own)) => Some(global.min(own)),
            (global, own) => global.or(own),
        };
        let chat = |limit: fn(u32) -> OutputLimit| {
            let limit = cap.map_or(OutputLimit::Unset, limit);
            serde_json::to_vec(&openai::request_body(model, messages, temperature, limit))
        };
        match self.kind {
            ProviderKind::OpenAi => chat(OutputLimit::MaxCompletionTokens),
            ProviderKind::Ollama | ProviderKind::OpenRouter => chat(OutputLimit::MaxTokens),
            ProviderKind::Xai => {
                serde_json::to_vec(&xai::request_body(model, messages, temperature, cap))
            }
        }
    }
}

/// Shows everything but the key, so an endpoint can be logged.
impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("kind", &self.kind)
            .field("base", &self.base)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("extra", &self.extra)
            .field("max_output_tokens", &self.max_output_tokens)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::{OllamaConfig, OpenAiConfig, OpenRouterConfig, XaiConfig};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn configured() -> Providers {
        Providers {
            openai: Some(OpenAiConfig {
                base_url: "http://h:1".into(),
                api_key: Some("sk-o".into()),
            }),
            ollama: Some(OllamaConfig {
                base_url: "http://h:2".into(),
            }),
            openrouter: Some(OpenRouterConfig {
                base_url: "http://h:3/api/v1".into(),
                api_key: Some("sk-r".into()),
                referer: Some("https://example.org".into()),
                title: Some("rummy".into()),
            }),
            xai: Some(XaiConfig {
                base_url: "http://h:4".into(),
                api_key: Some("xai-k".into()),
            }),
            ..Providers::default()
        }
    }

    fn messages() -> [ChatMessage; 2] {
        [
            ChatMessage {
                role: "system",
                content: "s".into(),
            },
            ChatMessage {
                role: "user",
                content: "u".into(),
            },
        ]
    }

    /// Each provider's URL, headers and request body, compared whole: without
    /// `RUMMY_MAX_OUTPUT_TOKENS` no body carries an output cap.
    #[test]
    fn requests_per_provider() {
        let providers = configured();
        let messages = messages();
        let chat = json!({
            "model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
            "temperature": 0.5, "stream": true, "stream_options": {"include_usage": true}
        });
        let responses = json!({
            "model": "m", "input": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
            "temperature": 0.5, "stream": true
        });
        let cases = [
            (
                ProviderKind::OpenAi,
                "http://h:1/v1/chat/completions",
                vec![("Authorization", "Bearer sk-o")],
                &chat,
            ),
            (
                ProviderKind::Ollama,
                "http://h:2/v1/chat/completions",
                vec![],
                &chat,
            ),
            (
                ProviderKind::OpenRouter,
                "http://h:3/api/v1/chat/completions",
                vec![
                    ("Authorization", "Bearer sk-r"),
                    ("HTTP-Referer", "https://example.org"),
                    ("X-Title", "rummy"),
                ],
                &chat,
            ),
            (
                ProviderKind::Xai,
                "http://h:4/v1/responses",
                vec![("Authorization", "Bearer xai-k")],
                &responses,
            ),
        ];
        for (kind, url, headers, body) in cases {
            let endpoint = Endpoint::of(kind, &providers).unwrap();
            let got_headers: Vec<(&str, String)> = endpoint.headers();
            let want_headers: Vec<(&str, String)> = headers
                .into_iter()
                .map(|(n, v)| (n, v.to_owned()))
                .collect();
            assert_eq!(
                (
                    endpoint.completions_url(),
                    got_headers,
                    serde_json::from_slice::<serde_json::Value>(
                        &endpoint.request_body("m", &messages, 0.5).unwrap()
                    )
                    .unwrap()
                ),
                (url.to_owned(), want_headers, body.clone()),
                "{kind:?}"
            );
        }
    }

    /// With `RUMMY_MAX_OUTPUT_TOKENS` set, each provider's body carries it in the one field that
    /// provider reads (snapshot of the four bodies).
    #[test]
    fn request_bodies_carry_the_output_cap_in_each_providers_field() {
        let providers = Providers {
            max_output_tokens: Some(256),
            ..configured()
        };
        let bodies: Vec<String> = ProviderKind::ALL
            .into_iter()
            .map(|kind| {
                let endpoint = Endpoint::of(kind, &providers).unwrap();
                let body = endpoint.request_body("m", &messages(), 0.5).unwrap();
                let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
                format!(
                    "{}:\n{}",
                    kind.name(),
                    serde_json::to_string_pretty(&body).unwrap()
                )
            })
            .collect();
        insta::assert_snapshot!(bodies.join("\n\n"));
    }

    /// A call's own cap (a side task's `max_tokens`) is sent in the provider's field, as the
    /// smaller of it and the server's cap when both are set.
    #[test]
    fn a_calls_own_cap_never_exceeds_the_servers() {
        let cap_of = |global: Option<u32>, own: Option<u32>| {
            let providers = Providers {
                max_output_tokens: global,
                ..configured()
            };
            let endpoint = Endpoint::of(ProviderKind::OpenAi, &providers).unwrap();
            let body = endpoint
                .request_body_capped("m", &messages(), 0.5, own)
                .unwrap();
            serde_json::from_slice::<serde_json::Value>(&body).unwrap()["max_completion_tokens"]
                .as_u64()
        };
        assert_eq!(
            [
                cap_of(None, None),
                cap_of(None, Some(300)),
                cap_of(Some(256), Some(300)),
                cap_of(Some(512), Some(300)),
                cap_of(Some(256), None),
            ],
            [None, Some(300), Some(256), Some(300), Some(256)]
        );
    }

    /// An unconfigured provider has no endpoint, and a logged endpoint never shows its key.
    #[test]
    fn silent_unless_configured_and_key_redacted() {
        for kind in ProviderKind::ALL {
            assert_eq!(Endpoint::of(kind, &Providers::default()), None);
        }
        let endpoint = Endpoint::of(ProviderKind::OpenAi, &configured()).unwrap();
        let shown = format!("{endpoint:?}");
        assert!(
            !shown.contains("sk-o") && shown.contains("<redacted>"),
            "{shown}"
        );
    }
}
