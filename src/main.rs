//! The `rummy` command: `rummy serve` runs the server.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

const USAGE: &str = "usage: rummy serve\n\n\
Runs the rummy server on ws://127.0.0.1:$PORT (default 3044; PORT=0 picks a free port).\n\
Configuration comes from the environment and $RUMMY_HOME/.env (default ~/.rummy/.env):\n\
  RUMMY_MODEL_<alias>=openai/<model>   a model alias\n\
  OPENAI_BASE_URL, OPENAI_API_KEY      an OpenAI-compatible endpoint\n";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None | Some("serve") => serve(),
        Some("-h" | "--help" | "help") => {
            let _ = write!(std::io::stdout(), "{USAGE}");
            ExitCode::SUCCESS
        }
        Some(other) => {
            report(format_args!("unknown command {other:?}\n\n{USAGE}"));
            ExitCode::from(2)
        }
    }
}

fn serve() -> ExitCode {
    let process: BTreeMap<String, String> = std::env::vars().collect();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // Its default reports a failed write with `eprintln!`, which panics when stderr is gone
        // (`rummy serve 2>&1 | head -1`), in whatever task logged: a lost log line must not be that.
        .log_internal_errors(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RUMMY_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let config = match rummy::env::load(process) {
        Ok(config) => config,
        Err(e) => {
            report(format_args!("{e}"));
            return ExitCode::from(2);
        }
    };
    let result = actix_rt::System::new().block_on(async move {
        let handle = rummy::serve(config, shutdown_signal()).await?;
        let mut stdout = std::io::stdout();
        writeln!(
            stdout,
            "rummy listening on ws://127.0.0.1:{}",
            handle.addr().port()
        )
        .and_then(|()| stdout.flush())?;
        Ok::<(), rummy::ServeError>(handle.wait().await?)
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            report(format_args!("{e}"));
            ExitCode::FAILURE
        }
    }
}

/// Writes `rummy: <message>` to stderr; a closed stderr loses the line rather than panicking.
fn report(message: std::fmt::Arguments) {
    let _ = writeln!(std::io::stderr(), "rummy: {message}");
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
