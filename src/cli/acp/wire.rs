//! ACP's messages as `rummy acp` reads and writes them (protocol version 1): the requests an
//! editor sends, and the answers, `session/update`s and requests `rummy acp` sends back.
//! camelCase on the wire; an absent optional field is left out. Fields rummy does not use are
//! ignored when read, so an editor may send more than this holds.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;

/// The protocol version `rummy acp` speaks.
pub const PROTOCOL_VERSION: u16 = 1;

/// A JSON-RPC error as the editor reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// Its code.
    pub code: i32,
    /// What went wrong, and what to do about it.
    pub message: String,
}

impl Error {
    /// An error of `code` saying `message`.
    pub fn new(code: i32, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
        }
    }
}

/// JSON-RPC's and ACP's error codes.
pub mod code {
    /// The line is not JSON.
    pub const PARSE_ERROR: i32 = -32700;
    /// Not a request this agent can take now.
    pub const INVALID_REQUEST: i32 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// Params that do not read, or ask for what cannot be.
    pub const INVALID_PARAMS: i32 = -32602;
    /// Something failed on the way (the server, the connection to it).
    pub const INTERNAL_ERROR: i32 = -32603;
    /// Authentication is needed first.
    pub const AUTH_REQUIRED: i32 = -32000;
    /// A session or a run that does not exist.
    pub const RESOURCE_NOT_FOUND: i32 = -32002;
}

/// `initialize`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequest {
    /// The newest version the editor speaks.
    pub protocol_version: u16,
    /// What the editor offers.
    #[serde(default)]
    pub client_capabilities: ClientCapabilities,
}

/// What the editor offers `rummy acp`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    /// It runs commands in its terminal (`terminal/*`).
    #[serde(default)]
    pub terminal: bool,
}

/// `authenticate`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticateRequest {
    /// One of the methods `initialize` listed.
    pub method_id: String,
}

/// `session/new`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionRequest {
    /// The editor's directory: the project's root.
    pub cwd: PathBuf,
    /// The editor's MCP servers, whose tools the session offers its run.
    #[serde(default)]
    pub mcp_servers: Vec<McpServer>,
}

/// `session/load`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadSessionRequest {
    /// The session: a run's alias.
    pub session_id: String,
    /// The editor's directory.
    pub cwd: PathBuf,
    /// The editor's MCP servers, whose tools the session offers its run.
    #[serde(default)]
    pub mcp_servers: Vec<McpServer>,
}

/// An MCP server the editor names for a session: a program to start, speaking on its stdio,
/// or (with `type` `http` or `sse`) a URL, which `rummy acp` does not connect to (its
/// `mcpCapabilities` say so).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct McpServer {
    /// Its name: its tools are offered under it.
    pub name: String,
    /// `http` or `sse`; none (or `stdio`) for a program.
    #[serde(default, rename = "type")]
    pub transport: Option<String>,
    /// The program.
    #[serde(default)]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables added to its environment.
    #[serde(default)]
    pub env: Vec<EnvVariable>,
}

/// A variable of an MCP server's environment.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct EnvVariable {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// `session/prompt`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptRequest {
    /// The session.
    pub session_id: String,
    /// What the person wrote and pointed at.
    pub prompt: Vec<ContentBlock>,
}

/// `session/set_mode`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetModeRequest {
    /// The session.
    pub session_id: String,
    /// `ask` or `act`.
    pub mode_id: String,
}

/// `session/set_config_option`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetConfigOptionRequest {
    /// The session.
    pub session_id: String,
    /// `mode` or `model`.
    pub config_id: String,
    /// The value chosen.
    pub value: Value,
}

/// `session/cancel` (a notification).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelNotification {
    /// The session.
    pub session_id: String,
}

/// A piece of a prompt or of a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image (refused).
    Image {},
    /// Audio (refused).
    Audio {},
    /// A file or another resource, named.
    ResourceLink {
        /// Where it is.
        uri: String,
    },
    /// A file or another resource, with its content.
    Resource {
        /// It.
        resource: EmbeddedResource,
    },
    /// A kind this version does not know.
    #[serde(other)]
    Unknown,
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> ContentBlock {
        ContentBlock::Text { text: text.into() }
    }
}

/// An embedded resource: text, or binary (`blob`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// Where it comes from.
    pub uri: String,
    /// Its text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its bytes, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

/// `session/update`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionNotification {
    /// The session.
    pub session_id: String,
    /// What happened.
    pub update: SessionUpdate,
}

/// What happened in a session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "sessionUpdate",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum SessionUpdate {
    /// What the person said (a replay).
    UserMessageChunk {
        /// It.
        content: ContentBlock,
    },
    /// What the agent says.
    AgentMessageChunk {
        /// It.
        content: ContentBlock,
    },
    /// What the agent thinks.
    AgentThoughtChunk {
        /// It.
        content: ContentBlock,
    },
    /// A tool call, announced.
    ToolCall(ToolCall),
    /// A tool call, changed.
    ToolCallUpdate(ToolCallUpdate),
    /// The plan, whole.
    Plan {
        /// Its entries.
        entries: Vec<PlanEntry>,
    },
    /// The session's mode changed.
    CurrentModeUpdate {
        /// The mode now.
        current_mode_id: String,
    },
    /// The session's config options changed.
    ConfigOptionUpdate {
        /// All of them, as they are now.
        config_options: Vec<ConfigOption>,
    },
}

impl SessionUpdate {
    /// The agent says `text`.
    pub fn message(text: impl Into<String>) -> SessionUpdate {
        SessionUpdate::AgentMessageChunk {
            content: ContentBlock::text(text),
        }
    }
}

/// A tool call as first announced.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// Its id: the entry's path.
    pub tool_call_id: String,
    /// What it does.
    pub title: String,
    /// Its kind.
    pub kind: ToolKind,
    /// Where it stands.
    pub status: ToolCallStatus,
    /// What it shows.
    pub content: Vec<ToolCallContent>,
    /// The files it touches.
    pub locations: Vec<Location>,
    /// What it was called with (a client tool's arguments).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<Value>,
}

/// A tool call's change: only the fields given change.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallUpdate {
    /// Its id.
    pub tool_call_id: String,
    /// What it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ToolKind>,
    /// Where it stands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolCallStatus>,
    /// What it shows (all of it: it replaces what was shown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ToolCallContent>>,
    /// The files it touches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<Location>>,
    /// What it was called with (a client tool's arguments).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<Value>,
}

/// A tool call's kind, which the editor shows with an icon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Reads files or entries.
    Read,
    /// Changes a file.
    Edit,
    /// Removes files.
    Delete,
    /// Moves a file.
    Move,
    /// Searches.
    Search,
    /// Runs a command.
    Execute,
    /// Thinks.
    Think,
    /// Anything else.
    Other,
}

/// Where a tool call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    /// Waiting (for permission).
    Pending,
    /// Running.
    InProgress,
    /// Done.
    Completed,
    /// Failed, or rejected.
    Failed,
}

/// What a tool call shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ToolCallContent {
    /// A piece of content.
    Content {
        /// It.
        content: ContentBlock,
    },
    /// A file's change.
    Diff {
        /// The file.
        path: PathBuf,
        /// The file before (`None`: the change creates it).
        #[serde(skip_serializing_if = "Option::is_none")]
        old_text: Option<String>,
        /// The file after.
        new_text: String,
    },
    /// A terminal of the editor's, which it shows live.
    Terminal {
        /// The terminal.
        terminal_id: String,
    },
}

impl ToolCallContent {
    /// Text.
    pub fn text(text: impl Into<String>) -> ToolCallContent {
        ToolCallContent::Content {
            content: ContentBlock::text(text),
        }
    }
}

/// A file a tool call touches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Location {
    /// The file, as the editor's path.
    pub path: PathBuf,
}

/// One entry of the plan: an open question of the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanEntry {
    /// The question.
    pub content: String,
    /// `medium`: rummy's questions have no priority.
    pub priority: &'static str,
    /// `pending`: an open question.
    pub status: &'static str,
}

/// `session/request_permission`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionRequest {
    /// The session.
    pub session_id: String,
    /// The proposal, as a tool call.
    pub tool_call: ToolCallUpdate,
    /// What the person may answer.
    pub options: Vec<PermissionOption>,
}

/// An answer a permission request offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    /// What the answer names.
    pub option_id: &'static str,
    /// What the editor shows.
    pub name: String,
    /// `allow_once`, `allow_always`, `reject_once` or `reject_always`.
    pub kind: &'static str,
}

/// The editor's answer to a permission request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RequestPermissionResponse {
    /// The answer.
    pub outcome: PermissionOutcome,
}

/// A permission request's answer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PermissionOutcome {
    /// The prompt was cancelled before the person answered.
    Cancelled,
    /// The person chose an option.
    Selected {
        /// Which.
        #[serde(rename = "optionId")]
        option_id: String,
    },
}

/// How a prompt ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The loop concluded.
    EndTurn,
    /// The context did not fit.
    MaxTokens,
    /// The turn limit.
    MaxTurnRequests,
    /// The prompt was cancelled.
    Cancelled,
}

/// `session/prompt`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptResponse {
    /// How the prompt ended.
    pub stop_reason: StopReason,
}

/// The session's modes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModeState {
    /// The mode now.
    pub current_mode_id: String,
    /// Every mode.
    pub available_modes: Vec<Mode>,
}

/// A mode.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mode {
    /// Its id.
    pub id: &'static str,
    /// Its name.
    pub name: &'static str,
    /// What it does.
    pub description: &'static str,
}

/// A config option of the session: a choice among values.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigOption {
    /// `mode` or `model`.
    pub id: &'static str,
    /// Its name.
    pub name: &'static str,
    /// `mode` or `model`: how the editor places it.
    pub category: &'static str,
    /// `select`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The value now.
    pub current_value: String,
    /// The values to choose from.
    pub options: Vec<SelectOption>,
}

/// A value of a config option.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SelectOption {
    /// The value.
    pub value: String,
    /// Its name.
    pub name: String,
    /// What it means.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `session/new`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionResponse {
    /// The session: its run's alias.
    pub session_id: String,
    /// Its modes.
    pub modes: ModeState,
    /// Its config options.
    pub config_options: Vec<ConfigOption>,
}

/// `session/load`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadSessionResponse {
    /// Its modes.
    pub modes: ModeState,
    /// Its config options.
    pub config_options: Vec<ConfigOption>,
}

/// `session/set_config_option`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetConfigOptionResponse {
    /// All the session's config options, as they are now.
    pub config_options: Vec<ConfigOption>,
}

/// An empty answer (`authenticate`, `session/set_mode`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Empty {}

/// `terminal/create`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTerminalRequest {
    /// The session.
    pub session_id: String,
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Where it runs.
    pub cwd: PathBuf,
    /// The most output the terminal keeps (its beginning is dropped past it).
    pub output_byte_limit: u64,
}

/// `terminal/create`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTerminalResponse {
    /// The terminal.
    pub terminal_id: String,
}

/// `terminal/output`, `terminal/wait_for_exit`, `terminal/kill` and `terminal/release`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalRequest {
    /// The session.
    pub session_id: String,
    /// The terminal.
    pub terminal_id: String,
}

/// `terminal/output`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TerminalOutputResponse {
    /// What the command wrote, as the terminal keeps it.
    pub output: String,
}

/// `terminal/wait_for_exit`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExitStatus {
    /// Its exit code (none when a signal ended it).
    #[serde(default)]
    pub exit_code: Option<i64>,
    /// The signal that ended it.
    #[serde(default)]
    pub signal: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn updates_read_as_acp_writes_them() {
        let update = SessionNotification {
            session_id: "acp_1".into(),
            update: SessionUpdate::ToolCall(ToolCall {
                tool_call_id: "set://turn_1/a".into(),
                title: "Edit a".into(),
                kind: ToolKind::Edit,
                status: ToolCallStatus::InProgress,
                content: vec![ToolCallContent::Diff {
                    path: "/p/a".into(),
                    old_text: None,
                    new_text: "x".into(),
                }],
                locations: vec![Location {
                    path: "/p/a".into(),
                }],
                raw_input: None,
            }),
        };
        assert_eq!(
            serde_json::to_value(&update).unwrap(),
            json!({
                "sessionId": "acp_1",
                "update": {
                    "sessionUpdate": "tool_call", "toolCallId": "set://turn_1/a", "title": "Edit a",
                    "kind": "edit", "status": "in_progress",
                    "content": [{ "type": "diff", "path": "/p/a", "newText": "x" }],
                    "locations": [{ "path": "/p/a" }],
                },
            })
        );
        assert_eq!(
            serde_json::to_value(SessionUpdate::CurrentModeUpdate {
                current_mode_id: "ask".into()
            })
            .unwrap(),
            json!({ "sessionUpdate": "current_mode_update", "currentModeId": "ask" })
        );
    }

    #[test]
    fn prompts_read_every_block_kind() {
        let prompt: PromptRequest = serde_json::from_value(json!({
            "sessionId": "s",
            "prompt": [
                { "type": "text", "text": "hi", "annotations": null },
                { "type": "image", "data": "aGk=", "mimeType": "image/png" },
                { "type": "resource_link", "uri": "file:///p/a", "name": "a" },
                { "type": "resource", "resource": { "uri": "file:///p/b", "text": "b" } },
                { "type": "hologram" },
            ],
        }))
        .unwrap();
        assert_eq!(
            prompt.prompt,
            vec![
                ContentBlock::text("hi"),
                ContentBlock::Image {},
                ContentBlock::ResourceLink {
                    uri: "file:///p/a".into()
                },
                ContentBlock::Resource {
                    resource: EmbeddedResource {
                        uri: "file:///p/b".into(),
                        text: Some("b".into()),
                        blob: None
                    }
                },
                ContentBlock::Unknown,
            ]
        );
    }

    #[test]
    fn sessions_read_their_mcp_servers() {
        let new: NewSessionRequest = serde_json::from_value(json!({
            "cwd": "/p",
            "mcpServers": [
                { "name": "fs", "command": "mcp-fs", "args": ["/p"], "env": [{ "name": "A", "value": "1" }] },
                { "type": "http", "name": "web", "url": "https://mcp.example", "headers": [] },
            ],
        }))
        .unwrap();
        assert_eq!(
            new.mcp_servers,
            vec![
                McpServer {
                    name: "fs".into(),
                    transport: None,
                    command: Some("mcp-fs".into()),
                    args: vec!["/p".into()],
                    env: vec![EnvVariable {
                        name: "A".into(),
                        value: "1".into()
                    }],
                },
                McpServer {
                    name: "web".into(),
                    transport: Some("http".into()),
                    command: None,
                    args: vec![],
                    env: vec![],
                },
            ]
        );
        let load: LoadSessionRequest =
            serde_json::from_value(json!({ "sessionId": "acp_1", "cwd": "/p" })).unwrap();
        assert_eq!(load.mcp_servers, vec![]);
    }

    #[test]
    fn permission_answers_read() {
        let selected: RequestPermissionResponse = serde_json::from_value(
            json!({ "outcome": { "outcome": "selected", "optionId": "allow_once" } }),
        )
        .unwrap();
        assert_eq!(
            selected.outcome,
            PermissionOutcome::Selected {
                option_id: "allow_once".into()
            }
        );
        let cancelled: RequestPermissionResponse =
            serde_json::from_value(json!({ "outcome": { "outcome": "cancelled" } })).unwrap();
        assert_eq!(cancelled.outcome, PermissionOutcome::Cancelled);
    }
}
