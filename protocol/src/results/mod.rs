//! What each method answers. The `{ok: true, …}` answers of the writing methods are in
//! [`crate::acks`], re-exported here. The answers are grouped by what they describe (a run, its
//! entries, models and routing, skills, the server itself, its doctor); every one is used as
//! `results::X`.

pub use crate::acks::{
    Ack, ChannelsAck, CountAck, Done, PathAck, PathsAck, PatternAck, Resolution, RunAck, SkillAck,
};
use crate::values::{FailureKind, State};

mod doctor;
mod entries;
mod models;
mod runs;
mod server;
mod skills;
mod telemetry;

pub use doctor::{
    Check, DoctorReport, ModelCheck, ProviderCheck, SandboxCheck, SandboxLayer, SandboxMode,
};
pub use entries::{BodySlice, Constraint, Entry};
pub use models::{AddedModel, Model, Route, RouteCheck, RouteClass};
pub use runs::{
    HistoryItem, MissedNotification, Queued, Recall, RecallItem, RunSnapshot, RunSummary, Unknown,
};
pub use server::{Hello, MadeToken, Pong, Project, TokenInfo};
pub use skills::{NamedFile, RunSkill, SkillFile};
pub use telemetry::{Bucket, SidecarCall, Telemetry, Usage};

/// The failure an entry's state and outcome say, when it failed.
fn failure(state: State, outcome: Option<&str>) -> Option<FailureKind> {
    (state == State::Failed).then(|| outcome.map_or(FailureKind::Unknown, FailureKind::parse))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notifications::RunState;
    use crate::values::{ProposalKind, StopReason, ToolName, Visibility};
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use serde_json::Value;

    /// A history item or entry from a newer server, with words this version does not know,
    /// is read whole: each unknown word is `Unknown`, and the rest is as sent.
    #[test]
    fn unknown_words_in_a_result_read_as_unknown() {
        let item: HistoryItem = serde_json::from_value(json!({
            "path": "teleport://turn_1/moon", "tool": "teleport", "state": "pondering",
            "outcome": "gravity:2", "status": 500, "visibility": "hidden", "turn": 1,
            "tokens": 3, "attributes": {"kind": "teleport", "commandIndex": 0},
            "proposal": "teleport"
        }))
        .unwrap();
        let entry: Entry = serde_json::from_value(json!({
            "path": "known://a", "state": "failed", "outcome": "exit:3", "visibility": "visible",
            "attributes": {}
        }))
        .unwrap();
        let state: RunState = serde_json::from_value(json!({
            "run": "r", "status": 200, "stopReason": "napping"
        }))
        .unwrap();
        assert_eq!(
            (
                item.state,
                item.visibility,
                item.tool_name(),
                item.proposal(),
                item.failure(),
                item.turn,
                state.stop_reason,
                entry.proposal(),
                entry.failure(),
            ),
            (
                State::Unknown,
                Visibility::Unknown,
                ToolName::Unknown,
                Some(ProposalKind::Unknown),
                None,
                1,
                Some(StopReason::Unknown),
                None,
                Some(FailureKind::Exit { code: 3 }),
            )
        );
    }

    /// From a server that does not send `proposal`, an entry is still known as a proposal by
    /// its `commandIndex` attribute, its kind its `kind` attribute.
    #[test]
    fn a_proposal_is_known_without_its_field() {
        let item = |attributes: Value| -> HistoryItem {
            serde_json::from_value(json!({
                "path": "sh://turn_1/ls", "tool": "sh", "state": "proposed",
                "attributes": attributes
            }))
            .unwrap()
        };
        let proposal = item(json!({"kind": "sh", "command": "ls", "commandIndex": 0}));
        let marked = item(json!({"kind": "sh", "command": "ls"}));
        assert_eq!(
            (
                proposal.proposal(),
                proposal.is_pending_proposal(),
                marked.proposal(),
                marked.is_pending_proposal(),
                proposal.tool_name(),
            ),
            (Some(ProposalKind::Sh), true, None, false, ToolName::Sh)
        );
    }
}
