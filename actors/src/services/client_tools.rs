//! The tools clients offer runs (`tools/offer`) and the accepted calls of them that wait for
//! their client's answer (`tool/call` → `tool/result`): in memory, held by the connections.
//!
//! An offer is a connection's, for one run alias of its project (the run need not exist yet);
//! a later offer of the same connection for that run replaces it, and it ends with the
//! connection ([`ClientTools::forget_session`]). A turn reads the offers of its run as it
//! starts ([`ClientTools::offered`]); a tool two connections offer is the first one's. An
//! accepted call is sent to the connection offering the tool and recorded
//! ([`ClientTools::sent`]) until that connection answers ([`ClientTools::answer`]) or closes,
//! when the calls it left unanswered are handed back to be settled as aborted.
//!
//! Invariant: only the connection a call was sent to may answer it, once.

use rummy_protocol::params::OfferedTool;
use rummy_store::ids::{ProjectId, RunId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// A call sent to a connection, waiting for its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentCall {
    /// The project of the run.
    pub project_id: ProjectId,
    /// The run.
    pub run_id: RunId,
    /// The run's alias.
    pub alias: String,
    /// The call's proposal path.
    pub path: String,
    /// `server/tool`.
    pub tool: String,
}

/// Why a connection may not answer a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotYours {
    /// No call at that path waits for an answer (never sent, answered, or settled).
    NotWaiting,
    /// The call was sent to another connection.
    Elsewhere,
}

/// One connection's offer: its session id and the tools.
type Offer = (u64, Vec<OfferedTool>);

#[derive(Default)]
struct State {
    /// (project, run alias) → each offering connection's tools, in the order they offered.
    offers: HashMap<(ProjectId, String), Vec<Offer>>,
    /// (run, proposal path) → the connection the call went to, and the call.
    sent: HashMap<(RunId, String), (u64, SentCall)>,
}

/// The offers and the calls waiting for an answer, shared by every session and turn.
#[derive(Clone, Default)]
pub struct ClientTools(Arc<Mutex<State>>);

impl ClientTools {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // Every change below is a single map operation: a panic elsewhere leaves no half of one.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `session` offers run `alias` of `project_id` these tools, replacing its earlier offer;
    /// none withdraws it.
    pub fn offer(&self, session: u64, project_id: ProjectId, alias: &str, tools: Vec<OfferedTool>) {
        let mut state = self.state();
        let key = (project_id, alias.to_owned());
        let offers = state.offers.entry(key.clone()).or_default();
        match offers.iter_mut().find(|(s, _)| *s == session) {
            Some(offer) if !tools.is_empty() => offer.1 = tools,
            Some(_) => offers.retain(|(s, _)| *s != session),
            None if !tools.is_empty() => offers.push((session, tools)),
            None => {}
        }
        if offers.is_empty() {
            state.offers.remove(&key);
        }
    }

    /// The tools offered to run `alias`, each once (the first connection offering it wins).
    pub fn offered(&self, project_id: ProjectId, alias: &str) -> Vec<OfferedTool> {
        let state = self.state();
        let Some(offers) = state.offers.get(&(project_id, alias.to_owned())) else {
            return Vec::new();
        };
        let mut tools: Vec<OfferedTool> = Vec::new();
        for tool in offers.iter().flat_map(|(_, tools)| tools) {
            if !tools
                .iter()
                .any(|t| t.server == tool.server && t.name == tool.name)
            {
                tools.push(tool.clone());
            }
        }
        tools
    }

    /// The connection offering `server`'s `tool` to run `alias`, if one still does.
    pub fn offerer(
        &self,
        project_id: ProjectId,
        alias: &str,
        server: &str,
        tool: &str,
    ) -> Option<u64> {
        let state = self.state();
        state
            .offers
            .get(&(project_id, alias.to_owned()))?
            .iter()
            .find(|(_, tools)| tools.iter().any(|t| t.server == server && t.name == tool))
            .map(|(session, _)| *session)
    }

    /// Records that `call` was sent to `session`, which alone may answer it.
    pub fn sent(&self, session: u64, call: SentCall) {
        let key = (call.run_id, call.path.clone());
        self.state().sent.insert(key, (session, call));
    }

    /// `session` answers the call at `path` of `run_id`: it is no longer waited for. Refused
    /// when no call waits there, or it was sent to another connection (which still may answer).
    pub fn answer(&self, session: u64, run_id: RunId, path: &str) -> Result<SentCall, NotYours> {
        let mut state = self.state();
        let key = (run_id, path.to_owned());
        match state.sent.get(&key) {
            None => Err(NotYours::NotWaiting),
            Some((to, _)) if *to != session => Err(NotYours::Elsewhere),
            Some(_) => state
                .sent
                .remove(&key)
                .map(|(_, call)| call)
                .ok_or(NotYours::NotWaiting),
        }
    }

    /// The call at `path` of `run_id` was settled otherwise (cancelled, the loop ended): no
    /// answer is waited for any more.
    pub fn settled(&self, run_id: RunId, path: &str) {
        self.state().sent.remove(&(run_id, path.to_owned()));
    }

    /// `session` closed: its offers end, and the calls it left unanswered are handed back, to
    /// be settled as aborted.
    pub fn forget_session(&self, session: u64) -> Vec<SentCall> {
        let mut state = self.state();
        state.offers.retain(|_, offers| {
            offers.retain(|(s, _)| *s != session);
            !offers.is_empty()
        });
        let orphaned: Vec<(RunId, String)> = state
            .sent
            .iter()
            .filter(|(_, (to, _))| *to == session)
            .map(|(key, _)| key.clone())
            .collect();
        orphaned
            .into_iter()
            .filter_map(|key| state.sent.remove(&key).map(|(_, call)| call))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn tool(server: &str, name: &str) -> OfferedTool {
        OfferedTool {
            server: server.into(),
            name: name.into(),
            ..OfferedTool::default()
        }
    }

    fn names(tools: Vec<OfferedTool>) -> Vec<String> {
        tools
            .into_iter()
            .map(|t| format!("{}/{}", t.server, t.name))
            .collect()
    }

    const P: ProjectId = ProjectId(1);

    /// A connection's offer replaces its earlier one and an empty one withdraws it; two
    /// connections' offers merge, a tool both offer being the first one's; a closed
    /// connection's offer ends.
    #[test]
    fn offers_are_per_connection_and_end_with_it() {
        let tools = ClientTools::default();
        tools.offer(1, P, "r", vec![tool("a", "x"), tool("a", "y")]);
        tools.offer(1, P, "r", vec![tool("a", "x")]);
        tools.offer(2, P, "r", vec![tool("a", "x"), tool("b", "z")]);
        assert_eq!(names(tools.offered(P, "r")), ["a/x", "b/z"]);
        assert_eq!(
            (
                tools.offerer(P, "r", "a", "x"),
                tools.offerer(P, "r", "b", "z")
            ),
            (Some(1), Some(2))
        );
        assert_eq!(
            names(tools.offered(ProjectId(2), "r")),
            Vec::<String>::new()
        );
        tools.offer(1, P, "r", Vec::new());
        assert_eq!(tools.offerer(P, "r", "a", "x"), Some(2));
        tools.forget_session(2);
        assert_eq!(names(tools.offered(P, "r")), Vec::<String>::new());
    }

    /// Only the connection a call was sent to answers it, once; a closed connection hands
    /// back the calls it left unanswered.
    #[test]
    fn a_call_is_answered_by_its_connection_once() {
        let tools = ClientTools::default();
        let call = |path: &str| SentCall {
            project_id: P,
            run_id: RunId(7),
            alias: "r".into(),
            path: path.into(),
            tool: "a/x".into(),
        };
        tools.sent(1, call("call://1"));
        tools.sent(1, call("call://2"));
        assert_eq!(
            tools.answer(2, RunId(7), "call://1"),
            Err(NotYours::Elsewhere)
        );
        assert_eq!(tools.answer(1, RunId(7), "call://1"), Ok(call("call://1")));
        assert_eq!(
            tools.answer(1, RunId(7), "call://1"),
            Err(NotYours::NotWaiting)
        );
        assert_eq!(tools.forget_session(1), vec![call("call://2")]);
        assert_eq!(
            tools.answer(1, RunId(7), "call://2"),
            Err(NotYours::NotWaiting)
        );
    }
}
