//! The `set` bodies of replies the original server met (merge blocks and sed expressions), read and applied here.

use pretty_assertions::assert_eq;

use super::{edit, no_attrs};
use crate::hedberg::{parse_edit, Block, Edit};

/// Merge blocks and sed expressions, as models write them, read into the blocks they mean.
#[test]
fn reference_bodies_parse() {
    let sed = |s: &str, r: &str, f: &str| Block::sed(s, r, f);
    let cases: Vec<(&str, &str, Edit)> = vec![
        (
            "6 one merge block",
            "<<<<<<< SEARCH\nconst port = 3000;\n=======\nconst port = 8080;\n>>>>>>> REPLACE",
            Edit::Blocks(vec![Block::literal("const port = 3000;", "const port = 8080;")]),
        ),
        (
            "7 two merge blocks",
            "<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nc\n=======\nd\n>>>>>>> REPLACE",
            Edit::Blocks(vec![Block::literal("a", "b"), Block::literal("c", "d")]),
        ),
        (
            "7 five-character markers",
            "<<<<< SEARCH\na\n=====\nb\n>>>>> REPLACE",
            Edit::Blocks(vec![Block::literal("a", "b")]),
        ),
        (
            "8 replace-only is a new file",
            "=======\nexport default {};\n>>>>>>> REPLACE",
            Edit::Blocks(vec![Block::whole("export default {};")]),
        ),
        ("31 plain", "s/3000/8080/", Edit::Blocks(vec![sed("3000", "8080", "")])),
        ("31 global", "s/localhost/0.0.0.0/g", Edit::Blocks(vec![sed("localhost", "0.0.0.0", "g")])),
        ("31 no trailing slash", "s/old/new", Edit::Blocks(vec![sed("old", "new", "")])),
        ("31 spaces kept", "s/7 - a = /7 - a = 5/g", Edit::Blocks(vec![sed("7 - a = ", "7 - a = 5", "g")])),
        ("31 empty replacement", "s/debugger;//", Edit::Blocks(vec![sed("debugger;", "", "")])),
        (
            "32 chained with ;",
            "s/foo/bar/g;s/baz/qux/g",
            Edit::Blocks(vec![sed("foo", "bar", "g"), sed("baz", "qux", "g")]),
        ),
        (
            "32 chained with a space",
            "s/old/new/ s/foo/bar/",
            Edit::Blocks(vec![sed("old", "new", ""), sed("foo", "bar", "")]),
        ),
        (
            "32 chained with a line break",
            "s/a/b/\ns/c/d/",
            Edit::Blocks(vec![sed("a", "b", ""), sed("c", "d", "")]),
        ),
        (
            "33 escaped delimiter",
            r"s/b \/ 4 = 3/12 \/ 4 = 3/",
            Edit::Blocks(vec![sed("b / 4 = 3", "12 / 4 = 3", "")]),
        ),
        ("34 dollar kept", "s/7 - a =$/7 - a = 5/", Edit::Blocks(vec![sed("7 - a =$", "7 - a = 5", "")])),
    ];
    let got: Vec<(&str, Edit)> = cases
        .iter()
        .map(|(name, body, _)| (*name, parse_edit(body, &no_attrs())))
        .collect();
    let want: Vec<(&str, Edit)> = cases.into_iter().map(|(name, _, e)| (name, e)).collect();
    assert_eq!(got, want);
}

/// The same bodies applied to a small file give the content a user expects.
#[test]
fn reference_bodies_apply() {
    let file = "const port = 3000;\nconst host = \"localhost\";\n";
    let cases: Vec<(&str, &str, &str, &str)> = vec![
        (
            "6",
            file,
            "<<<<<<< SEARCH\nconst port = 3000;\n=======\nconst port = 8080;\n>>>>>>> REPLACE",
            "const port = 8080;\nconst host = \"localhost\";\n",
        ),
        (
            "7",
            "a\nc\n",
            "<<<<< SEARCH\na\n=====\nb\n>>>>> REPLACE\n<<<<< SEARCH\nc\n=====\nd\n>>>>> REPLACE",
            "b\nd\n",
        ),
        (
            "8 into an empty file",
            "",
            "=======\nexport default {};\n>>>>>>> REPLACE",
            "export default {};",
        ),
        (
            "31 plain",
            file,
            "s/3000/8080/",
            "const port = 8080;\nconst host = \"localhost\";\n",
        ),
        (
            "31 global",
            file,
            "s/localhost/0.0.0.0/g",
            "const port = 3000;\nconst host = \"0.0.0.0\";\n",
        ),
        ("31 no trailing slash", "old\n", "s/old/new", "new\n"),
        (
            "31 spaces kept",
            "x = 7 - a = \n",
            "s/7 - a = /7 - a = 5/g",
            "x = 7 - a = 5\n",
        ),
        (
            "31 empty replacement",
            "a();\ndebugger;\nb();\n",
            "s/debugger;//",
            "a();\n\nb();\n",
        ),
        ("32", "foo baz\n", "s/foo/bar/g;s/baz/qux/g", "bar qux\n"),
        (
            "33",
            "x = b / 4 = 3\n",
            r"s/b \/ 4 = 3/12 \/ 4 = 3/",
            "x = 12 / 4 = 3\n",
        ),
        (
            "34 `$` anchors at the line",
            "let x = 7 - a =\nnext\n",
            "s/7 - a =$/7 - a = 5/",
            "let x = 7 - a = 5\nnext\n",
        ),
    ];
    let got: Vec<(&str, Result<String, String>)> = cases
        .iter()
        .map(|(name, text, body, _)| (*name, edit(text, body).map(|a| a.content)))
        .collect();
    let want: Vec<(&str, Result<String, String>)> = cases
        .iter()
        .map(|(name, _, _, out)| (*name, Ok((*out).to_owned())))
        .collect();
    assert_eq!(got, want);
}
