//! The model's tools by name: the one type every layer matches on, parsed once where a reply is read.
//!
//! A tag, a native call's name or a result entry's scheme is text; the parser turns it into a
//! [`ToolName`] when it builds the command, and everything after (dispatch, policy, views, the
//! referee, the actors) matches on the enum. Adding a tool is then a new variant, and the
//! compiler lists every place that must say what it does.

use serde::Serialize;
use std::fmt;

/// One of the model's tools. Declared in advertised order (gather → reason → act →
/// communicate), which `Ord` follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolName {
    /// Read entries or files into the context.
    Get,
    /// Ask the web search backend.
    Search,
    /// Propose a command that inspects the environment.
    Env,
    /// Private reasoning, never dispatched.
    Think,
    /// Write or edit an entry or a file.
    Set,
    /// Copy an entry or a file.
    Cp,
    /// Move an entry or a file.
    Mv,
    /// Remove entries or files.
    Rm,
    /// Propose a shell command.
    Sh,
    /// The turn's status report and lifecycle signal.
    Update,
    /// Ask the user a question.
    AskUser,
    /// Call a tool a client offered the run (an editor's MCP server's).
    Call,
}

impl ToolName {
    /// Every tool, in advertised order.
    pub const ALL: [ToolName; 12] = [
        ToolName::Get,
        ToolName::Search,
        ToolName::Env,
        ToolName::Think,
        ToolName::Set,
        ToolName::Cp,
        ToolName::Mv,
        ToolName::Rm,
        ToolName::Sh,
        ToolName::Update,
        ToolName::AskUser,
        ToolName::Call,
    ];

    /// The tool's name as the model writes it: its tag, and the scheme of its results.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::Get => "get",
            ToolName::Search => "search",
            ToolName::Env => "env",
            ToolName::Think => "think",
            ToolName::Set => "set",
            ToolName::Cp => "cp",
            ToolName::Mv => "mv",
            ToolName::Rm => "rm",
            ToolName::Sh => "sh",
            ToolName::Update => "update",
            ToolName::AskUser => "ask_user",
            ToolName::Call => "call",
        }
    }

    /// The tool whose canonical (lower-case) name, or result scheme, is `name`.
    pub fn from_scheme(name: &str) -> Option<ToolName> {
        Some(match name {
            "get" => ToolName::Get,
            "search" => ToolName::Search,
            "env" => ToolName::Env,
            "think" => ToolName::Think,
            "set" => ToolName::Set,
            "cp" => ToolName::Cp,
            "mv" => ToolName::Mv,
            "rm" => ToolName::Rm,
            "sh" => ToolName::Sh,
            "update" => ToolName::Update,
            "ask_user" => ToolName::AskUser,
            "call" => ToolName::Call,
            _ => return None,
        })
    }

    /// The tool a tag name in any case names, if it names one.
    pub fn parse(name: &str) -> Option<ToolName> {
        ToolName::from_scheme(name).or_else(|| {
            ToolName::ALL
                .into_iter()
                .find(|tool| tool.as_str().eq_ignore_ascii_case(name))
        })
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Every tool reads back from its name, in any case, and `ALL` lists each once in order.
    #[test]
    fn names_round_trip() {
        let back: Vec<Option<ToolName>> = ToolName::ALL
            .iter()
            .map(|t| ToolName::parse(&t.as_str().to_uppercase()))
            .collect();
        assert_eq!(back, ToolName::ALL.map(Some).to_vec());
        let ascending = ToolName::ALL.windows(2).all(|w| w[0] < w[1]);
        assert_eq!(ascending, true, "declared once each, in advertised order");
        assert_eq!(
            (ToolName::parse("fly"), ToolName::from_scheme("GET")),
            (None, None)
        );
    }
}
