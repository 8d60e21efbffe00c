//! A candidate's text split into its sections: recall injects the parts of a memory or a session state that match, not the whole of it.
//!
//! A section starts at a Markdown ATX heading (`#` to `######` and a space, outside fenced code)
//! and runs to the next; the text before the first heading is a section without a title. A
//! section with nothing but its heading (a session state keeps empty sections as headings) is
//! no candidate. Splitting never fails: text that is not Markdown is one section.

/// One section of a candidate's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Its heading's text (`""` for the text before the first heading).
    pub title: String,
    /// Its text under the heading, trimmed.
    pub content: String,
}

/// The heading text of `line`, if it is an ATX heading.
fn heading(line: &str) -> Option<&str> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let hashes = trimmed.len() - trimmed.trim_start_matches('#').len();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &trimmed[hashes..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    Some(rest.trim().trim_end_matches('#').trim())
}

/// Whether `line` opens or closes a fenced code block.
fn fence(line: &str) -> bool {
    let trimmed = line.trim_start();
    trimmed.starts_with("```") || trimmed.starts_with("~~~")
}

/// The sections of `body` that have content, in order.
pub fn split(body: &str) -> Vec<Section> {
    let mut sections = Vec::new();
    let mut title = String::new();
    let mut lines: Vec<&str> = Vec::new();
    let mut in_code = false;
    let mut close = |title: &str, lines: &[&str]| {
        let content = lines.join("\n").trim().to_owned();
        if !content.is_empty() {
            sections.push(Section {
                title: title.to_owned(),
                content,
            });
        }
    };
    for line in body.lines() {
        if fence(line) {
            in_code = !in_code;
        } else if !in_code {
            if let Some(text) = heading(line) {
                close(&title, &lines);
                title = text.to_owned();
                lines.clear();
                continue;
            }
        }
        lines.push(line);
    }
    close(&title, &lines);
    sections
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn s(title: &str, content: &str) -> Section {
        Section {
            title: title.into(),
            content: content.into(),
        }
    }

    /// A session state splits into its sections, empty ones left out, in a stable order;
    /// splitting again gives the same sections.
    #[test]
    fn splits_at_headings_and_drops_empty_sections() {
        let state = "# Fix the billing export\n\n## Current state\nCSV export fails on empty rows.\n\n## User intent\n\n## Next steps\n- handle empty rows\n- add a test\n";
        let want = vec![
            s("Current state", "CSV export fails on empty rows."),
            s("Next steps", "- handle empty rows\n- add a test"),
        ];
        assert_eq!(split(state), want);
        assert_eq!(split(state), split(state));
    }

    /// Text before the first heading is a section of its own; plain text is one section.
    #[test]
    fn text_without_headings_is_one_section() {
        assert_eq!(
            split("Production runs on prod-3.\nDeploys go through CI."),
            vec![s("", "Production runs on prod-3.\nDeploys go through CI.")]
        );
        assert_eq!(
            split("intro\n## Hosts\nprod-3"),
            vec![s("", "intro"), s("Hosts", "prod-3")]
        );
    }

    /// Malformed Markdown never fails: `#` without a space, `#` in fenced code, seven `#`,
    /// an unclosed fence and closing `#`s are handled; empty or blank text has no section.
    #[test]
    fn malformed_markdown_is_read_as_text() {
        let body = "#notaheading\n####### nor this\n## Real ##\n```\n# code comment\n```\nafter\n## Open fence\n```\n# still code";
        assert_eq!(
            split(body),
            vec![
                s("", "#notaheading\n####### nor this"),
                s("Real", "```\n# code comment\n```\nafter"),
                s("Open fence", "```\n# still code"),
            ]
        );
        assert_eq!(split(""), vec![]);
        assert_eq!(split("  \n\n## Only a heading\n"), vec![]);
    }
}
