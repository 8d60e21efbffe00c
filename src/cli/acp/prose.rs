//! The model's streamed reply as an editor shows it: the prose, without the tool tags the
//! server parses (their results arrive as tool calls of their own), and what the model thinks
//! (`<think>`) apart, as the agent's thought.
//!
//! The reply streams in pieces cut anywhere, inside a tag too: [`Prose`] keeps what it cannot
//! decide yet (a `<` that may open a tag) until the next piece.

/// Where a piece of the reply goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// What the model says: `agent_message_chunk`.
    Text(String),
    /// What it thinks: `agent_thought_chunk`.
    Thought(String),
}

/// The tags of the model's tools (their bodies are the tools' arguments, not prose).
const TOOL_TAGS: &[&str] = &[
    "get", "set", "cp", "mv", "rm", "sh", "env", "search", "update", "ask_user", "think", "known",
    "unknown", "call",
];

/// The longest tag name read before deciding a `<` opens none.
const LONGEST_TAG: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Prose.
    Text,
    /// After a `<`: what may be a tool tag's start, held until it is decided.
    Open(String),
    /// Inside a tool tag's opening `<name …`, up to its `>`; `quote`: inside an attribute value.
    Attributes {
        name: String,
        quote: Option<char>,
        slash: bool,
    },
    /// A closing tag met outside its body: skipped up to its `>`.
    StrayClose,
    /// Inside a tool tag's body, up to `</name>`; `close`: what may be that closing tag.
    Body { name: String, close: String },
}

/// The reply's prose, piece by piece.
#[derive(Debug)]
pub struct Prose {
    state: State,
}

impl Default for Prose {
    fn default() -> Self {
        Prose { state: State::Text }
    }
}

impl Prose {
    /// A filter at the start of a reply.
    pub fn new() -> Prose {
        Prose::default()
    }

    /// The prose and thought of the next piece of the reply.
    pub fn push(&mut self, text: &str) -> Vec<Piece> {
        let mut out = Out::default();
        for c in text.chars() {
            self.step(c, &mut out);
        }
        out.pieces
    }

    fn step(&mut self, c: char, out: &mut Out) {
        let state = std::mem::replace(&mut self.state, State::Text);
        self.state = match state {
            State::Text if c == '<' => State::Open("<".to_owned()),
            State::Text => {
                out.text(c);
                State::Text
            }
            State::Open(mut held) => {
                held.push(c);
                match decide(&held) {
                    Decision::Undecided => State::Open(held),
                    Decision::NotATag => {
                        // The `<` was prose; what follows it is read again (it may be a `<`).
                        let mut rest = held.chars();
                        rest.next();
                        out.text('<');
                        self.state = State::Text;
                        for c in rest {
                            self.step(c, out);
                        }
                        return;
                    }
                    Decision::Opens(name) if c == '>' => body(name),
                    Decision::Opens(name) => State::Attributes {
                        slash: c == '/',
                        name,
                        quote: None,
                    },
                    Decision::Closes if c == '>' => State::Text,
                    Decision::Closes => State::StrayClose,
                }
            }
            State::Attributes { name, quote, slash } => match (quote, c) {
                (Some(q), c) if c == q => State::Attributes {
                    name,
                    quote: None,
                    slash: false,
                },
                (Some(q), _) => State::Attributes {
                    name,
                    quote: Some(q),
                    slash: false,
                },
                (None, '"' | '\'') => State::Attributes {
                    name,
                    quote: Some(c),
                    slash: false,
                },
                (None, '>') if slash => State::Text,
                (None, '>') => body(name),
                (None, c) => State::Attributes {
                    name,
                    quote: None,
                    slash: c == '/',
                },
            },
            State::StrayClose if c == '>' => State::Text,
            State::StrayClose => State::StrayClose,
            State::Body { name, mut close } => {
                let thinking = name == "think";
                if close.is_empty() && c != '<' {
                    if thinking {
                        out.thought(c);
                    }
                    State::Body { name, close }
                } else {
                    close.push(c);
                    let end = format!("</{name}>");
                    if close == end {
                        State::Text
                    } else if end.starts_with(&close) {
                        State::Body { name, close }
                    } else {
                        // Not the end after all: it was the body's.
                        let held = std::mem::take(&mut close);
                        let (last, before) = match held.char_indices().last() {
                            Some((i, last)) => (last, &held[..i]),
                            None => (c, ""),
                        };
                        if thinking {
                            for c in before.chars() {
                                out.thought(c);
                            }
                        }
                        self.state = State::Body { name, close };
                        if last == '<' {
                            self.step(last, out);
                        } else if thinking {
                            out.thought(last);
                        }
                        return;
                    }
                }
            }
        };
    }
}

/// A tool tag's body begins.
fn body(name: String) -> State {
    State::Body {
        name,
        close: String::new(),
    }
}

enum Decision {
    Undecided,
    NotATag,
    /// The opening tag of the tool `name`.
    Opens(String),
    /// A closing tag of a tool.
    Closes,
}

/// What `held` (from a `<` up to the character just read) is.
fn decide(held: &str) -> Decision {
    let rest = &held[1..];
    let (closing, name_and_next) = match rest.strip_prefix('/') {
        Some(after) => (true, after),
        None => (false, rest),
    };
    let Some(next) = name_and_next.chars().last() else {
        return Decision::Undecided;
    };
    if next.is_ascii_lowercase() || next == '_' {
        return if name_and_next.len() > LONGEST_TAG {
            Decision::NotATag
        } else {
            Decision::Undecided
        };
    }
    let name = &name_and_next[..name_and_next.len() - next.len_utf8()];
    let ends_name = next.is_whitespace() || next == '>' || next == '/';
    if !ends_name || !TOOL_TAGS.contains(&name) || (closing && next != '>') {
        return Decision::NotATag;
    }
    if closing {
        Decision::Closes
    } else {
        Decision::Opens(name.to_owned())
    }
}

/// Pieces gathered: consecutive characters of one kind make one piece.
#[derive(Default)]
struct Out {
    pieces: Vec<Piece>,
}

impl Out {
    fn text(&mut self, c: char) {
        match self.pieces.last_mut() {
            Some(Piece::Text(text)) => text.push(c),
            _ => self.pieces.push(Piece::Text(c.to_string())),
        }
    }

    fn thought(&mut self, c: char) {
        match self.pieces.last_mut() {
            Some(Piece::Thought(text)) => text.push(c),
            _ => self.pieces.push(Piece::Thought(c.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn text(s: &str) -> Piece {
        Piece::Text(s.to_owned())
    }

    fn thought(s: &str) -> Piece {
        Piece::Thought(s.to_owned())
    }

    /// The whole reply at once, and the same reply cut after every character, give the same
    /// prose and thought.
    fn filtered(reply: &str) -> Vec<Piece> {
        let whole = Prose::new().push(reply);
        let mut cut = Prose::new();
        let mut pieces: Vec<Piece> = Vec::new();
        for c in reply.chars() {
            for piece in cut.push(&c.to_string()) {
                match (pieces.last_mut(), piece) {
                    (Some(Piece::Text(a)), Piece::Text(b)) => a.push_str(&b),
                    (Some(Piece::Thought(a)), Piece::Thought(b)) => a.push_str(&b),
                    (_, piece) => pieces.push(piece),
                }
            }
        }
        assert_eq!(whole, pieces, "cut anywhere, {reply:?} reads the same");
        whole
    }

    #[test]
    fn tool_tags_and_their_bodies_are_not_prose() {
        assert_eq!(
            filtered("Reading it.\n<get path=\"src/a.rs\"/>\n<sh>cargo test</sh>\nDone."),
            vec![text("Reading it.\n\n\nDone.")]
        );
        assert_eq!(
            filtered("<set path=\"a.rs\">fn a() { if x < 1 { b() } }</set>ok"),
            vec![text("ok")]
        );
        assert_eq!(
            filtered("<update status=\"200\">The fix is in.</update>"),
            Vec::<Piece>::new()
        );
    }

    #[test]
    fn what_the_model_thinks_is_its_thought() {
        assert_eq!(
            filtered("<think>the test fails because a < b</think>Fixing the comparison."),
            vec![
                thought("the test fails because a < b"),
                text("Fixing the comparison.")
            ]
        );
    }

    #[test]
    fn angle_brackets_of_prose_stay() {
        assert_eq!(
            filtered("Use Vec<String> when a < b, and <b>bold</b> <getter>."),
            vec![text(
                "Use Vec<String> when a < b, and <b>bold</b> <getter>."
            )]
        );
        assert_eq!(filtered("x <<get/>y"), vec![text("x <y")]);
    }

    #[test]
    fn attribute_values_may_hold_angle_brackets() {
        assert_eq!(
            filtered("<sh command=\"ls > out\"/>after"),
            vec![text("after")]
        );
        assert_eq!(
            filtered("<get path='a>b'>x</get>after"),
            vec![text("after")]
        );
    }

    #[test]
    fn a_stray_closing_tag_is_dropped() {
        assert_eq!(filtered("done</update> now"), vec![text("done now")]);
    }
}
