//! `ask`, `act`, `watch` and `fork`: starting, joining or forking a run, then following it.

use super::args::{FollowArgs, ForkArgs, StartArgs, WatchArgs};
use super::exit::Exit;
use super::follow::{Follow, Policy};
use super::render;
use super::session::{Failure, Intent, Session};
use super::view::View;
use rummy_client::params::{Page, RunAttributes};
use rummy_client::results::Model;

/// `ask` / `act`: starts (or continues) a run on this directory's project and follows it.
pub async fn start(args: StartArgs, mode: &str) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Start).await?;
    let models = session
        .client
        .get_models(Page::default())
        .await
        .map_err(|e| Failure::call("listing the models", e))?;
    let model = choose_model(args.model.as_deref(), &models)?;
    let attributes = RunAttributes {
        model: Some(model.clone()),
        mode: Some(mode.to_owned()),
        persona: args.persona.clone(),
        route: args.route.then_some(true),
        fallback: args.no_fallback.then_some(false),
        // Added before the first turn, so it is built with them.
        skills: (!args.skill.is_empty()).then(|| args.skill.clone()),
        ..RunAttributes::default()
    };
    let prompt = args.prompt.join(" ");
    // A named run that exists is continued: its summary counts the turns from here.
    let base_turn = match args.run.as_deref() {
        Some(name) => session
            .client
            .get_run(name, None)
            .await
            .map_or(0, |run| run.turn),
        None => 0,
    };
    let run = session
        .client
        .start_run(args.run.as_deref(), &prompt, &attributes)
        .await
        .map_err(|e| Failure::call("starting the run", e))?;
    let context = context_of(&models, &model);
    let mut view = View::new(args.follow.json);
    let style = view.style;
    view.line(&format!(
        "{} {} · {} · project {} ({}) · model {model}",
        style.bold("rummy"),
        mode,
        style.cyan(&run),
        session.project,
        session.root
    ));
    view.line(&format!("{} {prompt}", style.dim("›")));
    let exit = Follow::new(
        &mut session,
        &mut view,
        &run,
        policy(&args.follow),
        Some(model),
        context,
    )
    .after_turn(base_turn)
    .run()
    .await;
    session.close().await;
    exit
}

/// The model a run uses: the one named, else the server's only one.
fn choose_model(named: Option<&str>, models: &[Model]) -> Result<String, Failure> {
    if let Some(model) = named {
        return Ok(model.to_owned());
    }
    match models {
        [only] => Ok(only.alias.clone()),
        [] => Err(
            Failure::new(Exit::Usage, "the server has no model configured").hint(
                "configure one for the server (RUMMY_MODEL_<alias>=openai/<model> and \
             OPENAI_BASE_URL, see the README), or try `rummy demo`",
            ),
        ),
        many => {
            let names: Vec<&str> = many.iter().map(|m| m.alias.as_str()).collect();
            Err(
                Failure::new(Exit::Usage, "which model? the server has several")
                    .hint(format!("pass --model with one of: {}", names.join(", "))),
            )
        }
    }
}

fn context_of(models: &[Model], alias: &str) -> Option<i64> {
    models
        .iter()
        .find(|m| m.alias == alias)
        .and_then(|m| m.context_length)
}

fn policy(args: &FollowArgs) -> Policy {
    match (args.yes, args.no) {
        (true, _) => Policy::AcceptAll,
        (_, true) => Policy::RejectAll,
        _ => Policy::Ask,
    }
}

/// `watch`: follows a run from where it stands.
pub async fn watch(args: WatchArgs) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Open).await?;
    let snapshot = session
        .client
        .get_run(&args.run, None)
        .await
        .map_err(|e| Failure::run_call(&session.project, &args.run, e))?;
    session.client.follow(&args.run, snapshot.last_seq);
    let models = session
        .client
        .get_models(Page::default())
        .await
        .unwrap_or_default();
    let model = snapshot.model.clone();
    let context = model.as_deref().and_then(|m| context_of(&models, m));
    let mut view = View::new(args.follow.json);
    let style = view.style;
    view.line(&format!(
        "{} watching {} · {} · turn {} · {}",
        style.bold("rummy"),
        style.cyan(&args.run),
        render::status_word(snapshot.status, snapshot.stop_reason),
        snapshot.turn,
        snapshot.summary.clone().unwrap_or_default()
    ));
    let mut follow = Follow::new(
        &mut session,
        &mut view,
        &args.run,
        policy(&args.follow),
        model,
        context,
    );
    follow.attach(&snapshot);
    let exit = follow.run().await;
    session.close().await;
    exit
}

/// `fork`: a new run from a parent's context, followed.
pub async fn fork(args: ForkArgs) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Open).await?;
    let parent = session
        .client
        .get_run(&args.run, None)
        .await
        .map_err(|e| Failure::run_call(&session.project, &args.run, e))?;
    let model =
        args.model.clone().or(parent.model.clone()).ok_or_else(|| {
            Failure::new(Exit::Usage, "the parent run has no model: pass --model")
        })?;
    let attributes = RunAttributes {
        model: Some(model.clone()),
        mode: Some(if args.ask { "ask" } else { "act" }.to_owned()),
        ..RunAttributes::default()
    };
    let prompt = args.prompt.join(" ");
    let run = session
        .client
        .fork_run(&args.run, &args.new, &prompt, &attributes)
        .await
        .map_err(|e| Failure::call("forking the run", e))?;
    let models = session
        .client
        .get_models(Page::default())
        .await
        .unwrap_or_default();
    let context = context_of(&models, &model);
    let mut view = View::new(args.follow.json);
    let style = view.style;
    view.line(&format!(
        "{} fork of {} · {} · model {model}",
        style.bold("rummy"),
        args.run,
        style.cyan(&run)
    ));
    let exit = Follow::new(
        &mut session,
        &mut view,
        &run,
        policy(&args.follow),
        Some(model),
        context,
    )
    .after_turn(parent.turn)
    .run()
    .await;
    session.close().await;
    exit
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// The model is the one named, else the server's only one; several is a usage error.
    #[test]
    fn choosing_the_model() {
        let model = |alias: &str| Model {
            alias: alias.into(),
            actual: format!("openai/{alias}"),
            context_length: None,
            fallback: None,
            configured: None,
        };
        assert_eq!(choose_model(None, &[model("a")]).unwrap(), "a");
        assert_eq!(choose_model(Some("b"), &[model("a")]).unwrap(), "b");
        let several = choose_model(None, &[model("a"), model("b")]).unwrap_err();
        assert_eq!(
            (several.exit, several.hint),
            (
                Exit::Usage,
                Some("pass --model with one of: a, b".to_owned())
            )
        );
    }
}
