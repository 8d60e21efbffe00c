//! The token budget (docs/design/turns.md): the ceiling, the calibrated estimate, and the two demotions that keep a run under it.
//!
//! The ceiling check scales the fresh estimate of what was assembled by the
//! last turn's measured ratio (provider-reported prompt tokens ÷ our estimate
//! of the same turn), so decisions follow real token counts while still
//! reacting to what changed this turn. The budget never deletes anything:
//! demotion only changes visibility.

use super::TurnRef;
use rummy_provider::time::Millis;
use rummy_store::db::Db;
use rummy_store::entries::{self as store_entries, EntryWrite, ViewRow, WriteCtx};
use rummy_store::entry::{Category, FailureKind, State, Visibility, Writer};
use rummy_store::ids::RunId;
use rummy_store::schemes;
use rummy_store::{runs, turns, views, StoreError};
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
pub fn growth_since(conn: &mut Db, run_id: RunId, rev: i32) -> Result<i32, StoreError> {
    let rows = views::tokens_since(conn, run_id, rev)?;
    Ok(rows
        .iter()
        .filter(|(scheme, _)| schemes::lookup(scheme.as_deref()).is_some_and(|s| s.model_visible))
        .map(|(_, tokens)| tokens + TAG_TOKENS)
        .sum())
}

/// What promoted content costs: the full-body tokens of visible data and logging rows.
pub fn token_usage(rows: &[ViewRow]) -> i32 {
    rows.iter()
        .filter(|r| r.visibility == Visibility::Visible)
        .filter(|r| matches!(r.category(), Some(Category::Data | Category::Logging)))
        .map(|r| r.tokens)
        .sum()
}

/// The model's room: the ceiling minus everything assembled besides the promoted content.
pub fn tokens_free(budget: &Budget, calibrated_total: i32, usage: i32) -> i32 {
    (budget.ceiling - (calibrated_total - budget.calibrate(usage))).max(0)
}

/// The last turn's measured ÷ estimated ratio, if a turn reported its prompt tokens.
pub fn last_ratio(conn: &mut Db, run_id: RunId) -> Result<Option<f64>, StoreError> {
    let last = turns::last_measured(conn, run_id)?;
    Ok(last.map(|(measured, estimated)| f64::from(measured) / f64::from(estimated)))
}

/// What a turn demotes so that its context fits: History Demotion (earlier loops' entries),
/// then Prompt Demotion (the loop's own prompt).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Demotion {
    /// Views made summarized: their body leaves the context, their tag and summary stay.
    pub summarize: Vec<i32>,
    /// Views archived: out of the context, still stored and found by pattern.
    pub archive: Vec<i32>,
    /// Whether the loop's own prompt is among `summarize` (it keeps its first 500 characters).
    pub prompt: bool,
}

/// One step of [`plan_demotion`], in the order steps are taken.
#[derive(Debug, Clone)]
enum Step {
    /// An earlier turn's visible rows become summarized.
    Summarize(Vec<i32>),
    /// An earlier turn's rows are archived.
    Archive(Vec<i32>),
    /// The loop's prompt becomes summarized.
    Prompt(i32),
}

/// The least demotion after which `fits` holds for a turn's context `rows`, or
/// `None` when even the most does not (then nothing should be demoted: the prompt cannot fit
/// on its own). The steps, each taken only if the ones before do not suffice: the earlier
/// loops' rows (those of `<previous>`: prompts, results, updates), oldest turn first, become
/// summarized; then, oldest turn first, they are archived; last, the loop's own prompt is
/// summarized. So a long run never sticks at 413 because of its own history, and what it did
/// last stays in full view longest. Every step only shrinks the context, so the least is
/// found by bisection in a handful of assemblies.
pub fn plan_demotion(rows: &[ViewRow], fits: impl Fn(&[ViewRow]) -> bool) -> Option<Demotion> {
    let prompt = rows
        .iter()
        .filter(|r| r.tag() == "prompt")
        .max_by_key(|r| (r.turn, r.view_id));
    let loop_start = prompt.map_or(0, |p| p.turn);
    let earlier: Vec<&ViewRow> = rows
        .iter()
        .filter(|r| r.turn < loop_start)
        .filter(|r| matches!(r.category(), Some(Category::Logging | Category::Prompt)))
        // The run's summary is `<previous>`'s too, but summarisation decides its fate.
        .filter(|r| !super::summary::is_summary(r))
        .collect();
    let mut turns: Vec<i32> = earlier.iter().map(|r| r.turn).collect();
    turns.sort_unstable();
    turns.dedup();
    let of_turn = |turn: i32, visible_only: bool| -> Vec<i32> {
        earlier
            .iter()
            .filter(|r| r.turn == turn)
            .filter(|r| !visible_only || r.visibility == Visibility::Visible)
            .map(|r| r.view_id)
            .collect()
    };
    let mut steps: Vec<Step> = turns
        .iter()
        .map(|&t| of_turn(t, true))
        .filter(|ids| !ids.is_empty())
        .map(Step::Summarize)
        .collect();
    steps.extend(turns.iter().map(|&t| Step::Archive(of_turn(t, false))));
    if let Some(p) = prompt.filter(|p| p.visibility == Visibility::Visible) {
        steps.push(Step::Prompt(p.view_id));
    }
    let applied = |k: usize| -> Vec<ViewRow> {
        let mut summarized = std::collections::HashSet::new();
        let mut archived = std::collections::HashSet::new();
        for step in &steps[..k] {
            match step {
                Step::Summarize(ids) => summarized.extend(ids.iter().copied()),
                Step::Archive(ids) => archived.extend(ids.iter().copied()),
                Step::Prompt(id) => {
                    summarized.insert(*id);
                }
            }
        }
        rows.iter()
            .filter(|r| !archived.contains(&r.view_id))
            .map(|r| {
                let mut r = r.clone();
                if summarized.contains(&r.view_id) {
                    r.visibility = Visibility::Summarized;
                }
                r
            })
            .collect()
    };
    if steps.is_empty() || !fits(&applied(steps.len())) {
        return None;
    }
    // The least k in 1..=len with applied(k) fitting (applied(len) does).
    let (mut low, mut high) = (1, steps.len());
    while low < high {
        let mid = (low + high) / 2;
        if fits(&applied(mid)) {
            high = mid;
        } else {
            low = mid + 1;
        }
    }
    let mut demotion = Demotion::default();
    for step in &steps[..low] {
        match step {
            Step::Summarize(ids) => demotion.summarize.extend(ids),
            Step::Archive(ids) => demotion.archive.extend(ids),
            Step::Prompt(id) => {
                demotion.summarize.push(*id);
                demotion.prompt = true;
            }
        }
    }
    demotion
        .summarize
        .retain(|id| !demotion.archive.contains(id));
    Some(demotion)
}

/// Applies a [`Demotion`] as one change of the run's views (they share one revision).
pub fn demote(
    conn: &mut Db,
    run_id: RunId,
    demotion: &Demotion,
    now: Millis,
) -> Result<(), StoreError> {
    let rev = runs::take_rev(conn, run_id)?;
    for (ids, visibility) in [
        (&demotion.summarize, Visibility::Summarized),
        (&demotion.archive, Visibility::Archived),
    ] {
        if ids.is_empty() {
            continue;
        }
        views::set_visibility_at(conn, run_id, ids, visibility, rev, now)?;
    }
    Ok(())
}

/// What the model reads of a [`Demotion`] (in its `budget://<loop>/<turn>/history` entry).
pub fn demotion_note(demotion: &Demotion) -> String {
    let history = demotion.summarize.len() - usize::from(demotion.prompt);
    let mut note = format!(
        "Context budget: to make room, {history} entries of earlier loops were summarized and {} archived, oldest first.",
        demotion.archive.len()
    );
    if demotion.prompt {
        note.push_str(" Your prompt was truncated too: promote it to read it whole.");
    }
    note.push_str(" Nothing was deleted: <get> an entry to see it again.");
    note
}

/// Tokens to keep free for the [`demotion_note`] entry when planning a demotion: the longest
/// note, with its tag.
pub fn demotion_note_reserve(divisor: u32) -> i32 {
    let longest = Demotion {
        summarize: vec![0; 100_000],
        archive: vec![0; 100_000],
        prompt: true,
    };
    TAG_TOKENS + rummy_text::tokens::estimate(&demotion_note(&longest), divisor)
}

/// Records the `budget://<loop>/<turn>/history` entry that tells the model what the turn
/// demoted to fit.
pub fn record_demotion(
    conn: &mut Db,
    t: TurnRef,
    demotion: &Demotion,
    at: WriteCtx,
) -> Result<String, StoreError> {
    let path = format!("budget://{}/{}/history", t.loop_id, t.turn);
    store_entries::write(
        conn,
        &EntryWrite {
            run: t.run,
            path: &path,
            body: &demotion_note(demotion),
            attributes: &json!({
                "summarized": demotion.summarize.len(),
                "archived": demotion.archive.len(),
                "prompt": demotion.prompt,
            }),
            state: State::Resolved,
            outcome: None,
            visibility: Visibility::Visible,
            loop_id: Some(t.loop_id),
            turn: t.turn,
            writer: Writer::Plugin,
        },
        at,
    )?;
    Ok(path)
}

/// Turn Demotion: this turn's visible, non-failed entries become summarized (and a command's
/// output channels whatever their state: a failed command's output is no short message); answers
/// (count, their full tokens).
pub fn demote_turn(conn: &mut Db, t: TurnRef, now: Millis) -> Result<(usize, i32), StoreError> {
    let rows = views::demotable_in_turn(conn, t.run.run_id, t.turn)?;
    let ids: Vec<i32> = rows.iter().map(|r| r.0).collect();
    views::set_visibility_each(conn, t.run.run_id, &ids, Visibility::Summarized, now)?;
    Ok((ids.len(), rows.iter().map(|r| r.1).sum()))
}

/// The `budget://<loop>/<turn>` entry that tells the model what happened and by how much.
pub fn record_overflow(
    conn: &mut Db,
    t: TurnRef,
    overflow: i32,
    budget: &Budget,
    demoted: (usize, i32),
    at: WriteCtx,
) -> Result<String, StoreError> {
    let path = format!("budget://{}/{}", t.loop_id, t.turn);
    let done = match demoted {
        (0, _) => "Nothing this turn promoted could be summarized; earlier loops' entries leave the context at the next turn to make room.".to_owned(),
        (count, tokens) => format!("Your {count} promotions from this turn ({tokens} tokens) were summarized to fit."),
    };
    let body = format!(
        "Token budget overflow: over by {overflow} tokens (ceiling {}).\n{done}\n\
         Add up the tokens=\"N\" of what you promote and write before you do; one turn should add no more than half of tokensFree.",
        budget.ceiling
    );
    let outcome = FailureKind::Overflow {
        tokens: Some(i64::from(overflow)),
    }
    .to_string();
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
        at,
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

    /// A context row for the planner: `tokens` is what it costs visible; summarized it costs 1.
    fn row(view_id: i32, path: &str, turn: i32, visibility: Visibility) -> ViewRow {
        ViewRow {
            view_id,
            path: path.into(),
            scheme: rummy_text::path::scheme_of(path),
            body: String::new(),
            attributes: "{}".into(),
            tokens: 100,
            state: rummy_store::entry::State::Resolved,
            outcome: None,
            visibility,
            turn,
            rev: 1,
            updated_at: 0,
        }
    }

    fn cost(rows: &[ViewRow]) -> i32 {
        rows.iter()
            .map(|r| match r.visibility {
                Visibility::Visible => r.tokens,
                _ => 1,
            })
            .sum()
    }

    /// A run of three loops (turns 1, 2, 3; the third just began) over a known and a file.
    fn three_loops() -> Vec<ViewRow> {
        use Visibility::{Summarized, Visible};
        vec![
            row(1, "known://fact", 1, Visible),
            row(2, "src/a.rs", 0, Visible),
            row(3, "prompt://1", 1, Visible),
            row(4, "update://1/1", 1, Visible),
            row(5, "get://1/1/a", 1, Summarized),
            row(6, "prompt://2", 2, Visible),
            row(7, "update://2/1", 2, Visible),
            row(8, "prompt://3", 3, Visible),
        ]
    }

    /// The least demotion is taken, oldest history first: summarizing, then archiving, then
    /// the prompt; data rows are never touched; and what cannot fit demotes nothing.
    #[test]
    fn history_leaves_oldest_first_and_only_as_far_as_needed() {
        let rows = three_loops();
        assert_eq!(cost(&rows), 701);
        let plan = |limit: i32| plan_demotion(&rows, |r| cost(r) <= limit);
        assert_eq!(
            plan(600),
            Some(Demotion {
                summarize: vec![3, 4],
                archive: vec![],
                prompt: false
            })
        );
        assert_eq!(
            plan(310),
            Some(Demotion {
                summarize: vec![3, 4, 6, 7],
                archive: vec![],
                prompt: false
            })
        );
        assert_eq!(
            plan(303),
            Some(Demotion {
                summarize: vec![6, 7],
                archive: vec![3, 4, 5],
                prompt: false
            })
        );
        assert_eq!(
            plan(300),
            Some(Demotion {
                summarize: vec![],
                archive: vec![3, 4, 5, 6, 7],
                prompt: false
            })
        );
        assert_eq!(
            plan(201),
            Some(Demotion {
                summarize: vec![8],
                archive: vec![3, 4, 5, 6, 7],
                prompt: true
            })
        );
        assert_eq!(plan(200), None);
    }

    /// The model is told how much left its view, and that nothing was deleted; the reserve
    /// covers the longest such note.
    #[test]
    fn the_demotion_note() {
        let demotion = Demotion {
            summarize: vec![6, 7, 8],
            archive: vec![3, 4, 5],
            prompt: true,
        };
        assert_eq!(
            demotion_note(&demotion),
            "Context budget: to make room, 2 entries of earlier loops were summarized and 3 archived, oldest first. Your prompt was truncated too: promote it to read it whole. Nothing was deleted: <get> an entry to see it again."
        );
        let reserve = demotion_note_reserve(2);
        assert!(reserve >= TAG_TOKENS + rummy_text::tokens::estimate(&demotion_note(&demotion), 2));
    }

    /// tokensFree is the ceiling minus what is assembled besides the promoted content.
    #[test]
    fn free_tokens() {
        let b = Budget::new(Some(1_000), None, 1.0, None).unwrap();
        assert_eq!(tokens_free(&b, 600, 200), 600);
        assert_eq!(tokens_free(&b, 1_500, 100), 0);
    }
}
