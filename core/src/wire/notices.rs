//! The `ui/notify` notices the server sends the people of a project, worded in one place: a run
//! waits for a decision, a loop failed (500) or was abandoned (508), the server is stopping.
//!
//! A notice is one line a person reads in a toast or a terminal, so what it quotes (a command,
//! a question, a failure's reason) is cut to its first line and [`QUOTE_CHARS`] characters.

use rummy_protocol::notifications::UiNotify;
use rummy_protocol::{NotifyLevel, ProposalKind};
use serde_json::{Map, Value};

/// The most characters of a quoted target or reason a notice keeps.
pub const QUOTE_CHARS: usize = 120;

/// What the server says to every connected person as it begins to stop: what a stop does to
/// their runs (start-up recovery keeps a pending proposal pending and ends a loop in flight as
/// interrupted).
pub const STOPPING: &str = "the server is stopping: a proposal waiting for you still waits when it is back; a loop in flight ends as interrupted";

/// The notice of a run that waits for a person's decision on a proposal of `kind` with
/// `attributes` (its entry's).
pub fn waiting(run: &str, kind: ProposalKind, attributes: &Map<String, Value>) -> UiNotify {
    let target = quote(&target(kind, attributes));
    let what = if target.is_empty() {
        kind.as_str().to_owned()
    } else {
        format!("{kind} {target}")
    };
    UiNotify {
        level: NotifyLevel::Info,
        run: Some(run.to_owned()),
        text: format!("run {run} waits for your decision: {what}"),
    }
}

/// The notice of a loop that ended with `loop_status` for `reason` (what the run records of
/// it): an error for a failure (500), a warning for an abandonment by the referee (508); no
/// notice for any other end (the person asked for it, or the model concluded).
pub fn loop_ended(run: &str, loop_status: i32, reason: Option<&str>) -> Option<UiNotify> {
    let (level, what) = match loop_status {
        500 => (NotifyLevel::Error, "failed"),
        508 => (NotifyLevel::Warn, "was abandoned"),
        _ => return None,
    };
    let reason = reason.map(quote).filter(|r| !r.is_empty());
    let text = match reason {
        Some(reason) => format!("run {run} {what}: {reason}"),
        None => format!("run {run} {what}"),
    };
    Some(UiNotify {
        level,
        run: Some(run.to_owned()),
        text,
    })
}

/// The notice sent as the server begins to stop, before it closes the connections.
pub fn stopping() -> UiNotify {
    UiNotify {
        level: NotifyLevel::Warn,
        run: None,
        text: STOPPING.to_owned(),
    }
}

/// What a proposal acts on, from its attributes: an edit's file, a copy's or a move's source
/// and destination, the files a removal removes, a command, a question, a client tool, a web
/// page.
fn target(kind: ProposalKind, attributes: &Map<String, Value>) -> String {
    let text = |key: &str| attributes.get(key).and_then(Value::as_str);
    match kind {
        ProposalKind::Cp | ProposalKind::Mv => match (text("from"), text("to")) {
            (Some(from), Some(to)) => format!("{from} → {to}"),
            (from, to) => to.or(from).unwrap_or_default().to_owned(),
        },
        ProposalKind::Rm => attributes
            .get("paths")
            .and_then(Value::as_array)
            .map(|paths| {
                let paths: Vec<&str> = paths.iter().filter_map(Value::as_str).collect();
                paths.join(", ")
            })
            .unwrap_or_default(),
        ProposalKind::Fetch => text("url").unwrap_or_default().to_owned(),
        ProposalKind::Call => match (text("server"), text("tool")) {
            (Some(server), Some(tool)) => format!("{server}/{tool}"),
            _ => String::new(),
        },
        _ => ["path", "command", "question"]
            .into_iter()
            .find_map(text)
            .unwrap_or_default()
            .to_owned(),
    }
}

/// `text`'s first line, trimmed, cut to [`QUOTE_CHARS`] characters (an ellipsis says it was).
fn quote(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or_default().trim_end();
    let mut chars = line.chars();
    let kept: String = chars.by_ref().take(QUOTE_CHARS).collect();
    let cut = chars.next().is_some() || line.len() < text.trim().len();
    if cut {
        format!("{kept}…")
    } else {
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn attributes(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    fn info(text: &str) -> UiNotify {
        UiNotify {
            level: NotifyLevel::Info,
            run: Some("r".into()),
            text: text.into(),
        }
    }

    /// A wait names the run, the proposal's kind and what it acts on, for every kind.
    #[test]
    fn a_wait_names_the_kind_and_its_target() {
        let cases = [
            (
                ProposalKind::Edit,
                json!({"path": "src/a.rs"}),
                "edit src/a.rs",
            ),
            (
                ProposalKind::Cp,
                json!({"from": "known://a", "to": "a.txt"}),
                "cp known://a → a.txt",
            ),
            (
                ProposalKind::Mv,
                json!({"from": "b.txt", "to": "c.txt"}),
                "mv b.txt → c.txt",
            ),
            (
                ProposalKind::Rm,
                json!({"paths": ["a.txt", "b.txt"]}),
                "rm a.txt, b.txt",
            ),
            (
                ProposalKind::Sh,
                json!({"command": "cargo test"}),
                "sh cargo test",
            ),
            (
                ProposalKind::Env,
                json!({"command": "uname -a"}),
                "env uname -a",
            ),
            (
                ProposalKind::AskUser,
                json!({"question": "Which one?"}),
                "ask_user Which one?",
            ),
            (
                ProposalKind::Fetch,
                json!({"path": "https://x.org%3A8080/a", "url": "https://x.org:8080/a"}),
                "fetch https://x.org:8080/a",
            ),
            (
                ProposalKind::Call,
                json!({"server": "fs", "tool": "read"}),
                "call fs/read",
            ),
            (ProposalKind::Sh, json!({}), "sh"),
        ];
        for (kind, attrs, what) in cases {
            assert_eq!(
                waiting("r", kind, &attributes(attrs)),
                info(&format!("run r waits for your decision: {what}"))
            );
        }
    }

    /// A long or many-lined target is quoted by its first line, cut to `QUOTE_CHARS`.
    #[test]
    fn a_long_target_is_cut() {
        let long = "x".repeat(QUOTE_CHARS + 5);
        let cut = format!(
            "run r waits for your decision: sh {}…",
            "x".repeat(QUOTE_CHARS)
        );
        assert_eq!(
            waiting("r", ProposalKind::Sh, &attributes(json!({"command": long}))),
            info(&cut)
        );
        assert_eq!(
            waiting(
                "r",
                ProposalKind::Sh,
                &attributes(json!({"command": "make\nmake install"}))
            ),
            info("run r waits for your decision: sh make…")
        );
    }

    /// A failed loop is an error, an abandoned one a warning, each with its reason; other
    /// ends say nothing.
    #[test]
    fn a_failed_or_abandoned_loop_is_told() {
        let notice = |level, text: &str| {
            Some(UiNotify {
                level,
                run: Some("r".into()),
                text: text.into(),
            })
        };
        assert_eq!(
            [
                loop_ended("r", 500, Some("openai API error: 400")),
                loop_ended("r", 500, None),
                loop_ended("r", 508, Some("3 consecutive strikes")),
                loop_ended("r", 200, None),
                loop_ended("r", 499, Some("cancelled")),
                loop_ended("r", 413, None),
            ],
            [
                notice(NotifyLevel::Error, "run r failed: openai API error: 400"),
                notice(NotifyLevel::Error, "run r failed"),
                notice(
                    NotifyLevel::Warn,
                    "run r was abandoned: 3 consecutive strikes"
                ),
                None,
                None,
                None,
            ]
        );
    }
}
