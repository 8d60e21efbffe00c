//! Reaching the server (`RUMMY_URL`, `RUMMY_TOKEN`, or an in-process one with `--local`) and
//! opening the project: the current directory's, or the one `--project` names.

use super::args::ConnectArgs;
use super::exit::Exit;
use rummy_client::params::HelloParams;
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

    /// A call that failed: refused by the server (4) or lost with the connection (3).
    pub fn call(what: &str, error: CallError) -> Failure {
        match error {
            CallError::Rpc(e) => Failure::new(Exit::Refused, format!("{what}: {}", e.message)),
            CallError::Client(e) => Failure::connection(what, &e),
        }
    }

    /// A connection that failed.
    pub fn connection(what: &str, error: &ClientError) -> Failure {
        Failure::new(Exit::Connection, format!("{what}: {error}"))
    }
}

/// Whether the command opens the project (reads it, steers its runs) or starts work in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// Starts a run here: the project is this directory.
    Start,
    /// Only opens the project: by name alone when `--project` names it.
    Open,
}

/// Where to connect, and the project to open there.
#[derive(Debug, Clone)]
pub struct Place {
    /// The server's WebSocket URL.
    pub url: String,
    /// A token, sent as `Authorization: Bearer`.
    pub token: Option<String>,
    /// The project's name.
    pub project: String,
    /// Its root on the server's machine; without it the project is opened by name.
    pub root: Option<String>,
}

/// A client bound to a project, and the in-process server when `--local` started one.
pub struct Session {
    /// The client.
    pub client: Client,
    /// The project's name.
    pub project: String,
    /// The project's root on the server's machine.
    pub root: String,
    /// The server's `RUMMY_MAX_TURNS`, when this process runs the server.
    pub max_turns: Option<u32>,
    server: Option<rummy::ServerHandle>,
}

impl Session {
    /// Connects as `args` say and says hello for the project.
    pub async fn open(args: &ConnectArgs, intent: Intent) -> Result<Session, Failure> {
        let vars: BTreeMap<String, String> = std::env::vars().collect();
        let (url, server, max_turns) = if args.local {
            let (server, max_turns) = start_local(vars.clone()).await?;
            (
                format!("{}ws", server.ws_url()),
                Some(server),
                Some(max_turns),
            )
        } else {
            let url = args
                .url
                .clone()
                .or_else(|| vars.get("RUMMY_URL").filter(|u| !u.is_empty()).cloned())
                .unwrap_or_else(|| DEFAULT_URL.to_owned());
            (url, None, None)
        };
        let token = vars.get("RUMMY_TOKEN").filter(|t| !t.is_empty()).cloned();
        let cwd = std::env::current_dir()
            .map_err(|e| Failure::new(Exit::Failure, format!("current directory: {e}")))?;
        let (project, root) = project_of(&cwd, args.project.as_deref());
        let by_name_only = intent == Intent::Open && args.project.is_some();
        let place = Place {
            url,
            token,
            project,
            root: (!by_name_only).then_some(root),
        };
        Session::connect(place, server, max_turns).await
    }

    /// Connects to the server at `place` and says hello for its project; `server` is the
    /// in-process server, stopped when the session closes.
    pub async fn connect(
        place: Place,
        server: Option<rummy::ServerHandle>,
        max_turns: Option<u32>,
    ) -> Result<Session, Failure> {
        let mut options = ClientOptions::new(&place.url);
        options.token = place.token.clone();
        let client = match Client::connect(options).await {
            Ok(client) => client,
            Err(e) => return Err(unreachable(&place.url, &e)),
        };
        let Place { project, root, .. } = place;
        let mut session = Session {
            client,
            project: project.clone(),
            root: root.clone().unwrap_or_default(),
            max_turns,
            server,
        };
        let hello = HelloParams {
            name: project.clone(),
            project_root: root.clone(),
            client_version: Some("2.0.0".into()),
            ..HelloParams::default()
        };
        match session.client.hello(hello).await {
            Ok(answer) => {
                session.root = answer.project_root;
                Ok(session)
            }
            Err(CallError::Rpc(e)) if e.kind() == Some("conflict") => Err(Failure::new(
                Exit::Refused,
                format!("the project name \"{project}\" is taken: {}", e.message),
            )
            .hint(format!(
                "pass --project NAME to give {} a name of its own on this server",
                root.unwrap_or_default()
            ))),
            Err(CallError::Rpc(e)) if e.kind() == Some("not_found") => Err(Failure::new(
                Exit::Refused,
                format!("no project \"{project}\" on this server: {}", e.message),
            )
            .hint("run `rummy act` in the project's directory once to create it")),
            Err(e) => Err(Failure::call("rummy/hello", e)),
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

/// The failure of a server that cannot be reached, with what to do about it.
fn unreachable(url: &str, error: &ClientError) -> Failure {
    let failure = Failure::connection(&format!("cannot reach the rummy server at {url}"), error);
    match error {
        ClientError::Rejected { status: 401, .. } => {
            failure.hint("set RUMMY_TOKEN to a token of that server")
        }
        _ => failure.hint(
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
    // An SQLite file is one server's; a PostgreSQL database is shared (SCALE.md §2).
    if let rummy::config::Location::Sqlite(path) = config.database() {
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
