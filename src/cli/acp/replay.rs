//! `session/load`'s replay: a run's newest loops as the editor would have seen them live —
//! each prompt as the user's message, each status report as the agent's, each command as a
//! finished tool call.

use super::convert;
use super::wire as acp;
use rummy_client::results::{HistoryItem, ToolName};

/// The loops a load replays: the newest ones.
pub const LOOPS_REPLAYED: usize = 50;

/// The history entries a load reads, the newest (a run's history can be longer than one
/// answer holds).
pub const ENTRIES_READ: i64 = 1000;

/// The loop a prompt entry (`prompt://N`) begins.
fn loop_number(item: &HistoryItem) -> Option<i64> {
    item.path.strip_prefix("prompt://")?.parse().ok()
}

/// The replay of a history: its newest [`LOOPS_REPLAYED`] loops, in turn order.
pub fn of_history(history: &[HistoryItem], root: &str) -> Vec<acp::SessionUpdate> {
    let mut prompts: Vec<&HistoryItem> = history
        .iter()
        .filter(|i| loop_number(i).is_some())
        .collect();
    prompts.sort_by_key(|p| loop_number(p));
    // The older loops are left out with their work.
    let skip = prompts.len().saturating_sub(LOOPS_REPLAYED);
    let prompts = &prompts[skip..];
    let first_turn = match prompts.first() {
        Some(first) if skip > 0 => first.turn,
        _ => 0,
    };
    let mut work: Vec<&HistoryItem> = history
        .iter()
        .filter(|i| i.path.contains("://turn_") && i.turn >= first_turn)
        .filter(|i| !i.attributes.contains_key("channel"))
        .collect();
    work.sort_by_key(|i| i.turn);
    let mut out = Vec::new();
    let mut work = work.into_iter().peekable();
    for (n, prompt) in prompts.iter().enumerate() {
        let until = prompts.get(n + 1).map_or(i64::MAX, |next| next.turn);
        out.push(acp::SessionUpdate::UserMessageChunk {
            content: acp::ContentBlock::text(prompt.body.clone().unwrap_or_default()),
        });
        while let Some(item) = work.next_if(|i| i.turn < until) {
            out.extend(update_of(item, root));
        }
    }
    out.extend(work.flat_map(|item| update_of(item, root)));
    out
}

/// One entry of a loop as the editor shows it after the fact.
fn update_of(item: &HistoryItem, root: &str) -> Option<acp::SessionUpdate> {
    if item.tool_name() == ToolName::Update {
        let body = item.body.clone().filter(|b| !b.is_empty())?;
        return Some(acp::SessionUpdate::message(format!("{body}\n")));
    }
    if item.proposal() == Some(rummy_client::results::ProposalKind::AskUser) {
        return Some(acp::SessionUpdate::message(format!(
            "{}\n",
            item.attr("question").unwrap_or_default()
        )));
    }
    Some(acp::SessionUpdate::ToolCall(convert::tool_call(
        item, root, None, "",
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn item(path: &str, tool: &str, turn: i64, body: &str) -> HistoryItem {
        serde_json::from_value(json!({
            "path": path, "tool": tool, "state": "resolved", "status": 200, "turn": turn,
            "body": body, "attributes": {"path": "src/a.rs"},
        }))
        .unwrap()
    }

    fn kinds(updates: &[acp::SessionUpdate]) -> Vec<String> {
        updates
            .iter()
            .map(|u| match u {
                acp::SessionUpdate::UserMessageChunk {
                    content: acp::ContentBlock::Text { text },
                } => format!("user: {}", text.trim()),
                acp::SessionUpdate::AgentMessageChunk {
                    content: acp::ContentBlock::Text { text },
                } => format!("agent: {}", text.trim()),
                acp::SessionUpdate::ToolCall(call) => format!("tool: {}", call.title),
                _ => "other".to_owned(),
            })
            .collect()
    }

    #[test]
    fn each_loop_replays_as_its_prompt_then_its_work() {
        // Out of turn order, as a history is (an entry that changes moves to its end).
        let history = vec![
            item("update://turn_1/1", "update", 1, "Read it."),
            item("prompt://2", "prompt", 2, "And now?"),
            item("get://turn_1/src%2Fa.rs", "get", 1, "fn a() {}"),
            item("prompt://1", "prompt", 1, "What does a do?"),
            item("update://turn_2/1", "update", 2, "Nothing more."),
        ];
        assert_eq!(
            kinds(&of_history(&history, "/p")),
            vec![
                "user: What does a do?",
                "agent: Read it.",
                "tool: get src/a.rs",
                "user: And now?",
                "agent: Nothing more.",
            ]
        );
    }

    #[test]
    fn only_the_newest_loops_are_replayed() {
        let mut history = Vec::new();
        for n in 1..=(LOOPS_REPLAYED as i64 + 2) {
            history.push(item(
                &format!("prompt://{n}"),
                "prompt",
                n,
                &format!("p{n}"),
            ));
            history.push(item(
                &format!("update://turn_{n}/1"),
                "update",
                n,
                &format!("u{n}"),
            ));
        }
        let replay = kinds(&of_history(&history, "/p"));
        assert_eq!(replay.len(), 2 * LOOPS_REPLAYED);
        assert_eq!(replay[0], "user: p3");
        assert_eq!(replay[1], "agent: u3");
    }
}
