//! `docs/protocol.md` against the live `discover`: every method, param, notification, payload field, run status, stop reason and error code the server serves is documented, and every method documented is served.

use crate::support::TestServer;
use pretty_assertions::assert_eq;
use serde_json::Value;
use std::collections::BTreeMap;

/// The reference's `### \`name\`` sections under the `## <part>` heading: name → section text.
fn sections(doc: &str, part: &str) -> BTreeMap<String, String> {
    sections_text(doc, part)
        .split("\n### `")
        .skip(1)
        .filter_map(|s| {
            let (name, rest) = s.split_once('`')?;
            Some((name.to_owned(), rest.to_owned()))
        })
        .collect()
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// Every method and notification of `discover` has its section in docs/protocol.md naming each
/// param (and alias) or payload field, and the reference documents nothing the server does not
/// serve; every run status, stop reason and error code of `discover` is in it too.
#[actix_rt::test]
async fn the_protocol_reference_matches_discover() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/protocol.md"),
    )
    .expect("docs/protocol.md");
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let catalogue = client
        .call("discover", serde_json::json!({}))
        .await
        .unwrap();
    server.stop().await;

    let mut missing = Vec::new();
    let methods = sections(&doc, "Methods");
    for name in keys(&catalogue["methods"]) {
        let Some(section) = methods.get(&name) else {
            missing.push(format!("method {name}"));
            continue;
        };
        for (param, spec) in catalogue["methods"][&name]["params"]
            .as_object()
            .into_iter()
            .flatten()
        {
            let aliases = spec["aliases"].as_array().cloned().unwrap_or_default();
            let spellings = std::iter::once(param.clone())
                .chain(aliases.iter().filter_map(|a| a.as_str().map(str::to_owned)));
            for spelling in spellings {
                if !section.contains(&format!("`{spelling}`")) {
                    missing.push(format!("{name} param {spelling}"));
                }
            }
        }
    }
    let notifications = sections(&doc, "Notifications");
    for name in keys(&catalogue["notifications"]) {
        let Some(section) = notifications.get(&name) else {
            missing.push(format!("notification {name}"));
            continue;
        };
        let payload = &catalogue["notifications"][&name]["payload"];
        for (field, spec) in payload.as_object().into_iter().flatten() {
            if !section.contains(&format!("`{field}`")) {
                missing.push(format!("{name} field {field}"));
            }
            let values = spec["values"].as_array().cloned().unwrap_or_default();
            for value in values.iter().filter_map(Value::as_str) {
                if !section.contains(value) {
                    missing.push(format!("{name} {field} value {value}"));
                }
            }
        }
    }
    let statuses = sections_text(&doc, "Run statuses");
    for code in keys(&catalogue["runStatuses"]) {
        if !statuses.contains(&format!("| {code} |")) {
            missing.push(format!("run status {code}"));
        }
    }
    let reasons = sections_text(&doc, "Stop reasons");
    for reason in keys(&catalogue["stopReasons"]) {
        if !reasons.contains(&format!("| `{reason}` |")) {
            missing.push(format!("stop reason {reason}"));
        }
    }
    let errors = sections_text(&doc, "Errors");
    for (code, kind) in catalogue["errors"].as_object().into_iter().flatten() {
        let row = format!("| {code} | `{}` |", kind.as_str().unwrap_or_default());
        if !errors.contains(&row) {
            missing.push(format!("error {code}"));
        }
    }
    assert_eq!(
        missing,
        Vec::<String>::new(),
        "missing from docs/protocol.md"
    );

    let served: Vec<String> = keys(&catalogue["methods"]);
    let documented: Vec<&String> = methods.keys().filter(|m| !served.contains(m)).collect();
    assert_eq!(
        documented,
        Vec::<&String>::new(),
        "documented but not served"
    );
    let pushed = keys(&catalogue["notifications"]);
    let documented: Vec<&String> = notifications
        .keys()
        .filter(|n| !pushed.contains(n))
        .collect();
    assert_eq!(
        documented,
        Vec::<&String>::new(),
        "documented but not pushed"
    );
}

/// The text of the `## <part>` section.
fn sections_text<'d>(doc: &'d str, part: &str) -> &'d str {
    let start = doc
        .find(&format!("\n## {part}\n"))
        .unwrap_or_else(|| panic!("docs/protocol.md has no \"## {part}\""));
    let body = &doc[start + part.len() + 5..];
    &body[..body.find("\n## ").unwrap_or(body.len())]
}

/// The README's "Talking to it" points at the reference in the repository.
#[test]
fn the_readme_points_at_the_protocol_reference() {
    let readme =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .expect("README.md");
    assert!(readme.contains("docs/protocol.md"));
    assert!(!readme.contains("shared/design/PROTOCOL.md"));
}

/// The map of the code stands on its own: it cites no design document or section that lives
/// only outside the repository, and names every crate of the workspace.
#[test]
fn the_architecture_cites_only_what_the_repository_holds() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    assert!(
        !map.contains("../shared"),
        "ARCHITECTURE.md cites ../shared"
    );
    let cited: Vec<&str> = map.lines().filter(|l| l.contains(".md §")).collect();
    assert_eq!(
        cited,
        Vec::<&str>::new(),
        "sections of documents outside the repository"
    );
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let members = manifest
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .expect("workspace members")
        .0;
    for member in members.split(',').map(|m| m.trim().trim_matches('"')) {
        let heading = if member == "." {
            "### `src/`".to_owned()
        } else {
            format!("### `{member}/`")
        };
        assert!(map.contains(&heading), "no section for {member}");
    }
}
