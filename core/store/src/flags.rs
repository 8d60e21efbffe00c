//! A run's flags: the switches a client sets in a run's attributes (`runs.flags`), copied into
//! each loop's config when it is queued. Read once from the stored JSON into one typed struct;
//! the wire names live only here, in the serde attributes.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// A run's (and its loops') flags. A flag the client never set is `None`: the server's own
/// setting decides. Keys this server does not read (a loop's routing decision among them) are
/// kept as they were, so a configure or a fork carries them on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunFlags {
    /// Do not attach the project's files.
    #[serde(
        rename = "noRepo",
        default,
        deserialize_with = "flag",
        skip_serializing_if = "Option::is_none"
    )]
    pub no_repo: Option<bool>,
    /// No `ask_user`.
    #[serde(
        rename = "noInteraction",
        default,
        deserialize_with = "flag",
        skip_serializing_if = "Option::is_none"
    )]
    pub no_interaction: Option<bool>,
    /// No `search`.
    #[serde(
        rename = "noWeb",
        default,
        deserialize_with = "flag",
        skip_serializing_if = "Option::is_none"
    )]
    pub no_web: Option<bool>,
    /// No `ask_user`, `env`, `sh`.
    #[serde(
        rename = "noProposals",
        default,
        deserialize_with = "flag",
        skip_serializing_if = "Option::is_none"
    )]
    pub no_proposals: Option<bool>,
    /// Route each loop's prompt to a model by its class (off unless set).
    #[serde(
        rename = "route",
        default,
        deserialize_with = "flag",
        skip_serializing_if = "Option::is_none"
    )]
    pub route: Option<bool>,
    /// `false` keeps the run's calls off their model's fallback (allowed unless set).
    #[serde(
        rename = "fallback",
        default,
        deserialize_with = "flag",
        skip_serializing_if = "Option::is_none"
    )]
    pub fallback: Option<bool>,
    /// Keep session state, over `RUMMY_SESSION_STATE`.
    #[serde(
        rename = "sessionState",
        default,
        deserialize_with = "flag",
        skip_serializing_if = "Option::is_none"
    )]
    pub session_state: Option<bool>,
    /// Recall on a loop's first turn, over `RUMMY_RECALL`.
    #[serde(
        rename = "recall",
        default,
        deserialize_with = "flag",
        skip_serializing_if = "Option::is_none"
    )]
    pub recall: Option<bool>,
    /// Re-rank recall, over `RUMMY_RECALL_RERANK`.
    #[serde(
        rename = "recallRerank",
        default,
        deserialize_with = "flag",
        skip_serializing_if = "Option::is_none"
    )]
    pub recall_rerank: Option<bool>,
    /// Consolidate memories at a loop's end, over `RUMMY_CONSOLIDATE`.
    #[serde(
        rename = "consolidate",
        default,
        deserialize_with = "flag",
        skip_serializing_if = "Option::is_none"
    )]
    pub consolidate: Option<bool>,
    /// Summarise evicted entries, over `RUMMY_SUMMARIZE`.
    #[serde(
        rename = "summarize",
        default,
        deserialize_with = "flag",
        skip_serializing_if = "Option::is_none"
    )]
    pub summarize: Option<bool>,
    /// Keys no flag reads, kept as stored.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// A stored flag: a boolean, anything else read as unset (as every reader always has).
fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(Value::deserialize(d)?.as_bool())
}

impl RunFlags {
    /// The flags in stored JSON text; text that is not a JSON object reads as no flags.
    pub fn parse(text: &str) -> RunFlags {
        serde_json::from_str(text).unwrap_or_default()
    }

    /// The flags in a JSON value; a value that is not an object reads as no flags.
    pub fn from_value(value: Value) -> RunFlags {
        serde_json::from_value(value).unwrap_or_default()
    }

    /// The flags as the JSON object they are stored as.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| Value::Object(Map::new()))
    }

    /// The flags as stored JSON text.
    pub fn to_text(&self) -> String {
        self.to_value().to_string()
    }

    /// These flags with every flag `over` sets laid over them (a configure, a fork's own
    /// attributes).
    pub fn overlaid(mut self, over: &RunFlags) -> RunFlags {
        let pick = |mine: &mut Option<bool>, theirs: Option<bool>| {
            if theirs.is_some() {
                *mine = theirs;
            }
        };
        pick(&mut self.no_repo, over.no_repo);
        pick(&mut self.no_interaction, over.no_interaction);
        pick(&mut self.no_web, over.no_web);
        pick(&mut self.no_proposals, over.no_proposals);
        pick(&mut self.route, over.route);
        pick(&mut self.fallback, over.fallback);
        pick(&mut self.session_state, over.session_state);
        pick(&mut self.recall, over.recall);
        pick(&mut self.recall_rerank, over.recall_rerank);
        pick(&mut self.consolidate, over.consolidate);
        pick(&mut self.summarize, over.summarize);
        for (key, value) in &over.other {
            self.other.insert(key.clone(), value.clone());
        }
        self
    }

    /// The flags a run's attributes set explicitly (a start's, a configure's).
    pub fn of(a: &rummy_protocol::params::RunAttributes) -> RunFlags {
        RunFlags {
            no_repo: a.no_repo,
            no_interaction: a.no_interaction,
            no_web: a.no_web,
            no_proposals: a.no_proposals,
            route: a.route,
            fallback: a.fallback,
            session_state: a.session_state,
            recall: a.recall,
            recall_rerank: a.recall_rerank,
            consolidate: a.consolidate,
            summarize: a.summarize,
            other: Map::new(),
        }
    }

    /// Whether no flag is set.
    pub fn is_empty(&self) -> bool {
        *self == RunFlags::default()
    }

    /// Whether the loops are routed by their prompt's class: only when the run asks.
    pub fn routes(&self) -> bool {
        self.route.unwrap_or(false)
    }

    /// Whether a failed call may go to the model's fallback: yes unless the run says
    /// `fallback: false` (fallback itself is configured per model, and off unless it is).
    pub fn fallback_allowed(&self) -> bool {
        self.fallback.unwrap_or(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    /// Each flag reads from, and writes back to, the JSON key it has always had.
    #[test]
    fn each_flag_keeps_its_stored_key() {
        let cases: Vec<(&str, RunFlags)> = vec![
            (
                "noRepo",
                RunFlags {
                    no_repo: Some(true),
                    ..RunFlags::default()
                },
            ),
            (
                "noInteraction",
                RunFlags {
                    no_interaction: Some(true),
                    ..RunFlags::default()
                },
            ),
            (
                "noWeb",
                RunFlags {
                    no_web: Some(true),
                    ..RunFlags::default()
                },
            ),
            (
                "noProposals",
                RunFlags {
                    no_proposals: Some(true),
                    ..RunFlags::default()
                },
            ),
            (
                "route",
                RunFlags {
                    route: Some(true),
                    ..RunFlags::default()
                },
            ),
            (
                "fallback",
                RunFlags {
                    fallback: Some(true),
                    ..RunFlags::default()
                },
            ),
            (
                "sessionState",
                RunFlags {
                    session_state: Some(true),
                    ..RunFlags::default()
                },
            ),
            (
                "recall",
                RunFlags {
                    recall: Some(true),
                    ..RunFlags::default()
                },
            ),
            (
                "recallRerank",
                RunFlags {
                    recall_rerank: Some(true),
                    ..RunFlags::default()
                },
            ),
            (
                "consolidate",
                RunFlags {
                    consolidate: Some(true),
                    ..RunFlags::default()
                },
            ),
            (
                "summarize",
                RunFlags {
                    summarize: Some(true),
                    ..RunFlags::default()
                },
            ),
        ];
        for (key, flags) in cases {
            let stored = json!({ key: true }).to_string();
            assert_eq!(RunFlags::parse(&stored), flags, "{key} read");
            assert_eq!(flags.to_text(), stored, "{key} written");
        }
    }

    /// No flags are an empty object; unreadable or non-object text reads as no flags.
    #[test]
    fn no_flags_are_an_empty_object() {
        assert_eq!(RunFlags::default().to_text(), "{}");
        for text in ["{}", "", "not json", "null", "[1]"] {
            assert_eq!(RunFlags::parse(text), RunFlags::default(), "{text:?}");
        }
    }

    /// Without a flag the run routes nothing and allows the fallback; false is kept as set.
    #[test]
    fn defaults_and_explicit_false() {
        let none = RunFlags::default();
        assert_eq!((none.routes(), none.fallback_allowed()), (false, true));
        let set = RunFlags::parse(r#"{"route":true,"fallback":false,"recall":false}"#);
        assert_eq!((set.routes(), set.fallback_allowed()), (true, false));
        assert_eq!(set.recall, Some(false));
        // Written in key order, as the stored object always was.
        assert_eq!(
            set.to_text(),
            r#"{"fallback":false,"recall":false,"route":true}"#
        );
    }

    /// Routing is on only for `route: true`; the fallback is off only for `fallback: false`.
    #[test]
    fn only_route_true_routes_and_only_fallback_false_refuses_fallback() {
        let cases = [
            (r#"{"route":true,"noRepo":true}"#, (true, true)),
            (r#"{"route":false,"fallback":true}"#, (false, true)),
            (r#"{"route":"yes","fallback":"no"}"#, (false, true)),
            (r#"{"fallback":false}"#, (false, false)),
            ("{}", (false, true)),
            ("null", (false, true)),
        ];
        for (text, expected) in cases {
            let flags = RunFlags::parse(text);
            assert_eq!(
                (flags.routes(), flags.fallback_allowed()),
                expected,
                "{text}"
            );
        }
    }

    /// Keys no flag reads are kept through a read and a write; a non-boolean flag reads as unset.
    #[test]
    fn other_keys_are_kept() {
        let flags = RunFlags::parse(r#"{"noWeb":true,"routed":{"class":"code"},"recall":1}"#);
        assert_eq!(
            flags,
            RunFlags {
                no_web: Some(true),
                other: json!({"routed": {"class": "code"}})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
                ..RunFlags::default()
            }
        );
        assert_eq!(
            flags.to_value(),
            json!({"noWeb": true, "routed": {"class": "code"}})
        );
    }

    /// An overlay sets what it names and leaves the rest.
    #[test]
    fn overlay_sets_only_what_it_names() {
        let base = RunFlags::parse(r#"{"noWeb":true,"recall":true,"x":1}"#);
        let over = RunFlags::parse(r#"{"recall":false,"route":true}"#);
        assert_eq!(
            base.overlaid(&over).to_value(),
            json!({"noWeb": true, "route": true, "recall": false, "x": 1})
        );
    }
}
