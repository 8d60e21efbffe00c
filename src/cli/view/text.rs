//! Text as it is shown: the model's streamed reply, diffs, and counts.

use super::Style;

/// Shows the model's streamed reply: its tool tags faint, what it thinks (`<think>`, or
/// reasoning the provider streams apart) faint, anything else as it is. Its state carries over
/// from line to line.
#[derive(Debug, Default)]
pub struct Highlighter {
    in_tag: bool,
    thinking: bool,
    /// The lines are the provider's reasoning stream: all faint.
    pub reasoning: bool,
}

impl Highlighter {
    /// One line of the reply, painted.
    pub fn line(&mut self, line: &str, style: Style) -> String {
        let mut out = String::new();
        let mut run = String::new();
        let mut run_faint = self.faint();
        for c in line.chars() {
            if c == '<' && !self.in_tag {
                let rest_faint = true;
                if run_faint != rest_faint {
                    flush(&mut out, &mut run, run_faint, style);
                    run_faint = rest_faint;
                }
                self.in_tag = true;
                run.push(c);
                continue;
            }
            if c == '>' && self.in_tag {
                run.push(c);
                self.in_tag = false;
                let tag = run.rsplit('<').next().unwrap_or_default().to_owned();
                if tag.starts_with("think") {
                    self.thinking = true;
                } else if tag.starts_with("/think") {
                    self.thinking = false;
                }
                let next = self.faint();
                if next != run_faint {
                    flush(&mut out, &mut run, run_faint, style);
                    run_faint = next;
                }
                continue;
            }
            run.push(c);
        }
        flush(&mut out, &mut run, run_faint, style);
        out
    }

    fn faint(&self) -> bool {
        self.in_tag || self.thinking || self.reasoning
    }
}

fn flush(out: &mut String, run: &mut String, faint: bool, style: Style) {
    if run.is_empty() {
        return;
    }
    if faint {
        out.push_str(&style.dim(run));
    } else {
        out.push_str(run);
    }
    run.clear();
}

/// A unified diff's lines, coloured: additions green, removals red, hunk headers cyan, file
/// headers bold.
pub fn diff_lines(diff: &str, style: Style) -> Vec<String> {
    diff.lines()
        .map(|line| {
            if line.starts_with("+++") || line.starts_with("---") {
                style.bold(line)
            } else if line.starts_with("@@") {
                style.cyan(line)
            } else if line.starts_with('+') {
                style.green(line)
            } else if line.starts_with('-') {
                style.red(line)
            } else if line.starts_with('\\') {
                style.dim(line)
            } else {
                line.to_owned()
            }
        })
        .collect()
}

/// A count in few characters: `950`, `1.2k`, `34k`, `1.5M`.
pub fn short_count(n: i64) -> String {
    let n = n.max(0) as f64;
    if n < 1_000.0 {
        format!("{n}")
    } else if n < 10_000.0 {
        format!("{:.1}k", n / 1_000.0)
    } else if n < 1_000_000.0 {
        format!("{:.0}k", n / 1_000.0)
    } else {
        format!("{:.1}M", n / 1_000_000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Tags and thinking are faint, the rest is plain; the state carries over lines.
    #[test]
    fn tags_and_thinking_are_faint() {
        let style = Style::new(true);
        let mut h = Highlighter::default();
        assert_eq!(
            h.line("<get path=\"a\"/> ok", style),
            "\x1b[2m<get path=\"a\"/>\x1b[0m ok"
        );
        assert_eq!(h.line("<think>hmm", style), "\x1b[2m<think>hmm\x1b[0m");
        assert_eq!(
            h.line("still</think>x", style),
            "\x1b[2mstill</think>\x1b[0mx"
        );
    }

    /// Without colour the reply is shown as it is.
    #[test]
    fn plain_highlighting_changes_nothing() {
        let mut h = Highlighter::default();
        assert_eq!(
            h.line("<set path=\"k\">v</set>", Style::new(false)),
            "<set path=\"k\">v</set>"
        );
    }

    /// A diff's lines by kind.
    #[test]
    fn diffs_are_coloured_by_line() {
        let lines = diff_lines(
            "--- a\n+++ a\n@@ -1 +1 @@\n-old\n+new\n same",
            Style::new(true),
        );
        assert_eq!(
            lines,
            vec![
                "\x1b[1m--- a\x1b[0m",
                "\x1b[1m+++ a\x1b[0m",
                "\x1b[36m@@ -1 +1 @@\x1b[0m",
                "\x1b[31m-old\x1b[0m",
                "\x1b[32m+new\x1b[0m",
                " same"
            ]
        );
    }

    /// Counts shrink to a few characters.
    #[test]
    fn counts_are_short() {
        let shown: Vec<String> = [950, 1_234, 34_567, 1_500_000]
            .into_iter()
            .map(short_count)
            .collect();
        assert_eq!(shown, vec!["950", "1.2k", "35k", "1.5M"]);
    }
}
