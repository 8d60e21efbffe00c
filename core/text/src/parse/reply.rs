//! The reply state machine: turns tokens into commands, prose and warnings.
//!
//! At most one tool is open at a time. Inside a tool everything is body
//! text except its own close tag; the names of tool tags opened inside the
//! body are stacked so that quoted examples (`<set>` showing a `<get>`) close
//! themselves instead of the tool. The body is kept as source text and
//! decoded once at the end.
//!
//! Top-level prose is also where native tool-call dialects appear; when one
//! starts, `dialect` reads it and the tokenizer resumes after it. Every
//! command, from a tag or a dialect, passes through `legacy::heal`.

use std::ops::Range;

use super::dialect::{self, DialectRead};
use super::entities::decode_into;
use super::legacy;
use super::lexer::{Lexer, MarkupKind, Token};
use super::markdown::{classify, inline_span, run_length, Backticks, FenceMemo};
use super::steps;
use super::warnings;
use super::{ParsedReply, Tag, TaggedCall};

/// Whether `</tool>` inside `open` is a retired tag's close that a body
/// may well contain as text, which must not end a real tool early.
fn stray_legacy_close(tool: Tag, open: Tag) -> bool {
    matches!(tool, Tag::Legacy(_)) && !matches!(open, Tag::Legacy(_))
}

/// A tool tag whose body is still being read.
struct OpenTool {
    /// The tool or legacy tag.
    name: Tag,
    /// The tag's attributes, already decoded.
    attributes: Vec<(String, String)>,
    /// Where the body starts (just after the open tag's `>`).
    body_start: usize,
    /// CDATA sections in the body: whole span and content.
    cdata: Vec<(Range<usize>, Range<usize>)>,
    /// Tool tags opened inside the body and not yet closed.
    nested: Vec<Tag>,
    /// Whether the body so far is only whitespace (and stray close tags).
    blank: bool,
    /// Over the command cap: read to find its end, then thrown away.
    dropped: bool,
    /// Attribute values of this tag that were repaired.
    repaired: usize,
}

/// A `tool_code`-style fence being parsed as reply text.
struct Fence {
    /// Where its inner region ends.
    inner_end: usize,
    /// Where the enclosing text continues, after the closing marker.
    resume: usize,
}

/// One pass over a reply.
pub(crate) struct Parser<'a> {
    /// The whole reply.
    text: &'a str,
    /// The per-reply command cap.
    max_commands: usize,
    /// The tokenizer, possibly restricted to a fence's inside.
    lexer: Lexer<'a>,
    /// Tool fences entered, innermost last.
    fences: Vec<Fence>,
    /// The tool whose body is being read.
    open: Option<OpenTool>,
    /// Commands and warnings so far; `unparsed` is trimmed at the end.
    reply: ParsedReply,
    /// Repaired attribute values over all kept commands.
    repaired: usize,
    /// Whether the command-cap warning was given.
    capped: bool,
    /// Fences already known not to close.
    fences_unclosed: FenceMemo,
}

impl<'a> Parser<'a> {
    /// A parser for `text` keeping at most `max_commands` commands.
    pub(crate) fn new(text: &'a str, max_commands: usize) -> Self {
        Parser {
            text,
            max_commands,
            lexer: Lexer::new(text, 0, text.len()),
            fences: Vec::new(),
            open: None,
            reply: ParsedReply::default(),
            repaired: 0,
            capped: false,
            fences_unclosed: FenceMemo::default(),
        }
    }

    /// Reads the whole reply.
    pub(crate) fn run(mut self) -> ParsedReply {
        loop {
            match self.lexer.next_token() {
                Some(token) => match self.open.take() {
                    Some(open) => self.in_body(open, token),
                    None => self.top_level(token),
                },
                None => {
                    let end = self.lexer.limit();
                    if let Some(open) = self.open.take() {
                        let warning = warnings::unclosed_tag(open.name.as_str());
                        let body = open.body_start..end;
                        self.finish(open, body, Some(warning));
                    }
                    let Some(fence) = self.fences.pop() else {
                        break;
                    };
                    let limit = self.fences.last().map_or(self.text.len(), |f| f.inner_end);
                    self.lexer.restart(fence.resume, limit);
                }
            }
        }
        if self.repaired > 0 {
            self.reply
                .warnings
                .push(warnings::repaired_attributes(self.repaired));
        }
        self.reply.unparsed = self.reply.unparsed.trim().to_owned();
        self.reply
    }

    /// Handles a token outside any tool.
    fn top_level(&mut self, token: Token) {
        match token {
            Token::Text(span) => self.top_text(span),
            Token::Cdata { content, .. } => self.reply.unparsed.push_str(&self.text[content]),
            Token::Markup {
                span,
                kind: MarkupKind::OpenTag,
            } => {
                let start = span.start;
                if let Some(read) = dialect::read_markup(self.text, span, self.lexer.limit()) {
                    self.take_dialect(start, read);
                }
            }
            // Other tags are not ours; only their text is prose. Orphan tool
            // closes carry nothing either.
            Token::Markup { .. } | Token::Close { .. } => {}
            Token::Open {
                tool,
                attributes,
                self_closing,
                span,
                repaired,
            } => {
                let dropped = !self.admit();
                let open = OpenTool {
                    name: tool,
                    attributes,
                    body_start: span.end,
                    cdata: Vec::new(),
                    nested: Vec::new(),
                    blank: true,
                    dropped,
                    repaired,
                };
                if self_closing {
                    self.finish(open, span.end..span.end, None);
                } else {
                    self.open = Some(open);
                }
            }
        }
    }

    /// Whether one more command fits under the cap; warns once when not.
    fn admit(&mut self) -> bool {
        if self.reply.commands.len() < self.max_commands {
            return true;
        }
        if !self.capped {
            self.capped = true;
            self.reply
                .warnings
                .push(warnings::command_limit(self.max_commands));
        }
        false
    }

    /// Takes what a dialect reader found at `at`: its commands (within the
    /// cap) and warnings; when it read no command, its text stays prose so
    /// the healer can see the model tried to act. Resumes after it.
    fn take_dialect(&mut self, at: usize, read: DialectRead) {
        if read.calls.is_empty() {
            self.reply.unparsed.push_str(&self.text[at..read.end]);
        }
        // A garbled call can leave several markers; one notice is enough.
        for warning in read.warnings {
            if !self.reply.warnings.contains(&warning) {
                self.reply.warnings.push(warning);
            }
        }
        for call in read.calls {
            if self.admit() {
                self.reply.commands.push(legacy::heal(call));
            }
        }
        self.lexer.restart(read.end, self.lexer.limit());
    }

    /// Adds top-level prose to `unparsed`, watching for code spans, fences
    /// and the markers of native tool-call dialects.
    fn top_text(&mut self, span: Range<usize>) {
        let text = self.text;
        let limit = self.lexer.limit();
        let mut pos = span.start;
        while let Some(i) = text[pos..span.end].find(['`', '<', '{', '[']) {
            steps::add(i + 1);
            let at = pos + i;
            decode_into(&mut self.reply.unparsed, &text[pos..at]);
            if text.as_bytes()[at] != b'`' {
                if let Some(read) = dialect::read_text(text, at, limit) {
                    self.take_dialect(at, read);
                    return;
                }
                // Not a call: the one ASCII byte is prose.
                self.reply.unparsed.push_str(&text[at..at + 1]);
                pos = at + 1;
                continue;
            }
            match classify(text, at, limit, &mut self.fences_unclosed) {
                Backticks::Literal(end) => {
                    self.reply.unparsed.push_str(&text[at..end]);
                    pos = end;
                }
                Backticks::Quoted(end) => {
                    // Quoted code is literal, so it is not entity-decoded.
                    self.reply.unparsed.push_str(&text[at..end]);
                    if end <= span.end {
                        // Still inside this text: go on here. Restarting the tokenizer would
                        // read the rest of the text again, once per code span.
                        pos = end;
                        continue;
                    }
                    self.lexer.restart(end, limit);
                    return;
                }
                Backticks::ToolFence { inner, resume } => {
                    if let Some(mut read) = dialect::read_fence(text, inner.clone()) {
                        read.end = resume;
                        self.take_dialect(inner.start, read);
                        return;
                    }
                    self.fences.push(Fence {
                        inner_end: inner.end,
                        resume,
                    });
                    self.lexer.restart(inner.start, inner.end);
                    return;
                }
            }
        }
        decode_into(&mut self.reply.unparsed, &text[pos..span.end]);
    }

    /// Handles a token while `open` is being read; puts it back unless the
    /// token ends it.
    fn in_body(&mut self, mut open: OpenTool, token: Token) {
        match token {
            Token::Text(span) => {
                if open.blank && !self.text[span.clone()].trim().is_empty() {
                    open.blank = false;
                }
                if let Some(end) = self.code_span_in_body(span) {
                    self.lexer.restart(end, self.lexer.limit());
                }
            }
            // A stray close (`<rm …></unknown>`) is not content the model meant.
            Token::Markup {
                kind: MarkupKind::CloseTag,
                ..
            } => {}
            Token::Markup { .. } => open.blank = false,
            Token::Cdata { span, content } => {
                open.cdata.push((span, content));
                open.blank = false;
            }
            Token::Open {
                tool, self_closing, ..
            } => {
                if open.blank && open.nested.is_empty() {
                    // `<get path="a">` then `<update>`: the slash was forgotten.
                    let warning = warnings::unclosed_before(open.name.as_str(), tool.as_str());
                    let body = open.body_start..open.body_start;
                    self.finish(open, body, Some(warning));
                    self.top_level(token);
                    return;
                }
                if !self_closing {
                    open.nested.push(tool);
                }
                open.blank = false;
            }
            Token::Close { tool, span } => {
                if let Some(i) = open.nested.iter().rposition(|&name| name == tool) {
                    open.nested.truncate(i);
                } else if tool == open.name {
                    let body = open.body_start..span.start;
                    self.finish(open, body, None);
                    return;
                } else if open.nested.is_empty() && !stray_legacy_close(tool, open.name) {
                    let warning = warnings::mismatched_close(tool.as_str(), open.name.as_str());
                    let body = open.body_start..span.start;
                    self.finish(open, body, Some(warning));
                    return;
                }
            }
        }
        self.open = Some(open);
    }

    /// Where an inline code span starting in body text `span` ends, if one does.
    ///
    /// A body that says "close it with `</update>`" quotes the tag; skipping
    /// the span keeps that from closing the tool. Fences are not looked for
    /// here: bodies are often whole markdown files, and the nesting stack
    /// already keeps quoted tool examples in them balanced.
    fn code_span_in_body(&self, span: Range<usize>) -> Option<usize> {
        let bytes = self.text.as_bytes();
        let limit = self.lexer.limit();
        let mut pos = span.start;
        while let Some(i) = self.text[pos..span.end].find('`') {
            let at = pos + i;
            let run = run_length(bytes, at, limit);
            match inline_span(self.text, at, run, limit) {
                Backticks::Quoted(end) => return Some(end),
                _ => pos = at + run,
            }
        }
        None
    }

    /// Ends `open` with the source text `body` as its body, keeping it unless
    /// it was over the cap.
    fn finish(&mut self, open: OpenTool, body: Range<usize>, warning: Option<String>) {
        if open.dropped {
            return;
        }
        if let Some(warning) = warning {
            self.reply.warnings.push(warning);
        }
        self.repaired += open.repaired;
        let mut text = String::with_capacity(body.len());
        let mut cursor = body.start;
        for (span, content) in &open.cdata {
            decode_into(&mut text, &self.text[cursor..span.start]);
            // CDATA exists to carry text verbatim: no decoding inside.
            text.push_str(&self.text[content.clone()]);
            cursor = span.end;
        }
        decode_into(&mut text, &self.text[cursor..body.end]);
        self.reply.commands.push(legacy::heal(TaggedCall {
            tag: open.name,
            attributes: open.attributes,
            body: text,
        }));
    }
}
