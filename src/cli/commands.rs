//! The client's commands: start or follow a run, list and show runs, steer them, list models.

use super::args::{
    ApproveArgs, CancelArgs, FollowArgs, ForkArgs, InjectArgs, ModelsArgs, RejectArgs,
    RouteCheckArgs, RoutesArgs, RunsArgs, ShowArgs, StartArgs, WatchArgs,
};
use super::exit::Exit;
use super::follow::{Follow, Policy};
use super::render;
use super::session::{Failure, Intent, Session};
use super::view::{short_count, View};
use rummy_client::params::{GetEntriesParams, Page, RouteCheckParams, RunAttributes};
use rummy_client::results::{
    FailureKind, HistoryItem, Model, ProposalKind, State, ToolName, Visibility,
};
use rummy_client::Decision;
use serde_json::Value;
use std::io::Write;

/// `ask` / `act`: starts (or continues) a run on this directory's project and follows it.
pub async fn start(args: StartArgs, mode: &str) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Start).await?;
    let models = session
        .client
        .get_models(Page::default())
        .await
        .map_err(|e| Failure::call("listing the models", e))?;
    let model = choose_model(args.model.as_deref(), &models)?;
    let attributes = RunAttributes {
        model: Some(model.clone()),
        mode: Some(mode.to_owned()),
        persona: args.persona.clone(),
        route: args.route.then_some(true),
        fallback: args.no_fallback.then_some(false),
        // Added before the first turn, so it is built with them.
        skills: (!args.skill.is_empty()).then(|| args.skill.clone()),
        ..RunAttributes::default()
    };
    let prompt = args.prompt.join(" ");
    // A named run that exists is continued: its summary counts the turns from here.
    let base_turn = match args.run.as_deref() {
        Some(name) => session
            .client
            .get_run(name, None)
            .await
            .map_or(0, |run| run.turn),
        None => 0,
    };
    let run = session
        .client
        .start_run(args.run.as_deref(), &prompt, &attributes)
        .await
        .map_err(|e| Failure::call("starting the run", e))?;
    let context = context_of(&models, &model);
    let mut view = View::new(args.follow.json);
    let style = view.style;
    view.line(&format!(
        "{} {} · {} · project {} ({}) · model {model}",
        style.bold("rummy"),
        mode,
        style.cyan(&run),
        session.project,
        session.root
    ));
    view.line(&format!("{} {prompt}", style.dim("›")));
    let exit = Follow::new(
        &mut session,
        &mut view,
        &run,
        policy(&args.follow),
        Some(model),
        context,
    )
    .after_turn(base_turn)
    .run()
    .await;
    session.close().await;
    exit
}

/// The model a run uses: the one named, else the server's only one.
fn choose_model(named: Option<&str>, models: &[Model]) -> Result<String, Failure> {
    if let Some(model) = named {
        return Ok(model.to_owned());
    }
    match models {
        [only] => Ok(only.alias.clone()),
        [] => Err(
            Failure::new(Exit::Usage, "the server has no model configured").hint(
                "configure one for the server (RUMMY_MODEL_<alias>=openai/<model> and \
             OPENAI_BASE_URL, see the README), or try `rummy demo`",
            ),
        ),
        many => {
            let names: Vec<&str> = many.iter().map(|m| m.alias.as_str()).collect();
            Err(
                Failure::new(Exit::Usage, "which model? the server has several")
                    .hint(format!("pass --model with one of: {}", names.join(", "))),
            )
        }
    }
}

fn context_of(models: &[Model], alias: &str) -> Option<i64> {
    models
        .iter()
        .find(|m| m.alias == alias)
        .and_then(|m| m.context_length)
}

fn policy(args: &FollowArgs) -> Policy {
    match (args.yes, args.no) {
        (true, _) => Policy::AcceptAll,
        (_, true) => Policy::RejectAll,
        _ => Policy::Ask,
    }
}

/// `watch`: follows a run from where it stands.
pub async fn watch(args: WatchArgs) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Open).await?;
    let snapshot = session
        .client
        .get_run(&args.run, None)
        .await
        .map_err(|e| Failure::run_call(&session.project, &args.run, e))?;
    session.client.follow(&args.run, snapshot.last_seq);
    let models = session
        .client
        .get_models(Page::default())
        .await
        .unwrap_or_default();
    let model = snapshot.model.clone();
    let context = model.as_deref().and_then(|m| context_of(&models, m));
    let mut view = View::new(args.follow.json);
    let style = view.style;
    view.line(&format!(
        "{} watching {} · {} · turn {} · {}",
        style.bold("rummy"),
        style.cyan(&args.run),
        render::status_word(snapshot.status, snapshot.stop_reason),
        snapshot.turn,
        snapshot.summary.clone().unwrap_or_default()
    ));
    let mut follow = Follow::new(
        &mut session,
        &mut view,
        &args.run,
        policy(&args.follow),
        model,
        context,
    );
    follow.attach(&snapshot);
    let exit = follow.run().await;
    session.close().await;
    exit
}

/// `fork`: a new run from a parent's context, followed.
pub async fn fork(args: ForkArgs) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Open).await?;
    let parent = session
        .client
        .get_run(&args.run, None)
        .await
        .map_err(|e| Failure::run_call(&session.project, &args.run, e))?;
    let model =
        args.model.clone().or(parent.model.clone()).ok_or_else(|| {
            Failure::new(Exit::Usage, "the parent run has no model: pass --model")
        })?;
    let attributes = RunAttributes {
        model: Some(model.clone()),
        mode: Some(if args.ask { "ask" } else { "act" }.to_owned()),
        ..RunAttributes::default()
    };
    let prompt = args.prompt.join(" ");
    let run = session
        .client
        .fork_run(&args.run, &args.new, &prompt, &attributes)
        .await
        .map_err(|e| Failure::call("forking the run", e))?;
    let models = session
        .client
        .get_models(Page::default())
        .await
        .unwrap_or_default();
    let context = context_of(&models, &model);
    let mut view = View::new(args.follow.json);
    let style = view.style;
    view.line(&format!(
        "{} fork of {} · {} · model {model}",
        style.bold("rummy"),
        args.run,
        style.cyan(&run)
    ));
    let exit = Follow::new(
        &mut session,
        &mut view,
        &run,
        policy(&args.follow),
        Some(model),
        context,
    )
    .after_turn(parent.turn)
    .run()
    .await;
    session.close().await;
    exit
}

/// Writes lines to stdout; a closed stdout (`| head`) ends the listing quietly.
fn print(text: &str) {
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{text}");
}

fn print_json(value: &Value) {
    print(&value.to_string());
}

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

/// `approve`: accepts the proposals named (by their paths or the files they act on), or every
/// pending one. A name that matches no pending proposal, or a file that several act on, is
/// refused (4) before anything is accepted.
pub async fn approve(args: ApproveArgs) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Open).await?;
    let pending = pending(&mut session, &args.run).await?;
    let mut paths: Vec<String> = Vec::new();
    if args.paths.is_empty() {
        paths.extend(pending.iter().map(|p| p.path.clone()));
    } else {
        for name in &args.paths {
            let proposal = named(&args.run, name, &pending)?;
            if !paths.contains(&proposal.path) {
                paths.push(proposal.path.clone());
            }
        }
    }
    if paths.is_empty() {
        print(&format!("run {} has no pending proposal", args.run));
        session.close().await;
        return Ok(Exit::Ok);
    }
    let mut exit = Exit::Ok;
    for path in paths {
        // What was listed is what is accepted: the server refuses it (-32005) if it changed.
        let approves = pending
            .iter()
            .find(|p| p.path == path)
            .and_then(|p| p.hash.clone());
        match session
            .client
            .resolve(
                &args.run,
                &path,
                Decision::Accept(None),
                approves.as_deref(),
            )
            .await
        {
            Ok(ack) => {
                let state = ack.state.unwrap_or(State::Resolved);
                let outcome = ack.outcome.map(|o| format!(" ({o})")).unwrap_or_default();
                print(&format!("{path}: {state}{outcome}"));
                if ack.runner.as_deref() == Some("client") {
                    run_here(&mut session, &args.run, &path).await?;
                }
            }
            Err(e) => {
                let failure = Failure::call(&path, e);
                eprintln_failure(&failure);
                exit = failure.exit;
            }
        }
    }
    session.close().await;
    Ok(exit)
}

/// Runs an accepted command this client must run (the server asked it to), streaming it back.
async fn run_here(session: &mut Session, run: &str, path: &str) -> Result<(), Failure> {
    let snapshot = session
        .client
        .get_run(run, None)
        .await
        .map_err(|e| Failure::call("reading the command", e))?;
    let Some(item) = snapshot.history.iter().find(|i| i.path == path) else {
        return Ok(());
    };
    let command = render::target(item);
    let mut running = super::runner::Running::start(run, path, &command, &session.root);
    print(&format!("$ {command}"));
    while let Some(out) = running.output.recv().await {
        match out {
            super::runner::Output::Chunk { channel, text } => {
                let params = rummy_client::params::StreamParams {
                    run: run.to_owned(),
                    path: path.to_owned(),
                    channel,
                    chunk: text.clone(),
                };
                let _ = session.client.stream(&params).await;
                let _ = write!(std::io::stdout(), "{text}");
            }
            super::runner::Output::Exited(result) => {
                let (run, path, duration) = (run.to_owned(), path.to_owned(), running.duration());
                let why = match result {
                    Ok(Some(code)) => {
                        print(&format!("exit {code}"));
                        let end = rummy_client::params::StreamCompletedParams {
                            run,
                            path,
                            exit_code: Some(code),
                            duration: Some(duration),
                        };
                        let sent = session.client.stream_completed(&end).await;
                        sent.map_err(|e| Failure::call("recording the command's end", e))?;
                        continue;
                    }
                    Ok(None) => "killed by a signal".to_owned(),
                    Err(why) => why,
                };
                let end = rummy_client::params::StreamAbortedParams {
                    run,
                    path,
                    reason: Some(why),
                    duration: Some(duration),
                };
                let sent = session.client.stream_aborted(&end).await;
                sent.map_err(|e| Failure::call("recording the command's end", e))?;
            }
        }
    }
    Ok(())
}

/// A run's pending proposal, as `approve` and `reject` find it by name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pending {
    /// Its path (`set://turn_2/a.txt`).
    path: String,
    /// What `rummy show` calls it (`edit a.txt`, `sh ls -l`).
    label: String,
    /// The project files it acts on ([`render::proposal_files`]).
    files: Vec<String>,
    /// The hash of what it does, as listed: what accepting it approves.
    hash: Option<String>,
}

impl Pending {
    fn of(
        path: String,
        attributes: &serde_json::Map<String, Value>,
        hash: Option<String>,
    ) -> Pending {
        let kind = match attributes.get("kind").and_then(Value::as_str) {
            Some(kind) => kind.to_owned(),
            None => path.split("://").next().unwrap_or_default().to_owned(),
        };
        Pending {
            label: format!("{kind} {}", render::target_of(&path, attributes)),
            files: render::proposal_files(attributes),
            path,
            hash,
        }
    }
}

/// A run's pending proposals.
async fn pending(session: &mut Session, run: &str) -> Result<Vec<Pending>, Failure> {
    let entries = session
        .client
        .get_entries(&GetEntriesParams {
            run: run.to_owned(),
            state: Some(State::Proposed.as_str().to_owned()),
            with_body: false,
            limit: Some(1000),
            ..GetEntriesParams::default()
        })
        .await
        .map_err(|e| Failure::run_call(&session.project, run, e))?;
    Ok(entries
        .into_iter()
        .filter(|e| e.proposal().is_some())
        .map(|e| Pending::of(e.path, &e.attributes, e.hash))
        .collect())
}

/// The pending proposal of `run` that `name` names: the one whose path it is, else the one
/// acting on the project file it is (the name `rummy show` gives it: `edit a.txt`). None, or
/// several acting on that file, is refused (4), saying what is pending; nothing is resolved.
fn named<'p>(run: &str, name: &str, pending: &'p [Pending]) -> Result<&'p Pending, Failure> {
    if let Some(proposal) = pending.iter().find(|p| p.path == name) {
        return Ok(proposal);
    }
    let acting: Vec<&Pending> = pending
        .iter()
        .filter(|p| p.files.iter().any(|f| f == name))
        .collect();
    let list = |proposals: &[&Pending]| {
        proposals
            .iter()
            .map(|p| format!("{} ({})", p.path, p.label))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match acting.as_slice() {
        [one] => Ok(one),
        [] if pending.is_empty() => Err(Failure::new(
            Exit::Refused,
            format!("run {run} has no pending proposal (nothing is {name}); nothing was resolved"),
        )),
        [] => Err(Failure::new(
            Exit::Refused,
            format!(
                "no pending proposal of run {run} is {name} or acts on it; nothing was resolved"
            ),
        )
        .hint(format!(
            "pending: {}",
            list(&pending.iter().collect::<Vec<_>>())
        ))),
        several => Err(Failure::new(
            Exit::Refused,
            format!(
                "{} pending proposals of run {run} act on {name}; nothing was resolved",
                several.len()
            ),
        )
        .hint(format!("name one by its path: {}", list(several)))),
    }
}

/// `reject`: rejects the proposal named (by its path or the file it acts on), with the reason.
pub async fn reject(args: RejectArgs) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Open).await?;
    let pending = pending(&mut session, &args.run).await?;
    let path = named(&args.run, &args.path, &pending)?.path.clone();
    let ack = session
        .client
        .resolve(
            &args.run,
            &path,
            Decision::Reject(args.reason.clone()),
            None,
        )
        .await
        .map_err(|e| Failure::call(&path, e))?;
    let state = ack.state.unwrap_or(State::Cancelled);
    print(&match (state, ack.outcome.as_deref()) {
        (State::Cancelled, Some(reason)) if reason != "rejected" => {
            format!("{path}: rejected: {reason}")
        }
        (State::Cancelled, _) => format!("{path}: rejected"),
        (other, outcome) => format!(
            "{path}: {other}{}",
            outcome.map(|o| format!(" ({o})")).unwrap_or_default()
        ),
    });
    session.close().await;
    Ok(Exit::Ok)
}

/// How long `inject` waits to learn what became of a prompt folded into a running loop.
const INJECT_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// What became of a prompt folded into a running loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Injected {
    /// The loop went on: the model reads it at this turn.
    Read(i64),
    /// The loop concluded at this turn before reading it: the prompt starts a loop of its own.
    NewLoop(i64),
    /// The loop was cancelled first: the prompt went with it.
    Dropped,
}

/// `inject`: into a run that exists (one that does not is said so, nothing is started). A
/// prompt folded into a running loop is read at its next turn, unless the turn in flight
/// concludes the loop first: then it starts a new loop. Which one is known only when that turn
/// ends, so `inject` waits for it a few seconds and says what happened (or both, when the
/// turn takes longer). With no loop under way it starts one at once.
pub async fn inject(args: InjectArgs) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Open).await?;
    let before = session
        .client
        .get_run(&args.run, None)
        .await
        .map_err(|e| Failure::run_call(&session.project, &args.run, e))?;
    session.client.follow(&args.run, before.last_seq);
    let ack = session
        .client
        .inject(&args.run, &args.prompt.join(" "))
        .await
        .map_err(|e| Failure::run_call(&session.project, &args.run, e))?;
    let run = &args.run;
    let text = if ack.injected == Some(true) {
        match injected(&mut session, run, before.turn).await {
            Some(Injected::Read(turn)) => {
                format!("injected into run {run}'s running loop: the model reads it at turn {turn}")
            }
            Some(Injected::NewLoop(turn)) => format!(
                "run {run}'s loop concluded at turn {turn} before reading it: the prompt starts \
                 a new loop of the run (`rummy watch {run}` follows it)"
            ),
            Some(Injected::Dropped) => {
                format!("run {run}'s loop was cancelled before reading it: the prompt went with it")
            }
            None => format!(
                "injected into run {run}'s running loop (at turn {}): the model reads it next \
                 turn; should that turn conclude the loop first, the prompt starts a new loop",
                before.turn
            ),
        }
    } else {
        format!(
            "run {run} was {}: the prompt starts a new loop of the run (`rummy watch {run}` \
             follows it)",
            render::status_word(before.status, before.stop_reason)
        )
    };
    print(&text);
    session.close().await;
    Ok(Exit::Ok)
}

/// What became of a prompt folded into `run`'s loop at `turn`, from the run's pushes, once
/// known within [`INJECT_WAIT`].
async fn injected(session: &mut Session, run: &str, turn: i64) -> Option<Injected> {
    use rummy_client::Notification;
    let deadline = std::time::Instant::now() + INJECT_WAIT;
    loop {
        let left = deadline.checked_duration_since(std::time::Instant::now())?;
        let (note, _) = session.client.next_message(Some(left)).await.ok()?;
        match note {
            Notification::RunState(state) if state.run == run => {
                if !matches!(state.status, 100 | 102 | 202) {
                    return Some(if state.status == 499 {
                        Injected::Dropped
                    } else {
                        Injected::NewLoop(state.turn)
                    });
                }
                if state.turn > turn {
                    return Some(Injected::Read(state.turn));
                }
            }
            Notification::RunProgress(p) if p.run == run && p.turn > turn => {
                return Some(Injected::Read(p.turn));
            }
            _ => {}
        }
    }
}

/// `cancel`: cancels the run's loop; a run that had already ended is said so (12). The cancel
/// is sent either way: it also stops commands a finished loop left running on the server.
pub async fn cancel(args: CancelArgs) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Open).await?;
    let before = session
        .client
        .get_run(&args.run, None)
        .await
        .map_err(|e| Failure::run_call(&session.project, &args.run, e))?;
    session
        .client
        .cancel_run(&args.run)
        .await
        .map_err(|e| Failure::run_call(&session.project, &args.run, e))?;
    session.close().await;
    if matches!(before.status, 100 | 102 | 202) {
        print(&format!("run {} cancelled", args.run));
        return Ok(Exit::Ok);
    }
    Err(Failure::new(
        Exit::AlreadyEnded,
        format!(
            "run {} had already ended ({}): nothing to cancel",
            args.run,
            render::status_word(before.status, before.stop_reason)
        ),
    ))
}

/// `models`.
pub async fn models(args: ModelsArgs) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Server).await?;
    if let Some(alias) = &args.remove {
        session
            .client
            .remove_model(alias)
            .await
            .map_err(|e| Failure::call(&format!("removing model {alias}"), e))?;
        print(&format!("model {alias} removed"));
        session.close().await;
        return Ok(Exit::Ok);
    }
    let page = Page {
        limit: Some(1000),
        offset: None,
    };
    if args.json {
        let list: Value = session
            .client
            .call("getModels", &page)
            .await
            .map_err(|e| Failure::call("listing the models", e))?;
        print_json(&list);
    } else {
        let list = session
            .client
            .get_models(page)
            .await
            .map_err(|e| Failure::call("listing the models", e))?;
        if list.is_empty() {
            print(
                "no models: configure one for the server (RUMMY_MODEL_<alias>=<provider>/<model>)",
            );
        } else {
            print(&format!(
                "{:<16} {:<12} {:<32} {:>9}  {:<16} SOURCE",
                "ALIAS", "PROVIDER", "MODEL", "CONTEXT", "FALLBACK"
            ));
        }
        let stored = list.iter().filter(|m| m.configured == Some(false)).count();
        for model in list {
            let (provider, name) = model.actual.split_once('/').unwrap_or(("", &model.actual));
            print(&format!(
                "{:<16} {:<12} {:<32} {:>9}  {:<16} {}",
                model.alias,
                provider,
                name,
                model.context_length.map_or("-".into(), short_count),
                model.fallback.unwrap_or_default(),
                match model.configured {
                    Some(true) => "environment",
                    Some(false) => "stored",
                    None => "-",
                }
            ));
        }
        if stored > 0 {
            print(
                "stored: not in the server's environment now (an earlier start's, or addModel); \
                 `rummy models --remove ALIAS` removes one (admin)",
            );
        }
    }
    session.close().await;
    Ok(Exit::Ok)
}

/// `routes`: routing's class → model map.
pub async fn routes(args: RoutesArgs) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Server).await?;
    if args.json {
        let list: Value = session
            .client
            .call("getRoutes", &rummy_client::params::NoParams {})
            .await
            .map_err(|e| Failure::call("listing the routes", e))?;
        print_json(&list);
        session.close().await;
        return Ok(Exit::Ok);
    }
    let list = session
        .client
        .get_routes()
        .await
        .map_err(|e| Failure::call("listing the routes", e))?;
    print(&format!("{:<10} {:<16} SETTING", "CLASS", "MODEL"));
    for route in &list {
        print(&format!(
            "{:<10} {:<16} {}",
            route.class,
            route.model.as_deref().unwrap_or("-"),
            route.variable
        ));
    }
    print(if list.iter().all(|r| r.model.is_none()) {
        "routing is off on this server: no class is mapped, so every run keeps its own model"
    } else {
        "runs started with --route send each loop to its class's model; `-` keeps the run's own"
    });
    session.close().await;
    Ok(Exit::Ok)
}

/// `route check`: the class of a text and the model a loop starting with it would use.
pub async fn route_check(args: RouteCheckArgs) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Open).await?;
    let params = RouteCheckParams {
        text: args.text.join(" "),
        run: args.run.clone(),
    };
    if args.json {
        let answer: Value = session
            .client
            .call("route/check", &params)
            .await
            .map_err(|e| Failure::call("checking the route", e))?;
        print_json(&answer);
        session.close().await;
        return Ok(Exit::Ok);
    }
    let check = session
        .client
        .route_check(&params)
        .await
        .map_err(|e| Failure::call("checking the route", e))?;
    print(&format!("class    {}", check.class));
    print(&format!(
        "model    {}",
        check.model.as_deref().unwrap_or("the run's own")
    ));
    print(&format!(
        "routing  {}",
        if check.routing { "on" } else { "off" }
    ));
    print(&format!("why      {}", check.reason));
    session.close().await;
    Ok(Exit::Ok)
}

/// Prints a failure to stderr: `rummy: what` and its hint.
pub fn eprintln_failure(failure: &Failure) {
    let mut err = std::io::stderr();
    let _ = writeln!(err, "rummy: {}", failure.message);
    if let Some(hint) = &failure.hint {
        let _ = writeln!(err, "  {hint}");
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

    /// The model is the one named, else the server's only one; several is a usage error.
    #[test]
    fn choosing_the_model() {
        let model = |alias: &str| Model {
            alias: alias.into(),
            actual: format!("openai/{alias}"),
            context_length: None,
            fallback: None,
            configured: None,
        };
        assert_eq!(choose_model(None, &[model("a")]).unwrap(), "a");
        assert_eq!(choose_model(Some("b"), &[model("a")]).unwrap(), "b");
        let several = choose_model(None, &[model("a"), model("b")]).unwrap_err();
        assert_eq!(
            (several.exit, several.hint),
            (
                Exit::Usage,
                Some("pass --model with one of: a, b".to_owned())
            )
        );
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

    /// A proposal is named by its own path or by a project file it acts on, exactly; a name
    /// that matches none, or a file several act on, is refused 4 with what is pending.
    #[test]
    fn naming_a_pending_proposal() {
        let proposal = |path: &str, attributes: Value| {
            Pending::of(path.to_owned(), attributes.as_object().unwrap(), None)
        };
        let pending = [
            proposal(
                "set://turn_2/a.txt",
                serde_json::json!({"kind": "edit", "path": "a.txt", "commandIndex": 0}),
            ),
            proposal(
                "sh://turn_2/ls",
                serde_json::json!({"kind": "sh", "command": "ls -l", "commandIndex": 1}),
            ),
            proposal(
                "rm://turn_3/b.txt",
                serde_json::json!({"kind": "rm", "paths": ["b.txt", "c.txt"], "commandIndex": 0}),
            ),
            proposal(
                "mv://turn_3/known%3A%2F%2Fx",
                serde_json::json!({"kind": "mv", "from": "known://x", "to": "c.txt", "commandIndex": 1}),
            ),
        ];
        let path_of = |name: &str| named("r", name, &pending).map(|p| p.path.clone());

        assert_eq!(
            (
                path_of("a.txt").unwrap(),
                path_of("set://turn_2/a.txt").unwrap(),
                path_of("sh://turn_2/ls").unwrap(),
                path_of("b.txt").unwrap(),
            ),
            (
                "set://turn_2/a.txt".to_owned(),
                "set://turn_2/a.txt".to_owned(),
                "sh://turn_2/ls".to_owned(),
                "rm://turn_3/b.txt".to_owned(),
            )
        );
        assert_eq!(pending[0].label, "edit a.txt");
        let refusal = |name: &str| {
            let f = named("r", name, &pending).unwrap_err();
            (f.exit, f.message, f.hint)
        };
        assert_eq!(
            refusal("f.txt"),
            (
                Exit::Refused,
                "no pending proposal of run r is f.txt or acts on it; nothing was resolved"
                    .to_owned(),
                Some(
                    "pending: set://turn_2/a.txt (edit a.txt), sh://turn_2/ls (sh ls -l), \
                     rm://turn_3/b.txt (rm b.txt), mv://turn_3/known%3A%2F%2Fx (mv known://x)"
                        .to_owned()
                )
            )
        );
        for inexact in ["./a.txt", "A.txt", "a", "ls -l", "known://x"] {
            assert_eq!(refusal(inexact).0, Exit::Refused, "{inexact}");
        }
        assert_eq!(
            refusal("c.txt"),
            (
                Exit::Refused,
                "2 pending proposals of run r act on c.txt; nothing was resolved".to_owned(),
                Some(
                    "name one by its path: rm://turn_3/b.txt (rm b.txt), \
                     mv://turn_3/known%3A%2F%2Fx (mv known://x)"
                        .to_owned()
                )
            )
        );
        let none = named("r", "a.txt", &[]).unwrap_err();
        assert_eq!(
            (none.exit, none.message, none.hint),
            (
                Exit::Refused,
                "run r has no pending proposal (nothing is a.txt); nothing was resolved".to_owned(),
                None
            )
        );
    }
}
