//! Colours, only when they are wanted: on a terminal, and not when `NO_COLOR` is set.

/// Paints text with ANSI colours, or leaves it plain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    colour: bool,
}

impl Style {
    /// Colours on or off.
    pub fn new(colour: bool) -> Style {
        Style { colour }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.colour && !text.is_empty() {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// Faint: the model's working text, secondary details.
    pub fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }

    /// Bold.
    pub fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }

    /// Red: failures, removed lines.
    pub fn red(self, text: &str) -> String {
        self.paint("31", text)
    }

    /// Green: success, added lines.
    pub fn green(self, text: &str) -> String {
        self.paint("32", text)
    }

    /// Yellow: waiting on you.
    pub fn yellow(self, text: &str) -> String {
        self.paint("33", text)
    }

    /// Cyan: hunk headers, names.
    pub fn cyan(self, text: &str) -> String {
        self.paint("36", text)
    }

    /// Magenta: commands.
    pub fn magenta(self, text: &str) -> String {
        self.paint("35", text)
    }

    /// Inverse video: the status line.
    pub fn inverse(self, text: &str) -> String {
        self.paint("7", text)
    }
}

/// Whether colours are wanted on a stream that is (or is not) a terminal, given `NO_COLOR`
/// and `TERM` (<https://no-color.org>: set and not empty means no colour).
pub fn wanted(terminal: bool, no_color: Option<&str>, term: Option<&str>) -> bool {
    terminal && no_color.is_none_or(str::is_empty) && term != Some("dumb")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Colours only on a terminal, never with NO_COLOR set (even to "0"), nor on a dumb one.
    #[test]
    fn colours_follow_the_terminal_and_no_color() {
        let cases = [
            (true, None, Some("xterm")),
            (false, None, Some("xterm")),
            (true, Some("1"), Some("xterm")),
            (true, Some("0"), None),
            (true, Some(""), None),
            (true, None, Some("dumb")),
        ];
        let got: Vec<bool> = cases
            .iter()
            .map(|(t, n, term)| wanted(*t, *n, *term))
            .collect();
        assert_eq!(got, vec![true, false, false, false, true, false]);
    }

    /// Plain style leaves text as it is; colour wraps it in one code and a reset.
    #[test]
    fn painting() {
        assert_eq!(Style::new(false).red("x"), "x");
        assert_eq!(Style::new(true).red("x"), "\x1b[31mx\x1b[0m");
        assert_eq!(Style::new(true).red(""), "");
    }
}
