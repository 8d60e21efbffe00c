//! What a proposal asks a client to accept: one tagged type that the proposing tools write and a resolution reads back.
//!
//! A proposal is an entry in state `proposed`; its attributes hold `kind` and the data of that
//! kind (with `bases`, the content the model saw of each file, beside it). The tools build a
//! [`Proposed`] and store it as those attributes ([`Proposed::attributes`]);
//! `turn::proposals` reads it back ([`Proposed::read`]) and matches on it, so what a kind
//! writes, removes and needs on acceptance is said once per variant.

use serde::Deserialize;
use serde_json::{Map, Value};

/// What a proposal proposes, with what accepting it needs (the wire's
/// `rummy_protocol::ProposalKind` is only the kind's word, which [`Proposed::wire`] gives).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Proposed {
    /// `set` on a project file: the file's new content.
    Edit {
        /// The file.
        path: String,
        /// Its content once accepted.
        content: String,
    },
    /// `cp` into a project file.
    Cp {
        /// The entry or file copied.
        from: String,
        /// The file written.
        to: String,
        /// What is written.
        content: String,
    },
    /// `mv` into a project file: the source goes (a file is removed, an entry leaves the run).
    Mv {
        /// The entry or file moved.
        from: String,
        /// The file written.
        to: String,
        /// What is written.
        content: String,
    },
    /// `rm` of project files.
    Rm {
        /// The files removed.
        paths: Vec<String>,
    },
    /// `sh`: a shell command, whose output streams into the proposal's channels.
    Sh {
        /// The command.
        command: String,
    },
    /// `env`: a command that inspects the environment, run as `sh` is.
    Env {
        /// The command.
        command: String,
    },
    /// `ask_user`: a question, answered by the accepting client.
    AskUser {
        /// The question.
        question: String,
        /// The answers offered, if any.
        #[serde(default)]
        options: Vec<String>,
    },
    /// `call`: a call of a tool a client offered, made by that client once accepted; its
    /// answer streams into the proposal's channel.
    Call {
        /// The MCP server holding the tool, as the client named it.
        server: String,
        /// The tool.
        tool: String,
        /// The call's arguments.
        arguments: Map<String, Value>,
    },
    /// `get` of a web page outside the project's domains: fetched by the server once accepted.
    Fetch {
        /// The page's URL.
        url: String,
    },
}

impl Proposed {
    /// The kind as clients read it (the `proposal` field of the entry).
    pub fn wire(&self) -> rummy_protocol::ProposalKind {
        use rummy_protocol::ProposalKind as Wire;
        match self {
            Proposed::Edit { .. } => Wire::Edit,
            Proposed::Cp { .. } => Wire::Cp,
            Proposed::Mv { .. } => Wire::Mv,
            Proposed::Rm { .. } => Wire::Rm,
            Proposed::Sh { .. } => Wire::Sh,
            Proposed::Env { .. } => Wire::Env,
            Proposed::AskUser { .. } => Wire::AskUser,
            Proposed::Call { .. } => Wire::Call,
            Proposed::Fetch { .. } => Wire::Fetch,
        }
    }

    /// The stored name of the kind (the `kind` attribute): its word on the wire.
    pub fn name(&self) -> &'static str {
        self.wire().as_str()
    }

    /// The attributes that store it: `kind` and the variant's data.
    pub fn attributes(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("kind".to_owned(), Value::from(self.name()));
        let mut put = |key: &str, value: Value| {
            map.insert(key.to_owned(), value);
        };
        match self {
            Proposed::Edit { path, content } => {
                put("path", Value::from(path.as_str()));
                put("content", Value::from(content.as_str()));
            }
            Proposed::Cp { from, to, content } | Proposed::Mv { from, to, content } => {
                put("from", Value::from(from.as_str()));
                put("to", Value::from(to.as_str()));
                put("content", Value::from(content.as_str()));
            }
            Proposed::Rm { paths } => put("paths", Value::from(paths.clone())),
            Proposed::Sh { command } | Proposed::Env { command } => {
                put("command", Value::from(command.as_str()));
            }
            Proposed::AskUser { question, options } => {
                put("question", Value::from(question.as_str()));
                put("options", Value::from(options.clone()));
            }
            Proposed::Call {
                server,
                tool,
                arguments,
            } => {
                put("server", Value::from(server.as_str()));
                put("tool", Value::from(tool.as_str()));
                put("arguments", Value::Object(arguments.clone()));
            }
            Proposed::Fetch { url } => put("url", Value::from(url.as_str())),
        }
        map
    }

    /// Reads the kind a proposal's attributes store; the reason when they hold none that is
    /// readable (an unknown `kind`, or a field missing or of the wrong type).
    pub fn read(attributes: &Value) -> Result<Proposed, String> {
        Proposed::deserialize(attributes).map_err(|e| {
            let kind = attributes.get("kind").and_then(Value::as_str).unwrap_or("");
            format!("cannot apply a proposal of kind \"{kind}\": {e}")
        })
    }

    /// The project file (or entry) its acceptance writes, if it writes one.
    pub fn written(&self) -> Option<&str> {
        match self {
            Proposed::Edit { path, .. } => Some(path),
            Proposed::Cp { to, .. } | Proposed::Mv { to, .. } => Some(to),
            Proposed::Rm { .. }
            | Proposed::Sh { .. }
            | Proposed::Env { .. }
            | Proposed::AskUser { .. }
            | Proposed::Call { .. }
            | Proposed::Fetch { .. } => None,
        }
    }

    /// The paths its acceptance changes (written, moved away or removed), in the order a
    /// refusal reports them.
    pub fn changed(&self) -> Vec<&str> {
        match self {
            Proposed::Edit { path, .. } => vec![path],
            Proposed::Cp { to, .. } => vec![to],
            Proposed::Mv { from, to, .. } => vec![to, from],
            Proposed::Rm { paths } => paths.iter().map(String::as_str).collect(),
            Proposed::Sh { .. }
            | Proposed::Env { .. }
            | Proposed::AskUser { .. }
            | Proposed::Call { .. }
            | Proposed::Fetch { .. } => Vec::new(),
        }
    }

    /// The paths its acceptance reads, writes or removes.
    pub fn touched(&self) -> Vec<&str> {
        match self {
            Proposed::Cp { from, to, .. } | Proposed::Mv { from, to, .. } => {
                vec![from, to]
            }
            Proposed::Edit { .. }
            | Proposed::Rm { .. }
            | Proposed::Sh { .. }
            | Proposed::Env { .. }
            | Proposed::AskUser { .. }
            | Proposed::Call { .. }
            | Proposed::Fetch { .. } => self.changed(),
        }
    }

    /// The command an accepted `sh`/`env` runs, whose output its turn waits for.
    pub fn command(&self) -> Option<&str> {
        match self {
            Proposed::Sh { command } | Proposed::Env { command } => Some(command),
            Proposed::Edit { .. }
            | Proposed::Cp { .. }
            | Proposed::Mv { .. }
            | Proposed::Rm { .. }
            | Proposed::AskUser { .. }
            | Proposed::Call { .. }
            | Proposed::Fetch { .. } => None,
        }
    }

    /// Whether accepting it opens output channels its turn waits for: an `sh`/`env`'s
    /// (stdout, stderr), a `call`'s (the tool's answer).
    pub fn channels(&self) -> &'static [u32] {
        match self {
            Proposed::Sh { .. } | Proposed::Env { .. } => &[1, 2],
            Proposed::Call { .. } | Proposed::Fetch { .. } => &[1],
            Proposed::Edit { .. }
            | Proposed::Cp { .. }
            | Proposed::Mv { .. }
            | Proposed::Rm { .. }
            | Proposed::AskUser { .. } => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    /// Every kind reads back from the attributes it is stored as, which keep their stored shape.
    #[test]
    fn kinds_round_trip_through_their_attributes() {
        let text = |s: &str| s.to_owned();
        let kinds = vec![
            Proposed::Edit {
                path: text("a.txt"),
                content: text("new"),
            },
            Proposed::Cp {
                from: text("known://a"),
                to: text("a.txt"),
                content: text("x"),
            },
            Proposed::Mv {
                from: text("b.txt"),
                to: text("c.txt"),
                content: text("y"),
            },
            Proposed::Rm {
                paths: vec![text("a.txt"), text("b.txt")],
            },
            Proposed::Sh {
                command: text("ls"),
            },
            Proposed::Env {
                command: text("env"),
            },
            Proposed::AskUser {
                question: text("Which?"),
                options: vec![text("A"), text("B")],
            },
            Proposed::Call {
                server: text("docs"),
                tool: text("search"),
                arguments: json!({"query": "retry"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            },
            Proposed::Fetch {
                url: text("https://example.com/a"),
            },
        ];
        let stored: Vec<Value> = kinds
            .iter()
            .map(|k| Value::Object(k.attributes()))
            .collect();
        assert_eq!(
            stored,
            vec![
                json!({"kind": "edit", "path": "a.txt", "content": "new"}),
                json!({"kind": "cp", "from": "known://a", "to": "a.txt", "content": "x"}),
                json!({"kind": "mv", "from": "b.txt", "to": "c.txt", "content": "y"}),
                json!({"kind": "rm", "paths": ["a.txt", "b.txt"]}),
                json!({"kind": "sh", "command": "ls"}),
                json!({"kind": "env", "command": "env"}),
                json!({"kind": "ask_user", "question": "Which?", "options": ["A", "B"]}),
                json!({"kind": "call", "server": "docs", "tool": "search", "arguments": {"query": "retry"}}),
                json!({"kind": "fetch", "url": "https://example.com/a"}),
            ]
        );
        let back: Vec<Result<Proposed, String>> = stored.iter().map(Proposed::read).collect();
        // What clients read of each once dispatch marks it: its kind, one per kind the
        // protocol knows.
        let read: Vec<Option<rummy_protocol::ProposalKind>> = kinds
            .iter()
            .map(|k| {
                let mut marked = k.attributes();
                marked.insert(rummy_protocol::ProposalKind::MARK.to_owned(), json!(0));
                rummy_protocol::ProposalKind::of(&marked)
            })
            .collect();
        assert_eq!(
            read,
            rummy_protocol::ProposalKind::ALL
                .iter()
                .copied()
                .map(Some)
                .collect::<Vec<_>>()
        );
        assert_eq!(back, kinds.into_iter().map(Ok).collect::<Vec<_>>());
    }

    /// Attributes beside the kind's data are ignored; an unknown kind or missing data is an
    /// error that says which kind could not be applied.
    #[test]
    fn unreadable_kinds_are_errors() {
        let stored = json!({"kind": "rm", "paths": ["a"], "bases": {}, "commandIndex": 0});
        assert_eq!(
            Proposed::read(&stored),
            Ok(Proposed::Rm {
                paths: vec!["a".to_owned()]
            })
        );
        let errors: Vec<String> = [
            json!({"kind": "teleport", "path": "a"}),
            json!({"kind": "edit", "path": "a"}),
            json!({"path": "a"}),
        ]
        .iter()
        .map(|v| Proposed::read(v).err().unwrap_or_default())
        .collect();
        assert_eq!(
            errors,
            vec![
                "cannot apply a proposal of kind \"teleport\": unknown variant `teleport`, expected one of `edit`, `cp`, `mv`, `rm`, `sh`, `env`, `ask_user`, `call`, `fetch`".to_owned(),
                "cannot apply a proposal of kind \"edit\": missing field `content`".to_owned(),
                "cannot apply a proposal of kind \"\": missing field `kind`".to_owned(),
            ]
        );
    }
}
