//! The built `rummy` binary as a child process, for the tests that need a real process (start-up
//! line, signals, crashes).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A `rummy serve` child on a free port; killed (-9) when dropped, so a failing test leaves none
/// behind.
pub struct ServerProcess {
    /// The process.
    pub child: Child,
    /// The port it printed in its start-up line.
    pub port: u16,
    /// Its later stdout lines as they arrive; `None` at end of output.
    pub lines: mpsc::Receiver<Option<String>>,
    /// Its commands' `HOME`s (`RUMMY_COMMAND_HOMES`'s default beside the home), removed when
    /// it is dropped.
    command_homes: std::path::PathBuf,
}

impl ServerProcess {
    /// Starts `rummy serve` on port 0 with home `home` and the home's database
    /// ([`super::database::vars`]), only `vars` besides in its environment and stderr to
    /// `stderr`, and waits for its start-up line.
    pub fn start(home: &Path, vars: &[(&str, &str)], stderr: Stdio) -> ServerProcess {
        Self::start_as(
            Path::new(env!("CARGO_BIN_EXE_rummy")),
            home,
            vars,
            stderr,
            None,
        )
    }

    /// [`ServerProcess::start`] of the binary at `binary`, as user and group `ids` when given
    /// (the test runs as root).
    pub fn start_as(
        binary: &Path,
        home: &Path,
        vars: &[(&str, &str)],
        stderr: Stdio,
        ids: Option<(u32, u32)>,
    ) -> ServerProcess {
        let mut command = Command::new(binary);
        if let Some((uid, gid)) = ids {
            use std::os::unix::process::CommandExt;
            command.uid(uid).gid(gid);
        }
        let mut child = command
            .arg("serve")
            .env_clear()
            .env("PORT", "0")
            .env("RUMMY_HOME", home)
            .envs(super::database::vars(home))
            .envs(vars.iter().copied())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("binary starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel::<Option<String>>();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(Some(line));
            }
            let _ = tx.send(None);
        });
        // Owned before the first assertion, so a failed start-up kills it.
        let mut homes = home.as_os_str().to_owned();
        homes.push("-homes");
        let mut server = ServerProcess {
            child,
            port: 0,
            lines,
            command_homes: homes.into(),
        };
        let line = server
            .lines
            .recv_timeout(Duration::from_secs(30))
            .unwrap()
            .expect("a start-up line");
        server.port = line
            .strip_prefix("rummy listening on ws://127.0.0.1:")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected start-up line {line:?}"));
        server
    }

    /// Kills the server the hard way (a crash) and reaps it.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Sends SIGTERM and waits up to 10 s for the exit.
    pub fn terminate(&mut self) -> ExitStatus {
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(exit) = self.child.try_wait().unwrap() {
                return exit;
            }
            assert!(
                Instant::now() < deadline,
                "did not exit within 10 s of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.command_homes);
    }
}

/// A client of the server on `port`, its calls timing out after `timeout`, bound to project
/// `name` rooted at `root`.
pub async fn project_client(
    port: u16,
    name: &str,
    root: &Path,
    timeout: Duration,
) -> rummy_testkit::RpcClient {
    let mut client = rummy_testkit::RpcClient::connect(&format!("ws://127.0.0.1:{port}/"))
        .await
        .expect("client connects");
    client.set_timeout(timeout);
    client
        .call(
            "rummy/hello",
            serde_json::json!({ "name": name, "projectRoot": root.display().to_string() }),
        )
        .await
        .expect("hello succeeds");
    client
}
