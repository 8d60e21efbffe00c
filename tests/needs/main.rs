//! The suites that need a part of the machine — PostgreSQL, Chromium, a command sandbox, Node.js
//! and the test editor's ACP SDK — in a
//! harness of their own (libtest-mimic): a suite whose part is missing is ignored at run time,
//! by name, with a `SKIPPED <name>: <reason>` line, and counted as skipped, never as passed;
//! with the part's `RUMMY_REQUIRE_*=1` (as `.ci/run` sets) it fails instead.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test harness should fail loudly at the first surprise"
)]

mod acp;
mod browser;
mod cluster;
mod notices;
mod parts;
mod postgres;
mod sandbox;
mod shapes;
#[path = "../support/mod.rs"]
#[expect(
    dead_code,
    reason = "the support both test binaries share; this one uses part of it"
)]
mod support;
mod systemd;
mod watching;
mod webdriver;

use libtest_mimic::{Arguments, Trial};
use parts::Need;
use std::future::Future;
use std::process::ExitCode;

/// The trials of this binary, and those of them that cannot run here with the reason.
struct Suites {
    trials: Vec<Trial>,
    skipped: Vec<(String, String)>,
}

impl Suites {
    /// Adds the test `name`, which needs `need`: runnable when the part is here; failing at once
    /// when it is missing and required; otherwise ignored, with the reason kept for its line.
    fn add(&mut self, name: &str, need: &Need, test: impl FnOnce() + Send + 'static) {
        let trial = match &need.missing {
            None => Trial::test(name, move || {
                test();
                Ok(())
            }),
            Some(why) if need.required() => {
                let message = format!("{}=1 but {why}", need.require_var);
                Trial::test(name, move || Err(message.into()))
            }
            Some(why) => {
                self.skipped.push((name.to_owned(), why.clone()));
                Trial::test(name, move || {
                    test();
                    Ok(())
                })
                .with_ignored_flag(true)
            }
        };
        self.trials.push(trial);
    }

    /// [`Suites::add`] for an async test, run on an actix system of its own (as
    /// `#[actix_rt::test]` does).
    fn add_async<F: Future<Output = ()>>(
        &mut self,
        name: &str,
        need: &Need,
        test: impl FnOnce() -> F + Send + 'static,
    ) {
        self.add(name, need, move || actix_rt::System::new().block_on(test()));
    }
}

/// Whether the filters of this run (`cargo test -- FILTER --skip X --exact`) select `name`,
/// as the harness decides it: only those skipped trials get their line.
fn selected(args: &Arguments, name: &str) -> bool {
    let matches = |filter: &str| {
        if args.exact {
            name == filter
        } else {
            name.contains(filter)
        }
    };
    args.filter.as_deref().is_none_or(matches) && !args.skip.iter().any(|s| matches(s))
}

fn main() -> ExitCode {
    let args = Arguments::from_args();
    // Listing runs no probe: every test is named as it is.
    let parts = if args.list {
        parts::Parts::assumed()
    } else {
        parts::Parts::probe()
    };
    let mut suites = Suites {
        trials: Vec::new(),
        skipped: Vec::new(),
    };
    postgres::register(&mut suites, &parts.postgres);
    cluster::register(&mut suites, &parts.postgres);
    browser::register(&mut suites, &parts.browser);
    webdriver::register(&mut suites);
    sandbox::register(&mut suites, &parts);
    systemd::register(&mut suites, &parts.systemd_analyze);
    acp::register(&mut suites, &parts.acp_client);
    // `--ignored` and `--include-ignored` run the skipped ones too: then none is skipped.
    let runs_ignored = args.ignored || args.include_ignored;
    let skipped: Vec<(String, String)> = suites
        .skipped
        .into_iter()
        .filter(|(name, _)| !runs_ignored && selected(&args, name))
        .collect();
    let conclusion = libtest_mimic::run(&args, suites.trials);
    if !args.list {
        for (name, why) in &skipped {
            println!("SKIPPED {name}: {why}");
        }
        println!(
            "{} passed, {} failed, {} skipped",
            conclusion.num_passed, conclusion.num_failed, conclusion.num_ignored
        );
    }
    conclusion.exit_code()
}
