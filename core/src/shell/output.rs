//! A running command's output on its way into its channels: bytes decoded as UTF-8 across
//! read boundaries, capped per channel, and gathered so that a chatty command costs a store
//! write per batch rather than per read.

use std::time::{Duration, Instant};

/// How long output may wait before it is written (the first byte of a batch starts the clock).
pub const FLUSH_EVERY: Duration = Duration::from_millis(50);

/// How much output makes a batch written at once.
pub const FLUSH_BYTES: usize = 16 * 1024;

/// The marker where a channel's output was cut off.
pub fn capped_marker(cap: usize) -> String {
    format!("\n[output cut off here: more than {cap} bytes; the rest was dropped]\n")
}

/// One channel's text: what arrives as bytes leaves as UTF-8 (an invalid sequence as U+FFFD, a
/// character split between two reads kept whole), at most `cap` bytes of it, then the marker
/// once and nothing more.
#[derive(Debug, Clone)]
pub struct ChannelText {
    cap: usize,
    kept: usize,
    /// The start of a character whose other bytes have not arrived yet.
    carry: Vec<u8>,
    capped: bool,
    dropped: usize,
}

impl ChannelText {
    /// A channel that keeps at most `cap` bytes of text.
    pub fn new(cap: usize) -> ChannelText {
        ChannelText {
            cap,
            kept: 0,
            carry: Vec::new(),
            capped: false,
            dropped: 0,
        }
    }

    /// A channel that already holds `kept` bytes of text: past the cap (its marker written)
    /// it keeps nothing more. What caps a channel that a client fills chunk by chunk
    /// (`stream`), the store holding what came before.
    pub fn resumed(cap: usize, kept: usize) -> ChannelText {
        ChannelText {
            cap,
            kept: kept.min(cap),
            carry: Vec::new(),
            capped: kept > cap,
            dropped: 0,
        }
    }

    /// The text to append for `bytes` just read (empty once the cap was reached).
    pub fn push(&mut self, bytes: &[u8]) -> String {
        if self.capped {
            self.dropped += bytes.len();
            return String::new();
        }
        let mut input = std::mem::take(&mut self.carry);
        input.extend_from_slice(bytes);
        let mut text = String::new();
        let mut rest: &[u8] = &input;
        loop {
            match std::str::from_utf8(rest) {
                Ok(valid) => {
                    text.push_str(valid);
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    // from_utf8 vouched for these bytes.
                    text.push_str(&String::from_utf8_lossy(valid));
                    match e.error_len() {
                        Some(bad) => {
                            text.push(char::REPLACEMENT_CHARACTER);
                            rest = &after[bad..];
                        }
                        None => {
                            self.carry = after.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        self.keep(text)
    }

    /// The text left at the end of the output: a character cut short, as U+FFFD.
    pub fn finish(&mut self) -> String {
        if self.carry.is_empty() || self.capped {
            return String::new();
        }
        self.carry.clear();
        self.keep(char::REPLACEMENT_CHARACTER.to_string())
    }

    /// Bytes dropped after the cap.
    pub fn dropped(&self) -> usize {
        self.dropped
    }

    fn keep(&mut self, mut text: String) -> String {
        if self.kept + text.len() <= self.cap {
            self.kept += text.len();
            return text;
        }
        let mut cut = self.cap - self.kept;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        self.dropped += text.len() - cut + self.carry.len();
        self.carry.clear();
        text.truncate(cut);
        text.push_str(&capped_marker(self.cap));
        self.kept = self.cap;
        self.capped = true;
        text
    }
}

/// Text of the two channels (stdout, stderr) waiting to be written.
#[derive(Debug, Clone, Default)]
pub struct Pending {
    text: [String; 2],
    since: Option<Instant>,
}

impl Pending {
    /// Adds `text` for channel `channel` (1 or 2) at `now`.
    pub fn push(&mut self, channel: u32, text: &str, now: Instant) {
        if text.is_empty() {
            return;
        }
        let index = if channel == 2 { 1 } else { 0 };
        self.text[index].push_str(text);
        self.since.get_or_insert(now);
    }

    /// When the batch is due, if anything waits.
    pub fn due(&self) -> Option<Instant> {
        self.since.map(|since| since + FLUSH_EVERY)
    }

    /// Whether the batch should be written at `now`: it is large enough, or old enough.
    pub fn ready(&self, now: Instant) -> bool {
        self.text[0].len() + self.text[1].len() >= FLUSH_BYTES
            || self.due().is_some_and(|due| now >= due)
    }

    /// Takes what waits: (channel, text) for each channel with text, stdout first.
    pub fn take(&mut self) -> Vec<(u32, String)> {
        self.since = None;
        let [out, err] = std::mem::take(&mut self.text);
        [(1, out), (2, err)]
            .into_iter()
            .filter(|(_, text)| !text.is_empty())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Reads pass through as text; a character split between reads arrives whole, an invalid
    /// byte as U+FFFD, a character cut short at the end as U+FFFD.
    #[test]
    fn decodes_across_reads() {
        let mut channel = ChannelText::new(1024);
        let euro = "€".as_bytes();
        let pieces = [
            channel.push(b"hi "),
            channel.push(&euro[..1]),
            channel.push(&euro[1..]),
            channel.push(b" \xff ok"),
            channel.push(&euro[..2]),
            channel.finish(),
        ];
        assert_eq!(
            pieces,
            ["hi ", "", "€", " \u{fffd} ok", "", "\u{fffd}"].map(String::from)
        );
    }

    /// Past the cap the text is cut at a character boundary, the marker follows once, and the
    /// rest is counted as dropped.
    #[test]
    fn caps_the_output() {
        let mut channel = ChannelText::new(10);
        let pieces = [
            channel.push(b"12345678"),
            channel.push("é€".as_bytes()),
            channel.push(b"more"),
            channel.finish(),
        ];
        assert_eq!(
            pieces,
            [
                "12345678".to_owned(),
                format!("é{}", capped_marker(10)),
                String::new(),
                String::new(),
            ]
        );
        assert_eq!(channel.dropped(), 3 + 4);
    }

    /// A channel resumed below its cap keeps up to it and then writes the marker; one resumed
    /// past it (its marker written) keeps nothing and counts what it drops.
    #[test]
    fn a_resumed_channel_keeps_to_the_same_cap() {
        let mut channel = ChannelText::resumed(6, 4);
        assert_eq!(channel.push(b"abc"), format!("ab{}", capped_marker(6)));
        assert_eq!(channel.dropped(), 1);
        let mut full = ChannelText::resumed(6, 6 + capped_marker(6).len());
        assert_eq!(full.push(b"more"), "");
        assert_eq!(full.dropped(), 4);
    }

    /// Output exactly at the cap is kept whole, with no marker.
    #[test]
    fn output_at_the_cap_is_whole() {
        let mut channel = ChannelText::new(4);
        assert_eq!(
            [channel.push(b"abcd"), channel.finish()],
            ["abcd".to_owned(), String::new()]
        );
        assert_eq!(channel.push(b"e"), capped_marker(4));
    }

    /// A batch is due 50 ms after its first text, or at once when 16 KiB wait; taking it
    /// answers each channel's text and starts over.
    #[test]
    fn batches_by_age_and_size() {
        let start = Instant::now();
        let mut pending = Pending::default();
        assert_eq!((pending.due(), pending.ready(start)), (None, false));
        pending.push(1, "out", start);
        pending.push(2, "err", start + Duration::from_millis(10));
        pending.push(1, " more", start + Duration::from_millis(20));
        assert_eq!(pending.due(), Some(start + FLUSH_EVERY));
        assert_eq!(
            [
                pending.ready(start + Duration::from_millis(49)),
                pending.ready(start + FLUSH_EVERY)
            ],
            [false, true]
        );
        assert_eq!(
            pending.take(),
            vec![(1, "out more".to_owned()), (2, "err".to_owned())]
        );
        assert_eq!(pending.due(), None);
        pending.push(2, &"x".repeat(FLUSH_BYTES), start);
        assert!(pending.ready(start));
        assert_eq!(pending.take(), vec![(2, "x".repeat(FLUSH_BYTES))]);
    }
}
