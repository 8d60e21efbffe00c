//! Applying edits: matching order, healing, ambiguity, atomic failure, line endings, Unicode, empty texts.

use pretty_assertions::assert_eq;

use super::edit;
use crate::hedberg::messages as msg;
use crate::hedberg::{apply, Applied, Block, BlockDiagnostic, Edit, EditFailure, Problem};

/// A merge-conflict body replacing `search` with `replace`.
fn merge(search: &str, replace: &str) -> String {
    format!("<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE")
}

/// The new content and warnings of an edit, or its failure text.
type Outcome = Result<(String, Vec<String>), String>;

/// Runs each (name, text, body) and compares content and warnings (or failure) with the expectation.
fn check(cases: Vec<(&str, &str, String, Outcome)>) {
    let got: Vec<(&str, Outcome)> = cases
        .iter()
        .map(|(name, text, body, _)| (*name, edit(text, body).map(|a| (a.content, a.warnings))))
        .collect();
    let want: Vec<(&str, Outcome)> = cases.into_iter().map(|(name, _, _, w)| (name, w)).collect();
    assert_eq!(got, want);
}

/// A success with no warnings.
fn clean(content: &str) -> Outcome {
    Ok((content.to_owned(), Vec::new()))
}

/// A success with warnings.
fn warned(content: &str, warnings: &[&str]) -> Outcome {
    Ok((
        content.to_owned(),
        warnings.iter().map(|w| (*w).to_owned()).collect(),
    ))
}

/// The matching order: exact, escape-healed, line-anchored, whitespace-tolerant with re-indentation.
#[test]
fn matching_order_and_healing() {
    let indent_healed = "Indentation healing applied: the entry is indented with 'ssss' where your \
SEARCH text used '', so the replacement was re-indented to match. Copy indentation exactly in future edits.";
    check(vec![
        ("exact", "a\nb\nc\n", merge("b", "B"), clean("a\nB\nc\n")),
        ("exact inside a line", "let port = 3000;\n", merge("3000", "8080"), clean("let port = 8080;\n")),
        ("escapes healed", "f(a.b)\n", merge(r"f\(a\.b\)", "g()"), warned("g()\n", &[msg::ESCAPES_HEALED])),
        (
            "trailing whitespace ignored",
            "a  \nb\t\nc\n",
            merge("a\nb", "X\nY"),
            warned("X\nY\nc\n", &[msg::WHITESPACE_HEALED]),
        ),
        (
            "blank lines skipped",
            "a\n\nb\nc\n",
            merge("a\nb", "z"),
            warned("z\nc\n", &[msg::WHITESPACE_HEALED]),
        ),
        (
            "indentation healed, relative indentation kept",
            "fn main() {\n    let x = 1;\n    let y = 2;\n}\n",
            merge("let x = 1;\nlet y = 2;", "let x = 10;\nif x {\n    y();\n}"),
            warned(
                "fn main() {\n    let x = 10;\n    if x {\n        y();\n    }\n}\n",
                &[indent_healed],
            ),
        ),
        (
            "over-indented SEARCH, dedented lines keep their offset",
            "if a:\n  b()\nc()\n",
            merge("    if a:\n      b()\n  c()", "    if z:\n      b()\n  d()"),
            warned(
                "if z:\n  b()\nd()\n",
                &["Indentation healing applied: the entry is indented with '' where your SEARCH \
text used 'ssss', so the replacement was re-indented to match. Copy indentation exactly in future edits."],
            ),
        ),
        ("whole lines removed with their break", "a\nb\nc\n", merge("b", ""), clean("a\nc\n")),
        ("last line removed", "a\nb", merge("b", ""), clean("a")),
    ]);
}

/// Several matches: the first (or the one nearest a hunk's line) is used, and the warning says which of how many.
#[test]
fn ambiguity_is_reported() {
    let text = "x = 1\ny\nx = 1\nz\nx = 1\n";
    check(vec![
        (
            "first of three",
            text,
            merge("x = 1", "x = 2"),
            warned(
                "x = 2\ny\nx = 1\nz\nx = 1\n",
                &["The SEARCH text matched 3 places (lines 1, 3, 5); the edit was applied at line 1. \
Include more unchanged lines around the change to make it unique."],
            ),
        ),
        (
            "a hunk's line number chooses",
            text,
            "@@ -3,1 +3,1 @@\n-x = 1\n+x = 2\n".to_owned(),
            warned(
                "x = 1\ny\nx = 2\nz\nx = 1\n",
                &["The SEARCH text matched 3 places (lines 1, 3, 5); the edit was applied at line 3. \
Include more unchanged lines around the change to make it unique."],
            ),
        ),
        (
            "two blocks, warnings name their block",
            "a\na\nb\n",
            format!("{}\n{}", merge("a", "A"), merge("b", "B")),
            warned(
                "A\na\nB\n",
                &["Block 1 of 2 (SEARCH starting `a`): The SEARCH text matched 2 places (lines 1, 2); \
the edit was applied at line 1. Include more unchanged lines around the change to make it unique."],
            ),
        ),
        (
            "sed reports how many it changed",
            "a a\na\n",
            "s/a/b/".to_owned(),
            warned("b a\nb\n", &["The sed command replaced 2 matches, on lines 1, 2."]),
        ),
        (
            "sed with g",
            "a a\na\n",
            "s/a/b/g".to_owned(),
            warned("b b\nb\n", &["The sed command replaced 3 matches, on lines 1, 2."]),
        ),
    ]);
}

/// Not found: an error naming the block; with several blocks nothing applies and every failure is listed.
#[test]
fn failures_are_atomic_and_per_block() {
    let header = |failed: usize, total: usize| {
        msg::fill(
            msg::FAILED,
            &[
                ("failed", &failed.to_string()),
                ("total", &total.to_string()),
            ],
        )
    };
    check(vec![
        (
            "one block",
            "a\n",
            merge("zzz", "y"),
            Err(format!("{}\nBlock 1 of 1 (SEARCH starting `zzz`): {}", header(1, 1), msg::NOT_FOUND)),
        ),
        (
            "first line found, the rest differs",
            "a\nb\nc\n",
            merge("b\nX", "y"),
            Err(format!(
                "{}\nBlock 1 of 1 (SEARCH starting `b`): {} Its first line occurs at line 2, but the lines after it differ.",
                header(1, 1),
                msg::NOT_FOUND
            )),
        ),
        (
            "blocks 1 and 3 of 3 fail, block 2 would have applied",
            "a\nb\n",
            format!("{}\n{}\n{}", merge("x", "1"), merge("a", "2"), merge("y", "3")),
            Err(format!(
                "{}\nBlock 1 of 3 (SEARCH starting `x`): {}\nBlock 3 of 3 (SEARCH starting `y`): {}",
                header(2, 3),
                msg::NOT_FOUND,
                msg::NOT_FOUND
            )),
        ),
        (
            "markers without a block",
            "a\n",
            "<<<<<<< SEARCH\na\n>>>>>>> REPLACE".to_owned(),
            Err(format!("{}\n{}", msg::NOTHING_CHANGED, msg::NO_BLOCKS)),
        ),
    ]);
}

/// The structured failure: per-block diagnostics with their problem.
#[test]
fn failure_value() {
    let edit = Edit::Blocks(vec![Block::literal("a", "A"), Block::literal("b\nq", "B")]);
    let got = apply("p", "a\nb\n", &edit, 4);
    let want = Err(EditFailure {
        blocks: 2,
        diagnostics: vec![BlockDiagnostic {
            block: 2,
            problem: Problem::NotFound {
                first_line_at: Some(2),
            },
            message: format!(
                "Block 2 of 2 (SEARCH starting `b`): {} Its first line occurs at line 2, but the lines after it differ.",
                msg::NOT_FOUND
            ),
        }],
    });
    assert_eq!(got, want);
}

/// A successful edit carries the content, a unified diff with 3 lines of context, and token counts.
#[test]
fn applied_value() {
    let text = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
    let got = apply(
        "src/n.txt",
        text,
        &Edit::Blocks(vec![Block::literal("5", "five")]),
        2,
    );
    let want = Ok(Applied {
        content: "1\n2\n3\n4\nfive\n6\n7\n8\n9\n".to_owned(),
        patch: "--- src/n.txt\n+++ src/n.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
            .to_owned(),
        tokens_before: 9,
        tokens_after: 11,
        warnings: Vec::new(),
    });
    assert_eq!(got, want);
}

/// CRLF texts stay CRLF; texts without a final line break keep that; the diff says so.
#[test]
fn line_endings() {
    check(vec![
        (
            "CRLF kept",
            "a\r\nb\r\nc\r\n",
            merge("b", "B1\nB2"),
            clean("a\r\nB1\r\nB2\r\nc\r\n"),
        ),
        (
            "CRLF block on CRLF text",
            "a\r\nb\r\n",
            "<<<<<<< SEARCH\r\na\r\nb\r\n=======\r\nx\r\n>>>>>>> REPLACE".to_owned(),
            clean("x\r\n"),
        ),
        (
            "CRLF full replacement",
            "old\r\n",
            "x\ny\n".to_owned(),
            clean("x\r\ny\r\n"),
        ),
        (
            "CRLF sed with $",
            "a =\r\nb\r\n",
            "s/=$/= 1/".to_owned(),
            clean("a = 1\r\nb\r\n"),
        ),
        (
            "no final break kept",
            "a\nb",
            merge("b", "c"),
            clean("a\nc"),
        ),
    ]);
    let patch = edit("a\nb", &merge("b", "c")).map(|a| a.patch);
    assert_eq!(
        patch,
        Ok("--- a.txt\n+++ a.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n".to_owned())
    );
}

/// Unicode text, and empty texts: filled by an empty SEARCH, a replace-only block, or a full replacement.
#[test]
fn unicode_and_empty() {
    check(vec![
        ("unicode exact", "naïve café\n日本語\n", merge("日本語", "中文"), clean("naïve café\n中文\n")),
        (
            "unicode whitespace-tolerant",
            "\u{3000}élan vital\n",
            merge("élan  vital", "ímpetu"),
            warned(
                "\u{3000}ímpetu\n",
                &["Indentation healing applied: the entry is indented with '\u{3000}' where your \
SEARCH text used '', so the replacement was re-indented to match. Copy indentation exactly in future edits."],
            ),
        ),
        ("empty SEARCH fills an empty text", "", merge("", "new"), clean("new")),
        ("replace-only on an empty text", "", "=======\nx\n>>>>>>> REPLACE".to_owned(), clean("x")),
        ("full replacement of an empty text", "", "hello\n".to_owned(), clean("hello\n")),
        ("empty SEARCH appends", "a", merge("", "new"), warned("a\nnew\n", &[msg::APPENDED])),
        ("hunk insertion at its line", "a\nb\n", "@@ -1,0 +2,1 @@\n+new\n".to_owned(), clean("a\nnew\nb\n")),
        (
            "search in an empty text",
            "",
            merge("x", "y"),
            Err(format!(
                "{}\nBlock 1 of 1 (SEARCH starting `x`): {}",
                msg::fill(msg::FAILED, &[("failed", "1"), ("total", "1")]),
                msg::NOT_FOUND
            )),
        ),
    ]);
}

/// Every format applies end to end, including a multi-hunk diff whose line numbers shift.
#[test]
fn every_format_applies() {
    let text = "alpha\nbeta\ngamma\ndelta\n";
    check(vec![
        ("merge conflict", text, merge("beta", "BETA"), clean("alpha\nBETA\ngamma\ndelta\n")),
        ("replace-only", text, "=======\nnew\n>>>>>>> REPLACE".to_owned(), clean("new")),
        (
            "unified diff, two hunks",
            text,
            "--- a/t\n+++ b/t\n@@ -1,2 +1,3 @@\n alpha\n+inserted\n beta\n@@ -4,1 +5,1 @@\n-delta\n+DELTA\n".to_owned(),
            clean("alpha\ninserted\nbeta\ngamma\nDELTA\n"),
        ),
        ("sed", text, "s|gamma|GAMMA|;s#^d#D#".to_owned(), clean("alpha\nbeta\nGAMMA\nDelta\n")),
        ("claude", text, "<old_text>alpha</old_text><new_text>ALPHA</new_text>".to_owned(), clean("ALPHA\nbeta\ngamma\ndelta\n")),
        ("json", text, r#"{"search":"beta\ngamma","replace":"bg"}"#.to_owned(), clean("alpha\nbg\ndelta\n")),
        ("loose json", text, r#"{search="delta", replace=""}"#.to_owned(), clean("alpha\nbeta\ngamma\n")),
        ("full replacement", text, "omega\n".to_owned(), clean("omega\n")),
        (
            "sed regex that does not compile is literal",
            "call a.b(\n",
            r"s/a.b(/x/".to_owned(),
            warned(
                "call x\n",
                &["The sed search is not a valid regular expression (unclosed group); it was matched as literal text."],
            ),
        ),
        ("sed with groups", "x=1\n", r"s/(\w+)=(\d+)/\2=\1/".to_owned(), clean("1=x\n")),
    ]);
}
