//! Routing (seed 002 §4): a cheap, pure classifier of a loop's prompt, and the configured class → model alias map.
//!
//! Heuristics, first hit wins:
//! 1. **code**: a ```` ``` ```` fence; "traceback", "stacktrace" or "stack
//!    trace"; "error:" or "exception:" on the first line; a source path
//!    (`./`, `../`, `/usr`, `~/` with a source extension, a `:line` suffix
//!    allowed); or a paste of more than four lines with indentation.
//! 2. **reasoning**: the words "explain…", "why", "compar…" or "how does";
//!    or a question mark in a prompt over 100 characters.
//! 3. **default** otherwise.
//!
//! Nothing is routed unless the operator maps the class to an alias: the
//! defaults send no prompt to a paid model by surprise (seed 002, N2).

use std::collections::BTreeMap;

/// What kind of prompt a loop starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PromptClass {
    /// Code, tracebacks, pasted source.
    Code,
    /// Explanations, comparisons, long questions.
    Reasoning,
    /// Everything else.
    Default,
}

impl PromptClass {
    /// The class's name in configuration and in `run/state` (`code`, `reasoning`, `default`).
    pub fn name(self) -> &'static str {
        match self {
            PromptClass::Code => "code",
            PromptClass::Reasoning => "reasoning",
            PromptClass::Default => "default",
        }
    }

    /// The class with this (lower-case) name.
    pub fn from_name(name: &str) -> Option<PromptClass> {
        [
            PromptClass::Code,
            PromptClass::Reasoning,
            PromptClass::Default,
        ]
        .into_iter()
        .find(|c| c.name() == name)
    }
}

/// The class → model alias map (`RUMMY_ROUTE_<class>=<alias>`); an unmapped class keeps the run's model.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RoutingConfig {
    /// The alias each mapped class is sent to.
    pub classes: BTreeMap<PromptClass, String>,
}

/// The class of a prompt and the alias configured for it, or `None` to keep the run's model.
pub fn route_for<'c>(prompt: &str, config: &'c RoutingConfig) -> Option<(PromptClass, &'c str)> {
    let class = classify(prompt);
    config
        .classes
        .get(&class)
        .map(|alias| (class, alias.as_str()))
}

/// The class of a prompt, by the heuristics in this module's documentation.
pub fn classify(prompt: &str) -> PromptClass {
    if looks_like_code(prompt) {
        PromptClass::Code
    } else if looks_like_reasoning(prompt) {
        PromptClass::Reasoning
    } else {
        PromptClass::Default
    }
}

/// Extensions that make a path look like source code.
const SOURCE_EXTENSIONS: [&str; 12] = [
    ".py", ".lua", ".c", ".js", ".go", ".rs", ".ts", ".java", ".rb", ".cpp", ".h", ".sh",
];

fn looks_like_code(text: &str) -> bool {
    let lower = text.to_lowercase();
    let first_line = lower.trim_start().lines().next().unwrap_or_default();
    text.contains("```")
        || ["traceback", "stacktrace", "stack trace"]
            .iter()
            .any(|w| lower.contains(w))
        || first_line.contains("error:")
        || first_line.contains("exception:")
        || text.split_whitespace().any(is_source_path)
        || is_indented_paste(text)
}

fn is_source_path(token: &str) -> bool {
    let token = token.trim_matches(|c: char| "\"'`()[]<>,;".contains(c));
    if !["./", "/usr", "~/"].iter().any(|p| token.contains(p)) {
        return false;
    }
    // `src/main.rs:42:7` and a sentence's closing punctuation still name the file.
    let path = token.trim_end_matches(|c: char| {
        c.is_ascii_digit() || c == ':' || c == '.' || c == '?' || c == '!'
    });
    SOURCE_EXTENSIONS.iter().any(|ext| path.ends_with(ext))
}

fn is_indented_paste(text: &str) -> bool {
    let lines: Vec<&str> = text.trim_matches('\n').lines().collect();
    lines.len() > 4
        && lines
            .iter()
            .any(|l| l.starts_with([' ', '\t']) && !l.trim().is_empty())
}

fn looks_like_reasoning(text: &str) -> bool {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    words
        .iter()
        .any(|w| *w == "why" || w.starts_with("explain") || w.starts_with("compar"))
        || words.windows(2).any(|pair| pair == ["how", "does"])
        || (text.contains('?') && text.chars().count() > 100)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use PromptClass::{Code, Default, Reasoning};

    /// The corpus: each prompt lands in the class a person would pick, by the seed's heuristics.
    #[test]
    fn corpus() {
        let corpus: [(&str, PromptClass); 32] = [
            ("ls /tmp", Default),
            ("what time is it?", Default),
            ("list the files in this project", Default),
            ("rename the run to nightly", Default),
            ("thanks, that worked", Default),
            ("add a known entry for the port", Default),
            ("Summarise the README in three bullets.", Default),
            ("Where is the config loaded?", Default),
            ("How do I install it?", Default),
            ("the server returned an error: 500 on login", Code),
            ("TypeError: cannot read properties of undefined", Code),
            ("java.lang.NullPointerException: at Foo.bar", Code),
            ("Here is the traceback from the worker", Code),
            ("paste of the Stack Trace below", Code),
            ("it panics, see the stacktrace", Code),
            ("fix this:\n```rust\nfn main() {}\n```", Code),
            ("why does ./src/main.rs:42 panic?", Code),
            ("open ~/projects/app/server.py and tidy it", Code),
            ("the script at /usr/local/bin/run.sh fails", Code),
            ("look at ../lib/util.js", Code),
            (
                "def f(x):\n    if x:\n        return 1\n    return 2\nprint(f(3))",
                Code,
            ),
            ("Explain the difference between a mutex and a semaphore", Reasoning),
            ("why is the sky blue", Reasoning),
            ("How does the turn executor pick the provider?", Reasoning),
            ("Compare SQLite WAL mode with rollback journaling", Reasoning),
            ("can you explain what happened", Reasoning),
            ("a comparison of the two designs, please", Reasoning),
            (
                "I have been reading the design notes for a while and I still wonder what the healer does when a model repeats itself?",
                Reasoning,
            ),
            ("Whyte is a surname, not a question", Default),
            ("the file notes.txt in ./docs", Default),
            (
                "one\ntwo\nthree\nfour\nfive lines, none indented",
                Default,
            ),
            ("short list:\n  - a\n  - b", Default),
        ];
        let got: Vec<(&str, PromptClass)> = corpus.iter().map(|(p, _)| (*p, classify(p))).collect();
        assert_eq!(got, corpus.to_vec());
    }

    /// Only mapped classes route; the rest keep the run's model.
    #[test]
    fn routes_only_mapped_classes() {
        let config = RoutingConfig {
            classes: BTreeMap::from([(Code, "deep".to_owned())]),
        };
        let cases = [
            ("```x```", Some((Code, "deep"))),
            ("why?", None),
            ("hello", None),
        ];
        for (prompt, expected) in cases {
            assert_eq!(route_for(prompt, &config), expected, "{prompt}");
        }
        assert_eq!(route_for("```x```", &RoutingConfig::default()), None);
    }

    /// Class names round-trip through configuration.
    #[test]
    fn class_names_round_trip() {
        for class in [Code, Reasoning, Default] {
            assert_eq!(PromptClass::from_name(class.name()), Some(class));
        }
        assert_eq!(PromptClass::from_name("fast"), None);
    }
}
