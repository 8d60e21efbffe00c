//! Tidy checks that keep the layering true: the crates under core/ (text, provider, store, the domain) depend downwards only and have no async runtime, network or clock, no two modules of a crate depend on each other, SQL is written only in the store, and every source file opens with a `//!` doc line.

mod source;

use source::{crate_files, cycles, module_graph, CRATES};
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

/// Every crate `start` reaches in the lock, not following `skip`.
fn reachable(graph: &BTreeMap<String, Vec<String>>, start: &str, skip: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![start.to_owned()];
    while let Some(name) = stack.pop() {
        if name != skip && seen.insert(name.clone()) {
            stack.extend(graph.get(&name).cloned().unwrap_or_default());
        }
    }
    seen
}

/// The crates under `core/`: the pure layers, bottom first.
const PURE: [&str; 4] = ["rummy-text", "rummy-provider", "rummy-store", "rummy-core"];

/// No crate under `core/` (`rummy-text`, `rummy-provider`, `rummy-store`, `rummy-core`) reaches
/// actix or reqwest, directly or through any dependency, and tokio only through `rummy-pg`,
/// whose PostgreSQL client drives its sockets on a runtime of its own behind a synchronous
/// connection.
#[test]
fn core_has_no_runtime_dependencies() {
    let graph = lock_graph();
    assert!(
        reachable(&graph, "rummy-core", "").contains("diesel"),
        "the graph was read"
    );
    for name in PURE {
        let all = reachable(&graph, name, "");
        for forbidden in ["actix", "actix-rt", "actix-web", "reqwest", "hyper"] {
            assert!(!all.contains(forbidden), "{name} depends on {forbidden}");
        }
        let without_pg = reachable(&graph, name, "rummy-pg");
        assert!(
            !without_pg.contains("tokio"),
            "{name} depends on tokio other than through rummy-pg"
        );
    }
}

/// The crates depend downwards only: `rummy-text` and `rummy-provider` below `rummy-store`,
/// below `rummy-core`, below `rummy-actors`, below `rummy` (the server); text and provider know
/// nothing of each other or of a database, and only the store (and what sits on it) reaches
/// diesel.
#[test]
fn the_crates_depend_downwards_only() {
    let graph = lock_graph();
    let above = ["rummy-store", "rummy-core", "rummy-actors", "rummy"];
    let unreachable = [
        (
            "rummy-text",
            &["rummy-provider", "rummy-pg", "diesel"][..],
            &above[..],
        ),
        (
            "rummy-provider",
            &["rummy-text", "rummy-pg", "diesel"],
            &above,
        ),
        ("rummy-store", &[], &above[1..]),
        ("rummy-core", &[], &above[2..]),
        ("rummy-actors", &[], &above[3..]),
    ];
    let mut found = Vec::new();
    for (name, beside, upper) in unreachable {
        let reached = reachable(&graph, name, "");
        assert!(reached.contains("serde"), "{name} was read from the lock");
        for other in beside.iter().chain(upper) {
            if reached.contains(*other) {
                found.push(format!("{name} → {other}"));
            }
        }
    }
    for (upper, lower) in [
        ("rummy-store", "rummy-text"),
        ("rummy-store", "rummy-provider"),
        ("rummy-core", "rummy-store"),
        ("rummy-actors", "rummy-core"),
        ("rummy", "rummy-actors"),
    ] {
        assert!(
            reachable(&graph, upper, "").contains(lower),
            "{upper} sits on {lower}"
        );
    }
    assert_eq!(found, Vec::<String>::new(), "dependencies pointing up");
}

/// `rummy-protocol`, which clients depend on, holds data only: it reaches serde and nothing of
/// the server (no store, no runtime), so a client never pulls SQLite in.
#[test]
fn the_protocol_depends_on_serde_alone() {
    let graph = lock_graph();
    let mut seen = BTreeSet::new();
    let mut stack = vec!["rummy-protocol".to_owned()];
    while let Some(name) = stack.pop() {
        if seen.insert(name.clone()) {
            stack.extend(graph.get(&name).cloned().unwrap_or_default());
        }
    }
    assert!(seen.contains("serde_json"), "the graph was read");
    for forbidden in ["rummy-core", "diesel", "libsqlite3-sys", "tokio", "actix"] {
        assert!(
            !seen.contains(forbidden),
            "rummy-protocol depends on {forbidden}"
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
        "src", "protocol", "core", "actors", "client", "testkit", "tests", "bench", "fuzz",
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

/// No two top-level modules of a crate depend on each other, directly or through others: the
/// `crate::`/`super::` paths of every non-test file form no cycle.
#[test]
fn modules_form_no_cycles() {
    let mut found = Vec::new();
    let mut report = String::new();
    for (name, root_file) in CRATES {
        let files = crate_files(root_file);
        assert!(!files.is_empty(), "{root_file} has modules");
        let graph = module_graph(&files);
        for cycle in cycles(&graph) {
            report.push_str(&format!("{name}: a cycle through {}\n", cycle.join(", ")));
            for from in &cycle {
                for (to, by) in &graph[from] {
                    if cycle.contains(to) {
                        report.push_str(&format!("    {from} → {to}: {by:?}\n"));
                    }
                }
            }
            found.push((name, cycle));
        }
    }
    assert_eq!(
        found,
        Vec::<(&str, Vec<String>)>::new(),
        "module cycles:\n{report}"
    );
}

/// What builds or runs SQL: the diesel schema, the query DSL, raw SQL.
const SQL_MARKERS: [&str; 13] = [
    "schema::",
    "diesel::prelude",
    "diesel::dsl",
    "diesel::insert_into",
    "diesel::update",
    "diesel::delete",
    "diesel::replace_into",
    "diesel::select",
    "diesel::sql_types",
    "sql_query",
    "QueryDsl",
    "ExpressionMethods",
    "batch_execute",
];

/// Where SQL may be written outside `core/store/src/`: the schema, the connection set-up, and
/// the hedberg pattern functions registered on every connection (no table is touched there).
const SQL_HOMES: [&str; 4] = [
    "core/store/src/",
    "core/store/src/schema.rs",
    "core/store/src/db.rs",
    "core/store/src/hedberg_sql.rs",
];

/// Queries are named store functions: outside tests, SQL (the schema, diesel's query DSL, raw
/// SQL) is written only under `core/store/src/` (and the schema and connection set-up).
#[test]
fn sql_lives_in_the_store() {
    let mut offenders = BTreeSet::new();
    for (_, root_file) in CRATES {
        for file in crate_files(root_file) {
            if SQL_HOMES.iter().any(|home| file.file.starts_with(home)) {
                continue;
            }
            if SQL_MARKERS.iter().any(|m| file.code.contains(m)) {
                offenders.insert(file.file);
            }
        }
    }
    assert_eq!(offenders, BTreeSet::new(), "SQL outside core/store/src");
}

/// The crates under `core/` read no clock: outside tests they never call `SystemTime::now` or
/// `Instant::now`; the time is a parameter.
#[test]
fn core_reads_no_clock() {
    let readers: Vec<String> = CRATES
        .iter()
        .filter(|(name, _)| PURE.contains(name))
        .flat_map(|(_, root_file)| crate_files(root_file))
        .filter(|f| {
            ["SystemTime::now", "Instant::now"]
                .iter()
                .any(|m| f.code.contains(m))
        })
        .map(|f| f.file)
        .collect();
    assert_eq!(readers, Vec::<String>::new());
}

/// The source reader sees paths as the compiler does: not in comments, strings or test items;
/// `use` groups and `super::` resolved from the file's module.
#[test]
fn the_source_reader_finds_only_code_paths() {
    let text = r#"//! crate::a in a doc line
use crate::{b::X, c::{self, Y}};
use super::super::d;
/* crate::e in a block comment */
fn f() -> char { let _ = "crate::e"; let _ = r"crate::e"; crate::g::h(); '"' }
fn l<'a>(x: &'a str) -> &'a str { x }
#[cfg(test)]
mod tests { use crate::i; }
#[cfg(all(test, target_os = "linux"))]
fn j() { crate::j::k(); }
"#;
    let file = source::ModuleFile {
        file: "m/n/o.rs".into(),
        path: vec!["m".into(), "n".into(), "o".into()],
        code: source::without_tests(&source::code_of(text)),
    };
    let paths: Vec<String> = source::named_paths(&file)
        .iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(paths, ["b", "c", "g", "m::d"]);
}
