//! What a person sees: lines printed in order, the model's text as it streams, and — on a
//! terminal — a status line that stays at the bottom.
//!
//! On a terminal the bottom of the screen is a *live area*: the streamed line still being
//! written (cut to the screen's width) and the status line. Everything else is printed above
//! it as whole lines, so the terminal's own scrollback keeps the record: the live area is
//! cleared, the lines are written, and the live area is drawn again. Piped, the same lines
//! come out plain, with no status line, no colour and no cursor movement. With `--json` only
//! the notifications come out, one JSON object per line.

pub mod style;
mod text;

pub use style::Style;
pub use text::{diff_lines, short_count, Highlighter};

use std::io::Write;

/// Where the output goes and how it looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// A terminal: the live area at the bottom.
    Terminal,
    /// A pipe or a file: plain lines.
    Plain,
    /// Notifications as NDJSON.
    Json,
}

/// The screen.
pub struct View {
    output: Output,
    /// Colours, when wanted.
    pub style: Style,
    out: std::io::Stdout,
    /// Streamed text after its last newline, not printed yet.
    partial: String,
    highlighter: Highlighter,
    status: String,
    /// Rows of the live area on screen now.
    live: usize,
    /// While a question is asked, the live area is the question (typing goes after it).
    asking: Option<String>,
}

impl View {
    /// A view for this process's stdout: a terminal unless piped or `json`.
    pub fn new(json: bool) -> View {
        use std::io::IsTerminal;
        let terminal = std::io::stdout().is_terminal();
        let output = match (json, terminal) {
            (true, _) => Output::Json,
            (false, true) => Output::Terminal,
            (false, false) => Output::Plain,
        };
        let no_color = std::env::var("NO_COLOR").ok();
        let term = std::env::var("TERM").ok();
        let colour = output == Output::Terminal
            && style::wanted(terminal, no_color.as_deref(), term.as_deref());
        View {
            output,
            style: Style::new(colour),
            out: std::io::stdout(),
            partial: String::new(),
            highlighter: Highlighter::default(),
            status: String::new(),
            live: 0,
            asking: None,
        }
    }

    /// How output is shown.
    pub fn output(&self) -> Output {
        self.output
    }

    /// Prints whole lines (nothing in JSON mode), above the live area. A streamed line still
    /// being written stays where it is (in the live area, or held back when piped), so other
    /// output never cuts it in two; [`View::end_stream`] ends it first where it must come first.
    pub fn line(&mut self, text: &str) {
        if self.output == Output::Json {
            return;
        }
        self.clear_live();
        let _ = writeln!(self.out, "{text}");
        self.draw_live();
    }

    /// Prints one notification as a JSON line (JSON mode only).
    pub fn json(&mut self, method: &str, params: &serde_json::Value) {
        if self.output == Output::Json {
            let message = serde_json::json!({ "method": method, "params": params });
            let _ = writeln!(self.out, "{message}");
            let _ = self.out.flush();
        }
    }

    /// Adds streamed model text: whole lines are printed, the rest waits in the live area.
    pub fn stream(&mut self, text: &str) {
        if self.output == Output::Json {
            return;
        }
        self.partial.push_str(text);
        let Some(end) = self.partial.rfind('\n') else {
            self.redraw();
            return;
        };
        let done: String = self.partial.drain(..=end).collect();
        self.clear_live();
        for line in done.lines() {
            let shown = self.highlighter.line(line, self.style);
            let _ = writeln!(self.out, "  {shown}");
        }
        self.draw_live();
    }

    /// Streams the model's reasoning (faint) or its text: a switch from one to the other ends
    /// the line that was being streamed.
    pub fn stream_as(&mut self, text: &str, reasoning: bool) {
        if self.highlighter.reasoning != reasoning {
            self.end_stream();
            self.highlighter.reasoning = reasoning;
        }
        self.stream(text);
    }

    /// Ends the streamed text: what waits is printed as a line of its own.
    pub fn end_stream(&mut self) {
        if self.output == Output::Json || self.partial.is_empty() {
            return;
        }
        self.commit_partial();
        self.redraw();
    }

    /// Sets the status line (shown on a terminal only).
    pub fn status(&mut self, status: String) {
        if self.status != status {
            self.status = status;
            if self.asking.is_none() {
                self.redraw();
            }
        }
    }

    /// Shows a question in the live area and leaves the cursor after it; `None` removes it.
    /// Piped, the question is printed as a line; in JSON mode it goes to stderr.
    pub fn ask(&mut self, question: Option<&str>) {
        match (self.output, question) {
            (Output::Terminal, _) => {
                self.commit_partial();
                self.clear_live();
                self.asking = question.map(str::to_owned);
                self.draw_live();
            }
            (Output::Plain, Some(q)) => {
                self.commit_partial();
                let _ = writeln!(self.out, "{q}");
                let _ = self.out.flush();
            }
            (Output::Json, Some(q)) => {
                let _ = writeln!(std::io::stderr(), "{q}");
            }
            (_, None) => {}
        }
    }

    /// Clears the live area for good (the command is ending).
    pub fn finish(&mut self) {
        self.commit_partial();
        self.clear_live();
        self.status.clear();
        let _ = self.out.flush();
    }

    fn commit_partial(&mut self) {
        if self.partial.is_empty() || self.output == Output::Json {
            return;
        }
        let line = std::mem::take(&mut self.partial);
        self.clear_live();
        let shown = self.highlighter.line(&line, self.style);
        let _ = writeln!(self.out, "  {shown}");
    }

    fn redraw(&mut self) {
        self.clear_live();
        self.draw_live();
    }

    fn clear_live(&mut self) {
        if self.output != Output::Terminal || self.live == 0 {
            return;
        }
        let _ = write!(self.out, "\r");
        if self.live > 1 {
            let _ = write!(self.out, "\x1b[{}A", self.live - 1);
        }
        let _ = write!(self.out, "\x1b[J");
        self.live = 0;
    }

    fn draw_live(&mut self) {
        if self.output != Output::Terminal {
            let _ = self.out.flush();
            return;
        }
        let width = terminal_width().saturating_sub(1).max(10);
        let mut rows = Vec::new();
        if !self.partial.is_empty() {
            rows.push(format!(
                "  {}",
                self.style
                    .dim(&tail(&self.partial, width.saturating_sub(2)))
            ));
        }
        if let Some(question) = &self.asking {
            rows.push(question.clone());
        } else if !self.status.is_empty() {
            let status = head(&self.status, width);
            let padded = format!("{status:<width$}");
            rows.push(self.style.inverse(&padded));
        }
        let _ = write!(self.out, "{}", rows.join("\n"));
        self.live = rows.len();
        let _ = self.out.flush();
    }
}

impl Drop for View {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The terminal's width in columns (80 when it cannot be read).
fn terminal_width() -> usize {
    rustix::termios::tcgetwinsize(std::io::stdout())
        .map(|size| usize::from(size.ws_col))
        .ok()
        .filter(|w| *w > 0)
        .unwrap_or(80)
}

/// The first `width` characters of `text`.
fn head(text: &str, width: usize) -> String {
    text.chars().take(width).collect()
}

/// The last `width` characters of `text` (the end of a line being written is what matters).
fn tail(text: &str, width: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(width)).collect()
}
