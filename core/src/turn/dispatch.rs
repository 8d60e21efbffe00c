//! Dispatching one parsed command: its handler runs and its result entry records what happened, in emission order.
//!
//! Served today: `set` on `known://`/`unknown://` paths and `update`. Every
//! other tool is recorded as failed (501) with a reason the model reads next
//! turn, never silently ignored.

use super::record::write;
use super::TurnRef;
use crate::entry::{State, Visibility, Writer};
use crate::parse::ToolCall;
use crate::path::{normalize, result_path, scheme_of};
use crate::store::entries::{self, EntryWrite};
use crate::store::StoreError;
use crate::time::Millis;
use crate::tokens;
use diesel::SqliteConnection;
use serde_json::{json, Map, Value};

/// Update statuses: 102 continues, the others conclude the loop.
pub const UPDATE_STATUSES: [i32; 4] = [102, 200, 204, 422];

/// Limits a dispatch enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DispatchLimits {
    /// Characters per estimated token.
    pub token_divisor: u32,
    /// Largest `known://` body in tokens.
    pub max_entry_tokens: u32,
}

/// The `<update>` a turn sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateSignal {
    /// Its status (102 when absent or unreadable).
    pub status: i32,
    /// Whether the model gave a valid status itself.
    pub status_given: bool,
    /// Its text.
    pub body: String,
}

/// What one dispatched command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatched {
    /// The tool name.
    pub tool: String,
    /// The result entry's path.
    pub path: String,
    /// The result's state.
    pub state: State,
    /// The outcome when it failed.
    pub outcome: Option<String>,
    /// Set for `update` commands.
    pub update: Option<UpdateSignal>,
}

impl Dispatched {
    /// Whether this command failed (and so aborts the actions after it).
    pub fn failed(&self) -> bool {
        self.state == State::Failed
    }
}

struct Ctx<'a> {
    conn: &'a mut SqliteConnection,
    t: TurnRef,
    limits: DispatchLimits,
    now: Millis,
}

impl Ctx<'_> {
    /// Writes the command's result entry at a per-run unique `<tool>://turn_N/<target>` path.
    fn result(
        &mut self,
        tool: &str,
        target: &str,
        body: &str,
        state: State,
        outcome: Option<&str>,
        extra: Map<String, Value>,
    ) -> Result<Dispatched, StoreError> {
        let base = result_path(tool, self.t.turn, target);
        let path = entries::unique_path(self.conn, self.t.run, &base)?;
        let mut attributes = extra;
        if !target.is_empty() {
            attributes.insert("path".to_owned(), Value::from(target));
        }
        write(
            self.conn,
            self.t,
            &path,
            body,
            &Value::Object(attributes),
            state,
            outcome,
            Visibility::Visible,
            Writer::Model,
            self.limits.token_divisor,
            self.now,
        )?;
        Ok(Dispatched {
            tool: tool.to_owned(),
            path,
            state,
            outcome: outcome.map(str::to_owned),
            update: None,
        })
    }

    fn failed(
        &mut self,
        tool: &str,
        target: &str,
        outcome: &str,
        reason: &str,
    ) -> Result<Dispatched, StoreError> {
        self.result(
            tool,
            target,
            reason,
            State::Failed,
            Some(outcome),
            Map::new(),
        )
    }
}

/// The command's target: what its result path and `path` attribute name.
pub fn target_of(call: &ToolCall) -> String {
    let attr = match call.name.as_str() {
        "sh" | "env" => call.attr("command"),
        "ask_user" => call.attr("question"),
        _ => call.attr("path"),
    };
    attr.map(str::to_owned)
        .unwrap_or_else(|| call.body.trim().chars().take(200).collect())
}

/// Dispatches one command. `aborted_by` names an earlier failed action: then
/// every action is recorded as aborted (409) and not run; lifecycle signals still apply.
pub fn dispatch(
    conn: &mut SqliteConnection,
    t: TurnRef,
    call: &ToolCall,
    aborted_by: Option<&str>,
    limits: DispatchLimits,
    now: Millis,
) -> Result<Dispatched, StoreError> {
    let mut ctx = Ctx {
        conn,
        t,
        limits,
        now,
    };
    if call.name == "update" {
        return update(&mut ctx, call);
    }
    let target = target_of(call);
    if let Some(previous) = aborted_by {
        let reason = format!("Aborted — preceding {previous} failed.");
        return ctx.failed(&call.name, &target, "aborted", &reason);
    }
    match call.name.as_str() {
        "set" => set(&mut ctx, call),
        tool => {
            let reason = format!("{tool} is not available on this server yet; use set and update.");
            ctx.failed(tool, &target, "501", &reason)
        }
    }
}

fn update(ctx: &mut Ctx<'_>, call: &ToolCall) -> Result<Dispatched, StoreError> {
    let given = call
        .attr("status")
        .and_then(|s| s.trim().parse::<i32>().ok())
        .filter(|s| UPDATE_STATUSES.contains(s));
    let status = given.unwrap_or(102);
    let body = call.body.trim().to_owned();
    let mut extra = Map::new();
    extra.insert("status".to_owned(), Value::from(status));
    let mut result = ctx.result("update", "", &body, State::Resolved, None, extra)?;
    result.update = Some(UpdateSignal {
        status,
        status_given: given.is_some(),
        body,
    });
    Ok(result)
}

fn set(ctx: &mut Ctx<'_>, call: &ToolCall) -> Result<Dispatched, StoreError> {
    let Some(raw) = call.attr("path").filter(|p| !p.trim().is_empty()) else {
        return ctx.failed("set", "", "validation", "path is required");
    };
    let path = match normalize(raw.trim()) {
        Ok(path) => path,
        Err(e) => return ctx.failed("set", raw, "validation", &e.to_string()),
    };
    if !matches!(scheme_of(&path).as_deref(), Some("known" | "unknown")) {
        let reason = format!(
            "set on {path} is not available on this server yet; only known:// and unknown:// entries can be written."
        );
        return ctx.failed("set", &path, "501", &reason);
    }
    let body = call.body.trim();
    if body.is_empty() {
        let reason = "nothing to write: set needs a body (visibility and summary changes are not available yet).";
        return ctx.failed("set", &path, "validation", reason);
    }
    let tokens = tokens::estimate(body, ctx.limits.token_divisor);
    if path.starts_with("known://")
        && tokens > i32::try_from(ctx.limits.max_entry_tokens).unwrap_or(i32::MAX)
    {
        let reason = format!(
            "Entry too large ({tokens} tokens, max {}). Split it into several entries, one topic each.",
            ctx.limits.max_entry_tokens
        );
        return ctx.failed("set", &path, &format!("overflow:{tokens}"), &reason);
    }
    let attributes = match call.attr("summary") {
        Some(summary) => json!({ "summary": summary.chars().take(80).collect::<String>() }),
        None => json!({}),
    };
    let written = entries::write(
        ctx.conn,
        &EntryWrite {
            run: ctx.t.run,
            path: &path,
            body,
            attributes: &attributes,
            state: State::Resolved,
            outcome: None,
            visibility: Visibility::Visible,
            loop_id: Some(ctx.t.loop_id),
            turn: ctx.t.turn,
            writer: Writer::Model,
        },
        ctx.limits.token_divisor,
        ctx.now,
    );
    match written {
        Ok(_) => {
            let body = format!("{path} written ({tokens} tokens)");
            ctx.result("set", &path, &body, State::Resolved, None, Map::new())
        }
        Err(e @ StoreError::Permission { .. }) => {
            ctx.failed("set", &path, "permission", &e.to_string())
        }
        Err(e @ StoreError::Invalid(_)) => ctx.failed("set", &path, "validation", &e.to_string()),
        Err(e) => Err(e),
    }
}
