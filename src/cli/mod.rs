//! The `rummy` command line: `serve` runs the server, `demo` shows a whole run with a built-in
//! scripted model, and the rest are a client of a running server (or of one started in this
//! process with `--local`), speaking the public protocol through `rummy-client`.
//!
//! - [`args`]: the grammar (clap), with the help text of every command.
//! - [`session`]: reaching the server and opening the project.
//! - [`follow`]: following a run — streamed text, commands, proposals, output, Ctrl-C.
//! - [`render`] and [`view`]: what it looks like, on a terminal, piped, or as JSON.
//! - [`runner`]: running an accepted command here when the server asks its client to.
//! - [`acp`]: `rummy acp`, the Agent Client Protocol for editors, over the same client.
//! - [`commands`]: the other commands; [`serve`]; [`demo`]; [`token`]: tokens, and [`data`]:
//!   backup and export, on the database itself; [`doctor`]: a setup checked line by line;
//!   [`exit`]: the exit codes.

mod acp;
mod args;
mod data;
mod demo;
mod doctor;
mod exit;
mod follow;
mod inspect;
mod models;
mod out;
mod proposals;
mod render;
mod runner;
mod serve;
mod session;
mod start;
mod steer;
mod token;
mod view;

use args::{Cli, Command, RouteCommand};
use clap::Parser;
use exit::Exit;
use session::Failure;
use std::process::ExitCode;

/// Parses the command line and runs the command; the exit code says how it went.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let exit = match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Token(command) => token::run(command),
        Command::Backup(args) => data::backup(&args),
        Command::Export(args) => data::export(&args),
        Command::Doctor(args) => doctor::run(args),
        Command::Acp(args) => acp::run(args),
        command => client(command),
    };
    exit.into()
}

/// Runs a client command in a runtime of its own (an actix system, for `--local`).
fn client(command: Command) -> Exit {
    if local(&command) {
        serve::init_log("warn");
    }
    let result = actix_rt::System::new().block_on(async move {
        match command {
            Command::Ask(args) => start::start(args, "ask").await,
            Command::Act(args) => start::start(args, "act").await,
            Command::Runs(args) => inspect::runs(args).await,
            Command::Show(args) => inspect::show(args).await,
            Command::Watch(args) => start::watch(args).await,
            Command::Approve(args) => proposals::approve(args).await,
            Command::Reject(args) => proposals::reject(args).await,
            Command::Inject(args) => steer::inject(args).await,
            Command::Cancel(args) => steer::cancel(args).await,
            Command::Fork(args) => start::fork(args).await,
            Command::Models(args) => models::models(args).await,
            Command::Routes(args) => models::routes(args).await,
            Command::Route(RouteCommand::Check(args)) => models::route_check(args).await,
            Command::Serve(_)
            | Command::Demo(_)
            | Command::Token(_)
            | Command::Backup(_)
            | Command::Export(_)
            | Command::Doctor(_)
            | Command::Acp(_) => Err(Failure::new(Exit::Usage, "not a client")),
        }
    });
    match result {
        Ok(exit) => exit,
        Err(failure) => {
            out::eprintln_failure(&failure);
            failure.exit
        }
    }
}

/// Whether the command runs a server in this process.
fn local(command: &Command) -> bool {
    match command {
        Command::Ask(a) | Command::Act(a) => a.connect.local,
        Command::Runs(a) => a.connect.local,
        Command::Show(a) => a.connect.local,
        Command::Watch(a) => a.connect.local,
        Command::Approve(a) => a.connect.local,
        Command::Reject(a) => a.connect.local,
        Command::Inject(a) => a.connect.local,
        Command::Cancel(a) => a.connect.local,
        Command::Fork(a) => a.connect.local,
        Command::Models(a) => a.connect.local,
        Command::Routes(a) => a.connect.local,
        Command::Route(RouteCommand::Check(a)) => a.connect.local,
        Command::Serve(_)
        | Command::Demo(_)
        | Command::Token(_)
        | Command::Backup(_)
        | Command::Export(_)
        | Command::Doctor(_)
        | Command::Acp(_) => false,
    }
}
