//! Streamed model text for clients (`ui/render`): deltas gathered so that a run sends text at
//! most once per interval, whatever rate the model streams at, in frames of bounded size.
//!
//! A model streams a token at a time; a frame per token costs every client of the project a
//! message for no visible gain. The turn's first text goes out at once (the stream has
//! started), later text waits at most one interval, and the caller sends what is left the
//! moment the reply ends — so gathering never delays the turn itself.
//!
//! What goes out at once is cut into pieces of at most [`RENDER_PIECE_BYTES`], sent in order:
//! a burst of text (a slow client's interval, a provider that sends its reply in one chunk)
//! never becomes one huge notification that every client of the project must take whole.

use std::time::{Duration, Instant};

/// The interval the server gathers over: 40 frames a second per run still reads as a live
/// stream.
pub const RENDER_EVERY: Duration = Duration::from_millis(25);

/// The most text one `ui/render` carries: 64 KiB, a few frames' worth of any live stream.
pub const RENDER_PIECE_BYTES: usize = 64 * 1024;

/// One `ui/render`: the text and whether it continues the turn's earlier text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Render {
    /// The text since the previous render.
    pub text: String,
    /// False for the turn's first render.
    pub append: bool,
}

/// The text of one turn's stream not yet sent, and when text last went out.
#[derive(Debug, Clone)]
pub struct Gather {
    every: Duration,
    /// The most text one render carries.
    piece_bytes: usize,
    pending: String,
    sent_at: Option<Instant>,
}

impl Gather {
    /// Gathers over `every`, into renders of at most `piece_bytes` of text each.
    pub fn new(every: Duration, piece_bytes: usize) -> Self {
        Gather {
            every,
            piece_bytes,
            pending: String::new(),
            sent_at: None,
        }
    }

    /// Adds a delta (an empty one changes nothing).
    pub fn push(&mut self, delta: &str) {
        self.pending.push_str(delta);
    }

    /// When the pending text is to go out: `now` for the turn's first, one interval after the
    /// last render otherwise; `None` while nothing is pending.
    pub fn due(&self, now: Instant) -> Option<Instant> {
        if self.pending.is_empty() {
            return None;
        }
        Some(self.sent_at.map_or(now, |at| at + self.every))
    }

    /// The pending text as renders sent at `now`, in order, whether due or not (the stream
    /// ended, or something else must go out after it); none when nothing is pending.
    pub fn take(&mut self, now: Instant) -> Vec<Render> {
        if self.pending.is_empty() {
            return Vec::new();
        }
        let first_append = self.sent_at.replace(now).is_some();
        let pending = std::mem::take(&mut self.pending);
        split_bounded(&pending, self.piece_bytes)
            .into_iter()
            .enumerate()
            .map(|(i, text)| Render {
                text: text.to_owned(),
                append: first_append || i > 0,
            })
            .collect()
    }

    /// The pending text as renders if it is due at `now`.
    pub fn take_due(&mut self, now: Instant) -> Vec<Render> {
        match self.due(now) {
            Some(due) if due <= now => self.take(now),
            _ => Vec::new(),
        }
    }
}

/// `text` cut, in order, into pieces of at most `max` bytes that each end on a character
/// boundary (a piece holds at least one character, however small `max`).
pub fn split_bounded(text: &str, max: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = max.min(rest.len());
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        if end == 0 {
            end = rest.chars().next().map_or(rest.len(), char::len_utf8);
        }
        let (piece, tail) = rest.split_at(end);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn render(text: &str, append: bool) -> Vec<Render> {
        vec![Render {
            text: text.into(),
            append,
        }]
    }

    fn gather() -> Gather {
        Gather::new(RENDER_EVERY, RENDER_PIECE_BYTES)
    }

    /// The turn's first text goes out the moment it arrives.
    #[test]
    fn the_first_text_goes_out_at_once() {
        let t0 = Instant::now();
        let mut gather = gather();
        gather.push("Hel");
        assert_eq!(gather.due(t0), Some(t0));
        assert_eq!(gather.take_due(t0), render("Hel", false));
        assert_eq!(gather.due(t0), None);
    }

    /// Text after the first waits until one interval after the last render, then goes out as one.
    #[test]
    fn later_text_waits_one_interval_and_goes_out_together() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut gather = gather();
        gather.push("a");
        assert_eq!(gather.take_due(t0), render("a", false));
        gather.push("b");
        assert_eq!(gather.take_due(ms(5)), vec![]);
        gather.push("c");
        assert_eq!(gather.due(ms(10)), Some(ms(25)));
        assert_eq!(gather.take_due(ms(24)), vec![]);
        assert_eq!(gather.take_due(ms(25)), render("bc", true));
        gather.push("d");
        assert_eq!(gather.due(ms(26)), Some(ms(50)));
    }

    /// Text after a pause longer than the interval goes out at once.
    #[test]
    fn text_after_a_quiet_spell_goes_out_at_once() {
        let t0 = Instant::now();
        let mut gather = gather();
        gather.push("a");
        assert_eq!(gather.take_due(t0), render("a", false));
        let later = t0 + Duration::from_secs(1);
        gather.push("b");
        assert_eq!(gather.take_due(later), render("b", true));
    }

    /// Pending text can be taken before it is due (the stream ended, or progress must follow it).
    #[test]
    fn what_is_pending_can_be_taken_before_it_is_due() {
        let t0 = Instant::now();
        let mut gather = gather();
        gather.push("a");
        assert_eq!(gather.take(t0), render("a", false));
        gather.push("b");
        assert_eq!(
            gather.take(t0 + Duration::from_millis(1)),
            render("b", true)
        );
        assert_eq!(gather.take(t0 + Duration::from_millis(2)), vec![]);
    }

    /// Empty deltas neither make text due nor send a render.
    #[test]
    fn empty_deltas_send_nothing() {
        let t0 = Instant::now();
        let mut gather = gather();
        gather.push("");
        assert_eq!(gather.due(t0), None);
        assert_eq!(gather.take(t0), vec![]);
        gather.push("x");
        assert_eq!(gather.take_due(t0), render("x", false));
    }

    /// Text is cut into pieces of at most the bound, each ending on a character boundary, and
    /// the pieces join back into the text exactly.
    #[test]
    fn text_splits_on_character_boundaries_within_the_bound() {
        let cases: [(&str, usize, Vec<&str>); 7] = [
            ("", 4, vec![]),
            ("abc", 4, vec!["abc"]),
            ("abcdefghij", 4, vec!["abcd", "efgh", "ij"]),
            ("abcd", 4, vec!["abcd"]),
            // é is two bytes, 😀 four: a cut never falls inside one.
            ("aéé", 4, vec!["aé", "é"]),
            ("😀😀x", 5, vec!["😀", "😀x"]),
            // A bound smaller than a character still moves on, one character at a time.
            ("é😀", 1, vec!["é", "😀"]),
        ];
        for (text, max, expected) in cases {
            let pieces = split_bounded(text, max);
            assert_eq!(pieces, expected, "{text:?} by {max}");
            assert_eq!(pieces.concat(), text, "{text:?} by {max}");
        }
    }

    /// A burst larger than a piece goes out as several renders in order: only the turn's very
    /// first is not an append, and nothing is lost or sent twice.
    #[test]
    fn a_burst_goes_out_in_bounded_pieces() {
        let t0 = Instant::now();
        let mut gather = Gather::new(RENDER_EVERY, 4);
        gather.push("abcdefghij");
        let pieces = |texts: &[(&str, bool)]| -> Vec<Render> {
            texts
                .iter()
                .map(|(text, append)| Render {
                    text: (*text).into(),
                    append: *append,
                })
                .collect()
        };
        assert_eq!(
            gather.take_due(t0),
            pieces(&[("abcd", false), ("efgh", true), ("ij", true)])
        );
        gather.push("klmnop");
        assert_eq!(
            gather.take(t0 + Duration::from_millis(1)),
            pieces(&[("klmn", true), ("op", true)])
        );
    }
}
