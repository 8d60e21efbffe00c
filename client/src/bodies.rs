//! Entries' bodies as a client keeps them from `run/state` pushes: a push carries an entry's
//! whole body, its first bytes only (`bodyTruncated`, read the rest with `getBody`), or — for
//! a command's output channel as it grows — what was appended (`append: true, offset`), which
//! goes after the bytes the client already has.

use std::collections::HashMap;

use crate::results::HistoryItem;

/// What applying a history item to a kept body did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The item's body replaced the kept one: it is the whole body.
    Whole,
    /// The item's body replaced the kept one, but it is only the body's first bytes: read the
    /// rest with `getBody` (`Client::read_body`).
    Truncated,
    /// The item's appended text went after the kept body (what of it the body already held —
    /// a push seen twice — was skipped).
    Appended,
    /// The item appends at an offset past the kept body's end: bytes between are missing, so
    /// the body should be read again (`getBody`). The kept body is left as it was.
    Gap,
    /// The item carried no body: the kept one stays.
    Unchanged,
}

/// The part of `item`'s body a client that already holds `held` bytes of the entry's body has
/// not seen, and how many bytes it holds after it: the whole body past `held` for an item
/// carrying the whole body, or, for an appended one, what goes past `held`. `None` when the
/// item shows nothing new, or appends past `held` (a gap).
pub fn unseen(item: &HistoryItem, held: usize) -> Option<(&str, usize)> {
    let body = item.body.as_deref()?;
    let start = if item.append {
        usize::try_from(item.offset.unwrap_or(0)).unwrap_or(usize::MAX)
    } else {
        0
    };
    let end = start.checked_add(body.len())?;
    if held < start || end <= held {
        return None;
    }
    let from = held - start;
    body.is_char_boundary(from).then(|| (&body[from..], end))
}

/// Applies `item` to `kept`, an entry's body as the client holds it.
pub fn apply(kept: &mut String, item: &HistoryItem) -> Applied {
    let Some(body) = item.body.as_deref() else {
        return Applied::Unchanged;
    };
    if !item.append {
        body.clone_into(kept);
        return if item.body_truncated {
            Applied::Truncated
        } else {
            Applied::Whole
        };
    }
    let offset = usize::try_from(item.offset.unwrap_or(0)).unwrap_or(usize::MAX);
    if offset > kept.len() {
        return Applied::Gap;
    }
    if let Some((text, _)) = unseen(item, kept.len()) {
        kept.push_str(text);
    }
    Applied::Appended
}

/// The bodies of a run's entries, by path, as its pushes left them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bodies {
    kept: HashMap<String, String>,
}

impl Bodies {
    /// Applies a history item to its entry's body.
    pub fn apply(&mut self, item: &HistoryItem) -> Applied {
        apply(self.kept.entry(item.path.clone()).or_default(), item)
    }

    /// The body of the entry at `path`, as far as it is known.
    pub fn get(&self, path: &str) -> Option<&str> {
        self.kept.get(path).map(String::as_str)
    }

    /// Replaces the body of the entry at `path` (read whole with `getBody`).
    pub fn set(&mut self, path: &str, body: String) {
        self.kept.insert(path.to_owned(), body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn item(body: &str, append: Option<i64>, truncated: bool) -> HistoryItem {
        serde_json::from_value(serde_json::json!({
            "path": "sh://turn_1/ls_1",
            "state": "streaming",
            "body": body,
            "append": append.is_some(),
            "offset": append,
            "bodyTruncated": truncated,
        }))
        .unwrap()
    }

    /// A whole body replaces what was kept; appends go after it, a push seen twice adds
    /// nothing, and one past the end is a gap that leaves the body as it was.
    #[test]
    fn appends_follow_the_kept_body() {
        let mut bodies = Bodies::default();
        let path = "sh://turn_1/ls_1";
        assert_eq!(bodies.apply(&item("ab", None, false)), Applied::Whole);
        assert_eq!(bodies.apply(&item("cd", Some(2), false)), Applied::Appended);
        assert_eq!(bodies.apply(&item("cd", Some(2), false)), Applied::Appended);
        assert_eq!(bodies.apply(&item("€", Some(4), false)), Applied::Appended);
        assert_eq!(bodies.get(path), Some("abcd€"));
        assert_eq!(bodies.apply(&item("zz", Some(99), false)), Applied::Gap);
        assert_eq!(bodies.get(path), Some("abcd€"));
        assert_eq!(bodies.apply(&item("x", None, true)), Applied::Truncated);
        assert_eq!(bodies.get(path), Some("x"));
    }

    /// What a client holding some bytes has not seen of a whole or appended item.
    #[test]
    fn unseen_is_what_lies_past_the_held_bytes() {
        assert_eq!(unseen(&item("abcd", None, false), 2), Some(("cd", 4)));
        assert_eq!(unseen(&item("cd", Some(2), false), 2), Some(("cd", 4)));
        assert_eq!(unseen(&item("cd", Some(2), false), 3), Some(("d", 4)));
        assert_eq!(unseen(&item("cd", Some(2), false), 4), None);
        assert_eq!(unseen(&item("cd", Some(3), false), 2), None);
    }
}
