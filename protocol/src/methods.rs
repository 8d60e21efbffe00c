//! The method table: every method of the protocol once — its wire name, params, result and
//! what `discover` says of it. [`for_each_method!`] hands the table to a macro of the caller's,
//! so each side generates its half from it: this crate the catalogue data ([`METHODS`]), a
//! marker type per method ([`Method`]) and the typed [`Request`]; the server its routing (one
//! handler per method, by name); clients their typed calls.
//!
//! Each entry reads
//! `Variant handler "wire/name" (Params) -> Result { requires_hello, long_running, description,
//! params: { "wireName": "what it is for" [in VALUES], … } }`: the params' JSON types, aliases
//! and required-ness are read from the params type itself ([`crate::shape`]), so only what
//! serde cannot tell is written here.

use crate::catalogue::{MethodDoc, ParamDoc};
use crate::shape::{shape_of, FieldShape};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Entry states, as `state` params take them.
pub const STATES: &[&str] = &["proposed", "streaming", "resolved", "failed", "cancelled"];
/// Entry visibilities, as `visibility` params take them.
pub const VISIBILITIES: &[&str] = &["visible", "summarized", "archived"];
/// The cost periods `project/set` takes.
pub const PERIODS: &[&str] = &["month", "day"];

/// Calls `$callback!` with the whole method table, in catalogue order (the order `discover`
/// was written in; its answer is keyed by name).
#[macro_export]
macro_rules! for_each_method {
    ($callback:ident) => {
        $callback! {
            Ping ping "ping" ($crate::params::NoParams) -> $crate::results::Pong {
                requires_hello: false, long_running: false,
                description: "Liveness check; answers {}.",
                params: {},
            },
            Discover discover "discover" ($crate::params::NoParams) -> $crate::catalogue::Catalogue {
                requires_hello: false, long_running: false,
                description: "The live catalogue of methods and notifications.",
                params: {},
            },
            GetProjects get_projects "getProjects" ($crate::params::ProjectsParams) -> Vec<$crate::results::Project> {
                requires_hello: false, long_running: false,
                description: "The projects this connection may open, by name: [{name, projectId, projectRoot, createdAt, costCeiling, period, periodStart, spent, commandNetwork, webDomains}] — spent: what its turns cost (USD) since periodStart; commandNetwork: whether its accepted commands reach the network as an admin set it (null: the server's setting); webDomains: the domains its model fetches from without asking (null: its web fetch is off).",
                params: {
                    "token": "a token, for clients that cannot send Authorization: Bearer on the upgrade; once any token exists every connection needs one (-32001 without, and the connection closes)",
                    "limit": "page size (default 100, at most 1000)",
                    "offset": "items to skip",
                },
            },
            Hello hello "rummy/hello" ($crate::params::HelloParams) -> $crate::results::Hello {
                requires_hello: false, long_running: true,
                description: "Binds the connection to a project (created by the first hello with a projectRoot; a name alone opens an existing one); answers {rummyVersion, protocolVersion, projectId, projectRoot, maxTurns}. Calls sent after it without waiting (or after it in a batch) are handled once it has completed.",
                params: {
                    "name": "the project's name",
                    "projectRoot": "absolute path of the project's directory on the server: creates the project, or must equal an existing one's (-32005 otherwise); absent, the existing project of that name is opened (-32004 when there is none)",
                    "configPath": "client configuration path",
                    "clientVersion": "protocol version the client speaks; another MAJOR is refused",
                    "token": "a token, for clients that cannot send Authorization: Bearer on the upgrade; once any token exists every connection needs one (-32001 without, and the connection closes)",
                },
            },
            GetModels get_models "getModels" ($crate::params::Page) -> Vec<$crate::results::Model> {
                requires_hello: false, long_running: false,
                description: "Model aliases: [{alias, actual, contextLength, fallback, configured}] — configured: whether the server's environment defines it now (false: the database keeps it from an earlier start's environment or an addModel). Served before rummy/hello.",
                params: {
                    "limit": "page size (default 100, at most 1000)",
                    "offset": "items to skip",
                },
            },
            AddModel add_model "addModel" ($crate::params::AddModelParams) -> $crate::results::AddedModel {
                requires_hello: false, long_running: false,
                description: "Adds or replaces a model alias; answers {id, alias}. Admin-only once tokens exist. Served before rummy/hello.",
                params: {
                    "alias": "the alias runs name",
                    "actual": "<provider>/<model>",
                    "contextLength": "context window in tokens",
                    "fallback": "alias to fall back to on transport failures",
                },
            },
            RemoveModel remove_model "removeModel" ($crate::params::AliasParams) -> $crate::acks::Ack {
                requires_hello: false, long_running: false,
                description: "Removes a model alias. Admin-only once tokens exist. Served before rummy/hello.",
                params: {
                    "alias": "the alias",
                },
            },
            GetRoutes get_routes "getRoutes" ($crate::params::NoParams) -> Vec<$crate::results::RouteClass> {
                requires_hello: false, long_running: false,
                description: "Routing's class → model map as the server is configured: [{class, model, variable}] for code, reasoning and default; model null: a run with route: true keeps its own model for that class. Served before rummy/hello.",
                params: {},
            },
            RouteCheck route_check "route/check" ($crate::params::RouteCheckParams) -> $crate::results::RouteCheck {
                requires_hello: true, long_running: false,
                description: "What routing would do with a text as a loop's prompt: {class, mapped, run, routing, model, reason} — its class, the alias the class maps to, whether routing is on (the run's route setting; without a run, whether any class is mapped), the model the loop would use, and why in words (saying so when routing is off). Classifies only: nothing is called or stored.",
                params: {
                    "text": "the text, as a loop's prompt",
                    "run": "a run alias: its route setting and model decide; absent, a run with route: true",
                },
            },
            GetRuns get_runs "getRuns" ($crate::params::Page) -> Vec<$crate::results::RunSummary> {
                requires_hello: true, long_running: false,
                description: "The project's runs, newest first: [{run, status, turn, summary, model, created, tokens, cost}].",
                params: {
                    "limit": "page size (default 100, at most 1000)",
                    "offset": "items to skip",
                },
            },
            GetRun get_run "getRun" ($crate::params::GetRunParams) -> $crate::results::RunSnapshot {
                requires_hello: true, long_running: false,
                description: "One run's whole state: {run, status, stopReason, queued, mode, turn, model, route, temperature, persona, contextLimit, summary, history, unknowns, recall, telemetry, lastSeq, created}; with sinceSeq also missed: the notifications it pushed after that seq, [{method, params}]; with limit, history is a page of it (counted from the newest entry) and historyTotal the number of entries. Bodies, the history's and the replayed pushes', are at most RUMMY_INLINE_BODY_BYTES (bodyBytes, bodyTruncated); missed holds as many pushes as fit the message (missedMore: true when more followed); a history that does not fit RUMMY_MAX_MESSAGE_BYTES is refused -32007 with data.limit, how many of its newest entries fit.",
                params: {
                    "run": "run alias",
                    "sinceSeq": "replay notifications with a greater seq",
                    "limit": "page the history: at most this many entries (at most 1000), the newest; the answer adds historyTotal",
                    "offset": "with limit: how many of the newest history entries to skip",
                },
            },
            GetEntries get_entries "getEntries" ($crate::params::GetEntriesParams) -> Vec<$crate::results::Entry> {
                requires_hello: true, long_running: false,
                description: "Read-only listing of a run's entries: [{path, scheme, state, outcome, status, visibility, turn, tokens, attributes, body?}], with proposal (its kind) on a tool's proposal and hash while it is pending; bodies only with withBody, each at most RUMMY_INLINE_BODY_BYTES (a longer one is its first bytes with bodyBytes, its whole size, and bodyTruncated: true; getBody reads it whole). A page whose answer would pass RUMMY_MAX_MESSAGE_BYTES is refused -32007 with data.limit, how many of its entries fit.",
                params: {
                    "run": "run alias",
                    "pattern": "only paths matching this hedberg pattern (glob, regex, …; * is every path)",
                    "scheme": "only this scheme (file for project files)",
                    "state": "only entries in this state" in $crate::methods::STATES,
                    "visibility": "only entries at this visibility" in $crate::methods::VISIBILITIES,
                    "bodyFilter": "only entries whose body matches this hedberg pattern",
                    "withBody": "include bodies",
                    "limit": "page size (default 100, at most 1000)",
                    "offset": "items to skip",
                },
            },
            GetBody get_body "getBody" ($crate::params::GetBodyParams) -> $crate::results::BodySlice {
                requires_hello: true, long_running: false,
                description: "Reads a slice of one entry's body, in bytes of its UTF-8 text (a body sent with bodyTruncated is read whole this way): {path, offset, body, bodyBytes, next}; next is the offset of the next slice, null at the end. A slice never cuts a character: its end moves back to the character's start (a slice too short for the character at offset holds that one whole character). An offset past the end or inside a character is -32602; an unknown path -32004. The entries are those getEntries lists.",
                params: {
                    "run": "run alias",
                    "path": "the entry's path",
                    "offset": "where the slice starts, in bytes (default 0)",
                    "length": "the most bytes wanted (default and at most what fits a message: RUMMY_MAX_MESSAGE_BYTES less 1 KiB, and less again for characters JSON escapes)",
                },
            },
            Set set "set" ($crate::params::SetParams) -> $crate::acks::Ack {
                requires_hello: true, long_running: false,
                description: "Writes an entry (body, append, state, visibility, attribute merge; with pattern or bodyFilter on every match); answers {ok, path} (or {ok, count}). A known:// body over RUMMY_MAX_ENTRY_TOKENS is refused -32007; a project file's body or state is refused -32003 (files change on disk and through accepted proposals). On a proposal's path, state resolves it (resolved accept, cancelled reject, failed error; body = output or reason, ignored on an accept of a command the server runs); answers {ok, path, state, outcome}; with approves, refused -32005 unless it is the proposal's hash. A pending proposal is never edited: any other change of its body, attributes or state is refused -32003. On run://<alias>: start (body + attributes.model; attributes.fork to fork), continue (body; attributes change the run's settings first), inject (attributes.inject), configure (attributes only) or cancel (state: cancelled); answers {ok, alias} at once.",
                params: {
                    "run": "run alias (on run:// paths only the same alias, or absent)",
                    "path": "entry path, a pattern with pattern: true, or run://<alias> (run:// alone: the server names the run)",
                    "body": "new body, or the chunk to append; on run:// the prompt",
                    "state": "new state (on run:// only cancelled)" in $crate::methods::STATES,
                    "outcome": "why, with failed or cancelled",
                    "visibility": "new visibility" in $crate::methods::VISIBILITIES,
                    "attributes": "entry attributes (replace them with a body, merged without; a null value removes a key); on run://: model, mode (ask | act), persona, temperature (0-2), contextLimit (>= 1024), fork, inject, noRepo, noInteraction, noWeb, noProposals, route, recall, recallRerank, consolidate, summarize, skills (skill names, added before the loop), fallback (false: no turn's call goes to its model's fallback), sessionState (keep session://state, updated by the sidecar between loops), and nothing else",
                    "append": "append body to the current body",
                    "pattern": "treat path as a hedberg pattern",
                    "bodyFilter": "only entries whose body matches this hedberg pattern",
                    "approves": "on a proposal's resolution: the hash of the proposal decided on (run/proposal's hash); refused -32005 when the proposal's differs",
                },
            },
            Get get "get" ($crate::params::GetParams) -> $crate::acks::Ack {
                requires_hello: true, long_running: false,
                description: "Promotes every entry matching the path pattern (and body filter) to visible, or to the given visibility; answers {ok, count}.",
                params: {
                    "run": "run alias",
                    "path": "path or hedberg pattern",
                    "bodyFilter": "only entries whose body matches",
                    "visibility": "visibility to set (default visible)" in $crate::methods::VISIBILITIES,
                },
            },
            Rm rm "rm" ($crate::params::RmParams) -> $crate::acks::Ack {
                requires_hello: true, long_running: false,
                description: "Removes the run's view of every matching entry; answers {ok, paths}.",
                params: {
                    "run": "run alias",
                    "path": "path or hedberg pattern",
                    "bodyFilter": "only entries whose body matches",
                },
            },
            Cp cp "cp" ($crate::params::MoveParams) -> $crate::acks::Ack {
                requires_hello: true, long_running: false,
                description: "Copies an entry's body and attributes to a new path; answers {ok, path}.",
                params: {
                    "run": "run alias",
                    "from": "source path",
                    "to": "destination path",
                    "visibility": "visibility of the destination" in $crate::methods::VISIBILITIES,
                },
            },
            Mv mv "mv" ($crate::params::MoveParams) -> $crate::acks::Ack {
                requires_hello: true, long_running: false,
                description: "Moves an entry (copy, then remove the source from the run); mv run://old run://new renames a run.",
                params: {
                    "run": "run alias",
                    "from": "source path",
                    "to": "destination path",
                    "visibility": "visibility of the destination" in $crate::methods::VISIBILITIES,
                },
            },
            Update update "update" ($crate::params::UpdateParams) -> $crate::acks::Ack {
                requires_hello: true, long_running: false,
                description: "Writes a status report to update://…; answers {ok, path}.",
                params: {
                    "run": "run alias",
                    "body": "status text",
                    "status": "102, 200, 204 or 422 (default 102)",
                    "attributes": "extra attributes",
                },
            },
            FileConstraint file_constraint "file/constraint" ($crate::params::ConstraintParams) -> $crate::acks::Ack {
                requires_hello: true, long_running: false,
                description: "Sets a project file constraint: active (starts visible), readonly (edits refused), ignore (kept out).",
                params: {
                    "pattern": "path or glob; absolute paths under the project root are made relative",
                    "visibility": "how the matching files are treated" in &["active", "readonly", "ignore"],
                },
            },
            FileDrop file_drop "file/drop" ($crate::params::DropParams) -> $crate::acks::Ack {
                requires_hello: true, long_running: false,
                description: "Removes a project file constraint.",
                params: {
                    "pattern": "the constraint's pattern",
                },
            },
            GetConstraints get_constraints "getConstraints" ($crate::params::NoParams) -> Vec<$crate::results::Constraint> {
                requires_hello: true, long_running: false,
                description: "The project's file constraints: [{pattern, visibility}].",
                params: {},
            },
            SkillAdd skill_add "skill/add" ($crate::params::SkillParams) -> $crate::acks::Ack {
                requires_hello: true, long_running: false,
                description: "Adds $RUMMY_HOME/skills/<name>.md to the run as skill://<name>: its frontmatter (description, whenToUse, allowedTools, paths, memoryScope) is checked first — invalid, -32602 naming the field — and the project files its paths match become visible. Answers {ok, skill, path}.",
                params: {
                    "run": "run alias",
                    "name": "file name under $RUMMY_HOME/skills or /personas, without .md",
                },
            },
            SkillRemove skill_remove "skill/remove" ($crate::params::SkillParams) -> $crate::acks::Ack {
                requires_hello: true, long_running: false,
                description: "Removes skill://<name> from the run.",
                params: {
                    "run": "run alias",
                    "name": "file name under $RUMMY_HOME/skills or /personas, without .md",
                },
            },
            GetSkills get_skills "getSkills" ($crate::params::RunParams) -> Vec<$crate::results::RunSkill> {
                requires_hello: true, long_running: false,
                description: "The run's skills with their frontmatter: [{name, state, active, description, whenToUse, allowedTools, paths, memoryScope}]; active: in the run's view and not archived.",
                params: {
                    "run": "run alias",
                },
            },
            ListSkills list_skills "listSkills" ($crate::params::NoParams) -> Vec<$crate::results::SkillFile> {
                requires_hello: true, long_running: false,
                description: "Skills available in $RUMMY_HOME/skills: [{name, path, description, whenToUse, error}]; error: why skill/add would refuse it.",
                params: {},
            },
            PersonaSet persona_set "persona/set" ($crate::params::PersonaParams) -> $crate::acks::Ack {
                requires_hello: true, long_running: false,
                description: "Sets the run's persona from $RUMMY_HOME/personas/<name>.md or as text; neither clears it.",
                params: {
                    "run": "run alias",
                    "name": "persona file name, without .md",
                    "text": "persona text",
                },
            },
            ListPersonas list_personas "listPersonas" ($crate::params::NoParams) -> Vec<$crate::results::NamedFile> {
                requires_hello: true, long_running: false,
                description: "Personas available in $RUMMY_HOME/personas: [{name, path}].",
                params: {},
            },
            Stream stream "stream" ($crate::params::StreamParams) -> $crate::acks::Ack {
                requires_hello: true, long_running: false,
                description: "Appends output to channel <path>_<channel> of an accepted sh/env proposal, capped at RUMMY_COMMAND_OUTPUT_BYTES per channel as the server's own commands are (past it a marker once, then chunks are dropped); watchers get run/state with {append: true, offset, body}, only what was appended.",
                params: {
                    "run": "run alias",
                    "path": "the accepted proposal's path",
                    "channel": "1 stdout, 2 stderr",
                    "chunk": "text to append",
                },
            },
            StreamCompleted stream_completed "stream/completed" ($crate::params::StreamCompletedParams) -> $crate::acks::Ack {
                requires_hello: true, long_running: false,
                description: "Settles the channels: resolved on exit 0, else failed exit:<code>; answers {ok, channels}.",
                params: {
                    "run": "run alias",
                    "path": "the accepted sh/env proposal's path",
                    "exitCode": "the command's exit code (default 0)",
                    "duration": "how long it ran",
                },
            },
            StreamAborted stream_aborted "stream/aborted" ($crate::params::StreamAbortedParams) -> $crate::acks::Ack {
                requires_hello: true, long_running: false,
                description: "Settles the channels as cancelled (the producer stopped); answers {ok, channels}.",
                params: {
                    "run": "run alias",
                    "path": "the accepted sh/env proposal's path",
                    "reason": "why the producer stopped",
                    "duration": "how long it ran",
                },
            },
            StreamCancel stream_cancel "stream/cancel" ($crate::params::StreamCancelParams) -> $crate::acks::Ack {
                requires_hello: true, long_running: false,
                description: "Cancels the stream: the channels become cancelled and every client of the project gets stream/cancelled; answers {ok, channels}.",
                params: {
                    "run": "run alias",
                    "path": "the accepted sh/env proposal's path",
                    "reason": "why (default \"cancelled\")",
                },
            },
            ToolsOffer tools_offer "tools/offer" ($crate::params::ToolsOfferParams) -> $crate::acks::Ack {
                requires_hello: true, long_running: false,
                description: "Offers the run tools this connection calls for it (an editor's MCP servers' tools): the model sees them in act mode and calls them with <call server tool>{json}</call>, each call a proposal of kind call; once accepted, this connection gets tool/call and answers with tool/result. Replaces the connection's earlier offer for that run; tools: [] withdraws it; the offer ends with the connection. Answers {ok}.",
                params: {
                    "run": "run alias; the run need not exist yet",
                    "tools": "every tool offered: [{server, name, description, inputSchema}], server and name of letters, digits, '_', '-' and '.'",
                },
            },
            ToolResult tool_result "tool/result" ($crate::params::ToolResultParams) -> $crate::acks::Ack {
                requires_hello: true, long_running: false,
                description: "Answers a tool/call this connection was sent: content goes into channel <path>_1, capped at RUMMY_COMMAND_OUTPUT_BYTES as command output is, resolved (or failed with outcome exit:1 when isError) and the loop goes on; answers {ok, channels}. Refused -32003 from any other connection.",
                params: {
                    "run": "run alias",
                    "path": "the accepted call's proposal path, as tool/call named it",
                    "content": "what the tool answered, as text",
                    "isError": "the tool reported an error",
                },
            },
            TokenCreate token_create "token/create" ($crate::params::TokenCreateParams) -> $crate::results::MadeToken {
                requires_hello: false, long_running: false,
                description: "Admin: makes a token for a user (made on first use); answers {token, id, user, prefix, admin, projects, createdAt, expiresAt} — the only time the token's text is shown.",
                params: {
                    "user": "the user's name",
                    "admin": "an admin token: creates projects, manages models, tokens and limits, opens every project",
                    "projects": "names of the projects a member token opens",
                    "expiresInDays": "days until it stops working; absent, never",
                },
            },
            TokenList token_list "token/list" ($crate::params::NoParams) -> Vec<$crate::results::TokenInfo> {
                requires_hello: false, long_running: false,
                description: "Admin: every token, without its text: [{id, user, prefix, admin, projects, createdAt, expiresAt, revokedAt}].",
                params: {},
            },
            TokenRevoke token_revoke "token/revoke" ($crate::params::TokenRevokeParams) -> $crate::results::TokenInfo {
                requires_hello: false, long_running: false,
                description: "Admin: revokes a token; the connections it opened are closed (1008). Answers it as token/list shows it.",
                params: {
                    "token": "the token's id or its listed prefix",
                },
            },
            ProjectSet project_set "project/set" ($crate::params::ProjectSetParams) -> $crate::results::Project {
                requires_hello: false, long_running: false,
                description: "Admin: sets a project's cost ceiling — at or over it (the turns' cost in the current period) new loops of the project queue (queued.reason cost_ceiling) until it is raised or removed or the period rolls over — whether its accepted commands reach the network, and the domains its model fetches from without asking. Answers the project as getProjects lists it.",
                params: {
                    "name": "the project's name",
                    "costCeiling": "US dollars per period, 0 or more; null removes the ceiling; absent keeps it",
                    "period": "the period spending is summed over, in UTC: month (calendar month, the default) or day; absent keeps it" in $crate::methods::PERIODS,
                    "commandNetwork": "whether the project's accepted commands reach the network (TCP to RUMMY_COMMAND_NETWORK_PORTS), over the server's RUMMY_COMMAND_NETWORK; null removes the override; absent keeps it",
                    "webDomains": "the host names the project's model fetches pages from without asking (each with its subdomains): a list, [] included, turns the model's web fetch on for the project where the server allows it (RUMMY_WEB_FETCH), a URL outside the list being a proposal; null turns it off; absent keeps it",
                },
            },
            ServerDoctor server_doctor "server/doctor" ($crate::params::NoParams) -> $crate::results::DoctorReport {
                requires_hello: false, long_running: false,
                description: "Admin: checks what only the server can reach, each with what to do when it fails: {version, database: {ok, detail} (a probe row written and committed), providers: [{name, baseUrl, ok, detail}] (each configured provider's models endpoint asked), models: [{alias, actual, contextLength, ok, detail}] (context lengths known: stored, or asked of the provider)}.",
                params: {},
            },
        }
    };
}

/// What `discover` says of one param beyond what its type tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamNote {
    /// Wire name (camelCase).
    pub name: &'static str,
    /// What it is for.
    pub description: &'static str,
    /// The values it takes, when they are a fixed set.
    pub values: &'static [&'static str],
}

/// One method of the table, as data.
#[derive(Debug, Clone, Copy)]
pub struct MethodInfo {
    /// Wire name.
    pub name: &'static str,
    /// What it does and what it answers.
    pub description: &'static str,
    /// Whether `rummy/hello` must come first.
    pub requires_hello: bool,
    /// Whether a call may take longer than `RUMMY_RPC_TIMEOUT` (the limit does not apply):
    /// only `rummy/hello`, whose first scan of a large project reads every file. Every other
    /// method only reads or writes the store (runs go on after their call is answered).
    pub long_running: bool,
    /// What `discover` says of each param.
    pub params: &'static [ParamNote],
    /// What its params type accepts: names, aliases, JSON types, required-ness.
    pub shape: fn() -> Vec<FieldShape>,
}

impl MethodInfo {
    /// The catalogue's entry for this method: each field its params type accepts, with its
    /// note.
    pub fn doc(&self) -> MethodDoc {
        let owned = |list: &[&str]| list.iter().map(|v| (*v).to_owned()).collect();
        let params = (self.shape)()
            .into_iter()
            .map(|field| {
                let note = self.params.iter().find(|n| n.name == field.name);
                let doc = ParamDoc {
                    ty: field.ty.to_owned(),
                    required: field.required,
                    description: note.map(|n| n.description).unwrap_or_default().to_owned(),
                    aliases: owned(&field.aliases),
                    values: note.map(|n| owned(n.values)).unwrap_or_default(),
                };
                (field.name.to_owned(), doc)
            })
            .collect();
        MethodDoc {
            description: self.description.to_owned(),
            params,
            requires_hello: self.requires_hello,
        }
    }
}

/// A method of the table as a type: its wire name, params and result, for typed calls.
pub trait Method {
    /// Wire name.
    const NAME: &'static str;
    /// The method as data.
    const INFO: MethodInfo;
    /// What it is sent.
    type Params: Serialize + DeserializeOwned;
    /// What it answers, as clients read it.
    type Result: DeserializeOwned;
}

/// The values a note's `in` lists; none without.
macro_rules! note_values {
    () => {
        &[]
    };
    ($values:expr) => {
        $values
    };
}

/// The marker types, [`METHODS`] and [`Request`], from the table.
macro_rules! protocol_items {
    ($(
        $variant:ident $handler:ident $wire:literal ($params:ty) -> $result:ty {
            requires_hello: $hello:literal, long_running: $long:literal,
            description: $description:literal,
            params: { $($name:literal : $note:literal $(in $values:expr)?),* $(,)? } $(,)?
        }
    ),* $(,)?) => {
        $(
            #[doc = concat!("`", $wire, "`.")]
            #[derive(Debug, Clone, Copy, PartialEq, Eq)]
            pub struct $variant;

            impl Method for $variant {
                const NAME: &'static str = $wire;
                const INFO: MethodInfo = MethodInfo {
                    name: $wire,
                    description: $description,
                    requires_hello: $hello,
                    long_running: $long,
                    params: &[$(ParamNote {
                        name: $name,
                        description: $note,
                        values: note_values!($($values)?),
                    }),*],
                    shape: shape_of::<$params>,
                };
                type Params = $params;
                type Result = $result;
            }
        )*

        /// Every method, in catalogue order.
        pub const METHODS: &[MethodInfo] = &[$(<$variant as Method>::INFO),*];

        /// Every method's wire name, in catalogue order.
        pub const NAMES: &[&str] = &[$($wire),*];

        /// A call of any method with its params: `{"method": …, "params": …}`.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "method", content = "params")]
        pub enum Request {
            $(
                #[doc = concat!("`", $wire, "`.")]
                #[serde(rename = $wire)]
                $variant($params),
            )*
        }

        impl Request {
            /// The method's wire name.
            pub fn method(&self) -> &'static str {
                match self {
                    $(Request::$variant(_) => $wire,)*
                }
            }
        }
    };
}

for_each_method!(protocol_items);

/// The method of a wire name.
pub fn find(name: &str) -> Option<&'static MethodInfo> {
    METHODS.iter().find(|m| m.name == name)
}

/// The methods of the catalogue (`discover`'s `methods`), by name.
pub fn docs() -> BTreeMap<String, MethodDoc> {
    METHODS
        .iter()
        .map(|m| (m.name.to_owned(), m.doc()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Every param a method's params type accepts has a note in the table, and every note
    /// names a param the type accepts: `discover` describes exactly what is parsed.
    #[test]
    fn every_param_accepted_has_a_note_and_every_note_a_param() {
        let mut unnoted = Vec::new();
        let mut unread = Vec::new();
        for method in METHODS {
            let shape = (method.shape)();
            for field in &shape {
                if !method.params.iter().any(|n| n.name == field.name) {
                    unnoted.push(format!("{}.{}", method.name, field.name));
                }
            }
            for note in method.params {
                if !shape.iter().any(|f| f.name == note.name) {
                    unread.push(format!("{}.{}", method.name, note.name));
                }
            }
        }
        assert_eq!(
            (unnoted, unread),
            (Vec::<String>::new(), Vec::<String>::new())
        );
    }

    /// The run attributes `set` lists are those a run start or configure accepts.
    #[test]
    fn the_run_attributes_listed_are_those_accepted() {
        let note = Set::INFO.params.iter().find(|n| n.name == "attributes");
        let listed = note.map(|n| n.description).unwrap_or_default();
        let missing: Vec<&str> = crate::shape::fields_of::<crate::params::RunAttributes>()
            .iter()
            .copied()
            .filter(|field| !listed.contains(field))
            .collect();
        assert_eq!(missing, Vec::<&str>::new());
    }

    /// Wire names are unique and the marker types name theirs.
    #[test]
    fn wire_names_are_unique() {
        let mut names = NAMES.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(
            (names.len(), find("rummy/hello").map(|m| m.long_running)),
            (METHODS.len(), Some(true))
        );
        assert_eq!((GetRuns::NAME, Hello::NAME), ("getRuns", "rummy/hello"));
    }

    /// A typed request is `{"method", "params"}` with the params as the method reads them, and
    /// reads back the same.
    #[test]
    fn a_typed_request_is_method_and_params() {
        let request = Request::GetRun(crate::params::GetRunParams {
            run: "r".into(),
            since_seq: Some(3),
            ..Default::default()
        });
        let wire = serde_json::to_value(&request).unwrap_or_default();
        assert_eq!(
            wire,
            serde_json::json!({"method": "getRun", "params": {"run": "r", "sinceSeq": 3}})
        );
        let back: Option<Request> = serde_json::from_value(wire).ok();
        assert_eq!((request.method(), back), ("getRun", Some(request.clone())));
    }
}
