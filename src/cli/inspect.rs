//! `runs` and `show`: the project's runs, and one run's history, read back from the server.

use super::args::{RunsArgs, ShowArgs};
use super::exit::Exit;
use super::out::{print, print_json};
use super::render;
use super::session::{Failure, Intent, Session};
use super::view::{short_count, View};
use rummy_client::params::{GetEntriesParams, Page};
use rummy_client::results::{FailureKind, HistoryItem, ProposalKind, State, ToolName, Visibility};
use serde_json::Value;

/// `runs`: the project's runs with status, turns, tokens, cost and age.
pub async fn runs(args: RunsArgs) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Open).await?;
    let page = Page {
        limit: Some(args.limit),
        offset: None,
    };
    if args.json {
        let list: Value = session
            .client
            .call("getRuns", &page)
            .await
            .map_err(|e| Failure::call("listing the runs", e))?;
        print_json(&list);
        session.close().await;
        return Ok(Exit::Ok);
    }
    let list = session
        .client
        .get_runs(page)
        .await
        .map_err(|e| Failure::call("listing the runs", e))?;
    if list.is_empty() {
        print(&format!(
            "no runs in project {} yet: start one with `rummy act \"...\"`",
            session.project
        ));
    } else {
        print(&format!(
            "{:<20} {:<12} {:>6} {:>8} {:>8} {:>8}  {:<12} SUMMARY",
            "RUN", "STATUS", "TURNS", "TOKENS", "COST", "AGE", "MODEL"
        ));
    }
    let now = std::time::SystemTime::now();
    for run in list {
        print(&format!(
            "{:<20} {:<12} {:>6} {:>8} {:>8} {:>8}  {:<12} {}",
            run.run,
            render::status_word(run.status, None),
            run.turn,
            short_count(run.tokens),
            format!("${:.3}", run.cost),
            age(run.created.as_deref(), now),
            run.model.unwrap_or_default(),
            run.summary.unwrap_or_default()
        ));
    }
    session.close().await;
    Ok(Exit::Ok)
}

/// How long ago an RFC 3339 UTC time was: `42s`, `5m`, `3h`, `2d`.
fn age(created: Option<&str>, now: std::time::SystemTime) -> String {
    let Some(then) = created.and_then(parse_utc) else {
        return "-".into();
    };
    let secs = now
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
        .saturating_sub(then);
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3_600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3_600),
        s => format!("{}d", s / 86_400),
    }
}

/// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SS…Z`.
fn parse_utc(text: &str) -> Option<u64> {
    let num = |range: std::ops::Range<usize>| text.get(range)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + hh * 3_600 + mm * 60 + ss).ok()
}

/// `show`: a run's state.
pub async fn show(args: ShowArgs) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Open).await?;
    let params = rummy_client::params::GetRunParams {
        run: args.run.clone(),
        ..Default::default()
    };
    let raw: Value = session
        .client
        .call("getRun", &params)
        .await
        .map_err(|e| Failure::run_call(&session.project, &args.run, e))?;
    if args.json {
        print_json(&raw);
        session.close().await;
        return Ok(Exit::Ok);
    }
    let snapshot: rummy_client::results::RunSnapshot = serde_json::from_value(raw)
        .map_err(|e| Failure::new(Exit::Failure, format!("unexpected getRun answer: {e}")))?;
    let view = View::new(false);
    let style = view.style;
    drop(view);
    print(&format!(
        "{} {} · {} · {} · model {} · {} tokens · ${:.3} · created {}",
        style.bold("run"),
        style.cyan(&snapshot.run),
        render::status_word(snapshot.status, snapshot.stop_reason),
        render::turns(snapshot.turn),
        snapshot.model.clone().unwrap_or_default(),
        short_count(snapshot.telemetry.total_tokens),
        snapshot.telemetry.cost,
        snapshot.created.clone().unwrap_or_default()
    ));
    if let Some(summary) = snapshot.summary.as_deref().filter(|s| !s.is_empty()) {
        print(&format!("{} {summary}", style.dim("summary:")));
    }
    print(&style.bold("history"));
    let mut turn = 0;
    for item in snapshot
        .history
        .iter()
        .filter(|i| i.path.contains("://turn_"))
    {
        if item.attributes.contains_key("channel") {
            continue;
        }
        if item.turn != turn {
            turn = item.turn;
            print(&style.dim(&format!("─ turn {turn}")));
        }
        print(&format!(
            "  {}",
            history_line(item, &snapshot.history, style)
        ));
    }
    let pending: Vec<&HistoryItem> = snapshot
        .history
        .iter()
        .filter(|i| i.is_pending_proposal())
        .collect();
    if !pending.is_empty() {
        print(&style.bold("pending proposals"));
        for item in pending {
            for line in render::proposal_lines(item, style) {
                print(&format!("  {line}"));
            }
            print(&format!(
                "    {}",
                style.dim(&format!("path: {}", item.path))
            ));
        }
    }
    if !snapshot.unknowns.is_empty() {
        print(&style.bold("open questions"));
        for unknown in &snapshot.unknowns {
            print(&format!(
                "  {} {}",
                style.yellow(&unknown.path),
                unknown.body
            ));
        }
    }
    let entries = session
        .client
        .get_entries(&GetEntriesParams {
            run: args.run.clone(),
            limit: Some(1000),
            ..GetEntriesParams::default()
        })
        .await
        .map_err(|e| Failure::call("listing the entries", e))?;
    print(&style.bold("entries"));
    for visibility in Visibility::ALL.iter().copied() {
        let of: Vec<_> = entries
            .iter()
            .filter(|e| e.visibility == visibility)
            .collect();
        let tokens: i64 = of.iter().map(|e| e.tokens).sum();
        print(&format!(
            "  {:<10} {:>4} entries {:>7} tokens",
            visibility.as_str(),
            of.len(),
            short_count(tokens)
        ));
    }
    let t = snapshot.telemetry;
    print(&style.bold("telemetry"));
    print(&format!(
        "  prompt {} · cached {} · completion {} · reasoning {} · total {} · ${:.4}",
        short_count(t.prompt_tokens),
        short_count(t.cached_tokens),
        short_count(t.completion_tokens),
        short_count(t.reasoning_tokens),
        short_count(t.total_tokens),
        t.cost
    ));
    session.close().await;
    Ok(Exit::Ok)
}

/// One line of `show`'s history. A proposal says what became of it: accepted, rejected (with
/// the reason the model read), failed; an accepted command also how it ended — its exit code,
/// or why it has none (interrupted by a restart, cancelled, refused by the sandbox).
fn history_line(item: &HistoryItem, history: &[HistoryItem], style: super::view::Style) -> String {
    if item.tool_name() == ToolName::Update {
        return style.cyan(&format!("» {}", item.body.as_deref().unwrap_or_default()));
    }
    if !item.is_proposal() {
        return render::command_line(item, style);
    }
    let kind = item.attr("kind").unwrap_or(&item.tool);
    let outcome = item.outcome.as_deref().filter(|o| !o.is_empty());
    let (ok, what) = match (item.state, outcome) {
        (State::Proposed, _) => (None, "waiting".to_owned()),
        (State::Cancelled, Some(reason)) if reason != "rejected" => {
            (Some(false), format!("rejected: {reason}"))
        }
        (State::Cancelled, _) => (Some(false), "rejected".to_owned()),
        (State::Resolved, _) => match command_end(item, history) {
            Some((ok, end)) => (Some(ok), format!("accepted, {end}")),
            None => (Some(true), "accepted".to_owned()),
        },
        (state, Some(why)) => (Some(false), format!("{state}: {why}")),
        (state, None) => (Some(false), state.to_string()),
    };
    let mark = match ok {
        Some(true) => style.green("✓"),
        Some(false) => style.red("✗"),
        None => style.yellow("?"),
    };
    format!(
        "{mark} {} {} ({what})",
        style.bold(kind),
        render::target(item)
    )
}

/// How an accepted command ended, from its first output channel: whether it went well, and
/// `exit 0`, `exit 3`, or why it has no exit code. `None` for what is not a command, or a
/// command still running.
fn command_end(item: &HistoryItem, history: &[HistoryItem]) -> Option<(bool, String)> {
    if !matches!(item.proposal(), Some(ProposalKind::Sh | ProposalKind::Env)) {
        return None;
    }
    if let Some(code) = item.attributes.get("exitCode").and_then(Value::as_i64) {
        return Some((code == 0, format!("exit {code}")));
    }
    let first = format!("{}_1", item.path);
    let channel = history.iter().find(|i| i.path == first)?;
    match (channel.state, channel.outcome.as_deref()) {
        (State::Streaming, _) => Some((true, "running".to_owned())),
        (State::Resolved, _) => Some((true, "exit 0".to_owned())),
        (_, Some(outcome)) => match channel.failure() {
            Some(FailureKind::Exit { code }) => Some((false, format!("exit {code}"))),
            _ => Some((false, outcome.to_owned())),
        },
        (state, None) => Some((false, state.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Ages of RFC 3339 times, in the largest whole unit.
    #[test]
    fn ages() {
        assert_eq!(parse_utc("1970-01-02T00:00:01.500Z"), Some(86_401));
        let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(3 * 86_400);
        let shown: Vec<String> = [
            Some("1970-01-03T23:59:18Z"),
            Some("1970-01-03T21:00:00Z"),
            Some("1970-01-01T00:00:00Z"),
            None,
        ]
        .into_iter()
        .map(|t| age(t, now))
        .collect();
        assert_eq!(shown, vec!["42s", "3h", "3d", "-"]);
    }

    /// `show` says what became of a proposal: a rejection with its reason, an accepted command
    /// with its exit code, or why it has none (a restart killed it: not shown as fine).
    #[test]
    fn history_lines_say_what_became_of_proposals() {
        let item = |value: Value| -> HistoryItem { serde_json::from_value(value).unwrap() };
        let plain = crate::cli::view::Style::new(false);
        let rejected = item(
            serde_json::json!({"path": "set://turn_1/a.txt", "tool": "set",
            "state": "cancelled", "status": 202, "outcome": "keep it",
            "attributes": {"kind": "edit", "path": "a.txt", "commandIndex": 0}}),
        );
        let killed = item(serde_json::json!({"path": "sh://turn_2/make", "tool": "sh",
            "state": "resolved", "status": 200,
            "attributes": {"kind": "sh", "command": "make", "commandIndex": 0}}));
        let channel = item(
            serde_json::json!({"path": "sh://turn_2/make_1", "tool": "sh",
            "state": "failed", "status": 200, "outcome": "interrupted by restart",
            "attributes": {"channel": 1}}),
        );
        let ran = item(serde_json::json!({"path": "sh://turn_3/ls", "tool": "sh",
            "state": "resolved", "status": 200,
            "attributes": {"kind": "sh", "command": "ls", "commandIndex": 0, "exitCode": 0}}));
        let history = [rejected.clone(), killed.clone(), channel, ran.clone()];
        let lines: Vec<String> = [rejected, killed, ran]
            .iter()
            .map(|i| history_line(i, &history, plain))
            .collect();
        assert_eq!(
            lines,
            vec![
                "✗ edit a.txt (rejected: keep it)",
                "✗ sh make (accepted, interrupted by restart)",
                "✓ sh ls (accepted, exit 0)",
            ]
        );
    }
}
