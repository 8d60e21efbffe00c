//! Tidy checks that keep the layering true: core has no async runtime or network, and every source file opens with a `//!` doc line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Package → dependency names, read from Cargo.lock.
fn lock_graph() -> BTreeMap<String, Vec<String>> {
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).expect("Cargo.lock is committed");
    let mut graph = BTreeMap::new();
    for block in lock.split("[[package]]").skip(1) {
        let name = block
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .map(|n| n.trim_end_matches('"').to_owned())
            .unwrap_or_default();
        let deps = block
            .split("dependencies = [")
            .nth(1)
            .map(|d| d.split(']').next().unwrap_or_default())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                l.trim()
                    .trim_matches(|c| c == '"' || c == ',')
                    .split(' ')
                    .next()
                    .map(str::to_owned)
            })
            .filter(|l| !l.is_empty())
            .collect();
        graph.insert(name, deps);
    }
    graph
}

/// `rummy-core` reaches neither actix, tokio nor reqwest, directly or through any dependency.
#[test]
fn core_has_no_runtime_dependencies() {
    let graph = lock_graph();
    let mut seen = BTreeSet::new();
    let mut stack = vec!["rummy-core".to_owned()];
    while let Some(name) = stack.pop() {
        if seen.insert(name.clone()) {
            stack.extend(graph.get(&name).cloned().unwrap_or_default());
        }
    }
    assert!(seen.contains("diesel"), "the graph was read");
    for forbidden in [
        "actix",
        "actix-rt",
        "actix-web",
        "tokio",
        "reqwest",
        "hyper",
    ] {
        assert!(
            !seen.contains(forbidden),
            "rummy-core depends on {forbidden}"
        );
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir()
            && path
                .file_name()
                .is_some_and(|n| n != "target" && n != ".git")
        {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every Rust file starts with a `//!` line saying what it is for.
#[test]
fn every_file_starts_with_a_doc_line() {
    let mut files = Vec::new();
    for dir in [
        "src", "core", "actors", "client", "testkit", "tests", "bench",
    ] {
        rust_files(&root().join(dir), &mut files);
    }
    assert!(files.len() > 20);
    let missing: Vec<_> = files
        .iter()
        .filter(|f| {
            !std::fs::read_to_string(f)
                .unwrap_or_default()
                .starts_with("//!")
        })
        .collect();
    assert!(
        missing.is_empty(),
        "files without a //! first line: {missing:?}"
    );
}

/// Only the session module imports actix-web-actors, so moving off it stays local.
#[test]
fn only_the_session_imports_actix_web_actors() {
    let mut files = Vec::new();
    for dir in ["src", "core", "actors"] {
        rust_files(&root().join(dir), &mut files);
    }
    let importers: Vec<_> = files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .contains("actix_web_actors")
        })
        .map(|f| f.strip_prefix(root()).unwrap_or(f).display().to_string())
        .collect();
    assert_eq!(importers, vec!["actors/src/session/mod.rs".to_owned()]);
}

/// A lint is silenced only with `#[expect(…, reason = "…")]`: the reason is written down, and
/// the compiler says when the silence is no longer needed.
#[test]
fn lints_are_silenced_with_a_reason() {
    let mut files = Vec::new();
    for dir in [
        "src", "core", "actors", "testkit", "tests", "bench", "client",
    ] {
        rust_files(&root().join(dir), &mut files);
    }
    let allow = ["#[", "allow("].concat();
    let inner_allow = ["#![", "allow("].concat();
    let offenders: Vec<_> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            text.contains(&allow) || text.contains(&inner_allow)
        })
        .map(|f| f.strip_prefix(root()).unwrap_or(f).display().to_string())
        .collect();
    assert!(offenders.is_empty(), "#[allow] in {offenders:?}");
}
