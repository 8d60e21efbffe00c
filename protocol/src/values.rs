//! The closed sets of words the wire carries: an entry's [`State`] and [`Visibility`], the
//! model's tools ([`ToolName`]), why a loop stopped ([`StopReason`]), what a proposal proposes
//! ([`ProposalKind`]), why an entry failed ([`FailureKind`]) and how much a notice for the person
//! matters ([`NotifyLevel`]).
//!
//! Each is written as the exact word the server has always sent (`proposed`, `max_turns`,
//! `ask_user`, `overflow:120`, …). Reading is tolerant: a word this crate does not know (one a
//! newer server added) reads as `Unknown` instead of failing the whole message, so a client
//! keeps working and treats it as "none of the ones I know". The server never writes
//! `Unknown`, and it refuses an unknown word in a request's params (-32602 naming the field):
//! [`State::parse`] and its siblings answer `None` for a word they do not know.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Declares a wire enum: its variants with their exact wire words, plus `Unknown` for any
/// other word read; `ALL` (the known variants), `as_str`, `parse` and `Display`.
macro_rules! wire_words {
    (
        $(#[$meta:meta])*
        $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $word:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $word)] $variant, )+
            /// A word this version does not know, or none at all (read only; the server never
            /// sends it).
            #[serde(other)]
            #[default]
            Unknown,
        }

        impl $name {
            /// Every known value, in the order the protocol lists them.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The wire word (`unknown` for [`Self::Unknown`], which the server never sends).
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $word, )+
                    $name::Unknown => "unknown",
                }
            }

            /// The value a wire word names; `None` for a word this version does not know
            /// (what the server refuses in params).
            pub fn parse(word: &str) -> Option<$name> {
                match word {
                    $( $word => Some($name::$variant), )+
                    _ => None,
                }
            }

            /// Whether it is one this version knows.
            pub fn is_known(self) -> bool {
                self != $name::Unknown
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

wire_words! {
    /// Where an entry is in its life (`state`).
    State {
        /// Waiting for a client to accept or reject it (202).
        Proposed = "proposed",
        /// Output still arriving (102).
        Streaming = "streaming",
        /// Done (200).
        Resolved = "resolved",
        /// Failed; its outcome says why.
        Failed = "failed",
        /// Cancelled (499); its outcome may say why.
        Cancelled = "cancelled",
    }
}

wire_words! {
    /// How much of an entry the model sees (`visibility`).
    Visibility {
        /// The whole body.
        Visible = "visible",
        /// The path, attributes and summary only.
        Summarized = "summarized",
        /// Out of the model's context; still found by pattern.
        Archived = "archived",
    }
}

wire_words! {
    /// One of the model's tools, by the name it writes (its tag, and the scheme of its results).
    ToolName {
        /// Read entries or files into the context.
        Get = "get",
        /// Ask the web search backend.
        Search = "search",
        /// Propose a command that inspects the environment.
        Env = "env",
        /// Private reasoning.
        Think = "think",
        /// Write or edit an entry or a file.
        Set = "set",
        /// Copy an entry or a file.
        Cp = "cp",
        /// Move an entry or a file.
        Mv = "mv",
        /// Remove entries or files.
        Rm = "rm",
        /// Propose a shell command.
        Sh = "sh",
        /// The turn's status report.
        Update = "update",
        /// Ask the user a question.
        AskUser = "ask_user",
        /// Call a tool a client offered the run.
        Call = "call",
    }
}

wire_words! {
    /// How much a `ui/notify` notice matters to the person (`level`).
    NotifyLevel {
        /// Something to know: a run waits for a decision.
        Info = "info",
        /// Something went less well than asked: a loop abandoned, the server stopping.
        Warn = "warn",
        /// Something failed: a loop ended 500.
        Error = "error",
    }
}

wire_words! {
    /// Why a run's last loop ended (`stopReason`).
    StopReason {
        /// The model ended the loop (200, 204 or 422).
        Concluded = "concluded",
        /// The loop reached `RUMMY_MAX_TURNS` without concluding.
        MaxTurns = "max_turns",
        /// A client cancelled it (499).
        Cancelled = "cancelled",
        /// It failed: a provider error, an undefined model, an internal error (500).
        Failed = "failed",
        /// The referee abandoned it: strikes or a cycle (508).
        Abandoned = "abandoned",
        /// Its context did not fit even after demotion (413).
        ContextFull = "context_full",
        /// The server stopped while it ran; it was ended at the next start (500).
        Interrupted = "interrupted",
    }
}

wire_words! {
    /// What a tool's proposal proposes: its `kind` attribute, and the `proposal` field of the
    /// entries and `run/proposal` items that are proposals.
    ProposalKind {
        /// `set` on a project file: a new content (`patch`, `content`).
        Edit = "edit",
        /// `cp` into a project file.
        Cp = "cp",
        /// `mv` into a project file.
        Mv = "mv",
        /// `rm` of project files (`paths`).
        Rm = "rm",
        /// `sh`: a shell command (`command`), whose output streams into its channels.
        Sh = "sh",
        /// `env`: a command that inspects the environment, run as `sh` is.
        Env = "env",
        /// `ask_user`: a question (`question`, `options`), answered by the accepting client.
        AskUser = "ask_user",
        /// `call`: a call of a tool a client offered (`server`, `tool`, `arguments`), made by
        /// that client once accepted; its result streams into its channel 1.
        Call = "call",
        /// `fetch`: a web page (`url`) outside the project's domains, fetched by the server once
        /// accepted; what came of it is in its channel 1, the page in its `https://` entry.
        Fetch = "fetch",
    }
}

impl ProposalKind {
    /// The attribute whose presence makes an entry a tool's proposal: the index of the command
    /// of its turn that made it. It stays once the proposal is resolved.
    pub const MARK: &'static str = "commandIndex";

    /// Whether an entry with these attributes is a tool's proposal, and of what kind: `Some`
    /// when they hold [`Self::MARK`] (the kind from their `kind` attribute, `Unknown` when it
    /// names none this version knows); `None` for any other entry, including one a client
    /// marked `proposed` itself.
    pub fn of(attributes: &serde_json::Map<String, serde_json::Value>) -> Option<ProposalKind> {
        attributes.contains_key(Self::MARK).then(|| {
            attributes
                .get("kind")
                .and_then(serde_json::Value::as_str)
                .and_then(ProposalKind::parse)
                .unwrap_or(ProposalKind::Unknown)
        })
    }
}

/// Why an entry failed: its `outcome` when its state is `failed`, a word or a word with a
/// number (`overflow:120`, `exit:2`, `501`). The HTTP-like `status` beside it follows from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The command was malformed (400): `validation`.
    Validation,
    /// A policy refused it (403): `permission`.
    Permission,
    /// A `readonly` file constraint refused it (403): `readonly`.
    Readonly,
    /// What it names does not exist (404): `not_found`.
    NotFound,
    /// The target changed under it, or it would collide (409): `conflict`.
    Conflict,
    /// Its stream was aborted by whoever ran it (409): `aborted`.
    Aborted,
    /// It was too large (413): `overflow`, or `overflow:<tokens>` with by how many tokens.
    Overflow {
        /// By how many tokens, when said.
        tokens: Option<i64>,
    },
    /// Its command exited non-zero (500): `exit:<code>`.
    Exit {
        /// The exit code.
        code: i64,
    },
    /// An HTTP status the tool's backend answered (a search's `501`): three digits.
    Status {
        /// The status.
        code: u16,
    },
    /// The accepting client reported an error (500): `error`.
    Error,
    /// A word this version does not know (500).
    Unknown,
}

impl FailureKind {
    /// Reads an outcome; a word it does not know is [`FailureKind::Unknown`].
    pub fn parse(outcome: &str) -> FailureKind {
        let number = |text: &str| text.parse::<i64>().ok();
        match outcome {
            "validation" => FailureKind::Validation,
            "permission" => FailureKind::Permission,
            "readonly" => FailureKind::Readonly,
            "not_found" => FailureKind::NotFound,
            "conflict" => FailureKind::Conflict,
            "aborted" => FailureKind::Aborted,
            "overflow" => FailureKind::Overflow { tokens: None },
            "error" => FailureKind::Error,
            _ if outcome.len() == 3 && outcome.bytes().all(|b| b.is_ascii_digit()) => outcome
                .parse()
                .map_or(FailureKind::Unknown, |code| FailureKind::Status { code }),
            _ => match outcome.split_once(':') {
                Some(("overflow", n)) => number(n).map_or(FailureKind::Unknown, |n| {
                    FailureKind::Overflow { tokens: Some(n) }
                }),
                Some(("exit", n)) => {
                    number(n).map_or(FailureKind::Unknown, |code| FailureKind::Exit { code })
                }
                _ => FailureKind::Unknown,
            },
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailureKind::Validation => f.write_str("validation"),
            FailureKind::Permission => f.write_str("permission"),
            FailureKind::Readonly => f.write_str("readonly"),
            FailureKind::NotFound => f.write_str("not_found"),
            FailureKind::Conflict => f.write_str("conflict"),
            FailureKind::Aborted => f.write_str("aborted"),
            FailureKind::Overflow { tokens: None } => f.write_str("overflow"),
            FailureKind::Overflow { tokens: Some(n) } => write!(f, "overflow:{n}"),
            FailureKind::Exit { code } => write!(f, "exit:{code}"),
            FailureKind::Status { code } => write!(f, "{code:03}"),
            FailureKind::Error => f.write_str("error"),
            FailureKind::Unknown => f.write_str("unknown"),
        }
    }
}

impl From<FailureKind> for String {
    fn from(kind: FailureKind) -> String {
        kind.to_string()
    }
}

impl Serialize for FailureKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FailureKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FailureKind, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(FailureKind::parse(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::{json, Value};

    /// Each known value is written as the exact word the server has always sent, and read back.
    #[test]
    fn known_values_are_their_wire_words() {
        assert_eq!(
            State::ALL.iter().map(|s| json!(s)).collect::<Vec<Value>>(),
            [
                json!("proposed"),
                json!("streaming"),
                json!("resolved"),
                json!("failed"),
                json!("cancelled")
            ]
        );
        assert_eq!(
            Visibility::ALL
                .iter()
                .map(|v| json!(v))
                .collect::<Vec<Value>>(),
            [json!("visible"), json!("summarized"), json!("archived")]
        );
        assert_eq!(
            StopReason::ALL
                .iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>(),
            [
                "concluded",
                "max_turns",
                "cancelled",
                "failed",
                "abandoned",
                "context_full",
                "interrupted"
            ]
        );
        assert_eq!(
            ProposalKind::ALL
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>(),
            ["edit", "cp", "mv", "rm", "sh", "env", "ask_user", "call", "fetch"]
        );
        assert_eq!(json!(ToolName::AskUser), json!("ask_user"));
        for tool in ToolName::ALL {
            let read: ToolName = serde_json::from_value(json!(tool.as_str())).unwrap();
            assert_eq!((read, tool.to_string()), (*tool, tool.as_str().to_owned()));
        }
    }

    /// A word a newer server may send reads as `Unknown` instead of failing the message, while
    /// `parse` (what the server checks params with) refuses it.
    #[test]
    fn an_unknown_word_reads_as_unknown_but_does_not_parse() {
        let read = |word: &str| {
            (
                serde_json::from_value::<State>(json!(word)).ok(),
                serde_json::from_value::<Visibility>(json!(word)).ok(),
                serde_json::from_value::<ToolName>(json!(word)).ok(),
                serde_json::from_value::<StopReason>(json!(word)).ok(),
                serde_json::from_value::<ProposalKind>(json!(word)).ok(),
                serde_json::from_value::<FailureKind>(json!(word)).ok(),
            )
        };
        assert_eq!(
            read("pondering"),
            (
                Some(State::Unknown),
                Some(Visibility::Unknown),
                Some(ToolName::Unknown),
                Some(StopReason::Unknown),
                Some(ProposalKind::Unknown),
                Some(FailureKind::Unknown)
            )
        );
        assert_eq!(
            (
                State::parse("pondering"),
                Visibility::parse("pondering"),
                ToolName::parse("pondering"),
                StopReason::parse("pondering"),
                ProposalKind::parse("pondering"),
                State::parse("unknown"),
            ),
            (None, None, None, None, None, None)
        );
    }

    /// Every failure outcome the server writes is read back to the same kind and written again
    /// as the same word; anything else is `Unknown`.
    #[test]
    fn failure_outcomes_round_trip_their_words() {
        let words = [
            "validation",
            "permission",
            "readonly",
            "not_found",
            "conflict",
            "aborted",
            "overflow",
            "overflow:120",
            "exit:2",
            "exit:-1",
            "501",
            "error",
        ];
        for word in words {
            let kind = FailureKind::parse(word);
            assert!(kind != FailureKind::Unknown, "{word}");
            assert_eq!(kind.to_string(), word);
            assert_eq!(json!(kind), json!(word));
        }
        assert_eq!(
            [
                "overflow:lots",
                "exit:",
                "4222",
                "rejected",
                "stop: user asked"
            ]
            .map(FailureKind::parse),
            [FailureKind::Unknown; 5]
        );
        assert_eq!(FailureKind::parse("exit:2"), FailureKind::Exit { code: 2 });
    }

    /// An entry is a tool's proposal when its attributes hold `commandIndex`, whatever its
    /// state; its kind is its `kind` attribute.
    #[test]
    fn a_proposal_is_marked_by_its_command_index() {
        let of = |attributes: Value| ProposalKind::of(attributes.as_object().unwrap());
        assert_eq!(
            [
                of(json!({"kind": "edit", "path": "a.rs", "commandIndex": 0})),
                of(json!({"kind": "ask_user", "commandIndex": 3})),
                of(json!({"kind": "teleport", "commandIndex": 1})),
                of(json!({"commandIndex": 1})),
                of(json!({"kind": "edit", "path": "a.rs"})),
                of(json!({})),
            ],
            [
                Some(ProposalKind::Edit),
                Some(ProposalKind::AskUser),
                Some(ProposalKind::Unknown),
                Some(ProposalKind::Unknown),
                None,
                None
            ]
        );
    }
}
