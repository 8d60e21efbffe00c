//! Accepted `sh`/`env` commands (docs/design/clients.md): who runs them, for how long, how much of their
//! output is kept, which of the server's variables they may see, and how long a turn waits for
//! them.

use super::{invalid, positive, ConfigError, SandboxSettings};
use crate::shell::env::is_secret;
use std::collections::BTreeMap;
use std::time::Duration;

/// Who runs an accepted `sh`/`env` command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ShellRunner {
    /// The server, in the project root, streaming the output into the channels itself.
    #[default]
    Server,
    /// The client that accepted it, which streams the output back with the `stream` methods
    /// (for an editor on the same machine that wants its own terminal); the server runs nothing.
    Client,
}

impl ShellRunner {
    /// The wire name: `server` or `client` (the `runner` attribute of `sh`/`env` proposals).
    pub fn as_str(self) -> &'static str {
        match self {
            ShellRunner::Server => "server",
            ShellRunner::Client => "client",
        }
    }
}

/// How accepted commands run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellSettings {
    /// `RUMMY_COMMAND_RUNNER`: `server` (default) or `client`.
    pub runner: ShellRunner,
    /// `RUMMY_COMMAND_TIMEOUT` in seconds (600): past it the command's process group is killed
    /// and its channels fail.
    pub timeout: Duration,
    /// `RUMMY_COMMAND_OUTPUT_BYTES` (65,536): output kept per channel; the rest is dropped
    /// behind a marker (the command runs on).
    pub output_bytes: usize,
    /// `RUMMY_STREAM_WAIT` in seconds (600): how long a turn waits for an accepted command's
    /// output before it goes on with what arrived (whoever runs the command).
    pub stream_wait: Duration,
    /// `RUMMY_COMMAND_ENV`: names of further server variables a command gets (comma- or
    /// space-separated); a name that looks like a secret is refused.
    pub pass_env: Vec<String>,
    /// How the commands the server runs are confined.
    pub sandbox: SandboxSettings,
}

impl Default for ShellSettings {
    fn default() -> Self {
        ShellSettings {
            runner: ShellRunner::Server,
            timeout: Duration::from_secs(600),
            output_bytes: 64 * 1024,
            stream_wait: Duration::from_secs(600),
            pass_env: Vec::new(),
            sandbox: SandboxSettings::default(),
        }
    }
}

impl ShellSettings {
    /// Reads the command settings over the defaults.
    pub fn from_vars(vars: &BTreeMap<String, String>) -> Result<ShellSettings, ConfigError> {
        let mut s = ShellSettings::default();
        let get = |name: &str| vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
        if let Some(runner) = get("RUMMY_COMMAND_RUNNER") {
            s.runner = match runner.to_ascii_lowercase().as_str() {
                "server" => ShellRunner::Server,
                "client" => ShellRunner::Client,
                _ => {
                    return Err(invalid(
                        "RUMMY_COMMAND_RUNNER",
                        runner,
                        "expected server or client",
                    ))
                }
            };
        }
        let seconds = |name: &str, default: Duration| {
            positive(vars, name, default.as_secs()).map(Duration::from_secs)
        };
        s.timeout = seconds("RUMMY_COMMAND_TIMEOUT", s.timeout)?;
        s.stream_wait = seconds("RUMMY_STREAM_WAIT", s.stream_wait)?;
        s.output_bytes = positive(vars, "RUMMY_COMMAND_OUTPUT_BYTES", s.output_bytes)?;
        if let Some(list) = get("RUMMY_COMMAND_ENV") {
            s.pass_env = list
                .split([',', ' '])
                .filter(|n| !n.is_empty())
                .map(|name| {
                    if is_secret(name) {
                        Err(invalid("RUMMY_COMMAND_ENV", list, &refused_secret(name)))
                    } else {
                        Ok(name.to_owned())
                    }
                })
                .collect::<Result<_, _>>()?;
        }
        s.sandbox = SandboxSettings::from_vars(vars)?;
        Ok(s)
    }
}

/// Why `RUMMY_COMMAND_ENV` may not list `name`, a secret-looking name (see [`is_secret`]).
fn refused_secret(name: &str) -> String {
    format!(
        "{name} looks like a secret (RUMMY_*, DATABASE_URL, PGPASSWORD, PGPASSFILE, or a name \
         containing KEY, TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL or AUTH): commands never \
         get the server's secrets"
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::vars;
    use super::*;
    use pretty_assertions::assert_eq;

    fn read(pairs: &[(&str, &str)]) -> Result<ShellSettings, (String, String)> {
        ShellSettings::from_vars(&vars(pairs)).map_err(|e| (e.name, e.reason))
    }

    /// Without variables the server runs commands itself, for at most 600 s, keeping 64 KiB per
    /// channel, and a turn waits up to 600 s for them.
    #[test]
    fn defaults() {
        assert_eq!(
            read(&[]),
            Ok(ShellSettings {
                runner: ShellRunner::Server,
                timeout: Duration::from_secs(600),
                output_bytes: 65_536,
                stream_wait: Duration::from_secs(600),
                pass_env: Vec::new(),
                sandbox: SandboxSettings::default(),
            })
        );
    }

    /// Every variable is read; the runner is `server` or `client` in any case.
    #[test]
    fn reads_every_variable() {
        assert_eq!(
            read(&[
                ("RUMMY_COMMAND_RUNNER", "Client"),
                ("RUMMY_COMMAND_TIMEOUT", "5"),
                ("RUMMY_COMMAND_OUTPUT_BYTES", "1024"),
                ("RUMMY_STREAM_WAIT", "7"),
                ("RUMMY_COMMAND_ENV", "JAVA_HOME, GOPATH"),
            ]),
            Ok(ShellSettings {
                runner: ShellRunner::Client,
                timeout: Duration::from_secs(5),
                output_bytes: 1024,
                stream_wait: Duration::from_secs(7),
                pass_env: vec!["JAVA_HOME".to_owned(), "GOPATH".to_owned()],
                sandbox: SandboxSettings::default(),
            })
        );
    }

    /// An unknown runner, a zero duration and a secret-looking name to pass on are refused, naming the variable.
    #[test]
    fn refuses_bad_values() {
        let err = |name: &str, reason: &str| Err((name.to_owned(), reason.to_owned()));
        assert_eq!(
            [
                read(&[("RUMMY_COMMAND_RUNNER", "both")]),
                read(&[("RUMMY_COMMAND_TIMEOUT", "0")]),
                read(&[("RUMMY_STREAM_WAIT", "1m")]),
                read(&[("RUMMY_COMMAND_ENV", "PATHS OPENAI_API_KEY")]),
            ],
            [
                err("RUMMY_COMMAND_RUNNER", "expected server or client"),
                err("RUMMY_COMMAND_TIMEOUT", "expected a number above zero"),
                err("RUMMY_STREAM_WAIT", "expected a whole number"),
                err("RUMMY_COMMAND_ENV", &refused_secret("OPENAI_API_KEY")),
            ]
        );
    }

    /// `RUMMY_COMMAND_ENV` refuses the database's credentials and every name containing a
    /// secret word, in any case and wherever it is in the list, naming it; plain names pass.
    #[test]
    fn command_env_refuses_secret_names() {
        for name in [
            "DATABASE_URL",
            "RUMMY_DATABASE_URL",
            "PGPASSWORD",
            "PGPASSFILE",
            "STRIPE_KEY",
            "ghtoken",
            "MY_SECRETS",
            "SMTP_PASSWORD",
            "LDAP_PASSWD",
            "AZURE_CREDENTIALS",
            "AUTHORIZATION",
            "KEYBOARD",
        ] {
            assert_eq!(
                read(&[("RUMMY_COMMAND_ENV", &format!("JAVA_HOME, {name}"))]),
                Err((
                    "RUMMY_COMMAND_ENV".to_owned(),
                    format!(
                        "{name} looks like a secret (RUMMY_*, DATABASE_URL, PGPASSWORD, \
                         PGPASSFILE, or a name containing KEY, TOKEN, SECRET, PASSWORD, PASSWD, \
                         CREDENTIAL or AUTH): commands never get the server's secrets"
                    )
                )),
                "{name}"
            );
        }
        assert_eq!(
            read(&[("RUMMY_COMMAND_ENV", "JAVA_HOME GOPATH PGHOST PGUSER")]).map(|s| s.pass_env),
            Ok(vec![
                "JAVA_HOME".to_owned(),
                "GOPATH".to_owned(),
                "PGHOST".to_owned(),
                "PGUSER".to_owned()
            ])
        );
    }
}
