//! Server configuration read from environment variables, with a default for every setting; a malformed value is refused naming its variable.
//!
//! Parsing is pure: the caller passes the variables in (the process
//! environment over `$RUMMY_HOME/.env`), so tests build a `Config` directly.

mod access;
pub mod check;
mod fair;
mod memory;
mod providers;
mod sandbox;
mod session_state;
mod shell;
mod sidecar;
mod state;
mod summary;
mod web;

use rummy_store::location::Location;
use rummy_store::models::ModelSeed;

pub use access::{Access, TlsFiles, ANONYMOUS_MESSAGE_BYTES};
pub use fair::FairUse;
pub use memory::RecallSettings;
pub use providers::openai_base;
pub use rummy_provider::settings::{
    OllamaConfig, OpenAiConfig, OpenRouterConfig, ProviderLimits, Providers, XaiConfig,
    DEFAULT_CONCURRENCY,
};
pub use sandbox::SandboxSettings;
pub use session_state::{SessionStateSettings, Thresholds};
pub use shell::{ShellRunner, ShellSettings};
pub use sidecar::SidecarSettings;
pub use summary::SummarySettings;
pub use web::WebSettings;

use std::collections::BTreeMap;
use std::path::PathBuf;
use thiserror::Error;

/// A variable that is set but cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{name}={value:?} is invalid: {reason}")]
pub struct ConfigError {
    /// The variable's name.
    pub name: String,
    /// Its value.
    pub value: String,
    /// What was expected.
    pub reason: String,
}

/// Everything the server needs to start.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `RUMMY_HOME`: skills, personas, `.env`, and the default database location.
    pub home: PathBuf,
    /// `RUMMY_DB_PATH`, default `$RUMMY_HOME/rummy.db`.
    pub db_path: PathBuf,
    /// `RUMMY_DATABASE_URL`: the database when it is not the SQLite file at `db_path`
    /// (see [`Config::database`]).
    pub database_url: Option<Location>,
    /// `PORT` on 127.0.0.1; 0 picks a free port.
    pub port: u16,
    /// Per-turn and per-message limits.
    pub limits: Limits,
    /// Model aliases from `RUMMY_MODEL_<alias>` (+ `RUMMY_CONTEXT_<alias>`, `RUMMY_FALLBACK_<alias>`).
    pub models: Vec<ModelSeed>,
    /// LLM provider endpoints and keys.
    pub providers: Providers,
    /// `RUMMY_SEARXNG_URL`: the SearXNG instance `search` asks (its base, without `/search`); none means no `search` tool.
    pub searxng_url: Option<String>,
    /// `RUMMY_WATCH_FILES` (default on): watch project directories (inotify), so a loop start
    /// walks a project only when something in it changed. Off for trees whose changes the
    /// kernel does not see, such as network filesystems written from other machines.
    pub watch_files: bool,
    /// Browser origins, project-root bounds and connection limits.
    pub access: Access,
    /// Who runs accepted `sh`/`env` commands and within which bounds.
    pub shell: ShellSettings,
    /// Runs in flight per user and per project, calls per second per connection.
    pub fair: FairUse,
    /// Recall on a loop's first turn (on or off, its caps, re-ranking) and consolidation at a
    /// loop's end.
    pub recall: RecallSettings,
    /// How side tasks (summaries and the like) are called.
    pub sidecar: SidecarSettings,
    /// Whether runs keep a session state, and when the sidecar updates it.
    pub session_state: SessionStateSettings,
    /// Summarisation on eviction: the server's default and the summary's cap.
    pub summary: SummarySettings,
    /// The model's web fetch: whether the server allows it, its time and size limits.
    pub web: WebSettings,
}

/// Limits and tunables, each with its default (docs/design/turns.md, Settings).
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// `RUMMY_MAX_TURNS`: turns per loop.
    pub max_turns: u32,
    /// `RUMMY_MAX_COMMANDS`: commands parsed per reply.
    pub max_commands: usize,
    /// `RUMMY_MAX_STRIKES`: consecutive strikes before the referee abandons a loop.
    pub max_strikes: u32,
    /// `RUMMY_MIN_CYCLES`: repetitions that make a cycle.
    pub min_cycles: u32,
    /// `RUMMY_MAX_CYCLE_PERIOD`: longest cycle period detected.
    pub max_cycle_period: u32,
    /// `RUMMY_MAX_ENTRY_TOKENS`: largest `known://` body.
    pub max_entry_tokens: u32,
    /// `RUMMY_TOKEN_DIVISOR`: characters per estimated token.
    pub token_divisor: u32,
    /// `RUMMY_BUDGET_CEILING`: share of the context the prompt may fill.
    pub budget_ceiling: f64,
    /// `RUMMY_TEMPERATURE`: default sampling temperature.
    pub temperature: f64,
    /// `RUMMY_RETENTION_DAYS`: how long finished runs are kept.
    pub retention_days: u32,
    /// `RUMMY_RPC_TIMEOUT` in ms: longest a short RPC may take.
    pub rpc_timeout_ms: u64,
    /// `RUMMY_FETCH_TIMEOUT` in ms: longest an LLM request may take.
    pub fetch_timeout_ms: u64,
    /// `RUMMY_SEARCH_TIMEOUT` in ms: longest a web search may take (the turn waits for it).
    pub search_timeout_ms: u64,
    /// `RUMMY_MAX_FRAME_BYTES`: a larger WebSocket frame closes the connection (1009).
    pub max_frame_bytes: usize,
    /// `RUMMY_MAX_MESSAGE_BYTES`: a larger message is answered -32007.
    pub max_message_bytes: usize,
    /// `RUMMY_INLINE_BODY_BYTES`: the most of one body an answer or a push carries inline; a
    /// longer body goes out as its first bytes with `bodyBytes` and `bodyTruncated`, and is
    /// read whole with `getBody`.
    pub inline_body_bytes: usize,
    /// `RUMMY_MAX_BACKLOG_BYTES`: notifications a client may leave unread before its
    /// connection is closed (1013); it reconnects and replays what it missed.
    pub max_backlog_bytes: usize,
    /// `RUMMY_MAX_REPLY_BYTES`: text and reasoning one model reply may hold; past it the call
    /// is cut off and fails.
    pub max_reply_bytes: usize,
    /// `RUMMY_LEASE_MS`: on PostgreSQL, how long a process's hold on its runs lasts unless it
    /// renews it (every third of this); a process that stops renewing has its runs taken
    /// over by another this long after.
    pub lease_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_turns: 99,
            max_commands: 15,
            max_strikes: 3,
            min_cycles: 3,
            max_cycle_period: 4,
            max_entry_tokens: 512,
            token_divisor: 2,
            budget_ceiling: 0.9,
            temperature: 0.5,
            retention_days: 31,
            rpc_timeout_ms: 30_000,
            fetch_timeout_ms: 300_000,
            search_timeout_ms: 10_000,
            max_frame_bytes: 16 * 1024 * 1024,
            max_message_bytes: 4 * 1024 * 1024,
            inline_body_bytes: 256 * 1024,
            max_backlog_bytes: 32 * 1024 * 1024,
            max_reply_bytes: 4 * 1024 * 1024,
            lease_ms: 15_000,
        }
    }
}

impl Config {
    /// The store's database: `RUMMY_DATABASE_URL` when set (it wins over `RUMMY_DB_PATH`),
    /// otherwise the SQLite file at `db_path`.
    pub fn database(&self) -> Location {
        self.database_url
            .clone()
            .unwrap_or_else(|| Location::Sqlite(self.db_path.clone()))
    }

    /// A configuration with every default, the given home and a database inside it.
    pub fn with_home(home: PathBuf) -> Config {
        Config {
            db_path: home.join("rummy.db"),
            database_url: None,
            port: 3044,
            limits: Limits::default(),
            models: Vec::new(),
            providers: Providers::default(),
            searxng_url: None,
            watch_files: true,
            access: Access::with_home(&home),
            shell: ShellSettings::default(),
            fair: FairUse::default(),
            recall: RecallSettings::default(),
            sidecar: SidecarSettings::default(),
            session_state: SessionStateSettings::default(),
            summary: SummarySettings::default(),
            web: WebSettings::default(),
            home,
        }
    }

    /// Reads the configuration from variables; `default_home` is used when `RUMMY_HOME` is unset.
    pub fn from_vars(
        vars: &BTreeMap<String, String>,
        default_home: PathBuf,
    ) -> Result<Config, ConfigError> {
        let get = |name: &str| vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
        let home = get("RUMMY_HOME").map_or(default_home, PathBuf::from);
        let mut config = Config::with_home(home);
        if let Some(db) = get("RUMMY_DB_PATH") {
            config.db_path = PathBuf::from(db);
        }
        if let Some(url) = get("RUMMY_DATABASE_URL") {
            let location = Location::from_url(url).map_err(|reason| ConfigError {
                name: "RUMMY_DATABASE_URL".into(),
                value: rummy_store::location::without_credentials(url),
                reason,
            })?;
            config.database_url = Some(location);
        }
        config.port = number(vars, "PORT", config.port)?;
        let l = &mut config.limits;
        l.max_turns = positive(vars, "RUMMY_MAX_TURNS", l.max_turns)?;
        l.max_commands = positive(vars, "RUMMY_MAX_COMMANDS", l.max_commands)?;
        l.max_strikes = positive(vars, "RUMMY_MAX_STRIKES", l.max_strikes)?;
        l.min_cycles = positive(vars, "RUMMY_MIN_CYCLES", l.min_cycles)?;
        l.max_cycle_period = positive(vars, "RUMMY_MAX_CYCLE_PERIOD", l.max_cycle_period)?;
        l.max_entry_tokens = positive(vars, "RUMMY_MAX_ENTRY_TOKENS", l.max_entry_tokens)?;
        l.token_divisor = positive(vars, "RUMMY_TOKEN_DIVISOR", l.token_divisor)?;
        l.budget_ceiling = fraction(vars, "RUMMY_BUDGET_CEILING", l.budget_ceiling, 1.0)?;
        l.temperature = fraction(vars, "RUMMY_TEMPERATURE", l.temperature, 2.0)?;
        l.retention_days = number(vars, "RUMMY_RETENTION_DAYS", l.retention_days)?;
        l.rpc_timeout_ms = positive(vars, "RUMMY_RPC_TIMEOUT", l.rpc_timeout_ms)?;
        l.fetch_timeout_ms = positive(vars, "RUMMY_FETCH_TIMEOUT", l.fetch_timeout_ms)?;
        l.search_timeout_ms = positive(vars, "RUMMY_SEARCH_TIMEOUT", l.search_timeout_ms)?;
        l.max_frame_bytes = positive(vars, "RUMMY_MAX_FRAME_BYTES", l.max_frame_bytes)?;
        l.max_message_bytes = positive(vars, "RUMMY_MAX_MESSAGE_BYTES", l.max_message_bytes)?;
        l.inline_body_bytes = positive(vars, "RUMMY_INLINE_BODY_BYTES", l.inline_body_bytes)?;
        l.max_backlog_bytes = positive(vars, "RUMMY_MAX_BACKLOG_BYTES", l.max_backlog_bytes)?;
        l.max_reply_bytes = positive(vars, "RUMMY_MAX_REPLY_BYTES", l.max_reply_bytes)?;
        l.lease_ms = positive(vars, "RUMMY_LEASE_MS", l.lease_ms)?;
        config.models = model_seeds(vars)?;
        config.providers = providers::from_vars(vars)?;
        config.searxng_url = get("RUMMY_SEARXNG_URL").map(searxng_base).transpose()?;
        config.watch_files = switch(vars, "RUMMY_WATCH_FILES", config.watch_files)?;
        config.access = Access::from_vars(vars, &config.home)?;
        config.shell = ShellSettings::from_vars(vars)?;
        config.fair = FairUse::from_vars(vars)?;
        config.recall = RecallSettings::from_vars(vars)?;
        config.sidecar = SidecarSettings::from_vars(vars)?;
        config.session_state = SessionStateSettings::from_vars(vars)?;
        config.summary = SummarySettings::from_vars(vars)?;
        config.web = WebSettings::from_vars(vars)?;
        Ok(config)
    }
}

/// A SearXNG base URL: `http(s)://…` with no trailing `/` (a pasted `…/search` endpoint still names the base).
fn searxng_base(url: &str) -> Result<String, ConfigError> {
    const NAME: &str = "RUMMY_SEARXNG_URL";
    let base = url.trim_end_matches('/');
    let base = base
        .strip_suffix("/search")
        .unwrap_or(base)
        .trim_end_matches('/');
    let host = base
        .strip_prefix("http://")
        .or_else(|| base.strip_prefix("https://"));
    match host {
        Some(host) if !host.is_empty() && !host.contains(char::is_whitespace) => {
            Ok(base.to_owned())
        }
        _ => Err(invalid(NAME, url, "expected an http:// or https:// URL")),
    }
}

/// An on/off variable: `1`, `true`, `on`, `yes` or `0`, `false`, `off`, `no` (any case).
fn switch(vars: &BTreeMap<String, String>, name: &str, default: bool) -> Result<bool, ConfigError> {
    let Some(value) = vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty()) else {
        return Ok(default);
    };
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => Ok(true),
        "0" | "false" | "off" | "no" => Ok(false),
        _ => Err(invalid(
            name,
            value,
            "expected on or off (1/0, true/false, yes/no)",
        )),
    }
}

fn invalid(name: &str, value: &str, reason: &str) -> ConfigError {
    ConfigError {
        name: name.to_owned(),
        value: value.to_owned(),
        reason: reason.to_owned(),
    }
}

fn number<T: std::str::FromStr>(
    vars: &BTreeMap<String, String>,
    name: &str,
    default: T,
) -> Result<T, ConfigError> {
    match vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| invalid(name, v, "expected a whole number")),
    }
}

fn positive<T: std::str::FromStr + PartialOrd + Default>(
    vars: &BTreeMap<String, String>,
    name: &str,
    default: T,
) -> Result<T, ConfigError> {
    let value = number(vars, name, default)?;
    if value > T::default() {
        Ok(value)
    } else {
        Err(invalid(
            name,
            vars.get(name).map_or("", String::as_str),
            "expected a number above zero",
        ))
    }
}

fn fraction(
    vars: &BTreeMap<String, String>,
    name: &str,
    default: f64,
    max: f64,
) -> Result<f64, ConfigError> {
    let Some(v) = vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty()) else {
        return Ok(default);
    };
    match v.parse::<f64>() {
        Ok(x) if (0.0..=max).contains(&x) => Ok(x),
        _ => Err(invalid(
            name,
            v,
            &format!("expected a number from 0 to {max}"),
        )),
    }
}

fn model_seeds(vars: &BTreeMap<String, String>) -> Result<Vec<ModelSeed>, ConfigError> {
    let mut seeds = Vec::new();
    for (name, actual) in vars.range("RUMMY_MODEL_".to_owned()..) {
        let Some(alias) = name.strip_prefix("RUMMY_MODEL_") else {
            break;
        };
        let actual = actual.trim();
        if alias.is_empty() || actual.is_empty() {
            continue;
        }
        if !actual.contains('/') {
            return Err(invalid(name, actual, "expected <provider>/<model>"));
        }
        let context_length =
            match vars.get(&format!("RUMMY_CONTEXT_{alias}")) {
                None => None,
                Some(v) => Some(v.trim().parse::<i32>().ok().filter(|n| *n > 0).ok_or_else(
                    || {
                        invalid(
                            &format!("RUMMY_CONTEXT_{alias}"),
                            v,
                            "expected a positive number",
                        )
                    },
                )?),
            };
        seeds.push(ModelSeed {
            alias: alias.to_owned(),
            actual: actual.to_owned(),
            context_length,
            fallback: vars
                .get(&format!("RUMMY_FALLBACK_{alias}"))
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty()),
        });
    }
    Ok(seeds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A variable map from pairs; also for the tests of `config`'s submodules.
    pub(super) fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// With no variables at all the server still has a complete configuration.
    #[test]
    fn every_setting_has_a_default() {
        let config = Config::from_vars(&vars(&[]), PathBuf::from("/h/.rummy"));
        let expected = Config::with_home(PathBuf::from("/h/.rummy"));
        assert_eq!(config, Ok(expected.clone()));
        assert_eq!(expected.db_path, PathBuf::from("/h/.rummy/rummy.db"));
        assert_eq!(expected.port, 3044);
        assert_eq!(expected.limits.max_turns, 99);
        assert_eq!(expected.limits.max_commands, 15);
        assert_eq!(expected.limits.max_reply_bytes, 4 * 1024 * 1024);
    }

    /// `RUMMY_MAX_REPLY_BYTES` bounds a reply, and must be a whole number above zero.
    #[test]
    fn reads_the_reply_limit() {
        let read = |value: &str| {
            Config::from_vars(
                &vars(&[("RUMMY_MAX_REPLY_BYTES", value)]),
                PathBuf::from("/h"),
            )
            .map(|c| c.limits.max_reply_bytes)
            .map_err(|e| (e.name, e.reason))
        };
        let invalid = |reason: &str| Err(("RUMMY_MAX_REPLY_BYTES".to_owned(), reason.to_owned()));
        assert_eq!(
            [read(""), read("65536"), read("0"), read("1MiB")],
            [
                Ok(4 * 1024 * 1024),
                Ok(65_536),
                invalid("expected a number above zero"),
                invalid("expected a whole number"),
            ]
        );
    }

    /// Models, their context lengths and fallbacks, and the provider base URL are read.
    #[test]
    fn reads_models_and_provider() {
        let config = Config::from_vars(
            &vars(&[
                ("RUMMY_HOME", "/srv/rummy"),
                ("PORT", "0"),
                ("RUMMY_MODEL_fast", "openai/gpt-4o-mini"),
                ("RUMMY_CONTEXT_fast", "128000"),
                ("RUMMY_FALLBACK_fast", "slow"),
                ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/"),
                ("RUMMY_OPENAI_CONCURRENCY", "2"),
            ]),
            PathBuf::from("/unused"),
        )
        .unwrap();
        assert_eq!(config.home, PathBuf::from("/srv/rummy"));
        assert_eq!(config.port, 0);
        assert_eq!(
            config.models,
            vec![ModelSeed {
                alias: "fast".into(),
                actual: "openai/gpt-4o-mini".into(),
                context_length: Some(128_000),
                fallback: Some("slow".into()),
            }]
        );
        assert_eq!(
            config.providers.openai,
            Some(OpenAiConfig {
                base_url: "http://127.0.0.1:9".into(),
                api_key: None
            })
        );
        assert_eq!(config.providers.concurrency_of("openai"), 2);
        assert_eq!(config.providers.concurrency_of("xai"), 8);
    }

    /// A set but unusable value is an error naming the variable.
    #[test]
    fn invalid_values_name_the_variable() {
        let err = Config::from_vars(&vars(&[("PORT", "http")]), PathBuf::from("/h"));
        assert_eq!(err.map_err(|e| e.name), Err("PORT".to_owned()));
        let err = Config::from_vars(&vars(&[("RUMMY_MAX_TURNS", "0")]), PathBuf::from("/h"));
        assert_eq!(err.map_err(|e| e.name), Err("RUMMY_MAX_TURNS".to_owned()));
        let err = Config::from_vars(&vars(&[("RUMMY_MODEL_x", "gpt")]), PathBuf::from("/h"));
        assert_eq!(err.map_err(|e| e.name), Err("RUMMY_MODEL_x".to_owned()));
    }

    /// `RUMMY_WATCH_FILES` is on unless turned off, and takes only on/off words.
    #[test]
    fn reads_whether_to_watch_files() {
        let read = |pairs: &[(&str, &str)]| {
            Config::from_vars(&vars(pairs), PathBuf::from("/h"))
                .map(|c| c.watch_files)
                .map_err(|e| (e.name, e.value))
        };
        assert_eq!(read(&[]), Ok(true));
        for (value, expected) in [
            ("0", false),
            ("off", false),
            ("No", false),
            ("1", true),
            ("TRUE", true),
            ("yes", true),
        ] {
            assert_eq!(
                read(&[("RUMMY_WATCH_FILES", value)]),
                Ok(expected),
                "{value}"
            );
        }
        assert_eq!(
            read(&[("RUMMY_WATCH_FILES", "sometimes")]),
            Err(("RUMMY_WATCH_FILES".to_owned(), "sometimes".to_owned()))
        );
    }

    /// `RUMMY_SEARXNG_URL` is optional, normalised to its base, and must be an http(s) URL; `RUMMY_SEARCH_TIMEOUT` bounds a search.
    #[test]
    fn reads_the_search_backend() {
        let read = |pairs: &[(&str, &str)]| {
            Config::from_vars(&vars(pairs), PathBuf::from("/h"))
                .map(|c| (c.searxng_url, c.limits.search_timeout_ms))
                .map_err(|e| (e.name, e.reason))
        };
        let table: [(&[(&str, &str)], _); 7] = [
            (&[], Ok((None, 10_000))),
            (&[("RUMMY_SEARXNG_URL", "  ")], Ok((None, 10_000))),
            (
                &[("RUMMY_SEARXNG_URL", "http://127.0.0.1:8888")],
                Ok((Some("http://127.0.0.1:8888".to_owned()), 10_000)),
            ),
            (
                &[
                    ("RUMMY_SEARXNG_URL", " https://searx.example/base/search/ "),
                    ("RUMMY_SEARCH_TIMEOUT", "2500"),
                ],
                Ok((Some("https://searx.example/base".to_owned()), 2_500)),
            ),
            (
                &[("RUMMY_SEARXNG_URL", "searx.example")],
                Err((
                    "RUMMY_SEARXNG_URL".to_owned(),
                    "expected an http:// or https:// URL".to_owned(),
                )),
            ),
            (
                &[("RUMMY_SEARXNG_URL", "http://")],
                Err((
                    "RUMMY_SEARXNG_URL".to_owned(),
                    "expected an http:// or https:// URL".to_owned(),
                )),
            ),
            (
                &[("RUMMY_SEARCH_TIMEOUT", "0")],
                Err((
                    "RUMMY_SEARCH_TIMEOUT".to_owned(),
                    "expected a number above zero".to_owned(),
                )),
            ),
        ];
        for (pairs, expected) in table {
            assert_eq!(read(pairs), expected, "{pairs:?}");
        }
    }
}
