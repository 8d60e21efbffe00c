//! The body filter's limits: the depth scanners, the size bound, which kinds check what, and the SQL refusal.

use crate::hedberg::limits::{
    check_json, check_xml, json_depth, xml_depth, xpath_within_bounds, Refused, MAX_BODY_BYTES,
    MAX_DEPTH, MAX_XPATH_BYTES, MAX_XPATH_NESTING,
};
use crate::hedberg::{hedfilter, hedsearch, Found, Pattern, PatternKind};
use pretty_assertions::assert_eq;

/// `depth` nested `<a>` elements with `x` inside.
fn nested_xml(depth: usize) -> String {
    format!("{}x{}", "<a>".repeat(depth), "</a>".repeat(depth))
}

/// `depth` nested JSON arrays around `1`.
fn nested_json(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

/// The XML depth counts start tags against end tags, and nothing that only looks like a tag.
#[test]
fn xml_depth_counts_elements_only() {
    let cases: &[(&str, usize)] = &[
        ("", 0),
        ("plain text", 0),
        ("<a/>", 0),
        ("<a><b/></a>", 1),
        ("<a><b></b><c><d/></c></a>", 2),
        ("<a><!-- <b><c><d> --></a>", 1),
        ("<a><![CDATA[<b><c>]]></a>", 1),
        ("<?xml version=\"1.0\"?><a><?pi <b>?></a>", 1),
        ("<!DOCTYPE a [<!ELEMENT a (b)>]><a></a>", 1),
        ("<a t=\"<b>\" u='>'><c x=\"/>\"></c></a>", 2),
        ("<a>1 < 2 and x<3</a>", 1),
        ("<a><b><c>", 3),
        ("</a></a><a>", 1),
        ("<é><ü></ü></é>", 2),
        ("<a", 0),
    ];
    let got: Vec<(&str, usize)> = cases.iter().map(|(t, _)| (*t, xml_depth(t))).collect();
    assert_eq!(got, cases.to_vec());
}

/// The JSON depth counts brackets and braces outside strings, escapes included.
#[test]
fn json_depth_counts_brackets_outside_strings() {
    let cases: &[(&str, usize)] = &[
        ("", 0),
        ("1", 0),
        ("[]", 1),
        ("{\"a\":[1,{\"b\":2}]}", 3),
        ("[\"[[[{{{\"]", 1),
        ("[\"\\\"[[[\"]", 1),
        ("[\"\\\\\",[[]]]", 3),
        ("]]][", 1),
    ];
    let got: Vec<(&str, usize)> = cases.iter().map(|(t, _)| (*t, json_depth(t))).collect();
    assert_eq!(got, cases.to_vec());
}

/// 256 levels pass and 257 are refused, for XML and for JSON alike.
#[test]
fn depth_bound_is_256() {
    let got = [
        check_xml(&nested_xml(255)),
        check_xml(&nested_xml(MAX_DEPTH)),
        check_xml(&nested_xml(257)),
        check_xml(&nested_xml(20_000)),
        check_json(&nested_json(255)),
        check_json(&nested_json(MAX_DEPTH)),
        check_json(&nested_json(257)),
        check_json(&nested_json(20_000)),
    ];
    let ok = Ok(());
    let deep = Err(Refused::TooDeep);
    assert_eq!(got, [ok, ok, deep, deep, ok, ok, deep, deep]);
}

/// A 4 MiB body passes the size bound and one byte more is refused, whatever the filter's kind.
#[test]
fn size_bound_is_4_mib() {
    let at_limit = "x".repeat(MAX_BODY_BYTES);
    let over = "x".repeat(MAX_BODY_BYTES + 1);
    let filters = ["//a", "$.a", "/x+/", "s/x/y/", "x", "*x*"];
    let got: Vec<(&str, bool, Result<bool, Refused>)> = filters
        .iter()
        .map(|f| {
            let passes = hedfilter(f, &at_limit).is_ok();
            (*f, passes, hedfilter(f, &over).map(|found| found.is_some()))
        })
        .collect();
    let refused = Err(Refused::TooLarge);
    assert_eq!(
        got,
        vec![
            ("//a", true, refused),
            ("$.a", true, refused),
            ("/x+/", true, refused),
            ("s/x/y/", true, refused),
            ("x", true, Ok(true)),
            ("*x*", true, Ok(true)),
        ]
    );
}

/// An XPath filter on a 20,000-deep document is refused unparsed; within the bound it selects.
#[test]
fn xpath_filter_refuses_deep_xml() {
    assert_eq!(hedfilter("//a", &nested_xml(20_000)), Err(Refused::TooDeep));
    assert_eq!(
        hedfilter("//a", &nested_xml(200)),
        Ok(Some(Found {
            text: "x".into(),
            index: 0
        }))
    );
}

/// A JSONPath filter on a deep document is refused; a regex filter only checks the size.
#[test]
fn kinds_check_their_own_bounds() {
    let deep_json = nested_json(1_000);
    assert_eq!(hedfilter("$..a", &deep_json), Err(Refused::TooDeep));
    assert_eq!(
        hedfilter("/1\\]+/", &deep_json).map(|f| f.map(|f| f.index)),
        Ok(Some(1_000))
    );
    assert_eq!(
        hedfilter("/a>+/", &nested_xml(20_000)).map(|f| f.is_some()),
        Ok(true)
    );
}

/// Outside filters, a too-deep text is never parsed: an XPath reads it as literal text.
#[test]
fn plain_search_reads_deep_xml_as_text() {
    assert_eq!(hedsearch("//a", &nested_xml(20_000)), None);
}

/// The refusal messages are the ones documented, and read back from their text.
#[test]
fn refusal_messages() {
    let got: Vec<(String, Option<Refused>)> = [Refused::TooLarge, Refused::TooDeep]
        .iter()
        .map(|r| (r.to_string(), Refused::from_message(&r.to_string())))
        .collect();
    assert_eq!(
        got,
        vec![
            ("body larger than 4 MiB".to_owned(), Some(Refused::TooLarge)),
            (
                "body nested deeper than 256 levels".to_owned(),
                Some(Refused::TooDeep)
            ),
        ]
    );
}

/// A document at the depth bound parses and selects on a thread with an eighth of the default
/// 2 MiB stack: the bound leaves a wide margin, debug build included.
#[test]
fn depth_bound_fits_a_small_stack() {
    let selected = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| hedfilter("//a", &nested_xml(MAX_DEPTH)).map(|f| f.map(|f| f.text)))
        .expect("thread starts")
        .join()
        .expect("no overflow");
    assert_eq!(selected, Ok(Some("x".to_owned())));
}

/// An XPath whose predicate nests `depth` parentheses around `1`.
fn nested_xpath(depth: usize) -> String {
    format!("//a[{}1{}]", "(".repeat(depth), ")".repeat(depth))
}

/// An XPath selecting `a` through one chain of `links` operators: `count(x)+1+1… > 0`.
fn chained_xpath(links: usize) -> String {
    format!("//a[count(x){} > 0]", "+1".repeat(links))
}

/// The most links [`chained_xpath`] holds within the byte bound.
fn longest_chain() -> usize {
    (MAX_XPATH_BYTES - chained_xpath(0).len()) / 2
}

/// A pattern past the XPath bounds (nesting or length) is not read as an XPath, whatever sxd-xpath
/// would make of it: it stays a literal, so it can neither overflow the stack nor select.
#[test]
fn an_xpath_past_its_bounds_is_read_as_a_literal() {
    let at_bound = nested_xpath(MAX_XPATH_NESTING - 1);
    let too_deep = nested_xpath(MAX_XPATH_NESTING);
    let longest = chained_xpath(longest_chain());
    let too_long = chained_xpath(longest_chain() + 1);
    assert!(longest.len() <= MAX_XPATH_BYTES && too_long.len() > MAX_XPATH_BYTES);
    assert_eq!(Pattern::compile(&at_bound).kind(), PatternKind::Xpath);
    assert_eq!(Pattern::compile(&longest).kind(), PatternKind::Xpath);
    assert_eq!(Pattern::compile(&too_deep).kind(), PatternKind::Literal);
    assert_eq!(Pattern::compile(&too_long).kind(), PatternKind::Literal);
    assert_eq!(hedfilter(&too_deep, "<a>1</a>"), Ok(None));
    let quoted = format!("//a[@id='{}']", "(".repeat(MAX_XPATH_NESTING * 2));
    assert!(
        xpath_within_bounds(&quoted),
        "brackets inside a literal count nothing"
    );
}

/// A pattern naming a namespace prefix is not read as an XPath (it binds no namespaces), so it
/// neither selects nor aborts the server: it is a literal, or a glob when it has a wildcard.
/// A colon inside a literal or an axis's `::` is fine.
#[test]
fn an_xpath_with_a_namespace_prefix_is_read_as_a_literal() {
    let list = r#"<list><item id="1">a</item><item id="2">b</item></list>"#;
    let prefixed = ["//it:m[@id=\"2\"]", "//x:*", "//item[f:g()]"];
    let read: Vec<(PatternKind, Result<Option<Found>, Refused>)> = prefixed
        .iter()
        .map(|p| (Pattern::compile(p).kind(), hedfilter(p, list)))
        .collect();
    assert_eq!(
        read,
        [
            (PatternKind::Literal, Ok(None)),
            (PatternKind::Glob, Ok(None)),
            (PatternKind::Literal, Ok(None)),
        ]
    );
    let fine = ["//item[@id='a:b']", "//list/child::item[2]"];
    let kinds: Vec<PatternKind> = fine.iter().map(|p| Pattern::compile(p).kind()).collect();
    assert_eq!(kinds, [PatternKind::Xpath, PatternKind::Xpath]);
    let selected = hedfilter("//list/child::item[2]", list).map(|f| f.map(|f| f.text));
    assert_eq!(selected, Ok(Some("b".to_string())));
}

/// The costliest XPaths within the bounds (the deepest nesting, the longest operator chain)
/// compile and select on a thread with a quarter of the default 2 MiB stack, debug build included.
#[test]
fn xpath_bounds_fit_a_small_stack() {
    let selected = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(|| {
            [
                nested_xpath(MAX_XPATH_NESTING - 1),
                chained_xpath(longest_chain()),
            ]
            .map(|pattern| hedfilter(&pattern, "<a>1</a>").map(|f| f.map(|f| f.text)))
        })
        .expect("thread starts")
        .join()
        .expect("no overflow");
    assert_eq!(
        selected,
        [Ok(Some("1".to_owned())), Ok(Some("1".to_owned()))]
    );
}
