//! What a configuration says at start-up: the providers it configures (names and where they
//! are, never keys) and the settings that look wrong — the server starts all the same, and
//! the start-up summary warns about each.

use super::Config;
use rummy_provider::{Endpoint, ProviderKind};
use rummy_store::location::without_credentials;

/// The variable that names a provider's base URL.
fn base_variable(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenAi => "OPENAI_BASE_URL",
        ProviderKind::Ollama => "OLLAMA_BASE_URL",
        ProviderKind::OpenRouter => "OPENROUTER_BASE_URL",
        ProviderKind::Xai => "XAI_BASE_URL",
    }
}

/// Why `url` cannot be a provider's base URL, if it cannot: it needs `http://` or `https://`, a
/// host, a numeric port if any, and no spaces.
pub fn malformed_base(url: &str) -> Option<&'static str> {
    let Some(rest) = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
    else {
        return Some("it must start with http:// or https://");
    };
    if url.chars().any(char::is_whitespace) {
        return Some("it contains a space");
    }
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = match host_port.strip_prefix('[') {
        // An IPv6 literal: `[::1]:8080`.
        Some(v6) => match v6.split_once(']') {
            Some((host, after)) => (host, after.strip_prefix(':')),
            None => return Some("its IPv6 address lacks the closing ]"),
        },
        None => match host_port.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        },
    };
    if host.is_empty() {
        return Some("it names no host");
    }
    if port.is_some_and(|p| p.parse::<u16>().is_err()) {
        return Some("its port is not a number from 0 to 65535");
    }
    None
}

impl Config {
    /// Every configured provider's name and base URL (without credentials), in a fixed order.
    pub fn configured_providers(&self) -> Vec<(&'static str, String)> {
        ProviderKind::ALL
            .into_iter()
            .filter_map(|kind| Endpoint::of(kind, &self.providers))
            .map(|endpoint| (endpoint.kind.name(), without_credentials(&endpoint.base)))
            .collect()
    }

    /// The settings that look wrong, one sentence each saying what to do: a network bind
    /// without TLS, a malformed base URL, a model naming a provider rummy does not know, or one
    /// that is not configured.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if !self.access.bind.is_loopback() && self.access.tls.is_none() {
            warnings.push(format!(
                "RUMMY_BIND={} serves the network without TLS: tokens, prompts and the project's code cross it in clear; set RUMMY_TLS_CERT and RUMMY_TLS_KEY, or bind 127.0.0.1 behind a TLS proxy (RUMMY_TRUST_PROXY=1)",
                self.access.bind
            ));
        }
        for kind in ProviderKind::ALL {
            if let Some(endpoint) = Endpoint::of(kind, &self.providers) {
                if let Some(why) = malformed_base(&endpoint.base) {
                    warnings.push(format!(
                        "{} base URL \"{}\" looks malformed: {why}; fix {}",
                        kind.name(),
                        without_credentials(&endpoint.base),
                        base_variable(kind)
                    ));
                }
            }
        }
        for model in &self.models {
            let provider = model.actual.split('/').next().unwrap_or_default();
            match ProviderKind::from_name(provider) {
                None => {
                    let known: Vec<&str> = ProviderKind::ALL.iter().map(|k| k.name()).collect();
                    warnings.push(format!(
                        "model \"{}\" names provider \"{provider}\" (\"{}\"), which rummy does not know: use one of {}, as in RUMMY_MODEL_{}={}/<model>",
                        model.alias,
                        model.actual,
                        known.join(", "),
                        model.alias,
                        known.first().copied().unwrap_or_default()
                    ));
                }
                Some(kind) if Endpoint::of(kind, &self.providers).is_none() => {
                    warnings.push(format!(
                        "model \"{}\" uses provider {provider}, which is not configured: {}",
                        model.alias,
                        Endpoint::how_to_configure(kind)
                    ));
                }
                Some(_) => {}
            }
        }
        warnings
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::vars;
    use super::*;
    use pretty_assertions::assert_eq;
    use std::path::PathBuf;

    /// Base URLs are checked for a scheme, a host and a port that is a number.
    #[test]
    fn malformed_base_urls_are_named() {
        let cases = [
            ("http://127.0.0.1:8080", None),
            ("https://api.openai.com", None),
            ("http://[::1]:11434/v1", None),
            ("http://user:pw@host:1/x", None),
            (
                "127.0.0.1:8080",
                Some("it must start with http:// or https://"),
            ),
            ("htp://host", Some("it must start with http:// or https://")),
            ("http://", Some("it names no host")),
            ("http://:8080", Some("it names no host")),
            (
                "http://host:80x",
                Some("its port is not a number from 0 to 65535"),
            ),
            ("http://host name", Some("it contains a space")),
            (
                "http://[::1:80",
                Some("its IPv6 address lacks the closing ]"),
            ),
        ];
        for (url, expected) in cases {
            assert_eq!(malformed_base(url), expected, "{url}");
        }
    }

    /// Credentials in a URL's authority never reach a log line.
    #[test]
    fn credentials_are_left_out_of_urls() {
        assert_eq!(
            without_credentials("https://me:secret@host:1/v1?x=a@b"),
            "https://host:1/v1?x=a@b"
        );
        assert_eq!(without_credentials("http://host/a@b"), "http://host/a@b");
    }

    /// A malformed base URL, an unknown provider and an unconfigured one each get a warning
    /// saying what to set; the configured providers are listed by name and base.
    #[test]
    fn settings_that_look_wrong_are_warned_about() {
        let config = Config::from_vars(
            &vars(&[
                ("OPENAI_BASE_URL", "localhost:8080"),
                ("RUMMY_MODEL_fast", "openai/m"),
                ("RUMMY_MODEL_odd", "antropic/claude"),
                ("RUMMY_MODEL_local", "ollama/qwen"),
            ]),
            PathBuf::from("/h"),
        )
        .unwrap();
        assert_eq!(
            config.configured_providers(),
            vec![("openai", "localhost:8080".to_owned())]
        );
        assert_eq!(
            config.warnings(),
            vec![
                "openai base URL \"localhost:8080\" looks malformed: it must start with http:// or https://; fix OPENAI_BASE_URL".to_owned(),
                "model \"local\" uses provider ollama, which is not configured: set OLLAMA_BASE_URL".to_owned(),
                "model \"odd\" names provider \"antropic\" (\"antropic/claude\"), which rummy does not know: use one of openai, ollama, openrouter, xai, as in RUMMY_MODEL_odd=openai/<model>".to_owned(),
            ]
        );
    }

    /// A bind other than loopback without TLS is warned about; with TLS, or on loopback, not.
    #[test]
    fn a_network_bind_without_tls_is_warned_about() {
        let warned = |pairs: &[(&str, &str)]| {
            Config::from_vars(&vars(pairs), PathBuf::from("/h"))
                .unwrap()
                .warnings()
                .iter()
                .any(|w| w.contains("without TLS"))
        };
        assert_eq!(
            (
                warned(&[("RUMMY_BIND", "0.0.0.0")]),
                warned(&[("RUMMY_BIND", "127.0.0.1")]),
                warned(&[
                    ("RUMMY_BIND", "0.0.0.0"),
                    ("RUMMY_TLS_CERT", "/c.pem"),
                    ("RUMMY_TLS_KEY", "/k.pem")
                ]),
            ),
            (true, false, false)
        );
    }
}
