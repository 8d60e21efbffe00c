//! Replies are bounded: how much of a model's answer the server holds before it cuts the call off.
//!
//! `RUMMY_MAX_REPLY_BYTES` bounds a reply's text and reasoning together, as
//! they accumulate. The raw bytes that carry them are bounded too, since a
//! provider can send a body or a single stream event of any size before any
//! text is read out of it: a whole (non-streamed) body, and any one stream
//! event, may take twice the limit plus [`ENVELOPE_BYTES`] — room for JSON's
//! escapes and envelope, and for a Responses stream's last event, which
//! repeats the whole answer.

use super::Completion;

/// Raw bytes allowed beyond twice the limit: a reply's JSON envelope (ids, usage, field names).
pub const ENVELOPE_BYTES: usize = 64 * 1024;

/// The most of one reply the server holds (`RUMMY_MAX_REPLY_BYTES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyLimit {
    max_bytes: usize,
}

/// A reply that passed its limit: the call is cut off, not retried (it would only repeat).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the reply passed RUMMY_MAX_REPLY_BYTES ({limit} bytes) and was cut off")]
pub struct TooLarge {
    /// The limit it passed, `RUMMY_MAX_REPLY_BYTES`.
    pub limit: usize,
}

impl ReplyLimit {
    /// A limit of `max_bytes` of text and reasoning.
    pub fn new(max_bytes: usize) -> ReplyLimit {
        ReplyLimit { max_bytes }
    }

    /// The text and reasoning bytes a reply may hold.
    pub fn max_bytes(self) -> usize {
        self.max_bytes
    }

    /// The raw bytes a whole body, or one stream event, may take.
    pub fn max_raw_bytes(self) -> usize {
        self.max_bytes
            .saturating_mul(2)
            .saturating_add(ENVELOPE_BYTES)
    }

    /// Whether `held` bytes of text and reasoning are within the limit.
    pub fn check(self, held: usize) -> Result<(), TooLarge> {
        self.within(held, self.max_bytes)
    }

    /// Whether `raw` bytes of a body or stream event are within the raw bound.
    pub fn check_raw(self, raw: usize) -> Result<(), TooLarge> {
        self.within(raw, self.max_raw_bytes())
    }

    /// Whether a whole answer's text and reasoning are within the limit.
    pub fn check_completion(self, completion: &Completion) -> Result<(), TooLarge> {
        let reasoning = completion.reasoning.as_ref().map_or(0, String::len);
        self.check(completion.content.len().saturating_add(reasoning))
    }

    fn within(self, bytes: usize, bound: usize) -> Result<(), TooLarge> {
        if bytes > bound {
            return Err(TooLarge {
                limit: self.max_bytes,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Text and reasoning may fill the limit exactly; one byte more is too large, and raw bytes get twice the limit plus the envelope.
    #[test]
    fn limits_hold_up_to_the_byte() {
        let limit = ReplyLimit::new(100);
        let too_large = Err(TooLarge { limit: 100 });
        let answer = |content: usize, reasoning: Option<usize>| Completion {
            content: "x".repeat(content),
            reasoning: reasoning.map(|n| "r".repeat(n)),
            ..Completion::default()
        };
        assert_eq!(
            [
                limit.check(0),
                limit.check(100),
                limit.check(101),
                limit.check(usize::MAX),
                limit.check_raw(200 + ENVELOPE_BYTES),
                limit.check_raw(201 + ENVELOPE_BYTES),
                limit.check_completion(&answer(60, Some(40))),
                limit.check_completion(&answer(60, Some(41))),
                limit.check_completion(&answer(101, None)),
            ],
            [
                Ok(()),
                Ok(()),
                too_large,
                too_large,
                Ok(()),
                too_large,
                Ok(()),
                too_large,
                too_large,
            ]
        );
        assert_eq!(
            ReplyLimit::new(usize::MAX).max_raw_bytes(),
            usize::MAX,
            "the raw bound saturates"
        );
    }
}
