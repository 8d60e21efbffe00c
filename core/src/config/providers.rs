//! The provider part of the configuration: endpoints and keys per provider, the shared rate limits, retries and the routing map, read from the variables into `provider::settings`.

use super::{invalid, number, positive, ConfigError};
use rummy_provider::retry::RetryPolicy;
use rummy_provider::routing::{PromptClass, RoutingConfig};
use rummy_provider::settings::{
    OllamaConfig, OpenAiConfig, OpenRouterConfig, ProviderLimits, Providers, XaiConfig,
    DEFAULT_CONCURRENCY,
};
use rummy_provider::ProviderKind;
use std::collections::BTreeMap;

/// Strips a trailing `/` and `/v1` so both spellings of a base URL work.
pub fn openai_base(url: &str) -> String {
    let trimmed = url.trim().trim_end_matches('/');
    trimmed
        .strip_suffix("/v1")
        .unwrap_or(trimmed)
        .trim_end_matches('/')
        .to_owned()
}

/// Strips a trailing `/` and the given suffixes in order, so pasted endpoint URLs still name the base.
fn trim_base(url: &str, suffixes: &[&str]) -> String {
    let mut base = url.trim().trim_end_matches('/');
    for suffix in suffixes {
        base = base
            .strip_suffix(suffix)
            .unwrap_or(base)
            .trim_end_matches('/');
    }
    base.to_owned()
}

/// The provider settings in `vars`.
pub(super) fn from_vars(vars: &BTreeMap<String, String>) -> Result<Providers, ConfigError> {
    let get = |name: &str| {
        vars.get(name)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    // A provider is configured by its base URL, or by its key alone where it has a public default.
    let openai_key = get("OPENAI_API_KEY");
    let openai = match (get("OPENAI_BASE_URL"), &openai_key) {
        (None, None) => None,
        (base, _) => Some(OpenAiConfig {
            base_url: base.map_or_else(|| "https://api.openai.com".to_owned(), |b| openai_base(&b)),
            api_key: openai_key,
        }),
    };
    let ollama = get("OLLAMA_BASE_URL").map(|base| OllamaConfig {
        base_url: openai_base(&base),
    });
    let openrouter_key = get("OPENROUTER_API_KEY");
    let openrouter = match (get("OPENROUTER_BASE_URL"), &openrouter_key) {
        (None, None) => None,
        (base, _) => Some(OpenRouterConfig {
            base_url: trim_base(
                base.as_deref().unwrap_or("https://openrouter.ai/api/v1"),
                &["/chat/completions"],
            ),
            api_key: openrouter_key,
            referer: get("RUMMY_HTTP_REFERER"),
            title: get("RUMMY_X_TITLE"),
        }),
    };
    let xai_key = get("XAI_API_KEY");
    let xai = match (get("XAI_BASE_URL"), &xai_key) {
        (None, None) => None,
        (base, _) => Some(XaiConfig {
            base_url: trim_base(
                base.as_deref().unwrap_or("https://api.x.ai"),
                &["/responses", "/v1"],
            ),
            api_key: xai_key,
        }),
    };
    let mut limits = BTreeMap::new();
    for provider in ProviderKind::ALL.map(ProviderKind::name) {
        let var = |what: &str| format!("RUMMY_{}_{what}", provider.to_ascii_uppercase());
        let (concurrency, rpm, tpm) = (var("CONCURRENCY"), var("RPM"), var("TPM"));
        if [&concurrency, &rpm, &tpm].iter().all(|v| get(v).is_none()) {
            continue;
        }
        let optional = |name: &str| -> Result<Option<u32>, ConfigError> {
            get(name).map(|_| positive(vars, name, 1)).transpose()
        };
        limits.insert(
            provider.to_owned(),
            ProviderLimits {
                concurrency: positive(vars, &concurrency, DEFAULT_CONCURRENCY)?,
                rpm: optional(&rpm)?,
                tpm: optional(&tpm)?,
            },
        );
    }
    let defaults = RetryPolicy::default();
    let retry = RetryPolicy {
        max_retries: number(vars, "RUMMY_RETRIES", defaults.max_retries)?,
        base_ms: positive(vars, "RUMMY_RETRY_BASE_MS", defaults.base_ms)?,
        cap_ms: positive(vars, "RUMMY_RETRY_CAP_MS", defaults.cap_ms)?,
    };
    const MAX_OUTPUT_TOKENS: &str = "RUMMY_MAX_OUTPUT_TOKENS";
    let max_output_tokens = get(MAX_OUTPUT_TOKENS)
        .map(|_| positive(vars, MAX_OUTPUT_TOKENS, 1))
        .transpose()?;
    Ok(Providers {
        openai,
        ollama,
        openrouter,
        xai,
        limits,
        retry,
        routing: routing(vars)?,
        max_output_tokens,
    })
}

/// `RUMMY_ROUTE_<class>=<alias>` for the classes the classifier knows (the class name in any case).
fn routing(vars: &BTreeMap<String, String>) -> Result<RoutingConfig, ConfigError> {
    let mut config = RoutingConfig::default();
    for (name, alias) in vars.range("RUMMY_ROUTE_".to_owned()..) {
        let Some(class) = name.strip_prefix("RUMMY_ROUTE_") else {
            break;
        };
        let alias = alias.trim();
        if alias.is_empty() {
            continue;
        }
        let class = PromptClass::from_name(&class.to_ascii_lowercase()).ok_or_else(|| {
            invalid(name, alias, "unknown prompt class: expected RUMMY_ROUTE_CODE, RUMMY_ROUTE_REASONING or RUMMY_ROUTE_DEFAULT")
        })?;
        config.classes.insert(class, alias.to_owned());
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::super::tests::vars;
    use super::super::Config;
    use super::*;
    use pretty_assertions::assert_eq;
    use std::path::PathBuf;

    /// Rate limits, retries and routing are read per provider and per class; unset means the defaults.
    #[test]
    fn reads_limits_retries_and_routing() {
        let config = Config::from_vars(
            &vars(&[
                ("RUMMY_OPENAI_CONCURRENCY", "2"),
                ("RUMMY_OPENAI_RPM", "60"),
                ("RUMMY_XAI_TPM", "100000"),
                ("RUMMY_RETRIES", "0"),
                ("RUMMY_RETRY_BASE_MS", "50"),
                ("RUMMY_ROUTE_CODE", "deep"),
                ("RUMMY_ROUTE_reasoning", "cloud"),
            ]),
            PathBuf::from("/h"),
        )
        .unwrap();
        let p = &config.providers;
        assert_eq!(
            (
                p.limits_of("openai"),
                p.limits_of("xai"),
                p.limits_of("ollama")
            ),
            (
                ProviderLimits {
                    concurrency: 2,
                    rpm: Some(60),
                    tpm: None
                },
                ProviderLimits {
                    concurrency: 8,
                    rpm: None,
                    tpm: Some(100_000)
                },
                ProviderLimits::default(),
            )
        );
        assert_eq!(
            p.retry,
            RetryPolicy {
                max_retries: 0,
                base_ms: 50,
                ..RetryPolicy::default()
            }
        );
        assert_eq!(
            p.routing.classes,
            BTreeMap::from([
                (PromptClass::Code, "deep".to_owned()),
                (PromptClass::Reasoning, "cloud".to_owned()),
            ])
        );
        for bad in [
            ("RUMMY_OLLAMA_RPM", "0"),
            ("RUMMY_ROUTE_fast", "x"),
            ("RUMMY_RETRY_CAP_MS", "-1"),
        ] {
            let err = Config::from_vars(&vars(&[bad]), PathBuf::from("/h"));
            assert_eq!(err.map_err(|e| e.name), Err(bad.0.to_owned()));
        }
    }

    /// Each provider is configured by its own variables, with bases normalised and defaults where a key alone suffices.
    #[test]
    fn reads_every_provider() {
        let config = Config::from_vars(
            &vars(&[
                ("OLLAMA_BASE_URL", "http://127.0.0.1:11434/v1/"),
                ("OPENROUTER_API_KEY", "sk-or"),
                ("RUMMY_HTTP_REFERER", "https://example.org"),
                ("RUMMY_X_TITLE", "rummy"),
                ("XAI_BASE_URL", "https://api.x.ai/v1/responses"),
                ("XAI_API_KEY", "xai-key"),
            ]),
            PathBuf::from("/h"),
        )
        .unwrap();
        let expected = Providers {
            openai: None,
            ollama: Some(OllamaConfig {
                base_url: "http://127.0.0.1:11434".into(),
            }),
            openrouter: Some(OpenRouterConfig {
                base_url: "https://openrouter.ai/api/v1".into(),
                api_key: Some("sk-or".into()),
                referer: Some("https://example.org".into()),
                title: Some("rummy".into()),
            }),
            xai: Some(XaiConfig {
                base_url: "https://api.x.ai".into(),
                api_key: Some("xai-key".into()),
            }),
            ..Providers::default()
        };
        assert_eq!(config.providers, expected);
    }

    /// `RUMMY_MAX_OUTPUT_TOKENS` is unset unless given, and must be a whole number above zero.
    #[test]
    fn reads_the_output_token_cap() {
        let read = |pairs: &[(&str, &str)]| {
            Config::from_vars(&vars(pairs), PathBuf::from("/h"))
                .map(|c| c.providers.max_output_tokens)
                .map_err(|e| (e.name, e.reason))
        };
        let invalid = |reason: &str| Err(("RUMMY_MAX_OUTPUT_TOKENS".to_owned(), reason.to_owned()));
        assert_eq!(
            [
                read(&[]),
                read(&[("RUMMY_MAX_OUTPUT_TOKENS", " ")]),
                read(&[("RUMMY_MAX_OUTPUT_TOKENS", "4096")]),
                read(&[("RUMMY_MAX_OUTPUT_TOKENS", "0")]),
                read(&[("RUMMY_MAX_OUTPUT_TOKENS", "4k")]),
            ],
            [
                Ok(None),
                Ok(None),
                Ok(Some(4096)),
                invalid("expected a number above zero"),
                invalid("expected a whole number"),
            ]
        );
    }

    /// Both spellings of the OpenAI base URL reach the same endpoint.
    #[test]
    fn base_url_with_or_without_v1() {
        for url in [
            "http://h:1",
            "http://h:1/",
            "http://h:1/v1",
            "http://h:1/v1/",
        ] {
            assert_eq!(openai_base(url), "http://h:1");
        }
    }
}
