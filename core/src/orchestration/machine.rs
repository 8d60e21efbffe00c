//! The machine itself: its control state, and one function per input that moves it on.

use super::{
    Admit, Carry, Doing, Effect, Facts, Input, Look, LoopEnd, Paused, Phase, PlaceWait, Running,
    Then, TurnOutcome,
};

/// One run's orchestration.
pub struct Orchestration<C: Carry> {
    phase: Phase<C::Start>,
    /// Resolutions that came while a turn was in flight (the turn may be pausing on them).
    early: Vec<(String, C::Resolution)>,
    /// A cancel that arrived while a loop was being claimed or asked for.
    cancel_pending: bool,
    /// A wake that arrived while a claim or ask was in flight: one more follows if it finds
    /// nothing.
    wake_again: bool,
    /// [`Input::Admitted`] arrived while the run was still asking.
    admitted_early: bool,
    /// Registry messages handled.
    handled: u64,
    /// Replies to registry messages still in flight.
    busy: u32,
    /// The count of handled messages last reported idle at.
    told: Option<u64>,
    /// Turns started: each turn's number.
    turns_started: u64,
    /// `RUMMY_MAX_TURNS`.
    max_turns: u32,
}

impl<C: Carry> Orchestration<C> {
    /// An idle run whose loops run at most `max_turns` turns.
    pub fn new(max_turns: u32) -> Self {
        Orchestration {
            phase: Phase::Idle,
            early: Vec::new(),
            cancel_pending: false,
            wake_again: false,
            admitted_early: false,
            handled: 0,
            busy: 0,
            told: None,
            turns_started: 0,
            max_turns,
        }
    }

    /// The machine of an actor restarted by its supervisor: nothing in flight, its counts kept
    /// — the registry's messages it handled (retirement compares them with the registry's)
    /// and the turns it started (a late end of one is told from the next turn's).
    pub fn restarted(&self) -> Self {
        Orchestration {
            handled: self.handled,
            turns_started: self.turns_started,
            ..Orchestration::new(self.max_turns)
        }
    }

    /// The phase the run is in.
    pub fn phase(&self) -> &Phase<C::Start> {
        &self.phase
    }

    /// Whether a loop is running.
    pub fn running(&self) -> bool {
        matches!(self.phase, Phase::Running(_))
    }

    /// Whether the run has nothing to do: no loop in any phase, no reply in flight, no cancel
    /// waiting for the loop a claim might find.
    pub fn idle(&self) -> bool {
        matches!(self.phase, Phase::Idle) && self.busy == 0 && !self.cancel_pending
    }

    /// Feeds one input; answers the effects to perform, in order.
    pub fn step(&mut self, input: Input<C>, facts: Facts) -> Vec<Effect<C>> {
        if matches!(input, Input::Retire) {
            // The registry forgot the actor, which told it it was idle and has been sent
            // nothing since: nothing else wakes it.
            return vec![Effect::Stop];
        }
        let mut out = Vec::new();
        self.apply(input, facts, &mut out);
        if self.idle() && self.told != Some(self.handled) {
            self.told = Some(self.handled);
            out.push(Effect::ReportIdle {
                handled: self.handled,
            });
        }
        out
    }

    fn apply(&mut self, input: Input<C>, facts: Facts, out: &mut Vec<Effect<C>>) {
        if input.is_from_registry() {
            self.handled += 1;
        }
        match input {
            Input::Wake => self.wake(facts, out),
            Input::AwaitPlace => {
                // Admission learns of the waiter only after this was sent, so no `Admitted`
                // comes before it; a run busy already keeps what it does.
                if matches!(self.phase, Phase::Idle) {
                    self.phase = Phase::Waiting;
                }
            }
            Input::Begin(claimed) => {
                if matches!(self.phase, Phase::Idle) {
                    self.phase = Phase::Claiming;
                    out.push(Effect::Prepare {
                        claimed,
                        hold: false,
                        paused: None,
                    });
                } else {
                    out.push(Effect::Stray(claimed));
                }
            }
            Input::Restore(claimed, paused) => {
                if matches!(self.phase, Phase::Idle) {
                    self.phase = Phase::Claiming;
                    // A restored turn that was running holds its place again; a proposal's
                    // does not.
                    let hold = matches!(paused, Paused::Output(..));
                    out.push(Effect::Prepare {
                        claimed,
                        hold,
                        paused: Some(paused),
                    });
                }
            }
            Input::Rename => {}
            Input::Cancel => self.cancel(out),
            Input::QueueLoop(prompt) => {
                self.busy += 1;
                out.push(Effect::Enqueue(prompt));
            }
            Input::Inject(prompt) => {
                self.busy += 1;
                out.push(if self.running() {
                    Effect::Fold(prompt)
                } else {
                    Effect::Enqueue(prompt)
                });
            }
            Input::Resolve { path, resolution } => {
                self.busy += 1;
                self.resolve(path, resolution, out);
            }
            Input::Retire => {}
            Input::Settled => self.busy = self.busy.saturating_sub(1),
            Input::Enqueued { queued } => {
                if queued {
                    self.wake(facts, out);
                }
            }
            Input::Looked(look) => self.looked(look, facts, out),
            Input::Admitted => self.admitted(facts, out),
            Input::Claimed { admitted, claimed } => self.claimed(admitted, claimed, facts, out),
            Input::Prepared(prepared) => self.prepared(prepared, facts, out),
            Input::TurnDone { seq, end } => self.turn_done(seq, end, facts, out),
            Input::Placed { asked_at, answer } => self.placed_answer(asked_at, answer, facts, out),
            Input::Resolved { path, then } => self.resolved(path, then, facts, out),
            Input::OutputDone { path, start } => {
                if let Phase::Running(run) = &mut self.phase {
                    if matches!(&run.doing, Doing::Output(p) if *p == path) {
                        run.doing = Doing::Nothing;
                        self.run_turn(start, facts, out);
                    }
                }
            }
            Input::Finished => {
                self.phase = Phase::Idle;
                self.wake(facts, out);
            }
        }
    }

    fn wake(&mut self, facts: Facts, out: &mut Vec<Effect<C>>) {
        if matches!(self.phase, Phase::Claiming | Phase::Asking) {
            self.wake_again = true;
        }
        if !matches!(self.phase, Phase::Idle) {
            return;
        }
        self.wake_again = false;
        if facts.gated {
            self.phase = Phase::Asking;
            self.admitted_early = false;
            out.push(Effect::LookForPlace);
        } else {
            self.claim(false, out);
        }
    }

    fn claim(&mut self, admitted: bool, out: &mut Vec<Effect<C>>) {
        self.phase = Phase::Claiming;
        out.push(Effect::Claim { admitted });
    }

    fn looked(&mut self, look: Look, facts: Facts, out: &mut Vec<Effect<C>>) {
        let early = std::mem::take(&mut self.admitted_early);
        match look {
            Look::Nothing => {
                self.phase = Phase::Idle;
                if self.wake_again {
                    self.wake(facts, out);
                }
            }
            Look::Asked(Admit::Granted) => self.claim(true, out),
            Look::Asked(Admit::Queued(_)) if early => self.claim(true, out),
            Look::Asked(Admit::Queued(_)) if self.cancel_pending => {
                // Cancelled while it asked: the loop is not worth a place; it ends 499.
                out.push(Effect::WithdrawPlace);
                self.claim(false, out);
            }
            Look::Asked(Admit::Queued(_)) => self.phase = Phase::Waiting,
            Look::Failed => self.phase = Phase::Idle,
        }
    }

    fn admitted(&mut self, facts: Facts, out: &mut Vec<Effect<C>>) {
        if let Phase::Running(run) = &mut self.phase {
            if let Doing::Place(place) = &mut run.doing {
                if place.asking {
                    place.admitted_early = true;
                } else {
                    self.placed(facts, out);
                }
            }
            // A running loop's place is already the run's.
            return;
        }
        match self.phase {
            Phase::Waiting => self.claim(true, out),
            Phase::Asking => self.admitted_early = true,
            // Claiming or finishing: the place admission counted is already the run's (its
            // claim holds it; its end gives it back). Idle: the run no longer waits (its
            // waiting loop was cancelled, and admission took the place back on that
            // withdrawal), so this is stale — and an idle actor may be retiring.
            _ => {}
        }
    }

    fn claimed(
        &mut self,
        admitted: bool,
        claimed: Option<C::Claimed>,
        facts: Facts,
        out: &mut Vec<Effect<C>>,
    ) {
        match claimed {
            Some(claimed) => out.push(Effect::Prepare {
                claimed,
                hold: admitted,
                paused: None,
            }),
            None => {
                if admitted {
                    out.push(Effect::ReleasePlace);
                }
                self.phase = Phase::Idle;
                if std::mem::take(&mut self.wake_again) {
                    self.wake(facts, out);
                }
            }
        }
    }

    fn prepared(
        &mut self,
        prepared: Result<Option<Paused<C::Output>>, String>,
        facts: Facts,
        out: &mut Vec<Effect<C>>,
    ) {
        // The cancel that came while the loop was claimed is this loop's.
        let cancelled = std::mem::take(&mut self.cancel_pending);
        let paused = match prepared {
            Err(message) => return self.finish(LoopEnd::Failed(message), out),
            Ok(_) if cancelled => return self.finish(LoopEnd::Cancelled, out),
            Ok(paused) => paused,
        };
        let restored = paused.is_some();
        let mut run = Running {
            turns_done: u32::from(restored),
            doing: Doing::Nothing,
            waiting: None,
            // A loop paused on a proposal holds no place: a restart found it so.
            placeless: false,
            last_turn: 0,
        };
        let mut wait = None;
        match paused {
            Some(Paused::Proposal(path)) => {
                run.waiting = Some(path);
                run.placeless = true;
            }
            Some(Paused::Output(path, output)) => {
                run.doing = Doing::Output(path);
                wait = Some(output);
            }
            None => {}
        }
        self.phase = Phase::Running(Box::new(run));
        match wait {
            Some(output) => out.push(Effect::AwaitOutput(output)),
            None if !restored => self.run_turn(C::fresh(), facts, out),
            None => {}
        }
    }

    fn run_turn(&mut self, start: C::Start, facts: Facts, out: &mut Vec<Effect<C>>) {
        let Phase::Running(run) = &mut self.phase else {
            return;
        };
        let new_turn = C::is_new(&start);
        if new_turn && run.turns_done >= self.max_turns {
            return self.finish(LoopEnd::MaxTurns, out);
        }
        let turn = C::turn_of(&start);
        if let Some(turn) = turn {
            run.last_turn = turn;
        }
        if new_turn && run.placeless && facts.counts_runs {
            run.doing = Doing::Place(PlaceWait {
                start,
                turn: turn.unwrap_or(run.last_turn + 1),
                asked_at: self.turns_started,
                asking: true,
                admitted_early: false,
            });
            out.push(Effect::AskPlace {
                asked_at: self.turns_started,
                since: facts.now,
            });
            return;
        }
        self.turns_started += 1;
        run.doing = Doing::Turn(self.turns_started);
        out.push(Effect::StartTurn {
            seq: self.turns_started,
            start,
            first_in_loop: run.turns_done == 0,
            next_allowed: run.turns_done + 1 < self.max_turns,
        });
    }

    fn placed_answer(
        &mut self,
        asked_at: u64,
        answer: Option<Admit>,
        facts: Facts,
        out: &mut Vec<Effect<C>>,
    ) {
        let Phase::Running(run) = &mut self.phase else {
            return;
        };
        // Cancelled meanwhile (and perhaps another loop started since): not this ask's.
        let Doing::Place(place) = &mut run.doing else {
            return;
        };
        if place.asked_at != asked_at {
            return;
        }
        place.asking = false;
        match answer {
            Some(Admit::Queued(queued)) if !place.admitted_early => {
                out.push(Effect::TellQueued {
                    turn: place.turn,
                    queued,
                });
            }
            // Granted, admitted meanwhile, or admission unavailable (without it no place can
            // be given: going on beats waiting forever).
            _ => self.placed(facts, out),
        }
    }

    /// The place is the run's: the turn that waited for it starts.
    fn placed(&mut self, facts: Facts, out: &mut Vec<Effect<C>>) {
        let Phase::Running(run) = &mut self.phase else {
            return;
        };
        let Doing::Place(place) = std::mem::replace(&mut run.doing, Doing::Nothing) else {
            return;
        };
        run.placeless = false;
        self.run_turn(place.start, facts, out);
    }

    fn turn_done(
        &mut self,
        seq: u64,
        end: TurnOutcome<C::Start>,
        facts: Facts,
        out: &mut Vec<Effect<C>>,
    ) {
        // One that was stopped, or belongs to a loop already ended, is stale.
        let Phase::Running(run) = &mut self.phase else {
            return;
        };
        if !matches!(run.doing, Doing::Turn(s) if s == seq) {
            return;
        }
        run.doing = Doing::Nothing;
        // Resolutions that came ahead of the end: the one for the proposal now pending is
        // resolved, the others are not pending.
        let early = std::mem::take(&mut self.early);
        let end = match end {
            TurnOutcome::Paused(path) => {
                for (asked, resolution) in early {
                    out.push(if asked == path {
                        Effect::Resolve(resolution)
                    } else {
                        Effect::NotPending(resolution)
                    });
                }
                run.waiting = Some(path);
                // A person may take hours to answer: the loop holds neither its context rows
                // nor its place meanwhile.
                run.placeless = true;
                out.push(Effect::ForgetContext);
                out.push(Effect::ReleasePlace);
                return;
            }
            TurnOutcome::Continue(start) => {
                out.extend(early.into_iter().map(|(_, r)| Effect::NotPending(r)));
                run.turns_done += 1;
                return self.run_turn(start, facts, out);
            }
            TurnOutcome::Concluded(status) => LoopEnd::Concluded(status),
            TurnOutcome::Abandoned(reason) => LoopEnd::Abandoned(reason),
            TurnOutcome::Overflow => LoopEnd::Overflow,
            TurnOutcome::Failed(message) => LoopEnd::Failed(message),
        };
        out.extend(early.into_iter().map(|(_, r)| Effect::NotPending(r)));
        self.finish(end, out);
    }

    fn resolve(&mut self, path: String, resolution: C::Resolution, out: &mut Vec<Effect<C>>) {
        let Phase::Running(run) = &self.phase else {
            return out.push(Effect::NotPending(resolution));
        };
        if run.waiting.is_none() && matches!(run.doing, Doing::Turn(_)) {
            // The turn in flight may be pausing on this very proposal: it was announced from
            // the turn, whose end has not reached the run yet. The answer waits for that end.
            self.early.push((path, resolution));
        } else if run.waiting.as_deref() == Some(path.as_str()) {
            out.push(Effect::Resolve(resolution));
        } else {
            out.push(Effect::NotPending(resolution));
        }
    }

    fn resolved(
        &mut self,
        path: String,
        then: Then<C::Start, C::Output>,
        facts: Facts,
        out: &mut Vec<Effect<C>>,
    ) {
        if matches!(then, Then::Failed) {
            return;
        }
        let current = match &mut self.phase {
            Phase::Running(run) if run.waiting.as_deref() == Some(path.as_str()) => {
                run.waiting = None;
                true
            }
            _ => false,
        };
        match then {
            // The loop ended (a cancel) while the acceptance was written: the command is not
            // run, and its channels do not stay open.
            Then::Output(output) if !current => out.push(Effect::DropOutput(output)),
            Then::Output(output) => {
                if let Phase::Running(run) = &mut self.phase {
                    run.doing = Doing::Output(path);
                }
                out.push(Effect::AwaitOutput(output));
            }
            Then::Resume(start) if current => self.run_turn(start, facts, out),
            Then::Resume(_) | Then::Failed => {}
        }
    }

    fn cancel(&mut self, out: &mut Vec<Effect<C>>) {
        let awaiting = match &self.phase {
            Phase::Running(run) => match &run.doing {
                Doing::Output(path) => Some(path.clone()),
                _ => None,
            },
            _ => None,
        };
        out.push(Effect::StopCommands { awaiting });
        let cancelled = match &mut self.phase {
            Phase::Running(run) => {
                match std::mem::replace(&mut run.doing, Doing::Nothing) {
                    Doing::Turn(seq) => out.push(Effect::StopTurn(seq)),
                    Doing::Output(_) => out.push(Effect::StopOutputWait),
                    // Its ask leaves the line, or gives back the place just given.
                    Doing::Place(_) => out.push(Effect::WithdrawPlace),
                    Doing::Nothing => {}
                }
                let early = std::mem::take(&mut self.early);
                out.extend(early.into_iter().map(|(_, r)| Effect::NotPending(r)));
                self.finish(LoopEnd::Cancelled, out);
                true
            }
            Phase::Claiming | Phase::Asking => {
                self.cancel_pending = true;
                true
            }
            Phase::Waiting => {
                // The loop waiting for a place is the one cancelled: it leaves the line and
                // ends 499 without running.
                out.push(Effect::WithdrawPlace);
                self.cancel_pending = true;
                self.claim(false, out);
                true
            }
            Phase::Idle | Phase::Finishing => false,
        };
        out.push(Effect::Cancelled(cancelled));
    }

    fn finish(&mut self, end: LoopEnd, out: &mut Vec<Effect<C>>) {
        self.phase = Phase::Finishing;
        out.push(Effect::ReleasePlace);
        out.push(Effect::Finish(end));
    }
}

impl<C: Carry> Input<C> {
    /// Whether the registry sent it (it counts for retirement).
    fn is_from_registry(&self) -> bool {
        matches!(
            self,
            Input::Wake
                | Input::AwaitPlace
                | Input::Begin(_)
                | Input::Restore(..)
                | Input::Rename
                | Input::Cancel
                | Input::QueueLoop(_)
                | Input::Inject(_)
                | Input::Resolve { .. }
        )
    }
}
