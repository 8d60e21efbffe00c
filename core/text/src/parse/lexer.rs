//! The reply tokenizer: xmlparser, plus recovery so that no input is an error.
//!
//! xmlparser is strict and stops for good at its first error. Model replies
//! are prose with tags in it (`a < b`, `&&`, `<br>`, half-written tags), so
//! on an error we emit the offending byte as text and start a fresh tokenizer
//! right after it. Each tokenizer runs over the sub-slice from its restart
//! point, because xmlparser computes a line/column for every error by
//! scanning from the start of its text; that keeps recovery linear overall.

use std::ops::Range;

use xmlparser::{ElementEnd, StrSpan, Token as XmlToken, Tokenizer};

use super::entities::decode;
use super::tag::{scan_close_tag, scan_open_tag};
use super::{command_tag, steps, Tag};

/// What kind of non-tool markup a [`Token::Markup`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MarkupKind {
    /// An open or self-closing tag that is not a tool (`<div>`, `<br/>`).
    OpenTag,
    /// A close tag that is not a tool (`</div>`).
    CloseTag,
    /// A comment or processing instruction.
    Other,
}

/// One piece of a reply, with byte offsets into the whole reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Token {
    /// Plain text, entities still encoded; includes stray `<` the tokenizer rejected.
    Text(Range<usize>),
    /// Markup that is not a tool tag.
    Markup {
        /// The whole markup.
        span: Range<usize>,
        /// What it is.
        kind: MarkupKind,
    },
    /// A `<![CDATA[…]]>` section.
    Cdata {
        /// The whole section.
        span: Range<usize>,
        /// Its content, between the brackets.
        content: Range<usize>,
    },
    /// An open or self-closing tool (or legacy) tag.
    Open {
        /// The tool or legacy tag.
        tool: Tag,
        /// Lower-cased names and decoded values, in source order.
        attributes: Vec<(String, String)>,
        /// Whether the tag ended with `/>`.
        self_closing: bool,
        /// The whole tag.
        span: Range<usize>,
        /// Attribute values with an unclosed quote that were cut short.
        repaired: usize,
    },
    /// A tool (or legacy) close tag.
    Close {
        /// The tool or legacy tag.
        tool: Tag,
        /// The whole tag.
        span: Range<usize>,
    },
}

/// Markup that runs to a terminator: a comment, a CDATA section, a processing instruction.
/// xmlparser looks for the terminator to the end of its text, so one that never comes costs a
/// scan to the end each time the opener appears.
const RUNS_TO: [(&str, &str); 3] = [("<!--", "-->"), ("<![CDATA[", "]]>"), ("<?", "?>")];

/// Tokenizes `text[start..limit]`, resuming after every error.
pub(crate) struct Lexer<'a> {
    /// The whole reply; all offsets refer to it.
    text: &'a str,
    /// Where the current xmlparser tokenizer's slice starts.
    base: usize,
    /// Where the region being tokenized ends.
    limit: usize,
    /// The current strict tokenizer, over `text[base..limit]`.
    inner: Tokenizer<'a>,
    /// For each of [`RUNS_TO`], from where (and up to which limit) its terminator is known
    /// to be missing: an opener there is only text, and xmlparser is not asked again. Without
    /// it, a reply of many unterminated openers is quadratic.
    unterminated: [Option<(usize, usize)>; 3],
}

impl<'a> Lexer<'a> {
    /// A lexer over `text[start..limit]`.
    pub(crate) fn new(text: &'a str, start: usize, limit: usize) -> Self {
        let mut lexer = Lexer {
            text,
            base: start,
            limit,
            inner: Tokenizer::from_fragment("", 0..0),
            unterminated: [None; 3],
        };
        lexer.restart(start, limit);
        lexer
    }

    /// Where the current region ends.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Continues tokenizing at `start`, up to `limit`.
    pub(crate) fn restart(&mut self, start: usize, limit: usize) {
        let slice = &self.text[start..limit];
        self.base = start;
        self.limit = limit;
        self.inner = Tokenizer::from_fragment(slice, 0..slice.len());
    }

    /// Continues tokenizing at `start` within the current region.
    fn resume_at(&mut self, start: usize) {
        self.restart(start, self.limit);
    }

    /// The absolute range of a span from the current tokenizer.
    fn range(&self, span: StrSpan<'_>) -> Range<usize> {
        self.base + span.start()..self.base + span.end()
    }

    /// The next token, or `None` at the end of the region.
    pub(crate) fn next_token(&mut self) -> Option<Token> {
        let start = self.base + self.inner.stream().pos();
        if self.known_unterminated(start) {
            return Some(self.stray_byte(start));
        }
        let next = self.inner.next();
        steps::add(self.base + self.inner.stream().pos() - start + 1);
        let token = match next? {
            Err(_) => self.recover(start),
            Ok(XmlToken::Text { text }) => Token::Text(self.range(text)),
            Ok(XmlToken::Cdata { text, span }) => Token::Cdata {
                span: self.range(span),
                content: self.range(text),
            },
            Ok(XmlToken::ElementStart {
                prefix,
                local,
                span,
            }) => {
                let tool = if prefix.is_empty() {
                    command_tag(local.as_str())
                } else {
                    None
                };
                let name_end = self.base + span.end();
                self.element(start, name_end, tool)
            }
            Ok(XmlToken::ElementEnd {
                end: ElementEnd::Close(prefix, local),
                span,
            }) => {
                let span = self.range(span);
                let tool = if prefix.is_empty() {
                    command_tag(local.as_str())
                } else {
                    None
                };
                match tool {
                    Some(tool) => Token::Close { tool, span },
                    None => Token::Markup {
                        span,
                        kind: MarkupKind::CloseTag,
                    },
                }
            }
            Ok(other) => Token::Markup {
                span: self.range(other.span()),
                kind: MarkupKind::Other,
            },
        };
        Some(token)
    }

    /// Reads the rest of an open tag that starts at `start` and whose name
    /// ends at `name_end`; `tool` is set when the name is a tool's.
    fn element(&mut self, start: usize, name_end: usize, tool: Option<Tag>) -> Token {
        let mut attributes = Vec::new();
        loop {
            match self.inner.next() {
                Some(Ok(XmlToken::Attribute {
                    prefix,
                    local,
                    value,
                    ..
                })) => {
                    if tool.is_some() {
                        attributes.push((attribute_name(prefix, local), decode(value.as_str())));
                    }
                }
                Some(Ok(XmlToken::ElementEnd { end, span }))
                    if !matches!(end, ElementEnd::Close(..)) =>
                {
                    let span = start..self.base + span.end();
                    return match tool {
                        Some(tool) => Token::Open {
                            tool,
                            attributes,
                            self_closing: end == ElementEnd::Empty,
                            span,
                            repaired: 0,
                        },
                        None => Token::Markup {
                            span,
                            kind: MarkupKind::OpenTag,
                        },
                    };
                }
                // An error, or the text ended inside the tag.
                _ => break,
            }
        }
        match tool {
            Some(tool) => {
                let scanned = scan_open_tag(self.text, name_end, self.limit);
                steps::add(scanned.end - name_end);
                self.resume_at(scanned.end);
                Token::Open {
                    tool,
                    attributes: scanned.attributes,
                    self_closing: scanned.self_closing,
                    span: start..scanned.end,
                    repaired: scanned.repaired,
                }
            }
            // A broken non-tool tag is only prose (`a <b and c> d`).
            None => self.stray_byte(start),
        }
    }

    /// The index in [`RUNS_TO`] of the opener at `at`, if one is there.
    fn opener_at(&self, at: usize) -> Option<usize> {
        let rest = self.text.get(at..self.limit)?;
        RUNS_TO.iter().position(|(open, _)| rest.starts_with(open))
    }

    /// Whether the markup opening at `at` is known to run to no terminator.
    fn known_unterminated(&self, at: usize) -> bool {
        self.opener_at(at).is_some_and(|kind| {
            self.unterminated[kind].is_some_and(|(from, limit)| at >= from && self.limit <= limit)
        })
    }

    /// Turns a tokenizer error at `start` into text (or a tool close tag
    /// written sloppily) and resumes after it.
    fn recover(&mut self, start: usize) -> Token {
        if let Some(kind) = self.opener_at(start) {
            let (open, close) = RUNS_TO[kind];
            steps::add(self.limit - start);
            if !self.text[start + open.len()..self.limit].contains(close) {
                self.unterminated[kind] = Some((start, self.limit));
            }
        }
        if self.text.as_bytes().get(start) == Some(&b'<') {
            if let Some((tool, end)) = scan_close_tag(self.text, start, self.limit) {
                steps::add(end - start);
                self.resume_at(end);
                return Token::Close {
                    tool,
                    span: start..end,
                };
            }
            return self.stray_byte(start);
        }
        // Text xmlparser refuses (control characters, `]]>`) is still text.
        let end = self.text[start..self.limit]
            .find('<')
            .map_or(self.limit, |i| start + i);
        steps::add(end - start);
        self.resume_at(end);
        Token::Text(start..end)
    }

    /// Emits the `<` at `start` as text and resumes right after it.
    fn stray_byte(&mut self, start: usize) -> Token {
        self.resume_at(start + 1);
        Token::Text(start..start + 1)
    }
}

/// The lower-cased name of an attribute, with its prefix if any.
fn attribute_name(prefix: StrSpan<'_>, local: StrSpan<'_>) -> String {
    if prefix.is_empty() {
        local.as_str().to_lowercase()
    } else {
        format!("{}:{}", prefix.as_str(), local.as_str()).to_lowercase()
    }
}
