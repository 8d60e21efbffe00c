//! Dispatching one parsed command: its handler runs and its result entry records what happened, in emission order.
//!
//! The order of checks is the contract with the executor: `think` is never
//! recorded; `update` always applies (a lifecycle signal); after a failed
//! action everything else is recorded as aborted and not run; an invalid
//! target, or a tool the loop's mode or flags remove, is refused with a
//! visible reason and not run; only then does the tool's handler (in
//! `crate::tools`) run. Every tool is a [`ToolName`] by now: a tag that names
//! no tool stayed prose in the parser, and a native call naming an unknown
//! tool left a warning there. A store error the model caused (writer tier, bad
//! path) becomes a failed result the model reads next turn, never a crash.

use crate::tools::{self, handler::ToolResult, policy, ToolName};
use rummy_provider::time::Millis;
use rummy_store::db::Db;
use rummy_store::entries::{self, EntryWrite, WriteCtx};
use rummy_store::entry::FailureKind;
use rummy_store::entry::{State, Visibility, Writer};
use rummy_store::selection::Judgements;
use rummy_store::StoreError;
use rummy_text::parse::ToolCall;
use rummy_text::path::result_path;
use serde_json::Value;

/// What a dispatch is given (defined with the tools, whose handlers read it).
pub use crate::tools::context::{DispatchCtx, DispatchLimits, LoopFlags};

/// The update tool's signal (defined with the tool).
pub use crate::tools::update::{UpdateSignal, UPDATE_STATUSES};

/// Characters of a command's target that go into its result path.
const PATH_TARGET_CHARS: usize = 200;

/// What one dispatched command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatched {
    /// The tool.
    pub tool: ToolName,
    /// The result entry's path ("" for `think`, which is never recorded).
    pub path: String,
    /// The result's state.
    pub state: State,
    /// Why it failed, when it did.
    pub outcome: Option<FailureKind>,
    /// Set for `update` commands.
    pub update: Option<UpdateSignal>,
}

impl Dispatched {
    /// Whether this command failed (and so aborts the actions after it).
    pub fn failed(&self) -> bool {
        self.state == State::Failed
    }

    /// Whether the turn waits on this command before going on: a proposal waits for a client,
    /// a search for its backend's answer, a `get` of a web page for the page.
    pub fn waits(&self) -> bool {
        self.state == State::Proposed
            || (matches!(self.tool, ToolName::Search | ToolName::Get)
                && self.state == State::Streaming)
    }
}

/// Dispatches one command. `aborted_by` names an earlier failed action: then
/// every action is recorded as aborted (409) and not run; lifecycle signals still apply.
/// A body filter is judged here, on `conn`: for commands that carry none (a turn's closing
/// `update`) and for tests; a turn's commands go through [`dispatch_judged`].
pub fn dispatch(
    conn: &mut Db,
    ctx: &DispatchCtx,
    call: &ToolCall,
    aborted_by: Option<ToolName>,
    now: Millis,
) -> Result<Dispatched, StoreError> {
    dispatch_with(conn, ctx, call, aborted_by, now, None)
}

/// [`dispatch`] with the body filters judged off the writer: a command whose filter is not in
/// `judged` (or whose candidates changed since) fails with [`StoreError::Unjudged`] before it
/// writes anything.
pub fn dispatch_judged(
    conn: &mut Db,
    ctx: &DispatchCtx,
    call: &ToolCall,
    aborted_by: Option<ToolName>,
    now: Millis,
    judged: &Judgements,
) -> Result<Dispatched, StoreError> {
    dispatch_with(conn, ctx, call, aborted_by, now, Some(judged))
}

fn dispatch_with(
    conn: &mut Db,
    ctx: &DispatchCtx,
    call: &ToolCall,
    aborted_by: Option<ToolName>,
    now: Millis,
    judged: Option<&Judgements>,
) -> Result<Dispatched, StoreError> {
    match call.name {
        // Private reasoning: never recorded (the executor merges it into the turn's reasoning).
        ToolName::Think => Ok(Dispatched {
            tool: ToolName::Think,
            path: String::new(),
            state: State::Resolved,
            outcome: None,
            update: None,
        }),
        // A lifecycle signal: applied whatever failed before it.
        ToolName::Update => update(conn, ctx, call, now),
        ToolName::Get
        | ToolName::Search
        | ToolName::Env
        | ToolName::Set
        | ToolName::Cp
        | ToolName::Mv
        | ToolName::Rm
        | ToolName::Sh
        | ToolName::AskUser
        | ToolName::Call => act(conn, ctx, call, aborted_by, now, judged),
    }
}

/// Dispatches an action: aborted after a failed one, refused when its target is unusable or
/// the loop does not offer it, else run by its handler.
fn act(
    conn: &mut Db,
    ctx: &DispatchCtx,
    call: &ToolCall,
    aborted_by: Option<ToolName>,
    now: Millis,
    judged: Option<&Judgements>,
) -> Result<Dispatched, StoreError> {
    let target = tools::handler::target_of(call);
    let outcome = if let Some(previous) = aborted_by {
        ToolResult::failed(
            &target,
            FailureKind::Aborted,
            tools::wording::aborted(previous.as_str()),
        )
    } else if policy::invalid_target(call) {
        ToolResult::failed(
            "invalid",
            FailureKind::Validation,
            tools::wording::INVALID_TARGET,
        )
        .bare()
    } else if let Some(refused) = policy::refusal(ctx, call) {
        ToolResult::failed(&target, refused.outcome, refused.reason)
    } else {
        let mut h = tools::handler::Handler {
            conn,
            ctx,
            now,
            judged,
        };
        match tools::handle(&mut h, call) {
            Ok(outcome) => outcome,
            Err(e) => match refusal_of(e) {
                Ok((outcome, reason)) => ToolResult::failed(&target, outcome, reason),
                Err(e) => return Err(e),
            },
        }
    };
    record(conn, ctx, call.name, outcome, now)
}

/// A store error the model caused, as a failed outcome and its reason; other errors stay errors.
fn refusal_of(e: StoreError) -> Result<(FailureKind, String), StoreError> {
    match e {
        e @ StoreError::Permission { .. } => Ok((FailureKind::Permission, e.to_string())),
        StoreError::Refused(reason) => Ok((FailureKind::Permission, reason)),
        StoreError::Invalid(reason) => Ok((FailureKind::Validation, reason)),
        StoreError::NotFound(reason) => Ok((FailureKind::NotFound, reason)),
        StoreError::Conflict(reason) => Ok((FailureKind::Conflict, reason)),
        e => Err(e),
    }
}

/// Writes the command's result entry, as the model, at a per-run unique
/// `<tool>://turn_N/<target>` path.
fn record(
    conn: &mut Db,
    ctx: &DispatchCtx,
    tool: ToolName,
    outcome: ToolResult,
    now: Millis,
) -> Result<Dispatched, StoreError> {
    let t = ctx.t;
    let short: String = outcome.target.chars().take(PATH_TARGET_CHARS).collect();
    let path = entries::unique_path(conn, t.run, &result_path(tool.as_str(), t.turn, &short))?;
    let mut attributes = outcome.attributes;
    if outcome.keep_target && !outcome.target.is_empty() {
        if let Some(key) = tools::handler::target_key(tool) {
            attributes
                .entry(key)
                .or_insert_with(|| Value::from(outcome.target.clone()));
        }
    }
    if outcome.state == State::Proposed {
        attributes.insert(
            rummy_protocol::ProposalKind::MARK.to_owned(),
            Value::from(ctx.command_index),
        );
    }
    entries::write(
        conn,
        &EntryWrite {
            run: t.run,
            path: &path,
            body: &outcome.body,
            attributes: &Value::Object(attributes),
            state: outcome.state,
            outcome: outcome.outcome.map(String::from).as_deref(),
            visibility: Visibility::Visible,
            loop_id: Some(t.loop_id),
            turn: t.turn,
            writer: Writer::Model,
        },
        WriteCtx {
            divisor: ctx.limits.token_divisor,
            now,
        },
    )?;
    Ok(Dispatched {
        tool,
        path,
        state: outcome.state,
        outcome: outcome.outcome,
        update: None,
    })
}

/// `update`: always recorded, whatever failed before it; the executor reads the signal.
fn update(
    conn: &mut Db,
    ctx: &DispatchCtx,
    call: &ToolCall,
    now: Millis,
) -> Result<Dispatched, StoreError> {
    let signal = UpdateSignal::of(call);
    let outcome = tools::update::outcome(&signal);
    let mut result = record(conn, ctx, ToolName::Update, outcome, now)?;
    result.update = Some(signal);
    Ok(result)
}
