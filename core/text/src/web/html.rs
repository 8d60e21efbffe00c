//! A web page as the text a model reads: its title, headings (`#`), paragraphs, list items
//! (`- `), links (`text (url)`), images' alternative text and preformatted blocks, with scripts,
//! styles and markup dropped and character references decoded.
//!
//! The reduction is one pass over the text, tolerant of any markup: an unclosed tag, a stray
//! `<` or an unterminated comment reads as far as it goes, never as an error.

/// Elements whose content is never text a reader sees.
const HIDDEN: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "iframe", "object", "canvas", "select",
    "textarea", "title",
];

/// Elements that stand on lines of their own.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "br",
    "dd",
    "details",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "header",
    "hr",
    "html",
    "main",
    "nav",
    "ol",
    "p",
    "section",
    "summary",
    "table",
    "tbody",
    "thead",
    "tfoot",
    "tr",
    "ul",
];

/// A name's bytes longest considered for a named character reference.
const MAX_REFERENCE: usize = 32;

/// The readable text of an HTML page: `Title: …` first when it has one, then its content.
pub fn readable(html: &str) -> String {
    let mut out = Reader::default();
    let bytes = html.as_bytes();
    let mut at = 0;
    let mut title: Option<String> = None;
    while at < bytes.len() {
        let Some(lt) = memchr::memchr(b'<', &bytes[at..]).map(|i| at + i) else {
            out.text(&html[at..]);
            break;
        };
        out.text(&html[at..lt]);
        let rest = &html[lt..];
        if let Some(comment) = rest.strip_prefix("<!--") {
            at = lt + 4 + comment.find("-->").map_or(comment.len(), |end| end + 3);
            continue;
        }
        if rest.starts_with("<!") || rest.starts_with("<?") {
            at = lt + rest.find('>').map_or(rest.len(), |end| end + 1);
            continue;
        }
        let Some(tag) = Tag::read(rest) else {
            out.text("<");
            at = lt + 1;
            continue;
        };
        at = lt + tag.length;
        if !tag.closing && !tag.self_closing && HIDDEN.contains(&tag.name.as_str()) {
            let inside = &html[at..];
            let end = closing_tag(inside, &tag.name);
            if tag.name == "title" && title.is_none() {
                let text = collapse(&decode(&inside[..end.0]));
                title = Some(text).filter(|t| !t.is_empty());
            }
            at += end.1;
            continue;
        }
        out.tag(&tag);
    }
    let body = out.finish();
    match title {
        Some(title) if !body.is_empty() => format!("Title: {title}\n\n{body}"),
        Some(title) => format!("Title: {title}"),
        None => body,
    }
}

/// Where the content of an element named `name` ends in `inside` (the text after its opening
/// tag), and where the text after its closing tag starts: the whole text when it is never
/// closed. One scan, so a page of many such elements reads in linear time.
fn closing_tag(inside: &str, name: &str) -> (usize, usize) {
    let bytes = inside.as_bytes();
    let mut from = 0;
    while let Some(lt) = memchr::memchr(b'<', &bytes[from..]).map(|i| from + i) {
        let after = lt + 2 + name.len();
        let named = bytes.get(lt + 1) == Some(&b'/')
            && bytes
                .get(lt + 2..after)
                .is_some_and(|n| n.eq_ignore_ascii_case(name.as_bytes()));
        let next = bytes.get(after).copied();
        if named && next.is_none_or(|b| b == b'>' || b == b'/' || b.is_ascii_whitespace()) {
            let end = memchr::memchr(b'>', &bytes[after..]).map_or(bytes.len(), |i| after + i + 1);
            return (lt, end);
        }
        from = lt + 1;
    }
    (bytes.len(), bytes.len())
}

/// One tag as read: its lower-case name, whether it closes or closes itself, the attributes
/// the reduction uses, and how many bytes it spans.
#[derive(Debug, Default)]
struct Tag {
    name: String,
    closing: bool,
    self_closing: bool,
    href: Option<String>,
    alt: Option<String>,
    length: usize,
}

impl Tag {
    /// The tag at the start of `text` (which starts with `<`), or `None` when the `<` starts no
    /// tag (no letter follows it).
    fn read(text: &str) -> Option<Tag> {
        let bytes = text.as_bytes();
        let mut at = 1;
        let closing = bytes.get(at) == Some(&b'/');
        if closing {
            at += 1;
        }
        let start = at;
        while bytes
            .get(at)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'-')
        {
            at += 1;
        }
        if at == start || !bytes[start].is_ascii_alphabetic() {
            return None;
        }
        let mut tag = Tag {
            name: text[start..at].to_ascii_lowercase(),
            closing,
            ..Tag::default()
        };
        // Attributes, up to the `>` outside quotes.
        loop {
            while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
                at += 1;
            }
            match bytes.get(at) {
                None => break,
                Some(b'>') => {
                    at += 1;
                    break;
                }
                Some(b'/') => {
                    tag.self_closing = bytes.get(at + 1) == Some(&b'>');
                    at += 1;
                    continue;
                }
                Some(_) => {}
            }
            let name_start = at;
            while bytes
                .get(at)
                .is_some_and(|b| !b.is_ascii_whitespace() && !matches!(b, b'=' | b'>' | b'/'))
            {
                at += 1;
            }
            let name = text[name_start..at].to_ascii_lowercase();
            if at == name_start {
                // A lone `=`: skip it.
                at += 1;
                continue;
            }
            while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
                at += 1;
            }
            if bytes.get(at) != Some(&b'=') {
                continue;
            }
            at += 1;
            while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
                at += 1;
            }
            let value = match bytes.get(at) {
                Some(&quote @ (b'"' | b'\'')) => {
                    let from = at + 1;
                    let end =
                        memchr::memchr(quote, &bytes[from..]).map_or(bytes.len(), |i| from + i);
                    at = (end + 1).min(bytes.len());
                    &text[from..end]
                }
                _ => {
                    let from = at;
                    while bytes
                        .get(at)
                        .is_some_and(|b| !b.is_ascii_whitespace() && *b != b'>')
                    {
                        at += 1;
                    }
                    &text[from..at]
                }
            };
            match name.as_str() {
                "href" => tag.href = Some(decode(value).trim().to_owned()),
                "alt" => tag.alt = Some(collapse(&decode(value))),
                _ => {}
            }
        }
        tag.length = at;
        Some(tag)
    }
}

/// The text being written: lines, the current one's pending space, the open preformatted
/// blocks, and the link being read.
#[derive(Default)]
struct Reader {
    out: String,
    space: bool,
    pre: usize,
    link: Option<(String, usize)>,
}

impl Reader {
    /// Text between tags: references decoded, whitespace collapsed outside `<pre>`.
    fn text(&mut self, raw: &str) {
        if raw.is_empty() {
            return;
        }
        let text = decode(raw);
        if self.pre > 0 {
            self.out.push_str(&text);
            return;
        }
        for (i, word) in text.split_ascii_whitespace().enumerate() {
            let spaced = i > 0 || text.starts_with(|c: char| c.is_ascii_whitespace());
            if (spaced || self.space) && !self.out.is_empty() && !self.out.ends_with(['\n', ' ']) {
                self.out.push(' ');
            }
            self.space = false;
            self.out.push_str(word);
        }
        if text.ends_with(|c: char| c.is_ascii_whitespace()) {
            self.space = true;
        }
    }

    /// A new line, unless the text is at one.
    fn line(&mut self) {
        self.space = false;
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
    }

    /// A blank line before what follows.
    fn paragraph(&mut self) {
        self.line();
        if !self.out.is_empty() && !self.out.ends_with("\n\n") {
            self.out.push('\n');
        }
    }

    fn tag(&mut self, tag: &Tag) {
        let name = tag.name.as_str();
        match name {
            "pre" if tag.closing => {
                self.pre = self.pre.saturating_sub(1);
                self.paragraph();
            }
            "pre" => {
                self.paragraph();
                self.pre += 1;
            }
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.paragraph();
                if !tag.closing {
                    let level = usize::from(name.as_bytes()[1] - b'0');
                    self.out.push_str(&"#".repeat(level));
                    self.out.push(' ');
                }
            }
            "li" if !tag.closing => {
                self.line();
                self.out.push_str("- ");
            }
            // A cell after another on its row.
            "td" | "th"
                if !tag.closing && !self.out.is_empty() && !self.out.ends_with(['\n', ' ']) =>
            {
                self.out.push_str(" | ");
            }
            "a" if tag.closing => {
                if let Some((href, from)) = self.link.take() {
                    let text = self.out[from..].trim();
                    if !text.is_empty() && text != href {
                        self.out.push_str(&format!(" ({href})"));
                    }
                }
            }
            "a" => {
                self.link = tag
                    .href
                    .clone()
                    .filter(|h| h.starts_with("http://") || h.starts_with("https://"))
                    .map(|h| (h, self.out.len()));
            }
            "img" => {
                if let Some(alt) = tag.alt.as_deref().filter(|a| !a.is_empty()) {
                    self.text(&format!(" [image: {alt}] "));
                }
            }
            "p" | "blockquote" | "table" | "ul" | "ol" | "dl" | "hr" => self.paragraph(),
            _ if BLOCKS.contains(&name) => self.line(),
            _ => {}
        }
    }

    fn finish(self) -> String {
        let mut lines: Vec<&str> = Vec::new();
        for line in self.out.lines().map(str::trim_end) {
            if line.is_empty() && lines.last().is_none_or(|l: &&str| l.is_empty()) {
                continue;
            }
            lines.push(line);
        }
        while lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        lines.join("\n")
    }
}

/// Whitespace runs as one space, trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` with its character references (`&amp;`, decimal `&#…;` and hex `&#x…;`) decoded; an unknown
/// or malformed one stays as written.
pub fn decode(text: &str) -> String {
    if !text.contains('&') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let end = after
            .char_indices()
            .take(MAX_REFERENCE)
            .find(|&(_, c)| c == ';')
            .map(|(i, _)| i);
        match end.and_then(|end| reference(&after[..end]).map(|c| (c, end))) {
            Some((decoded, end)) => {
                out.push(decoded);
                rest = &after[end + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The character a reference names (`amp`, a decimal or a `x` hex number after `#`), if it names one.
fn reference(name: &str) -> Option<char> {
    if let Some(number) = name.strip_prefix('#') {
        let code = match number.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => number.parse::<u32>().ok()?,
        };
        return char::from_u32(code).filter(|c| *c != '\0');
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "laquo" => '«',
        "raquo" => '»',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "bull" => '•',
        "middot" => '·',
        "times" => '×',
        "euro" => '€',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A page reads as its title, headings, paragraphs, list items and links, with scripts,
    /// styles, comments and markup gone and references decoded.
    #[test]
    fn a_page_reads_as_its_text() {
        let page = r#"<!DOCTYPE html>
<html><head><title>Retry &amp; backoff</title>
<style>body { color: red }</style><script>alert("<p>no</p>")</script></head>
<body><nav><a href="/">Home</a></nav>
<h1>Retries</h1>
<p>A call is   retried <b>three</b> times,
with <a href="https://example.com/backoff">exponential backoff</a>.</p>
<!-- a comment <p>hidden</p> -->
<ul><li>first&nbsp;try</li><li>then &#8220;wait&#x201D;</li></ul>
<pre>let x = 1;
  let y = 2;</pre>
<p><img src="a.png" alt="a diagram"> Done &copy; 2026 &bogus; a&amp;b</p>
</body></html>"#;
        assert_eq!(
            readable(page),
            "Title: Retry & backoff\n\nHome\n\n# Retries\n\nA call is retried three times, with exponential backoff (https://example.com/backoff).\n\n- first try\n- then “wait”\n\nlet x = 1;\n  let y = 2;\n\n[image: a diagram] Done © 2026 &bogus; a&b"
        );
    }

    /// Broken markup reads as far as it goes: a stray `<`, an unclosed tag, an unterminated
    /// comment or script, and a table's cells.
    #[test]
    fn broken_markup_reads_as_far_as_it_goes() {
        let cases = [
            ("a < b and c > d", "a < b and c > d"),
            ("<p>open <b>bold", "open bold"),
            ("text <!-- never closed", "text"),
            ("before<script>var a = '</scrip' + 't>';", "before"),
            (
                "<table><tr><th>k</th><td>v</td></tr><tr><td>1</td><td>2</td></tr></table>",
                "k | v\n1 | 2",
            ),
            ("<a href='https://x.org'>https://x.org</a>", "https://x.org"),
            ("<p>x</p><p>y</p>", "x\n\ny"),
            (
                "&#0; &#xD800; &#99999999999;",
                "&#0; &#xD800; &#99999999999;",
            ),
        ];
        let read: Vec<(&str, String)> = cases
            .iter()
            .map(|&(html, _)| (html, readable(html)))
            .collect();
        let want: Vec<(&str, String)> = cases
            .iter()
            .map(|&(html, text)| (html, text.to_owned()))
            .collect();
        assert_eq!(read, want);
    }
}
