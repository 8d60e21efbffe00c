//! A run's entries: `getEntries`, `set` (on an entry, or every match of a pattern; on a pending
//! proposal's path it resolves it), `get`, `rm`, `cp`, `mv` and `update`. A project file's
//! body or state is never a client's to change (-32003, [`ops::check_file_change`]): a write,
//! a state, a pattern's match or a copy onto it is refused, so the entry keeps the disk's
//! content; a proposal on the file is resolved by the proposal's own path.

mod set;

pub use set::{set, SetAnswer};

use super::runs;
use crate::errors::Error;
use crate::session::call::Call;
use rummy_core::wire::bounded::{self, SliceError};
use rummy_core::wire::params::{
    self, GetBodyParams, GetEntriesParams, GetParams, MoveParams, Page, RmParams, UpdateParams,
};
use rummy_core::wire::results::{BodySlice, CountAck, Entry, PathAck, PathsAck};
use rummy_core::wire::{ErrorKind, RpcError};
use rummy_store::entries::{self, EntryFilter, ViewRow};
use rummy_store::entry::{State, Visibility};
use rummy_store::export;
use rummy_store::ids::RunId;
use rummy_store::memory::{self};
use rummy_store::ops::{self};
use rummy_store::selection::{self, Selection};
use rummy_store::StoreError;
use rummy_text::path::{normalize, scheme_of};

/// A `state` param: one of the entry states, -32602 otherwise.
fn state_param(state: Option<&str>) -> Result<Option<State>, RpcError> {
    state
        .map(|s| {
            State::parse(s).ok_or_else(|| {
                RpcError::invalid_param(
                    "state",
                    "expected proposed, streaming, resolved, failed or cancelled",
                )
            })
        })
        .transpose()
}

/// A `visibility` param: one of the visibilities, -32602 otherwise.
fn visibility_param(visibility: Option<&str>) -> Result<Option<Visibility>, RpcError> {
    visibility
        .map(|v| {
            Visibility::parse(v).ok_or_else(|| {
                RpcError::invalid_param("visibility", "expected visible, summarized or archived")
            })
        })
        .transpose()
}

/// `getEntries`: a page of the run's entries, filtered; for the schemes `memory` and `history`,
/// the project's (no run has views of them; a superseded memory is listed archived). Each body
/// at most `RUMMY_INLINE_BODY_BYTES` (`bodyTruncated`, `bodyBytes`); a page that would still pass
/// `RUMMY_MAX_MESSAGE_BYTES` is refused -32007 with `data.limit`, how many of its entries fit.
pub async fn get_entries(call: Call, p: GetEntriesParams) -> Result<Vec<Entry>, Error> {
    let bounds = call.store().bounds();
    let listed = list_entries(&call, &p).await?;
    let listed: Vec<Entry> = listed
        .into_iter()
        .map(|r| {
            bounded::inline_entry(export::wire_entry(r, p.with_body), bounds.inline_body_bytes)
        })
        .collect();
    let sizes = listed
        .iter()
        .map(|e| serde_json::to_vec(e).map(|v| v.len()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(StoreError::Json)?;
    let fit = bounded::fitting(sizes.iter().copied(), bounds.result_bytes());
    if fit < listed.len() {
        let total: usize = sizes.iter().sum::<usize>() + sizes.len() + 1;
        return Err(StoreError::TooMany {
            message: format!(
                "too large: these {} entries take {total} bytes, over the {}-byte message \
                 limit; ask for at most {fit} at a time (limit), or without withBody, and read \
                 long bodies with getBody",
                listed.len(),
                bounds.max_message_bytes
            ),
            limit: fit,
        }
        .into());
    }
    Ok(listed)
}

/// The rows `getEntries` lists: the run's entries, or the project's memory or history.
async fn list_entries(call: &Call, p: &GetEntriesParams) -> Result<Vec<ViewRow>, Error> {
    let state = state_param(p.state.as_deref())?;
    let visibility = visibility_param(p.visibility.as_deref())?;
    let run = call.run(&p.run).await?;
    let p = p.clone();
    let pattern = p
        .pattern
        .as_deref()
        .filter(|x| *x != "*")
        .map(|x| normalize(x).map_err(|e| RpcError::invalid_param("pattern", e)))
        .transpose()?;
    let filter = EntryFilter {
        scheme: p.scheme.clone(),
        state,
        visibility,
        pattern,
        body_filter: p.body_filter.clone(),
    };
    let (limit, offset) = params::bounds(Page {
        limit: p.limit,
        offset: p.offset,
    });
    // The project's memory and history have no views: listed from the project's entries.
    let viewless = filter
        .scheme
        .as_deref()
        .filter(|s| entries::is_viewless(Some(s)))
        .map(str::to_owned);
    let rows = call
        .read(move |c| match viewless {
            Some(scheme) => {
                let mut rows = memory::list(
                    c,
                    run.project_id,
                    &scheme,
                    filter.pattern.as_deref(),
                    filter.body_filter.as_deref(),
                    limit,
                    offset,
                )?;
                rows.retain(|r| {
                    filter.state.is_none_or(|s| r.state == s)
                        && filter.visibility.is_none_or(|v| r.visibility == v)
                });
                Ok(rows)
            }
            None => entries::list(c, run.id, &filter, limit, offset),
        })
        .await?;
    Ok(rows)
}

/// `getBody`: a slice of one entry's body (of those `getEntries` lists), in bytes, at most
/// what fits a message; -32602 for an offset past the end or inside a character, -32004 for a
/// path the run does not have.
pub async fn get_body(call: Call, p: GetBodyParams) -> Result<BodySlice, Error> {
    let bounds = call.store().bounds();
    let run = call.run(&p.run).await?;
    let path = normalize(&p.path).map_err(|e| RpcError::invalid_param("path", e))?;
    let lookup = path.clone();
    let row = call
        .read(move |c| {
            let scheme = scheme_of(&lookup);
            if !entries::is_viewless(scheme.as_deref()) {
                return entries::by_path(c, run.id, &lookup);
            }
            let scheme = scheme.unwrap_or_default();
            let rows = memory::list(c, run.project_id, &scheme, Some(&lookup), None, 1000, 0)?;
            Ok(rows.into_iter().find(|r| r.path == lookup))
        })
        .await?
        .ok_or_else(|| {
            RpcError::new(
                ErrorKind::NotFound,
                format!("no entry {path} in run \"{}\"", p.run),
            )
        })?;
    let offset = usize::try_from(p.offset.unwrap_or(0)).unwrap_or(usize::MAX);
    let room = bounds
        .result_bytes()
        .saturating_sub(row.path.len() * 6 + 128);
    let rest = row.body.get(offset..).unwrap_or_default();
    let most = bounded::json_fit(rest, room);
    let length = p
        .length
        .map_or(most, |l| usize::try_from(l).unwrap_or(usize::MAX).min(most));
    let slice = bounded::slice(&row.body, offset, length).map_err(|e| match e {
        SliceError::PastEnd { size } => RpcError::invalid_param(
            "offset",
            format!("{offset} is past the body's end: it has {size} bytes"),
        ),
        SliceError::InsideCharacter { start } => RpcError::invalid_param(
            "offset",
            format!("{offset} falls inside a character, which starts at byte {start}"),
        ),
    })?;
    let int = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    Ok(BodySlice {
        offset: int(slice.offset),
        body: slice.text.to_owned(),
        body_bytes: int(row.body.len()),
        next: slice.next.map(int),
        path: row.path,
    })
}

/// `get`: promotes the matching entries (to visible, or the visibility given).
pub async fn get(call: Call, p: GetParams) -> Result<CountAck, Error> {
    let visibility = visibility_param(p.visibility.as_deref())?;
    let op = call.op(call.run(&p.run).await?.run_ref());
    let selection = choose(&call, op.run.run_id, &p.path, p.body_filter).await?;
    let count = call
        .write(move |c| ops::get(c, &op, &selection, visibility))
        .await?;
    Ok(CountAck {
        ok: true,
        count: i64::try_from(count).unwrap_or(i64::MAX),
    })
}

/// `rm`: removes the run's view of every matching entry.
pub async fn rm(call: Call, p: RmParams) -> Result<PathsAck, Error> {
    let op = call.op(call.run(&p.run).await?.run_ref());
    let selection = choose(&call, op.run.run_id, &p.path, p.body_filter).await?;
    let paths = call.write(move |c| ops::rm(c, &op, &selection)).await?;
    Ok(PathsAck { ok: true, paths })
}

/// What a pattern call changes. A body filter is judged here, on a read connection in the
/// blocking pool: never on the store's writer, which every run's writes wait on, nor on the
/// threads that serve other clients.
async fn choose(
    call: &Call,
    run_id: RunId,
    pattern: &str,
    body_filter: Option<String>,
) -> Result<Selection, Error> {
    let Some(filter) = body_filter else {
        return Ok(Selection::pattern(pattern)?);
    };
    let pattern = pattern.to_owned();
    call.read(move |c| selection::choose(c, run_id, &pattern, Some(&filter)))
        .await
}

/// `cp`: copies an entry (runs are copied with a fork, not here).
pub async fn cp(call: Call, p: MoveParams) -> Result<PathAck, Error> {
    copy_or_move(call, p, false).await
}

/// `mv`: moves an entry, or renames a run (`run://old` → `run://new`).
pub async fn mv(call: Call, p: MoveParams) -> Result<PathAck, Error> {
    copy_or_move(call, p, true).await
}

async fn copy_or_move(call: Call, p: MoveParams, moving: bool) -> Result<PathAck, Error> {
    if let (Some(old), Some(new)) = (p.from.strip_prefix("run://"), p.to.strip_prefix("run://")) {
        if !moving {
            return Err(RpcError::invalid_param(
                "from",
                "runs are copied with a fork: set run://<new> with attributes.fork",
            )
            .into());
        }
        return runs::rename(&call, old, new).await;
    }
    let visibility = visibility_param(p.visibility.as_deref())?;
    let op = call.op(call.run(&p.run).await?.run_ref());
    let path = call
        .write(move |c| {
            if moving {
                ops::mv(c, &op, &p.from, &p.to, visibility)
            } else {
                ops::cp(c, &op, &p.from, &p.to, visibility)
            }
        })
        .await?;
    Ok(PathAck { ok: true, path })
}

/// `update`: writes a status report.
pub async fn update(call: Call, p: UpdateParams) -> Result<PathAck, Error> {
    let status = p.status.unwrap_or(102);
    if ![102, 200, 204, 422].contains(&status) {
        return Err(RpcError::invalid_param("status", "expected 102, 200, 204 or 422").into());
    }
    let op = call.op(call.run(&p.run).await?.run_ref());
    let path = call
        .write(move |c| ops::update(c, &op, &p.body, status, p.attributes.as_ref()))
        .await?;
    Ok(PathAck { ok: true, path })
}
