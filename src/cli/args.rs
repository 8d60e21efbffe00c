//! The command line's grammar: subcommands, their options, and the help that documents them.

use clap::{Args, Parser, Subcommand};

const ABOUT: &str =
    "rummy: a team server that runs LLM agents over your project, and its command line";

const LONG_ABOUT: &str = "\
rummy runs LLM agent loops on a server and shows them here. `rummy serve` runs the server;
the other commands are its client: they talk to the server at $RUMMY_URL (default
ws://127.0.0.1:3044/ws) about the project in the current directory.

First time? `rummy demo` runs a whole task on this machine with a built-in scripted model:
no key and no set-up. Then point the server at a real model and `rummy act \"...\"`.";

const AFTER_HELP: &str = "\
Environment:
    RUMMY_URL      the server (default ws://127.0.0.1:3044/ws)
    RUMMY_TOKEN    sent as `Authorization: Bearer` when connecting
    NO_COLOR       no colours, even on a terminal
    The server's own settings (models, keys, limits) are in the README.";

/// The `rummy` command line.
#[derive(Debug, Parser)]
#[command(
    name = "rummy",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP,
    after_long_help = HELP_TAIL,
    propagate_version = true,
    arg_required_else_help = true
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// `--help`'s closing part: the environment and the exit codes.
const HELP_TAIL: &str = "\
Environment:
    RUMMY_URL      the server (default ws://127.0.0.1:3044/ws)
    RUMMY_TOKEN    sent as `Authorization: Bearer` when connecting
    NO_COLOR       no colours, even on a terminal
    The server's own settings (models, keys, limits) are in the README.

Exit codes:
    0    done; a run concluded (200)
    1    failed on this side (I/O, a server that could not start or listen)
    2    usage error (unknown command, flag or argument; a server URL not ws:// or wss://)
    3    the server cannot be reached, or the connection was lost (after retrying)
    4    the server refused a call (no such run or project, a directory that is no
         project, a name taken, ...), or no pending proposal matches what approve or
         reject was given
    5    the run failed (500)
    6    the run was abandoned going round in circles (508)
    7    the run's context was full (413)
    8    the run was cancelled (499)
    9    the run stopped at the turn limit (RUMMY_MAX_TURNS) without concluding
    10   left while the run waits on a proposal ([q]uit, or stdin ended)
    11   not allowed: the token (RUMMY_TOKEN) is missing, unknown, revoked or expired,
         or does not open this project or allow this call
    12   cancel: the run had already ended, so nothing was cancelled
    130  interrupted with Ctrl-C before the run ended";

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server
    #[command(long_about = "\
Runs the rummy server on ws://127.0.0.1:$PORT (default 3044; PORT=0 picks a free port). It prints
one line on stdout once it accepts connections and logs to stderr (RUMMY_LOG=debug for more);
SIGINT or SIGTERM stop it.

Configuration comes from the environment over $RUMMY_HOME/.env (default ~/.rummy/.env):
    RUMMY_MODEL_<alias>=openai/<model>   a model alias
    OPENAI_BASE_URL, OPENAI_API_KEY      an OpenAI-compatible endpoint
The README lists every setting.

--demo-model serves `rummy demo`'s scripted model (alias demo, no key, in this process) in
place of every configured provider: try `rummy ask`, `rummy act` and the web page before
configuring one.")]
    Serve(ServeArgs),
    /// Run a whole task on a sample project with a built-in scripted model: no key, no set-up
    #[command(long_about = "\
Starts a server in this process with a built-in scripted model (an OpenAI-compatible server on
loopback, no key), copies a small sample project into a temporary directory, and runs a task
on it through the same view `rummy act` shows: the model reads files, records what it learns,
proposes an edit (accepted for you, unless --pause) and a harmless command (run and shown),
and concludes. Nothing outside the temporary directory is touched. It ends by saying how to
point rummy at a real model.")]
    Demo(DemoArgs),
    /// Ask about the project: the model reads and answers, and changes no file
    #[command(after_long_help = HELP_TAIL, long_about = "\
Starts a run in ask mode on the project in the current directory and follows it. In ask mode
the model reads the project, records facts and questions, and answers; it cannot edit files
or run changing commands (it may still propose a read-only `env` command or ask you).")]
    Ask(StartArgs),
    /// Have the model act on the project: it proposes edits and commands for you to accept
    #[command(after_long_help = HELP_TAIL, long_about = "\
Starts a run in act mode on the project in the current directory and follows it. The model
proposes edits (shown as diffs) and commands; each waits for your answer:
    [y]es   accept
    [n]o    reject; words after it are the reason the model reads (`n use the helper`)
    [a]ll   accept this and every later proposal of this run
    [q]uit  leave; the run waits (answer later with `rummy approve` / `rummy reject`)
An accepted edit is written into the project by the server. An accepted command runs where the
project's files are, on the server's machine (or here, when the server asks its client to run
it), and its output is shown as it comes. Ctrl-C stops a running command; Ctrl-C again (or
with no command running) cancels the run; a third time leaves at once. It follows the run until
its loop ends, and any loop queued behind it meanwhile. A lost connection is said at once and
retried for about 12 s (Ctrl-C leaves meanwhile); then it exits 3, \"connection lost\".")]
    Act(StartArgs),
    /// List the project's runs: name, status, turns, tokens, cost, age
    Runs(RunsArgs),
    /// Show a run: its history, open questions, proposals and telemetry
    Show(ShowArgs),
    /// Attach to a run (started anywhere) and follow it live
    #[command(after_long_help = HELP_TAIL, long_about = "\
Follows a run as `rummy act` does, from where it stands: its pending proposals can be answered
here, and new output is shown as it comes. Ends when the run's loop ends.")]
    Watch(WatchArgs),
    /// Accept a run's pending proposals (all of them, or those named)
    #[command(after_long_help = HELP_TAIL, long_about = "\
Accepts the run's pending proposals: every one, or those named. A PATH names a proposal by its
own path (set://turn_2/a.txt) or by the project file it acts on, as `rummy show` labels it
(`edit a.txt` is a.txt). When a PATH matches no pending proposal, or a file several of them act
on, nothing is accepted: it says what is pending and exits 4.")]
    Approve(ApproveArgs),
    /// Reject a run's pending proposal, with the reason the model reads
    #[command(after_long_help = HELP_TAIL, long_about = "\
Rejects one pending proposal of the run; the model reads the reason next turn. PATH names it by
its own path (set://turn_2/a.txt) or by the project file it acts on, as `rummy show` labels it
(`edit a.txt` is a.txt). When PATH matches no pending proposal, or a file several of them act
on, nothing is rejected: it says what is pending and exits 4.")]
    Reject(RejectArgs),
    /// Add a prompt to a run: folded into its running loop, or a new loop when it is idle
    #[command(after_long_help = HELP_TAIL, long_about = "\
Adds a prompt to a run of the project. A run with a loop under way reads it at that loop's next
turn — unless the turn in flight concludes the loop first: then the prompt starts a new loop of
its own. inject waits up to 5 s to say which happened. An idle run starts a new loop with it at
once. A run that does not exist is said so (exit 4): nothing is started.")]
    Inject(InjectArgs),
    /// Cancel a run's loop
    #[command(after_long_help = HELP_TAIL, long_about = "\
Cancels the run's loop under way (and any command it runs). A run that had already ended is
said so and exits 12: nothing was cancelled.")]
    Cancel(CancelArgs),
    /// Fork a run into a new one (the new run starts from the parent's context) and follow it
    #[command(after_long_help = HELP_TAIL)]
    Fork(ForkArgs),
    /// List the server's models and their providers, or remove one
    #[command(after_long_help = HELP_TAIL, long_about = "\
Lists the server's model aliases: provider, model, context length, fallback, and where each comes
from. `environment`: the server's environment defines it now (RUMMY_MODEL_<alias>), and every
start writes it again. `stored`: the database keeps it but the environment no longer names it: an
earlier start's environment defined it, or an admin added it with addModel; it stays usable until
removed. --remove ALIAS removes one (admin); an alias still in the environment comes back at the
server's next start.")]
    Models(ModelsArgs),
    /// Check a running setup line by line: server, token, database, providers, models
    #[command(after_long_help = HELP_TAIL, long_about = "\
Checks a running server line by line, for a person who just configured it: the server reachable
at $RUMMY_URL (or --url), the token in $RUMMY_TOKEN valid, and — asked of the server, which
alone can reach them (an admin token is needed once tokens exist) — the database writable, each
configured provider answering its models endpoint, each model's context length known. Each line
is ok or FAIL with what to do; any FAIL exits 1 (3: the server cannot be reached).

--health is for a container's HEALTHCHECK: it asks the server's /health (no token needed) and
prints one line; exit 0 when healthy, 1 otherwise. The server is the one RUMMY_URL (or --url)
names, over http:// for ws:// and https:// for wss://; without either, the local one at RUMMY_BIND
and PORT from the same settings the server reads (a wildcard bind on loopback).")]
    Doctor(DoctorArgs),
    /// Serve an editor over the Agent Client Protocol (ACP) on stdin and stdout
    #[command(long_about = "\
Speaks the Agent Client Protocol on stdin and stdout, for an editor that starts it (Zed,
Neovim's CodeCompanion, JetBrains, Emacs): each editor session is a run of the rummy server at
$RUMMY_URL (or --url, or one in this process with --local), with $RUMMY_TOKEN. A session opens
the project at the editor's directory (else the one --project names); its first prompt starts
the run, named after the session, and each later one continues it. Proposals are asked in the
editor (allow once, always allow the same in this session, or reject); the page and `rummy
watch` see the run live, and `session/load` opens any run of the project by its alias.
Nothing but ACP is written to stdout: logs go to stderr.")]
    Acp(AcpArgs),
    /// Show routing's class → model map as the server is configured
    #[command(long_about = "\
Shows where routing sends each class of prompt (code, reasoning, default): the model alias the
server maps it to (RUMMY_ROUTE_CODE, RUMMY_ROUTE_REASONING, RUMMY_ROUTE_DEFAULT), or none, when
a routed run keeps its own model. Only runs started with --route (attributes.route: true) are
routed; each of their loops takes the model of its prompt's class, fixed for the loop.")]
    Routes(RoutesArgs),
    /// Ask what routing would do with a text
    #[command(subcommand)]
    Route(RouteCommand),
    /// Manage the server's users and tokens, straight on its database (admin)
    #[command(
        subcommand,
        long_about = "\
Makes, lists and revokes tokens on the database of $RUMMY_HOME (or $RUMMY_DB_PATH, or
$RUMMY_DATABASE_URL) directly, with or without a server running: the first admin token of a
new home is made before its server ever starts. Once any token exists, every connection to the server needs one. A
token's text is printed once, by `create`; only its hash is stored. Revoking closes the
connections it opened within seconds."
    )]
    Token(TokenCommand),
    /// Copy the server's database to a new file, consistent even while the server runs (admin)
    #[command(long_about = "\
Copies the database of $RUMMY_HOME (or $RUMMY_DB_PATH) to PATH as one consistent snapshot
(SQLite's VACUUM INTO), with or without a server running: a server goes on serving meanwhile.
The database is all of rummy's state, so the copy is a whole backup; to restore it, stop the
server and put the copy in the database's place. PATH must not exist: an existing file is
never overwritten. A PostgreSQL database ($RUMMY_DATABASE_URL) is backed up with pg_dump.")]
    Backup(BackupArgs),
    /// Print a run as JSON: its loops, turns, side tasks, telemetry and entries (admin)
    #[command(long_about = "\
Prints run RUN of the project (the current directory's name, or --project) as one JSON
document on stdout: the run, its loops, its turns with their usage, its side tasks' calls, its
telemetry (the totals getRun shows) and every entry it has a view of with its body (as
getEntries answers). Read from the database of $RUMMY_HOME (or $RUMMY_DB_PATH, or
$RUMMY_DATABASE_URL) in one transaction, with or without a server running.")]
    Export(ExportArgs),
}

/// `backup`.
#[derive(Debug, Clone, Args)]
pub struct BackupArgs {
    /// The file to write (must not exist)
    #[arg(value_name = "PATH")]
    pub path: std::path::PathBuf,
}

/// `export`.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// The run's name
    #[arg(value_name = "RUN")]
    pub run: String,
    /// The project's name [default: this directory's name]
    #[arg(long, value_name = "NAME")]
    pub project: Option<String>,
}

/// `route`'s subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum RouteCommand {
    /// Which class a text is and which model a loop starting with it would use
    #[command(long_about = "\
Classifies the text as routing classifies a loop's prompt and says which model the loop would
use: for the run named by --run, by its own settings (routing off: its own model, and why);
without --run, for a run with routing on. Nothing is sent to a model and nothing is stored.")]
    Check(RouteCheckArgs),
}

/// `routes`.
#[derive(Debug, Clone, Args)]
pub struct RoutesArgs {
    /// Print the server's answer (getRoutes) as JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// `route check`.
#[derive(Debug, Clone, Args)]
pub struct RouteCheckArgs {
    /// The text, as a prompt (several words are joined)
    #[arg(required = true, value_name = "TEXT")]
    pub text: Vec<String>,
    /// Decide as this run would: its route setting and its model
    #[arg(long, value_name = "NAME")]
    pub run: Option<String>,
    /// Print the server's answer (route/check) as JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// `token`'s subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum TokenCommand {
    /// Make a token and print it (the only time it is shown)
    Create(TokenCreateArgs),
    /// List the tokens (never their text)
    List(TokenListArgs),
    /// Revoke a token by its id or listed prefix
    Revoke(TokenRevokeArgs),
}

/// `token create`.
#[derive(Debug, Clone, Args)]
pub struct TokenCreateArgs {
    /// The user the token is for (made on first use)
    #[arg(long, value_name = "NAME")]
    pub user: String,
    /// An admin token: creates projects, manages models and tokens, opens every project
    #[arg(long)]
    pub admin: bool,
    /// The projects a member token opens, separated by commas
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub projects: Vec<String>,
    /// When it stops working: a number of days, hours or minutes (`90d`, `12h`, `30m`)
    #[arg(long, value_name = "AGE")]
    pub expires: Option<String>,
}

/// `token list`.
#[derive(Debug, Clone, Args)]
pub struct TokenListArgs {
    /// Print the list as JSON
    #[arg(long)]
    pub json: bool,
}

/// `token revoke`.
#[derive(Debug, Clone, Args)]
pub struct TokenRevokeArgs {
    /// The token's id, or its prefix as `token list` shows it
    #[arg(value_name = "ID|PREFIX")]
    pub token: String,
}

/// Where the server is and which project to use.
#[derive(Debug, Clone, Args)]
pub struct ConnectArgs {
    /// The server's WebSocket URL [default: $RUMMY_URL, else ws://127.0.0.1:3044/ws]
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// The project's name on the server [default: this directory's name, rooted here]
    #[arg(long, value_name = "NAME")]
    pub project: Option<String>,
    /// Run a server in this process on a free port for this one command, on $RUMMY_HOME's
    /// database (refused while that home's server runs: talk to it instead)
    #[arg(long)]
    pub local: bool,
}

/// How a followed run's proposals are answered and how it is shown.
#[derive(Debug, Clone, Args)]
pub struct FollowArgs {
    /// Accept every proposal without asking
    #[arg(long, conflicts_with = "no")]
    pub yes: bool,
    /// Reject every proposal without asking: a dry run
    #[arg(long)]
    pub no: bool,
    /// Print the run's notifications as JSON, one per line (for scripts)
    #[arg(long)]
    pub json: bool,
}

/// `ask` and `act`.
#[derive(Debug, Clone, Args)]
pub struct StartArgs {
    /// What to do, in words (several words are joined)
    #[arg(required = true, value_name = "PROMPT")]
    pub prompt: Vec<String>,
    /// The model alias [default: the server's only model]
    #[arg(long, value_name = "ALIAS")]
    pub model: Option<String>,
    /// Name the run (an existing run of that name continues)
    #[arg(long, value_name = "NAME")]
    pub run: Option<String>,
    /// The persona the model speaks as
    #[arg(long, value_name = "TEXT")]
    pub persona: Option<String>,
    /// A skill (from the server's $RUMMY_HOME/skills) to give the run; repeatable
    #[arg(long, value_name = "NAME")]
    pub skill: Vec<String>,
    /// Route each loop to the model the server maps its prompt's class to (`rummy routes`)
    #[arg(long)]
    pub route: bool,
    /// Never send a failed call to its model's fallback (RUMMY_FALLBACK_<alias>)
    #[arg(long)]
    pub no_fallback: bool,
    #[command(flatten)]
    pub follow: FollowArgs,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// `demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Wait for your answer at each proposal instead of accepting it
    #[arg(long)]
    pub pause: bool,
    /// Print the run's notifications as JSON, one per line
    #[arg(long)]
    pub json: bool,
}

/// `serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Serve the demo's scripted model (alias demo) in place of the configured providers
    #[arg(long)]
    pub demo_model: bool,
}

/// `runs`.
#[derive(Debug, Clone, Args)]
pub struct RunsArgs {
    /// How many runs, newest first
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub limit: i64,
    /// Print the server's answer as JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// `show`.
#[derive(Debug, Clone, Args)]
pub struct ShowArgs {
    /// The run
    pub run: String,
    /// Print the server's answer (getRun) as JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// `acp`.
#[derive(Debug, Clone, Args)]
pub struct AcpArgs {
    /// The model of new sessions' runs [default: the server's only (or first) model]
    #[arg(long, value_name = "ALIAS")]
    pub model: Option<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// `watch`.
#[derive(Debug, Clone, Args)]
pub struct WatchArgs {
    /// The run
    pub run: String,
    #[command(flatten)]
    pub follow: FollowArgs,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// `approve`.
#[derive(Debug, Clone, Args)]
pub struct ApproveArgs {
    /// The run
    pub run: String,
    /// The proposals: each its path or the file it acts on [default: every pending one]
    #[arg(value_name = "PATH")]
    pub paths: Vec<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// `reject`.
#[derive(Debug, Clone, Args)]
pub struct RejectArgs {
    /// The run
    pub run: String,
    /// The proposal: its path or the file it acts on (`edit a.txt`: a.txt)
    pub path: String,
    /// Why: the model reads it next turn
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// `inject`.
#[derive(Debug, Clone, Args)]
pub struct InjectArgs {
    /// The run
    pub run: String,
    /// The prompt (several words are joined)
    #[arg(required = true, value_name = "PROMPT")]
    pub prompt: Vec<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// `cancel`.
#[derive(Debug, Clone, Args)]
pub struct CancelArgs {
    /// The run
    pub run: String,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// `fork`.
#[derive(Debug, Clone, Args)]
pub struct ForkArgs {
    /// The run to fork
    pub run: String,
    /// The new run's name
    pub new: String,
    /// What the new run should do (several words are joined)
    #[arg(required = true, value_name = "PROMPT")]
    pub prompt: Vec<String>,
    /// Fork in ask mode instead of act mode
    #[arg(long)]
    pub ask: bool,
    /// The model alias [default: the parent's]
    #[arg(long, value_name = "ALIAS")]
    pub model: Option<String>,
    #[command(flatten)]
    pub follow: FollowArgs,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// `doctor`.
#[derive(Debug, Clone, Args)]
pub struct DoctorArgs {
    /// Only ask the local server's /health (a container's HEALTHCHECK): one line, exit 0 or 1
    #[arg(long)]
    pub health: bool,
    /// The server's WebSocket URL [default: $RUMMY_URL, else ws://127.0.0.1:3044/ws]
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
}

/// `models`.
#[derive(Debug, Clone, Args)]
pub struct ModelsArgs {
    /// Remove this model alias from the server (admin): one that is not in its environment
    /// (listed `stored`), which a restart would otherwise keep
    #[arg(long, value_name = "ALIAS")]
    pub remove: Option<String>,
    /// Print the server's answer as JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// The grammar is consistent (clap's own checks: no clashing flags or names).
    #[test]
    fn the_grammar_is_consistent() {
        Cli::command().debug_assert();
    }

    /// The long help lists the environment and the same exit codes as the code that chooses
    /// them, each once, in order.
    #[test]
    fn help_lists_the_environment_and_the_exit_codes() {
        use crate::cli::exit::Exit;
        assert!(super::HELP_TAIL.starts_with(super::AFTER_HELP));
        let (_, table) = super::HELP_TAIL.split_once("Exit codes:\n").unwrap();
        let listed: Vec<u8> = table
            .lines()
            .filter_map(|line| line.split_whitespace().next()?.parse().ok())
            .collect();
        let codes = [
            Exit::Ok,
            Exit::Failure,
            Exit::Usage,
            Exit::Connection,
            Exit::Refused,
            Exit::RunFailed,
            Exit::Abandoned,
            Exit::ContextFull,
            Exit::Cancelled,
            Exit::MaxTurns,
            Exit::Waiting,
            Exit::NotAllowed,
            Exit::AlreadyEnded,
            Exit::Interrupted,
        ]
        .map(|exit| exit as u8);
        pretty_assertions::assert_eq!(listed, codes.to_vec());
    }
}
