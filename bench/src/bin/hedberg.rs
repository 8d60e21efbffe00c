//! Hedberg's figures: edits on a 10,000-line file, and glob and regex matching over 100,000 paths.
//!
//! Run with `cargo run --release -p rummy-bench --bin hedberg`.

use std::hint::black_box;
use std::process::ExitCode;

use rummy_bench::{report, sample};
use rummy_text::hedberg::{self, apply, parse_edit, EditAttrs, Pattern};

/// Lines in the edited file.
const FILE_LINES: usize = 10_000;

/// Paths matched per run.
const PATHS: usize = 100_000;

/// A 10,000-line source file whose every line is distinct.
fn file() -> String {
    (0..FILE_LINES)
        .map(|i| match i % 4 {
            0 => format!("fn item_{i}(x: u32) -> u32 {{\n"),
            1 => format!("    let y = x * {i} + 7;\n"),
            2 => format!("    y.wrapping_sub({i})\n"),
            _ => format!("}} // end of item_{}\n", i - 3),
        })
        .collect()
}

/// A SEARCH/REPLACE body with one block at each of `lines` (0-based, each a `let` line).
fn merge_body(lines: &[usize]) -> String {
    lines
        .iter()
        .map(|&i| {
            format!(
                "<<<<<<< SEARCH\n    let y = x * {i} + 7;\n    y.wrapping_sub({})\n=======\n    let y = x * {i} + 8;\n    y.wrapping_add({})\n>>>>>>> REPLACE\n",
                i + 1,
                i + 1
            )
        })
        .collect()
}

/// A headered unified diff with one hunk (3 lines of context each side) at each of `lines`.
fn diff_body(text: &str, lines: &[usize]) -> String {
    let all: Vec<&str> = text.lines().collect();
    let mut out = String::from("--- a/big.rs\n+++ b/big.rs\n");
    for &i in lines {
        out.push_str(&format!("@@ -{} ,7 +{},7 @@\n", i - 2, i - 2).replace(" ,", ","));
        for line in &all[i - 3..i] {
            out.push_str(&format!(" {line}\n"));
        }
        out.push_str(&format!("-{}\n+{} // changed\n", all[i], all[i]));
        for line in &all[i + 1..i + 4] {
            out.push_str(&format!(" {line}\n"));
        }
    }
    out
}

/// 100,000 paths: project files at several depths and scheme entries.
fn paths() -> Vec<String> {
    (0..PATHS)
        .map(|i| match i % 5 {
            0 => format!("src/mod_{}/file_{i}.rs", i % 97),
            1 => format!("src/mod_{}/deep/er/file_{i}.rs", i % 89),
            2 => format!("tests/case_{i}.test.js"),
            3 => format!("known://people/p{}/note_{i}", i % 101),
            _ => format!("docs/page_{i}.md"),
        })
        .collect()
}

/// Times an edit, after checking once that it applies.
fn bench_edit(name: &str, text: &str, body: &str) -> Result<(), String> {
    let attrs = EditAttrs::default();
    let applied = apply("big.rs", text, &parse_edit(body, &attrs), 4).map_err(|e| e.to_string())?;
    if applied.content == text || !applied.warnings.is_empty() {
        return Err(format!("{name}: the edit did not apply cleanly"));
    }
    let times = sample(20, 200, || {
        let edit = parse_edit(black_box(body), &attrs);
        let _ = black_box(apply("big.rs", black_box(text), &edit, 4));
    });
    report(name, &times, "<= 2 ms");
    Ok(())
}

/// Times matching every path against `pattern`, compiled once and through the shared cache.
fn bench_paths(
    label: &str,
    pattern: &str,
    paths: &[String],
    expected: usize,
) -> Result<(), String> {
    let compiled = Pattern::compile(pattern);
    let hits = paths.iter().filter(|p| compiled.is_match(p)).count();
    if hits != expected {
        return Err(format!("{label}: {hits} matches, expected {expected}"));
    }
    let times = sample(3, 50, || {
        black_box(
            paths
                .iter()
                .filter(|p| compiled.is_match(black_box(p)))
                .count(),
        );
    });
    report(
        &format!("{label}: 100,000 paths, compiled"),
        &times,
        "<= 20 ms",
    );
    let times = sample(3, 50, || {
        black_box(
            paths
                .iter()
                .filter(|p| hedberg::hedmatch(black_box(pattern), p))
                .count(),
        );
    });
    report(
        &format!("{label}: 100,000 paths, hedmatch"),
        &times,
        "<= 20 ms",
    );
    Ok(())
}

fn run() -> Result<(), String> {
    let text = file();
    bench_edit(
        "edit: 3-block SEARCH/REPLACE, 10,000 lines",
        &text,
        &merge_body(&[1_001, 5_001, 9_001]),
    )?;
    bench_edit(
        "edit: 5-hunk unified diff, 10,000 lines",
        &text,
        &diff_body(&text, &[1_001, 3_001, 5_001, 7_001, 9_001]),
    )?;
    let paths = paths();
    bench_paths("glob src/**/*.rs", "src/**/*.rs", &paths, 40_000)?;
    bench_paths("glob known://people/*", "known://people/*", &paths, 20_000)?;
    bench_paths("regex /\\.test\\.js$/", "/\\.test\\.js$/", &paths, 20_000)?;
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("hedberg bench failed: {error}");
            ExitCode::FAILURE
        }
    }
}
