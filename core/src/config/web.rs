//! The model's web fetch (`<get path="https://…">`): off until the server allows it, then per
//! project as an admin allows it (`project/set {webDomains}`); how long a fetch may take, how
//! much of a page is read, and which private addresses tests may reach.

use super::{positive, switch, ConfigError};
use crate::web::address::AllowList;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// The server's web-fetch settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSettings {
    /// `RUMMY_WEB_FETCH` (default off): whether the model's `get` of a URL fetches the page in
    /// the projects an admin allowed.
    pub fetch: bool,
    /// `RUMMY_WEB_TIMEOUT` in ms (default 20,000): the longest one fetch may take, its
    /// `robots.txt` and redirects included.
    pub timeout_ms: u64,
    /// `RUMMY_WEB_MAX_BYTES` (default 1 MiB): the most of a page that is read; the rest is cut.
    pub max_bytes: usize,
    /// `RUMMY_WEB_ALLOW_PRIVATE`: addresses and ranges a fetch may reach although they are
    /// private (a loopback page in tests). Dangerous anywhere else: a model could reach what
    /// only the server can, such as a cloud's metadata service.
    pub allow_private: AllowList,
    /// Names resolved to these addresses instead of by DNS: set by tests in code, never from
    /// the environment.
    pub resolve: Vec<(String, IpAddr)>,
}

impl Default for WebSettings {
    fn default() -> Self {
        WebSettings {
            fetch: false,
            timeout_ms: 20_000,
            max_bytes: 1024 * 1024,
            allow_private: AllowList::default(),
            resolve: Vec::new(),
        }
    }
}

impl WebSettings {
    /// Reads the settings; a bad value is refused by name.
    pub fn from_vars(vars: &BTreeMap<String, String>) -> Result<WebSettings, ConfigError> {
        let defaults = WebSettings::default();
        const ALLOW: &str = "RUMMY_WEB_ALLOW_PRIVATE";
        let allow_private = match vars.get(ALLOW).map(|v| v.trim()).filter(|v| !v.is_empty()) {
            None => AllowList::default(),
            Some(list) => AllowList::parse(list).map_err(|reason| ConfigError {
                name: ALLOW.into(),
                value: list.to_owned(),
                reason,
            })?,
        };
        Ok(WebSettings {
            fetch: switch(vars, "RUMMY_WEB_FETCH", defaults.fetch)?,
            timeout_ms: positive(vars, "RUMMY_WEB_TIMEOUT", defaults.timeout_ms)?,
            max_bytes: positive(vars, "RUMMY_WEB_MAX_BYTES", defaults.max_bytes)?,
            allow_private,
            resolve: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::vars;
    use super::*;
    use pretty_assertions::assert_eq;

    /// Off by default, 20 s and 1 MiB; each is read, a bad value refused by name.
    #[test]
    fn web_settings() {
        let read = |pairs: &[(&str, &str)]| {
            WebSettings::from_vars(&vars(pairs))
                .map(|w| {
                    (
                        w.fetch,
                        w.timeout_ms,
                        w.max_bytes,
                        w.allow_private.is_empty(),
                    )
                })
                .map_err(|e| (e.name, e.reason))
        };
        assert_eq!(read(&[]), Ok((false, 20_000, 1_048_576, true)));
        assert_eq!(
            read(&[
                ("RUMMY_WEB_FETCH", "1"),
                ("RUMMY_WEB_TIMEOUT", "500"),
                ("RUMMY_WEB_MAX_BYTES", "4096"),
                ("RUMMY_WEB_ALLOW_PRIVATE", "127.0.0.1")
            ]),
            Ok((true, 500, 4096, false))
        );
        assert_eq!(
            read(&[("RUMMY_WEB_ALLOW_PRIVATE", "localhost")]),
            Err((
                "RUMMY_WEB_ALLOW_PRIVATE".to_owned(),
                "\"localhost\" is no address or range".to_owned()
            ))
        );
    }
}
