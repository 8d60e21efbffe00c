//! The domains a project lets the model fetch from without asking (`project/set
//! {webDomains}`): an entry names a host and every host under it (`example.com` lets
//! `docs.example.com` through, not `badexample.com`). A URL outside the list is a proposal.

/// A domain list's entry as it is kept: lower case, without a trailing dot; `None` when it is
/// no host name (empty, a scheme, a path or a port in it, a character a host has not).
pub fn normalize(entry: &str) -> Option<String> {
    let host = entry.trim().trim_end_matches('.').to_ascii_lowercase();
    let fits = !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    fits.then_some(host)
}

/// Whether `host` (a URL's host name) is one of `domains` or under one.
pub fn allows(domains: &[String], host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    domains.iter().any(|domain| {
        host == *domain
            || host
                .strip_suffix(domain.as_str())
                .is_some_and(|head| head.ends_with('.'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// An entry lets its host and the hosts under it through, nothing else.
    #[test]
    fn a_domain_lets_its_subdomains_through() {
        let domains = vec!["example.com".to_owned(), "docs.rs".to_owned()];
        let got: Vec<bool> = [
            "example.com",
            "Docs.Example.com.",
            "badexample.com",
            "example.com.evil.org",
            "docs.rs",
            "rs",
        ]
        .iter()
        .map(|h| allows(&domains, h))
        .collect();
        assert_eq!(got, [true, true, false, false, true, false]);
    }

    /// Entries are host names, kept lower case; anything else is refused.
    #[test]
    fn entries_are_host_names() {
        let got: Vec<Option<String>> = [
            "Example.COM.",
            "https://x.org",
            "x.org/a",
            "x.org:443",
            "",
            "a..b",
            "ex_ample.com",
        ]
        .iter()
        .map(|e| normalize(e))
        .collect();
        assert_eq!(
            got,
            [
                Some("example.com".to_owned()),
                None,
                None,
                None,
                None,
                None,
                None
            ]
        );
    }
}
