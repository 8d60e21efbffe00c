//! sed `s` commands: any punctuation delimiter, escaped delimiters, flags, and chains (`s|a|b|g;s#c#d#`).
//!
//! A delimiter is ASCII punctuation other than `\ . - _ ' " `` ` `` and
//! brackets: those begin ordinary text too often (`s.t.`, `s-expr`, `s[0]`)
//! for a body starting with them to be read as a command. `\<delimiter>`
//! stands for the delimiter itself; every other escape is kept for the regex
//! or the replacement to read. Search and replacement never span a raw line
//! break, so a command ends at its line.

/// One `s<d>search<d>replace<d>flags` command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SedCommand {
    /// The regex to find, with escaped delimiters already unescaped.
    pub search: String,
    /// The replacement template (`$1`, `\1`, `$&` refer to the match).
    pub replace: String,
    /// The flag letters given (`g`, `i`, `m`, `s`, …), in order.
    pub flags: String,
}

/// Flag letters a command may carry: JavaScript's, plus GNU sed's `I` and `M`.
const FLAG_CHARS: &str = "gimsuvyIM";

/// Separators allowed between chained commands.
fn is_separator(c: char) -> bool {
    c.is_whitespace() || c == ';'
}

/// True when `c` may delimit a command (see the module doc).
fn is_delimiter(c: char) -> bool {
    c.is_ascii_punctuation()
        && !matches!(
            c,
            '\\' | '.'
                | '-'
                | '_'
                | '\''
                | '"'
                | '`'
                | '('
                | ')'
                | '['
                | ']'
                | '{'
                | '}'
                | '<'
                | '>'
        )
}

/// One command read from the start of a text.
struct Read<'a> {
    command: SedCommand,
    /// Whether the replacement had its closing delimiter.
    closed: bool,
    /// The text after the command (after its flags, or at the line break that ended it).
    rest: &'a str,
}

/// Reads one part up to an unescaped `delim`: its text and the rest after the delimiter,
/// or `Err(text, rest)` when a line break or the end came first (`rest` starts there).
fn part(text: &str, delim: char) -> Result<(String, &str), (String, &str)> {
    let mut out = String::new();
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, next)) if next == delim => out.push(delim),
                Some((_, '\n')) | None => return Err((out, &text[at..])),
                Some((_, next)) => {
                    out.push('\\');
                    out.push(next);
                }
            },
            '\n' => return Err((out, &text[at..])),
            c if c == delim => return Ok((out, &text[at + c.len_utf8()..])),
            c => out.push(c),
        }
    }
    Err((out, ""))
}

/// Reads one command at the very start of `text`, if there is one.
fn read(text: &str) -> Option<Read<'_>> {
    let mut chars = text.chars();
    if chars.next() != Some('s') {
        return None;
    }
    let delim = chars.next().filter(|&c| is_delimiter(c))?;
    let after = &text[1 + delim.len_utf8()..];
    let (search, after) = part(after, delim).ok()?;
    if search.is_empty() {
        return None;
    }
    match part(after, delim) {
        Ok((replace, after)) => {
            let flag_len = after
                .find(|c: char| !FLAG_CHARS.contains(c))
                .unwrap_or(after.len());
            Some(Read {
                command: SedCommand {
                    search,
                    replace,
                    flags: after[..flag_len].to_owned(),
                },
                closed: true,
                rest: &after[flag_len..],
            })
        }
        Err((replace, rest)) => Some(Read {
            command: SedCommand {
                search,
                replace: replace.trim_end().to_owned(),
                flags: String::new(),
            },
            closed: false,
            rest,
        }),
    }
}

/// Reads a `set` body made of sed commands, or `None` if it does not start with one.
///
/// Commands may be chained with `;`, spaces or line breaks. Text between
/// commands that is not a command (a numeric flag, a stray word) is skipped,
/// except after a first command missing its closing delimiter: then the body
/// is prose that happens to start like sed, and `None` is returned.
pub fn parse_script(body: &str) -> Option<Vec<SedCommand>> {
    let first = read(body.trim_start())?;
    let mut commands = vec![first.command];
    let mut rest = first.rest;
    let mut skip_junk = first.closed;
    loop {
        let trimmed = rest.trim_start_matches(is_separator);
        if trimmed.is_empty() {
            return Some(commands);
        }
        if let Some(next) = read(trimmed) {
            commands.push(next.command);
            rest = next.rest;
            skip_junk = true;
            continue;
        }
        if !skip_junk {
            return None;
        }
        match next_command(trimmed) {
            Some(next) => rest = next,
            None => return Some(commands),
        }
    }
}

/// The text from the next command start (`s<delim>` after a separator) in `text`, if any.
fn next_command(text: &str) -> Option<&str> {
    let mut previous = ' ';
    for (at, c) in text.char_indices() {
        if c == 's' && is_separator(previous) && read(&text[at..]).is_some() {
            return Some(&text[at..]);
        }
        previous = c;
    }
    None
}

/// Reads a whole pattern as exactly one closed command with valid flags, or `None`.
pub fn parse_pattern(pattern: &str) -> Option<SedCommand> {
    let read = read(pattern)?;
    (read.closed && read.rest.is_empty()).then_some(read.command)
}
