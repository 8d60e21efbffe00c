//! Native tool-call dialects: every argument kept, unknown tools and unreadable calls warned about.

use pretty_assertions::assert_eq;

use super::{call, check, clean, warned, NO_CAP};
use crate::parse::warnings::{
    unknown_tool, unreadable_call, FORMAT_ANTHROPIC, FORMAT_JSON, FORMAT_MISTRAL, FORMAT_NATIVE,
    FORMAT_PYTHON,
};
use crate::parse::{looks_like_tool_call, parse_reply, ParsedReply};

/// Qwen/Gemma `<|tool_call>` calls: all arguments, every quoting style, nesting, namespaces, closers.
#[test]
fn native_calls() {
    check(vec![
        clean(
            "every quoting style, all arguments kept",
            "<|tool_call>call:get{path:<|\"|>src/a.js<|\"|>, line:10, limit:'20', visibility:\"summarized\"}<tool_call|>",
            vec![call(
                "get",
                &[("path", "src/a.js"), ("line", "10"), ("limit", "20"), ("visibility", "summarized")],
                "",
            )],
        ),
        clean(
            "content is the body, escapes decoded",
            r#"<|tool_call>call:set{path:"known://plan", summary:"plan,steps", content:"one\ntwo \"quoted\""}<tool_call|>"#,
            vec![call(
                "set",
                &[("path", "known://plan"), ("summary", "plan,steps")],
                "one\ntwo \"quoted\"",
            )],
        ),
        clean(
            "nested list and object arguments",
            "<|tool_call>call:ask_user{question:<|\"|>Which DB?<|\"|>, options:[<|\"|>PG<|\"|>, <|\"|>SQLite<|\"|>]}<tool_call|>\n\
             <|tool_call>call:set{path:\"p.json\", content:{\"a\": [1, 2]}}<tool_call|>",
            vec![
                call("ask_user", &[("question", "Which DB?"), ("options", "PG; SQLite")], ""),
                call("set", &[("path", "p.json")], "{\n  \"a\": [\n    1,\n    2\n  ]\n}"),
            ],
        ),
        clean(
            "namespaced name, key=value, <|tool_call> as closer, two calls",
            "<|tool_call>call:rummy.nvim/get{path=a.js}<|tool_call>\n<|tool_call>call:functions.update{status:200, message:\"done\"}<|tool_call>",
            vec![
                call("get", &[("path", "a.js")], ""),
                call("update", &[("status", "200")], "done"),
            ],
        ),
        clean(
            "positional value is the body, a URL is not a key",
            "<|tool_call>call:get{known://plan}<tool_call|><|tool_call>sh{'npm test'}</tool_call>",
            vec![call("get", &[], "known://plan"), call("sh", &[], "npm test")],
        ),
        clean(
            "JSON object inside the markers",
            "<|tool_call>{\"name\": \"rm\", \"arguments\": {\"path\": \"a.js\"}}<tool_call|>",
            vec![call("rm", &[("path", "a.js")], "")],
        ),
        warned(
            "unknown tool: warning, no command",
            "<|tool_call>call:fakeTool{x:1}<tool_call|><update status=\"102\">go</update>",
            vec![call("update", &[("status", "102")], "go")],
            vec![unknown_tool("fakeTool", FORMAT_NATIVE)],
        ),
        warned(
            "unreadable call and stray markers: one warning, the rest still parsed",
            "<|tool_call>get path=\"a.js\"<tool_call|> <|\"|>\n<get path=\"b.js\"/>",
            vec![call("get", &[("path", "b.js")], "")],
            vec![unreadable_call(FORMAT_NATIVE)],
        ),
    ]);
}

/// OpenAI-style JSON objects: arguments as object or string, function wrappers, flat calls, Hermes tags.
#[test]
fn json_calls() {
    check(vec![
        clean(
            "arguments object, numbers kept as text",
            r#"{"name": "get", "arguments": {"path": "a.js", "line": 3, "limit": 40}}"#,
            vec![call("get", &[("path", "a.js"), ("line", "3"), ("limit", "40")], "")],
        ),
        clean(
            "stringified arguments, mapped names",
            r#"{"name":"search","arguments":"{\"query\":\"rust actors\",\"max_results\":5}"}"#,
            vec![call("search", &[("path", "rust actors"), ("results", "5")], "")],
        ),
        clean(
            "function wrapper with nested content",
            r#"{"type":"function","function":{"name":"set","arguments":{"file_path":"p.json","content":{"name":"x","deps":["a"]},"visibility":null}}}"#,
            vec![call(
                "set",
                &[("path", "p.json")],
                "{\n  \"name\": \"x\",\n  \"deps\": [\n    \"a\"\n  ]\n}",
            )],
        ),
        clean(
            "flat call, Hermes tags, prose around",
            "Reading.\n<tool_call>\n{\"name\": \"get\", \"path\": \"a.js\"}\n</tool_call>\n{\"name\":\"mv\",\"parameters\":{\"source\":\"a\",\"destination\":\"b\",\"mode\":\"x\"}}",
            vec![
                call("get", &[("path", "a.js")], ""),
                call("mv", &[("path", "a"), ("to", "b"), ("mode", "x")], ""),
            ],
        ),
        clean(
            "ordinary JSON and an echoed tool definition are not calls",
            r#"The user is {"name": "John", "age": 3} and {"a": 1}. {"name": "get", "parameters": {"type": "object", "properties": {}}}"#,
            vec![],
        ),
        warned(
            "unknown tool with arguments",
            r#"{"name": "read_file", "arguments": {"path": "a"}}"#,
            vec![],
            vec![unknown_tool("read_file", FORMAT_JSON)],
        ),
        warned(
            "broken call of a known tool",
            r#"{"name": "get", "arguments": {"path": "a.js"]"#,
            vec![],
            vec![unreadable_call(FORMAT_JSON)],
        ),
    ]);
}

/// Anthropic `<tool_use>` and `<invoke>` blocks, and Mistral `[TOOL_CALLS]` lists.
#[test]
fn anthropic_and_mistral_calls() {
    check(vec![
        clean(
            "tool_use with name and input",
            r#"<tool_use><name>set</name><input>{"path": "known://a", "content": "b", "summary": "k"}</input></tool_use>"#,
            vec![call("set", &[("path", "known://a"), ("summary", "k")], "b")],
        ),
        clean(
            "tool_use holding one JSON object",
            r#"<tool_use>{"name": "get", "input": {"path": "a.js"}}</tool_use>"#,
            vec![call("get", &[("path", "a.js")], "")],
        ),
        clean(
            "invoke with parameters, list options",
            "<function_calls>\n<invoke name=\"ask_user\">\n<parameter name=\"question\">Which?</parameter>\n<parameter name=\"options\">[\"a\", \"b\"]</parameter>\n</invoke>\n<invoke name=\"sh\"><parameter name=\"command\">npm test</parameter></invoke>\n</function_calls>",
            vec![
                call("ask_user", &[("question", "Which?"), ("options", "a; b")], ""),
                call("sh", &[("command", "npm test")], ""),
            ],
        ),
        warned(
            "unknown tool in tool_use, unreadable tool_use",
            "<tool_use><name>browse</name><input>{}</input></tool_use><tool_use>nothing</tool_use>",
            vec![],
            vec![
                unknown_tool("browse", FORMAT_ANTHROPIC),
                unreadable_call(FORMAT_ANTHROPIC),
            ],
        ),
        warned(
            "Mistral list with an unknown tool in it",
            r#"[TOOL_CALLS] [{"name": "get", "arguments": {"path": "a"}}, {"name": "fly", "arguments": {}}, {"name": "update", "arguments": {"status": 200, "message": "done"}}]"#,
            vec![
                call("get", &[("path", "a")], ""),
                call("update", &[("status", "200")], "done"),
            ],
            vec![unknown_tool("fly", FORMAT_MISTRAL)],
        ),
        clean(
            "Mistral name[ARGS] form, twice",
            "[TOOL_CALLS]get[ARGS]{\"path\": \"a\"}[TOOL_CALLS]rm[ARGS]{\"path\": \"b\"}",
            vec![call("get", &[("path", "a")], ""), call("rm", &[("path", "b")], "")],
        ),
        warned(
            "Mistral marker with nothing readable",
            "[TOOL_CALLS] I will now read the file.",
            vec![],
            vec![unreadable_call(FORMAT_MISTRAL)],
        ),
    ]);
}

/// Gemma's Python-style calls in `tool_code` fences; quoted calls and calls in bodies are text.
#[test]
fn fences_and_quoting() {
    check(vec![
        clean(
            "python calls in a tool_code fence",
            "```tool_code\nprint(default_api.get(path=\"a.js\", line=3))\nset(path=\"known://x\", content='y')\n```",
            vec![
                call("get", &[("path", "a.js"), ("line", "3")], ""),
                call("set", &[("path", "known://x")], "y"),
            ],
        ),
        warned(
            "unknown python call",
            "```tool_code\nprint(default_api.browse(url=\"x\"))\n```",
            vec![],
            vec![unknown_tool("default_api.browse", FORMAT_PYTHON)],
        ),
        clean(
            "calls quoted in code spans and fences are not run",
            "Use `{\"name\": \"get\", \"arguments\": {}}` or\n```json\n[TOOL_CALLS] [{\"name\": \"rm\", \"arguments\": {\"path\": \"a\"}}]\n```",
            vec![],
        ),
        clean(
            "a dialect example inside a set body is body text",
            "<set path=\"d.md\">Qwen writes <|tool_call>call:get{path:\"a\"}<tool_call|> and {\"name\": \"get\"}</set>",
            vec![call(
                "set",
                &[("path", "d.md")],
                "Qwen writes <|tool_call>call:get{path:\"a\"}<tool_call|> and {\"name\": \"get\"}",
            )],
        ),
    ]);
}

/// A call that was not read stays in the prose (so the healer sees it); read calls leave none; the cap counts them.
#[test]
fn dialect_prose_and_cap() {
    let unknown = "Let me look. <|tool_call>call:fakeTool{}<tool_call|>";
    assert_eq!(
        parse_reply(unknown, NO_CAP),
        ParsedReply {
            commands: vec![],
            warnings: vec![unknown_tool("fakeTool", FORMAT_NATIVE)],
            unparsed: "Let me look. <|tool_call>call:fakeTool{}<tool_call|>".to_owned(),
        }
    );
    let read = "Let me look. <|tool_call>call:get{path:\"a\"}<tool_call|> Then more.";
    assert_eq!(
        parse_reply(read, NO_CAP).unparsed,
        "Let me look.  Then more."
    );
    let three = "[TOOL_CALLS] [{\"name\":\"get\",\"arguments\":{\"path\":\"a\"}},{\"name\":\"get\",\"arguments\":{\"path\":\"b\"}}]<get path=\"c\"/>";
    let parsed = parse_reply(three, 1);
    assert_eq!(
        (parsed.commands, parsed.warnings),
        (
            vec![call("get", &[("path", "a")], "")],
            vec![crate::parse::warnings::command_limit(1)]
        )
    );
}

/// No dialect warning reads as a mangled call itself (the original garbled its own notice).
#[test]
fn dialect_warnings_are_not_calls() {
    let formats = [
        FORMAT_NATIVE,
        FORMAT_JSON,
        FORMAT_ANTHROPIC,
        FORMAT_MISTRAL,
        FORMAT_PYTHON,
    ];
    let texts: Vec<String> = formats
        .iter()
        .flat_map(|f| {
            [
                unknown_tool("fakeTool", f),
                unknown_tool("<|tool_call>call:get{", f),
                unreadable_call(f),
            ]
        })
        .collect();
    let flagged: Vec<&String> = texts.iter().filter(|t| looks_like_tool_call(t)).collect();
    assert_eq!(flagged, Vec::<&String>::new());
    assert_eq!(
        parse_reply(&texts.join("\n"), NO_CAP).commands,
        vec![],
        "a warning re-read as a reply gives no command"
    );
}
