//! `inject` and `cancel`: steering a run that is going — a prompt folded into its loop, or a stop.

use super::args::{CancelArgs, InjectArgs};
use super::exit::Exit;
use super::out::print;
use super::render;
use super::session::{Failure, Intent, Session};

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
