//! Skill frontmatter: each field read in every spelling it is written in, and every way of
//! getting one wrong refused with an error naming the field.

use super::*;
use pretty_assertions::assert_eq;

const TOOLS: &[ToolName] = &[
    ToolName::Get,
    ToolName::Env,
    ToolName::Think,
    ToolName::Set,
    ToolName::Sh,
    ToolName::Update,
];

fn meta(text: &str) -> Result<SkillMeta, FrontmatterError> {
    parse("review", text, TOOLS).map(|s| s.meta)
}

/// A file without frontmatter is all body and sets nothing.
#[test]
fn a_file_without_frontmatter_is_all_body() {
    let text = "Review the change.\n---\nnot frontmatter\n";
    assert_eq!(
        parse("review", text, TOOLS).unwrap(),
        Skill {
            meta: SkillMeta::default(),
            body: text.to_owned(),
        }
    );
}

/// Every field, in its flow, block and text forms, and the body after the block.
#[test]
fn reads_every_field() {
    let text = "\u{feff}---\n\
        # what it does\n\
        name: review\n\
        description: Reviews Rust changes # not this\n\
        whenToUse: \"when the user asks: \\\"review\\\"\"\n\
        allowedTools: [get, 'env', think]\n\
        paths:\n  - src/**/*.rs\n  - \"Cargo.toml\"\n\
        memoryScope: relevant\n\
        ---\n\nRead the diff first.\n";
    assert_eq!(
        parse("review", text, TOOLS).unwrap(),
        Skill {
            meta: SkillMeta {
                description: Some("Reviews Rust changes".into()),
                when_to_use: Some("when the user asks: \"review\"".into()),
                allowed_tools: Some(vec!["get".into(), "env".into(), "think".into()]),
                paths: vec!["src/**/*.rs".into(), "Cargo.toml".into()],
                memory_scope: Some(MemoryScope::Relevant),
            },
            body: "Read the diff first.\n".into(),
        }
    );
}

/// Other agents' spellings (`allowed-tools` as comma-separated text, snake_case) and block
/// text (`>` folded, `|` kept) are read too.
#[test]
fn reads_other_spellings_and_block_text() {
    let folded = meta(
        "---\nallowed-tools: get, sh\nwhen_to_use: >\n  after a failing\n  test run\n\n  twice\nmemory-scope: none\n---\n",
    )
    .unwrap();
    assert_eq!(
        folded,
        SkillMeta {
            when_to_use: Some("after a failing test run\ntwice".into()),
            allowed_tools: Some(vec!["get".into(), "sh".into()]),
            memory_scope: Some(MemoryScope::None),
            ..SkillMeta::default()
        }
    );
    let kept = meta("---\ndescription: |\n  line one\n    indented\n---\n").unwrap();
    assert_eq!(kept.description.as_deref(), Some("line one\n  indented"));
    let empty = meta("---\nallowedTools: []\n---\nbody").unwrap();
    assert_eq!(empty.allowed_tools, Some(Vec::new()));
}

/// Every invalid frontmatter is refused, naming the field (as written) and why.
#[test]
fn invalid_frontmatter_is_refused_naming_the_field() {
    let long = format!(
        "---\ndescription: {}\n---\n",
        "x".repeat(MAX_TEXT_CHARS + 1)
    );
    let many = format!(
        "---\npaths: [{}]\n---\n",
        (0..=MAX_PATHS)
            .map(|i| format!("f{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let cases: Vec<(&str, &str, &str)> = vec![
        ("---\ndescription: x\n", "frontmatter", "the file opens with --- but no line closes the block with ---"),
        ("---\nhooks: [a]\n---\n", "hooks", "unknown field (the fields are name, description, whenToUse, allowedTools, paths, memoryScope)"),
        ("---\nname: other\n---\n", "name", "\"other\" is not this skill's name \"review\" (its file name without .md)"),
        ("---\ndescription: a\ndescription: b\n---\n", "description", "given twice"),
        ("---\nallowedTools: get\nallowed-tools: env\n---\n", "allowed-tools", "given twice"),
        ("---\ndescription: [a, b]\n---\n", "description", "expected text, not a list"),
        ("---\ndescription:\n---\n", "description", "is empty"),
        (long.as_str(), "description", "1025 characters, more than the 1024 allowed"),
        ("---\nwhenToUse: \"open\n---\n", "whenToUse", "a quoted value is not closed"),
        ("---\nwhenToUse: \"a\" b\n---\n", "whenToUse", "unexpected text after the quoted value: b"),
        ("---\nallowedTools: [get, grep]\n---\n", "allowedTools", "\"grep\" is not a tool (the tools are get, env, think, set, sh, update)"),
        ("---\nallowedTools:\n---\n", "allowedTools", "is empty: list the items, or leave the field out"),
        ("---\nallowedTools: [get, ]\n---\n", "allowedTools", "holds an empty item"),
        ("---\nallowedTools: [get\n---\n", "allowedTools", "a list opened with [ must close with ] on the same line"),
        ("---\nallowedTools: [[get]]\n---\n", "allowedTools", "a list item cannot be a list or a map"),
        ("---\npaths:\n  src/a.rs\n---\n", "paths", "expected `- item` lines, found: src/a.rs"),
        ("---\npaths: [/etc/passwd]\n---\n", "paths", "\"/etc/passwd\" must be relative to the project's root"),
        ("---\npaths: [src/../../x]\n---\n", "paths", "\"src/../../x\" must not leave the project (..)"),
        (many.as_str(), "paths", "65 paths, more than the 64 allowed"),
        ("---\nmemoryScope: all\n---\n", "memoryScope", "\"all\" is not a memory scope (none, relevant or session)"),
        ("---\ndescription: a\n  b\n---\n", "description", "a value on the field's line cannot go on in the lines below (use | or > for text over several lines)"),
        ("---\n  description: a\n---\n", "frontmatter", "line 1 belongs to no field: description: a"),
        ("---\njust words\n---\n", "frontmatter", "line 1 is not `field: value`: just words"),
    ];
    for (text, field, reason) in cases {
        let got = meta(text).unwrap_err();
        assert_eq!(
            (got.field.as_str(), got.reason.as_str()),
            (field, reason),
            "{text}"
        );
    }
    assert_eq!(
        meta("---\nmemoryScope: all\n---\n").unwrap_err().to_string(),
        "invalid frontmatter field memoryScope: \"all\" is not a memory scope (none, relevant or session)"
    );
}

/// Attributes round-trip the fields a skill sets, and leave out those it does not.
#[test]
fn attributes_round_trip() {
    let full = SkillMeta {
        description: Some("d".into()),
        when_to_use: Some("w".into()),
        allowed_tools: Some(vec!["get".into()]),
        paths: vec!["a.rs".into()],
        memory_scope: Some(MemoryScope::Session),
    };
    let attributes = full.to_attributes("review");
    assert_eq!(
        attributes,
        json!({"name": "review", "description": "d", "whenToUse": "w", "allowedTools": ["get"], "paths": ["a.rs"], "memoryScope": "session"})
    );
    assert_eq!(SkillMeta::from_attributes(&attributes), full);
    assert_eq!(
        SkillMeta::default().to_attributes("plain"),
        json!({"name": "plain"})
    );
}

/// Together, active skills allow only the tools every restricting skill lists, and the run's
/// memory scope is the narrowest any sets (everything when none does).
#[test]
fn active_skills_combine() {
    let a = json!({"name": "a", "allowedTools": ["get", "env", "sh"], "memoryScope": "session"});
    let b = json!({"name": "b", "allowedTools": ["env", "get"], "memoryScope": "relevant"});
    let free = json!({"name": "c"});
    assert_eq!(allowed_tools([&free]), None);
    assert_eq!(
        allowed_tools([&a, &free, &b]),
        Some(vec!["get".to_owned(), "env".to_owned()])
    );
    assert_eq!(memory_scope([&free]), MemoryScope::Session);
    assert_eq!(memory_scope([&a, &b, &free]), MemoryScope::Relevant);
    let none = json!({"memoryScope": "none"});
    assert_eq!(memory_scope([&a, &none]), MemoryScope::None);
    let scopes: Vec<(bool, bool)> = MemoryScope::ALL
        .iter()
        .map(|s| (s.allows_recall(), s.allows_session_state()))
        .collect();
    assert_eq!(scopes, vec![(false, false), (true, false), (true, true)]);
}
