//! An accepted command's output streamed by a client: `stream` appends to a channel, and
//! `stream/completed`, `stream/aborted` and `stream/cancel` settle the channels. A command the
//! server runs speaks for itself: a client's `stream`, `stream/completed` or `stream/aborted` on
//! it is refused (-32003, [`streams::check_client_producer`]); `stream/cancel` still stops it.

use crate::clock::now;
use crate::errors::Error;
use crate::session::call::Call;
use rummy_core::turn::state::push_appended;
use rummy_core::turn::streams::{self, StreamEnd, StreamWrite};
use rummy_core::wire::notifications::StreamCancelled;
use rummy_core::wire::params::{
    StreamAbortedParams, StreamCancelParams, StreamCompletedParams, StreamParams,
};
use rummy_core::wire::results::{ChannelsAck, Done};
use rummy_store::runs;

/// `stream`: appends a chunk to channel `<path>_<channel>` and pushes the run's state, so every
/// client watching the run (the web page, another CLI) sees the output as it grows, as it does
/// a command the server runs: the push carries what was appended (`append: true, offset`), and
/// the channel is capped at `RUMMY_COMMAND_OUTPUT_BYTES` as the server caps a command's output
/// (past it the marker once, then the chunks are dropped: nothing is written or pushed).
pub async fn stream(call: Call, p: StreamParams) -> Result<Done, Error> {
    let run = call.run(&p.run).await?;
    let (rr, divisor) = (run.run_ref(), call.divisor());
    let (cap, bounds) = (call.svc().config.shell.output_bytes, call.store().bounds());
    let pushed = call
        .write(move |c| {
            let at = StreamWrite {
                run: rr,
                ctx: crate::clock::write_ctx(divisor),
            };
            streams::check_client_producer(c, rr.run_id, &p.path)?;
            let Some(appended) = streams::append_capped(c, at, &p.path, p.channel, &p.chunk, cap)?
            else {
                return Ok(None);
            };
            // The run's status as of this write (see `settle`).
            let stored = runs::by_id(c, rr.run_id)?;
            push_appended(
                c,
                rr.run_id,
                stored.last_turn(),
                stored.status,
                bounds,
                &[appended],
                now(),
            )
            .map(Some)
        })
        .await?;
    if let Some(pushed) = pushed {
        call.svc().publish_state(rr.project_id, &run.alias, &pushed);
    }
    Ok(Done::OK)
}

/// Settles the channels of the stream at `path` of `run` with `end`, and pushes the run's state.
/// `producer`: the client says how the command ended (`stream/completed`, `stream/aborted`),
/// which only the producer of its output may — refused on a command the server runs.
async fn settle(
    call: &Call,
    alias: &str,
    path: &str,
    end: StreamEnd,
    producer: bool,
) -> Result<Vec<String>, Error> {
    let run = call.run(alias).await?;
    let (rr, divisor) = (run.run_ref(), call.divisor());
    let bounds = call.store().bounds();
    let settled = path.to_owned();
    let path = path.to_owned();
    let (channels, pushed) = call
        .write(move |c| {
            let at = StreamWrite {
                run: rr,
                ctx: crate::clock::write_ctx(divisor),
            };
            if producer {
                streams::check_client_producer(c, rr.run_id, &path)?;
            }
            let channels = streams::settle(c, at, &path, &end)?;
            let unchanged = streams::unchanged(c, rr.run_id, &channels)?;
            // The run's status as of this write: read before it, a loop that ended meanwhile
            // would be pushed as still working after its final state.
            let stored = runs::by_id(c, rr.run_id)?;
            let pushed = push_appended(
                c,
                rr.run_id,
                stored.last_turn(),
                stored.status,
                bounds,
                &unchanged,
                now(),
            )?;
            Ok((channels, pushed))
        })
        .await?;
    // The turn waiting for this output goes on; a command the server runs is killed.
    call.svc().shell.settled(rr.run_id, &settled);
    call.svc().publish_state(rr.project_id, &run.alias, &pushed);
    Ok(channels)
}

/// `stream/completed`: the command exited; its channels are settled by its exit code.
pub async fn stream_completed(call: Call, p: StreamCompletedParams) -> Result<ChannelsAck, Error> {
    let end = StreamEnd::Completed {
        exit_code: p.exit_code.unwrap_or(0),
        duration: p.duration,
    };
    let channels = settle(&call, &p.run, &p.path, end, true).await?;
    Ok(ChannelsAck { ok: true, channels })
}

/// `stream/aborted`: the producer stopped; the channels are cancelled.
pub async fn stream_aborted(call: Call, p: StreamAbortedParams) -> Result<ChannelsAck, Error> {
    let end = StreamEnd::Aborted {
        reason: p.reason,
        duration: p.duration,
    };
    let channels = settle(&call, &p.run, &p.path, end, true).await?;
    Ok(ChannelsAck { ok: true, channels })
}

/// `stream/cancel`: a client cancels the stream; every client of the project hears
/// `stream/cancelled`, so whoever runs the command stops it.
pub async fn stream_cancel(call: Call, p: StreamCancelParams) -> Result<ChannelsAck, Error> {
    let project_id = call.project()?.project_id;
    let end = StreamEnd::Cancelled {
        reason: p.reason.clone(),
    };
    let channels = settle(&call, &p.run, &p.path, end, false).await?;
    let reason = p.reason.unwrap_or_else(|| "cancelled".to_owned());
    let cancelled = StreamCancelled {
        path: p.path,
        reason: Some(reason),
        run: p.run,
    };
    call.svc().push(project_id, &cancelled.run, &cancelled);
    Ok(ChannelsAck { ok: true, channels })
}
