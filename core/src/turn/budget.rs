//! The token budget (ENGINE.md §4): the ceiling, the calibrated estimate, and the two demotions that keep a run under it.
//!
//! The ceiling check scales the fresh estimate of what was assembled by the
//! last turn's measured ratio (provider-reported prompt tokens ÷ our estimate
//! of the same turn), so decisions follow real token counts while still
//! reacting to what changed this turn. The budget never deletes anything:
//! demotion only changes visibility.

use super::TurnRef;
use crate::entry::{Category, State, Visibility, Writer};
use crate::schema::{entries, run_views, turns};
use crate::schemes;
use crate::store::entries::{self as store_entries, EntryWrite, ViewRow};
use crate::store::{runs, StoreError};
use crate::time::Millis;
use diesel::prelude::*;
use serde_json::json;

/// A run's budget for one turn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// min(run's contextLimit, model's context length).
    pub context_size: i32,
    /// floor(context_size × RUMMY_BUDGET_CEILING).
    pub ceiling: i32,
    /// Measured ÷ estimated tokens of the last turn (1.0 without one).
    pub ratio: f64,
}

impl Budget {
    /// The budget, when a context size is known.
    pub fn new(
        run_limit: Option<i32>,
        model_context: Option<i32>,
        ceiling_share: f64,
        ratio: Option<f64>,
    ) -> Option<Budget> {
        let context_size = match (run_limit, model_context) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return None,
        };
        let ceiling = (f64::from(context_size) * ceiling_share).floor() as i32;
        Some(Budget {
            context_size,
            ceiling,
            ratio: ratio.filter(|r| r.is_finite() && *r > 0.0).unwrap_or(1.0),
        })
    }

    /// The estimate scaled by the measured ratio.
    pub fn calibrate(&self, estimate: i32) -> i32 {
        (f64::from(estimate) * self.ratio).ceil() as i32
    }

    /// How far over the ceiling a calibrated count is (0 when it fits).
    pub fn overflow(&self, calibrated: i32) -> i32 {
        (calibrated - self.ceiling).max(0)
    }
}

/// Tokens a rendered tag may add around an entry's body: its path, turn, status, summary
/// (≤ 80 characters), visibility and token attributes.
pub const TAG_TOKENS: i32 = 64;

/// At most how many tokens the views written since revision `rev` add to the run's context:
/// each such view counted in full with its tag, whatever it was before. An upper bound, so a
/// context that fits with it fits for certain and need not be assembled again to know.
pub fn growth_since(conn: &mut SqliteConnection, run_id: i32, rev: i32) -> Result<i32, StoreError> {
    let rows: Vec<(Option<String>, i32)> = run_views::table
        .inner_join(entries::table)
        .filter(run_views::run_id.eq(run_id))
        .filter(run_views::rev.ge(rev))
        .select((entries::scheme, entries::tokens))
        .load(conn)?;
    Ok(rows
        .iter()
        .filter(|(scheme, _)| schemes::lookup(scheme.as_deref()).is_some_and(|s| s.model_visible))
        .map(|(_, tokens)| tokens + TAG_TOKENS)
        .sum())
}

/// What promoted content costs: the full-body tokens of visible data and logging rows.
pub fn token_usage(rows: &[ViewRow]) -> i32 {
    rows.iter()
        .filter(|r| r.visibility() == Visibility::Visible)
        .filter(|r| matches!(r.category(), Some(Category::Data | Category::Logging)))
        .map(|r| r.tokens)
        .sum()
}

/// The model's room: the ceiling minus everything assembled besides the promoted content.
pub fn tokens_free(budget: &Budget, calibrated_total: i32, usage: i32) -> i32 {
    (budget.ceiling - (calibrated_total - budget.calibrate(usage))).max(0)
}

/// The last turn's measured ÷ estimated ratio, if a turn reported its prompt tokens.
pub fn last_ratio(conn: &mut SqliteConnection, run_id: i32) -> Result<Option<f64>, StoreError> {
    let last: Option<(i32, i32)> = turns::table
        .filter(turns::run_id.eq(run_id))
        .filter(turns::prompt_tokens.gt(0))
        .filter(turns::context_tokens.gt(0))
        .order(turns::sequence.desc())
        .select((turns::prompt_tokens, turns::context_tokens))
        .first(conn)
        .optional()?;
    Ok(last.map(|(measured, estimated)| f64::from(measured) / f64::from(estimated)))
}

fn set_visibility(
    conn: &mut SqliteConnection,
    run_id: i32,
    view_ids: &[i32],
    visibility: Visibility,
    now: Millis,
) -> Result<(), StoreError> {
    for id in view_ids {
        let rev = runs::take_rev(conn, run_id)?;
        diesel::update(run_views::table.find(id))
            .set((
                run_views::visibility.eq(visibility.as_str()),
                run_views::rev.eq(rev),
                run_views::updated_at.eq(now.0),
            ))
            .execute(conn)?;
    }
    Ok(())
}

/// Prompt Demotion: the loop's latest prompt becomes summarized (its view truncates it); answers whether one was demoted.
pub fn demote_prompt(
    conn: &mut SqliteConnection,
    run_id: i32,
    now: Millis,
) -> Result<bool, StoreError> {
    let prompt: Option<i32> = run_views::table
        .inner_join(entries::table)
        .filter(run_views::run_id.eq(run_id))
        .filter(entries::scheme.eq("prompt"))
        .filter(run_views::visibility.eq(Visibility::Visible.as_str()))
        .order(run_views::turn.desc())
        .select(run_views::id)
        .first(conn)
        .optional()?;
    match prompt {
        Some(id) => set_visibility(conn, run_id, &[id], Visibility::Summarized, now).map(|()| true),
        None => Ok(false),
    }
}

/// Turn Demotion: this turn's visible, non-failed entries become summarized; answers (count, their full tokens).
pub fn demote_turn(
    conn: &mut SqliteConnection,
    t: TurnRef,
    now: Millis,
) -> Result<(usize, i32), StoreError> {
    let rows: Vec<(i32, i32)> = run_views::table
        .inner_join(entries::table)
        .filter(run_views::run_id.eq(t.run.run_id))
        .filter(run_views::turn.eq(t.turn))
        .filter(run_views::visibility.eq(Visibility::Visible.as_str()))
        .filter(run_views::state.ne_all([
            State::Failed.as_str(),
            State::Cancelled.as_str(),
            State::Proposed.as_str(),
        ]))
        .filter(
            entries::scheme
                .ne_all(["update", "error", "budget", "prompt"])
                .or(entries::scheme.is_null()),
        )
        .select((run_views::id, entries::tokens))
        .load(conn)?;
    let ids: Vec<i32> = rows.iter().map(|r| r.0).collect();
    set_visibility(conn, t.run.run_id, &ids, Visibility::Summarized, now)?;
    Ok((ids.len(), rows.iter().map(|r| r.1).sum()))
}

/// The `budget://<loop>/<turn>` entry that tells the model what happened and by how much.
pub fn record_overflow(
    conn: &mut SqliteConnection,
    t: TurnRef,
    overflow: i32,
    budget: &Budget,
    demoted: (usize, i32),
    divisor: u32,
    now: Millis,
) -> Result<String, StoreError> {
    let path = format!("budget://{}/{}", t.loop_id, t.turn);
    let body = format!(
        "Token budget overflow: over by {overflow} tokens (ceiling {}).\n\
         Your {} promotions from this turn ({} tokens) were summarized to fit.\n\
         Add up the tokens=\"N\" of what you promote and write before you do; one turn should add no more than half of tokensFree.",
        budget.ceiling, demoted.0, demoted.1
    );
    let outcome = format!("overflow:{overflow}");
    store_entries::write(
        conn,
        &EntryWrite {
            run: t.run,
            path: &path,
            body: &body,
            attributes: &json!({ "overflow": overflow, "ceiling": budget.ceiling }),
            state: State::Failed,
            outcome: Some(&outcome),
            visibility: Visibility::Visible,
            loop_id: Some(t.loop_id),
            turn: t.turn,
            writer: Writer::Plugin,
        },
        divisor,
        now,
    )?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The context size is the smaller of run limit and model length; the ceiling is its share, floored.
    #[test]
    fn ceiling_and_calibration() {
        assert_eq!(Budget::new(None, None, 0.9, None), None);
        let b = Budget::new(Some(10_000), Some(8_192), 0.9, Some(1.5)).unwrap();
        assert_eq!((b.context_size, b.ceiling), (8_192, 7_372));
        assert_eq!(b.calibrate(1_000), 1_500);
        assert_eq!((b.overflow(7_000), b.overflow(7_400)), (0, 28));
        let plain = Budget::new(Some(2_000), None, 0.5, Some(f64::NAN)).unwrap();
        assert_eq!((plain.ceiling, plain.ratio), (1_000, 1.0));
    }

    /// tokensFree is the ceiling minus what is assembled besides the promoted content.
    #[test]
    fn free_tokens() {
        let b = Budget::new(Some(1_000), None, 1.0, None).unwrap();
        assert_eq!(tokens_free(&b, 600, 200), 600);
        assert_eq!(tokens_free(&b, 1_500, 100), 0);
    }
}
