//! Server-sent events: bytes in, whole events out, however the bytes were split into chunks.
//!
//! Follows the WHATWG event-stream rules that matter for LLM providers:
//! `data:` lines accumulate (joined by `\n`) until a blank line dispatches
//! the event; `event:` names it; lines starting with `:` are comments
//! (keep-alives like `: ping`); unknown fields and lines without a colon
//! name a field we ignore. Lines end in `\n` or `\r\n`. Bytes are buffered
//! until a line is complete, so a chunk may end anywhere, even inside a
//! UTF-8 character.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` name, if the server gave one.
    pub event: Option<String>,
    /// The `data:` lines joined by newlines.
    pub data: String,
}

/// An incremental event-stream parser.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the line not yet ended.
    line: Vec<u8>,
    /// The event being built.
    event: Option<String>,
    /// Its data lines so far; `None` until the first `data:` line.
    data: Option<String>,
    /// Whether the first line has been looked at (a BOM is allowed there).
    started: bool,
}

impl SseParser {
    /// Feeds a chunk; answers the events it completed.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let mut rest = chunk;
        while let Some(end) = rest.iter().position(|b| *b == b'\n') {
            self.line.extend_from_slice(&rest[..end]);
            rest = &rest[end + 1..];
            let line = std::mem::take(&mut self.line);
            events.extend(self.line_done(&line));
        }
        self.line.extend_from_slice(rest);
        events
    }

    /// Bytes held for the event being read (its unfinished line, data and name), so a caller
    /// can bound what one event may take.
    pub fn buffered(&self) -> usize {
        let data = self.data.as_ref().map_or(0, String::len);
        let name = self.event.as_ref().map_or(0, String::len);
        self.line.len().saturating_add(data).saturating_add(name)
    }

    /// The end of the stream: a last line without its newline, and an event without its blank line, still count.
    pub fn finish(&mut self) -> Option<SseEvent> {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            if let Some(event) = self.line_done(&line) {
                return Some(event);
            }
        }
        self.dispatch()
    }

    fn line_done(&mut self, raw: &[u8]) -> Option<SseEvent> {
        let mut raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if !std::mem::replace(&mut self.started, true) {
            raw = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
        }
        if raw.is_empty() {
            return self.dispatch();
        }
        let line = String::from_utf8_lossy(raw);
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            "event" => self.event = Some(value.to_owned()),
            // `id`, `retry` and anything unknown do not change what we read.
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        self.data.take().map(|data| SseEvent { event, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn data(text: &str) -> SseEvent {
        SseEvent {
            event: None,
            data: text.into(),
        }
    }

    fn parse(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::default();
        let mut events: Vec<SseEvent> = chunks.iter().flat_map(|c| parser.push(c)).collect();
        events.extend(parser.finish());
        events
    }

    /// Each stream shape yields the same events however it is chunked.
    #[test]
    fn streams_parse_into_events() {
        /// Name, chunks as they arrive, events expected.
        type Case = (&'static str, Vec<&'static [u8]>, Vec<SseEvent>);
        let cases: Vec<Case> = vec![
            (
                "two events, one chunk",
                vec![b"data: {\"a\":1}\n\ndata: [DONE]\n\n"],
                vec![data("{\"a\":1}"), data("[DONE]")],
            ),
            (
                "split inside the field name, the value and the blank line",
                vec![b"da", b"ta: {\"a\"", b":1}\n", b"\n"],
                vec![data("{\"a\":1}")],
            ),
            (
                "keep-alive comments and CRLF endings",
                vec![b": ping\r\n\r\n: OPENROUTER PROCESSING\r\ndata: x\r\n\r\n"],
                vec![data("x")],
            ),
            (
                "multi-line data and a named event",
                vec![b"event: response.completed\ndata: a\ndata:b\n\n"],
                vec![SseEvent {
                    event: Some("response.completed".into()),
                    data: "a\nb".into(),
                }],
            ),
            (
                "malformed lines are ignored, not fatal",
                vec![b"garbage without colon\nid: 7\nretry: 10\ndata: ok\n\n"],
                vec![data("ok")],
            ),
            (
                "a UTF-8 character split across chunks",
                vec![b"data: caf\xC3", b"\xA9\n\n"],
                vec![data("caf\u{e9}")],
            ),
            (
                "a blank line without data dispatches nothing",
                vec![b"event: x\n\n\n"],
                vec![],
            ),
            (
                "the last event without its blank line or newline",
                vec![b"\xEF\xBB\xBFdata: first\n\ndata: last"],
                vec![data("first"), data("last")],
            ),
        ];
        for (name, chunks, expected) in cases {
            assert_eq!(parse(&chunks), expected, "{name}");
            let bytes: Vec<u8> = chunks.concat();
            let one_by_one: Vec<&[u8]> = bytes.chunks(1).collect();
            assert_eq!(parse(&one_by_one), expected, "{name}, byte by byte");
        }
    }

    /// What the parser holds for the event being read grows with its unfinished line and its
    /// data, and drops to nothing once the event is dispatched.
    #[test]
    fn buffered_counts_the_event_being_read() {
        let mut parser = SseParser::default();
        let mut held = Vec::new();
        for chunk in [&b"event: e\ndata: abc"[..], b"\ndata: de", b"\n", b"\n"] {
            parser.push(chunk);
            held.push(parser.buffered());
        }
        assert_eq!(held, vec![1 + 9, 1 + 3 + 8, 1 + 6, 0]);
    }
}
