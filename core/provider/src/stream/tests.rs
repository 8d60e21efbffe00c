//! Streamed answers of both wire formats: deltas, reasoning, usage, and the ways a stream goes wrong.

use super::*;
use crate::reply_limit::{ReplyLimit, TooLarge, ENVELOPE_BYTES};
use crate::sse::SseParser;
use pretty_assertions::assert_eq;

/// What reading a whole stream gave: the deltas shown, the result, and how many events were skipped.
type Outcome = (Vec<String>, Result<Completion, StreamFailure>, usize);

fn read(wire: Wire, text: &str) -> Outcome {
    read_within(wire, text, ReplyLimit::new(1 << 20))
}

fn read_within(wire: Wire, text: &str, limit: ReplyLimit) -> Outcome {
    let mut parser = SseParser::default();
    let mut reader = StreamReader::new(wire, limit);
    let mut deltas = Vec::new();
    let mut events = parser.push(text.as_bytes());
    events.extend(parser.finish());
    for event in &events {
        match reader.event(event) {
            Ok(Some(delta)) => deltas.push(delta),
            Ok(None) => {}
            Err(failure) => return (deltas, Err(failure), reader.skipped()),
        }
    }
    let skipped = reader.skipped();
    (deltas, reader.finish(), skipped)
}

fn chunk(delta: &str, finish: &str) -> String {
    format!(
        "data: {{\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
    )
}

fn usage_of(prompt: i32, completion: i32) -> Usage {
    Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        ..Usage::default()
    }
}

/// Each stream yields the deltas and answer (or failure) expected of it.
#[test]
fn streams_fold_into_answers() {
    let chat_ok = [
        chunk(r#"{"role":"assistant","content":""}"#, "null"),
        chunk(r#"{"reasoning_content":"let me "}"#, "null"),
        chunk(r#"{"reasoning_content":"see"}"#, "null"),
        chunk(r#"{"content":"Hello "}"#, "null"),
        ": keep-alive\n\n".to_owned(),
        chunk(r#"{"content":"world"}"#, "null"),
        chunk("{}", "\"stop\""),
        "data: {\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2,\"total_tokens\":11}}\n\n".to_owned(),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let hello = |usage: Usage| Completion {
        content: "Hello world".into(),
        reasoning: Some("let me see".into()),
        usage,
        model: Some("m".into()),
    };
    let responses_ok = [
        "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"status\":\"in_progress\"}}\n\n",
        "data: {\"type\":\"response.reasoning_summary_text.delta\",\"delta\":\"hmm\"}\n\n",
        "data: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi \"}\n\n",
        "data: {\"type\":\"response.output_text.delta\",\"delta\":\"there\"}\n\n",
        "data: {\"type\":\"response.completed\",\"response\":{\"model\":\"grok\",\"output\":[{\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hi there\"}]}],",
        "\"usage\":{\"input_tokens\":5,\"output_tokens\":2,\"total_tokens\":7,\"cost_in_usd_ticks\":10000000}}}\n\n",
    ]
    .concat();
    let cases: Vec<(&str, Wire, String, Outcome)> = vec![
        (
            "chat: reasoning, content, usage from the last chunk",
            Wire::ChatCompletions,
            chat_ok.clone(),
            (vec!["Hello ".into(), "world".into()], Ok(hello(usage_of(9, 2))), 0),
        ),
        (
            "chat: no usage chunk means zero usage, not a failure",
            Wire::ChatCompletions,
            chat_ok.replace("\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2,\"total_tokens\":11}", "\"usage\":null"),
            (vec!["Hello ".into(), "world".into()], Ok(hello(Usage::default())), 0),
        ),
        (
            "chat: a malformed data line is skipped",
            Wire::ChatCompletions,
            chat_ok.replace(": keep-alive\n\n", "data: {\"choices\":[{\"delta\n\n"),
            (vec!["Hello ".into(), "world".into()], Ok(hello(usage_of(9, 2))), 1),
        ),
        (
            "chat: a stream cut before the finish is unfinished",
            Wire::ChatCompletions,
            [chunk(r#"{"content":"Hel"}"#, "null"), "data: {\"choi".to_owned()].concat(),
            (vec!["Hel".into()], Err(StreamFailure::Unfinished), 1),
        ),
        (
            "chat: an error event carries its code",
            Wire::ChatCompletions,
            [chunk(r#"{"content":"a"}"#, "null"), "data: {\"error\":{\"code\":502,\"message\":\"upstream died\"}}\n\n".to_owned()].concat(),
            (vec!["a".into()], Err(StreamFailure::Api { status: Some(502), message: "upstream died".into() }), 0),
        ),
        (
            "chat: openrouter's reasoning field and reasoning_details",
            Wire::ChatCompletions,
            [
                chunk(r#"{"reasoning":"plan","reasoning_details":[{"type":"reasoning.text","text":"plan"}]}"#, "null"),
                chunk(r#"{"content":"ok"}"#, "\"stop\""),
            ]
            .concat(),
            (
                vec!["ok".into()],
                Ok(Completion { content: "ok".into(), reasoning: Some("plan".into()), usage: Usage::default(), model: Some("m".into()) }),
                0,
            ),
        ),
        (
            "responses: deltas, reasoning summary, usage and cost from response.completed",
            Wire::Responses,
            responses_ok.clone(),
            (
                vec!["Hi ".into(), "there".into()],
                Ok(Completion {
                    content: "Hi there".into(),
                    reasoning: Some("hmm".into()),
                    usage: Usage { cost: 0.001, ..usage_of(5, 2) },
                    model: Some("grok".into()),
                }),
                0,
            ),
        ),
        (
            "responses: content only in the final response",
            Wire::Responses,
            responses_ok.replace("\"type\":\"response.output_text.delta\"", "\"type\":\"response.output_text.other\""),
            (
                vec![],
                Ok(Completion { content: "Hi there".into(), reasoning: Some("hmm".into()), usage: Usage { cost: 0.001, ..usage_of(5, 2) }, model: Some("grok".into()) }),
                0,
            ),
        ),
        (
            "responses: response.failed is an API failure",
            Wire::Responses,
            "data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n".to_owned(),
            (vec![], Err(StreamFailure::Api { status: None, message: "boom".into() }), 0),
        ),
        (
            "responses: ending without response.completed is unfinished",
            Wire::Responses,
            "data: {\"type\":\"response.output_text.delta\",\"delta\":\"x\"}\n\n".to_owned(),
            (vec!["x".into()], Err(StreamFailure::Unfinished), 0),
        ),
    ];
    for (name, wire, text, expected) in cases {
        assert_eq!(read(wire, &text), expected, "{name}");
    }
}

/// Text and reasoning together may fill the limit exactly; the delta that would pass it is not
/// shown and fails the answer, and so does a Responses stream's final answer past it.
#[test]
fn text_and_reasoning_past_the_limit_fail_the_stream() {
    let too_large = || Err(StreamFailure::TooLarge(TooLarge { limit: 10 }));
    let finished = |content: &str, reasoning: Option<&str>| {
        Ok(Completion {
            content: content.into(),
            reasoning: reasoning.map(str::to_owned),
            usage: Usage::default(),
            model: Some("m".into()),
        })
    };
    let cases: Vec<(&str, Wire, String, Outcome)> = vec![
        (
            "chat: ten bytes of text fill the limit exactly",
            Wire::ChatCompletions,
            [
                chunk(r#"{"content":"Hello "}"#, "null"),
                chunk(r#"{"content":"worl"}"#, "\"stop\""),
            ]
            .concat(),
            (
                vec!["Hello ".into(), "worl".into()],
                finished("Hello worl", None),
                0,
            ),
        ),
        (
            "chat: the eleventh byte of text fails the answer",
            Wire::ChatCompletions,
            [
                chunk(r#"{"content":"Hello "}"#, "null"),
                chunk(r#"{"content":"world"}"#, "null"),
                chunk("{}", "\"stop\""),
            ]
            .concat(),
            (vec!["Hello ".into()], too_large(), 0),
        ),
        (
            "chat: reasoning counts with the text",
            Wire::ChatCompletions,
            [
                chunk(r#"{"reasoning_content":"let me "}"#, "null"),
                chunk(r#"{"content":"Hi "}"#, "null"),
                chunk(r#"{"reasoning":"x"}"#, "null"),
            ]
            .concat(),
            (vec!["Hi ".into()], too_large(), 0),
        ),
        (
            "responses: a final answer past the limit fails it, though no delta did",
            Wire::Responses,
            "data: {\"type\":\"response.completed\",\"response\":{\"output\":[{\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"eleven byte\"}]}]}}\n\n".to_owned(),
            (vec![], too_large(), 0),
        ),
        (
            "an event past the raw bound fails before it is read",
            Wire::ChatCompletions,
            format!("data: {}\n\n", " ".repeat(20 + ENVELOPE_BYTES + 1)),
            (vec![], too_large(), 0),
        ),
        (
            "responses: reasoning deltas count too",
            Wire::Responses,
            [
                "data: {\"type\":\"response.reasoning_summary_text.delta\",\"delta\":\"0123456789\"}\n\n",
                "data: {\"type\":\"response.output_text.delta\",\"delta\":\"x\"}\n\n",
            ]
            .concat(),
            (vec![], too_large(), 0),
        ),
    ];
    for (name, wire, text, expected) in cases {
        assert_eq!(
            read_within(wire, &text, ReplyLimit::new(10)),
            expected,
            "{name}"
        );
    }
}
