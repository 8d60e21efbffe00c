//! A run's orchestration as a pure state machine: an input and the facts of the moment in, the new state and the effects to perform out.
//!
//! The `RunActor` is its interpreter: it turns each message (and each end of work it spawned)
//! into an [`Input`], feeds [`Orchestration::step`], and performs the [`Effect`]s in order. All
//! of the run's control state lives here — which phase the run is in, what its loop is doing,
//! the cancel that waits for a claim, the place asked of admission, and the retire bookkeeping —
//! so each transition is a table row in this module's tests. What the effects need that is
//! not control (the claimed loop, the turn's start, a resolution and its answer, a prompt) is
//! carried through opaquely, as the interpreter's [`Carry`] types.
//!
//! Retirement is kept in one place: every [`Input`] from the registry counts, and after every
//! step an idle run reports [`Effect::ReportIdle`] once per count (the protocol is told in the
//! actor's `run/retire.rs`).
//!
//! A client's call on the run reaches the interpreter as one [`RunCommand`], which it turns
//! into the call's one input; [`RunAnswer`] is what the run answers.

use crate::fair::admission::Queued;
use rummy_provider::time::Millis;
use rummy_store::run::{RunStatus, StopReason};

mod command;
mod machine;
#[cfg(test)]
mod tests;

pub use command::{RunAnswer, RunCommand};
pub use machine::Orchestration;

/// The types the interpreter carries through the machine: they reach it with an input and come
/// back, untouched, with an effect.
pub trait Carry {
    /// A loop claimed for the run, with what starting it needs.
    type Claimed;
    /// How a turn starts.
    type Start;
    /// A resolution of a proposal, with where its answer goes.
    type Resolution;
    /// The wait for an accepted command's output, with what starting it needs.
    type Output;
    /// A prompt for the run (queued as a loop, or folded into the active one), with where its
    /// answer goes.
    type Prompt;

    /// The start of a new turn, which calls the model.
    fn fresh() -> Self::Start;
    /// Whether `start` begins a new turn (a model call) rather than resuming a paused one.
    fn is_new(start: &Self::Start) -> bool;
    /// The turn `start` runs, when it says.
    fn turn_of(start: &Self::Start) -> Option<i32>;
}

/// What the machine is told: a message, or the end of work an effect started.
pub enum Input<C: Carry> {
    /// From the registry: look at the queue and start the next loop if idle.
    Wake,
    /// From the registry: a restart found the run queued for a place, handed to admission.
    AwaitPlace,
    /// From the registry: start a loop already claimed (a new run's first).
    Begin(C::Claimed),
    /// From the registry: a restart left the run's loop paused on this.
    Restore(C::Claimed, Paused<C::Output>),
    /// From the registry: the run was renamed (the interpreter keeps the alias).
    Rename,
    /// From the registry: stop the active loop (499).
    Cancel,
    /// From the registry: queue a new loop.
    QueueLoop(C::Prompt),
    /// From the registry: fold a prompt into the active loop, or queue it.
    Inject(C::Prompt),
    /// From the registry: resolve the proposal at `path`.
    Resolve {
        /// The proposal's path.
        path: String,
        /// The resolution and where its answer goes.
        resolution: C::Resolution,
    },
    /// From the registry: it has forgotten the run's actor, which stops.
    Retire,
    /// A reply to a registry message was sent: the work behind it is over.
    Settled,
    /// A queue write for a prompt ended: `queued` when it became a loop of its own.
    Enqueued {
        /// The prompt is queued as a loop (the run wakes to claim it).
        queued: bool,
    },
    /// Admission's answer to [`Effect::LookForPlace`].
    Looked(Look),
    /// Admission gave the run its place.
    Admitted,
    /// The queue's answer to [`Effect::Claim`] (`None`: nothing queued, or the claim failed).
    Claimed {
        /// Whether the claim asked with a place admission gave.
        admitted: bool,
        /// The claimed loop.
        claimed: Option<C::Claimed>,
    },
    /// The claimed (or restored) loop is ready to run, or cannot run for this reason.
    Prepared(Result<Option<Paused<C::Output>>, String>),
    /// Turn `seq` ended.
    TurnDone {
        /// The run's number for the turn.
        seq: u64,
        /// How it ended.
        end: TurnOutcome<C::Start>,
    },
    /// Admission's answer to [`Effect::AskPlace`] asked at `asked_at`.
    Placed {
        /// The run's turn count when it asked.
        asked_at: u64,
        /// The answer (`None`: admission unavailable; the loop goes on).
        answer: Option<Admit>,
    },
    /// A resolution of the proposal at `path` was written; what the turn does next.
    Resolved {
        /// The proposal's path.
        path: String,
        /// How the loop goes on.
        then: Then<C::Start, C::Output>,
    },
    /// The wait for the output of the command at `path` is over; the turn starts from `start`.
    OutputDone {
        /// The accepted command's path.
        path: String,
        /// Its turn, resumed after it.
        start: C::Start,
    },
    /// The loop's end is recorded.
    Finished,
}

/// What a restored loop waited on.
#[derive(Debug, Clone, PartialEq)]
pub enum Paused<O> {
    /// A pending proposal (its path).
    Proposal(String),
    /// An accepted command's output (its path), and the wait to start for it.
    Output(String, O),
}

/// Admission's answer to an ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// The place is the run's.
    Granted,
    /// The run waits for [`Input::Admitted`].
    Queued(Queued),
}

/// The answer to [`Effect::LookForPlace`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    /// No loop is queued.
    Nothing,
    /// Admission answered for the queued loop.
    Asked(Admit),
    /// The store or admission failed.
    Failed,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnOutcome<S> {
    /// It paused on the proposal at this path.
    Paused(String),
    /// Another turn follows, starting so.
    Continue(S),
    /// The loop ends with this status.
    Concluded(i32),
    /// The referee gave up on the loop (508).
    Abandoned(String),
    /// The context does not fit (413).
    Overflow,
    /// The turn failed (an error or a panic): the loop ends 500.
    Failed(String),
}

/// How a loop goes on after its proposal was resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum Then<S, O> {
    /// Its turn resumes so.
    Resume(S),
    /// It waits for the accepted command's output first.
    Output(O),
    /// The resolution failed: nothing changes.
    Failed,
}

/// Why a loop ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoopEnd {
    /// The model concluded with this status.
    Concluded(i32),
    /// It ran `RUMMY_MAX_TURNS` turns.
    MaxTurns,
    /// It was cancelled (499).
    Cancelled,
    /// It failed, for this reason (500).
    Failed(String),
    /// The referee gave up on it, for this reason (508).
    Abandoned(String),
    /// Its context does not fit (413).
    Overflow,
}

/// What a loop's end records: the loop's status, the run's, the stop reason and the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    /// The loop's result status.
    pub loop_status: i32,
    /// The run's status afterwards.
    pub run_status: RunStatus,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Why it failed, when it did.
    pub error: Option<String>,
}

impl LoopEnd {
    /// What the end records.
    pub fn ending(self) -> Ending {
        let (loop_status, run_status, stop_reason, error) = match self {
            LoopEnd::Concluded(status) => {
                (status, RunStatus::Completed, StopReason::Concluded, None)
            }
            LoopEnd::MaxTurns => (200, RunStatus::Completed, StopReason::MaxTurns, None),
            LoopEnd::Cancelled => (499, RunStatus::Cancelled, StopReason::Cancelled, None),
            LoopEnd::Failed(message) => (500, RunStatus::Failed, StopReason::Failed, Some(message)),
            LoopEnd::Abandoned(reason) => (
                508,
                RunStatus::LoopDetected,
                StopReason::Abandoned,
                Some(reason),
            ),
            LoopEnd::Overflow => (413, RunStatus::ContextFull, StopReason::ContextFull, None),
        };
        Ending {
            loop_status,
            run_status,
            stop_reason,
            error,
        }
    }

    /// Whether the loop did its work (it was neither cancelled nor failed by its model).
    pub fn did_its_work(&self) -> bool {
        !matches!(self, LoopEnd::Cancelled | LoopEnd::Failed(_))
    }
}

/// What the interpreter does, in order.
#[derive(Debug, PartialEq)]
pub enum Effect<C: Carry> {
    /// Tell the registry the actor is idle, having handled `handled` of its messages.
    ReportIdle {
        /// The count of registry messages handled.
        handled: u64,
    },
    /// Stop the actor (retired).
    Stop,
    /// Stop the run's commands on a cancel; `awaiting`: the command whose output the loop
    /// waited for.
    StopCommands {
        /// The awaited command's path.
        awaiting: Option<String>,
    },
    /// Answer a cancel: whether a loop was stopped.
    Cancelled(bool),
    /// Look for a queued loop and ask admission for a place for it; answered by
    /// [`Input::Looked`].
    LookForPlace,
    /// Ask admission for a place for the loop's next model call (going on after an answer);
    /// answered by [`Input::Placed`].
    AskPlace {
        /// The run's turn count now, which the answer carries back.
        asked_at: u64,
        /// When it began waiting.
        since: Millis,
    },
    /// Tell the run's clients its next turn waits for a place.
    TellQueued {
        /// The turn waiting.
        turn: i32,
        /// Why, and where.
        queued: Queued,
    },
    /// Admission's place is given back (the loop ended or paused).
    ReleasePlace,
    /// The run leaves admission's line, or gives back the place just given.
    WithdrawPlace,
    /// Claim the next queued loop; answered by [`Input::Claimed`].
    Claim {
        /// With a place admission gave.
        admitted: bool,
    },
    /// Prepare a claimed loop (its route, its model's context length) and answer
    /// [`Input::Prepared`].
    Prepare {
        /// The loop.
        claimed: C::Claimed,
        /// Hold the place it runs in (admission gave it, or a restored turn was running).
        hold: bool,
        /// What a restored loop waited on (`None`: a new loop).
        paused: Option<Paused<C::Output>>,
    },
    /// Start turn `seq`; its end is [`Input::TurnDone`].
    StartTurn {
        /// The run's number for the turn.
        seq: u64,
        /// How it starts.
        start: C::Start,
        /// It is the loop's first.
        first_in_loop: bool,
        /// Another turn may follow it.
        next_allowed: bool,
    },
    /// Stop turn `seq` (a cancel): no end follows.
    StopTurn(u64),
    /// Wait for an accepted command's output; its end is [`Input::OutputDone`].
    AwaitOutput(C::Output),
    /// Stop waiting for the output (a cancel).
    StopOutputWait,
    /// A resolution written after its loop ended: its command is not run.
    DropOutput(C::Output),
    /// The loop paused on a proposal: it lets go of its context rows.
    ForgetContext,
    /// Resolve the proposal now; answered by [`Input::Resolved`].
    Resolve(C::Resolution),
    /// Answer the resolution that its proposal is not pending.
    NotPending(C::Resolution),
    /// Queue the prompt as a loop; answered by [`Input::Enqueued`].
    Enqueue(C::Prompt),
    /// Fold the prompt into the active loop (or queue it); answered by [`Input::Enqueued`].
    Fold(C::Prompt),
    /// Record the loop's end (its place given back already); answered by [`Input::Finished`].
    Finish(LoopEnd),
    /// A claimed loop arrived while another is active: left to recovery.
    Stray(C::Claimed),
}

/// What the run is doing.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase<S> {
    /// Nothing.
    Idle,
    /// Looking for a queued loop and asking admission for a place for it.
    Asking,
    /// Queued for a place: [`Input::Admitted`] ends it.
    Waiting,
    /// Claiming the next loop, or preparing the one claimed.
    Claiming,
    /// A loop runs.
    Running(Box<Running<S>>),
    /// Recording a loop's end.
    Finishing,
}

/// A running loop.
#[derive(Debug, Clone, PartialEq)]
pub struct Running<S> {
    /// Turns it has completed.
    pub turns_done: u32,
    /// What it does now, which a cancel stops.
    pub doing: Doing<S>,
    /// The proposal it waits on.
    pub waiting: Option<String>,
    /// It gave its place back on a pause: its next model call asks for one.
    pub placeless: bool,
    /// The number of its latest turn started, when known.
    pub last_turn: i32,
}

/// What a running loop does.
#[derive(Debug, Clone, PartialEq)]
pub enum Doing<S> {
    /// Nothing: it waits for a resolution.
    Nothing,
    /// Turn `seq` runs.
    Turn(u64),
    /// It waits for the output of the command at this path.
    Output(String),
    /// It waits for a place before its next model call.
    Place(PlaceWait<S>),
}

/// A turn waiting for a place.
#[derive(Debug, Clone, PartialEq)]
pub struct PlaceWait<S> {
    /// How it starts once placed.
    pub start: S,
    /// Its number, for the clients.
    pub turn: i32,
    /// The run's turn count when it asked.
    pub asked_at: u64,
    /// The ask is not answered yet.
    pub asking: bool,
    /// [`Input::Admitted`] came before the answer.
    pub admitted_early: bool,
}

/// What the interpreter tells the machine of the moment, with each input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// Now.
    pub now: Millis,
    /// A fair-use limit applies to the run's project: a loop asks admission for a place.
    pub gated: bool,
    /// A runs limit is set: a loop going on after an answer asks for a place again.
    pub counts_runs: bool,
}
