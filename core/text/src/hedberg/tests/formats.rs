//! The eight edit formats: what each body is recognised as and the blocks read from it.

use pretty_assertions::assert_eq;

use super::no_attrs;
use crate::hedberg::EditFormat::{
    Attributes, ClaudeXml, FullReplacement, Json, MergeConflict, ReplaceOnly, Sed, UnifiedDiff,
};
use crate::hedberg::{recognise, Block, Edit, EditAttrs, EditFormat};

/// One body, its attributes, and the format and edit it must give.
type Case = (&'static str, &'static str, EditAttrs, EditFormat, Edit);

/// A case with no attributes.
fn case(name: &'static str, body: &'static str, format: EditFormat, edit: Edit) -> Case {
    (name, body, no_attrs(), format, edit)
}

/// Checks every case, reporting all mismatches at once.
fn check(cases: Vec<Case>) {
    let got: Vec<(&str, EditFormat, Edit)> = cases
        .iter()
        .map(|(name, body, attrs, _, _)| {
            let (format, edit) = recognise(body, attrs);
            (*name, format, edit)
        })
        .collect();
    let want: Vec<(&str, EditFormat, Edit)> = cases
        .into_iter()
        .map(|(name, _, _, format, edit)| (name, format, edit))
        .collect();
    assert_eq!(got, want);
}

/// Blocks of literal pairs.
fn blocks(pairs: &[(&str, &str)]) -> Edit {
    Edit::Blocks(pairs.iter().map(|(s, r)| Block::literal(s, r)).collect())
}

/// Attribute edits: `search=` with the body or `replace=` as the replacement.
#[test]
fn attribute_edits() {
    let attrs = |search: &str, replace: Option<&str>| EditAttrs {
        search: Some(search.to_owned()),
        replace: replace.map(str::to_owned),
    };
    check(vec![
        (
            "search + body",
            " 8080 ",
            attrs("3000", None),
            Attributes,
            blocks(&[("3000", "8080")]),
        ),
        (
            "replace wins",
            "ignored",
            attrs("old", Some("new")),
            Attributes,
            blocks(&[("old", "new")]),
        ),
        (
            "multi-line body keeps indentation",
            "\n  a\n  b\n",
            attrs("x", None),
            Attributes,
            blocks(&[("x", "  a\n  b")]),
        ),
        (
            "search wins over markers in the body",
            "<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE",
            attrs("q", Some("r")),
            Attributes,
            blocks(&[("q", "r")]),
        ),
    ]);
}

/// Merge-conflict blocks: flexible marker lengths, several blocks, prose between, tolerated endings.
#[test]
fn merge_conflict_blocks() {
    check(vec![
        case(
            "one block",
            "<<<<<<< SEARCH\nconst port = 3000;\n=======\nconst port = 8080;\n>>>>>>> REPLACE",
            MergeConflict,
            blocks(&[("const port = 3000;", "const port = 8080;")]),
        ),
        case(
            "marker lengths 3 to 12, not agreeing, prose between",
            "Change both:\n<<<<< SEARCH\na\n=====\nb\n>>>>> REPLACE\nand\n<<<<<<<<<<<< SEARCH\nc\n===\nd\n>>>>>>>>>>>> REPLACE\n",
            MergeConflict,
            blocks(&[("a", "b"), ("c", "d")]),
        ),
        case(
            "CRLF body",
            "<<<<<<< SEARCH\r\na\r\n=======\r\nb\r\n>>>>>>> REPLACE\r\n",
            MergeConflict,
            blocks(&[("a", "b")]),
        ),
        case(
            "empty SEARCH",
            "<<<<<<< SEARCH\n=======\nnew\n>>>>>>> REPLACE",
            MergeConflict,
            blocks(&[("", "new")]),
        ),
        case(
            "missing final REPLACE marker",
            "<<<<<<< SEARCH\na\n=======\nb\n\n",
            MergeConflict,
            blocks(&[("a", "b")]),
        ),
        case(
            "no divider: markers but no block",
            "<<<<<<< SEARCH\na\n>>>>>>> REPLACE",
            MergeConflict,
            Edit::Blocks(Vec::new()),
        ),
        case(
            "replace-only gives the whole content",
            "=======\nexport default {};\n>>>>>>> REPLACE",
            ReplaceOnly,
            Edit::Blocks(vec![Block::whole("export default {};")]),
        ),
    ]);
}

/// Unified diffs: headered with counts (through unidiff), miscounted, bare hunks, fenced, sloppy context.
#[test]
fn unified_diffs() {
    check(vec![
        case(
            "headered, exact counts",
            "--- a/x.js\n+++ b/x.js\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n@@ -10,2 +10,1 @@\n x\n-y\n",
            UnifiedDiff,
            Edit::Blocks(vec![
                Block::literal("a\nb\nc", "a\nB\nc").at_line(1),
                Block::literal("x\ny", "x").at_line(10),
            ]),
        ),
        case(
            "headered, miscounted: read directly",
            "--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n a\n-b\n+B\n",
            UnifiedDiff,
            Edit::Blocks(vec![Block::literal("a\nb", "a\nB").at_line(1)]),
        ),
        case(
            "bare hunks without ranges",
            "@@ ... @@\n a\n-b\n+B\n@@ @@\n-x\n+y\n",
            UnifiedDiff,
            blocks(&[("a\nb", "a\nB"), ("x", "y")]),
        ),
        case(
            "fenced, one number per side",
            "```diff\n@@ -2 +2 @@\n-b\n+B\n```",
            UnifiedDiff,
            Edit::Blocks(vec![Block::literal("b", "B").at_line(2)]),
        ),
        case(
            "context lines without their space, no-newline marker",
            "@@\nfoo\n-bar\n+baz\n\\ No newline at end of file\n",
            UnifiedDiff,
            blocks(&[("foo\nbar", "foo\nbaz")]),
        ),
        case(
            "pure insertion",
            "@@ -1,0 +2,1 @@\n+new\n",
            UnifiedDiff,
            Edit::Blocks(vec![Block::literal("", "new").at_line(2)]),
        ),
        case(
            "huge hunk numbers never reach unidiff",
            "--- a\n+++ b\n@@ -99999999999999999999999,1 +1,1 @@\n-a\n+b\n",
            UnifiedDiff,
            Edit::Blocks(vec![Block::literal("a", "b").at_line(1)]),
        ),
        case(
            "a target header before any source header never reaches unidiff",
            "diff x\n+++ b\n--- a\n@@ -1 +1 @@\n-a\n+b",
            UnifiedDiff,
            Edit::Blocks(vec![Block::literal("a", "b").at_line(1)]),
        ),
        case(
            "non-ASCII digits never reach unidiff",
            "--- a\n+++ b\n@@ -\u{661} +1 @@\n-a\n+b",
            UnifiedDiff,
            Edit::Blocks(vec![Block::literal("a", "b").at_line(1)]),
        ),
        case(
            "a diff inside prose is content",
            "# Notes\n\n```diff\n@@ -1 +1 @@\n-a\n+b\n```\n",
            FullReplacement,
            Edit::Replace("# Notes\n\n```diff\n@@ -1 +1 @@\n-a\n+b\n```\n".to_owned()),
        ),
    ]);
}

/// Claude XML pairs, JSON objects and arrays, and the loose `{search="…"}` form.
#[test]
fn claude_and_json() {
    check(vec![
        case(
            "claude pairs",
            "<old_text>a</old_text>\n<new_text>b</new_text> then <old_text>\nc\n</old_text> <new_text>\nd\n</new_text>",
            ClaudeXml,
            blocks(&[("a", "b"), ("c", "d")]),
        ),
        case(
            "str_replace names",
            "<old_str>x</old_str><new_str>y</new_str>",
            ClaudeXml,
            blocks(&[("x", "y")]),
        ),
        case("json object", r#"{"search":"a\nb","replace":"c"}"#, Json, blocks(&[("a\nb", "c")])),
        case("json without replace", r#" {"search":"gone"} "#, Json, blocks(&[("gone", "")])),
        case(
            "json array",
            r#"[{"search":"a","replace":"b"},{"search":"c","replace":"d"}]"#,
            Json,
            blocks(&[("a", "b"), ("c", "d")]),
        ),
        case(
            "loose form",
            r#"{search="old text", replace="new text"}"#,
            Json,
            blocks(&[("old text", "new text")]),
        ),
        case(
            "loose, single quotes and escapes",
            r#"{ 'search': 'it\'s', replace: 'a\nb' }"#,
            Json,
            blocks(&[("it's", "a\nb")]),
        ),
        case(
            "a JSON file with a search key is content",
            r#"{"search": {"enabled": true}}"#,
            FullReplacement,
            Edit::Replace(r#"{"search": {"enabled": true}}"#.to_owned()),
        ),
    ]);
}

/// sed bodies: any delimiter, chaining, fences; prose that merely starts with `s` is content.
#[test]
fn sed_and_full_replacement() {
    let sed = |pairs: &[(&str, &str, &str)]| {
        Edit::Blocks(pairs.iter().map(|(s, r, f)| Block::sed(s, r, f)).collect())
    };
    check(vec![
        case(
            "chained delimiters",
            "s|a|b|g;s#c#d#",
            Sed,
            sed(&[("a", "b", "g"), ("c", "d", "")]),
        ),
        case(
            "escaped delimiter, flags",
            r"s,a\,b,c,gi",
            Sed,
            sed(&[("a,b", "c", "gi")]),
        ),
        case("fenced", "```\ns/a/b/\n```", Sed, sed(&[("a", "b", "")])),
        case(
            "numeric flag skipped",
            "s/a/b/2",
            Sed,
            sed(&[("a", "b", "")]),
        ),
        case(
            "prose starting like sed",
            "s.t. the bounds hold",
            FullReplacement,
            Edit::Replace("s.t. the bounds hold".to_owned()),
        ),
        case(
            "unclosed command followed by prose",
            "s/old/new\nmore prose",
            FullReplacement,
            Edit::Replace("s/old/new\nmore prose".to_owned()),
        ),
        case(
            "full content: leading blank lines and trailing spaces go, the final break stays",
            "\n\nhello\nworld\n  \n",
            FullReplacement,
            Edit::Replace("hello\nworld\n".to_owned()),
        ),
        case(
            "one line",
            "fact",
            FullReplacement,
            Edit::Replace("fact".to_owned()),
        ),
        case("empty", "", FullReplacement, Edit::Replace(String::new())),
    ]);
}
