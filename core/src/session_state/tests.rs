//! Session state: the document's deterministic rendering, updates read section by section and
//! capped, when an update is due, what the sidecar is given, and the state in the store.

use super::stored::{self, Stored};
use super::*;
use pretty_assertions::assert_eq;
use rummy_store::entries::WriteCtx;
use rummy_store::testing::{memory, project, run, write, NOW};

/// The empty state as the document every run starts from.
const EMPTY: &str = "## Title\n\n## Current state\n\n## User intent\n\n## Active files\n\n## Decisions\n\n## Constraints\n\n## Errors and corrections\n\n## Next steps\n\n## Worklog\n";

/// The empty state renders every heading, in order, with nothing under them; and reads back
/// as itself.
#[test]
fn the_empty_state_is_nine_headings() {
    assert_eq!(SessionState::empty().render(), EMPTY);
    assert_eq!(SessionState::read(EMPTY), SessionState::empty());
}

/// Rendering is deterministic: the fixed order whatever order sections were set in, empty
/// sections kept as headings, and a rendered state read back renders the same text.
#[test]
fn rendering_is_deterministic() {
    let mut a = SessionState::empty();
    a.set(Section::Worklog, "- read a.rs\n- fixed the parser");
    a.set(Section::Title, "Fix the parser");
    a.set(Section::NextSteps, "- run the tests");
    let mut b = SessionState::empty();
    b.set(Section::NextSteps, "- run the tests");
    b.set(Section::Title, "Fix the parser");
    b.set(Section::Worklog, "- read a.rs\n- fixed the parser");
    let text = a.render();
    assert_eq!(
        text,
        "## Title\nFix the parser\n\n## Current state\n\n## User intent\n\n## Active files\n\n## Decisions\n\n## Constraints\n\n## Errors and corrections\n\n## Next steps\n- run the tests\n\n## Worklog\n- read a.rs\n- fixed the parser\n"
    );
    assert_eq!(b.render(), text);
    assert_eq!(SessionState::read(&text).render(), text);
}

/// An update's text stays in the section whose heading it follows: headings in another order
/// or spelling, a code fence around the reply, an unknown heading (its lines dropped, not
/// added to the section before it) and text before the first heading change nothing else; a
/// section the reply leaves out keeps what it held.
#[test]
fn an_update_keeps_section_boundaries() {
    let mut prior = SessionState::empty();
    prior.set(Section::Title, "Old title");
    prior.set(Section::Constraints, "- never touch vendor/");
    prior.set(Section::Worklog, "- started");
    let reply = "```markdown\nHere is the update.\n# NEXT STEPS:\n- write the test\n## Notes\nnot a section\n### Current State\nparser half done\n## Errors & corrections\n- wrong file first, then a.rs\n## Title\nFix the parser\n## Worklog\n- started\n- read a.rs\n```";

    let next = prior.updated(reply).unwrap();

    let mut expected = SessionState::empty();
    expected.set(Section::Title, "Fix the parser");
    expected.set(Section::CurrentState, "parser half done");
    expected.set(Section::Constraints, "- never touch vendor/");
    expected.set(
        Section::ErrorsAndCorrections,
        "- wrong file first, then a.rs",
    );
    expected.set(Section::NextSteps, "- write the test");
    expected.set(Section::Worklog, "- started\n- read a.rs");
    assert_eq!(next, expected);
}

/// A reply with none of the headings is refused and leaves the state as it was.
#[test]
fn a_reply_without_headings_is_refused() {
    let mut prior = SessionState::empty();
    prior.set(Section::Title, "Kept");
    assert_eq!(
        prior.updated("I could not do that."),
        Err("the reply holds none of the session state's headings (## Title, …)".to_owned())
    );
    assert_eq!(prior.get(Section::Title), "Kept");
}

/// Oversized sections are cut to their caps: the title to one line, a section to its first
/// whole lines, the worklog to its last, a single overlong line cut with `…`.
#[test]
fn oversized_sections_are_truncated() {
    let lines = |n: usize, width: usize| -> Vec<String> {
        (0..n).map(|i| format!("{i:0>width$}")).collect()
    };
    let many = lines(200, 9).join("\n");
    let reply = format!(
        "## Title\n{}\nsecond line\n## Decisions\n{many}\n## Worklog\n{many}\n## Next steps\n{}\n",
        "t".repeat(300),
        "n".repeat(3_000)
    );

    let state = SessionState::empty().updated(&reply).unwrap();

    let title = state.get(Section::Title);
    assert_eq!(
        (title.chars().count(), title.ends_with('…')),
        (TITLE_MAX_CHARS, true)
    );
    assert_eq!(state.get(Section::Decisions), lines(100, 9)[..].join("\n"));
    assert_eq!(state.get(Section::Worklog), lines(200, 9)[50..].join("\n"));
    let next = state.get(Section::NextSteps);
    assert_eq!(
        (next.chars().count(), next.ends_with('…')),
        (SECTION_MAX_CHARS, true)
    );
    for section in Section::ALL {
        assert!(
            state.get(section).chars().count() <= section.cap(),
            "{section:?}"
        );
    }
}

/// An update whose sections are all empty renders a valid, empty document.
#[test]
fn an_empty_update_renders_a_valid_document() {
    let mut prior = SessionState::empty();
    prior.set(Section::Title, "x");
    let reply = Section::ALL
        .iter()
        .map(|s| format!("## {}\n\n", s.heading()))
        .collect::<String>();
    assert_eq!(prior.updated(&reply).unwrap().render(), EMPTY);
}

/// After a loop an update is due once either threshold is reached; before a fork or a summary
/// whenever anything happened; never when nothing did.
#[test]
fn when_an_update_is_due() {
    let t = Thresholds::default();
    let p = |turns, commands| Progress { turns, commands };
    let cases = [
        (Occasion::LoopEnd, p(2, 9), false),
        (Occasion::LoopEnd, p(3, 0), true),
        (Occasion::LoopEnd, p(1, 10), true),
        (Occasion::LoopEnd, p(0, 0), false),
        (Occasion::Fork, p(1, 0), true),
        (Occasion::Summary, p(0, 1), true),
        (Occasion::Summary, p(0, 0), false),
    ];
    for (occasion, progress, expected) in cases {
        assert_eq!(
            due(occasion, progress, t),
            expected,
            "{occasion:?} {progress:?}"
        );
    }
}

/// The sidecar is given the current document and the activity since, oldest first; past the
/// cap the oldest events are left out and counted.
#[test]
fn the_update_input_holds_the_state_and_the_activity() {
    let mut state = SessionState::empty();
    state.set(Section::Title, "Fix it");
    let events = vec![
        Event::Prompt {
            turn: 1,
            text: "Fix   the\nparser".into(),
        },
        Event::Result {
            turn: 1,
            tool: "get".into(),
            target: "src/a.rs".into(),
            state: "resolved".into(),
            body: "src/a.rs promoted (10 tokens)".into(),
        },
        Event::Result {
            turn: 2,
            tool: "sh".into(),
            target: "cargo test".into(),
            state: "failed exit:1".into(),
            body: String::new(),
        },
    ];
    let input = update_input(&state, &events);
    assert_eq!(
        input,
        format!(
            "Current session state:\n\n{}\nActivity since it was written, oldest first:\n\nturn 1 prompt: Fix the parser\nturn 1 get src/a.rs [resolved]: src/a.rs promoted (10 tokens)\nturn 2 sh cargo test [failed exit:1]\n",
            state.render()
        )
    );
    let flood: Vec<Event> = (0..200)
        .map(|i| Event::Prompt {
            turn: i,
            text: "x".repeat(100),
        })
        .collect();
    let input = update_input(&state, &flood);
    assert!(input.contains("earlier events left out)"), "{input}");
    assert!(input.ends_with(&format!("turn 199 prompt: {}\n", "x".repeat(100))));
    assert!(input.chars().count() < ACTIVITY_MAX_CHARS + 1_000);
    assert!(update_prompt().starts_with("You keep the session state"));
    assert!(!update_prompt().contains("<!--"));
}

/// In the store: a run without session state gets the empty one on first use, once, silently;
/// a written state reads back with the turn it covers; progress counts turns and commands (a
/// command's output channels are not commands) since a turn.
#[test]
fn the_state_in_the_store() {
    let mut conn = memory();
    let p = project(&mut conn, "p");
    let r = run(&mut conn, p.id, "r");
    let none = stored::current(&mut conn, r.run_id).unwrap();
    let created = stored::ensure(
        &mut conn,
        r,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    let again = stored::ensure(
        &mut conn,
        r,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    let fresh = stored::current(&mut conn, r.run_id).unwrap();
    let mut state = SessionState::empty();
    state.set(Section::Title, "T");
    stored::write(
        &mut conn,
        r,
        &state,
        4,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    use rummy_store::entry::{Visibility, Writer};
    write(
        &mut conn,
        r,
        "get://turn_1/a",
        "a",
        Visibility::Visible,
        Writer::Model,
    )
    .unwrap();
    write(
        &mut conn,
        r,
        "prompt://1",
        "Do it",
        Visibility::Visible,
        Writer::Plugin,
    )
    .unwrap();
    let (progress, rows) = stored::progress(&mut conn, r.run_id, 0).unwrap();

    assert_eq!(
        (none, created, again, fresh),
        (
            None,
            true,
            false,
            Some(Stored {
                state: SessionState::empty(),
                covered: 0
            })
        )
    );
    assert_eq!(
        stored::current(&mut conn, r.run_id).unwrap(),
        Some(Stored { state, covered: 4 })
    );
    assert_eq!(
        progress,
        Progress {
            turns: 0,
            commands: 1
        }
    );
    assert_eq!(
        stored::events(&rows),
        vec![
            Event::Result {
                turn: 1,
                tool: "get".into(),
                target: String::new(),
                state: "resolved".into(),
                body: "a".into(),
            },
            Event::Prompt {
                turn: 1,
                text: "Do it".into(),
            },
        ]
    );
}
