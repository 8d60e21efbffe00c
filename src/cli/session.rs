//! Reaching the server (`RUMMY_URL`, `RUMMY_TOKEN`, or an in-process one with `--local`) and
//! opening the project: the current directory's, or the one `--project` names.

use super::args::ConnectArgs;
use super::exit::Exit;
use rummy_client::params::{HelloParams, Page};
use rummy_client::results::Project;
use rummy_client::{CallError, Client, ClientError, ClientOptions};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The server's address when `RUMMY_URL` is not set.
pub const DEFAULT_URL: &str = "ws://127.0.0.1:3044/ws";

/// Why a command could not go on: what to print, a hint, and the exit code.
#[derive(Debug)]
pub struct Failure {
    /// The exit code.
    pub exit: Exit,
    /// What went wrong.
    pub message: String,
    /// What to do about it.
    pub hint: Option<String>,
}

impl Failure {
    /// A failure without a hint.
    pub fn new(exit: Exit, message: impl Into<String>) -> Failure {
        Failure {
            exit,
            message: message.into(),
            hint: None,
        }
    }

    /// The same failure with a hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Failure {
        self.hint = Some(hint.into());
        self
    }

    /// A call that failed: refused by the server (4), not allowed to this token (11), or lost
    /// with the connection (3).
    pub fn call(what: &str, error: CallError) -> Failure {
        match error {
            CallError::Rpc(e) if matches!(e.kind(), Some("unauthorized" | "permission")) => {
                Failure::new(
                    Exit::NotAllowed,
                    format!("{what}: not allowed: {}", e.message),
                )
            }
            CallError::Rpc(e) => Failure::new(Exit::Refused, format!("{what}: {}", e.message)),
            CallError::Client(e) => Failure::connection(what, &e),
        }
    }

    /// A call about run `run` of `project` that failed: a run that does not exist is said so,
    /// naming the project.
    pub fn run_call(project: &str, run: &str, error: CallError) -> Failure {
        match &error {
            CallError::Rpc(e) if e.kind() == Some("not_found") && e.message.contains(run) => {
                Failure::new(
                    Exit::Refused,
                    format!("run {run} not found in project {project}"),
                )
                .hint(format!(
                    "`rummy runs` lists the runs of project {project} (the current directory's, \
                     or the one --project names)"
                ))
            }
            _ => Failure::call(&format!("run {run}"), error),
        }
    }

    /// A connection that failed: lost (3), or closed because its token lapsed (11).
    pub fn connection(what: &str, error: &ClientError) -> Failure {
        match error {
            ClientError::Closed(Some((1008, reason))) if lapsed_token(reason) => Failure::new(
                Exit::NotAllowed,
                format!("{what}: not allowed: the server closed the connection ({reason})"),
            )
            .hint(TOKEN_HINT),
            ClientError::Rejected {
                status: 401 | 403,
                body,
            } => Failure::new(
                Exit::NotAllowed,
                format!("{what}: not allowed: {}", body.trim()),
            )
            .hint(TOKEN_HINT),
            _ => Failure::new(
                Exit::Connection,
                format!("{what}: the connection to the server was lost ({error})"),
            ),
        }
    }
}

/// Whether a connection the server closed for its policy (1008) was closed for its token
/// (refused, revoked or expired), not for another reason.
pub fn lapsed_token(reason: &str) -> bool {
    reason.contains("token") || reason.contains("unauthorized")
}

/// What to do about a token the server does not take.
const TOKEN_HINT: &str = "set RUMMY_TOKEN to a valid token of that server (its admin makes one \
     with `rummy token create --user NAME` on the server's machine)";

/// What the command needs of the server: a project to work in, one to read, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// Starts a run here: the project is this directory, created on first use.
    Start,
    /// Reads or steers an existing project: the one `--project` names, else the one rooted at
    /// this directory (or above it). Never creates one: elsewhere it says so.
    Open,
    /// Asks about the server itself (models, routes): no project is opened.
    Server,
}

/// The project a session opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// This name at this root on the server's machine: created when it does not exist yet.
    Create {
        /// The project's name.
        name: String,
        /// Its root.
        root: String,
    },
    /// The existing project of this name.
    Named(String),
    /// The existing project rooted at this directory or above it (found with `getProjects`).
    RootedAt(String),
    /// None: the command asks about the server itself.
    Server,
}

/// Where to connect, and the project to open there.
#[derive(Debug, Clone)]
pub struct Place {
    /// The server's WebSocket URL.
    pub url: String,
    /// A token, sent as `Authorization: Bearer`.
    pub token: Option<String>,
    /// The project to open.
    pub target: Target,
}

/// A client bound to a project, and the in-process server when `--local` started one.
pub struct Session {
    /// The client.
    pub client: Client,
    /// The project's name (empty when none was opened).
    pub project: String,
    /// The project's root on the server's machine.
    pub root: String,
    /// The server's `RUMMY_MAX_TURNS`, when this process runs the server.
    pub max_turns: Option<u32>,
    server: Option<rummy::ServerHandle>,
}

impl Session {
    /// Connects as `args` say and opens the project `intent` needs.
    pub async fn open(args: &ConnectArgs, intent: Intent) -> Result<Session, Failure> {
        let Reach {
            url,
            token,
            server,
            max_turns,
        } = reach(args).await?;
        let cwd = std::env::current_dir()
            .map_err(|e| Failure::new(Exit::Failure, format!("current directory: {e}")))?;
        let (name, root) = project_of(&cwd, args.project.as_deref());
        let target = match (intent, &args.project) {
            (Intent::Start, _) => Target::Create { name, root },
            (Intent::Open, Some(_)) => Target::Named(name),
            (Intent::Open, None) => Target::RootedAt(root),
            (Intent::Server, _) => Target::Server,
        };
        let place = Place { url, token, target };
        Session::connect(place, server, max_turns).await
    }

    /// Connects to the server at `place` and opens its project; `server` is the in-process
    /// server, stopped when the session closes. The CLI reconnects by itself (while it
    /// follows a run), so the client does not.
    pub async fn connect(
        place: Place,
        server: Option<rummy::ServerHandle>,
        max_turns: Option<u32>,
    ) -> Result<Session, Failure> {
        let mut options = ClientOptions::new(&place.url);
        options.token = place.token.clone();
        options.reconnect = None;
        let client = match Client::connect(options).await {
            Ok(client) => client,
            Err(e) => return Err(unreachable(&place.url, place.token.is_some(), &e)),
        };
        let mut session = Session {
            client,
            project: String::new(),
            root: String::new(),
            max_turns,
            server,
        };
        let (name, root) =
            match place.target {
                Target::Server => return Ok(session),
                Target::Create { name, root } => (name, Some(root)),
                Target::Named(name) => (name, None),
                Target::RootedAt(dir) => match project_at(&mut session.client, &dir).await {
                    Ok(Some(name)) => (name, None),
                    Ok(None) => return Err(Failure::new(
                        Exit::Refused,
                        format!("{dir} is not a rummy project on this server (nothing changed)"),
                    )
                    .hint(
                        "start a run here to make it one (`rummy act \"...\"` or `rummy ask`), \
                         cd into a project, or name one with --project NAME",
                    )),
                    Err(e) => return Err(hello_failed(e, place.token.is_some(), "", None)),
                },
            };
        session.project = name.clone();
        let hello = HelloParams {
            name: name.clone(),
            project_root: root.clone(),
            client_version: Some("2.1.0".into()),
            ..HelloParams::default()
        };
        match session.client.hello(hello).await {
            Ok(answer) => {
                session.root = answer.project_root;
                Ok(session)
            }
            Err(e) => Err(hello_failed(e, place.token.is_some(), &name, root)),
        }
    }

    /// Closes the connection and stops the in-process server, if any.
    pub async fn close(self) {
        self.client.close().await;
        if let Some(server) = self.server {
            server.stop().await;
        }
    }
}

/// Where a client command's server is, and its token.
pub struct Reach {
    /// The server's WebSocket URL.
    pub url: String,
    /// `RUMMY_TOKEN`.
    pub token: Option<String>,
    /// The server `--local` started in this process.
    pub server: Option<rummy::ServerHandle>,
    /// That server's `RUMMY_MAX_TURNS`.
    pub max_turns: Option<u32>,
}

/// The server `args` name: with `--local` one started in this process on the home's
/// database, else `--url`, `RUMMY_URL` or [`DEFAULT_URL`]; with `RUMMY_TOKEN`.
pub async fn reach(args: &ConnectArgs) -> Result<Reach, Failure> {
    let vars: BTreeMap<String, String> = std::env::vars().collect();
    let token = vars.get("RUMMY_TOKEN").filter(|t| !t.is_empty()).cloned();
    if args.local {
        let (server, max_turns) = start_local(vars).await?;
        return Ok(Reach {
            url: format!("{}ws", server.ws_url()),
            token,
            server: Some(server),
            max_turns: Some(max_turns),
        });
    }
    let url = args
        .url
        .clone()
        .or_else(|| vars.get("RUMMY_URL").filter(|u| !u.is_empty()).cloned())
        .unwrap_or_else(|| DEFAULT_URL.to_owned());
    Ok(Reach {
        url: websocket_url(&url)?,
        token,
        server: None,
        max_turns: None,
    })
}

/// The name of the project rooted at `dir` or at a directory above it, among those this
/// connection may open (`getProjects`: nothing is created or scanned).
async fn project_at(client: &mut Client, dir: &str) -> Result<Option<String>, CallError> {
    const PAGE: i64 = 1000;
    let dir = std::path::Path::new(dir);
    let mut offset = 0;
    loop {
        let page = Page {
            limit: Some(PAGE),
            offset: Some(offset),
        };
        let projects: Vec<Project> = client.call("getProjects", &page).await?;
        let found = projects
            .iter()
            .filter(|p| dir.starts_with(&p.project_root))
            .max_by_key(|p| p.project_root.len());
        if let Some(project) = found {
            return Ok(Some(project.name.clone()));
        }
        if i64::try_from(projects.len()).unwrap_or(0) < PAGE {
            return Ok(None);
        }
        offset += PAGE;
    }
}

/// The failure of a `rummy/hello` (or the `getProjects` that finds the project) for project
/// `name` at `root`.
fn hello_failed(error: CallError, token: bool, name: &str, root: Option<String>) -> Failure {
    match error {
        CallError::Rpc(e) if e.kind() == Some("conflict") => Failure::new(
            Exit::Refused,
            format!("the project name \"{name}\" is taken: {}", e.message),
        )
        .hint(format!(
            "pass --project NAME to give {} a name of its own on this server",
            root.unwrap_or_default()
        )),
        CallError::Rpc(e) if e.kind() == Some("not_found") => Failure::new(
            Exit::Refused,
            format!("no project \"{name}\" on this server: {}", e.message),
        )
        .hint("run `rummy act` in the project's directory once to create it"),
        CallError::Rpc(e) if e.kind() == Some("unauthorized") && !token => Failure::new(
            Exit::NotAllowed,
            "not allowed: this server needs a token, and RUMMY_TOKEN is not set",
        )
        .hint(TOKEN_HINT),
        CallError::Rpc(e) if matches!(e.kind(), Some("unauthorized" | "permission")) => {
            Failure::new(Exit::NotAllowed, format!("not allowed: {}", e.message)).hint(TOKEN_HINT)
        }
        e => Failure::call("rummy/hello", e),
    }
}

/// The server's URL as given, if it is a WebSocket one; an `http(s)://` one is refused (2)
/// with its `ws(s)://` form.
pub fn websocket_url(url: &str) -> Result<String, Failure> {
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("ws://") || lower.starts_with("wss://") {
        return Ok(url.to_owned());
    }
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let secure = scheme.eq_ignore_ascii_case("https");
    let host_and_path = rest.trim_end_matches('/');
    let path = if host_and_path.contains('/') {
        ""
    } else {
        "/ws"
    };
    let suggestion = format!(
        "{}://{host_and_path}{path}",
        if secure { "wss" } else { "ws" }
    );
    Err(Failure::new(
        Exit::Usage,
        format!("{url} is not a WebSocket URL: rummy's clients speak WebSocket"),
    )
    .hint(format!("use {suggestion} (RUMMY_URL or --url)")))
}

/// The project's name and root: `--project`, else the directory's name; the root is the
/// directory.
pub fn project_of(cwd: &std::path::Path, named: Option<&str>) -> (String, String) {
    let root: PathBuf = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let name = named.map(str::to_owned).unwrap_or_else(|| {
        root.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "root".to_owned())
    });
    (name, root.display().to_string())
}

/// The failure of a server that cannot be reached, or that refused the token, with what to do
/// about it.
pub fn unreachable(url: &str, token: bool, error: &ClientError) -> Failure {
    match error {
        ClientError::Rejected {
            status: 401 | 403, ..
        } if token => Failure::new(
            Exit::NotAllowed,
            format!("not allowed: the server at {url} refused the token in RUMMY_TOKEN (unknown, revoked or expired)"),
        )
        .hint(TOKEN_HINT),
        ClientError::Rejected {
            status: 401 | 403, ..
        } => Failure::new(
            Exit::NotAllowed,
            format!("not allowed: the server at {url} needs a token, and RUMMY_TOKEN is not set"),
        )
        .hint(TOKEN_HINT),
        _ => Failure::new(
            Exit::Connection,
            format!("cannot reach the rummy server at {url}: {error}"),
        )
        .hint(
            "start one with `rummy serve`, point RUMMY_URL at yours, or add --local to run one \
             in this process",
        ),
    }
}

/// Starts a server in this process for one command, on the home's database, on a free port.
async fn start_local(
    vars: BTreeMap<String, String>,
) -> Result<(rummy::ServerHandle, u32), Failure> {
    let mut config = rummy::env::load(vars)
        .map_err(|e| Failure::new(Exit::Usage, format!("configuration: {e}")))?;
    config.port = 0;
    // An SQLite file is one server's; a PostgreSQL database is shared.
    if let rummy_store::location::Location::Sqlite(path) = config.database() {
        if let Some(held) = rummy::lock::holder(&path) {
            return Err(refuse_local(held));
        }
    }
    let max_turns = config.limits.max_turns;
    match rummy::serve(config, std::future::pending()).await {
        Ok(server) => Ok((server, max_turns)),
        Err(rummy::ServeError::Locked(held)) => Err(refuse_local(held)),
        Err(e) => Err(Failure::new(Exit::Failure, format!("local server: {e}"))),
    }
}

fn refuse_local(held: rummy::lock::Held) -> Failure {
    let hint = match held.port {
        Some(port) => {
            format!("talk to it instead: RUMMY_URL=ws://127.0.0.1:{port}/ws (without --local)")
        }
        None => "talk to it with RUMMY_URL instead of --local".to_owned(),
    };
    Failure::new(
        Exit::Refused,
        format!("--local: the database is one server's at a time, and {held}"),
    )
    .hint(hint)
}

#[cfg(test)]
mod tests {
    use super::project_of;
    use pretty_assertions::assert_eq;

    /// The project is named after its directory unless `--project` names it.
    #[test]
    fn the_project_is_the_directory() {
        let dir = tempfile::TempDir::new().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let name = root.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(
            project_of(dir.path(), None),
            (name, root.display().to_string())
        );
        assert_eq!(project_of(dir.path(), Some("web")).0, "web".to_owned());
    }
}
