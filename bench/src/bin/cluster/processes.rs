//! What a set-up runs on: the `rummy` server processes (started, waited for, their CPU read
//! and stopped) and, for PostgreSQL, a database of its own created and dropped.

use super::START_UP;
use rummy_bench::server::process_cpu;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The `rummy` binary the servers run: `RUMMY_BENCH_SERVER`, or the one beside this bench.
pub(crate) fn server_binary() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("RUMMY_BENCH_SERVER") {
        return Ok(PathBuf::from(path));
    }
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let path = me.with_file_name("rummy");
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "no server binary at {}: build it first (cargo build --release -p rummy) or set RUMMY_BENCH_SERVER",
            path.display()
        ))
    }
}

/// A database of its own on the PostgreSQL server, dropped with this.
pub(crate) struct Database {
    pub(crate) admin: String,
    pub(crate) name: String,
    pub(crate) url: String,
}

impl Database {
    /// Creates the database of set-up `label` (dropping a leftover of the same name first).
    pub(crate) fn create(admin: &str, label: char) -> Result<Database, String> {
        let name = format!("rummy_bench_{}_{label}", std::process::id());
        rummy_pg::admin::drop_database(admin, &name)?;
        rummy_pg::admin::create_database(admin, &name, None)?;
        Ok(Database {
            admin: admin.to_owned(),
            url: rummy_pg::admin::with_database(admin, &name),
            name,
        })
    }

    /// The CPU time of each of this database's backends now, by pid, read from `/proc` (the
    /// backends' process titles, `postgres: <user> <database> …`, name it); none when the
    /// server runs elsewhere.
    pub(crate) fn backends_cpu(&self) -> BTreeMap<u32, Duration> {
        let mut found = BTreeMap::new();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return found;
        };
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(title) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            let title = String::from_utf8_lossy(&title);
            let mut words = title.split_whitespace();
            if words.next() == Some("postgres:") && words.nth(1) == Some(self.name.as_str()) {
                found.insert(pid, process_cpu(&pid.to_string()));
            }
        }
        found
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Err(e) = rummy_pg::admin::drop_database(&self.admin, &self.name) {
            eprintln!("could not drop database {}: {e}", self.name);
        }
    }
}

/// A `rummy serve` child process; killed when dropped.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) port: u16,
    pub(crate) log: PathBuf,
}

impl Server {
    /// Starts `rummy serve` on port 0 with home `home`, only `vars` (and `PATH`) in its
    /// environment, its stderr to `log`, and waits for its start-up line.
    pub(crate) fn start(
        binary: &Path,
        home: &Path,
        vars: &[(&str, String)],
        log: PathBuf,
    ) -> Result<Server, String> {
        let stderr = std::fs::File::create(&log).map_err(|e| e.to_string())?;
        let mut child = Command::new(binary)
            .arg("serve")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("PORT", "0")
            .env("RUMMY_HOME", home)
            .envs(vars.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("{}: {e}", binary.display()))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, lines) = mpsc::channel::<String>();
        // Reads the start-up line, then keeps the pipe drained.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut server = Server {
            child,
            port: 0,
            log,
        };
        let line = lines.recv_timeout(START_UP).map_err(|_| {
            format!(
                "no start-up line within {START_UP:?}{}",
                server.exited().unwrap_or_default()
            )
        })?;
        server.port = line
            .strip_prefix("rummy listening on ws://127.0.0.1:")
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| format!("unexpected start-up line {line:?}"))?;
        Ok(server)
    }

    /// Its WebSocket address.
    pub(crate) fn ws_url(&self) -> String {
        format!("ws://127.0.0.1:{}/", self.port)
    }

    /// Its CPU time so far.
    pub(crate) fn cpu(&self) -> Duration {
        process_cpu(&self.child.id().to_string())
    }

    /// `; server exited (<status>), see <log>` once it has exited.
    pub(crate) fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(format!(
                "; server exited ({status}), see {}",
                self.log.display()
            )),
            _ => None,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
