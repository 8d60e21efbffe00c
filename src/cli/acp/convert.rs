//! rummy's run in ACP's words: a command of the model as a tool call (its kind, title, status,
//! content and locations), a loop's end as a stop reason, a proposal's permission options and
//! the allow-always rule each option makes. Pure functions of what the server sent.

use super::super::render;
use super::wire as acp;
use rummy_client::results::{HistoryItem, ProposalKind, State, StopReason, ToolName};
use serde_json::Value;
use std::path::Path;

/// The permission option that accepts this proposal only.
pub const ALLOW_ONCE: &str = "allow_once";
/// The permission option that accepts it and every later one of the same rule in this session.
pub const ALLOW_ALWAYS: &str = "allow_always";
/// The permission option that rejects it.
pub const REJECT: &str = "reject";
/// The reason the model reads when the editor rejects a proposal (ACP's answer carries no text).
pub const REJECTED_IN_THE_EDITOR: &str = "rejected in the editor";
/// The most of a command's output a tool call shows: its end, where the result is.
pub const OUTPUT_SHOWN_BYTES: usize = 32 * 1024;

/// How a prompt ends, from the status and stop reason of the loop it started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The prompt's answer.
    Stop(acp::StopReason),
    /// The prompt is answered with an error carrying the run's reason.
    Error(String),
}

/// The ending of a loop that ended with `status` and `reason`.
pub fn ending(status: i64, reason: Option<StopReason>) -> Ending {
    match (status, reason) {
        (_, Some(StopReason::MaxTurns)) => Ending::Stop(acp::StopReason::MaxTurnRequests),
        (413, _) | (_, Some(StopReason::ContextFull)) => Ending::Stop(acp::StopReason::MaxTokens),
        (499, _) | (_, Some(StopReason::Cancelled)) => Ending::Stop(acp::StopReason::Cancelled),
        (500, _) | (508, _) => Ending::Error(format!(
            "the run's loop ended {status} ({})",
            reason.map_or("failed", |r| r.as_str())
        )),
        _ => Ending::Stop(acp::StopReason::EndTurn),
    }
}

/// What an allow-always answer allows from then on in the session: a kind of change (edits,
/// copies, moves, removals), one command line, or one tool (an editor's MCP tool is its
/// server's name and its own: `everything/echo`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Rule {
    /// Every proposal of this kind (`edit`, `cp`, `mv`, `rm`).
    Kind(String),
    /// Every command with exactly this command line.
    Command(String),
    /// Every call of this tool.
    Tool(String),
}

impl Rule {
    /// The rule an allow-always answer to `item` makes; `None` for a question.
    pub fn of(item: &HistoryItem) -> Option<Rule> {
        match item.proposal()? {
            ProposalKind::AskUser => None,
            ProposalKind::Call => Some(Rule::Tool(call_name(item))),
            ProposalKind::Sh | ProposalKind::Env => Some(Rule::Command(
                item.attr("command").unwrap_or_default().to_owned(),
            )),
            ProposalKind::Unknown => Some(Rule::Tool(
                item.attr("tool")
                    .or(item.attr("kind"))
                    .unwrap_or(&item.tool)
                    .to_owned(),
            )),
            kind => Some(Rule::Kind(kind.as_str().to_owned())),
        }
    }

    /// The name of the option that makes it.
    pub fn label(&self) -> String {
        match self {
            Rule::Kind(kind) => format!("Always allow {} in this session", plural(kind)),
            Rule::Command(command) => format!("Always allow `{command}` in this session"),
            Rule::Tool(tool) => format!("Always allow the tool {tool} in this session"),
        }
    }
}

fn plural(kind: &str) -> &'static str {
    match kind {
        "edit" => "edits",
        "cp" => "copies",
        "mv" => "moves",
        "rm" => "removals",
        _ => "changes of this kind",
    }
}

/// The options a proposal's permission request offers.
pub fn permission_options(rule: &Rule) -> Vec<acp::PermissionOption> {
    let option = |option_id, name: String, kind| acp::PermissionOption {
        option_id,
        name,
        kind,
    };
    vec![
        option(ALLOW_ONCE, "Allow".to_owned(), "allow_once"),
        option(ALLOW_ALWAYS, rule.label(), "allow_always"),
        option(REJECT, "Reject".to_owned(), "reject_once"),
    ]
}

/// A client tool's call as the editor names it: its server's name and its own
/// (`everything/echo`).
fn call_name(item: &HistoryItem) -> String {
    format!(
        "{}/{}",
        item.attr("server").unwrap_or_default(),
        item.attr("tool").unwrap_or_default()
    )
}

/// What the tool call was called with: a client tool's arguments; `None` for rummy's own
/// commands, whose content says it.
pub fn raw_input(item: &HistoryItem) -> Option<Value> {
    if item.proposal() == Some(ProposalKind::Call) {
        item.attributes.get("arguments").cloned()
    } else {
        None
    }
}

/// The tool call's kind for an entry.
pub fn kind(item: &HistoryItem) -> acp::ToolKind {
    match item.proposal() {
        Some(ProposalKind::Edit | ProposalKind::Cp) => return acp::ToolKind::Edit,
        Some(ProposalKind::Mv) => return acp::ToolKind::Move,
        Some(ProposalKind::Rm) => return acp::ToolKind::Delete,
        Some(ProposalKind::Sh | ProposalKind::Env) => return acp::ToolKind::Execute,
        Some(_) => return acp::ToolKind::Other,
        None => {}
    }
    match item.tool_name() {
        ToolName::Get => acp::ToolKind::Read,
        ToolName::Search => acp::ToolKind::Search,
        ToolName::Think => acp::ToolKind::Think,
        ToolName::Sh | ToolName::Env => acp::ToolKind::Execute,
        ToolName::Rm => acp::ToolKind::Delete,
        ToolName::Mv => acp::ToolKind::Move,
        ToolName::Set | ToolName::Cp => acp::ToolKind::Edit,
        _ => acp::ToolKind::Other,
    }
}

/// What the tool call says it does: `Edit src/a.rs`, the command line, `get src/**`.
pub fn title(item: &HistoryItem) -> String {
    let target = render::target(item);
    match item.proposal() {
        Some(ProposalKind::Edit) => format!("Edit {target}"),
        Some(ProposalKind::Cp) => format!(
            "Copy {} to {}",
            item.attr("from").unwrap_or_default(),
            item.attr("to").unwrap_or(&target)
        ),
        Some(ProposalKind::Mv) => format!(
            "Move {} to {}",
            item.attr("from").unwrap_or_default(),
            item.attr("to").unwrap_or(&target)
        ),
        Some(ProposalKind::Rm) => {
            let files = render::proposal_files(&item.attributes);
            if files.is_empty() {
                format!("Remove {target}")
            } else {
                format!("Remove {}", files.join(", "))
            }
        }
        Some(ProposalKind::Sh | ProposalKind::Env) => target,
        Some(ProposalKind::Call) => call_name(item),
        _ if item.tool == "error" => "error".to_owned(),
        _ => format!("{} {target}", item.tool),
    }
}

/// Where the tool call stands.
pub fn status(item: &HistoryItem) -> acp::ToolCallStatus {
    // A client tool's call runs as a command does: accepted, it waits for its result.
    let command = matches!(
        item.proposal(),
        Some(ProposalKind::Sh | ProposalKind::Env | ProposalKind::Call)
    );
    match item.state {
        State::Proposed => acp::ToolCallStatus::Pending,
        State::Streaming => acp::ToolCallStatus::InProgress,
        State::Resolved if command => match item.attributes.get("exitCode") {
            Some(code) if code.as_i64() == Some(0) => acp::ToolCallStatus::Completed,
            Some(_) => acp::ToolCallStatus::Failed,
            None => acp::ToolCallStatus::InProgress,
        },
        State::Resolved if item.is_proposal() => acp::ToolCallStatus::Completed,
        State::Resolved => match item.status {
            102 => acp::ToolCallStatus::InProgress,
            200..=299 => acp::ToolCallStatus::Completed,
            _ => acp::ToolCallStatus::Failed,
        },
        _ => acp::ToolCallStatus::Failed,
    }
}

/// The project files the tool call touches, as the editor's paths (under `root`).
pub fn locations(item: &HistoryItem, root: &str) -> Vec<acp::Location> {
    let files = if item.is_proposal() {
        render::proposal_files(&item.attributes)
    } else if item.tool_name() == ToolName::Get {
        item.attr("path")
            .filter(|p| !p.contains("://") && !p.contains('*'))
            .map(|p| vec![p.to_owned()])
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    files
        .into_iter()
        .map(|f| acp::Location {
            path: Path::new(root).join(f),
        })
        .collect()
}

/// What the tool call shows besides its title: an edit's diff (`old` is the file before it,
/// `None` for a file it creates), a command's line and output so far, why something failed,
/// a client tool's result, what the model recorded.
pub fn content(
    item: &HistoryItem,
    root: &str,
    old: Option<String>,
    output: &str,
) -> Vec<acp::ToolCallContent> {
    let text = acp::ToolCallContent::text;
    match item.proposal() {
        Some(ProposalKind::Edit) => {
            let path = Path::new(root).join(render::target(item));
            let new = item
                .attributes
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let mut out = vec![acp::ToolCallContent::Diff {
                path,
                old_text: old,
                new_text: new.to_owned(),
            }];
            out.extend(outcome(item).map(text));
            return out;
        }
        Some(ProposalKind::Sh | ProposalKind::Env) => {
            let mut shown = format!("$ {}\n", item.attr("command").unwrap_or_default());
            shown.push_str(tail(output, OUTPUT_SHOWN_BYTES));
            let mut out = vec![text(shown)];
            out.extend(outcome(item).map(text));
            return out;
        }
        Some(ProposalKind::Call) => {
            let mut out: Vec<acp::ToolCallContent> = Some(output)
                .filter(|o| !o.is_empty())
                .map(|o| text(tail(o, OUTPUT_SHOWN_BYTES).to_owned()))
                .into_iter()
                .collect();
            out.extend(outcome(item).map(text));
            return out;
        }
        Some(_) => return outcome(item).map(text).into_iter().collect(),
        None => {}
    }
    let failed = !matches!(item.state, State::Resolved | State::Streaming)
        || !(100..300).contains(&item.status);
    let worth_showing = failed
        || item.tool == "error"
        || matches!(
            item.tool_name(),
            ToolName::Think | ToolName::Set | ToolName::Search
        );
    match item.body.as_deref().filter(|b| !b.is_empty()) {
        Some(body) if worth_showing => vec![text(tail(body, OUTPUT_SHOWN_BYTES).to_owned())],
        _ => Vec::new(),
    }
}

/// The tool call announcing an entry; `old` and `output` as [`content`] takes them.
pub fn tool_call(
    item: &HistoryItem,
    root: &str,
    old: Option<String>,
    output: &str,
) -> acp::ToolCall {
    acp::ToolCall {
        tool_call_id: item.path.clone(),
        title: title(item),
        kind: kind(item),
        status: status(item),
        content: content(item, root, old, output),
        locations: locations(item, root),
        raw_input: raw_input(item),
    }
}

/// What became of a decided proposal, in words; `None` while it waits or when it went well.
fn outcome(item: &HistoryItem) -> Option<String> {
    let why = item.outcome.as_deref().filter(|o| !o.is_empty());
    match (item.state, why) {
        (State::Cancelled, Some(reason)) if reason != "rejected" => {
            Some(format!("Rejected: {reason}"))
        }
        (State::Cancelled, _) => Some("Rejected".to_owned()),
        (State::Failed, Some(why)) => Some(format!("Failed: {why}")),
        (State::Failed, None) => Some("Failed".to_owned()),
        _ => None,
    }
}

/// The last `max` bytes of `text`, cut at a character boundary, with a line saying how much
/// was left out before them.
pub fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// The question of an `ask_user` proposal as the agent says it: the question, then its
/// options, one per line.
pub fn question(item: &HistoryItem) -> String {
    let mut text = item
        .attr("question")
        .or(item.body.as_deref())
        .unwrap_or_default()
        .to_owned();
    let options: Vec<&str> = item
        .attributes
        .get("options")
        .and_then(Value::as_array)
        .map(|o| o.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !options.is_empty() {
        text.push_str("\n\nOptions:");
        for option in options {
            text.push_str("\n- ");
            text.push_str(option);
        }
    }
    text.push_str("\n\n(Your next message is the answer.)");
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn item(value: Value) -> HistoryItem {
        serde_json::from_value(value).unwrap()
    }

    fn proposal(kind: &str, state: &str, attributes: Value) -> HistoryItem {
        let mut attributes = attributes;
        attributes["kind"] = json!(kind);
        attributes["commandIndex"] = json!(0);
        item(json!({
            "path": format!("{kind}://turn_1/x"),
            "tool": if kind == "edit" { "set" } else { kind },
            "state": state,
            "status": 202,
            "attributes": attributes,
        }))
    }

    #[test]
    fn loops_end_as_acp_stop_reasons() {
        use acp::StopReason as S;
        assert_eq!(
            ending(200, Some(StopReason::Concluded)),
            Ending::Stop(S::EndTurn)
        );
        assert_eq!(
            ending(200, Some(StopReason::MaxTurns)),
            Ending::Stop(S::MaxTurnRequests)
        );
        assert_eq!(
            ending(413, Some(StopReason::ContextFull)),
            Ending::Stop(S::MaxTokens)
        );
        assert_eq!(
            ending(499, Some(StopReason::Cancelled)),
            Ending::Stop(S::Cancelled)
        );
        assert_eq!(
            ending(500, Some(StopReason::Failed)),
            Ending::Error("the run's loop ended 500 (failed)".to_owned())
        );
        assert_eq!(
            ending(508, Some(StopReason::Abandoned)),
            Ending::Error("the run's loop ended 508 (abandoned)".to_owned())
        );
    }

    #[test]
    fn allow_always_allows_the_same_kind_command_or_tool() {
        let edit = proposal("edit", "proposed", json!({"path": "a.rs"}));
        let sh = proposal("sh", "proposed", json!({"command": "cargo test"}));
        let ask = proposal("ask_user", "proposed", json!({"question": "Which?"}));
        assert_eq!(Rule::of(&edit), Some(Rule::Kind("edit".into())));
        assert_eq!(Rule::of(&sh), Some(Rule::Command("cargo test".into())));
        assert_eq!(Rule::of(&ask), None);
        assert_eq!(
            Rule::of(&edit).unwrap().label(),
            "Always allow edits in this session"
        );
        assert_eq!(
            Rule::of(&sh).unwrap().label(),
            "Always allow `cargo test` in this session"
        );
    }

    #[test]
    fn a_command_is_in_progress_until_its_exit_code() {
        let mut sh = proposal("sh", "resolved", json!({"command": "ls"}));
        assert_eq!(status(&sh), acp::ToolCallStatus::InProgress);
        sh.attributes.insert("exitCode".into(), json!(0));
        assert_eq!(status(&sh), acp::ToolCallStatus::Completed);
        sh.attributes.insert("exitCode".into(), json!(2));
        assert_eq!(status(&sh), acp::ToolCallStatus::Failed);
        assert_eq!(kind(&sh), acp::ToolKind::Execute);
        assert_eq!(title(&sh), "ls");
    }

    #[test]
    fn a_client_tools_call_shows_its_arguments_and_result() {
        let arguments = json!({"message": "hi"});
        let mut call = proposal(
            "call",
            "proposed",
            json!({"server": "everything", "tool": "echo", "arguments": arguments, "runner": "client"}),
        );
        call.tool = "call".into();
        assert_eq!(title(&call), "everything/echo");
        assert_eq!(kind(&call), acp::ToolKind::Other);
        assert_eq!(raw_input(&call), Some(arguments));
        assert_eq!(Rule::of(&call), Some(Rule::Tool("everything/echo".into())));
        assert_eq!(
            Rule::of(&call).unwrap().label(),
            "Always allow the tool everything/echo in this session"
        );
        assert_eq!(status(&call), acp::ToolCallStatus::Pending);
        assert_eq!(content(&call, "/p", None, ""), vec![]);
        call.state = State::Resolved;
        assert_eq!(status(&call), acp::ToolCallStatus::InProgress);
        call.attributes.insert("exitCode".into(), json!(0));
        assert_eq!(status(&call), acp::ToolCallStatus::Completed);
        assert_eq!(
            content(&call, "/p", None, "Echo: hi"),
            vec![acp::ToolCallContent::text("Echo: hi")]
        );
    }

    #[test]
    fn an_edit_shows_as_a_diff_of_the_file() {
        let edit = proposal(
            "edit",
            "proposed",
            json!({"path": "src/a.rs", "content": "new\n"}),
        );
        assert_eq!(title(&edit), "Edit src/a.rs");
        assert_eq!(kind(&edit), acp::ToolKind::Edit);
        assert_eq!(
            content(&edit, "/p", Some("old\n".into()), ""),
            vec![acp::ToolCallContent::Diff {
                path: "/p/src/a.rs".into(),
                old_text: Some("old\n".to_owned()),
                new_text: "new\n".to_owned(),
            }]
        );
        assert_eq!(
            locations(&edit, "/p"),
            vec![acp::Location {
                path: "/p/src/a.rs".into()
            }]
        );
    }

    #[test]
    fn a_rejected_proposal_says_why() {
        let mut edit = proposal("edit", "cancelled", json!({"path": "a.rs", "content": ""}));
        edit.outcome = Some(REJECTED_IN_THE_EDITOR.to_owned());
        let shown = content(&edit, "/p", None, "");
        assert_eq!(
            shown[1],
            acp::ToolCallContent::text("Rejected: rejected in the editor")
        );
        assert_eq!(status(&edit), acp::ToolCallStatus::Failed);
    }

    #[test]
    fn a_question_lists_its_options() {
        let ask = proposal(
            "ask_user",
            "proposed",
            json!({"question": "Which database?", "options": ["SQLite", "PostgreSQL"]}),
        );
        assert_eq!(
            question(&ask),
            "Which database?\n\nOptions:\n- SQLite\n- PostgreSQL\n\n(Your next message is the answer.)"
        );
    }

    #[test]
    fn output_is_cut_to_its_end_at_a_character() {
        assert_eq!(tail("abc", 5), "abc");
        assert_eq!(tail("abcdef", 3), "def");
        assert_eq!(tail("aé", 1), "");
        assert_eq!(tail("aéb", 2), "b");
    }
}
