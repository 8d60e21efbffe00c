//! Summarisation's pure parts: the fold's cases (first, additive, compress, failure), the prompts, the answer's reading, the planning that keeps the budget a hard bound, and the stored summary with its archived texts.

use super::*;
use crate::turn::assemble::{assemble, AssemblyInput};
use pretty_assertions::assert_eq;
use rummy_store::db::Db;
use rummy_store::entries::{context_rows, RunRef};
use rummy_store::entry::State;
use rummy_store::flags::RunFlags;
use rummy_store::run::Mode;
use rummy_store::testing::{memory, project, run, NOW};
use rummy_store::{loops, turns};

/// A row of a run's context for the planner and the renderers: `tokens` is what it costs
/// visible; summarized it costs 1.
fn row(view_id: i32, path: &str, turn: i32, visibility: Visibility, body: &str) -> ViewRow {
    ViewRow {
        view_id,
        path: path.into(),
        scheme: rummy_text::path::scheme_of(path),
        body: body.into(),
        attributes: "{}".into(),
        tokens: 100,
        state: State::Resolved,
        outcome: None,
        visibility,
        turn,
        rev: 1,
        updated_at: 0,
    }
}

fn failure() -> SidecarFailure {
    SidecarFailure::Timeout { ms: 10 }
}

/// The dispatch on `(prior, evicted)`: nothing before → first summary; a prior and
/// evicted entries → additive; a prior alone → compress; neither → nothing to ask. Blank text
/// counts as none.
#[test]
fn the_fold_dispatches_on_prior_and_evicted() {
    assert_eq!(
        Fold::of(None, Some("[turn 1] prompt q")),
        Some(Fold::First {
            evicted: "[turn 1] prompt q".into()
        })
    );
    assert_eq!(
        Fold::of(Some("So far."), Some("[turn 2] get a.rs")),
        Some(Fold::Extend {
            prior: "So far.".into(),
            evicted: "[turn 2] get a.rs".into()
        })
    );
    assert_eq!(
        Fold::of(Some("So far."), None),
        Some(Fold::Compress {
            prior: "So far.".into()
        })
    );
    assert_eq!(Fold::of(None, None), None);
    assert_eq!(
        Fold::of(Some("  "), Some("x")),
        Some(Fold::First {
            evicted: "x".into()
        })
    );
}

/// Each fold asks the sidecar with its own prompt (from its `.md`, rationale stripped, the cap
/// filled in) and gives it exactly what the case has: the evicted entries, the prior summary,
/// or both.
#[test]
fn each_fold_has_its_prompt_and_input() {
    let first = Fold::of(None, Some("EVICTED")).unwrap().task(300);
    assert_eq!(first.name, "summary");
    assert!(first
        .system
        .starts_with("You summarise the earlier history"));
    assert!(first.system.contains("at most 300 characters"));
    assert!(!first.system.contains("<!--") && !first.system.contains("[%"));
    assert_eq!(
        first.input,
        "The entries leaving the context, oldest first:\n\nEVICTED"
    );
    let extend = Fold::of(Some("PRIOR"), Some("EVICTED")).unwrap().task(300);
    assert_eq!(extend.name, "summary.extend");
    assert_eq!(
        extend.input,
        "The summary so far:\n\nPRIOR\n\nThe entries leaving the context, oldest first:\n\nEVICTED"
    );
    let compress = Fold::of(Some("PRIOR"), None).unwrap().task(300);
    assert_eq!(compress.name, "summary.compress");
    assert!(compress.system.starts_with("You compress the summary"));
    assert_eq!(compress.input, "The summary to compress:\n\nPRIOR");
    // Text that looks like a placeholder is given as it is.
    let odd = Fold::of(Some("[%EVICTED%]"), Some("e")).unwrap().task(300);
    assert!(odd
        .input
        .starts_with("The summary so far:\n\n[%EVICTED%]\n\n"));
}

/// The update flow: a summary within the cap is kept; one past it is compressed (once); a
/// compression still too long is cut; a failed compression keeps the summary it was given,
/// cut; a failed first or additive summary falls back to plain demotion.
#[test]
fn the_update_flow() {
    let first = || Fold::First {
        evicted: "e".into(),
    };
    assert_eq!(
        next(first(), Ok("short".into()), 10),
        Step::Done("short".into())
    );
    assert_eq!(
        next(first(), Ok("far too long".into()), 10),
        Step::Ask(Fold::Compress {
            prior: "far too long".into()
        })
    );
    assert_eq!(next(first(), Err(failure()), 10), Step::Fallback);
    let extend = Fold::Extend {
        prior: "p".into(),
        evicted: "e".into(),
    };
    assert_eq!(next(extend, Err(failure()), 10), Step::Fallback);
    let compress = || Fold::Compress {
        prior: "0123456789abc".into(),
    };
    assert_eq!(
        next(compress(), Ok("tight".into()), 10),
        Step::Done("tight".into())
    );
    assert_eq!(
        next(compress(), Ok("still too long".into()), 10),
        Step::Done("… too long".into())
    );
    assert_eq!(
        next(compress(), Err(failure()), 10),
        Step::Done("…456789abc".into())
    );
}

/// A summariser answering "(summary N)" over a context that keeps
/// evicting — the summary appears on the first eviction, accumulates with each one after, and
/// once it passes the cap it is compressed and goes on from there; a failing summariser leaves
/// the summary unchanged (silent eviction).
#[test]
fn the_summary_appears_accumulates_and_is_compressed() {
    const MAX: usize = 40;
    let mut asked: Vec<&'static str> = Vec::new();
    let mut summary: Option<String> = None;
    let mut n = 0;
    let mut summarize = |fold: &Fold| -> Result<String, SidecarFailure> {
        n += 1;
        match fold {
            Fold::First { .. } => Ok(format!("(summary {n})")),
            Fold::Extend { prior, .. } => Ok(format!("{prior} (summary {n})")),
            Fold::Compress { .. } => Ok(format!("(compressed {n})")),
        }
    };
    let evict =
        |summary: &mut Option<String>,
         asked: &mut Vec<&'static str>,
         summarize: &mut dyn FnMut(&Fold) -> Result<String, SidecarFailure>| {
            let Some(mut fold) = Fold::of(summary.as_deref(), Some("[turn 1] prompt q")) else {
                return;
            };
            loop {
                asked.push(fold.name());
                let answer = summarize(&fold);
                match next(fold, answer, MAX) {
                    Step::Ask(again) => fold = again,
                    Step::Done(text) => {
                        *summary = Some(text);
                        return;
                    }
                    Step::Fallback => return,
                }
            }
        };
    evict(&mut summary, &mut asked, &mut summarize);
    assert_eq!(summary.as_deref(), Some("(summary 1)"));
    evict(&mut summary, &mut asked, &mut summarize);
    evict(&mut summary, &mut asked, &mut summarize);
    assert_eq!(
        summary.as_deref(),
        Some("(summary 1) (summary 2) (summary 3)")
    );
    // A fourth would pass 40 characters: compressed at once.
    evict(&mut summary, &mut asked, &mut summarize);
    assert_eq!(summary.as_deref(), Some("(compressed 5)"));
    evict(&mut summary, &mut asked, &mut summarize);
    assert_eq!(summary.as_deref(), Some("(compressed 5) (summary 6)"));
    assert_eq!(
        asked,
        vec![
            "summary",
            "summary.extend",
            "summary.extend",
            "summary.extend",
            "summary.compress",
            "summary.extend"
        ]
    );
    let mut broken = |_: &Fold| -> Result<String, SidecarFailure> { Err(failure()) };
    evict(&mut summary, &mut asked, &mut broken);
    assert_eq!(summary.as_deref(), Some("(compressed 5) (summary 6)"));
}

/// A summary cut to the cap keeps its end (the newest history), marked.
#[test]
fn the_cap_keeps_the_newest_text() {
    assert_eq!(cap("abc", 3), "abc");
    assert_eq!(cap("abcdef", 4), "…def");
    assert_eq!(cap("ééééé", 3), "…éé");
}

/// The answer is the summary alone: a code fence, a `<summary>` wrapper and reasoning blocks
/// are taken off; an empty answer is refused.
#[test]
fn reading_the_answer() {
    assert_eq!(
        parse("  The run read a.rs.  "),
        Ok("The run read a.rs.".into())
    );
    assert_eq!(
        parse("```text\nThe run read a.rs.\n```"),
        Ok("The run read a.rs.".into())
    );
    assert_eq!(
        parse("<think>hm</think>\n<summary>Done.</summary>"),
        Ok("Done.".into())
    );
    assert_eq!(
        parse("<think>unfinished"),
        Err("the summary is empty".into())
    );
    assert_eq!(parse(" \n"), Err("the summary is empty".into()));
}

/// Evicted entries are given oldest first, the prompt first in its turn, with their kind,
/// target and turn; a long body is cut, and past the total the rest are counted.
#[test]
fn evicted_entries_as_the_sidecar_reads_them() {
    let mut get = row(5, "get://1/1/a", 1, Visibility::Visible, "fn a() {}");
    get.attributes = r#"{"path":"src/a.rs"}"#.into();
    let mut failed = row(6, "sh://1/1/b", 1, Visibility::Visible, "boom");
    failed.attributes = r#"{"command":"make"}"#.into();
    failed.outcome = Some("exit:2".into());
    let prompt = row(4, "prompt://1", 1, Visibility::Visible, "What is a?");
    assert_eq!(
        render_evicted([&get, &failed, &prompt]).as_deref(),
        Some(
            "[turn 1] prompt prompt://1\nWhat is a?\n\n\
             [turn 1] get src/a.rs\nfn a() {}\n\n\
             [turn 1] sh make (exit:2)\nboom"
        )
    );
    let long = row(
        7,
        "update://2/1",
        2,
        Visibility::Visible,
        &"x".repeat(ENTRY_CHARS + 5),
    );
    let rendered = render_evicted([&long]).unwrap();
    assert!(
        rendered.ends_with("x […]"),
        "{}",
        &rendered[rendered.len() - 10..]
    );
    let many: Vec<ViewRow> = (0..30)
        .map(|i| {
            row(
                i,
                "update://2/1",
                2,
                Visibility::Visible,
                &"y".repeat(ENTRY_CHARS),
            )
        })
        .collect();
    let rendered = render_evicted(&many).unwrap();
    assert!(
        rendered.ends_with("[18 more entries left out]"),
        "{}",
        rendered.len()
    );
    assert_eq!(render_evicted(&[]), None);
}

/// The summary opens `<previous>` inside the system message — one system message, the summary
/// before the earlier loops' entries, whatever turn wrote it — and is never in `<performed>`.
#[test]
fn the_summary_renders_first_in_previous() {
    let rows = vec![
        row(1, "prompt://1", 1, Visibility::Visible, "First question"),
        row(
            2,
            "summary://run",
            2,
            Visibility::Visible,
            "Earlier: a.rs read.",
        ),
        row(3, "prompt://2", 2, Visibility::Visible, "Second question"),
    ];
    let messages = assemble(AssemblyInput {
        rows: &rows,
        instructions: "INSTRUCTIONS",
        mode: Mode::Ask,
        budget: None,
        divisor: 2,
        session_state: false,
    });
    assert_eq!(
        messages.system,
        "INSTRUCTIONS\n\n<previous>\n\
         <summary path=\"summary://run\" turn=\"2\">Earlier: a.rs read.</summary>\n\
         <prompt path=\"\" turn=\"1\" status=\"200\" visibility=\"visible\" tokens=\"100\">First question</prompt>\n\
         </previous>"
    );
    assert!(!messages.user.contains("summary"), "{}", messages.user);
    // An earlier text promoted back into view renders as the entry it is, in its turn.
    let promoted = row(4, "summary://run/1", 3, Visibility::Visible, "Older.");
    assert!(!is_summary(&promoted));
    assert!(is_summary(&rows[1]));
}

/// Costs for the planner: visible rows cost their tokens, summarized ones 1; `fits` allows
/// `limit` with `extra` tokens more.
fn cost(rows: &[ViewRow]) -> i32 {
    rows.iter()
        .map(|r| match r.visibility {
            Visibility::Visible => r.tokens,
            _ => 1,
        })
        .sum()
}

/// Three loops (turns 1, 2, 3; the third just began), and a summary of 50 tokens.
fn three_loops_and_a_summary() -> Vec<ViewRow> {
    use Visibility::Visible;
    let mut summary = row(9, "summary://run", 2, Visible, "so far");
    summary.tokens = 50;
    vec![
        row(3, "prompt://1", 1, Visible, "q1"),
        row(4, "update://1/1", 1, Visible, "a1"),
        row(6, "prompt://2", 2, Visible, "q2"),
        row(7, "update://2/1", 2, Visible, "a2"),
        row(8, "prompt://3", 3, Visible, "q3"),
        summary,
    ]
}

/// With summarisation off, or when summarizing is enough, the plain plan is taken and the
/// summary is never demoted by it.
#[test]
fn plain_demotion_when_nothing_is_evicted() {
    let rows = three_loops_and_a_summary();
    assert_eq!(cost(&rows), 550);
    let plan =
        |on: bool, limit: i32| plan_history(&rows, on, 200, |r, extra| cost(r) + extra <= limit);
    // Turn 1 summarized: 550 − 198.
    let summarized_only = Demotion {
        summarize: vec![3, 4],
        archive: vec![],
        prompt: false,
    };
    assert_eq!(
        plan(true, 360),
        Some(HistoryPlan::Plain(summarized_only.clone()))
    );
    assert_eq!(plan(false, 360), Some(HistoryPlan::Plain(summarized_only)));
    // Off, archiving is plain too: turns 1 and 2 summarized, then turn 1 archived (152).
    assert_eq!(
        plan(false, 152),
        Some(HistoryPlan::Plain(Demotion {
            summarize: vec![6, 7],
            archive: vec![3, 4],
            prompt: false,
        }))
    );
}

/// With summarisation on, a plan that archives is made again with room for the summary at its
/// cap (the summary set aside, `reserve` tokens kept): the rows it archives are folded, and the
/// plain plan is what a failed fold falls back to.
#[test]
fn a_fold_plan_leaves_room_for_the_summary_at_its_cap() {
    let rows = three_loops_and_a_summary();
    // Plain, 152: turn 1 archived, turn 2 summarized (the summary's 50 as they are). Room for a
    // summary of 51 takes turn 2 archived too: 100 + 51.
    assert_eq!(
        plan_history(&rows, true, 51, |r, extra| cost(r) + extra <= 152),
        Some(HistoryPlan::Fold {
            demotion: Demotion {
                summarize: vec![],
                archive: vec![3, 4, 6, 7],
                prompt: false,
            },
            evicted: rows
                .iter()
                .filter(|r| [3, 4, 6, 7].contains(&r.view_id))
                .cloned()
                .collect(),
            fallback: Demotion {
                summarize: vec![6, 7],
                archive: vec![3, 4],
                prompt: false,
            },
        })
    );
}

/// When no room for a growing summary can be made, the plain plan stands without a fold; when
/// not even that fits, the summary leaves the context; and when nothing fits at all, `None`.
#[test]
fn no_room_to_grow_plain_and_no_room_at_all_drops_the_summary() {
    let rows = three_loops_and_a_summary();
    // Everything demoted: 3 summarized-or-archived rows … the prompt summarized (1) + the
    // summary (50) = 51; with the summary set aside and 200 reserved: 201.
    let no_growth = plan_history(&rows, true, 200, |r, extra| cost(r) + extra <= 150);
    assert!(
        matches!(&no_growth, Some(HistoryPlan::Plain(d)) if d.archive == vec![3, 4, 6, 7]),
        "{no_growth:?}"
    );
    let dropped = plan_history(&rows, true, 200, |r, extra| cost(r) + extra <= 30);
    assert_eq!(
        dropped,
        Some(HistoryPlan::DropSummary(Demotion {
            summarize: vec![8],
            archive: vec![3, 4, 6, 7],
            prompt: true
        }))
    );
    // Off, the summary is dropped the same way rather than ending 413.
    assert!(matches!(
        plan_history(&rows, false, 200, |r, extra| cost(r) + extra <= 30),
        Some(HistoryPlan::DropSummary(_))
    ));
    assert_eq!(
        plan_history(&rows, true, 200, |r, extra| cost(r) + extra <= 0),
        None
    );
}

/// The reserve is the cap and the element's characters, as tokens.
#[test]
fn the_reserve() {
    assert_eq!(reserve(2_000, 2), 1_064);
    assert_eq!(reserve(2_000, 4), 532);
}

/// The stored summary: the first is version 1; each new text keeps the one it replaces as an
/// archived `summary://run/<n>`; a dropped summary leaves the context (kept all the same) and
/// the next one starts afresh; only a summary in view is current.
#[test]
fn stored_summaries_and_their_earlier_texts() {
    let mut conn = memory();
    let p = project(&mut conn, "p");
    let r: RunRef = run(&mut conn, p.id, "r");
    let l = loops::enqueue(
        &mut conn,
        r.run_id,
        Mode::Ask,
        "m",
        "q",
        &RunFlags::default(),
        NOW,
    )
    .unwrap();
    let turn = |conn: &mut Db| {
        let t = turns::begin(conn, r.run_id, l.id, NOW).unwrap();
        TurnRef {
            run: r,
            loop_id: l.id,
            turn: t.sequence,
        }
    };
    assert_eq!(current(&mut conn, r.run_id).unwrap(), None);
    let t1 = turn(&mut conn);
    assert_eq!(
        store(
            &mut conn,
            t1,
            "First.",
            WriteCtx {
                divisor: 2,
                now: NOW
            }
        )
        .unwrap(),
        1
    );
    let t2 = turn(&mut conn);
    assert_eq!(
        store(
            &mut conn,
            t2,
            "First. Second.",
            WriteCtx {
                divisor: 2,
                now: NOW
            }
        )
        .unwrap(),
        2
    );
    assert_eq!(
        current(&mut conn, r.run_id).unwrap().as_deref(),
        Some("First. Second.")
    );
    let in_view: Vec<(String, String)> = context_rows(&mut conn, r.run_id)
        .unwrap()
        .into_iter()
        .filter(is_summary)
        .map(|r| (r.path, r.body))
        .collect();
    assert_eq!(
        in_view,
        vec![("summary://run".to_owned(), "First. Second.".to_owned())]
    );
    let kept = store_entries::by_path(&mut conn, r.run_id, "summary://run/1")
        .unwrap()
        .unwrap();
    assert_eq!(
        (kept.body.as_str(), kept.visibility),
        ("First.", Visibility::Archived)
    );

    let t3 = turn(&mut conn);
    leave_context(
        &mut conn,
        t3,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    assert_eq!(current(&mut conn, r.run_id).unwrap(), None);
    assert!(!context_rows(&mut conn, r.run_id)
        .unwrap()
        .iter()
        .any(is_summary));
    let kept = store_entries::by_path(&mut conn, r.run_id, "summary://run/2")
        .unwrap()
        .unwrap();
    assert_eq!(kept.body, "First. Second.");

    let t4 = turn(&mut conn);
    assert_eq!(
        store(
            &mut conn,
            t4,
            "Afresh.",
            WriteCtx {
                divisor: 2,
                now: NOW
            }
        )
        .unwrap(),
        3
    );
    assert_eq!(
        current(&mut conn, r.run_id).unwrap().as_deref(),
        Some("Afresh.")
    );
    // The dropped text was kept once, not again.
    assert!(
        store_entries::by_path(&mut conn, r.run_id, "summary://run/3")
            .unwrap()
            .is_none()
    );
}
