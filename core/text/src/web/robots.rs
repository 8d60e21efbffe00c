//! A site's `robots.txt`, read as crawlers read it: groups of `User-agent` lines with their
//! `Allow` and `Disallow` rules; the group naming the agent (else `*`) decides, by the longest
//! rule matching the path, `Allow` winning a tie; `*` in a rule matches any run of characters
//! and a final `$` anchors it at the path's end.
//!
//! A file that cannot be read (none, an error, not text) allows everything: only a site's own
//! rules keep a reader out.

/// One rule of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    allow: bool,
    pattern: String,
}

/// One group: the agents it names (lower case) and its rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Group {
    agents: Vec<String>,
    rules: Vec<Rule>,
}

/// A parsed `robots.txt`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Robots {
    groups: Vec<Group>,
}

/// Lines longer than this are ignored (a real rule is short).
const MAX_LINE: usize = 2_048;

impl Robots {
    /// Reads a `robots.txt`: lines of `field: value`, `#` comments, any other line ignored.
    pub fn parse(text: &str) -> Robots {
        let mut groups: Vec<Group> = Vec::new();
        // Whether the last field read was a User-agent line: consecutive ones share a group.
        let mut naming = false;
        for line in text.lines().filter(|l| l.len() <= MAX_LINE) {
            let line = line.split('#').next().unwrap_or("").trim();
            let Some((field, value)) = line.split_once(':') else {
                continue;
            };
            let (field, value) = (field.trim().to_ascii_lowercase(), value.trim());
            match field.as_str() {
                "user-agent" => {
                    if !naming || groups.is_empty() {
                        groups.push(Group::default());
                    }
                    if let Some(group) = groups.last_mut() {
                        group.agents.push(value.to_ascii_lowercase());
                    }
                    naming = true;
                }
                "allow" | "disallow" => {
                    naming = false;
                    let Some(group) = groups.last_mut() else {
                        continue;
                    };
                    // An empty Disallow allows everything: it is no rule.
                    if value.is_empty() {
                        continue;
                    }
                    group.rules.push(Rule {
                        allow: field == "allow",
                        pattern: value.to_owned(),
                    });
                }
                _ => naming = false,
            }
        }
        Robots { groups }
    }

    /// Whether an agent whose product token is `agent` (`rummy`) may read `path` (the URL's
    /// path and query, starting with `/`).
    pub fn allows(&self, agent: &str, path: &str) -> bool {
        let agent = agent.to_ascii_lowercase();
        let named = |g: &&Group| {
            g.agents
                .iter()
                .any(|a| a != "*" && !a.is_empty() && agent.contains(a.as_str()))
        };
        let mut groups: Vec<&Group> = self.groups.iter().filter(named).collect();
        if groups.is_empty() {
            groups = self
                .groups
                .iter()
                .filter(|g| g.agents.iter().any(|a| a == "*"))
                .collect();
        }
        let best = groups
            .iter()
            .flat_map(|g| &g.rules)
            .filter(|r| matches(&r.pattern, path))
            .max_by_key(|r| (r.pattern.len(), r.allow));
        best.is_none_or(|r| r.allow)
    }
}

/// Whether a rule's pattern matches `path` from its start: `*` matches any run of characters,
/// a final `$` anchors the end. Each `*`-separated piece is found leftmost, in order, which
/// finds a match whenever there is one.
fn matches(pattern: &str, path: &str) -> bool {
    let (pattern, anchored) = match pattern.strip_suffix('$') {
        Some(p) => (p, true),
        None => (pattern, false),
    };
    let mut pieces = pattern.split('*');
    let first = pieces.next().unwrap_or("");
    let Some(mut rest) = path.strip_prefix(first) else {
        return false;
    };
    let pieces: Vec<&str> = pieces.collect();
    let Some((last, middle)) = pieces.split_last() else {
        return !anchored || rest.is_empty();
    };
    for piece in middle {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    if anchored {
        rest.ends_with(last)
    } else {
        rest.contains(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const ROBOTS: &str = "# a site\nUser-agent: *\nDisallow: /private/\nAllow: /private/open\nDisallow: /*.pdf$\n\nUser-agent: Googlebot\nUser-agent: rummy\nDisallow: /search\nDisallow:\n\nUser-agent: other\nDisallow: /\n";

    /// The group naming the agent decides, else `*`'s; the longest matching rule wins, `Allow`
    /// on a tie; `*` and `$` match as crawlers read them.
    #[test]
    fn the_longest_rule_of_the_agents_group_decides() {
        let robots = Robots::parse(ROBOTS);
        let cases = [
            ("rummy/0.1", "/search?q=x", false),
            ("rummy/0.1", "/private/x", true),
            ("rummy/0.1", "/", true),
            ("curl", "/private/x", false),
            ("curl", "/private/open/a", true),
            ("curl", "/docs/a.pdf", false),
            ("curl", "/docs/a.pdf?x", true),
            ("curl", "/search", true),
        ];
        let got: Vec<(&str, &str, bool)> = cases
            .iter()
            .map(|&(agent, path, _)| (agent, path, robots.allows(agent, path)))
            .collect();
        assert_eq!(got, cases);
    }

    /// No file, an empty one or one of other agents' rules keeps nobody out; rules before any
    /// User-agent line belong to no group.
    #[test]
    fn no_rules_for_the_agent_allow_everything() {
        let texts = [
            "",
            "Disallow: /\n",
            "User-agent: other\nDisallow: /\n",
            "garbage\n\u{0}\n",
        ];
        let got: Vec<bool> = texts
            .iter()
            .map(|t| Robots::parse(t).allows("rummy", "/a"))
            .collect();
        assert_eq!(got, [true, true, true, true]);
    }

    /// Patterns: a prefix, wildcards in order, an anchored end.
    #[test]
    fn patterns_match_as_crawlers_read_them() {
        let cases = [
            ("/a", "/a/b", true),
            ("/a", "/b", false),
            ("/*/b", "/x/y/b/z", true),
            ("/*x*y", "/1x2y3", true),
            ("/*y*x", "/1x2y3", false),
            ("/a$", "/a", true),
            ("/a$", "/ab", false),
            ("/*.php$", "/x.php", true),
            ("/*.php$", "/x.php5", false),
            ("*", "/anything", true),
        ];
        let got: Vec<(&str, &str, bool)> = cases
            .iter()
            .map(|&(pattern, path, _)| (pattern, path, matches(pattern, path)))
            .collect();
        assert_eq!(got, cases);
    }
}
