//! The model's tools: their names in advertised order, which ones this server serves, and their model-facing docs.
//!
//! Docs live in `*.md` files beside this module. Inside them, HTML comments
//! hold the rationale for the next line; they are stripped before the model
//! sees the text.

use crate::run::Mode;

/// Every tool name the parser recognises, in the order tools are advertised (gather → reason → act → communicate).
pub const TOOL_ORDER: &[&str] = &[
    "get", "search", "env", "think", "set", "cp", "mv", "rm", "sh", "update", "ask_user",
];

/// The tools this server dispatches today; the others are refused with a visible reason.
pub const SERVED: &[&str] = &["set", "update"];

/// Lifecycle tools: always applied, never aborted by an earlier failure.
pub const LIFECYCLE: &[&str] = &["update", "think"];

const PREAMBLE: &str = include_str!("preamble.md");

fn doc(tool: &str) -> Option<&'static str> {
    match tool {
        "set" => Some(include_str!("set.md")),
        "update" => Some(include_str!("update.md")),
        _ => None,
    }
}

/// The tools offered to the model for a loop in `mode`, in advertised order.
///
/// Ask mode may still write `known://`/`unknown://` with `set`, so both modes
/// offer the same served tools today; mode-specific removals arrive with the
/// file-changing tools.
pub fn active_tools(_mode: Mode) -> Vec<&'static str> {
    TOOL_ORDER
        .iter()
        .copied()
        .filter(|t| SERVED.contains(t))
        .collect()
}

/// Removes `<!-- … -->` rationale comments; a line that held only a comment disappears.
pub fn strip_rationale(text: &str) -> String {
    let mut out = Vec::new();
    let mut in_comment = false;
    for line in text.lines() {
        let mut kept = String::new();
        let mut rest = line;
        let mut had_comment = in_comment;
        loop {
            if in_comment {
                match rest.find("-->") {
                    Some(end) => {
                        rest = &rest[end + 3..];
                        in_comment = false;
                    }
                    None => break,
                }
            } else if let Some(start) = rest.find("<!--") {
                kept.push_str(&rest[..start]);
                rest = &rest[start + 4..];
                in_comment = true;
                had_comment = true;
            } else {
                kept.push_str(rest);
                break;
            }
        }
        if !(had_comment && kept.trim().is_empty()) {
            out.push(kept);
        }
    }
    out.join("\n").trim().to_owned()
}

/// The instructions that open the system message: preamble, tool list and the docs of the active tools.
pub fn instructions(tools: &[&str], max_commands: usize, persona: Option<&str>) -> String {
    let docs: Vec<String> = tools
        .iter()
        .filter_map(|t| doc(t))
        .map(strip_rationale)
        .collect();
    let mut text = strip_rationale(PREAMBLE)
        .replace("[%MAX%]", &max_commands.to_string())
        .replace("[%TOOLS%]", &tools.join(", "))
        .replace("[%TOOLDOCS%]", &docs.join("\n\n"));
    if let Some(persona) = persona.map(str::trim).filter(|p| !p.is_empty()) {
        text.push_str("\n\n## Persona\n\n");
        text.push_str(persona);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rationale comments never reach the model; the lines they explain do.
    #[test]
    fn rationale_is_stripped() {
        let text = instructions(&["set", "update"], 15, None);
        assert!(!text.contains("<!--") && !text.contains("why:"), "{text}");
        assert!(text.contains("at most 15 per turn"));
        assert!(text.contains("Tools available: set, update"));
        assert!(text.contains("## <set path="));
        assert!(text.contains("## <update status="));
        assert!(!text.contains("\n\n\n"));
    }

    /// Only served tools are advertised, and a persona is appended.
    #[test]
    fn advertises_served_tools_and_persona() {
        assert_eq!(active_tools(Mode::Act), vec!["set", "update"]);
        let text = instructions(&["update"], 15, Some("Be terse."));
        assert!(!text.contains("## <set"));
        assert!(text.ends_with("## Persona\n\nBe terse."));
    }
}
