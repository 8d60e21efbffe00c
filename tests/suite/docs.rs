//! The repository's docs hold: `docs/protocol.md` against the live `discover` (every method, param, notification, payload field, run status, stop reason and error code the server serves is documented, and every method documented is served), the code map against the workspace, and a tidy over every tracked text file — no citation of a document the repository does not hold, no issue number, no word for the source documents.

use crate::support::TestServer;
use pretty_assertions::assert_eq;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// The code map names every crate of the workspace: each member has its `### `member/`` section.
#[test]
fn the_architecture_has_a_section_for_every_workspace_member() {
    let root = repo_root();
    let map = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let members = manifest
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .expect("workspace members")
        .0;
    let missing: Vec<&str> = members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .filter(|member| {
            let heading = if *member == "." {
                "### `src/`".to_owned()
            } else {
                format!("### `{member}/`")
            };
            !map.contains(&heading)
        })
        .collect();
    assert_eq!(missing, Vec::<&str>::new(), "members without a section");
}

/// Every document a tracked file cites — a capitalised `NAME.md` anywhere, or a `dir/name.md`
/// path in prose — is a file the repository holds, found beside the citing file or from the
/// root; nothing points outside it (`../shared`, a section of the outside reference).
#[test]
fn no_file_cites_a_document_the_repository_does_not_hold() {
    let root = repo_root();
    let offences = offending_lines(|file, line, prose| {
        line.contains("../shared")
            || cites_the_reference(line)
            || citations(line, prose)
                .into_iter()
                .any(|cited| !holds(root, file, cited))
    });
    assert_eq!(
        offences,
        Vec::<String>::new(),
        "citations of documents the repository does not hold"
    );
}

/// No tracked file cites an issue number (`issue 41`, `issues 39–40`, `#41`): what an issue
/// decided is written where it applies, in the repository's words.
#[test]
fn no_file_cites_an_issue_number() {
    let offences = offending_lines(|_, line, _| cites_an_issue(line));
    assert_eq!(offences, Vec::<String>::new(), "issue numbers");
}

/// No prose — a doc, or a comment in code — speaks of "the seed": the documents the project
/// started from are not in the repository, so each such line says the behaviour it meant.
#[test]
fn no_prose_speaks_of_the_seed() {
    let offences = offending_lines(|_, _, prose| prose.is_some_and(says_seed));
    assert_eq!(offences, Vec::<String>::new(), "\"seed\" in prose");
}

/// The scanners tell citations from what only looks like one: globs and regexes of `.md`,
/// URLs, CSS colours, HTML entities and Rust attributes are not citations, and a word that
/// merely holds "seed" is not the word.
#[test]
fn the_tidy_scanners_tell_citations_from_look_alikes() {
    assert_eq!(
        md_citations(
            "see docs/design/turns.md §2, ARCHITECTURE.md, *.md, /\\.md$/ and https://x.org/A.md"
        ),
        vec!["docs/design/turns.md", "ARCHITECTURE.md"]
    );
    let line = r#"write("notes.md"); write("a/b.md"); // ENGINE.md, doc.md and docs/x.md"#;
    assert_eq!(
        citations(line, prose_of(Path::new("a.rs"), line)),
        vec!["ENGINE.md", "docs/x.md"]
    );
    let issues: Vec<bool> = [
        "issue 41",
        "Issues 39–40",
        "fixed in #41.",
        "(#7)",
        "color: #fff; #abc123",
        "&#65;&#x42;",
        "#[derive(Debug)]",
        "see the issue at hand",
        "href=\"#section\"",
        "a#1",
    ]
    .iter()
    .map(|l| cites_an_issue(l))
    .collect();
    assert_eq!(
        issues,
        vec![true, true, true, true, false, false, false, false, false, false]
    );
    let seeds: Vec<bool> = [
        "the seed's way",
        "Seeds in corpus",
        "seeded",
        "next_value_seed",
        "ModelSeed",
    ]
    .iter()
    .map(|l| says_seed(l))
    .collect();
    assert_eq!(seeds, vec![true, true, false, false, false]);
    assert_eq!(
        prose_of(Path::new("a.rs"), "let url = \"http://x\"; // the comment"),
        Some(" the comment")
    );
    assert_eq!(prose_of(Path::new("a.rs"), "let seed = 1;"), None);
    assert_eq!(prose_of(Path::new("a.md"), "text"), Some("text"));
}

/// The repository's root.
fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Extensions of the text files the tidy reads; besides them, the scripts in `.ci/`.
const TIDY_EXTENSIONS: [&str; 8] = ["rs", "md", "js", "sql", "toml", "sh", "yml", "yaml"];

/// Whether the tidy reads `path` (relative to the root): a text file of ours, not a test corpus
/// or fixture (their text is input, kept as found), and not this file, which spells out what
/// it refuses.
fn tidy_reads(path: &Path) -> bool {
    let text = path.to_string_lossy();
    let ours = path.starts_with(".ci")
        || path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| TIDY_EXTENSIONS.contains(&e));
    let corpus = text.starts_with("tests/fixtures/")
        || text.starts_with("fuzz/corpus/")
        || text.contains("proptest-regressions/")
        || text.contains("/snapshots/")
        || text.ends_with(".snap");
    ours && !corpus && text != "tests/suite/docs.rs"
}

/// The files the tidy reads, relative to the root: `git ls-files` where the tree is a git
/// checkout, else a walk that skips build output.
fn tidy_files() -> Vec<PathBuf> {
    let root = repo_root();
    let listed = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| {
            out.stdout
                .split(|b| *b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
                .collect::<Vec<_>>()
        });
    let mut files = listed.unwrap_or_else(|| {
        let mut found = Vec::new();
        walk(root, Path::new(""), &mut found);
        found
    });
    files.retain(|p| tidy_reads(p) && root.join(p).is_file());
    files.sort();
    files
}

/// Every file under `root/dir`, skipping `.git` and build output.
fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(root.join(dir))
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = entry.file_name();
        let path = dir.join(&name);
        match entry.file_type() {
            Ok(t)
                if t.is_dir()
                    && !matches!(name.to_str(), Some(".git" | "target" | "node_modules")) =>
            {
                walk(root, &path, out);
            }
            Ok(t) if t.is_file() => out.push(path),
            _ => {}
        }
    }
}

/// Every `file:line: text` of the tidy's files for which `offends(file, line, prose)` holds,
/// where `prose` is the line's prose part (see [`prose_of`]).
fn offending_lines(offends: impl Fn(&Path, &str, Option<&str>) -> bool) -> Vec<String> {
    let root = repo_root();
    let mut offences = Vec::new();
    for file in tidy_files() {
        let Ok(text) = std::fs::read_to_string(root.join(&file)) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if offends(&file, line, prose_of(&file, line)) {
                offences.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    offences
}

/// The prose of a line: a Rust or JavaScript line's comment (identifiers are code, not
/// words), any other file's whole line.
fn prose_of<'l>(file: &Path, line: &'l str) -> Option<&'l str> {
    let code = matches!(file.extension().and_then(|e| e.to_str()), Some("rs" | "js"));
    if !code {
        return Some(line);
    }
    let bytes = line.as_bytes();
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if in_string => i += 1,
            b'"' => in_string = !in_string,
            b'/' if !in_string && bytes.get(i + 1) == Some(&b'/') => return line.get(i + 2..),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The documents a line cites: each `name.md`, bare or as a path, that is not part of a URL, a
/// glob or a pattern (a name is needed before `.md`).
fn md_citations(line: &str) -> Vec<&str> {
    let path_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/');
    let mut cited = Vec::new();
    for (at, _) in line.match_indices(".md") {
        let end = at + 3;
        if line[end..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            continue;
        }
        let start = line[..at]
            .char_indices()
            .rev()
            .take_while(|(_, c)| path_char(*c))
            .last()
            .map_or(at, |(i, _)| i);
        let token = &line[start..end];
        let name = token.rsplit('/').next().unwrap_or(token);
        let url = line[..start].ends_with(':');
        if name.len() > 3 && !url {
            cited.push(token);
        }
    }
    cited
}

/// The documents a line cites: a capitalised name (`README.md`, `docs/X.md`) wherever it
/// stands, and a path with a directory (`docs/design/turns.md`) in the line's prose. A bare
/// lower-case name (a tool's `doc.md`, a test's `notes.md`) names a file of its context, not
/// a document of the repository.
fn citations<'l>(line: &'l str, prose: Option<&'l str>) -> Vec<&'l str> {
    let capitalised = |cited: &&str| {
        cited
            .rsplit('/')
            .next()
            .is_some_and(|name| name.starts_with(|c: char| c.is_ascii_uppercase()))
    };
    let mut cited: Vec<&str> = md_citations(line).into_iter().filter(capitalised).collect();
    cited.extend(
        prose
            .map(md_citations)
            .unwrap_or_default()
            .into_iter()
            .filter(|c| !capitalised(c) && c.trim_start_matches('/').contains('/')),
    );
    cited
}

/// Whether the repository holds `cited`, read beside `file` or from the root.
fn holds(root: &Path, file: &Path, cited: &str) -> bool {
    let rel = cited.trim_start_matches('/');
    let beside = file.parent().map(|dir| root.join(dir).join(rel));
    let Ok(canonical_root) = root.canonicalize() else {
        return false;
    };
    beside
        .into_iter()
        .chain([root.join(rel)])
        .filter_map(|p| p.canonicalize().ok())
        .any(|p| p.starts_with(&canonical_root) && p.is_file())
}

/// Whether a line cites a section of the outside reference of the original server's behaviour
/// (`ref §9.4`, `reference §0.9`): what it says is written where it applies.
fn cites_the_reference(line: &str) -> bool {
    let lower = line.to_lowercase();
    ["ref §", "reference §", "(§", ", §"]
        .iter()
        .any(|cite| lower.contains(cite))
}

/// Whether a line cites an issue by number: `issue 41`, `issues 39–40`, `issue #41`, or `#41`
/// standing alone (not an HTML entity, a colour, an anchor or an attribute).
fn cites_an_issue(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let word_char = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let named = lower.match_indices("issue").any(|(at, _)| {
        let before = lower[..at].chars().next_back();
        let rest = lower[at + 5..]
            .strip_prefix('s')
            .unwrap_or(&lower[at + 5..]);
        let gap = rest.trim_start();
        before.is_none_or(|c| !word_char(c))
            && gap.len() < rest.len()
            && gap
                .trim_start_matches('#')
                .starts_with(|c: char| c.is_ascii_digit())
    });
    let hashed = lower.match_indices('#').any(|(at, _)| {
        let before = lower[..at].chars().next_back();
        let digits = lower[at + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .count();
        let after = lower[at + 1 + digits..].chars().next();
        before.is_none_or(|c| !word_char(c) && c != '&' && c != '#')
            && digits > 0
            && after.is_none_or(|c| !word_char(c))
    });
    named || hashed
}

/// Whether `prose` holds the word "seed" or "seeds" (any case), not a word that contains it.
fn says_seed(prose: &str) -> bool {
    prose
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|word| word.eq_ignore_ascii_case("seed") || word.eq_ignore_ascii_case("seeds"))
}
