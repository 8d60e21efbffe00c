//! Accepted commands' output: each channel entry's body as it grows, flushed per proposal with
//! its exit line, and the output of a command run here streamed back to the server.

use super::Follow;
use crate::cli::runner::{self};
use rummy_client::params::{StreamAbortedParams, StreamCompletedParams, StreamParams};
use rummy_client::results::{FailureKind, HistoryItem, State};

impl Follow<'_> {
    /// New output of a command's channel, unless this process runs it (and shows it itself).
    pub(super) fn channel(&mut self, item: &HistoryItem) {
        let proposal = item
            .path
            .rsplit_once('_')
            .map_or(item.path.as_str(), |(p, _)| p)
            .to_owned();
        if self.own.contains(&proposal) {
            return;
        }
        self.channel_failure(item);
        let shown = self.channels.entry(item.path.clone()).or_default();
        // A push carries the whole channel or, as it grows, what was appended at an offset.
        let Some((new, taken)) = rummy_client::bodies::unseen(item, shown.taken) else {
            return;
        };
        let new = new.to_owned();
        shown.taken = taken;
        let channel = item
            .attributes
            .get("channel")
            .and_then(|c| c.as_u64())
            .unwrap_or(1);
        self.show_output(&item.path, channel, &new);
    }

    /// Why a command ended without an exit code of its own (it could not start, the sandbox
    /// refused it, it timed out, a restart interrupted it), once, from its first channel: the
    /// exit line says the rest.
    pub(super) fn channel_failure(&mut self, item: &HistoryItem) {
        let Some(outcome) = item.outcome.as_deref() else {
            return;
        };
        let exited = matches!(item.failure(), Some(FailureKind::Exit { .. }));
        if item.state != State::Failed || !item.path.ends_with("_1") || exited {
            return;
        }
        if self.printed.insert(item.path.clone(), item.state) == Some(State::Failed) {
            return;
        }
        self.view.end_stream();
        let line = format!("  {}", self.view.style.red(&format!("✗ {outcome}")));
        self.view.line(&line);
    }

    pub(super) fn show_output(&mut self, key: &str, channel: u64, text: &str) {
        let shown = self.channels.entry(key.to_owned()).or_default();
        shown.partial.push_str(text);
        let Some(end) = shown.partial.rfind('\n') else {
            return;
        };
        let done: String = shown.partial.drain(..=end).collect();
        for line in done.lines() {
            let line = self.output_line(channel, line);
            self.view.line(&line);
        }
    }

    pub(super) fn output_line(&self, channel: u64, line: &str) -> String {
        let style = self.view.style;
        let text = if channel == 2 {
            style.red(line)
        } else {
            line.to_owned()
        };
        format!("    {} {text}", style.dim("│"))
    }

    /// Shows what is left of a stream's channels (text after their last newline).
    pub(super) fn flush_channels(&mut self, proposal: &str) {
        let keys: Vec<String> = self
            .channels
            .keys()
            .filter(|k| k.starts_with(proposal) && k.len() > proposal.len())
            .cloned()
            .collect();
        for key in keys {
            let channel = key
                .rsplit('_')
                .next()
                .and_then(|c| c.parse().ok())
                .unwrap_or(1);
            let rest = self
                .channels
                .get_mut(&key)
                .map(|s| std::mem::take(&mut s.partial))
                .unwrap_or_default();
            if !rest.is_empty() {
                let line = self.output_line(channel, &rest);
                self.view.line(&line);
            }
        }
    }

    pub(super) fn exit_line(&mut self, code: i64, took: Option<String>) {
        let took = took.map(|t| format!(" ({t})")).unwrap_or_default();
        let line = if code == 0 {
            self.view.style.green(&format!("✓ exit 0{took}"))
        } else {
            self.view.style.red(&format!("✗ exit {code}{took}"))
        };
        self.view.line(&format!("    {line}"));
    }

    /// What the command this process runs produced.
    pub(super) async fn output(&mut self, out: Option<runner::Output>) {
        let Some(running) = self.running.as_ref() else {
            return;
        };
        let (run, path) = (running.run.clone(), running.path.clone());
        match out {
            Some(runner::Output::Chunk { channel, text }) => {
                let params = StreamParams {
                    run,
                    path: path.clone(),
                    channel,
                    chunk: text.clone(),
                };
                if let Err(e) = self.session.client.stream(&params).await {
                    self.warn(&format!("output not recorded: {e}"));
                }
                self.show_output(&format!("{path}_{channel}"), u64::from(channel), &text);
            }
            Some(runner::Output::Exited(result)) => {
                let duration = running.duration();
                self.flush_channels(&path);
                let end = match (&result, self.aborting) {
                    (Ok(Some(code)), false) => {
                        self.exit_line(i64::from(*code), Some(duration.clone()));
                        Ok(StreamCompletedParams {
                            run,
                            path: path.clone(),
                            exit_code: Some(*code),
                            duration: Some(duration),
                        })
                    }
                    (Err(why), _) => {
                        self.warn(why);
                        Err(aborted(run, &path, why, duration))
                    }
                    _ => {
                        let why = "interrupted (Ctrl-C)";
                        self.warn(&format!("command stopped: {why}"));
                        Err(aborted(run, &path, why, duration))
                    }
                };
                self.exits.insert(path);
                let ended = match end {
                    Ok(completed) => self.session.client.stream_completed(&completed).await,
                    Err(aborted) => self.session.client.stream_aborted(&aborted).await,
                };
                if let Err(e) = ended {
                    self.warn(&format!("the command's end was not recorded: {e}"));
                }
                self.running = None;
                self.status.activity = "working".into();
            }
            None => self.running = None,
        }
    }
}

/// The end of a command that did not exit by itself: `stream/aborted` with why.
fn aborted(run: String, path: &str, why: &str, duration: String) -> StreamAbortedParams {
    StreamAbortedParams {
        run,
        path: path.to_owned(),
        reason: Some(why.to_owned()),
        duration: Some(duration),
    }
}
