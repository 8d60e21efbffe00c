//! The orchestration's transitions, one table row each: the inputs that lead to a state, one input more, and exactly the effects and the phase that follow.

use super::*;
use crate::fair::admission::QueueReason;
use pretty_assertions::assert_eq;

/// How a test turn starts.
#[derive(Debug, Clone, PartialEq)]
enum Start {
    /// A new turn, its number unknown yet.
    Fresh,
    /// A new turn the previous one allocated.
    Next(i32),
    /// Turn n resumed after its proposal.
    Resume(i32),
}

/// The test interpreter's payloads: names.
#[derive(Debug, PartialEq)]
struct T;

impl Carry for T {
    type Claimed = &'static str;
    type Start = Start;
    type Resolution = &'static str;
    type Output = &'static str;
    type Prompt = &'static str;

    fn fresh() -> Start {
        Start::Fresh
    }

    fn is_new(start: &Start) -> bool {
        !matches!(start, Start::Resume(_))
    }

    fn turn_of(start: &Start) -> Option<i32> {
        match start {
            Start::Fresh => None,
            Start::Next(n) | Start::Resume(n) => Some(*n),
        }
    }
}

const NOW: Millis = Millis(1_000);
/// No fair-use limit.
const OPEN: Facts = Facts {
    now: NOW,
    gated: false,
    counts_runs: false,
};
/// A runs limit applies.
const GATED: Facts = Facts {
    now: NOW,
    gated: true,
    counts_runs: true,
};
const MAX_TURNS: u32 = 3;

fn queued() -> Queued {
    Queued {
        reason: QueueReason::RunsLimit,
        position: 1,
    }
}

fn resolve(path: &str, resolution: &'static str) -> Input<T> {
    Input::Resolve {
        path: path.into(),
        resolution,
    }
}

fn turn_done(seq: u64, end: TurnOutcome<Start>) -> Input<T> {
    Input::TurnDone { seq, end }
}

fn running(turns_done: u32, doing: Doing<Start>, waiting: Option<&str>) -> Phase<Start> {
    Phase::Running(Box::new(Running {
        turns_done,
        doing,
        waiting: waiting.map(str::to_owned),
        placeless: false,
        last_turn: 0,
    }))
}

fn placeless(phase: Phase<Start>, last_turn: i32) -> Phase<Start> {
    match phase {
        Phase::Running(mut run) => {
            run.placeless = true;
            run.last_turn = last_turn;
            Phase::Running(run)
        }
        other => other,
    }
}

// States, as the inputs that lead to them.

/// Claiming its next loop (no limit).
fn claiming() -> Vec<(Input<T>, Facts)> {
    vec![(Input::Wake, OPEN)]
}

/// Looking for a place for its next loop (a runs limit).
fn asking() -> Vec<(Input<T>, Facts)> {
    vec![(Input::Wake, GATED)]
}

/// Queued for a place.
fn waiting() -> Vec<(Input<T>, Facts)> {
    let mut given = asking();
    given.push((Input::Looked(Look::Asked(Admit::Queued(queued()))), GATED));
    given
}

/// Running its loop's first turn (seq 1).
fn turning() -> Vec<(Input<T>, Facts)> {
    vec![
        (Input::Begin("loop 1"), OPEN),
        (Input::Prepared(Ok(None)), OPEN),
    ]
}

/// Paused on `set://a` after its first turn.
fn paused() -> Vec<(Input<T>, Facts)> {
    let mut given = turning();
    given.push((turn_done(1, TurnOutcome::Paused("set://a".into())), OPEN));
    given
}

/// Under a runs limit: paused on `set://a`, resumed (turn 2 runs turn 1 on), which continued
/// into turn 2, whose model call waits for a place (asked at 2).
fn going_on() -> Vec<(Input<T>, Facts)> {
    vec![
        (Input::Wake, GATED),
        (Input::Looked(Look::Asked(Admit::Granted)), GATED),
        (
            Input::Claimed {
                admitted: true,
                claimed: Some("loop 1"),
            },
            GATED,
        ),
        (Input::Prepared(Ok(None)), GATED),
        (turn_done(1, TurnOutcome::Paused("set://a".into())), GATED),
        (
            Input::Resolved {
                path: "set://a".into(),
                then: Then::Resume(Start::Resume(1)),
            },
            GATED,
        ),
        (turn_done(2, TurnOutcome::Continue(Start::Next(2))), GATED),
    ]
}

/// Waiting for the output of `sh://1`, as a restart left it.
fn awaiting_output() -> Vec<(Input<T>, Facts)> {
    let paused = || Paused::Output("sh://1".into(), "wait");
    vec![
        (Input::Restore("loop 1", paused()), OPEN),
        (Input::Prepared(Ok(Some(paused()))), OPEN),
    ]
}

/// Idle after its loop ended and nothing more was queued (1 registry message handled).
fn ended() -> Vec<(Input<T>, Facts)> {
    let mut given = turning();
    given.extend([
        (turn_done(1, TurnOutcome::Concluded(200)), OPEN),
        (Input::Finished, OPEN),
        (
            Input::Claimed {
                admitted: false,
                claimed: None,
            },
            OPEN,
        ),
    ]);
    given
}

fn with(
    mut given: Vec<(Input<T>, Facts)>,
    more: impl IntoIterator<Item = (Input<T>, Facts)>,
) -> Vec<(Input<T>, Facts)> {
    given.extend(more);
    given
}

/// One transition.
struct Row {
    name: &'static str,
    given: Vec<(Input<T>, Facts)>,
    when: Input<T>,
    facts: Facts,
    effects: Vec<Effect<T>>,
    phase: Phase<Start>,
}

fn rows() -> Vec<Row> {
    let claim = |admitted| Effect::Claim { admitted };
    let first_turn = Effect::StartTurn {
        seq: 1,
        start: Start::Fresh,
        first_in_loop: true,
        next_allowed: true,
    };
    vec![
        Row {
            name: "a wake with no limit claims the next loop",
            given: vec![],
            when: Input::Wake,
            facts: OPEN,
            effects: vec![claim(false)],
            phase: Phase::Claiming,
        },
        Row {
            name: "a wake under a limit looks for a place first",
            given: vec![],
            when: Input::Wake,
            facts: GATED,
            effects: vec![Effect::LookForPlace],
            phase: Phase::Asking,
        },
        Row {
            name: "admission granted: the loop is claimed with its place",
            given: asking(),
            when: Input::Looked(Look::Asked(Admit::Granted)),
            facts: GATED,
            effects: vec![claim(true)],
            phase: Phase::Claiming,
        },
        Row {
            name: "admission queued: the run waits for its place",
            given: asking(),
            when: Input::Looked(Look::Asked(Admit::Queued(queued()))),
            facts: GATED,
            effects: vec![],
            phase: Phase::Waiting,
        },
        Row {
            name: "admitted while waiting: the loop is claimed with its place",
            given: waiting(),
            when: Input::Admitted,
            facts: GATED,
            effects: vec![claim(true)],
            phase: Phase::Claiming,
        },
        Row {
            name: "admitted before the queued answer: the place is the run's",
            given: with(asking(), [(Input::Admitted, GATED)]),
            when: Input::Looked(Look::Asked(Admit::Queued(queued()))),
            facts: GATED,
            effects: vec![claim(true)],
            phase: Phase::Claiming,
        },
        Row {
            name: "nothing queued: the run is idle and says so",
            given: asking(),
            when: Input::Looked(Look::Nothing),
            facts: GATED,
            effects: vec![Effect::ReportIdle { handled: 1 }],
            phase: Phase::Idle,
        },
        Row {
            name: "a failed look for a place leaves the run idle",
            given: asking(),
            when: Input::Looked(Look::Failed),
            facts: GATED,
            effects: vec![Effect::ReportIdle { handled: 1 }],
            phase: Phase::Idle,
        },
        Row {
            name: "a claimed loop is prepared",
            given: claiming(),
            when: Input::Claimed {
                admitted: false,
                claimed: Some("loop 1"),
            },
            facts: OPEN,
            effects: vec![Effect::Prepare {
                claimed: "loop 1",
                hold: false,
                paused: None,
            }],
            phase: Phase::Claiming,
        },
        Row {
            name: "a claim admitted holds its place",
            given: with(
                asking(),
                [(Input::Looked(Look::Asked(Admit::Granted)), GATED)],
            ),
            when: Input::Claimed {
                admitted: true,
                claimed: Some("loop 1"),
            },
            facts: GATED,
            effects: vec![Effect::Prepare {
                claimed: "loop 1",
                hold: true,
                paused: None,
            }],
            phase: Phase::Claiming,
        },
        Row {
            name: "a prepared loop starts its first turn",
            given: with(
                claiming(),
                [(
                    Input::Claimed {
                        admitted: false,
                        claimed: Some("loop 1"),
                    },
                    OPEN,
                )],
            ),
            when: Input::Prepared(Ok(None)),
            facts: OPEN,
            effects: vec![first_turn],
            phase: running(0, Doing::Turn(1), None),
        },
        Row {
            name: "a claim with a place that finds nothing gives the place back",
            given: with(
                asking(),
                [(Input::Looked(Look::Asked(Admit::Granted)), GATED)],
            ),
            when: Input::Claimed {
                admitted: true,
                claimed: None,
            },
            facts: GATED,
            effects: vec![Effect::ReleasePlace, Effect::ReportIdle { handled: 1 }],
            phase: Phase::Idle,
        },
        Row {
            name: "a wake during a claim that found nothing claims once more",
            given: with(claiming(), [(Input::Wake, OPEN)]),
            when: Input::Claimed {
                admitted: false,
                claimed: None,
            },
            facts: OPEN,
            effects: vec![claim(false)],
            phase: Phase::Claiming,
        },
        Row {
            name: "a loop its route cannot serve ends 500",
            given: with(
                claiming(),
                [(
                    Input::Claimed {
                        admitted: false,
                        claimed: Some("loop 1"),
                    },
                    OPEN,
                )],
            ),
            when: Input::Prepared(Err("model \"m\" is no longer defined".into())),
            facts: OPEN,
            effects: vec![
                Effect::ReleasePlace,
                Effect::Finish(LoopEnd::Failed("model \"m\" is no longer defined".into())),
            ],
            phase: Phase::Finishing,
        },
        Row {
            name: "a new run begins the loop claimed with it",
            given: vec![],
            when: Input::Begin("loop 1"),
            facts: OPEN,
            effects: vec![Effect::Prepare {
                claimed: "loop 1",
                hold: false,
                paused: None,
            }],
            phase: Phase::Claiming,
        },
        Row {
            name: "a claimed loop arriving while another runs is left to recovery",
            given: turning(),
            when: Input::Begin("loop 2"),
            facts: OPEN,
            effects: vec![Effect::Stray("loop 2")],
            phase: running(0, Doing::Turn(1), None),
        },
        Row {
            name: "a turn that continues starts the next",
            given: turning(),
            when: turn_done(1, TurnOutcome::Continue(Start::Next(2))),
            facts: OPEN,
            effects: vec![Effect::StartTurn {
                seq: 2,
                start: Start::Next(2),
                first_in_loop: false,
                next_allowed: true,
            }],
            phase: Phase::Running(Box::new(Running {
                turns_done: 1,
                doing: Doing::Turn(2),
                waiting: None,
                placeless: false,
                last_turn: 2,
            })),
        },
        Row {
            name: "the last turn allowed ends the loop at max turns",
            given: with(
                turning(),
                [
                    (turn_done(1, TurnOutcome::Continue(Start::Next(2))), OPEN),
                    (turn_done(2, TurnOutcome::Continue(Start::Next(3))), OPEN),
                ],
            ),
            when: turn_done(3, TurnOutcome::Continue(Start::Next(4))),
            facts: OPEN,
            effects: vec![Effect::ReleasePlace, Effect::Finish(LoopEnd::MaxTurns)],
            phase: Phase::Finishing,
        },
        Row {
            name: "a turn concluding ends the loop with its status",
            given: turning(),
            when: turn_done(1, TurnOutcome::Concluded(200)),
            facts: OPEN,
            effects: vec![
                Effect::ReleasePlace,
                Effect::Finish(LoopEnd::Concluded(200)),
            ],
            phase: Phase::Finishing,
        },
        Row {
            name: "a turn failing ends the loop 500 and nothing else",
            given: turning(),
            when: turn_done(1, TurnOutcome::Failed("the turn panicked".into())),
            facts: OPEN,
            effects: vec![
                Effect::ReleasePlace,
                Effect::Finish(LoopEnd::Failed("the turn panicked".into())),
            ],
            phase: Phase::Finishing,
        },
        Row {
            name: "a turn abandoned by the referee ends the loop 508",
            given: turning(),
            when: turn_done(1, TurnOutcome::Abandoned("repeating".into())),
            facts: OPEN,
            effects: vec![
                Effect::ReleasePlace,
                Effect::Finish(LoopEnd::Abandoned("repeating".into())),
            ],
            phase: Phase::Finishing,
        },
        Row {
            name: "a turn whose context overflows ends the loop 413",
            given: turning(),
            when: turn_done(1, TurnOutcome::Overflow),
            facts: OPEN,
            effects: vec![Effect::ReleasePlace, Effect::Finish(LoopEnd::Overflow)],
            phase: Phase::Finishing,
        },
        Row {
            name: "the end of a turn no longer running is stale",
            given: turning(),
            when: turn_done(7, TurnOutcome::Concluded(200)),
            facts: OPEN,
            effects: vec![],
            phase: running(0, Doing::Turn(1), None),
        },
        Row {
            name: "a recorded end wakes the run for its next loop",
            given: with(
                turning(),
                [(turn_done(1, TurnOutcome::Concluded(200)), OPEN)],
            ),
            when: Input::Finished,
            facts: OPEN,
            effects: vec![claim(false)],
            phase: Phase::Claiming,
        },
        Row {
            name: "a turn pausing on a proposal lets go of its context and its place",
            given: turning(),
            when: turn_done(1, TurnOutcome::Paused("set://a".into())),
            facts: OPEN,
            effects: vec![Effect::ForgetContext, Effect::ReleasePlace],
            phase: placeless(running(0, Doing::Nothing, Some("set://a")), 0),
        },
        Row {
            name: "a resolution mid-turn waits for the turn's end",
            given: turning(),
            when: resolve("set://a", "accept a"),
            facts: OPEN,
            effects: vec![],
            phase: running(0, Doing::Turn(1), None),
        },
        Row {
            name: "a resolution mid-turn is resolved when the turn pauses on its proposal",
            given: with(
                turning(),
                [
                    (resolve("set://a", "accept a"), OPEN),
                    (resolve("set://b", "accept b"), OPEN),
                ],
            ),
            when: turn_done(1, TurnOutcome::Paused("set://a".into())),
            facts: OPEN,
            effects: vec![
                Effect::Resolve("accept a"),
                Effect::NotPending("accept b"),
                Effect::ForgetContext,
                Effect::ReleasePlace,
            ],
            phase: placeless(running(0, Doing::Nothing, Some("set://a")), 0),
        },
        Row {
            name: "a resolution mid-turn is not pending when the turn ends otherwise",
            given: with(turning(), [(resolve("set://a", "accept a"), OPEN)]),
            when: turn_done(1, TurnOutcome::Concluded(200)),
            facts: OPEN,
            effects: vec![
                Effect::NotPending("accept a"),
                Effect::ReleasePlace,
                Effect::Finish(LoopEnd::Concluded(200)),
            ],
            phase: Phase::Finishing,
        },
        Row {
            name: "a resolution of the pending proposal resolves it",
            given: paused(),
            when: resolve("set://a", "accept a"),
            facts: OPEN,
            effects: vec![Effect::Resolve("accept a")],
            phase: placeless(running(0, Doing::Nothing, Some("set://a")), 0),
        },
        Row {
            name: "a resolution of another proposal is not pending",
            given: paused(),
            when: resolve("set://b", "accept b"),
            facts: OPEN,
            effects: vec![Effect::NotPending("accept b")],
            phase: placeless(running(0, Doing::Nothing, Some("set://a")), 0),
        },
        Row {
            name: "a resolution for an idle run is not pending, and the run idle once answered",
            given: vec![],
            when: resolve("set://a", "accept a"),
            facts: OPEN,
            effects: vec![Effect::NotPending("accept a")],
            phase: Phase::Idle,
        },
        Row {
            name: "an answered reply lets an idle run report",
            given: vec![(resolve("set://a", "accept a"), OPEN)],
            when: Input::Settled,
            facts: OPEN,
            effects: vec![Effect::ReportIdle { handled: 1 }],
            phase: Phase::Idle,
        },
        Row {
            name: "an accepted proposal resumes its turn",
            given: paused(),
            when: Input::Resolved {
                path: "set://a".into(),
                then: Then::Resume(Start::Resume(1)),
            },
            facts: OPEN,
            effects: vec![Effect::StartTurn {
                seq: 2,
                start: Start::Resume(1),
                first_in_loop: true,
                next_allowed: true,
            }],
            phase: placeless(running(0, Doing::Turn(2), None), 1),
        },
        Row {
            name: "an accepted command: the loop waits for its output",
            given: paused(),
            when: Input::Resolved {
                path: "set://a".into(),
                then: Then::Output("wait"),
            },
            facts: OPEN,
            effects: vec![Effect::AwaitOutput("wait")],
            phase: placeless(running(0, Doing::Output("set://a".into()), None), 0),
        },
        Row {
            name: "a failed resolution changes nothing",
            given: paused(),
            when: Input::Resolved {
                path: "set://a".into(),
                then: Then::Failed,
            },
            facts: OPEN,
            effects: vec![],
            phase: placeless(running(0, Doing::Nothing, Some("set://a")), 0),
        },
        Row {
            name: "an acceptance written after a cancel does not run its command",
            given: with(paused(), [(Input::Cancel, OPEN)]),
            when: Input::Resolved {
                path: "set://a".into(),
                then: Then::Output("wait"),
            },
            facts: OPEN,
            effects: vec![Effect::DropOutput("wait")],
            phase: Phase::Finishing,
        },
        Row {
            name: "going on under a runs limit: the next model call asks for a place",
            given: {
                let mut given = going_on();
                given.pop();
                given
            },
            when: turn_done(2, TurnOutcome::Continue(Start::Next(2))),
            facts: GATED,
            effects: vec![Effect::AskPlace {
                asked_at: 2,
                since: NOW,
            }],
            phase: placeless(
                running(
                    1,
                    Doing::Place(PlaceWait {
                        start: Start::Next(2),
                        turn: 2,
                        asked_at: 2,
                        asking: true,
                        admitted_early: false,
                    }),
                    None,
                ),
                2,
            ),
        },
        Row {
            name: "a place granted starts the turn that waited",
            given: going_on(),
            when: Input::Placed {
                asked_at: 2,
                answer: Some(Admit::Granted),
            },
            facts: GATED,
            effects: vec![Effect::StartTurn {
                seq: 3,
                start: Start::Next(2),
                first_in_loop: false,
                next_allowed: true,
            }],
            phase: Phase::Running(Box::new(Running {
                turns_done: 1,
                doing: Doing::Turn(3),
                waiting: None,
                placeless: false,
                last_turn: 2,
            })),
        },
        Row {
            name: "a place queued: the run's clients hear the turn waits",
            given: going_on(),
            when: Input::Placed {
                asked_at: 2,
                answer: Some(Admit::Queued(queued())),
            },
            facts: GATED,
            effects: vec![Effect::TellQueued {
                turn: 2,
                queued: queued(),
            }],
            phase: placeless(
                running(
                    1,
                    Doing::Place(PlaceWait {
                        start: Start::Next(2),
                        turn: 2,
                        asked_at: 2,
                        asking: false,
                        admitted_early: false,
                    }),
                    None,
                ),
                2,
            ),
        },
        Row {
            name: "admitted after a queued place: the turn starts",
            given: with(
                going_on(),
                [(
                    Input::Placed {
                        asked_at: 2,
                        answer: Some(Admit::Queued(queued())),
                    },
                    GATED,
                )],
            ),
            when: Input::Admitted,
            facts: GATED,
            effects: vec![Effect::StartTurn {
                seq: 3,
                start: Start::Next(2),
                first_in_loop: false,
                next_allowed: true,
            }],
            phase: Phase::Running(Box::new(Running {
                turns_done: 1,
                doing: Doing::Turn(3),
                waiting: None,
                placeless: false,
                last_turn: 2,
            })),
        },
        Row {
            name: "admission unavailable: the loop goes on rather than wait forever",
            given: going_on(),
            when: Input::Placed {
                asked_at: 2,
                answer: None,
            },
            facts: GATED,
            effects: vec![Effect::StartTurn {
                seq: 3,
                start: Start::Next(2),
                first_in_loop: false,
                next_allowed: true,
            }],
            phase: Phase::Running(Box::new(Running {
                turns_done: 1,
                doing: Doing::Turn(3),
                waiting: None,
                placeless: false,
                last_turn: 2,
            })),
        },
        Row {
            name: "the answer to an earlier ask for a place is stale",
            given: going_on(),
            when: Input::Placed {
                asked_at: 1,
                answer: Some(Admit::Granted),
            },
            facts: GATED,
            effects: vec![],
            phase: placeless(
                running(
                    1,
                    Doing::Place(PlaceWait {
                        start: Start::Next(2),
                        turn: 2,
                        asked_at: 2,
                        asking: true,
                        admitted_early: false,
                    }),
                    None,
                ),
                2,
            ),
        },
        Row {
            name: "cancel mid-turn stops the turn and ends the loop 499",
            given: turning(),
            when: Input::Cancel,
            facts: OPEN,
            effects: vec![
                Effect::StopCommands { awaiting: None },
                Effect::StopTurn(1),
                Effect::ReleasePlace,
                Effect::Finish(LoopEnd::Cancelled),
                Effect::Cancelled(true),
            ],
            phase: Phase::Finishing,
        },
        Row {
            name: "cancel mid-turn answers the early resolutions that they are not pending",
            given: with(turning(), [(resolve("set://a", "accept a"), OPEN)]),
            when: Input::Cancel,
            facts: OPEN,
            effects: vec![
                Effect::StopCommands { awaiting: None },
                Effect::StopTurn(1),
                Effect::NotPending("accept a"),
                Effect::ReleasePlace,
                Effect::Finish(LoopEnd::Cancelled),
                Effect::Cancelled(true),
            ],
            phase: Phase::Finishing,
        },
        Row {
            name: "cancel of a loop waiting for a place withdraws its ask",
            given: going_on(),
            when: Input::Cancel,
            facts: GATED,
            effects: vec![
                Effect::StopCommands { awaiting: None },
                Effect::WithdrawPlace,
                Effect::ReleasePlace,
                Effect::Finish(LoopEnd::Cancelled),
                Effect::Cancelled(true),
            ],
            phase: Phase::Finishing,
        },
        Row {
            name: "cancel while waiting for a command's output stops the wait",
            given: awaiting_output(),
            when: Input::Cancel,
            facts: OPEN,
            effects: vec![
                Effect::StopCommands {
                    awaiting: Some("sh://1".into()),
                },
                Effect::StopOutputWait,
                Effect::ReleasePlace,
                Effect::Finish(LoopEnd::Cancelled),
                Effect::Cancelled(true),
            ],
            phase: Phase::Finishing,
        },
        Row {
            name: "cancel while queued for a place leaves the line and claims the loop to end it",
            given: waiting(),
            when: Input::Cancel,
            facts: GATED,
            effects: vec![
                Effect::StopCommands { awaiting: None },
                Effect::WithdrawPlace,
                claim(false),
                Effect::Cancelled(true),
            ],
            phase: Phase::Claiming,
        },
        Row {
            name: "the loop claimed after a cancel ends 499 without a turn",
            given: with(
                waiting(),
                [
                    (Input::Cancel, GATED),
                    (
                        Input::Claimed {
                            admitted: false,
                            claimed: Some("loop 1"),
                        },
                        GATED,
                    ),
                ],
            ),
            when: Input::Prepared(Ok(None)),
            facts: GATED,
            effects: vec![Effect::ReleasePlace, Effect::Finish(LoopEnd::Cancelled)],
            phase: Phase::Finishing,
        },
        Row {
            name: "cancel while asking for a place waits for the answer",
            given: asking(),
            when: Input::Cancel,
            facts: GATED,
            effects: vec![
                Effect::StopCommands { awaiting: None },
                Effect::Cancelled(true),
            ],
            phase: Phase::Asking,
        },
        Row {
            name: "a queued answer after a cancel withdraws and claims the loop to end it",
            given: with(asking(), [(Input::Cancel, GATED)]),
            when: Input::Looked(Look::Asked(Admit::Queued(queued()))),
            facts: GATED,
            effects: vec![Effect::WithdrawPlace, claim(false)],
            phase: Phase::Claiming,
        },
        Row {
            name: "cancel of an ended run stops only its commands",
            given: ended(),
            when: Input::Cancel,
            facts: OPEN,
            effects: vec![
                Effect::StopCommands { awaiting: None },
                Effect::Cancelled(false),
                Effect::ReportIdle { handled: 2 },
            ],
            phase: Phase::Idle,
        },
        Row {
            name: "a restore paused on a command's output holds its place",
            given: vec![],
            when: Input::Restore("loop 1", Paused::Output("sh://1".into(), "wait")),
            facts: OPEN,
            effects: vec![Effect::Prepare {
                claimed: "loop 1",
                hold: true,
                paused: Some(Paused::Output("sh://1".into(), "wait")),
            }],
            phase: Phase::Claiming,
        },
        Row {
            name: "a restored loop waits for its command's output",
            given: vec![(
                Input::Restore("loop 1", Paused::Output("sh://1".into(), "wait")),
                OPEN,
            )],
            when: Input::Prepared(Ok(Some(Paused::Output("sh://1".into(), "wait")))),
            facts: OPEN,
            effects: vec![Effect::AwaitOutput("wait")],
            phase: running(1, Doing::Output("sh://1".into()), None),
        },
        Row {
            name: "a restored loop waits for its proposal's answer, without a place",
            given: vec![(
                Input::Restore("loop 1", Paused::Proposal("set://a".into())),
                OPEN,
            )],
            when: Input::Prepared(Ok(Some(Paused::Proposal("set://a".into())))),
            facts: OPEN,
            effects: vec![],
            phase: placeless(running(1, Doing::Nothing, Some("set://a")), 0),
        },
        Row {
            name: "the output's end resumes its turn",
            given: awaiting_output(),
            when: Input::OutputDone {
                path: "sh://1".into(),
                start: Start::Resume(1),
            },
            facts: OPEN,
            effects: vec![Effect::StartTurn {
                seq: 1,
                start: Start::Resume(1),
                first_in_loop: false,
                next_allowed: true,
            }],
            phase: Phase::Running(Box::new(Running {
                turns_done: 1,
                doing: Doing::Turn(1),
                waiting: None,
                placeless: false,
                last_turn: 1,
            })),
        },
        Row {
            name: "a queued prompt wakes the run once written",
            given: with(ended(), [(Input::QueueLoop("more"), OPEN)]),
            when: Input::Enqueued { queued: true },
            facts: OPEN,
            effects: vec![claim(false)],
            phase: Phase::Claiming,
        },
        Row {
            name: "a prompt for an idle run is queued as a loop",
            given: ended(),
            when: Input::Inject("more"),
            facts: OPEN,
            effects: vec![Effect::Enqueue("more")],
            phase: Phase::Idle,
        },
        Row {
            name: "a prompt for a running loop is folded into it",
            given: turning(),
            when: Input::Inject("more"),
            facts: OPEN,
            effects: vec![Effect::Fold("more")],
            phase: running(0, Doing::Turn(1), None),
        },
        Row {
            name: "a message crossing an idle report is reported idle again at its count",
            given: ended(),
            when: Input::Rename,
            facts: OPEN,
            effects: vec![Effect::ReportIdle { handled: 2 }],
            phase: Phase::Idle,
        },
        Row {
            name: "an idle run reports once per count: a stale admission adds nothing",
            given: ended(),
            when: Input::Admitted,
            facts: OPEN,
            effects: vec![],
            phase: Phase::Idle,
        },
        Row {
            name: "a restart's queued run waits for its place",
            given: vec![],
            when: Input::AwaitPlace,
            facts: GATED,
            effects: vec![],
            phase: Phase::Waiting,
        },
        Row {
            name: "retired, the actor stops",
            given: ended(),
            when: Input::Retire,
            facts: OPEN,
            effects: vec![Effect::Stop],
            phase: Phase::Idle,
        },
    ]
}

/// Every transition of the table gives exactly its effects and its phase.
#[test]
fn each_transition_gives_its_effects_and_phase() {
    let mut seen = std::collections::HashSet::new();
    for row in rows() {
        assert!(seen.insert(row.name), "two rows named {:?}", row.name);
        let mut machine = Orchestration::<T>::new(MAX_TURNS);
        for (input, facts) in row.given {
            machine.step(input, facts);
        }
        let effects = machine.step(row.when, row.facts);
        assert_eq!(effects, row.effects, "effects: {}", row.name);
        assert_eq!(machine.phase(), &row.phase, "phase: {}", row.name);
    }
}

/// A machine restarted by its actor's supervisor is idle with nothing in flight, and keeps its
/// counts: the registry's messages (its next idle report counts on from them) and its turns
/// (its next turn is not numbered as the stopped one was).
#[test]
fn a_restarted_machine_is_idle_and_keeps_its_counts() {
    let mut machine = Orchestration::<T>::new(MAX_TURNS);
    for (input, facts) in turning() {
        machine.step(input, facts);
    }
    let mut machine = machine.restarted();
    assert_eq!(machine.phase(), &Phase::Idle);
    let mut effects = machine.step(Input::Wake, OPEN);
    effects.extend(machine.step(
        Input::Claimed {
            admitted: false,
            claimed: None,
        },
        OPEN,
    ));
    assert_eq!(
        effects,
        vec![
            Effect::Claim { admitted: false },
            Effect::ReportIdle { handled: 2 }
        ]
    );
    machine.step(Input::Begin("loop 2"), OPEN);
    assert_eq!(
        machine.step(Input::Prepared(Ok(None)), OPEN),
        vec![Effect::StartTurn {
            seq: 2,
            start: Start::Fresh,
            first_in_loop: true,
            next_allowed: true,
        }]
    );
}

/// What each loop end records: its status, the run's, the stop reason and the error.
#[test]
fn each_loop_end_records_its_statuses() {
    let ending = |loop_status, run_status, stop_reason, error: Option<&str>| Ending {
        loop_status,
        run_status,
        stop_reason,
        error: error.map(str::to_owned),
    };
    for (end, expected) in [
        (
            LoopEnd::Concluded(200),
            ending(200, RunStatus::Completed, StopReason::Concluded, None),
        ),
        (
            LoopEnd::MaxTurns,
            ending(200, RunStatus::Completed, StopReason::MaxTurns, None),
        ),
        (
            LoopEnd::Cancelled,
            ending(499, RunStatus::Cancelled, StopReason::Cancelled, None),
        ),
        (
            LoopEnd::Failed("boom".into()),
            ending(500, RunStatus::Failed, StopReason::Failed, Some("boom")),
        ),
        (
            LoopEnd::Abandoned("repeating".into()),
            ending(
                508,
                RunStatus::LoopDetected,
                StopReason::Abandoned,
                Some("repeating"),
            ),
        ),
        (
            LoopEnd::Overflow,
            ending(413, RunStatus::ContextFull, StopReason::ContextFull, None),
        ),
    ] {
        assert_eq!(end.clone().ending(), expected, "{end:?}");
    }
}
