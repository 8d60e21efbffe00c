//! The body filter's limits: the depth scanners, the size bound, which kinds check what, and the SQL refusal.

use crate::hedberg::limits::{
    check_json, check_xml, json_depth, xml_depth, Refused, MAX_BODY_BYTES, MAX_DEPTH,
};
use crate::hedberg::{hedfilter, hedsearch, Found};
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
