//! Pattern detection and the three operations, one table per operation, plus the original's faults as regressions.

use std::sync::Arc;

use pretty_assertions::assert_eq;

use crate::hedberg::PatternKind::{Glob, Jsonpath, Literal, Regex, Sed, Xpath};
use crate::hedberg::{
    detect, hedmatch, hedreplace, hedsearch, Found, Pattern, PatternCache, PatternKind,
};

/// Every kind is detected by its documented rule, and near-misses fall through to the next kind.
#[test]
fn detection() {
    let cases: Vec<(&str, PatternKind)> = vec![
        ("src/app.js", Literal),
        ("/home/guy", Literal),
        ("/docs/", Literal),
        ("/src/app.js", Literal),
        ("/todo/i", Literal),
        ("/a.b/", Literal),
        ("/(unclosed/", Literal),
        ("\\d+", Literal),
        (":AI[]", Literal),
        ("c++", Literal),
        ("file+name.txt", Literal),
        ("log{a,b}.txt", Literal),
        ("", Literal),
        ("/\\d+/", Regex),
        ("/^src\\/.*\\.js$/", Regex),
        ("/todo|fixme/gi", Regex),
        ("/[/]x/", Regex),
        ("/(?i)todo/", Regex),
        ("s/3000/8080/", Sed),
        ("s|a|b|g", Sed),
        ("s#a/b#c#", Sed),
        ("s/old/new", Literal),
        ("s/a/b/q", Literal),
        ("$.name", Jsonpath),
        ("$..author", Jsonpath),
        ("$[0]", Jsonpath),
        ("$.store.book[*].title", Jsonpath),
        ("$.a/b", Literal),
        ("//book", Xpath),
        ("/root/child::a", Xpath),
        ("/a/b[@id='x']", Xpath),
        ("/a/b[1]", Xpath),
        ("/a[contains(., 'x')]", Xpath),
        ("/path/to/std::vector.html", Literal),
        ("/\u{19de}::", Literal),
        ("*.js", Glob),
        ("src/**/*.rs", Glob),
        ("known://*", Glob),
        ("file?.txt", Glob),
        ("config.*", Glob),
        ("[abc]*.js", Glob),
        ("\\*.js", Literal),
    ];
    let detected: Vec<(&str, PatternKind)> = cases.iter().map(|&(p, _)| (p, detect(p))).collect();
    assert_eq!(detected, cases);
}

/// hedmatch: literal and glob cover the whole text, regex and sed need a hit, xpath/jsonpath select.
#[test]
fn hedmatch_table() {
    let cases: Vec<(&str, &str, bool)> = vec![
        ("src/app.js", "src/app.js", true),
        ("src/app.js", "src/app.jsx", false),
        ("src/app.js", "SRC/APP.JS", false),
        ("/home/guy", "/home/guy", true),
        ("/home/guy", "home", false),
        ("/docs/", "/docs/", true),
        ("/docs/", "docs", false),
        ("/src/app.js", "/src/app.js", true),
        ("*.js", "app.js", true),
        ("*.js", "src/app.js", false),
        ("src/*.js", "src/x/a.js", false),
        ("src/**", "src/a/b.js", true),
        ("src/**/*.js", "src/a.js", true),
        ("src/**/*.js", "src/x/y/a.js", true),
        ("file?.txt", "file1.txt", true),
        ("file?.txt", "file/.txt", false),
        ("[abc]*.js", "b1.js", true),
        ("[!abc]*.js", "b1.js", false),
        ("*", "known://a", false),
        ("**", "known://a/b", true),
        ("known://*", "known://a", true),
        ("known://*", "known://a/b/c", true),
        ("known://*", "unknown://a", false),
        ("known://people/*", "known://people/x", true),
        ("known://people/*", "known://people/x/y", true),
        ("known://people/*", "known://peoplex", false),
        ("known://people/*", "known://places/x", false),
        ("known://api_*", "known://api_keys/x", true),
        ("https://x.com/*", "https://x.com/a/b", true),
        ("/\\.js$/", "src/app.js", true),
        ("/\\.js$/", "src/app.jsx", false),
        ("/^src\\//", "lib/src/x", false),
        ("/to+do/i", "TOODO list", true),
        ("s/3000/8080/", "port = 3000", true),
        ("s/3000/8080/", "port = 80", false),
        ("//book", "<lib><book>A</book></lib>", true),
        ("//dvd", "<lib><book>A</book></lib>", false),
        ("//book", "not xml", false),
        ("//book", "//book", true),
        ("$.name", r#"{"name":"x"}"#, true),
        ("$.missing", r#"{"name":"x"}"#, false),
        ("$..author", r#"{"a":[{"b":{"author":"me"}}]}"#, true),
        ("$.ajax", "$.ajax", true),
    ];
    let got: Vec<(&str, &str, bool)> = cases
        .iter()
        .map(|&(p, t, _)| (p, t, hedmatch(p, t)))
        .collect();
    assert_eq!(got, cases);
}

/// hedsearch: the first match inside the text, with its byte index.
#[test]
fn hedsearch_table() {
    let json = r#"{"items":[{"name":"a"},{"name":"b"}]}"#;
    let cases: Vec<(&str, &str, Option<Found>)> = vec![
        ("auth", "the auth token", found("auth", 4)),
        ("zzz", "abc", None),
        ("é", "café au lait", found("é", 3)),
        (
            "*.js",
            "import x from app.js;",
            found("import x from app.js", 0),
        ),
        ("TODO*fix", "a TODO: fix it", found("TODO: fix", 2)),
        ("/\\d+/", "abc 123 def", found("123", 4)),
        ("/\\d+/g", "abc 123 def", found("123", 4)),
        ("s/30+/x/", "port 3000", found("3000", 5)),
        (
            "//title",
            "<book><title>Dune</title></book>",
            found("Dune", 0),
        ),
        ("//isbn", "<book><title>Dune</title></book>", None),
        ("$.items[1].name", json, found("b", 0)),
        ("$.items[-1]", json, found(r#"{"name":"b"}"#, 0)),
        ("$.items[*].name", json, found("a", 0)),
        ("$.ajax", "x = $.ajax(url)", found("$.ajax", 4)),
    ];
    let got: Vec<(&str, &str, Option<Found>)> = cases
        .iter()
        .map(|(p, t, _)| (*p, *t, hedsearch(p, t)))
        .collect();
    assert_eq!(got, cases);
}

/// A search result.
fn found(text: &str, index: usize) -> Option<Found> {
    Some(Found {
        text: text.to_owned(),
        index,
    })
}

/// hedreplace: every literal occurrence; regex first or all with `g`; sed per line or all with `g`.
#[test]
fn hedreplace_table() {
    let cases: Vec<(&str, &str, &str, Option<&str>)> = vec![
        ("foo", "bar", "foo foo", Some("bar bar")),
        ("foo", "bar", "baz", None),
        ("", "bar", "baz", None),
        ("*.js", "X", "a.js", Some("X")),
        ("*.js", "X", "a.rs", None),
        ("/o+/", "0", "foo boo", Some("f0 boo")),
        ("/o+/g", "0", "foo boo", Some("f0 b0")),
        ("/(\\w+)@(\\w+)/", "$2 at $1", "me@home", Some("home at me")),
        ("/(?<user>\\w+)@/", "<$<user>>", "me@home", Some("<me>home")),
        ("/x+/", "$$ and $&", "x", Some("$ and x")),
        ("/x+/", "$9", "x", Some("$9")),
        ("s/a/b/", "ignored", "aa\naa", Some("ba\nba")),
        ("s/a/b/g", "ignored", "aa\naa", Some("bb\nbb")),
        ("s/(\\w+)=(\\d+)/\\2=\\1/", "", "x=1", Some("1=x")),
        ("s/(a/b/", "", "(a(a", Some("b(a")),
        ("s/z/y/", "", "abc", None),
        ("//a", "x", "<a>1</a>", None),
        ("$.a", "x", r#"{"a":1}"#, None),
    ];
    let got: Vec<(&str, &str, &str, Option<String>)> = cases
        .iter()
        .map(|&(p, r, t, _)| (p, r, t, hedreplace(p, r, t)))
        .collect();
    let want: Vec<(&str, &str, &str, Option<String>)> = cases
        .iter()
        .map(|&(p, r, t, w)| (p, r, t, w.map(str::to_owned)))
        .collect();
    assert_eq!(got, want);
}

/// Regression: `g` and `y` never make a regex stateful, so repeated calls give the same answer.
#[test]
fn global_and_sticky_flags_are_stateless() {
    let pattern = Pattern::compile("/\\d/gy");
    let answers: Vec<bool> = (0..4).map(|_| pattern.is_match("1")).collect();
    let cached: Vec<bool> = (0..4).map(|_| hedmatch("/\\d/g", "1")).collect();
    assert_eq!((answers, cached), (vec![true; 4], vec![true; 4]));
}

/// The cache hands out one compiled pattern per text and starts over when full.
#[test]
fn cache_shares_and_stays_bounded() {
    let cache = PatternCache::new(2);
    let a = cache.get("src/**/*.rs");
    let b = cache.get("src/**/*.rs");
    let shared = Arc::ptr_eq(&a, &b);
    cache.get("*.md");
    let full = cache.len();
    cache.get("*.txt");
    let after = cache.len();
    let c = cache.get("src/**/*.rs");
    assert_eq!(
        (shared, full, after, Arc::ptr_eq(&a, &c), c.kind()),
        (true, 2, 1, false, Glob)
    );
}

/// The original's pattern faults, each fixed: absolute paths are literal, scheme globs cross `/`,
/// `g` is stateless, and a glob finds a substring inside a body.
#[test]
fn original_faults_are_fixed() {
    let got = vec![
        ("/home/guy is a path", hedmatch("/home/guy", "/home/guy")),
        ("/docs/ is a path", hedmatch("/docs/", "/docs/")),
        (
            "/src/app.js is a path",
            hedmatch("/src/app.js", "/src/app.js"),
        ),
        (
            "known://* crosses /",
            hedmatch("known://*", "known://people/x/y"),
        ),
        (
            "known://people/* crosses /",
            hedmatch("known://people/*", "known://people/x/y"),
        ),
        ("g twice, first", hedmatch("/\\d/g", "1")),
        ("g twice, second", hedmatch("/\\d/g", "1")),
        (
            "glob finds inside a body",
            hedsearch("*.js", "import x from app.js;").is_some(),
        ),
    ];
    let want: Vec<(&str, bool)> = got.iter().map(|&(name, _)| (name, true)).collect();
    assert_eq!(got, want);
}
