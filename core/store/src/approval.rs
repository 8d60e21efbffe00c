//! What a client approves: the hash of a pending proposal, which `run/proposal` and the entry
//! views carry and an accept's `approves` must name.

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The hash of a proposal as it is stored (`attributes`, `body`): the SHA-256 (hex) of its
/// canonical JSON, the object of `kind`, `paths`, `command`, `content`, `server`, `tool`,
/// `arguments`, `url` and `patch` with sorted keys (at every depth), no whitespace and the absent
/// ones left out. `paths` are the files (or entries) its
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
    // The kind's own order: the removed `paths`, else `[from, to]`, else `[path]`.
    let paths: Vec<Value> = match (field("paths"), field("from"), field("to")) {
        (Some(Value::Array(paths)), _, _) => paths,
        (_, None, None) => field("path").into_iter().collect(),
        (_, from, to) => from.into_iter().chain(to).collect(),
    };
    if !paths.is_empty() {
        canon.insert("paths", Value::from(paths));
    }
    for key in ["command", "content", "server", "tool", "arguments", "url"] {
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
    let mut out = String::with_capacity(64);
    for byte in Sha256::digest(text.as_bytes()) {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

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
            // A call: its server, its tool and each argument.
            hash(
                &json!({"kind": "call", "server": "s", "tool": "t", "arguments": {"q": 1}}),
                "",
            ),
            hash(
                &json!({"kind": "call", "server": "S", "tool": "t", "arguments": {"q": 1}}),
                "",
            ),
            hash(
                &json!({"kind": "call", "server": "s", "tool": "T", "arguments": {"q": 1}}),
                "",
            ),
            hash(
                &json!({"kind": "call", "server": "s", "tool": "t", "arguments": {"q": 2}}),
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
