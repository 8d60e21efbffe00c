//! Bounded answers and pushes: how much of a body goes out inline (`RUMMY_INLINE_BODY_BYTES`),
//! the slices `getBody` reads a body in, and how many items of a list fit one message
//! (`RUMMY_MAX_MESSAGE_BYTES`). Offsets and lengths are bytes of the body's UTF-8 text; no
//! cut ever falls inside a character.

use crate::config::Limits;
use rummy_protocol::results::Entry;

/// Room kept in a message for the JSON-RPC envelope around an answer's result (`jsonrpc`, the
/// request's `id`, `result`) or a push's params (`method`, `seq`).
pub const ENVELOPE_BYTES: usize = 1024;

/// The limits an answer or a push is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// `RUMMY_INLINE_BODY_BYTES`: the most of one body sent inline.
    pub inline_body_bytes: usize,
    /// `RUMMY_MAX_MESSAGE_BYTES`: the largest message sent.
    pub max_message_bytes: usize,
}

impl Bounds {
    /// The bounds the configuration's limits set.
    pub fn of(limits: &Limits) -> Bounds {
        Bounds {
            inline_body_bytes: limits.inline_body_bytes,
            max_message_bytes: limits.max_message_bytes,
        }
    }

    /// What a result (or a push's params) may take of a message: the limit less the envelope.
    pub fn result_bytes(&self) -> usize {
        self.max_message_bytes.saturating_sub(ENVELOPE_BYTES)
    }
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds::of(&Limits::default())
    }
}

/// The largest char boundary of `text` at or below `at`.
pub fn floor_boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    let mut cut = at;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

/// A body as it goes out inline: its first `limit` bytes at most (cut back to a character's
/// start), and its whole size when that is not all of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inline<'a> {
    /// What is sent.
    pub text: &'a str,
    /// The body's whole size in bytes, when `text` is not all of it.
    pub truncated_from: Option<usize>,
}

/// `body` bounded to `limit` bytes.
pub fn inline(body: &str, limit: usize) -> Inline<'_> {
    if body.len() <= limit {
        return Inline {
            text: body,
            truncated_from: None,
        };
    }
    Inline {
        text: &body[..floor_boundary(body, limit)],
        truncated_from: Some(body.len()),
    }
}

/// A `getEntries` item with its body held to `limit` bytes (`bodyBytes`, `bodyTruncated`
/// when it is cut).
pub fn inline_entry(mut entry: Entry, limit: usize) -> Entry {
    if let Some(body) = entry.body.as_mut() {
        let cut = inline(body, limit);
        if let Some(full) = cut.truncated_from {
            let keep = cut.text.len();
            body.truncate(keep);
            entry.body_bytes = Some(i64::try_from(full).unwrap_or(i64::MAX));
            entry.body_truncated = true;
        }
    }
    entry
}

/// Why a slice cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SliceError {
    /// The offset is past the body's end (`size`).
    PastEnd {
        /// The body's size in bytes.
        size: usize,
    },
    /// The offset falls inside a character, which starts at `start`.
    InsideCharacter {
        /// Where that character starts.
        start: usize,
    },
}

/// A slice of a body: `text` starts at byte `offset`; `next` is where the next slice starts,
/// `None` when this one reaches the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice<'a> {
    /// Where the slice starts, in bytes.
    pub offset: usize,
    /// The slice.
    pub text: &'a str,
    /// Where the next slice starts, or `None` at the end.
    pub next: Option<usize>,
}

/// At most `length` bytes of `body` from byte `offset`, never cutting a character: the end
/// moves back to the start of the character it would cut, unless that leaves the slice empty,
/// in which case the slice holds that one whole character (so every slice but the last at
/// the end makes progress). An offset at the end answers an empty slice.
pub fn slice(body: &str, offset: usize, length: usize) -> Result<Slice<'_>, SliceError> {
    if offset > body.len() {
        return Err(SliceError::PastEnd { size: body.len() });
    }
    if !body.is_char_boundary(offset) {
        return Err(SliceError::InsideCharacter {
            start: floor_boundary(body, offset),
        });
    }
    let wanted = offset.saturating_add(length).min(body.len());
    let mut end = floor_boundary(body, wanted);
    if end == offset && offset < body.len() {
        end = offset + body[offset..].chars().next().map_or(0, char::len_utf8);
    }
    Ok(Slice {
        offset,
        text: &body[offset..end],
        next: (end < body.len()).then_some(end),
    })
}

/// The bytes `c` takes inside a JSON string as serde_json writes it: `"`, `\\` and the
/// controls with a short escape take two, the other controls six (`\u00XX`), anything else
/// its UTF-8 length.
fn json_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
        c if u32::from(c) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// How many bytes of `text`, from its start and never cutting a character, take at most
/// `budget` bytes written as a JSON string (without its quotes): how long a `getBody` slice
/// may be for its answer to fit a message.
pub fn json_fit(text: &str, budget: usize) -> usize {
    let mut used = 0;
    for (at, c) in text.char_indices() {
        used += json_len(c);
        if used > budget {
            return at;
        }
    }
    text.len()
}

/// How many of a list's items, serialised to `sizes` bytes each, fit `budget` bytes as one
/// JSON array (`[`, `]` and the commas between them counted).
pub fn fitting(sizes: impl IntoIterator<Item = usize>, budget: usize) -> usize {
    let mut used = 2;
    let mut count = 0;
    for size in sizes {
        used += size + usize::from(count > 0);
        if used > budget {
            break;
        }
        count += 1;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A body within the limit goes out whole; a longer one as its first bytes, cut back to
    /// a character's start, with its whole size.
    #[test]
    fn a_body_is_cut_at_a_character_boundary() {
        assert_eq!(
            inline("abc", 3),
            Inline {
                text: "abc",
                truncated_from: None
            }
        );
        // "é" is two bytes: a cut at 2 would split it.
        assert_eq!(
            inline("aé€", 2),
            Inline {
                text: "a",
                truncated_from: Some(6)
            }
        );
        assert_eq!(
            inline("aé€", 5),
            Inline {
                text: "aé",
                truncated_from: Some(6)
            }
        );
        assert_eq!(
            inline("€", 0),
            Inline {
                text: "",
                truncated_from: Some(3)
            }
        );
    }

    /// Slices read a body whole, in order, each ending before a character it would cut.
    #[test]
    fn slices_read_a_body_whole_without_cutting_characters() {
        let body = "ab€cd€";
        let mut read = String::new();
        let mut offsets = Vec::new();
        let mut next = Some(0);
        while let Some(offset) = next {
            let s = slice(body, offset, 4).unwrap();
            offsets.push((s.offset, s.text.to_owned()));
            read.push_str(s.text);
            next = s.next;
        }
        assert_eq!(read, body);
        assert_eq!(
            offsets,
            vec![
                (0, "ab".to_owned()),
                (2, "€c".to_owned()),
                (6, "d€".to_owned())
            ]
        );
    }

    /// A length smaller than the character at the offset still answers that whole character.
    #[test]
    fn a_slice_too_short_for_its_character_holds_it_whole() {
        assert_eq!(
            slice("€x", 0, 1),
            Ok(Slice {
                offset: 0,
                text: "€",
                next: Some(3)
            })
        );
    }

    /// An offset past the end or inside a character is refused, saying the size or where the
    /// character starts; an offset at the end answers an empty last slice.
    #[test]
    fn bad_offsets_are_refused() {
        assert_eq!(slice("ab", 3, 1), Err(SliceError::PastEnd { size: 2 }));
        assert_eq!(
            slice("a€", 2, 1),
            Err(SliceError::InsideCharacter { start: 1 })
        );
        assert_eq!(
            slice("ab", 2, 10),
            Ok(Slice {
                offset: 2,
                text: "",
                next: None
            })
        );
    }

    /// A slice's length for a message counts what JSON escapes: a quote two bytes, a NUL six,
    /// a non-ASCII character its UTF-8 bytes.
    #[test]
    fn json_fit_counts_escapes() {
        let text = "a\"\u{0}é";
        assert_eq!(
            serde_json::to_string(text).unwrap().len() - 2,
            1 + 2 + 6 + 2
        );
        assert_eq!(
            [0, 1, 2, 3, 8, 9, 10, 11].map(|budget| json_fit(text, budget)),
            [0, 1, 1, 2, 2, 3, 3, 5]
        );
    }

    /// Items fit while the array, its brackets and commas, stays within the budget.
    #[test]
    fn counts_the_items_that_fit() {
        // [10],[10] = 2 + 10 + 1 + 10 = 23
        assert_eq!(fitting([10, 10, 10], 23), 2);
        assert_eq!(fitting([10, 10, 10], 22), 1);
        assert_eq!(fitting([10], 11), 0);
        assert_eq!(fitting([], 2), 0);
    }
}
