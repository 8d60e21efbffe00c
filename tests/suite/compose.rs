//! The compose files read as Compose v2 reads them, with no Docker here: YAML with its merge keys
//! (`<<`) applied and `x-` extensions dropped; every `${…}` interpolated from what the documented
//! commands give Compose (`--env-file`); the keys of the file, its services, health checks,
//! builds and volumes those of the compose-spec; named volumes declared; `env_file` in its long
//! form only where the Compose version the file asks for reads it.

use pretty_assertions::assert_eq;
use serde_norway::{Mapping, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// The compose files in `deploy/`.
const FILES: [&str; 2] = ["deploy/compose.yaml", "deploy/compose.postgres.yaml"];

/// The keys the compose-spec's schema allows at the top of a file (besides `x-…`).
const TOP: &[&str] = &[
    "version", "name", "include", "services", "networks", "volumes", "secrets", "configs", "models",
];

/// The keys the compose-spec's schema allows in a service (besides `x-…`).
const SERVICE: &[&str] = &[
    "annotations",
    "attach",
    "build",
    "blkio_config",
    "cap_add",
    "cap_drop",
    "cgroup",
    "cgroup_parent",
    "command",
    "configs",
    "container_name",
    "cpu_count",
    "cpu_percent",
    "cpu_shares",
    "cpu_quota",
    "cpu_period",
    "cpu_rt_period",
    "cpu_rt_runtime",
    "cpus",
    "cpuset",
    "credential_spec",
    "depends_on",
    "deploy",
    "develop",
    "device_cgroup_rules",
    "devices",
    "dns",
    "dns_opt",
    "dns_search",
    "domainname",
    "entrypoint",
    "env_file",
    "label_file",
    "environment",
    "expose",
    "extends",
    "external_links",
    "extra_hosts",
    "gpus",
    "group_add",
    "healthcheck",
    "hostname",
    "image",
    "init",
    "ipc",
    "isolation",
    "labels",
    "links",
    "logging",
    "mac_address",
    "mem_limit",
    "mem_reservation",
    "mem_swappiness",
    "memswap_limit",
    "models",
    "network_mode",
    "networks",
    "oom_kill_disable",
    "oom_score_adj",
    "pid",
    "pids_limit",
    "platform",
    "ports",
    "post_start",
    "pre_stop",
    "privileged",
    "profiles",
    "provider",
    "pull_policy",
    "pull_refresh_after",
    "read_only",
    "restart",
    "runtime",
    "scale",
    "secrets",
    "security_opt",
    "shm_size",
    "stdin_open",
    "stop_grace_period",
    "stop_signal",
    "storage_opt",
    "sysctls",
    "tmpfs",
    "tty",
    "ulimits",
    "use_api_socket",
    "user",
    "uts",
    "userns_mode",
    "volumes",
    "volumes_from",
    "working_dir",
];

/// The keys of a service's `healthcheck`.
const HEALTHCHECK: &[&str] = &[
    "disable",
    "interval",
    "retries",
    "test",
    "timeout",
    "start_period",
    "start_interval",
];

/// The keys of a service's `build` (the ones a file here may use).
const BUILD: &[&str] = &[
    "context",
    "dockerfile",
    "dockerfile_inline",
    "args",
    "ssh",
    "labels",
    "cache_from",
    "cache_to",
    "no_cache",
    "additional_contexts",
    "network",
    "pull",
    "target",
    "shm_size",
    "extra_hosts",
    "isolation",
    "privileged",
    "secrets",
    "tags",
    "ulimits",
    "platforms",
];

/// The keys of a top-level volume.
const VOLUME: &[&str] = &["driver", "driver_opts", "external", "labels", "name"];

/// The conditions of a `depends_on` entry's long form.
const CONDITIONS: &[&str] = &[
    "service_started",
    "service_healthy",
    "service_completed_successfully",
];

/// The restart policies.
const RESTART: &[&str] = &["no", "always", "on-failure", "unless-stopped"];

/// The Compose version that reads `env_file`'s long form (`path:`, `required:`).
const ENV_FILE_LONG_FORM: &str = "2.24";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The file at `path` as Compose holds it before interpolation: merge keys applied, the
/// top-level `x-` extensions dropped.
fn load(path: &str) -> Mapping {
    let mut value: Value = serde_norway::from_str(&read(path)).unwrap();
    value.apply_merge().unwrap();
    let Value::Mapping(mut top) = value else {
        panic!("{path} is not a mapping");
    };
    top.retain(|k, _| !key(k).starts_with("x-"));
    top
}

/// A mapping key as text.
fn key(k: &Value) -> &str {
    k.as_str()
        .unwrap_or_else(|| panic!("a key that is not text: {k:?}"))
}

/// The keys of `map` that are neither in `allowed` nor extensions.
fn unknown(map: &Mapping, allowed: &[&str]) -> Vec<String> {
    map.keys()
        .map(key)
        .filter(|k| !allowed.contains(k) && !k.starts_with("x-"))
        .map(str::to_owned)
        .collect()
}

/// The services of a loaded file, by name.
fn services(file: &Mapping) -> BTreeMap<String, Mapping> {
    file["services"]
        .as_mapping()
        .unwrap()
        .iter()
        .map(|(name, s)| (key(name).to_owned(), s.as_mapping().unwrap().clone()))
        .collect()
}

/// One `${…}` or `$NAME` of a value: the variable, and whether Compose has something to put
/// there without it (a default, `-` or `:-`) or stops with a message (`?`, `:?`).
#[derive(Debug, PartialEq)]
struct Reference {
    name: String,
    defaulted: bool,
    message: Option<String>,
}

/// The references in `text`, as Compose's interpolation reads them (`$$` is a `$`); an
/// unterminated `${` or a `$` before anything but a name, `{` or `$` is Compose's error too.
fn references(text: &str) -> Result<Vec<Reference>, String> {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            rest = tail;
        } else if let Some(braced) = after.strip_prefix('{') {
            let end = braced
                .find('}')
                .ok_or_else(|| format!("an unterminated ${{ in {text:?}"))?;
            let inner = &braced[..end];
            let name_end = inner.find(|c: char| !is_name(c)).unwrap_or(inner.len());
            let (name, op) = inner.split_at(name_end);
            if name.is_empty() {
                return Err(format!("no variable name in ${{{inner}}}"));
            }
            let (defaulted, message) = match op {
                "" => (false, None),
                _ if op.starts_with(":-") || op.starts_with('-') => (true, None),
                _ if op.starts_with(":?") => (false, Some(op[2..].to_owned())),
                _ if op.starts_with('?') => (false, Some(op[1..].to_owned())),
                _ if op.starts_with(":+") || op.starts_with('+') => (true, None),
                _ => return Err(format!("Compose reads no ${{{inner}}}")),
            };
            found.push(Reference {
                name: name.to_owned(),
                defaulted,
                message,
            });
            rest = &braced[end + 1..];
        } else {
            let end = after.find(|c: char| !is_name(c)).unwrap_or(after.len());
            if end == 0 {
                return Err(format!("a lone $ in {text:?} (write $$ for a dollar)"));
            }
            found.push(Reference {
                name: after[..end].to_owned(),
                defaulted: false,
                message: None,
            });
            rest = &after[end..];
        }
    }
    Ok(found)
}

/// Every string scalar under `value` (mapping values and sequence items: Compose interpolates
/// those, not keys).
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Sequence(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Mapping(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// `text` with every reference replaced from `vars` (or its default), as Compose does.
fn interpolate(text: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(braced) = after.strip_prefix('{') {
            let end = braced.find('}').unwrap();
            let inner = &braced[..end];
            let name_end = inner
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(inner.len());
            let (name, op) = inner.split_at(name_end);
            let value = vars.get(name).filter(|v| !v.is_empty());
            out.push_str(match (value, op) {
                (Some(v), _) => v,
                (None, op) if op.starts_with(":-") => &op[2..],
                (None, _) => panic!("${{{inner}}} is not set"),
            });
            rest = &braced[end + 1..];
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            out.push_str(vars.get(&after[..end]).map_or("", String::as_str));
            rest = &after[end..];
        }
    }
    out.push_str(rest);
    out
}

/// `NAME=value` lines of an env file.
fn env_file(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// The `docker compose` commands the file's comments and the README tell a person to type for
/// `file`.
fn documented_commands(file: &str) -> Vec<String> {
    let mut lines: Vec<String> = read(file)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("#   "))
        .map(str::to_owned)
        .collect();
    lines.extend(read("README.md").lines().map(str::to_owned));
    let joined = read("README.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    // The README's prose wraps commands in backticks across lines.
    lines.extend(joined.split('`').map(str::to_owned));
    lines
        .into_iter()
        .filter(|l| l.contains("docker compose") && l.contains(&format!("-f {file}")))
        .collect()
}

/// Every key of the files, their services, health checks, builds, `depends_on` entries and
/// volumes is one the compose-spec knows; every `depends_on` names a service of the file, and
/// every restart policy is one Compose has.
#[test]
fn the_compose_files_use_only_what_the_compose_spec_knows() {
    let mut found = Vec::new();
    for path in FILES {
        let file = load(path);
        found.extend(
            unknown(&file, TOP)
                .into_iter()
                .map(|k| format!("{path}: {k}")),
        );
        let services = services(&file);
        for (name, service) in &services {
            let at = format!("{path}: services.{name}");
            found.extend(
                unknown(service, SERVICE)
                    .into_iter()
                    .map(|k| format!("{at}.{k}")),
            );
            if let Some(check) = service.get("healthcheck") {
                let check = check.as_mapping().unwrap();
                found.extend(
                    unknown(check, HEALTHCHECK)
                        .into_iter()
                        .map(|k| format!("{at}.healthcheck.{k}")),
                );
            }
            if let Some(Value::Mapping(build)) = service.get("build") {
                found.extend(
                    unknown(build, BUILD)
                        .into_iter()
                        .map(|k| format!("{at}.build.{k}")),
                );
            }
            if let Some(Value::Mapping(depends)) = service.get("depends_on") {
                for (other, how) in depends {
                    assert!(
                        services.contains_key(key(other)),
                        "{at} depends on {other:?}"
                    );
                    let condition = how["condition"].as_str().unwrap_or("service_started");
                    assert!(
                        CONDITIONS.contains(&condition),
                        "{at}: condition {condition}"
                    );
                }
            }
            if let Some(restart) = service.get("restart") {
                let policy = restart.as_str().unwrap().split(':').next().unwrap();
                assert!(RESTART.contains(&policy), "{at}: restart {policy}");
            }
            for list in ["ports", "volumes", "security_opt"] {
                if let Some(items) = service.get(list) {
                    assert!(items.as_sequence().is_some(), "{at}.{list} is not a list");
                }
            }
            if let Some(env) = service.get("environment") {
                for (k, v) in env.as_mapping().unwrap() {
                    assert!(
                        matches!(
                            v,
                            Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null
                        ),
                        "{at}.environment.{}: {v:?}",
                        key(k)
                    );
                }
            }
        }
        if let Some(volumes) = file.get("volumes") {
            for (name, volume) in volumes.as_mapping().unwrap() {
                if let Value::Mapping(volume) = volume {
                    found.extend(
                        unknown(volume, VOLUME)
                            .into_iter()
                            .map(|k| format!("{path}: volumes.{}.{k}", key(name))),
                    );
                }
            }
        }
    }
    assert_eq!(found, Vec::<String>::new());
}

/// Every named volume a service mounts is declared at the top, every declared one is mounted,
/// and each server's home (`RUMMY_HOME`) and its commands' homes are on named volumes — kept
/// across restarts — of its own.
#[test]
fn every_server_keeps_its_home_on_a_declared_volume() {
    for path in FILES {
        let file = load(path);
        let declared: BTreeSet<String> = file
            .get("volumes")
            .and_then(Value::as_mapping)
            .map(|v| v.keys().map(|k| key(k).to_owned()).collect())
            .unwrap_or_default();
        let mut mounted = BTreeSet::new();
        let mut homes = Vec::new();
        for (name, service) in services(&file) {
            let mut named = BTreeMap::new();
            for item in service
                .get("volumes")
                .and_then(Value::as_sequence)
                .into_iter()
                .flatten()
            {
                let short = item.as_str().unwrap();
                let (source, target) = short.split_once(':').unwrap();
                let target = target.split(':').next().unwrap();
                if !source.starts_with(['/', '.', '~']) {
                    assert!(
                        declared.contains(source),
                        "{path}: {name} mounts {source}, not declared"
                    );
                    mounted.insert(source.to_owned());
                    named.insert(target.to_owned(), source.to_owned());
                }
            }
            let Some(env) = service.get("environment").and_then(Value::as_mapping) else {
                continue;
            };
            for var in ["RUMMY_HOME", "RUMMY_COMMAND_HOMES"] {
                let Some(dir) = env.get(var).and_then(Value::as_str) else {
                    continue;
                };
                let volume = named.get(dir).unwrap_or_else(|| {
                    panic!("{path}: {name}'s {var} {dir} is on no named volume")
                });
                homes.push(volume.clone());
            }
        }
        let unique: BTreeSet<&String> = homes.iter().collect();
        assert_eq!(
            unique.len(),
            homes.len(),
            "{path}: two servers share a home volume: {homes:?}"
        );
        assert_eq!(
            mounted, declared,
            "{path}: declared volumes no service mounts"
        );
    }
}

/// Every `${…}` of the files is one Compose reads; one without a default stops Compose with a
/// message naming the env file that sets it; every documented command passes that file with
/// `--env-file` (Compose reads an `env_file:` only into the containers, never for `${…}`); the
/// example env file names each such variable, and with it filled in the files interpolate —
/// the database URL carries the password the PostgreSQL container is given.
#[test]
fn every_variable_the_compose_files_use_is_given_by_the_documented_commands() {
    let example = env_file(&read("deploy/rummy.env.example"));
    for path in FILES {
        let file = load(path);
        let mut texts = Vec::new();
        strings(&Value::Mapping(file.clone()), &mut texts);
        let mut required = BTreeSet::new();
        for text in &texts {
            for reference in references(text).unwrap() {
                if reference.defaulted {
                    continue;
                }
                let message = reference.message.unwrap_or_else(|| {
                    panic!(
                        "{path}: ${{{}}} has neither a default nor a message",
                        reference.name
                    )
                });
                assert!(
                    message.contains("--env-file deploy/rummy.env"),
                    "{path}: ${{{}}}'s message does not say where it is set: {message}",
                    reference.name
                );
                required.insert(reference.name);
            }
        }
        if required.is_empty() {
            continue;
        }
        let commands = documented_commands(path);
        assert!(!commands.is_empty(), "no command for {path} is documented");
        for command in &commands {
            assert!(
                command.contains("docker compose --env-file deploy/rummy.env "),
                "{path} needs {required:?} from deploy/rummy.env, but this command does not pass it: {command}"
            );
        }
        for name in &required {
            assert!(
                example.contains_key(name),
                "rummy.env.example does not name {name}"
            );
        }
        let filled: BTreeMap<String, String> = example
            .keys()
            .map(|k| (k.clone(), format!("test-{}", k.to_lowercase())))
            .collect();
        let services = services(&file);
        let env = |service: &str, var: &str| {
            interpolate(
                services[service]["environment"][var].as_str().unwrap(),
                &filled,
            )
        };
        assert_eq!(
            (
                env("postgres", "POSTGRES_PASSWORD"),
                env("rummy-a", "RUMMY_DATABASE_URL")
            ),
            (
                "test-postgres_password".to_owned(),
                "postgres://rummy:test-postgres_password@postgres:5432/rummy".to_owned()
            )
        );
    }
}

/// Compose reads references as the compose-spec says: `$$` is a dollar, defaults and messages
/// after the name, a lone `$` or an unterminated `${` refused.
#[test]
fn references_are_read_as_compose_reads_them() {
    let read = |t: &str| {
        references(t).map(|r| {
            r.into_iter()
                .map(|r| (r.name, r.defaulted, r.message))
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(
        read("a $$HOME ${A:-x} ${B-y} ${C:?set C} ${D?d} $E ${F}"),
        Ok(vec![
            ("A".to_owned(), true, None),
            ("B".to_owned(), true, None),
            ("C".to_owned(), false, Some("set C".to_owned())),
            ("D".to_owned(), false, Some("d".to_owned())),
            ("E".to_owned(), false, None),
            ("F".to_owned(), false, None),
        ])
    );
    assert!(read("${A").is_err());
    assert!(read("cost $ 5").is_err());
}

/// A file that uses `env_file`'s long form (`path:`, `required:`) says it needs Compose 2.24,
/// the first that reads it, and so does the README; each entry is a path or exactly that form.
#[test]
fn the_env_file_long_form_comes_with_the_compose_version_it_needs() {
    let readme = read("README.md");
    for path in FILES {
        let mut long = false;
        for (name, service) in services(&load(path)) {
            for entry in service
                .get("env_file")
                .and_then(Value::as_sequence)
                .into_iter()
                .flatten()
            {
                if let Value::Mapping(entry) = entry {
                    long = true;
                    assert_eq!(
                        unknown(entry, &["path", "required", "format"]),
                        Vec::<String>::new()
                    );
                    assert!(entry["path"].is_string(), "{path}: {name}: env_file path");
                    assert!(
                        entry.get("required").is_none_or(Value::is_bool),
                        "{path}: {name}"
                    );
                } else {
                    assert!(entry.is_string(), "{path}: {name}: env_file {entry:?}");
                }
            }
        }
        if long {
            let said = format!("Docker Compose {ENV_FILE_LONG_FORM} or later");
            assert!(
                read(path).contains(&said),
                "{path} does not say it needs {said}"
            );
            assert!(
                readme
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .contains(&said),
                "the README does not say {said}"
            );
        }
    }
}
