//! What the server is configured to ask of its providers: where each lives and its key, the rate limits, retries, routing and the reply cap.
//!
//! The configuration (`config::providers`) reads these from the variables; the provider
//! layer reads them to build its endpoints and limiters, knowing nothing of variables.

use super::retry::RetryPolicy;
use super::routing::RoutingConfig;
use std::collections::BTreeMap;

/// Provider settings; a provider is configured only when its variables are set.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Providers {
    /// The OpenAI-compatible provider (`OPENAI_BASE_URL`, `OPENAI_API_KEY`).
    pub openai: Option<OpenAiConfig>,
    /// Ollama (`OLLAMA_BASE_URL`).
    pub ollama: Option<OllamaConfig>,
    /// OpenRouter (`OPENROUTER_BASE_URL`, `OPENROUTER_API_KEY`, `RUMMY_HTTP_REFERER`, `RUMMY_X_TITLE`).
    pub openrouter: Option<OpenRouterConfig>,
    /// xAI's Responses API (`XAI_BASE_URL`, `XAI_API_KEY`).
    pub xai: Option<XaiConfig>,
    /// `RUMMY_<PROVIDER>_CONCURRENCY|RPM|TPM` for the providers that set any.
    pub limits: BTreeMap<String, ProviderLimits>,
    /// `RUMMY_RETRIES`, `RUMMY_RETRY_BASE_MS`, `RUMMY_RETRY_CAP_MS`: retries of transient failures.
    pub retry: RetryPolicy,
    /// `RUMMY_ROUTE_<class>=<alias>`: the models routed runs use per prompt class.
    pub routing: RoutingConfig,
    /// `RUMMY_MAX_OUTPUT_TOKENS`: the cap on a reply's tokens, sent with every request in each
    /// provider's own field; unset (the default) sends none.
    pub max_output_tokens: Option<u32>,
}

/// Where the OpenAI-compatible provider lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// Base URL without a trailing `/` or `/v1`; requests go to `{base}/v1/chat/completions`.
    pub base_url: String,
    /// Bearer token, if any.
    pub api_key: Option<String>,
}

/// Where Ollama lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OllamaConfig {
    /// Server root without a trailing `/` or `/v1`; chat goes to `{base}/v1/chat/completions`, `/api/show` beside it.
    pub base_url: String,
}

/// Where OpenRouter lives and how requests are attributed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenRouterConfig {
    /// API base (default `https://openrouter.ai/api/v1`); chat goes to `{base}/chat/completions`.
    pub base_url: String,
    /// Bearer token.
    pub api_key: Option<String>,
    /// `RUMMY_HTTP_REFERER`, sent as `HTTP-Referer`.
    pub referer: Option<String>,
    /// `RUMMY_X_TITLE`, sent as `X-Title`.
    pub title: Option<String>,
}

/// Where xAI's Responses API lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XaiConfig {
    /// Server root (default `https://api.x.ai`), without `/v1` or `/v1/responses`.
    pub base_url: String,
    /// Bearer token.
    pub api_key: Option<String>,
}

/// One provider's share of the server-wide rate limiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderLimits {
    /// `RUMMY_<PROVIDER>_CONCURRENCY`: requests in flight at once (default 8).
    pub concurrency: usize,
    /// `RUMMY_<PROVIDER>_RPM`: requests per minute (default unlimited).
    pub rpm: Option<u32>,
    /// `RUMMY_<PROVIDER>_TPM`: tokens per minute (default unlimited).
    pub tpm: Option<u32>,
}

impl Default for ProviderLimits {
    fn default() -> Self {
        ProviderLimits {
            concurrency: DEFAULT_CONCURRENCY,
            rpm: None,
            tpm: None,
        }
    }
}

/// The default concurrency cap per provider.
pub const DEFAULT_CONCURRENCY: usize = 8;

impl Providers {
    /// The rate limits for a provider.
    pub fn limits_of(&self, provider: &str) -> ProviderLimits {
        self.limits.get(provider).copied().unwrap_or_default()
    }

    /// The concurrency cap for a provider.
    pub fn concurrency_of(&self, provider: &str) -> usize {
        self.limits_of(provider).concurrency
    }
}
