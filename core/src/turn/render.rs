//! Streamed model text for clients (`ui/render`): deltas gathered so that a run sends at most
//! one frame per interval, whatever rate the model streams at.
//!
//! A model streams a token at a time; a frame per token costs every client of the project a
//! message for no visible gain. The turn's first text goes out at once (the stream has
//! started), later text waits at most one interval, and the caller sends what is left the
//! moment the reply ends — so gathering never delays the turn itself.

use std::time::{Duration, Instant};

/// The interval the server gathers over: 40 frames a second per run still reads as a live
/// stream.
pub const RENDER_EVERY: Duration = Duration::from_millis(25);

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
    pending: String,
    sent_at: Option<Instant>,
}

impl Gather {
    /// Gathers over `every`.
    pub fn new(every: Duration) -> Self {
        Gather {
            every,
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

    /// The pending text as a render sent at `now`, whether due or not (the stream ended, or
    /// something else must go out after it); `None` when nothing is pending.
    pub fn take(&mut self, now: Instant) -> Option<Render> {
        if self.pending.is_empty() {
            return None;
        }
        let append = self.sent_at.replace(now).is_some();
        Some(Render {
            text: std::mem::take(&mut self.pending),
            append,
        })
    }

    /// The pending text as a render if it is due at `now`.
    pub fn take_due(&mut self, now: Instant) -> Option<Render> {
        match self.due(now) {
            Some(due) if due <= now => self.take(now),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn render(text: &str, append: bool) -> Option<Render> {
        Some(Render {
            text: text.into(),
            append,
        })
    }

    #[test]
    fn the_first_text_goes_out_at_once() {
        let t0 = Instant::now();
        let mut gather = Gather::new(RENDER_EVERY);
        gather.push("Hel");
        assert_eq!(gather.due(t0), Some(t0));
        assert_eq!(gather.take_due(t0), render("Hel", false));
        assert_eq!(gather.due(t0), None);
    }

    #[test]
    fn later_text_waits_one_interval_and_goes_out_together() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut gather = Gather::new(RENDER_EVERY);
        gather.push("a");
        assert_eq!(gather.take_due(t0), render("a", false));
        gather.push("b");
        assert_eq!(gather.take_due(ms(5)), None);
        gather.push("c");
        assert_eq!(gather.due(ms(10)), Some(ms(25)));
        assert_eq!(gather.take_due(ms(24)), None);
        assert_eq!(gather.take_due(ms(25)), render("bc", true));
        gather.push("d");
        assert_eq!(gather.due(ms(26)), Some(ms(50)));
    }

    #[test]
    fn text_after_a_quiet_spell_goes_out_at_once() {
        let t0 = Instant::now();
        let mut gather = Gather::new(RENDER_EVERY);
        gather.push("a");
        assert_eq!(gather.take_due(t0), render("a", false));
        let later = t0 + Duration::from_secs(1);
        gather.push("b");
        assert_eq!(gather.take_due(later), render("b", true));
    }

    #[test]
    fn what_is_pending_can_be_taken_before_it_is_due() {
        let t0 = Instant::now();
        let mut gather = Gather::new(RENDER_EVERY);
        gather.push("a");
        assert_eq!(gather.take(t0), render("a", false));
        gather.push("b");
        assert_eq!(
            gather.take(t0 + Duration::from_millis(1)),
            render("b", true)
        );
        assert_eq!(gather.take(t0 + Duration::from_millis(2)), None);
    }

    #[test]
    fn empty_deltas_send_nothing() {
        let t0 = Instant::now();
        let mut gather = Gather::new(RENDER_EVERY);
        gather.push("");
        assert_eq!(gather.due(t0), None);
        assert_eq!(gather.take(t0), None);
        gather.push("x");
        assert_eq!(gather.take_due(t0), render("x", false));
    }
}
