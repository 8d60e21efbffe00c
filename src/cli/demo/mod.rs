//! `rummy demo`: a whole run on this machine, with no key and nothing installed.
//!
//! A server starts in this process on a free port, over a temporary home, with one model: the
//! built-in scripted one ([`model`]), reached over real HTTP like any provider. A small sample
//! project (embedded in the binary) is copied into a temporary directory, and a task runs on
//! it through the same view `rummy act` shows. Everything temporary goes when it ends.

pub(super) mod model;

use super::args::DemoArgs;
use super::exit::Exit;
use super::follow::{Follow, Policy};
use super::session::{Failure, Place, Session, Target};
use super::view::View;
use rummy::config::{Config, OpenAiConfig};
use rummy_client::params::RunAttributes;
use rummy_store::models::ModelSeed;

/// The sample project: (path, content).
const SAMPLE: [(&str, &str); 3] = [
    ("README.md", include_str!("sample/README.md")),
    ("greet.sh", include_str!("sample/greet.sh")),
    ("check.sh", include_str!("sample/check.sh")),
];

/// What the demo asks.
const TASK: &str = include_str!("script/task.md");

/// What to do next, printed at the end.
const NEXT: &str = include_str!("script/next.txt");

/// The scripted model's alias and context length.
const ALIAS: &str = "demo";
const CONTEXT: i32 = 32_768;

/// Runs the demo.
pub fn run(args: DemoArgs) -> Exit {
    super::serve::init_log("warn");
    let result = actix_rt::System::new().block_on(demo(args));
    match result {
        Ok(exit) => exit,
        Err(failure) => {
            super::out::eprintln_failure(&failure);
            failure.exit
        }
    }
}

async fn demo(args: DemoArgs) -> Result<Exit, Failure> {
    let failed = |what: &str, e: &dyn std::fmt::Display| {
        Failure::new(Exit::Failure, format!("demo: {what}: {e}"))
    };
    let temp = tempfile::Builder::new()
        .prefix("rummy-demo-")
        .tempdir()
        .map_err(|e| failed("temporary directory", &e))?;
    let project = temp.path().join("greeter");
    std::fs::create_dir_all(&project).map_err(|e| failed("sample project", &e))?;
    for (path, content) in SAMPLE {
        std::fs::write(project.join(path), content).map_err(|e| failed("sample project", &e))?;
    }
    let model = model::DemoModel::start().map_err(|e| failed("scripted model", &e))?;
    let config = config(temp.path().join("home"), model.base_url());
    let max_turns = config.limits.max_turns;
    let server = rummy::serve(config, std::future::pending())
        .await
        .map_err(|e| failed("server", &e))?;
    let place = Place {
        url: format!("{}ws", server.ws_url()),
        token: None,
        target: Target::Create {
            name: "greeter".into(),
            root: project.display().to_string(),
        },
    };
    let mut session = Session::connect(place, Some(server), Some(max_turns)).await?;
    let mut view = View::new(args.json);
    let style = view.style;
    view.line(&format!(
        "{} demo · a scripted model (no key) on a sample project in {}",
        style.bold("rummy"),
        session.root
    ));
    view.line(&format!("{} {}", style.dim("›"), TASK.trim()));
    let attributes = RunAttributes {
        model: Some(ALIAS.into()),
        mode: Some("act".into()),
        ..RunAttributes::default()
    };
    let run = session
        .client
        .start_run(Some("demo"), TASK.trim(), &attributes)
        .await
        .map_err(|e| Failure::call("starting the demo run", e))?;
    let policy = if args.pause {
        Policy::Ask
    } else {
        Policy::AcceptAll
    };
    let exit = Follow::new(
        &mut session,
        &mut view,
        &run,
        policy,
        Some(ALIAS.into()),
        Some(i64::from(CONTEXT)),
    )
    .run()
    .await;
    view.line("");
    for line in NEXT.lines() {
        view.line(line);
    }
    drop(view);
    session.close().await;
    model.stop().await;
    exit
}

/// The demo server's configuration: a temporary home, a free port, the scripted model only.
fn config(home: std::path::PathBuf, base_url: String) -> Config {
    let mut config = Config::with_home(home);
    config.port = 0;
    with_scripted_model(&mut config, base_url);
    config
}

/// `config` with the scripted model at `base_url` as its one model (alias `demo`) and its one
/// provider, in place of any configured: `rummy demo`, and `rummy serve --demo-model`.
pub(super) fn with_scripted_model(config: &mut Config, base_url: String) {
    config.models = vec![ModelSeed {
        alias: ALIAS.into(),
        actual: format!("openai/{}", model::NAME),
        context_length: Some(CONTEXT),
        fallback: None,
    }];
    config.providers.openai = Some(OpenAiConfig {
        base_url,
        api_key: None,
    });
    config.providers.ollama = None;
    config.providers.openrouter = None;
    config.providers.xai = None;
    config.providers.routing = Default::default();
}
