//! The `Authorization` header of an HTTP request (the WebSocket upgrade, `/metrics`), and who
//! may read `/metrics` without a token.
//!
//! RFC 9110 §11.1 makes an authentication scheme case-insensitive: `Bearer`, `bearer` and
//! `BEARER` name the same scheme, so every route reads the header through [`token`].

use super::origin::is_loopback_host;

/// What an `Authorization` header holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authorization<'a> {
    /// `Bearer <token>` (the scheme in any case): the token's text, trimmed.
    Bearer(&'a str),
    /// Another scheme, or no token after the scheme.
    Malformed,
}

/// Reads an `Authorization` header's value: the scheme `Bearer` in any case, one or more
/// spaces, then the token.
pub fn token(header: &str) -> Authorization<'_> {
    let header = header.trim();
    let (scheme, rest) = header.split_at(header.find([' ', '\t']).unwrap_or(header.len()));
    let text = rest.trim();
    if scheme.eq_ignore_ascii_case("bearer") && !text.is_empty() {
        Authorization::Bearer(text)
    } else {
        Authorization::Malformed
    }
}

/// Whether `/metrics` answers a request without an admin token: only one that came from a
/// loopback peer to a loopback name (`host`, the `Host` header: `localhost`, `127.0.0.1`,
/// `[::1]`, any port), on a server not behind a reverse proxy (`proxied`, whose every request
/// comes from loopback). The `Host` check keeps out a web page whose name an attacker
/// re-pointed at 127.0.0.1 (DNS rebinding): its requests carry that name.
pub fn metrics_open(peer_loopback: bool, host: Option<&str>, proxied: bool) -> bool {
    peer_loopback && !proxied && host.is_some_and(is_loopback_host)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// The scheme is read in any case and the token trimmed; another scheme, or a scheme alone,
    /// is malformed.
    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        let table = [
            ("Bearer abc", Authorization::Bearer("abc")),
            ("bearer abc", Authorization::Bearer("abc")),
            ("BEARER abc", Authorization::Bearer("abc")),
            ("bEaReR   abc  ", Authorization::Bearer("abc")),
            ("Bearer\tabc", Authorization::Bearer("abc")),
            ("Basic YTpi", Authorization::Malformed),
            ("Bearer", Authorization::Malformed),
            ("Bearer   ", Authorization::Malformed),
            ("Bearerabc", Authorization::Malformed),
            ("", Authorization::Malformed),
        ];
        for (header, expected) in table {
            assert_eq!(token(header), expected, "{header:?}");
        }
    }

    /// Without a token, /metrics answers only a loopback peer asking a loopback name, and never
    /// behind a proxy.
    #[test]
    fn metrics_without_a_token_need_loopback_peer_and_host() {
        let table = [
            (true, Some("localhost"), false, true),
            (true, Some("LOCALHOST:3044"), false, true),
            (true, Some("127.0.0.1:3044"), false, true),
            (true, Some("[::1]:3044"), false, true),
            (true, Some("[::1]"), false, true),
            (true, Some("evil.example:3044"), false, false),
            (true, Some("10.0.0.5:3044"), false, false),
            (true, None, false, false),
            (true, Some("127.0.0.1:3044"), true, false),
            (false, Some("127.0.0.1:3044"), false, false),
        ];
        for (peer, host, proxied, open) in table {
            assert_eq!(
                metrics_open(peer, host, proxied),
                open,
                "{peer} {host:?} {proxied}"
            );
        }
    }
}
