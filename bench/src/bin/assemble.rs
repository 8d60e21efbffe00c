//! Materialise and assemble (a core micro-benchmark): read a run's context rows from
//! SQLite and build the two messages, at 200 and 1,000 project files plus a few knowns and a
//! turn's results.
//!
//! `cargo run --release -p rummy-bench --bin assemble -- 200 1000` prints, per size, the median
//! and p99 of one materialisation (`context_rows`) and of one assembly over those rows.

use rummy_bench::server::write_project;
use rummy_bench::{report, sample};
use rummy_core::access::server_state::StateOnDisk;
use rummy_core::files::sync::{attach, sync_project};
use rummy_core::files::{scan, ScanLimits};
use rummy_core::tools;
use rummy_core::turn::assemble::{assemble, AssemblyInput};
use rummy_core::turn::dispatch::{dispatch, DispatchCtx, DispatchLimits, LoopFlags};
use rummy_core::turn::TurnRef;
use rummy_provider::time::Millis;
use rummy_store::database as db;
use rummy_store::entries::{context_rows, RunRef, WriteCtx};
use rummy_store::run::Mode;
use rummy_store::{loops, projects, runs, schemes, turns, StoreError};
use rummy_text::hedberg;
use std::hint::black_box;

const NOW: Millis = Millis(1_700_000_000_000);
const DIVISOR: u32 = 4;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sizes = rummy_bench::sizes(&args, &[200, 1000]);
    for files in sizes {
        if let Err(e) = bench(files) {
            eprintln!("files={files}: failed: {e}");
            std::process::exit(1);
        }
    }
}

fn bench(files: usize) -> Result<(), String> {
    let home = tempfile::TempDir::new().map_err(|e| e.to_string())?;
    let project = tempfile::TempDir::new().map_err(|e| e.to_string())?;
    write_project(project.path(), files)?;
    let mut conn = db::open_writer(&home.path().join("rummy.db")).map_err(|e| e.to_string())?;
    let run = seed(&mut conn, project.path()).map_err(|e| e.to_string())?;
    let instructions = tools::instructions(
        &tools::active_tools(Mode::Act, LoopFlags::default(), false),
        15,
        None,
        &tools::CommandReach::Offline,
        &[],
    );

    let rows = context_rows(&mut conn, run.run_id).map_err(|e| e.to_string())?;
    let read = sample(20, 200, || {
        black_box(context_rows(&mut conn, run.run_id).ok());
    });
    let built = sample(20, 200, || {
        black_box(assemble(AssemblyInput {
            rows: &rows,
            instructions: &instructions,
            mode: Mode::Act,
            budget: None,
            divisor: DIVISOR,
            session_state: false,
        }));
    });
    let n = rows.len();
    report(&format!("materialise {n} context rows"), &read, "none");
    report(&format!("assemble {n} context rows"), &built, "none");
    Ok(())
}

/// A project synced from `root`, a run with its files attached, and one turn that wrote
/// three knowns and an update.
fn seed(conn: &mut rummy_store::db::Db, root: &std::path::Path) -> Result<RunRef, StoreError> {
    schemes::write_registry(conn)?;
    let root_text = root.display().to_string();
    let p = projects::hello(conn, "bench", &root_text, None, NOW)?;
    sync_project(
        conn,
        p.id,
        &scan(root, ScanLimits::default(), &StateOnDisk::default(), NOW),
        WriteCtx {
            divisor: DIVISOR,
            now: NOW,
        },
    )?;
    let new = runs::NewRun {
        project_id: p.id,
        alias: Some("bench".into()),
        model: "fast".into(),
        ..Default::default()
    };
    let r = runs::create(conn, &new, NOW)?;
    let run = RunRef {
        run_id: r.id,
        project_id: p.id,
    };
    let l = loops::enqueue(
        conn,
        r.id,
        Mode::Act,
        "fast",
        "Work",
        &rummy_store::flags::RunFlags::default(),
        NOW,
    )?;
    loops::claim_next(conn, r.id, NOW)?;
    attach(conn, run, &[], hedberg::hedmatch, NOW)?;
    let turn = turns::begin(conn, r.id, l.id, NOW)?;
    let t = TurnRef {
        run,
        loop_id: l.id,
        turn: turn.sequence,
    };
    let reply = "<set path=\"known://a\" summary=\"a\">fact a</set>\
        <set path=\"known://b\">fact \"b\" & more</set>\
        <set path=\"known://c\">fact c</set>\
        <update status=\"102\">noted</update>";
    let parsed = rummy_text::parse::parse_reply(reply, 15);
    for (index, call) in parsed.commands.iter().enumerate() {
        let ctx = DispatchCtx {
            t,
            limits: DispatchLimits {
                token_divisor: DIVISOR,
                max_entry_tokens: 4096,
                bounds: rummy_core::wire::bounded::Bounds::default(),
            },
            mode: Mode::Act,
            flags: LoopFlags::default(),
            command_index: index,
            search_enabled: false,
            runner: rummy_core::config::ShellRunner::Server,
            client_tools: std::sync::Arc::default(),
            web_domains: None,
        };
        dispatch(conn, &ctx, call, None, NOW)?;
    }
    Ok(run)
}
