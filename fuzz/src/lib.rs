//! Fuzz targets for the parsers that read untrusted text: one function per target, each taking
//! the raw bytes AFL++ generates, feeding them to the parsers and checking what must hold.
//!
//! A target fails by panicking (AFL++ records the input as a crash): a parser that panics,
//! overflows its stack or breaks one of the invariants asserted here. The binaries in
//! `src/bin/` wrap these functions in `afl::fuzz!`; run outside AFL++ they read one input
//! from stdin, which is how a crash is reproduced (`docs/design/hardening.md`, "Fuzzing").
//!
//! The crate is not a member of the repository's workspace: its binaries link AFL++'s runtime,
//! which only `cargo afl build` provides, and are compiled instrumented. Keeping it out keeps
//! `cargo test --workspace` and clippy as they were; `.ci/run` builds and runs it before them.
//! It depends on the pure crates only (`rummy-text`, `rummy-provider`, `rummy-store`, `rummy-core`,
//! `rummy-protocol`): nothing here needs a runtime, a socket or a clock.

use rummy_core::wire::jsonrpc::{self, Message};
use rummy_core::wire::params;
use rummy_provider::reply_limit::ReplyLimit;
use rummy_provider::sse::{SseEvent, SseParser};
use rummy_provider::stream::StreamReader;
use rummy_provider::Wire;
use rummy_store::skill::{self, SkillMeta};
use rummy_text::hedberg::{self, EditAttrs, PatternKind};
use rummy_text::parse;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::HashMap;

/// A target: it reads one input, and panics when it finds a fault.
pub type Target = fn(&[u8]);

/// The targets by name, as `.ci/run` and the corpus directories (`fuzz/corpus/<name>`) call
/// them, each with the function it runs.
pub const TARGETS: &[(&str, Target)] = &[
    ("jsonrpc", jsonrpc),
    ("reply", reply),
    ("patterns", patterns),
    ("edits", edits),
    ("filters", filters),
    ("skill", skill),
    ("sse", sse),
    ("web", web),
];

/// The input's text, or `None` when it is not UTF-8 (every text target reads `&str`: the
/// server has turned the bytes into text before these parsers see them).
fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// The input cut at its first NUL byte into at most `N` parts (the last keeps the rest).
fn parts<const N: usize>(text: &str) -> [&str; N] {
    let mut out = [""; N];
    let mut rest = text;
    for (i, slot) in out.iter_mut().enumerate() {
        if i + 1 == N {
            *slot = rest;
            break;
        }
        match rest.split_once('\0') {
            Some((head, tail)) => {
                *slot = head;
                rest = tail;
            }
            None => {
                *slot = rest;
                rest = "";
            }
        }
    }
    out
}

/// JSON-RPC decoding: a WebSocket message read as a call or a batch, each call read, its
/// params read as every params type the routing table uses (and the run attributes `set`
/// reads), and the answer the server would write back. An answer must be JSON echoing the
/// call's id exactly as written.
pub fn jsonrpc(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let calls = match jsonrpc::read_message(text) {
        Ok(Message::Single(raw)) => vec![raw],
        Ok(Message::Batch(raws)) => {
            assert!(!raws.is_empty() && raws.len() <= jsonrpc::MAX_BATCH);
            raws
        }
        Err(error) => {
            answer_is_json(&jsonrpc::error_response(None, &error), None);
            return;
        }
    };
    for raw in calls {
        match jsonrpc::parse_request(raw) {
            Ok(request) => {
                every_params_type(&request.params);
                if let Some(id) = &request.id {
                    answer_is_json(&jsonrpc::response(id, &request.params), Some(id.as_str()));
                }
            }
            Err((id, error)) => {
                let answer = jsonrpc::error_response(id.as_ref(), &error);
                answer_is_json(&answer, id.as_ref().map(|id| id.as_str()));
            }
        }
    }
}

/// Reads `value` as each params type; only a panic matters, a refusal is the expected answer
/// to most inputs.
fn every_params_type(value: &Value) {
    fn read<T: serde::de::DeserializeOwned>(value: &Value) {
        let _ = jsonrpc::params::<T>(value);
    }
    read::<params::HelloParams>(value);
    read::<params::ProjectsParams>(value);
    read::<params::TokenCreateParams>(value);
    read::<params::ProjectSetParams>(value);
    read::<params::TokenRevokeParams>(value);
    read::<params::Page>(value);
    read::<params::AddModelParams>(value);
    read::<params::AliasParams>(value);
    read::<params::RouteCheckParams>(value);
    read::<params::GetEntriesParams>(value);
    read::<params::SetParams>(value);
    read::<params::GetParams>(value);
    read::<params::RmParams>(value);
    read::<params::MoveParams>(value);
    read::<params::UpdateParams>(value);
    read::<params::ConstraintParams>(value);
    read::<params::DropParams>(value);
    read::<params::SkillParams>(value);
    read::<params::RunParams>(value);
    read::<params::PersonaParams>(value);
    read::<params::StreamParams>(value);
    read::<params::StreamCompletedParams>(value);
    read::<params::StreamAbortedParams>(value);
    read::<params::StreamCancelParams>(value);
    read::<params::NoParams>(value);
    if let Ok(get_run) = jsonrpc::params::<params::GetRunParams>(value) {
        let _ = params::history_page(&get_run);
    }
    if let Some(attributes) = value.get("attributes") {
        let _ = jsonrpc::params_at::<params::RunAttributes>(attributes, "attributes.");
    }
    // What a client reads back: the same value as the protocol's answers and pushes.
    let _ = serde_json::from_value::<rummy_protocol::results::Hello>(value.clone());
    let _ = serde_json::from_value::<rummy_protocol::results::RunSnapshot>(value.clone());
    let _ = serde_json::from_value::<rummy_protocol::notifications::RunState>(value.clone());
    let _ = serde_json::from_value::<rummy_protocol::notifications::RunProposal>(value.clone());
}

/// An answer is one JSON object whose `id` is the call's id, byte for byte. (Read as raw JSON:
/// an id like `1e400` is valid JSON that no `f64` holds.)
fn answer_is_json(answer: &str, id: Option<&str>) {
    let parsed: HashMap<String, &RawValue> = match serde_json::from_str(answer) {
        Ok(parsed) => parsed,
        Err(error) => panic!("the answer is not a JSON object ({error}): {answer}"),
    };
    if let Some(id) = id {
        assert_eq!(parsed.get("id").map(|raw| raw.get()), Some(id), "{answer}");
    }
}

/// The reply parser, every dialect: the XML tags, the native call formats (Qwen, Gemma,
/// OpenAI JSON, Anthropic, Mistral, Python calls in fences) and the retired tags, which it
/// finds on its own in whatever text it is given. It never fails; it keeps at most the
/// commands it is allowed.
pub fn reply(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let Some(text) = text(rest) else { return };
    let max = usize::from(first % 32);
    let parsed = parse::parse_reply(text, max);
    assert!(parsed.commands.len() <= max, "{parsed:?}");
    for command in &parsed.commands {
        let _ = command.attr("path");
    }
    let _ = parse::looks_like_tool_call(text);
    let _ = parse::looks_like_tool_call(&parsed.unparsed);
}

/// hedberg patterns of every kind: `pattern\0replacement\0text`, compiled (directly and
/// through the cache) and used for a whole match, a search, a body filter and a replace. A
/// search that finds text outside xpath and jsonpath finds it where it says.
pub fn patterns(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let [pattern, replacement, subject] = parts::<3>(text);
    let compiled = hedberg::Pattern::compile(pattern);
    assert_eq!(compiled.kind(), hedberg::detect(pattern));
    let _ = compiled.is_match(subject);
    if let Some(found) = compiled.search(subject) {
        if !matches!(compiled.kind(), PatternKind::Xpath | PatternKind::Jsonpath) {
            assert!(
                subject
                    .get(found.index..)
                    .is_some_and(|at| at.starts_with(&found.text)),
                "{:?} found {found:?} in {subject:?}",
                compiled.kind()
            );
        }
    }
    let _ = compiled.filter(subject);
    let _ = compiled.replace(replacement, subject);
    let _ = hedberg::hedreplace(pattern, replacement, subject);
}

/// The edit formats: `file\0body\0search\0replace`, the body read as whichever of the eight
/// formats it is (with the `search`/`replace` attributes when those parts are there) and
/// applied to the file. An edit that applies yields a patch, and applying a whole new content
/// gives exactly that content (in a file without CRLF line breaks).
pub fn edits(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let [file, body, search, replace] = parts::<4>(text);
    let plain = EditAttrs::default();
    let with_attributes = EditAttrs {
        search: (!search.is_empty()).then(|| search.to_owned()),
        replace: (!replace.is_empty()).then(|| replace.to_owned()),
    };
    for attrs in [&plain, &with_attributes] {
        let (_, edit) = hedberg::recognise(body, attrs);
        if let Ok(applied) = hedberg::apply("file.txt", file, &edit, 4) {
            let _ = hedberg::unified_diff("file.txt", file, &applied.content);
        }
    }
    let whole = hedberg::Edit::Replace(body.to_owned());
    if let Ok(applied) = hedberg::apply("file.txt", file, &whole, 4) {
        // A file with CRLF line breaks gets them in its new content too: compare only LF files.
        if !file.contains('\r') {
            assert_eq!(applied.content, body);
        }
    }
}

/// The XPath and JSONPath body filters: `pattern\0text`, a pattern made an XPath (`//…`) or a
/// JSONPath (`$…`) by the first byte, run as a body filter over the text, which is refused
/// over the size and depth limits before it is parsed.
pub fn filters(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let Some(text) = text(rest) else { return };
    let [pattern, subject] = parts::<2>(text);
    let pattern = if first % 2 == 0 {
        format!("//{pattern}")
    } else {
        format!("${pattern}")
    };
    let compiled = hedberg::Pattern::compile(&pattern);
    let _ = compiled.filter(subject);
    let _ = compiled.is_match(subject);
    let _ = hedberg::hedfilter(&pattern, subject);
    let _ = hedberg::limits::xml_depth(subject);
    let _ = hedberg::limits::json_depth(subject);
}

/// Skill frontmatter: a skill file read and checked. What a valid one says survives being
/// stored as the entry's attributes and read back.
pub fn skill(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let tools = parse::ToolName::ALL;
    match skill::parse("review", text, &tools) {
        Ok(read) => {
            let stored = read.meta.to_attributes("review");
            assert_eq!(SkillMeta::from_attributes(&stored), read.meta);
        }
        Err(error) => {
            let _ = error.to_string();
        }
    }
}

/// A web page and a `robots.txt` as the server reads them (`page\0robots\0path`): the page's
/// readable text has no blank line run longer than one and no line ending in a space; the
/// robots rules answer for any path.
pub fn web(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let [page, robots, path] = parts::<3>(text);
    let readable = rummy_text::web::html::readable(page);
    assert!(!readable.contains("\n\n\n"), "a blank line run");
    assert!(
        readable.lines().all(|l| !l.ends_with(' ')),
        "a line ending in a space"
    );
    let rules = rummy_text::web::robots::Robots::parse(robots);
    let _ = rules.allows("rummy", path);
    let _ = rules.allows("rummy", &format!("/{path}"));
}

/// SSE parsing: the stream cut into chunks of the size the first byte says gives the same
/// events as the stream in one piece; the events are then folded as both wire formats' answers.
pub fn sse(data: &[u8]) {
    let Some((&first, stream)) = data.split_first() else {
        return;
    };
    let whole = events(&[stream]);
    let size = usize::from(first % 17) + 1;
    let chunks: Vec<&[u8]> = stream.chunks(size).collect();
    assert_eq!(events(&chunks), whole, "chunks of {size} bytes");
    for wire in [Wire::ChatCompletions, Wire::Responses] {
        let mut reader = StreamReader::new(wire, ReplyLimit::new(1 << 16));
        for event in &whole {
            if reader.event(event).is_err() {
                break;
            }
            let _ = reader.take_reasoning();
        }
        let _ = reader.finish();
    }
}

/// The events a stream arriving in `chunks` holds, the one its end completes included.
fn events(chunks: &[&[u8]]) -> Vec<SseEvent> {
    let mut parser = SseParser::default();
    let mut events = Vec::new();
    for chunk in chunks {
        events.extend(parser.push(chunk));
        let _ = parser.buffered();
    }
    events.extend(parser.finish());
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Every committed corpus input runs through its target without a failure (the corpus is what
    /// AFL++ starts from; an input that fails would stop it before it fuzzes).
    #[test]
    fn every_seed_passes_its_target() {
        let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
        for (name, target) in TARGETS {
            let dir = corpus.join(name);
            let mut inputs = 0;
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                target(&std::fs::read(&path).unwrap());
                inputs += 1;
            }
            assert!(inputs > 0, "{} holds no input", dir.display());
        }
    }

    /// Parts are cut at NUL bytes, the last keeping the rest, missing ones empty.
    #[test]
    fn inputs_are_cut_at_nul_bytes() {
        assert_eq!(parts::<3>("a\0b\0c\0d"), ["a", "b", "c\0d"]);
        assert_eq!(parts::<3>("a"), ["a", "", ""]);
    }
}
