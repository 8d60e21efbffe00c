//! Routing (docs/design/providers.md): a cheap, pure classifier of a loop's prompt, and the configured class → model alias map.
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
//! defaults send no prompt to a paid model by surprise. And
//! nothing is routed unless the run asks for it ([`ROUTE_FLAG`]): the run's
//! own model stays the only switch by default.
//!
//! What a client sees of it: [`table`] (the map as configured, `getRoutes`) and [`check`]
//! (the class of a text and the model a loop would take, `route/check`). The run's other
//! switch is fallback ([`FALLBACK_FLAG`]): on unless the run says `fallback: false`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What kind of prompt a loop starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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

    /// Every class, in configuration order.
    pub const ALL: [PromptClass; 3] = [
        PromptClass::Code,
        PromptClass::Reasoning,
        PromptClass::Default,
    ];
}

/// The class → model alias map (`RUMMY_ROUTE_<class>=<alias>`); an unmapped class keeps the run's model.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RoutingConfig {
    /// The alias each mapped class is sent to.
    pub classes: BTreeMap<PromptClass, String>,
}

impl RoutingConfig {
    /// The variable that maps a class (`RUMMY_ROUTE_CODE`), named in messages about it.
    pub fn variable(class: PromptClass) -> String {
        format!("RUMMY_ROUTE_{}", class.name().to_ascii_uppercase())
    }
}

/// A loop's routing decision, fixed when the loop is claimed: stored in the
/// loop's config as `routed` and shown in `run/state` as `route`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Routed {
    /// The class of the loop's prompt.
    pub class: PromptClass,
    /// The model alias the whole loop uses: the class's mapped alias, or the run's own model.
    pub model: String,
}

impl Routed {
    /// Whether the class's mapped alias replaced `own_model`.
    pub fn changes(&self, own_model: &str) -> bool {
        self.model != own_model
    }

    /// Why the loop uses this model, appended to messages about it.
    pub fn why(&self) -> String {
        format!(
            "routing sends {} prompts to it: {}",
            self.class.name(),
            RoutingConfig::variable(self.class)
        )
    }
}

/// The class of a prompt and the model it goes to: the alias configured for the class, else `own_model`.
pub fn decide(prompt: &str, own_model: &str, config: &RoutingConfig) -> Routed {
    let class = classify(prompt);
    let model = config.classes.get(&class).map_or(own_model, String::as_str);
    Routed {
        class,
        model: model.to_owned(),
    }
}

/// Every class with the variable that maps it and the alias it maps to (`None`: a loop keeps
/// its run's model), in class order: the map as `getRoutes` shows it.
pub fn table(config: &RoutingConfig) -> Vec<(PromptClass, String, Option<String>)> {
    PromptClass::ALL
        .into_iter()
        .map(|class| {
            let model = config.classes.get(&class).cloned();
            (class, RoutingConfig::variable(class), model)
        })
        .collect()
}

/// The run a [`check`] is asked about: its own model and whether it routes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedRun {
    /// Its alias.
    pub alias: String,
    /// Its own model.
    pub model: String,
    /// Whether it asks for routing (`route: true`).
    pub routes: bool,
}

/// What routing would do with a text (`route/check`), routing on or off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// The text's class.
    pub class: PromptClass,
    /// The alias the class maps to, if any.
    pub mapped: Option<String>,
    /// Whether routing is on: the run's `route` setting; without a run, whether the server
    /// maps any class at all.
    pub routing: bool,
    /// The model a loop starting with the text would use; `None` without a run when that is
    /// the run's own model.
    pub model: Option<String>,
    /// The decision in words, saying why when routing is off.
    pub reason: String,
}

/// What routing would do with `text` for `run` (or, without one, for a run with routing on).
pub fn check(text: &str, run: Option<&CheckedRun>, config: &RoutingConfig) -> Check {
    let class = classify(text);
    let variable = RoutingConfig::variable(class);
    let mapped = config.classes.get(&class).cloned();
    let name = class.name();
    let (routing, model, reason) = match (run, &mapped) {
        (Some(run), _) if !run.routes => {
            let unless = match &mapped {
                Some(alias) => format!("; with route: true it would go to {alias} ({variable})"),
                None => String::new(),
            };
            let reason = format!(
                "routing is off for run {} (its route setting is not true): its own model {} answers{unless}",
                run.alias, run.model
            );
            (false, Some(run.model.clone()), reason)
        }
        (Some(_), Some(alias)) => {
            let reason = format!("routing sends {name} prompts to {alias}: {variable}");
            (true, Some(alias.clone()), reason)
        }
        (Some(run), None) => {
            let reason = format!(
                "no model is mapped to {name} prompts ({variable} is not set): run {}'s own model {} answers",
                run.alias, run.model
            );
            (true, Some(run.model.clone()), reason)
        }
        (None, _) if config.classes.is_empty() => {
            let reason = "routing is off on this server: no class is mapped (RUMMY_ROUTE_CODE, RUMMY_ROUTE_REASONING, RUMMY_ROUTE_DEFAULT), so every run keeps its own model".to_owned();
            (false, None, reason)
        }
        (None, Some(alias)) => {
            let reason =
                format!("a run with route: true sends {name} prompts to {alias}: {variable}");
            (true, Some(alias.clone()), reason)
        }
        (None, None) => {
            let reason = format!(
                "no model is mapped to {name} prompts ({variable} is not set): a run keeps its own model"
            );
            (true, None, reason)
        }
    };
    Check {
        class,
        mapped,
        routing,
        model,
        reason,
    }
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

    /// The corpus: each prompt lands in the class a person would pick, by the heuristics of this module's doc.
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

    /// Only mapped classes route; the rest keep the run's own model.
    #[test]
    fn routes_only_mapped_classes() {
        let config = RoutingConfig {
            classes: BTreeMap::from([(Code, "deep".to_owned())]),
        };
        let routed = |class, model: &str| Routed {
            class,
            model: model.to_owned(),
        };
        let cases = [
            ("```x```", &config, routed(Code, "deep")),
            ("why?", &config, routed(Reasoning, "fast")),
            ("hello", &config, routed(Default, "fast")),
            ("```x```", &RoutingConfig::default(), routed(Code, "fast")),
        ];
        for (prompt, config, expected) in cases {
            assert_eq!(decide(prompt, "fast", config), expected, "{prompt}");
        }
        assert!(routed(Code, "deep").changes("fast"));
        assert!(!routed(Code, "fast").changes("fast"));
    }

    /// A decision is stored and shown as `{class, model}` with the class's configuration name.
    #[test]
    fn decisions_serialise_with_class_names() {
        let routed = Routed {
            class: Reasoning,
            model: "cloud".to_owned(),
        };
        let value = serde_json::to_value(&routed).unwrap();
        assert_eq!(
            value,
            serde_json::json!({ "class": "reasoning", "model": "cloud" })
        );
        assert_eq!(serde_json::from_value::<Routed>(value).unwrap(), routed);
        assert_eq!(
            routed.why(),
            "routing sends reasoning prompts to it: RUMMY_ROUTE_REASONING"
        );
    }

    /// The table lists every class in order, with its variable and its alias or none.
    #[test]
    fn the_table_lists_every_class() {
        let config = RoutingConfig {
            classes: BTreeMap::from([(Reasoning, "cloud".to_owned())]),
        };
        assert_eq!(
            table(&config),
            vec![
                (Code, "RUMMY_ROUTE_CODE".to_owned(), None),
                (
                    Reasoning,
                    "RUMMY_ROUTE_REASONING".to_owned(),
                    Some("cloud".to_owned())
                ),
                (Default, "RUMMY_ROUTE_DEFAULT".to_owned(), None),
            ]
        );
    }

    /// A check says the class and the model a loop would take, for a run routing or not and
    /// without a run, and says so when routing is off.
    #[test]
    fn checks_say_the_class_the_model_and_whether_routing_is_on() {
        let config = RoutingConfig {
            classes: BTreeMap::from([(Code, "deep".to_owned())]),
        };
        let run = |routes| CheckedRun {
            alias: "r".to_owned(),
            model: "fast".to_owned(),
            routes,
        };
        let check_of =
            |class, mapped: Option<&str>, routing, model: Option<&str>, reason: &str| Check {
                class,
                mapped: mapped.map(str::to_owned),
                routing,
                model: model.map(str::to_owned),
                reason: reason.to_owned(),
            };
        let cases = [
            (
                "```x```",
                Some(run(true)),
                &config,
                check_of(Code, Some("deep"), true, Some("deep"), "routing sends code prompts to deep: RUMMY_ROUTE_CODE"),
            ),
            (
                "why?",
                Some(run(true)),
                &config,
                check_of(Reasoning, None, true, Some("fast"), "no model is mapped to reasoning prompts (RUMMY_ROUTE_REASONING is not set): run r's own model fast answers"),
            ),
            (
                "```x```",
                Some(run(false)),
                &config,
                check_of(Code, Some("deep"), false, Some("fast"), "routing is off for run r (its route setting is not true): its own model fast answers; with route: true it would go to deep (RUMMY_ROUTE_CODE)"),
            ),
            (
                "hello",
                Some(run(false)),
                &config,
                check_of(Default, None, false, Some("fast"), "routing is off for run r (its route setting is not true): its own model fast answers"),
            ),
            (
                "```x```",
                None,
                &config,
                check_of(Code, Some("deep"), true, Some("deep"), "a run with route: true sends code prompts to deep: RUMMY_ROUTE_CODE"),
            ),
            (
                "hello",
                None,
                &config,
                check_of(Default, None, true, None, "no model is mapped to default prompts (RUMMY_ROUTE_DEFAULT is not set): a run keeps its own model"),
            ),
            (
                "```x```",
                None,
                &RoutingConfig::default(),
                check_of(Code, None, false, None, "routing is off on this server: no class is mapped (RUMMY_ROUTE_CODE, RUMMY_ROUTE_REASONING, RUMMY_ROUTE_DEFAULT), so every run keeps its own model"),
            ),
        ];
        for (text, run, config, expected) in cases {
            assert_eq!(check(text, run.as_ref(), config), expected, "{text}");
        }
    }

    /// Class names round-trip through configuration.
    #[test]
    fn class_names_round_trip() {
        for class in [Code, Reasoning, Default] {
            assert_eq!(PromptClass::from_name(class.name()), Some(class));
            assert_eq!(serde_json::to_value(class).unwrap(), class.name());
        }
        assert_eq!(PromptClass::from_name("fast"), None);
    }
}
