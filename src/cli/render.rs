//! How a run's pieces read on screen: one line per command, a proposal with its diff, the
//! status line, and the summary at the end. Pure functions of what the server sent.

use super::view::{diff_lines, short_count, Style};
use rummy_client::notifications::{NotifyLevel, UiNotify};
use rummy_client::results::{HistoryItem, ProposalKind, StopReason};
use serde_json::{Map, Value};
use std::time::Duration;

/// What a command acted on: its path, command or question, else its entry's path.
pub fn target(item: &HistoryItem) -> String {
    target_of(&item.path, &item.attributes)
}

/// [`target`] of an entry at `path` with `attributes` (a history item's, or `getEntries`').
pub fn target_of(path: &str, attributes: &Map<String, Value>) -> String {
    for key in ["path", "command", "question"] {
        if let Some(value) = attributes.get(key).and_then(Value::as_str) {
            return value.to_owned();
        }
    }
    let after_turn = path
        .split_once("://turn_")
        .and_then(|(_, rest)| rest.split_once('/'))
        .map_or(path, |(_, target)| target);
    // The server escapes targets in paths.
    rummy_text::path::decode_component(after_turn)
}

/// The project files a proposal with `attributes` acts on: an edit's file, the file a copy or
/// a move writes (and the file a move takes away), the files a removal removes. A command or a
/// question acts on none.
pub fn proposal_files(attributes: &Map<String, Value>) -> Vec<String> {
    let mut files = Vec::new();
    for key in ["path", "to", "from"] {
        if let Some(value) = attributes.get(key).and_then(Value::as_str) {
            files.push(value.to_owned());
        }
    }
    if let Some(paths) = attributes.get("paths").and_then(Value::as_array) {
        files.extend(paths.iter().filter_map(Value::as_str).map(str::to_owned));
    }
    // A copy or a move from an entry (`known://…`) takes no file.
    files.retain(|f| !f.contains("://"));
    files.dedup();
    files
}

/// One line for a `ui/notify` notice, marked and coloured by its level; a level this version
/// does not know is shown plain.
pub fn notice_line(notice: &UiNotify, style: Style) -> String {
    let text = notice.text.as_str();
    match notice.level {
        NotifyLevel::Info => format!("{} {text}", style.cyan("i")),
        NotifyLevel::Warn => format!("{} {}", style.yellow("!"), style.yellow(text)),
        NotifyLevel::Error => format!("{} {}", style.red("✗"), style.red(text)),
        NotifyLevel::Unknown => format!("{} {text}", style.dim("·")),
    }
}

/// One line for a command the model ran, with its outcome.
pub fn command_line(item: &HistoryItem, style: Style) -> String {
    if item.tool == "error" {
        let why = item.body.as_deref().unwrap_or_default();
        return format!("{} {}", style.red("✗"), style.red(&format!("error: {why}")));
    }
    let target = target(item);
    let (glyph, tail) = match item.status {
        200 => (style.green("✓"), String::new()),
        202 => (style.yellow("?"), String::new()),
        102 => (style.dim("…"), String::new()),
        status => {
            let outcome = item.outcome.as_deref().unwrap_or_default();
            let why = item
                .body
                .as_deref()
                .and_then(|b| b.lines().next())
                .filter(|l| !l.is_empty())
                .map(|l| format!(": {l}"))
                .unwrap_or_default();
            (
                style.red("✗"),
                format!("  {}", style.red(&format!("{status} {outcome}{why}"))),
            )
        }
    };
    format!("{glyph} {} {target}{tail}", style.bold(&item.tool))
}

/// A proposal as it is shown before the question: what it would do.
pub fn proposal_lines(item: &HistoryItem, style: Style) -> Vec<String> {
    let kind = item.attr("kind").unwrap_or(&item.tool).to_owned();
    let target = target(item);
    let mark = style.yellow("?");
    let mut lines = Vec::new();
    match kind.as_str() {
        "edit" => {
            let new = if item.attributes.get("created") == Some(&serde_json::Value::Bool(true)) {
                " (a new file)"
            } else {
                ""
            };
            lines.push(format!("{mark} {} {target}{new}", style.bold("edit")));
            let diff = item.body.as_deref().unwrap_or_default();
            lines.extend(
                diff_lines(diff, style)
                    .into_iter()
                    .map(|l| format!("    {l}")),
            );
        }
        "sh" | "env" => {
            lines.push(format!(
                "{mark} {} {}",
                style.bold(&kind),
                style.magenta(&format!("$ {target}"))
            ));
        }
        "call" => {
            // The tool a client offered, and the arguments it is to be called with.
            let tool = format!(
                "{}/{}",
                item.attr("server").unwrap_or_default(),
                item.attr("tool").unwrap_or_default()
            );
            lines.push(format!(
                "{mark} {} {}",
                style.bold("call"),
                style.magenta(&tool)
            ));
            let arguments = item
                .attributes
                .get("arguments")
                .cloned()
                .unwrap_or_default();
            let shown = serde_json::to_string_pretty(&arguments).unwrap_or_default();
            lines.extend(shown.lines().map(|l| format!("    {}", style.dim(l))));
        }
        "ask_user" => {
            lines.push(format!("{mark} {} {target}", style.bold("question")));
            if let Some(options) = item.body.as_deref().filter(|b| !b.is_empty()) {
                lines.push(format!("    {}", style.dim(options)));
            }
        }
        _ => {
            lines.push(format!("{mark} {} {target}", style.bold(&kind)));
            let body = item.body.as_deref().unwrap_or_default();
            lines.extend(
                diff_lines(body, style)
                    .into_iter()
                    .map(|l| format!("    {l}")),
            );
        }
    }
    lines
}

/// The question a proposal asks.
pub fn question(item: &HistoryItem, style: Style) -> String {
    if item.proposal() == Some(ProposalKind::AskUser) {
        return format!("  {} ", style.yellow("your answer (n to decline) ›"));
    }
    format!(
        "  {}es  {}o (+reason)  {}ll for this run  {}uit {} ",
        style.bold("[y]"),
        style.bold("[n]"),
        style.bold("[a]"),
        style.bold("[q]"),
        style.yellow("›")
    )
}

/// What the status line shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Status {
    /// The run.
    pub run: String,
    /// Its current turn.
    pub turn: i64,
    /// The server's turn limit, when known.
    pub max_turns: Option<u32>,
    /// Tokens of the last assembled context.
    pub context: Option<i64>,
    /// The model's context length, when known.
    pub context_length: Option<i64>,
    /// Tokens so far.
    pub tokens: i64,
    /// Cost so far.
    pub cost: f64,
    /// Time since the command started.
    pub elapsed: Duration,
    /// The model (and its route, when routed).
    pub model: Option<String>,
    /// What is happening now.
    pub activity: String,
}

impl Status {
    /// The status line's text.
    pub fn line(&self) -> String {
        let mut parts = vec![format!(" {}", self.run)];
        parts.push(match self.max_turns {
            Some(max) => format!("turn {}/{max}", self.turn),
            None => format!("turn {}", self.turn),
        });
        match (self.context, self.context_length) {
            (Some(used), Some(length)) if length > 0 => {
                let filled = ((used as f64 / length as f64) * 10.0)
                    .round()
                    .clamp(0.0, 10.0) as usize;
                parts.push(format!(
                    "{}{} {}/{}",
                    "█".repeat(filled),
                    "░".repeat(10 - filled),
                    short_count(used),
                    short_count(length)
                ));
            }
            (Some(used), _) => parts.push(format!("context {}", short_count(used))),
            _ => {}
        }
        parts.push(format!("{} tok", short_count(self.tokens)));
        parts.push(format!("${:.3}", self.cost));
        let secs = self.elapsed.as_secs();
        parts.push(format!("{}:{:02}", secs / 60, secs % 60));
        if let Some(model) = &self.model {
            parts.push(model.clone());
        }
        if !self.activity.is_empty() {
            parts.push(self.activity.clone());
        }
        parts.join(" · ")
    }
}

/// A run's status in words, as the protocol's table of run statuses defines them (the CLI
/// never shows the number): `queued`, `running`, `waiting` (on a proposal), `done`, …
pub fn status_word(status: i64, stop_reason: Option<StopReason>) -> String {
    match (status, stop_reason) {
        (200, Some(StopReason::MaxTurns)) => "stopped at the turn limit".to_owned(),
        (100, _) => "queued".to_owned(),
        (102, _) => "running".to_owned(),
        (202, _) => "waiting".to_owned(),
        (200, _) => "done".to_owned(),
        (413, _) => "context full".to_owned(),
        (499, _) => "cancelled".to_owned(),
        (500, _) => "failed".to_owned(),
        (508, _) => "abandoned".to_owned(),
        (other, _) => format!("status {other}"),
    }
}

/// `1 turn`, `2 turns`.
pub fn turns(n: i64) -> String {
    format!("{n} turn{}", if n == 1 { "" } else { "s" })
}

/// How a run ended, in words, painted: `✔ done`, `✗ failed`, …
pub fn ending(status: i64, stop_reason: Option<StopReason>, style: Style) -> String {
    match (status, stop_reason) {
        (_, Some(StopReason::MaxTurns)) => style.yellow("✗ stopped at the turn limit"),
        (200, _) => style.green("✔ done"),
        (413, _) => style.red("✗ context full"),
        (499, _) => style.yellow("✗ cancelled"),
        (508, _) => style.red("✗ abandoned (going round in circles)"),
        (202, _) => style.yellow("… waiting on a proposal"),
        (500, _) => style.red("✗ failed"),
        (other, _) => style.red(&format!("✗ ended {other}")),
    }
}

/// The summary line: how it ended, turns, tokens, cost, time, files changed.
pub fn summary_line(
    ending: &str,
    turns: i64,
    tokens: i64,
    cost: f64,
    elapsed: Duration,
    files: &[String],
) -> String {
    let mut parts = vec![
        ending.to_owned(),
        self::turns(turns),
        format!("{} tokens", short_count(tokens)),
        format!("${cost:.3}"),
        super::runner::seconds(elapsed),
    ];
    parts.push(match files.len() {
        0 => "no file changed".to_owned(),
        1 => format!("1 file changed: {}", files[0]),
        n => format!("{n} files changed: {}", files.join(", ")),
    });
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn item(value: serde_json::Value) -> HistoryItem {
        serde_json::from_value(value).unwrap()
    }

    /// A command's line names the tool, its target and, when it failed, why.
    #[test]
    fn command_lines() {
        let plain = Style::new(false);
        let ok = item(
            json!({"path": "get://turn_1/a.txt", "tool": "get", "state": "resolved",
            "status": 200, "attributes": {"path": "a.txt"}}),
        );
        let failed = item(
            json!({"path": "get://turn_1/b.txt", "tool": "get", "state": "failed",
            "outcome": "not_found", "status": 404, "attributes": {}, "body": "b.txt: no such entry\nmore"}),
        );
        assert_eq!(
            (command_line(&ok, plain), command_line(&failed, plain)),
            (
                "✓ get a.txt".to_owned(),
                "✗ get b.txt  404 not_found: b.txt: no such entry".to_owned()
            )
        );
    }

    /// A notice's line is marked by its level; one of an unknown level is still shown.
    #[test]
    fn notice_lines() {
        let plain = Style::new(false);
        let line = |level| {
            let notice = UiNotify {
                level,
                run: None,
                text: "the server is stopping".into(),
            };
            notice_line(&notice, plain)
        };
        assert_eq!(
            [
                NotifyLevel::Info,
                NotifyLevel::Warn,
                NotifyLevel::Error,
                NotifyLevel::Unknown
            ]
            .map(line),
            [
                "i the server is stopping",
                "! the server is stopping",
                "✗ the server is stopping",
                "· the server is stopping"
            ]
            .map(str::to_owned)
        );
    }

    /// A target named only by the entry's path is shown decoded; an error shows its reason.
    #[test]
    fn paths_and_errors() {
        let plain = Style::new(false);
        let search = item(
            json!({"path": "search://turn_2/rust%20sqlite", "tool": "search",
            "state": "resolved", "status": 200, "attributes": {}}),
        );
        let error = item(
            json!({"path": "error://turn_2/interrupted%20by%20restart", "tool": "error",
            "state": "failed", "status": 400, "outcome": "validation", "attributes": {},
            "body": "interrupted by restart"}),
        );
        assert_eq!(
            (command_line(&search, plain), command_line(&error, plain)),
            (
                "✓ search rust sqlite".to_owned(),
                "✗ error: interrupted by restart".to_owned()
            )
        );
    }

    /// An edit shows its diff; a command shows its command line; a call of a client's tool
    /// shows the tool and its arguments.
    #[test]
    fn proposals_show_what_they_would_do() {
        let plain = Style::new(false);
        let edit = item(
            json!({"path": "set://turn_2/a.txt", "tool": "set", "state": "proposed",
            "status": 202, "attributes": {"kind": "edit", "path": "a.txt", "commandIndex": 0},
            "body": "--- a.txt\n+++ a.txt\n@@ -1 +1 @@\n-old\n+new\n"}),
        );
        let sh = item(
            json!({"path": "sh://turn_3/ls", "tool": "sh", "state": "proposed",
            "status": 202, "attributes": {"kind": "sh", "command": "ls -l", "commandIndex": 0}, "body": ""}),
        );
        assert_eq!(
            proposal_lines(&edit, plain),
            vec![
                "? edit a.txt",
                "    --- a.txt",
                "    +++ a.txt",
                "    @@ -1 +1 @@",
                "    -old",
                "    +new"
            ]
        );
        assert_eq!(proposal_lines(&sh, plain), vec!["? sh $ ls -l"]);
        let call = item(
            json!({"path": "call://turn_4/everything%2Fecho", "tool": "call", "state": "proposed",
            "status": 202, "attributes": {"kind": "call", "server": "everything", "tool": "echo",
            "arguments": {"message": "hi"}, "runner": "client", "commandIndex": 0}, "body": ""}),
        );
        assert_eq!(
            (proposal_lines(&call, plain), command_line(&call, plain)),
            (
                vec![
                    "? call everything/echo".to_owned(),
                    "    {".to_owned(),
                    "      \"message\": \"hi\"".to_owned(),
                    "    }".to_owned()
                ],
                "? call everything/echo".to_owned()
            )
        );
    }

    /// The status line: turn of max, the context bar, tokens, cost, time, model, activity.
    #[test]
    fn the_status_line() {
        let status = Status {
            run: "fix_1".into(),
            turn: 3,
            max_turns: Some(99),
            context: Some(8_000),
            context_length: Some(32_000),
            tokens: 12_345,
            cost: 0.0123,
            elapsed: Duration::from_secs(75),
            model: Some("fast".into()),
            activity: "thinking".into(),
        };
        assert_eq!(
            status.line(),
            " fix_1 · turn 3/99 · ███░░░░░░░ 8.0k/32k · 12k tok · $0.012 · 1:15 · fast · thinking"
        );
    }

    /// Every run status reads as a word, and a count of one turn is singular.
    #[test]
    fn statuses_in_words() {
        let words: Vec<String> = [100, 102, 202, 200, 413, 499, 500, 508, 999]
            .into_iter()
            .map(|s| status_word(s, None))
            .collect();
        assert_eq!(
            words,
            vec![
                "queued",
                "running",
                "waiting",
                "done",
                "context full",
                "cancelled",
                "failed",
                "abandoned",
                "status 999"
            ]
        );
        assert_eq!(
            status_word(200, Some(StopReason::MaxTurns)),
            "stopped at the turn limit"
        );
        assert_eq!(
            (turns(1), turns(0), turns(2)),
            (
                "1 turn".to_owned(),
                "0 turns".to_owned(),
                "2 turns".to_owned()
            )
        );
    }

    /// The summary line counts what happened.
    #[test]
    fn the_summary_line() {
        let line = summary_line(
            "✔ done",
            4,
            6_400,
            0.0,
            Duration::from_millis(3_200),
            &["greet.sh".to_owned()],
        );
        assert_eq!(
            line,
            "✔ done · 4 turns · 6.4k tokens · $0.000 · 3.2s · 1 file changed: greet.sh"
        );
    }
}
