//! Browser origins. A WebSocket upgrade that carries `Origin` was opened by a web
//! page, which the browser lets any site do: without this check, any page the user has open
//! could reach a server on their loopback, start a run, accept its edits and write files as the
//! server's user. Clients that are not browsers send no `Origin` and are not concerned.

use std::net::IpAddr;

/// Why an upgrade's origin is refused (the 403's text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("origin {origin} may not open a WebSocket here: only the server's own page and the origins in RUMMY_ALLOWED_ORIGINS may")]
pub struct ForeignOrigin {
    /// The origin as the browser sent it.
    pub origin: String,
}

/// An origin as `RUMMY_ALLOWED_ORIGINS` lists it and browsers send it: `scheme://host[:port]`,
/// lower case, without a trailing `/`. `None` when it is not such an origin.
pub fn normalize(origin: &str) -> Option<String> {
    let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    let (scheme, authority) = origin.split_once("://")?;
    let valid = matches!(scheme, "http" | "https")
        && !authority.is_empty()
        && !authority.contains(['/', '?', '#', '@', ' ']);
    valid.then_some(origin)
}

/// Whether an upgrade carrying `origin` may proceed: the origin is listed, or it is the
/// server's own page — the origin names the very host the request was sent to (`host`, the
/// `Host` header) and, unless the server is `networked` (then every connection needs a token,
/// which a foreign page does not have), that host is a loopback name or address. Requiring
/// loopback keeps a DNS-rebinding page (`http://evil.example` re-pointed at 127.0.0.1) out of
/// a server with no tokens: its `Host` is `evil.example`.
pub fn check(
    origin: &str,
    host: Option<&str>,
    listed: &[String],
    networked: bool,
) -> Result<(), ForeignOrigin> {
    let refused = || ForeignOrigin {
        origin: origin.to_owned(),
    };
    let normal = normalize(origin).ok_or_else(refused)?;
    if listed.contains(&normal) {
        return Ok(());
    }
    let authority = normal.split_once("://").map_or("", |(_, a)| a);
    let host = host.map(str::to_ascii_lowercase).ok_or_else(refused)?;
    if authority == host && (networked || is_loopback_host(&host)) {
        Ok(())
    } else {
        Err(refused())
    }
}

/// Whether an authority (`host[:port]`, any case) names this machine's loopback: `localhost`,
/// a `*.localhost` name (RFC 6761), 127.0.0.0/8 or `[::1]`.
pub fn is_loopback_host(authority: &str) -> bool {
    let authority = authority.trim().to_ascii_lowercase();
    let authority = authority.as_str();
    let host = match authority.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Origins are compared as `scheme://host[:port]` in lower case; anything else is not an origin.
    #[test]
    fn normalizes_origins() {
        let table = [
            ("https://Team.Example/", Some("https://team.example")),
            ("http://127.0.0.1:3044", Some("http://127.0.0.1:3044")),
            ("null", None),
            ("file://", None),
            ("ftp://x", None),
            ("https://x/path", None),
            ("https://user@x", None),
        ];
        for (input, expected) in table {
            assert_eq!(normalize(input).as_deref(), expected, "{input}");
        }
    }

    /// A networked server's own page passes under its public name; another site does not.
    #[test]
    fn a_networked_server_knows_its_own_page_by_name() {
        let own = check(
            "https://rummy.team.example",
            Some("rummy.team.example"),
            &[],
            true,
        );
        assert!(own.is_ok());
        let other = check(
            "https://evil.example",
            Some("rummy.team.example"),
            &[],
            true,
        );
        assert!(other.is_err());
        let loopback_only = check(
            "https://rummy.team.example",
            Some("rummy.team.example"),
            &[],
            false,
        );
        assert!(loopback_only.is_err());
    }

    /// The server's own page on loopback and listed origins pass; other sites, `null`, and a
    /// rebinding name pointed at loopback are refused.
    #[test]
    fn only_own_page_and_listed_origins_pass() {
        let listed = vec!["https://team.example".to_owned()];
        let table = [
            ("http://127.0.0.1:3044", Some("127.0.0.1:3044"), true),
            ("http://localhost:3044", Some("LOCALHOST:3044"), true),
            ("http://[::1]:3044", Some("[::1]:3044"), true),
            (
                "http://app.localhost:3044",
                Some("app.localhost:3044"),
                true,
            ),
            ("https://team.example", Some("10.0.0.5:3044"), true),
            ("https://evil.example", Some("127.0.0.1:3044"), false),
            ("http://evil.example:3044", Some("evil.example:3044"), false),
            ("http://127.0.0.1:8080", Some("127.0.0.1:3044"), false),
            ("http://127.0.0.1:3044", None, false),
            ("null", Some("127.0.0.1:3044"), false),
        ];
        for (origin, host, allowed) in table {
            assert_eq!(
                check(origin, host, &listed, false).is_ok(),
                allowed,
                "{origin} via {host:?}"
            );
        }
        assert_eq!(
            check("https://evil.example", Some("127.0.0.1:3044"), &[], false)
                .unwrap_err()
                .to_string(),
            "origin https://evil.example may not open a WebSocket here: only the server's own page and the origins in RUMMY_ALLOWED_ORIGINS may"
        );
    }
}
