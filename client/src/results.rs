//! What the server answers, typed: the protocol's own types (`rummy-protocol`), the very ones
//! the server builds its answers from. Fields the server may add later are ignored; fields an
//! older server does not send are `None`, empty or zero, and a word it does not know in a closed
//! set (a state, a stop reason, a proposal's kind, …) is that enum's `Unknown`.

pub use rummy_protocol::catalogue::{Catalogue, MethodDoc, NotificationDoc, ParamDoc};
pub use rummy_protocol::results::{
    Ack, AddedModel, BodySlice, Bucket, Check, Constraint, DoctorReport, Entry, Hello, HistoryItem,
    MadeToken, MissedNotification, Model, ModelCheck, NamedFile, Project, ProviderCheck, Queued,
    Route, RouteCheck, RouteClass, RunSkill, RunSnapshot, RunSummary, SandboxCheck, SandboxLayer,
    SandboxMode, SidecarCall, SkillFile, Telemetry, TokenInfo, Unknown, Usage,
};
pub use rummy_protocol::values::{
    FailureKind, ProposalKind, State, StopReason, ToolName, Visibility,
};
