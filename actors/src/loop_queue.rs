//! `LoopQueue`: a run's durable FIFO of loops (the `loops` table), and the run status that follows each loop's start and end.
//!
//! Claiming a loop also fixes its model: a loop whose run asked for routing
//! is routed in the claiming transaction (`loops::route`), so the choice is
//! made once per loop and survives a restart.

use crate::clock::now;
use crate::store::Store;
use actix::prelude::*;
use rummy_core::provider::routing::RoutingConfig;
use rummy_core::run::{Mode, RunStatus};
use rummy_core::store::entries::RunRef;
use rummy_core::store::loops::{self, Loop};
use rummy_core::store::models::{self, Model};
use rummy_core::store::notifications::Recorded;
use rummy_core::store::runs::{self, Run};
use rummy_core::store::{turns, StoreError};
use rummy_core::turn::{proposals, record, state, TurnRef};
use serde_json::{json, Value};

/// Appends a loop to the queue.
#[derive(Message)]
#[rtype(result = "Result<Loop, StoreError>")]
pub struct Enqueue {
    /// `ask` or `act`.
    pub mode: Mode,
    /// Model alias.
    pub model: String,
    /// The prompt.
    pub prompt: String,
    /// Loop flags.
    pub config: Value,
}

/// Takes the oldest queued loop (routing it, if its run asked) and marks the run running.
#[derive(Message)]
#[rtype(result = "Result<Option<Claimed>, StoreError>")]
pub struct ClaimNext;

/// A claimed loop with what its turns need.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// The loop.
    pub loop_row: Loop,
    /// The run as it stands.
    pub run: Run,
    /// The loop's model (the routed one for a routed loop), if defined.
    pub model: Option<Model>,
}

/// Ends the active loop, sets the run's status and pushes the final `run/state`.
#[derive(Message)]
#[rtype(result = "Result<Recorded, StoreError>")]
pub struct Finish {
    /// The loop.
    pub loop_id: i32,
    /// The loop's result status.
    pub loop_status: i32,
    /// The run's status afterwards.
    pub run_status: RunStatus,
    /// Why it failed, recorded as an `error://` entry the model sees.
    pub error: Option<String>,
}

/// Owns one run's queue.
pub struct LoopQueue {
    run: RunRef,
    store: Store,
    token_divisor: u32,
    /// The class → alias map claimed loops are routed with, when their run asks.
    routing: RoutingConfig,
}

impl LoopQueue {
    /// A queue for a run.
    pub fn new(run: RunRef, store: Store, token_divisor: u32, routing: RoutingConfig) -> Self {
        LoopQueue {
            run,
            store,
            token_divisor,
            routing,
        }
    }
}

impl Actor for LoopQueue {
    type Context = Context<Self>;
}

impl Handler<Enqueue> for LoopQueue {
    type Result = ResponseFuture<Result<Loop, StoreError>>;

    fn handle(&mut self, msg: Enqueue, _: &mut Context<Self>) -> Self::Result {
        let store = self.store.clone();
        let run_id = self.run.run_id;
        Box::pin(async move {
            store
                .write(move |c| {
                    let now = now();
                    let l = loops::enqueue(
                        c,
                        run_id,
                        msg.mode,
                        &msg.model,
                        &msg.prompt,
                        &msg.config,
                        now,
                    )?;
                    let run = runs::by_id(c, run_id)?;
                    if !run.run_status().is_active() {
                        runs::set_status(c, run_id, RunStatus::Queued, now)?;
                    }
                    Ok(l)
                })
                .await
        })
    }
}

impl Handler<ClaimNext> for LoopQueue {
    type Result = ResponseFuture<Result<Option<Claimed>, StoreError>>;

    fn handle(&mut self, _: ClaimNext, _: &mut Context<Self>) -> Self::Result {
        let store = self.store.clone();
        let run_id = self.run.run_id;
        let routing = self.routing.clone();
        Box::pin(async move { store.write(move |c| claim(c, run_id, &routing)).await })
    }
}

/// Takes the run's oldest queued loop, routes it if its run asked, and marks the run running:
/// what [`ClaimNext`] writes, also called by a new run's creation to claim its first loop in
/// the same write.
pub fn claim(
    c: &mut diesel::SqliteConnection,
    run_id: i32,
    routing: &RoutingConfig,
) -> Result<Option<Claimed>, StoreError> {
    let now = now();
    let Some(loop_row) = loops::claim_next(c, run_id, now)? else {
        return Ok(None);
    };
    let loop_row = loops::route(c, loop_row, routing, now)?;
    runs::set_status(c, run_id, RunStatus::Running, now)?;
    let run = runs::by_id(c, run_id)?;
    let model = models::by_alias(c, &loop_row.model)?;
    Ok(Some(Claimed {
        loop_row,
        run,
        model,
    }))
}

impl Handler<Finish> for LoopQueue {
    type Result = ResponseFuture<Result<Recorded, StoreError>>;

    fn handle(&mut self, msg: Finish, _: &mut Context<Self>) -> Self::Result {
        let store = self.store.clone();
        let run = self.run;
        let divisor = self.token_divisor;
        Box::pin(async move { store.write(move |c| finish(c, run, &msg, divisor)).await })
    }
}

fn finish(
    c: &mut diesel::SqliteConnection,
    run: RunRef,
    msg: &Finish,
    divisor: u32,
) -> Result<Recorded, StoreError> {
    let now = now();
    let interrupted = turns::running_in_loop(c, run.run_id, msg.loop_id)?;
    if let Some(turn) = &interrupted {
        let status = if msg.run_status == RunStatus::Cancelled {
            499
        } else {
            turns::FAILED
        };
        turns::finish(c, turn.id, status, now)?;
    }
    let last_turn = runs::by_id(c, run.run_id)?.last_turn();
    // A loop that ends while a proposal waits takes the proposal with it.
    let reason = if msg.run_status == RunStatus::Cancelled {
        "cancelled"
    } else {
        "interrupted"
    };
    let t = TurnRef {
        run,
        loop_id: msg.loop_id,
        turn: last_turn.max(1),
    };
    proposals::cancel_pending(c, t, reason, divisor, now)?;
    if let Some(message) = &msg.error {
        let turn = interrupted
            .as_ref()
            .map_or(last_turn, |t| t.sequence)
            .max(1);
        let t = TurnRef {
            run,
            loop_id: msg.loop_id,
            turn,
        };
        record::warning(c, t, message, divisor, now)?;
    }
    let result = json!({ "status": msg.loop_status, "error": msg.error });
    loops::finish(c, msg.loop_id, msg.loop_status, &result, now)?;
    runs::set_status(c, run.run_id, msg.run_status, now)?;
    state::push(
        c,
        run.run_id,
        last_turn,
        msg.run_status.code(),
        Value::Null,
        now,
    )
}
