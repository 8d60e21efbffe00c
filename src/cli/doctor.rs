//! `rummy doctor`: a running setup checked line by line, for a person who just configured it —
//! the server reachable, the token valid, and, asked of the server (`server/doctor`), the
//! database writable, each provider answering, each model's context length known, each layer
//! of the command sandbox found. Each line is green or red (colour only on a terminal) with what
//! to do, or yellow for what is missing but does not stop the server; any red line makes the
//! exit code non-zero. `rummy doctor --health` is a container's HEALTHCHECK: the local server's `/health`,
//! one line, exit 0 when healthy and 1 otherwise.

use super::args::DoctorArgs;
use super::exit::Exit;
use super::session::DEFAULT_URL;
use super::view::style::{self, Style};
use rummy_client::results::{Check, DoctorReport, SandboxCheck, SandboxMode};
use rummy_client::{CallError, Client, ClientError, ClientOptions};
use std::io::{IsTerminal, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// How long `--health` waits for the server's answer.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(10);

/// The checks' lines, written as they are decided.
struct Report {
    style: Style,
    red: usize,
}

impl Report {
    fn new() -> Report {
        let terminal = std::io::stdout().is_terminal();
        let no_color = std::env::var("NO_COLOR").ok();
        let term = std::env::var("TERM").ok();
        let colour = style::wanted(terminal, no_color.as_deref(), term.as_deref());
        Report {
            style: Style::new(colour),
            red: 0,
        }
    }

    /// One check's line: `ok` or `FAIL`, what was checked, and what was found or what to do.
    fn line(&mut self, ok: bool, what: &str, detail: &str) {
        let mark = if ok {
            self.style.green("ok  ")
        } else {
            self.red += 1;
            self.style.red("FAIL")
        };
        let _ = writeln!(std::io::stdout(), "{mark} {what}: {detail}");
    }

    fn check(&mut self, what: &str, check: &Check) {
        self.line(check.ok, what, &check.detail);
    }

    /// A warning's line: missing, but the setup works without it (the exit code stays 0).
    fn warn(&mut self, what: &str, detail: &str) {
        let mark = self.style.yellow("warn");
        let _ = writeln!(std::io::stdout(), "{mark} {what}: {detail}");
    }
}

/// `rummy doctor` (and `--health`).
pub fn run(args: DoctorArgs) -> Exit {
    let url = args
        .url
        .clone()
        .or_else(|| std::env::var("RUMMY_URL").ok().filter(|u| !u.is_empty()));
    if args.health {
        return health(url.as_deref());
    }
    actix_rt::System::new().block_on(doctor(args))
}

async fn doctor(args: DoctorArgs) -> Exit {
    let mut report = Report::new();
    let url = args
        .url
        .or_else(|| std::env::var("RUMMY_URL").ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| DEFAULT_URL.to_owned());
    let url = match super::session::websocket_url(&url) {
        Ok(url) => url,
        Err(failure) => {
            let hint = failure.hint.unwrap_or_default();
            report.line(false, "server", &format!("{}: {hint}", failure.message));
            return failure.exit;
        }
    };
    let token = std::env::var("RUMMY_TOKEN").ok().filter(|t| !t.is_empty());
    let mut options = ClientOptions::new(&url);
    options.token = token.clone();
    options.reconnect = None;
    options.timeout = Duration::from_secs(60);
    let mut client = match Client::connect(options).await {
        Ok(client) => client,
        Err(ClientError::Rejected { status: 401, .. }) => {
            report.line(true, "server", &format!("reachable at {url}"));
            report.line(
                false,
                "token",
                "refused (unknown, revoked or expired): set RUMMY_TOKEN to a token of this server (rummy token create --user NAME --admin, on its machine)",
            );
            return Exit::Failure;
        }
        Err(e) => {
            report.line(
                false,
                "server",
                &format!("cannot reach {url} ({e}): start it with `rummy serve`, or point RUMMY_URL (or --url) at it"),
            );
            return Exit::Connection;
        }
    };
    report.line(true, "server", &format!("reachable at {url}"));
    let answer = client.server_doctor().await;
    client.close().await;
    let found = match answer {
        Ok(found) => found,
        Err(CallError::Rpc(e)) => {
            let detail = match e.kind() {
                Some("unauthorized") => "this server needs a token: set RUMMY_TOKEN to an admin token (rummy token create --user NAME --admin, on its machine)".to_owned(),
                Some("permission") => "valid, but not an admin's: the server's own checks need an admin token in RUMMY_TOKEN".to_owned(),
                _ => format!("the server refused its checks: {}", e.message),
            };
            report.line(false, "token", &detail);
            return Exit::Failure;
        }
        Err(CallError::Client(e)) => {
            report.line(
                false,
                "server",
                &format!(
                    "the connection was lost during the checks ({e}): look at the server's log"
                ),
            );
            return Exit::Connection;
        }
    };
    let token_line = match token {
        Some(_) => "valid (admin)",
        None => "none needed: the server is open to this machine",
    };
    report.line(true, "token", token_line);
    server_checks(&mut report, &found);
    if report.red == 0 {
        Exit::Ok
    } else {
        Exit::Failure
    }
}

/// The lines of the server's own checks.
fn server_checks(report: &mut Report, found: &DoctorReport) {
    report.line(true, "version", &format!("rummy {}", found.version));
    report.check("database", &found.database);
    if found.providers.is_empty() {
        report.line(
            false,
            "providers",
            "none configured: set OPENAI_BASE_URL (or OLLAMA_BASE_URL, OPENROUTER_API_KEY, XAI_API_KEY) for the server",
        );
    }
    for provider in &found.providers {
        report.check(
            &format!("provider {} ({})", provider.name, provider.base_url),
            &provider.check,
        );
    }
    if found.models.is_empty() {
        report.line(
            false,
            "models",
            "none defined: set RUMMY_MODEL_<alias>=<provider>/<model> for the server",
        );
    }
    for model in &found.models {
        report.check(
            &format!("model {} ({})", model.alias, model.actual),
            &model.check,
        );
    }
    sandbox_checks(report, &found.sandbox);
}

/// The command sandbox's lines: one per layer, then what that means for accepted commands. A
/// missing required layer is red while the server refuses commands for it, yellow once an
/// admin let them run unconfined; a missing optional layer is yellow.
fn sandbox_checks(report: &mut Report, sandbox: &SandboxCheck) {
    for layer in &sandbox.layers {
        let what = format!("sandbox {}", layer.label);
        if layer.check.ok {
            report.line(true, &what, &layer.check.detail);
            continue;
        }
        let detail = format!("{}: {}", layer.check.detail, remedy(&layer.name));
        if layer.required && sandbox.mode == SandboxMode::Refused {
            report.line(false, &what, &detail);
        } else {
            report.warn(&what, &detail);
        }
    }
    match sandbox.mode {
        SandboxMode::Confined => report.line(true, "commands", "accepted commands run in the sandbox"),
        SandboxMode::Unconfined => report.warn(
            "commands",
            "accepted commands run UNCONFINED (RUMMY_UNSANDBOXED_COMMANDS=1): give the server the missing layers to confine them",
        ),
        SandboxMode::Refused => report.line(
            false,
            "commands",
            "the server runs no accepted command itself (a client runner still may): give it the missing layers, or set RUMMY_UNSANDBOXED_COMMANDS=1 to run commands unconfined",
        ),
    }
}

/// What to do about a missing sandbox layer, by its name.
fn remedy(layer: &str) -> &'static str {
    match layer {
        "userNamespace" => "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 and kernel.apparmor_restrict_unprivileged_userns=0 where they exist; under systemd RestrictNamespaces= naming user; in a container seccomp and AppArmor profiles that allow them)",
        "landlock" => "run a kernel with Landlock (5.13 or later, landlock in its lsm= list) and let the server call it (under systemd SystemCallFilter= naming the landlock_* calls; in a container a seccomp profile that allows them)",
        "mountNamespace" | "pidNamespace" | "network" => "let the server make mount, PID, IPC, UTS and network namespaces (under systemd RestrictNamespaces= naming them and SystemCallFilter= with @mount; in a container seccomp and AppArmor profiles that allow unshare and mount)",
        "proc" => "let the server mount a /proc of its own (under systemd no ProtectKernelTunables= or ProtectKernelLogs=; in Docker security_opt systempaths=unconfined)",
        "limits" => "give the server a writable pids cgroup (/sys/fs/cgroup/rummy-commands on cgroup v2) or run it as a user other than root, whose processes RLIMIT_NPROC counts",
        _ => "see the server's start-up log",
    }
}

/// `--health`: the server's `/health` — at `RUMMY_URL` (or `--url`) when set, its host and
/// port over HTTP(S); else at the address the server's own settings give (a wildcard bind asked
/// on loopback). One line; 0 when it answers 200, 1 otherwise.
fn health(url: Option<&str>) -> Exit {
    let url = match url {
        Some(url) => match health_url(url) {
            Some(url) => url,
            None => {
                return unhealthy(&format!(
                    "{url}: not a ws://, wss://, http:// or https:// URL"
                ))
            }
        },
        None => match local_health_url() {
            Ok(url) => url,
            Err(why) => return unhealthy(&why),
        },
    };
    let asked = actix_rt::System::new().block_on(async {
        // The server's own certificate names the host clients use, not this address: on its own
        // machine the check trusts whatever answers there.
        let client = reqwest::Client::builder()
            .timeout(HEALTH_TIMEOUT)
            .danger_accept_invalid_certs(true)
            .build()?;
        let response = client.get(&url).send().await?;
        let status = response.status();
        let body = response.text().await?;
        Ok::<_, reqwest::Error>((status, body))
    });
    match asked {
        Ok((status, body)) if status.is_success() => {
            let summary = serde_json::from_str::<serde_json::Value>(&body)
                .ok()
                .map(|b| {
                    let providers: Vec<&str> = b["providers"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(serde_json::Value::as_str)
                        .collect();
                    format!(
                        "rummy {}, database writable, providers: {}",
                        b["version"].as_str().unwrap_or("?"),
                        if providers.is_empty() {
                            "none".to_owned()
                        } else {
                            providers.join(", ")
                        }
                    )
                })
                .unwrap_or_else(|| body.trim().to_owned());
            let _ = writeln!(std::io::stdout(), "healthy: {summary} ({url})");
            Exit::Ok
        }
        Ok((status, _)) if status.as_u16() == 503 => unhealthy(&format!(
            "{url} answered 503: the database does not take writes"
        )),
        Ok((status, _)) => unhealthy(&format!("{url} answered {status}")),
        Err(e) => unhealthy(&format!("{url}: {e}")),
    }
}

/// The `/health` URL of the server a client URL names: its scheme made HTTP(S), its path
/// replaced.
fn health_url(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = match scheme.to_ascii_lowercase().as_str() {
        "ws" | "http" => "http",
        "wss" | "https" => "https",
        _ => return None,
    };
    let host = rest.split('/').next().filter(|h| !h.is_empty())?;
    Some(format!("{scheme}://{host}/health"))
}

/// The `/health` URL of the server on this machine, from its own settings.
fn local_health_url() -> Result<String, String> {
    let vars = std::env::vars().collect();
    let config = rummy::env::load(vars).map_err(|e| format!("configuration: {e}"))?;
    let host = match config.access.bind {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    let addr = SocketAddr::new(host, config.port);
    let scheme = if config.access.tls.is_some() {
        "https"
    } else {
        "http"
    };
    Ok(format!("{scheme}://{addr}/health"))
}

fn unhealthy(why: &str) -> Exit {
    let _ = writeln!(std::io::stdout(), "unhealthy: {why}");
    Exit::Failure
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    /// A client URL's host and port give the `/health` URL, over TLS for `wss`.
    #[test]
    fn health_urls_follow_the_client_url() {
        let urls: Vec<Option<String>> = [
            "ws://127.0.0.1:4100/ws",
            "wss://rummy.example:443/ws",
            "http://10.0.0.2:3044",
            "ftp://x",
        ]
        .into_iter()
        .map(super::health_url)
        .collect();
        assert_eq!(
            urls,
            vec![
                Some("http://127.0.0.1:4100/health".to_owned()),
                Some("https://rummy.example:443/health".to_owned()),
                Some("http://10.0.0.2:3044/health".to_owned()),
                None
            ]
        );
    }
}
