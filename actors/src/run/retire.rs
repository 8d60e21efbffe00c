//! Retirement: an idle `RunActor` stops, and its registry forgets it, without a message ever being lost to a stopping actor.
//!
//! All of a run's state is in the database (recovery already relies on it), so an actor with
//! nothing to do need not live: a server that has run 100,000 runs holds actors only for the
//! runs that are busy. The registry is the actor's main sender, so the protocol counts the
//! registry's messages:
//!
//! 1. The registry counts the messages it sends each actor (every one, through one helper).
//! 2. The actor counts those it has handled — its state machine does, for every input that
//!    comes from the registry (`rummy_core::orchestration`), so no handler has to. Whenever it is idle — no loop claimed, running,
//!    waiting for a place or finishing, no handler's work in flight, no cancel pending — it
//!    tells the registry once per count: [`Idle`] with that count and the number the
//!    registry knows it by.
//! 3. The registry retires it only if it has sent it no message since, i.e. its count equals
//!    the actor's: it removes the actor from its map first, then sends [`Retire`]. Otherwise a
//!    message is on its way, and the actor reports again once it has handled it and is idle.
//! 4. Any later message for that run starts a fresh actor, which reads what it needs from the
//!    database as any actor does.
//!
//! A message the actor never handled would keep it alive (actix drops a message whose sender
//! dropped the request; the registry never drops one): a leak at worst, never a loss.
//!
//! Nothing else wakes an idle actor. [`Admitted`](crate::admission::Admitted) goes only to
//! runs that wait for a place, and an actor waiting for one is not idle; one that arrives after
//! the run stopped waiting (its loop was cancelled: admission then gave the place back) is stale
//! and ignored. A turn, a command's output wait and a proposal's resolution are futures on the
//! actor's own context, so it is not idle while one runs; a server-run command that outlives
//! its loop writes through the store and never messages the actor.

use super::RunActor;
use actix::prelude::*;
use rummy_core::orchestration::Input;
use rummy_store::entries::RunRef;
use rummy_store::ids::RunId;

/// The registry that keeps a `RunActor`: where it reports [`Idle`], and the number it knows this
/// actor by (a run's later actor has another, so a late report of an earlier one is not taken
/// for the later one's).
#[derive(Clone)]
pub struct Keeper {
    /// Where [`Idle`] goes.
    pub idle: Recipient<Idle>,
    /// Where a restarted actor asks for its run to be recovered from the database.
    pub recover: Recipient<RecoverRun>,
    /// The number the registry knows this actor by.
    pub id: u64,
}

/// A `RunActor` has nothing to do, having handled `handled` of its registry's messages.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct Idle {
    /// The run.
    pub run_id: RunId,
    /// The number the registry knows the actor by ([`Keeper::id`]).
    pub id: u64,
    /// How many of the registry's messages it has handled.
    pub handled: u64,
}

/// A run's actor was restarted by its supervisor (or found stopped): its run is recovered
/// from the database as a restart would, and its actor sent what the recovery found.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct RecoverRun {
    /// The run.
    pub run: RunRef,
    /// Its alias, for the actor the registry may start.
    pub alias: String,
}

/// The registry has forgotten the actor, which told it it was idle and has been sent nothing
/// since: it stops.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct Retire;

impl Handler<Retire> for RunActor {
    type Result = ();

    fn handle(&mut self, _: Retire, ctx: &mut Context<Self>) {
        self.step(Input::Retire, ctx);
    }
}

impl RunActor {
    /// A handler's reply that goes on after the handler returns (a write, a resolution): the
    /// machine counts it in flight — the run is not idle meanwhile — until it ends.
    pub(super) fn in_flight<T: 'static>(
        &mut self,
        work: impl ActorFuture<Self, Output = T> + 'static,
    ) -> ResponseActFuture<Self, T> {
        Box::pin(work.map(|out, act, ctx| {
            act.step(Input::Settled, ctx);
            out
        }))
    }
}
