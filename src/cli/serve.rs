//! `rummy serve`: the server, with its one start-up line on stdout and its log on stderr.

use super::args::ServeArgs;
use super::exit::Exit;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};

/// Runs the server until SIGINT or SIGTERM; with `--demo-model`, on the demo's scripted model
/// (served in this process) in place of the configured providers.
pub fn run(args: ServeArgs) -> Exit {
    let process: BTreeMap<String, String> = std::env::vars().collect();
    init_log("info");
    let config = match rummy::env::load(process) {
        Ok(config) => config,
        Err(e) => {
            report(format_args!("{e}"));
            return Exit::Usage;
        }
    };
    let system = actix_rt::System::new();
    let result = system.block_on(async move {
        let mut config = config;
        let model = if args.demo_model {
            let model = super::demo::model::DemoModel::start()?;
            super::demo::with_scripted_model(&mut config, model.base_url());
            tracing::warn!(
                "serving the scripted demo model (alias demo) in place of any configured provider"
            );
            Some(model)
        } else {
            None
        };
        let handle = rummy::serve(config, shutdown_signal()).await?;
        let mut stdout = std::io::stdout();
        writeln!(
            stdout,
            "{}",
            listening_line(handle.addr(), &handle.ws_url())
        )
        .and_then(|()| stdout.flush())?;
        handle.wait().await?;
        if let Some(model) = model {
            model.stop().await;
        }
        Ok::<(), rummy::ServeError>(())
    });
    match result {
        Ok(()) => Exit::Ok,
        Err(e) => {
            report(format_args!("{e}"));
            // A server that failed half-way leaves actors that never ran; dropping the runtime
            // would start them outside it (a panic). The process ends now: nothing is lost.
            std::mem::forget(system);
            Exit::Failure
        }
    }
}

/// The start-up line: the address bound (its real port when `PORT=0`), and for a wildcard
/// bind also the URL clients on this machine use.
fn listening_line(addr: std::net::SocketAddr, ws_url: &str) -> String {
    let url = ws_url.trim_end_matches('/');
    if addr.ip().is_unspecified() {
        let scheme = url.split("://").next().unwrap_or("ws");
        format!("rummy listening on {scheme}://{addr} (on this machine: {url}/ws)")
    } else {
        format!("rummy listening on {url}")
    }
}

/// Logs to stderr at `default` (or `RUMMY_LOG`): as JSON lines with `RUMMY_LOG_FORMAT=json`
/// (for log shippers), else as text, coloured only when stderr is a terminal and `NO_COLOR`
/// is not set (files and journald get no escape codes).
pub fn init_log(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("RUMMY_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // Its default reports a failed write with `eprintln!`, which panics when stderr is gone
        // (`rummy serve 2>&1 | head -1`), in whatever task logged: a lost log line must not be that.
        .log_internal_errors(false)
        .with_env_filter(filter);
    let format = std::env::var("RUMMY_LOG_FORMAT").unwrap_or_default();
    let format = format.trim().to_ascii_lowercase();
    if format == "json" {
        builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(true)
            .init();
    } else {
        let colour = std::io::stderr().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        builder.with_ansi(colour).init();
    }
    if !matches!(format.as_str(), "" | "json" | "text") {
        tracing::warn!(
            RUMMY_LOG_FORMAT = %format,
            "unknown log format: expected json or text; logging text"
        );
    }
}

/// Writes `rummy: <message>` to stderr; a closed stderr loses the line rather than panicking.
pub fn report(message: std::fmt::Arguments) {
    let _ = writeln!(std::io::stderr(), "rummy: {message}");
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
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

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    /// The line names the address bound; a wildcard bind adds the loopback URL.
    #[test]
    fn the_listening_line_names_the_bound_address() {
        let line = |addr: &str, url: &str| super::listening_line(addr.parse().unwrap(), url);
        assert_eq!(
            (
                line("127.0.0.1:4100", "ws://127.0.0.1:4100/"),
                line("0.0.0.0:4100", "ws://127.0.0.1:4100/"),
                line("[::]:4100", "wss://[::1]:4100/"),
            ),
            (
                "rummy listening on ws://127.0.0.1:4100".to_owned(),
                "rummy listening on ws://0.0.0.0:4100 (on this machine: ws://127.0.0.1:4100/ws)"
                    .to_owned(),
                "rummy listening on wss://[::]:4100 (on this machine: wss://[::1]:4100/ws)"
                    .to_owned(),
            )
        );
    }
}
