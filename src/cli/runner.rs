//! Running an accepted command here, when the server asks its client to
//! (`RUMMY_COMMAND_RUNNER=client`): `sh -c` in the project root, in a process group of its own
//! (so Ctrl-C reaches rummy, which stops the whole group), its output read as it comes.

use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;

/// What a running command produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Text on a channel (1 stdout, 2 stderr).
    Chunk {
        /// The channel.
        channel: u32,
        /// The text.
        text: String,
    },
    /// It ended: its exit code (`None`: killed by a signal), or why it could not start.
    Exited(Result<Option<i32>, String>),
}

/// A command running here.
pub struct Running {
    /// The run whose proposal it is.
    pub run: String,
    /// The proposal's path (the stream's key on the server).
    pub path: String,
    /// When it started.
    pub started: Instant,
    pid: Option<u32>,
    /// What it produces, in order, ending with [`Output::Exited`].
    pub output: mpsc::UnboundedReceiver<Output>,
}

impl Running {
    /// Starts `command` with `sh -c` in `root`.
    pub fn start(run: &str, path: &str, command: &str, root: &str) -> Running {
        let (tx, output) = mpsc::unbounded_channel();
        let spawned = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn();
        let pid = match spawned {
            Ok(mut child) => {
                let pid = child.id();
                let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
                actix_rt::spawn(async move {
                    let out = read_into(stdout, 1, tx.clone());
                    let err = read_into(stderr, 2, tx.clone());
                    let _ = tokio::join!(out, err);
                    let status = child.wait().await.map(|s| s.code());
                    let _ = tx.send(Output::Exited(status.map_err(|e| e.to_string())));
                });
                pid
            }
            Err(e) => {
                let _ = tx.send(Output::Exited(Err(format!("cannot start sh: {e}"))));
                None
            }
        };
        Running {
            run: run.to_owned(),
            path: path.to_owned(),
            started: Instant::now(),
            pid,
            output,
        }
    }

    /// Stops the command and everything it started (its process group).
    pub fn stop(&self) {
        let Some(pid) = self.pid.and_then(|p| i32::try_from(p).ok()) else {
            return;
        };
        if let Some(pid) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::TERM);
        }
    }

    /// How long it has run, as the stream's `duration`.
    pub fn duration(&self) -> String {
        seconds(self.started.elapsed())
    }
}

/// A duration as `1.2s`.
pub fn seconds(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

/// Reads a pipe into chunks of text; a character split between two reads is kept whole.
async fn read_into(
    pipe: Option<impl tokio::io::AsyncRead + Unpin>,
    channel: u32,
    tx: mpsc::UnboundedSender<Output>,
) {
    let Some(mut pipe) = pipe else { return };
    let mut buf = vec![0u8; 8192];
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let n = match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        let text = take_text(&mut pending);
        if !text.is_empty() {
            let _ = tx.send(Output::Chunk { channel, text });
        }
    }
    if !pending.is_empty() {
        let text = String::from_utf8_lossy(&pending).into_owned();
        let _ = tx.send(Output::Chunk { channel, text });
    }
}

/// The text in `bytes`, leaving an incomplete character at its end for the next read;
/// invalid bytes become U+FFFD.
fn take_text(bytes: &mut Vec<u8>) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            let text = text.to_owned();
            bytes.clear();
            text
        }
        Err(e) if e.error_len().is_none() => {
            let rest = bytes.split_off(e.valid_up_to());
            let text = String::from_utf8_lossy(bytes).into_owned();
            *bytes = rest;
            text
        }
        Err(_) => {
            let text = String::from_utf8_lossy(bytes).into_owned();
            bytes.clear();
            text
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A character cut between two reads waits for its end.
    #[test]
    fn split_characters_wait_for_their_end() {
        let mut bytes = "é".as_bytes()[..1].to_vec();
        let mut first = b"ab".to_vec();
        first.extend_from_slice(&bytes);
        assert_eq!(take_text(&mut first), "ab");
        bytes = first;
        bytes.extend_from_slice(&"é".as_bytes()[1..]);
        assert_eq!(take_text(&mut bytes), "é");
        assert!(bytes.is_empty());
    }

    /// A command's output comes in order on its channels, then its exit code.
    #[actix_rt::test]
    async fn a_command_streams_its_output_and_exit_code() {
        let dir = tempfile::TempDir::new().unwrap();
        let root = dir.path().display().to_string();
        let mut running = Running::start("r", "sh://x", "echo out; echo err >&2; exit 3", &root);
        let mut got = Vec::new();
        while let Some(output) = running.output.recv().await {
            got.push(output);
        }
        got.sort_by_key(|o| match o {
            Output::Chunk { channel, .. } => *channel,
            Output::Exited(_) => 9,
        });
        assert_eq!(
            got,
            vec![
                Output::Chunk {
                    channel: 1,
                    text: "out\n".into()
                },
                Output::Chunk {
                    channel: 2,
                    text: "err\n".into()
                },
                Output::Exited(Ok(Some(3)))
            ]
        );
    }
}
