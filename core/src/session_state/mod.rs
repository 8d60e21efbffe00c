//! Session state (`session://state`): the record of a run's work the sidecar keeps between
//! loops, and what the model reads first — its nine sections, their caps, their deterministic
//! rendering, the reading of an update the sidecar answers, and when an update is due.
//!
//! The document is Markdown: one `## <Section>` heading per section, always all nine, always
//! in the order of [`Section::ALL`], an empty section kept as its heading alone. Every section
//! is capped ([`Section::cap`]); past its cap a section keeps its first lines — the worklog its
//! last, since it grows at the end. An update is read section by section: the text under a
//! heading belongs to that section and no other (an unknown heading ends the section before
//! it, and what follows it is dropped), a section the update leaves out keeps what it held, and
//! an update with none of the headings is refused (the state stays as it was).
//!
//! Off by default (`RUMMY_SESSION_STATE`, run attribute `sessionState`): an update is a model
//! call. After a loop, an update is due once [`Thresholds`] turns or commands have passed since
//! the last one; before a fork or a summarisation it is forced whenever anything happened since.

pub mod stored;

pub use crate::config::Thresholds;
use crate::tools::strip_rationale;
use std::sync::LazyLock;

/// The entry that holds a run's session state.
pub const PATH: &str = "session://state";

/// One section of the session state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Section {
    /// A few words naming the work.
    Title,
    /// Where the work stands.
    CurrentState,
    /// What the user wants.
    UserIntent,
    /// The files being read or changed.
    ActiveFiles,
    /// What was decided, and why.
    Decisions,
    /// What must hold.
    Constraints,
    /// What went wrong and how it was fixed.
    ErrorsAndCorrections,
    /// What comes next.
    NextSteps,
    /// What was done, oldest first.
    Worklog,
}

/// Longest title, in characters (one line).
pub const TITLE_MAX_CHARS: usize = 120;
/// Longest section other than the title and the worklog, in characters.
pub const SECTION_MAX_CHARS: usize = 1_000;
/// Longest worklog, in characters.
pub const WORKLOG_MAX_CHARS: usize = 1_500;
/// Longest account of the activity since the last update sent to the sidecar, in characters
/// (its oldest lines go first).
pub const ACTIVITY_MAX_CHARS: usize = 8_000;
/// Most characters of one result's body quoted in the activity.
pub const EXCERPT_CHARS: usize = 240;

impl Section {
    /// Every section, in document order.
    pub const ALL: [Section; 9] = [
        Section::Title,
        Section::CurrentState,
        Section::UserIntent,
        Section::ActiveFiles,
        Section::Decisions,
        Section::Constraints,
        Section::ErrorsAndCorrections,
        Section::NextSteps,
        Section::Worklog,
    ];

    /// Its heading.
    pub fn heading(self) -> &'static str {
        match self {
            Section::Title => "Title",
            Section::CurrentState => "Current state",
            Section::UserIntent => "User intent",
            Section::ActiveFiles => "Active files",
            Section::Decisions => "Decisions",
            Section::Constraints => "Constraints",
            Section::ErrorsAndCorrections => "Errors and corrections",
            Section::NextSteps => "Next steps",
            Section::Worklog => "Worklog",
        }
    }

    /// Its cap, in characters.
    pub fn cap(self) -> usize {
        match self {
            Section::Title => TITLE_MAX_CHARS,
            Section::Worklog => WORKLOG_MAX_CHARS,
            _ => SECTION_MAX_CHARS,
        }
    }

    /// The section a heading names: its own words, any case, a trailing `:` or an `&` for
    /// "and" allowed.
    pub fn named(heading: &str) -> Option<Section> {
        let wanted = normalise(heading);
        Section::ALL
            .into_iter()
            .find(|s| normalise(s.heading()) == wanted)
    }

    fn index(self) -> usize {
        Section::ALL.iter().position(|s| *s == self).unwrap_or(0)
    }
}

/// A heading's words, lower-case, single-spaced, `&` read as "and", without a trailing `:`.
fn normalise(heading: &str) -> String {
    heading
        .trim()
        .trim_end_matches(':')
        .replace('&', " and ")
        .split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A run's session state: each section's text, capped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionState {
    sections: [String; 9],
}

impl SessionState {
    /// The empty state: nine empty sections.
    pub fn empty() -> SessionState {
        SessionState::default()
    }

    /// A section's text.
    pub fn get(&self, section: Section) -> &str {
        &self.sections[section.index()]
    }

    /// Sets a section's text, capped (the title to one line).
    pub fn set(&mut self, section: Section, text: &str) {
        self.sections[section.index()] = capped(section, text);
    }

    /// The document: every heading in order, each followed by its text (none for an empty
    /// section), sections separated by a blank line, one newline at the end. The same state
    /// always renders the same text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for section in Section::ALL {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str("## ");
            out.push_str(section.heading());
            out.push('\n');
            let text = self.get(section);
            if !text.is_empty() {
                out.push_str(text);
                out.push('\n');
            }
        }
        out
    }

    /// A stored document read back (what [`SessionState::render`] wrote; anything else is read
    /// as an update of the empty state, and what it does not hold stays empty).
    pub fn read(document: &str) -> SessionState {
        SessionState::empty().updated(document).unwrap_or_default()
    }

    /// This state updated by the sidecar's `reply`: each section the reply holds replaced by
    /// its text there (capped), the others kept. `Err` when the reply holds none of the
    /// headings: it is no session state, and the state stays as it was.
    pub fn updated(&self, reply: &str) -> Result<SessionState, String> {
        let reply = unfenced(reply);
        let mut found: Vec<(Section, Vec<&str>)> = Vec::new();
        // `None` under an unknown heading: its lines belong to no section.
        let mut current: Option<usize> = None;
        for line in reply.lines() {
            if let Some(heading) = heading_of(line) {
                match Section::named(heading) {
                    Some(section) => {
                        found.retain(|(s, _)| *s != section);
                        found.push((section, Vec::new()));
                        current = Some(found.len() - 1);
                    }
                    None => current = None,
                }
                continue;
            }
            if let Some(at) = current {
                found[at].1.push(line);
            }
        }
        if found.is_empty() {
            return Err(format!(
                "the reply holds none of the session state's headings (## {}, …)",
                Section::Title.heading()
            ));
        }
        let mut next = self.clone();
        for (section, lines) in found {
            next.set(section, &lines.join("\n"));
        }
        Ok(next)
    }
}

/// A Markdown heading's text (`#` to `###`, then a space); `None` for any other line.
fn heading_of(line: &str) -> Option<&str> {
    let trimmed = line.trim_start();
    let hashes = trimmed.len() - trimmed.trim_start_matches('#').len();
    if !(1..=3).contains(&hashes) {
        return None;
    }
    trimmed[hashes..].strip_prefix(' ').map(str::trim)
}

/// A reply without the code fence a model may wrap it in.
fn unfenced(reply: &str) -> &str {
    let trimmed = reply.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    let body = rest.split_once('\n').map_or("", |(_, body)| body);
    body.trim_end().strip_suffix("```").unwrap_or(body).trim()
}

/// A section's text within its cap: blank lines at its ends gone; the title one line; past the
/// cap, the first whole lines that fit — the worklog's last — or, when not even one does, the
/// start of the first (the worklog's end of the last) cut to fit with a `…`.
fn capped(section: Section, text: &str) -> String {
    let cap = section.cap();
    if section == Section::Title {
        let line = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("");
        return cut(line, cap);
    }
    let lines: Vec<&str> = text.trim_matches('\n').lines().map(str::trim_end).collect();
    let text = lines.join("\n").trim().to_owned();
    let text = if text.is_empty() {
        String::new()
    } else {
        lines.join("\n").trim_matches('\n').to_owned()
    };
    if text.chars().count() <= cap {
        return text;
    }
    let newest_first = section == Section::Worklog;
    let mut kept: Vec<&str> = Vec::new();
    let mut used = 0;
    let ordered: Vec<&str> = if newest_first {
        lines.iter().rev().copied().collect()
    } else {
        lines.clone()
    };
    for line in &ordered {
        let cost = line.chars().count() + usize::from(!kept.is_empty());
        if used + cost > cap {
            break;
        }
        used += cost;
        kept.push(line);
    }
    if kept.is_empty() {
        let line = ordered.first().copied().unwrap_or("");
        return if newest_first {
            cut_start(line, cap)
        } else {
            cut(line, cap)
        };
    }
    if newest_first {
        kept.reverse();
    }
    kept.join("\n")
}

/// The first `cap` characters of `line`, the last of them `…` when it was longer.
fn cut(line: &str, cap: usize) -> String {
    if line.chars().count() <= cap {
        return line.to_owned();
    }
    let mut out: String = line.chars().take(cap.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The last `cap` characters of `line`, the first of them `…` when it was longer.
fn cut_start(line: &str, cap: usize) -> String {
    let count = line.chars().count();
    if count <= cap {
        return line.to_owned();
    }
    let mut out = String::from('…');
    out.extend(line.chars().skip(count - cap.saturating_sub(1)));
    out
}

/// Why an update is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occasion {
    /// A loop ended: due once the thresholds passed.
    LoopEnd,
    /// The run is about to be forked: the fork starts from it.
    Fork,
    /// The run's history is about to be folded into its summary.
    Summary,
}

impl Occasion {
    /// Its name, as logs show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Occasion::LoopEnd => "loop_end",
            Occasion::Fork => "fork",
            Occasion::Summary => "summary",
        }
    }
}

/// What happened since the last update.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Turns begun since.
    pub turns: u32,
    /// Commands the model gave since (a result each).
    pub commands: u32,
}

/// Whether an update is due: after a loop, once either threshold is reached; before a fork or a
/// summary, whenever anything happened since the last one. Never when nothing did.
pub fn due(occasion: Occasion, progress: Progress, thresholds: Thresholds) -> bool {
    if progress.turns == 0 && progress.commands == 0 {
        return false;
    }
    match occasion {
        Occasion::LoopEnd => {
            progress.turns >= thresholds.min_turns || progress.commands >= thresholds.min_commands
        }
        Occasion::Fork | Occasion::Summary => true,
    }
}

/// One thing that happened since the last update, as the sidecar reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A prompt the run was given.
    Prompt {
        /// Its turn.
        turn: i32,
        /// Its text.
        text: String,
    },
    /// A command's result.
    Result {
        /// Its turn.
        turn: i32,
        /// The tool.
        tool: String,
        /// What it acted on (a path, a command).
        target: String,
        /// `resolved`, `failed`, …, with the outcome when there is one.
        state: String,
        /// Its body.
        body: String,
    },
}

impl Event {
    fn line(&self) -> String {
        match self {
            Event::Prompt { turn, text } => {
                format!("turn {turn} prompt: {}", excerpt(text, EXCERPT_CHARS * 2))
            }
            Event::Result {
                turn,
                tool,
                target,
                state,
                body,
            } => {
                let mut line = format!("turn {turn} {tool} {target} [{state}]");
                let body = excerpt(body, EXCERPT_CHARS);
                if !body.is_empty() {
                    line.push_str(": ");
                    line.push_str(&body);
                }
                line
            }
        }
    }
}

/// Text on one line, at most `chars` characters.
fn excerpt(text: &str, chars: usize) -> String {
    cut(
        &text.split_whitespace().collect::<Vec<_>>().join(" "),
        chars,
    )
}

/// The system prompt of an update.
pub fn update_prompt() -> &'static str {
    static PROMPT: LazyLock<String> = LazyLock::new(|| strip_rationale(include_str!("update.md")));
    &PROMPT
}

/// The input of an update: the current document, then what happened since, oldest first
/// (the oldest left out past [`ACTIVITY_MAX_CHARS`]).
pub fn update_input(current: &SessionState, events: &[Event]) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut used = 0;
    for event in events.iter().rev() {
        let line = event.line();
        used += line.chars().count() + 1;
        if used > ACTIVITY_MAX_CHARS {
            break;
        }
        lines.push(line);
    }
    lines.reverse();
    let dropped = events.len() - lines.len();
    let mut input = String::from("Current session state:\n\n");
    input.push_str(&current.render());
    input.push_str("\nActivity since it was written, oldest first:\n\n");
    if dropped > 0 {
        input.push_str(&format!("({dropped} earlier events left out)\n"));
    }
    for line in &lines {
        input.push_str(line);
        input.push('\n');
    }
    input
}

/// The sentence that opens the state in the system message.
pub fn intro() -> &'static str {
    static INTRO: LazyLock<String> = LazyLock::new(|| strip_rationale(include_str!("intro.md")));
    &INTRO
}

#[cfg(test)]
mod tests;
