//! What a proposal asks a client to accept: one tagged type that the proposing tools write and a resolution reads back.
//!
//! A proposal is an entry in state `proposed`; its attributes hold `kind` and the data of that
//! kind (with `bases`, the content the model saw of each file, beside it). The tools build a
//! [`ProposalKind`] and store it as those attributes ([`ProposalKind::attributes`]);
//! `turn::proposals` reads it back ([`ProposalKind::read`]) and matches on it, so what a kind
//! writes, removes and needs on acceptance is said once per variant.

use crate::store::entries::hex_sha256;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The hash of a proposal as it is stored (`attributes`, `body`): the SHA-256 (hex) of its
/// canonical JSON, the object of `kind`, `paths`, `command`, `content` and `patch` with sorted
/// keys, no whitespace and the absent ones left out. `paths` are the files (or entries) its
/// acceptance reads, writes or removes, in the kind's order (`[path]`, `[from, to]`, the
/// removed `paths`); `patch` is the diff a reviewer reads (the `patch` attribute, else the
/// body when it has one). It is what a client approves: an accept that sends `approves` is
/// refused unless it is the proposal's hash when the server applies it.
pub fn hash(attributes: &Value, body: &str) -> String {
    let field = |key: &str| attributes.get(key).filter(|v| !v.is_null()).cloned();
    let mut canon: BTreeMap<&str, Value> = BTreeMap::new();
    if let Some(kind) = field("kind") {
        canon.insert("kind", kind);
    }
    let paths: Vec<Value> = match ProposalKind::read(attributes) {
        Ok(kind) => kind.touched().into_iter().map(Value::from).collect(),
        // Unreadable (it cannot be applied): its stored path fields as they are.
        Err(_) => ["path", "from", "to", "paths"]
            .into_iter()
            .filter_map(field)
            .collect(),
    };
    if !paths.is_empty() {
        canon.insert("paths", Value::from(paths));
    }
    for key in ["command", "content"] {
        if let Some(value) = field(key) {
            canon.insert(key, value);
        }
    }
    let patch = match field("patch") {
        Some(patch) => Some(patch),
        None => (!body.is_empty()).then(|| Value::from(body)),
    };
    if let Some(patch) = patch {
        canon.insert("patch", patch);
    }
    // A map of strings and JSON values always serialises.
    let text = serde_json::to_string(&canon).unwrap_or_default();
    hex_sha256(text)
}

/// What a proposal proposes, with what accepting it needs.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProposalKind {
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
}

impl ProposalKind {
    /// The stored name of the kind (the `kind` attribute).
    pub fn name(&self) -> &'static str {
        match self {
            ProposalKind::Edit { .. } => "edit",
            ProposalKind::Cp { .. } => "cp",
            ProposalKind::Mv { .. } => "mv",
            ProposalKind::Rm { .. } => "rm",
            ProposalKind::Sh { .. } => "sh",
            ProposalKind::Env { .. } => "env",
            ProposalKind::AskUser { .. } => "ask_user",
        }
    }

    /// The attributes that store it: `kind` and the variant's data.
    pub fn attributes(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("kind".to_owned(), Value::from(self.name()));
        let mut put = |key: &str, value: Value| {
            map.insert(key.to_owned(), value);
        };
        match self {
            ProposalKind::Edit { path, content } => {
                put("path", Value::from(path.as_str()));
                put("content", Value::from(content.as_str()));
            }
            ProposalKind::Cp { from, to, content } | ProposalKind::Mv { from, to, content } => {
                put("from", Value::from(from.as_str()));
                put("to", Value::from(to.as_str()));
                put("content", Value::from(content.as_str()));
            }
            ProposalKind::Rm { paths } => put("paths", Value::from(paths.clone())),
            ProposalKind::Sh { command } | ProposalKind::Env { command } => {
                put("command", Value::from(command.as_str()));
            }
            ProposalKind::AskUser { question, options } => {
                put("question", Value::from(question.as_str()));
                put("options", Value::from(options.clone()));
            }
        }
        map
    }

    /// Reads the kind a proposal's attributes store; the reason when they hold none that is
    /// readable (an unknown `kind`, or a field missing or of the wrong type).
    pub fn read(attributes: &Value) -> Result<ProposalKind, String> {
        ProposalKind::deserialize(attributes).map_err(|e| {
            let kind = attributes.get("kind").and_then(Value::as_str).unwrap_or("");
            format!("cannot apply a proposal of kind \"{kind}\": {e}")
        })
    }

    /// The project file (or entry) its acceptance writes, if it writes one.
    pub fn written(&self) -> Option<&str> {
        match self {
            ProposalKind::Edit { path, .. } => Some(path),
            ProposalKind::Cp { to, .. } | ProposalKind::Mv { to, .. } => Some(to),
            ProposalKind::Rm { .. }
            | ProposalKind::Sh { .. }
            | ProposalKind::Env { .. }
            | ProposalKind::AskUser { .. } => None,
        }
    }

    /// The paths its acceptance changes (written, moved away or removed), in the order a
    /// refusal reports them.
    pub fn changed(&self) -> Vec<&str> {
        match self {
            ProposalKind::Edit { path, .. } => vec![path],
            ProposalKind::Cp { to, .. } => vec![to],
            ProposalKind::Mv { from, to, .. } => vec![to, from],
            ProposalKind::Rm { paths } => paths.iter().map(String::as_str).collect(),
            ProposalKind::Sh { .. } | ProposalKind::Env { .. } | ProposalKind::AskUser { .. } => {
                Vec::new()
            }
        }
    }

    /// The paths its acceptance reads, writes or removes.
    pub fn touched(&self) -> Vec<&str> {
        match self {
            ProposalKind::Cp { from, to, .. } | ProposalKind::Mv { from, to, .. } => {
                vec![from, to]
            }
            ProposalKind::Edit { .. }
            | ProposalKind::Rm { .. }
            | ProposalKind::Sh { .. }
            | ProposalKind::Env { .. }
            | ProposalKind::AskUser { .. } => self.changed(),
        }
    }

    /// The command an accepted `sh`/`env` runs, whose output its turn waits for.
    pub fn command(&self) -> Option<&str> {
        match self {
            ProposalKind::Sh { command } | ProposalKind::Env { command } => Some(command),
            ProposalKind::Edit { .. }
            | ProposalKind::Cp { .. }
            | ProposalKind::Mv { .. }
            | ProposalKind::Rm { .. }
            | ProposalKind::AskUser { .. } => None,
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
            ProposalKind::Edit {
                path: text("a.txt"),
                content: text("new"),
            },
            ProposalKind::Cp {
                from: text("known://a"),
                to: text("a.txt"),
                content: text("x"),
            },
            ProposalKind::Mv {
                from: text("b.txt"),
                to: text("c.txt"),
                content: text("y"),
            },
            ProposalKind::Rm {
                paths: vec![text("a.txt"), text("b.txt")],
            },
            ProposalKind::Sh {
                command: text("ls"),
            },
            ProposalKind::Env {
                command: text("env"),
            },
            ProposalKind::AskUser {
                question: text("Which?"),
                options: vec![text("A"), text("B")],
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
            ]
        );
        let back: Vec<Result<ProposalKind, String>> =
            stored.iter().map(ProposalKind::read).collect();
        assert_eq!(back, kinds.into_iter().map(Ok).collect::<Vec<_>>());
    }

    /// Attributes beside the kind's data are ignored; an unknown kind or missing data is an
    /// error that says which kind could not be applied.
    #[test]
    fn unreadable_kinds_are_errors() {
        let stored = json!({"kind": "rm", "paths": ["a"], "bases": {}, "commandIndex": 0});
        assert_eq!(
            ProposalKind::read(&stored),
            Ok(ProposalKind::Rm {
                paths: vec!["a".to_owned()]
            })
        );
        let errors: Vec<String> = [
            json!({"kind": "teleport", "path": "a"}),
            json!({"kind": "edit", "path": "a"}),
            json!({"path": "a"}),
        ]
        .iter()
        .map(|v| ProposalKind::read(v).err().unwrap_or_default())
        .collect();
        assert_eq!(
            errors,
            vec![
                "cannot apply a proposal of kind \"teleport\": unknown variant `teleport`, expected one of `edit`, `cp`, `mv`, `rm`, `sh`, `env`, `ask_user`".to_owned(),
                "cannot apply a proposal of kind \"edit\": missing field `content`".to_owned(),
                "cannot apply a proposal of kind \"\": missing field `kind`".to_owned(),
            ]
        );
    }

    /// A proposal's hash is the SHA-256 of its canonical JSON: sorted keys, no whitespace,
    /// the absent fields left out, whatever else its attributes hold.
    #[test]
    fn a_proposal_hashes_its_canonical_json() {
        let edit = json!({"kind": "edit", "path": "a.txt", "content": "new\n",
            "patch": "-old\n+new\n", "bases": {"a.txt": "x"}, "commandIndex": 0});
        let sh = json!({"kind": "sh", "command": "ls", "commandIndex": 1});
        assert_eq!(
            (hash(&edit, "-old\n+new\n"), hash(&sh, "")),
            (
                // {"content":"new\n","kind":"edit","patch":"-old\n+new\n","paths":["a.txt"]}
                "cf78512e73637a07f5c82dd66f1085be2b91710fe1fd48502369eef4f8710707".to_owned(),
                // {"command":"ls","kind":"sh"}
                "bec64d30d684688a33b00a8417766abd3c00790de88dc462640a967a0f54cfe4".to_owned(),
            )
        );
    }

    /// Equal proposals hash alike, whatever order their attributes were written in and
    /// whatever else they hold; a change of the kind, a path, the command, the content or the
    /// patch changes the hash.
    #[test]
    fn a_proposal_hash_changes_with_what_it_does() {
        let base = json!({"kind": "edit", "path": "a.txt", "content": "new", "patch": "-o\n+n\n"});
        let reordered = json!({"patch": "-o\n+n\n", "content": "new", "path": "a.txt",
            "kind": "edit", "resolvedBy": "x", "summary": "s"});
        assert_eq!(hash(&base, "body"), hash(&reordered, "other body"));
        let with = |key: &str, value: Value| {
            let mut v = base.clone();
            v[key] = value;
            hash(&v, "body")
        };
        let variants = vec![
            with("kind", json!("cp")),
            with("path", json!("b.txt")),
            with("content", json!("BACKDOOR")),
            with("patch", json!("-o\n+BACKDOOR\n")),
            with("command", json!("rm -rf /")),
            hash(&json!({"kind": "sh", "command": "ls"}), ""),
            hash(&json!({"kind": "sh", "command": "ls -a"}), ""),
            hash(&json!({"kind": "rm", "paths": ["a", "b"]}), ""),
            hash(&json!({"kind": "rm", "paths": ["a", "c"]}), ""),
            hash(
                &json!({"kind": "cp", "from": "a", "to": "b", "content": "x"}),
                "",
            ),
            hash(
                &json!({"kind": "cp", "from": "b", "to": "a", "content": "x"}),
                "",
            ),
            // Without a patch attribute the body is the patch.
            hash(&json!({"kind": "rm", "paths": ["a"]}), "-gone\n"),
            hash(&json!({"kind": "rm", "paths": ["a"]}), "-went\n"),
        ];
        let mut distinct = variants.clone();
        distinct.push(hash(&base, "body"));
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), variants.len() + 1);
    }
}
