//! The typed calls of [`Client`]: one per method of the protocol's table, each through
//! [`Client::request`], so its params and answer are the table's; and the runs' own verbs
//! (start, continue, inject, fork, cancel, resolve), which are `set` on `run://<alias>` or on a
//! proposal's path.

use rummy_protocol::methods;

use crate::client::{seq_param, Client, Decision};
use crate::error::{CallError, ClientError};
use crate::params::{
    AddModelParams, AliasParams, ConstraintParams, DropParams, GetBodyParams, GetEntriesParams,
    GetParams, GetRunParams, MoveParams, NoParams, Page, PersonaParams, ProjectSetParams,
    ProjectsParams, RmParams, RouteCheckParams, RunAttributes, RunParams, SetParams, SkillParams,
    StreamAbortedParams, StreamCancelParams, StreamCompletedParams, StreamParams,
    TokenCreateParams, TokenRevokeParams, ToolResultParams, ToolsOfferParams, UpdateParams,
};
use crate::results::{
    Ack, AddedModel, BodySlice, Catalogue, Constraint, DoctorReport, Entry, MadeToken, Model,
    NamedFile, Project, RouteCheck, RouteClass, RunSkill, RunSnapshot, RunSummary, SkillFile,
    TokenInfo,
};

/// The typed calls, one per method.
impl Client {
    /// `ping`.
    pub async fn ping(&mut self) -> Result<(), CallError> {
        self.request::<methods::Ping>(&NoParams {})
            .await
            .map(|_| ())
    }

    /// `discover`: the methods and notifications the server serves.
    pub async fn discover(&mut self) -> Result<Catalogue, CallError> {
        self.request::<methods::Discover>(&NoParams {}).await
    }

    /// `getProjects`: the projects this connection may open.
    pub async fn get_projects(&mut self) -> Result<Vec<Project>, CallError> {
        self.request::<methods::GetProjects>(&ProjectsParams::default())
            .await
    }

    /// `project/set` (admin): sets or removes a project's cost ceiling; answers the project as
    /// `getProjects` lists it.
    pub async fn project_set(&mut self, params: &ProjectSetParams) -> Result<Project, CallError> {
        self.request::<methods::ProjectSet>(params).await
    }

    /// `token/create` (admin): a new token, its text shown this once.
    pub async fn token_create(
        &mut self,
        params: &TokenCreateParams,
    ) -> Result<MadeToken, CallError> {
        self.request::<methods::TokenCreate>(params).await
    }

    /// `server/doctor` (admin): what only the server can check — the database takes a write,
    /// each provider answers, each model's context length is known.
    pub async fn server_doctor(&mut self) -> Result<DoctorReport, CallError> {
        self.request::<methods::ServerDoctor>(&NoParams {}).await
    }

    /// `token/list` (admin): every token, without its text.
    pub async fn token_list(&mut self) -> Result<Vec<TokenInfo>, CallError> {
        self.request::<methods::TokenList>(&NoParams {}).await
    }

    /// `token/revoke` (admin): revokes a token by id or listed prefix.
    pub async fn token_revoke(&mut self, token: &str) -> Result<TokenInfo, CallError> {
        let params = TokenRevokeParams {
            token: token.to_owned(),
        };
        self.request::<methods::TokenRevoke>(&params).await
    }

    /// `getModels`.
    pub async fn get_models(&mut self, page: Page) -> Result<Vec<Model>, CallError> {
        self.request::<methods::GetModels>(&page).await
    }

    /// `addModel`.
    pub async fn add_model(&mut self, params: &AddModelParams) -> Result<AddedModel, CallError> {
        self.request::<methods::AddModel>(params).await
    }

    /// `removeModel`.
    pub async fn remove_model(&mut self, alias: &str) -> Result<Ack, CallError> {
        let params = AliasParams {
            alias: alias.to_owned(),
        };
        self.request::<methods::RemoveModel>(&params).await
    }

    /// `getRoutes`: routing's class → model map as the server is configured.
    pub async fn get_routes(&mut self) -> Result<Vec<RouteClass>, CallError> {
        self.request::<methods::GetRoutes>(&NoParams {}).await
    }

    /// `route/check`: what routing would do with `text`, for `run` or a run with routing on.
    pub async fn route_check(
        &mut self,
        params: &RouteCheckParams,
    ) -> Result<RouteCheck, CallError> {
        self.request::<methods::RouteCheck>(params).await
    }

    /// `getRuns`: the project's runs, newest first.
    pub async fn get_runs(&mut self, page: Page) -> Result<Vec<RunSummary>, CallError> {
        self.request::<methods::GetRuns>(&page).await
    }

    /// `getRun`: a run's whole state; with `since_seq`, also the pushes after it (`missed`).
    pub async fn get_run(
        &mut self,
        run: &str,
        since_seq: Option<i64>,
    ) -> Result<RunSnapshot, CallError> {
        let params = GetRunParams {
            run: run.to_owned(),
            since_seq: since_seq.map(seq_param),
            ..GetRunParams::default()
        };
        self.request::<methods::GetRun>(&params).await
    }

    /// `getRun` with a page of the history: at most `limit` entries, the newest after skipping
    /// the `offset` newest; `history_total` says how many there are.
    pub async fn get_run_page(
        &mut self,
        run: &str,
        limit: i64,
        offset: i64,
    ) -> Result<RunSnapshot, CallError> {
        let params = GetRunParams {
            run: run.to_owned(),
            limit: Some(limit),
            offset: Some(offset),
            ..GetRunParams::default()
        };
        self.request::<methods::GetRun>(&params).await
    }

    /// `getEntries`.
    pub async fn get_entries(
        &mut self,
        params: &GetEntriesParams,
    ) -> Result<Vec<Entry>, CallError> {
        self.request::<methods::GetEntries>(params).await
    }

    /// `getBody`: one slice of an entry's body.
    pub async fn get_body(&mut self, params: &GetBodyParams) -> Result<BodySlice, CallError> {
        self.request::<methods::GetBody>(params).await
    }

    /// An entry's whole body, read slice by slice with `getBody` (what a body sent with
    /// `bodyTruncated` takes).
    pub async fn read_body(&mut self, run: &str, path: &str) -> Result<String, CallError> {
        let mut body = String::new();
        let mut next = Some(0u64);
        while let Some(offset) = next {
            let params = GetBodyParams {
                run: run.to_owned(),
                path: path.to_owned(),
                offset: Some(offset),
                length: None,
            };
            let slice = self.get_body(&params).await?;
            body.push_str(&slice.body);
            next = slice.next.and_then(|n| u64::try_from(n).ok());
        }
        Ok(body)
    }

    /// `set`.
    pub async fn set(&mut self, params: &SetParams) -> Result<Ack, CallError> {
        self.request::<methods::Set>(params).await
    }

    /// `get`.
    pub async fn get(&mut self, params: &GetParams) -> Result<Ack, CallError> {
        self.request::<methods::Get>(params).await
    }

    /// `rm`.
    pub async fn rm(&mut self, params: &RmParams) -> Result<Ack, CallError> {
        self.request::<methods::Rm>(params).await
    }

    /// `cp`.
    pub async fn cp(&mut self, params: &MoveParams) -> Result<Ack, CallError> {
        self.request::<methods::Cp>(params).await
    }

    /// `mv` (`run://old` → `run://new` renames a run).
    pub async fn mv(&mut self, params: &MoveParams) -> Result<Ack, CallError> {
        self.request::<methods::Mv>(params).await
    }

    /// `update`.
    pub async fn update(&mut self, params: &UpdateParams) -> Result<Ack, CallError> {
        self.request::<methods::Update>(params).await
    }

    /// `file/constraint`.
    pub async fn file_constraint(&mut self, params: &ConstraintParams) -> Result<Ack, CallError> {
        self.request::<methods::FileConstraint>(params).await
    }

    /// `file/drop`.
    pub async fn file_drop(&mut self, params: &DropParams) -> Result<Ack, CallError> {
        self.request::<methods::FileDrop>(params).await
    }

    /// `getConstraints`.
    pub async fn get_constraints(&mut self) -> Result<Vec<Constraint>, CallError> {
        self.request::<methods::GetConstraints>(&NoParams {}).await
    }

    /// `skill/add`.
    pub async fn skill_add(&mut self, params: &SkillParams) -> Result<Ack, CallError> {
        self.request::<methods::SkillAdd>(params).await
    }

    /// `skill/remove`.
    pub async fn skill_remove(&mut self, params: &SkillParams) -> Result<Ack, CallError> {
        self.request::<methods::SkillRemove>(params).await
    }

    /// `getSkills`.
    pub async fn get_skills(&mut self, run: &str) -> Result<Vec<RunSkill>, CallError> {
        let params = RunParams {
            run: run.to_owned(),
        };
        self.request::<methods::GetSkills>(&params).await
    }

    /// `listSkills`.
    pub async fn list_skills(&mut self) -> Result<Vec<SkillFile>, CallError> {
        self.request::<methods::ListSkills>(&NoParams {}).await
    }

    /// `persona/set`.
    pub async fn persona_set(&mut self, params: &PersonaParams) -> Result<Ack, CallError> {
        self.request::<methods::PersonaSet>(params).await
    }

    /// `listPersonas`.
    pub async fn list_personas(&mut self) -> Result<Vec<NamedFile>, CallError> {
        self.request::<methods::ListPersonas>(&NoParams {}).await
    }

    /// `stream`: a chunk of an accepted command's output.
    pub async fn stream(&mut self, params: &StreamParams) -> Result<Ack, CallError> {
        self.request::<methods::Stream>(params).await
    }

    /// `stream/completed`.
    pub async fn stream_completed(
        &mut self,
        params: &StreamCompletedParams,
    ) -> Result<Ack, CallError> {
        self.request::<methods::StreamCompleted>(params).await
    }

    /// `stream/aborted`.
    pub async fn stream_aborted(&mut self, params: &StreamAbortedParams) -> Result<Ack, CallError> {
        self.request::<methods::StreamAborted>(params).await
    }

    /// `stream/cancel`.
    pub async fn stream_cancel(&mut self, params: &StreamCancelParams) -> Result<Ack, CallError> {
        self.request::<methods::StreamCancel>(params).await
    }

    /// `tools/offer`: the tools this connection calls for a run (an editor's MCP tools).
    pub async fn tools_offer(&mut self, params: &ToolsOfferParams) -> Result<Ack, CallError> {
        self.request::<methods::ToolsOffer>(params).await
    }

    /// `tool/result`: the answer to a `tool/call` this connection was sent.
    pub async fn tool_result(&mut self, params: &ToolResultParams) -> Result<Ack, CallError> {
        self.request::<methods::ToolResult>(params).await
    }
}

/// Runs through `set` on `run://<alias>`.
impl Client {
    /// Starts a run (`alias` `None`: the server names it) and follows it; answers its alias.
    pub async fn start_run(
        &mut self,
        alias: Option<&str>,
        prompt: &str,
        attributes: &RunAttributes,
    ) -> Result<String, CallError> {
        let params = SetParams {
            path: format!("run://{}", alias.unwrap_or_default()),
            body: Some(prompt.to_owned()),
            attributes: Some(attributes.to_map()),
            ..SetParams::default()
        };
        let ack = self.set(&params).await?;
        let alias = ack
            .alias
            .ok_or_else(|| ClientError::Unexpected("a run start answered no alias".into()))?;
        self.follow(&alias, 0);
        Ok(alias)
    }

    /// Continues a run with a new prompt (a new loop, queued behind any running one).
    pub async fn continue_run(
        &mut self,
        run: &str,
        prompt: &str,
        attributes: &RunAttributes,
    ) -> Result<Ack, CallError> {
        let attributes = attributes.to_map();
        let params = SetParams {
            path: format!("run://{run}"),
            body: Some(prompt.to_owned()),
            attributes: (!attributes.is_empty()).then_some(attributes),
            ..SetParams::default()
        };
        self.set(&params).await
    }

    /// Folds a prompt into the run's active loop (a new loop when none is active).
    pub async fn inject(&mut self, run: &str, prompt: &str) -> Result<Ack, CallError> {
        let attributes = RunAttributes {
            inject: true,
            ..RunAttributes::default()
        };
        self.continue_run(run, prompt, &attributes).await
    }

    /// Forks `parent` into a new run `alias` with a prompt; answers the new alias.
    pub async fn fork_run(
        &mut self,
        parent: &str,
        alias: &str,
        prompt: &str,
        attributes: &RunAttributes,
    ) -> Result<String, CallError> {
        let attributes = RunAttributes {
            fork: Some(parent.to_owned()),
            ..attributes.clone()
        };
        self.start_run(Some(alias), prompt, &attributes).await
    }

    /// Cancels a run.
    pub async fn cancel_run(&mut self, run: &str) -> Result<Ack, CallError> {
        let params = SetParams {
            path: format!("run://{run}"),
            state: Some("cancelled".into()),
            ..SetParams::default()
        };
        self.set(&params).await
    }

    /// Resolves the proposal at `path` of `run`; `approves`: the hash of the proposal decided
    /// on (`run/proposal`'s, or the entry's `hash`), refused (-32005) when it changed.
    pub async fn resolve(
        &mut self,
        run: &str,
        path: &str,
        decision: Decision,
        approves: Option<&str>,
    ) -> Result<Ack, CallError> {
        let (state, body) = match decision {
            Decision::Accept(note) => ("resolved", note),
            Decision::Reject(reason) => ("cancelled", reason),
            Decision::Error(why) => ("failed", why),
        };
        let params = SetParams {
            run: Some(run.to_owned()),
            path: path.to_owned(),
            state: Some(state.to_owned()),
            body,
            approves: approves.map(str::to_owned),
            ..SetParams::default()
        };
        self.set(&params).await
    }
}
