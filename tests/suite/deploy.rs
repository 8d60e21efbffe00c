//! `deploy/` checked where it can be here: no image is built (no network), so
//! the Dockerfile, compose file and systemd unit are read — against the locked dependencies'
//! `rust-version` (`cargo metadata --offline`), the binary's real `--help`, the README's settings
//! table and the configuration parser. (`systemd-analyze verify` of the unit needs the tool: the
//! `needs` binary's `systemd::`.)

use pretty_assertions::assert_eq;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A `major.minor[.patch]` version as numbers, for comparing.
fn version(text: &str) -> Vec<u64> {
    let mut parts: Vec<u64> = text
        .split('.')
        .map(|p| {
            p.parse()
                .unwrap_or_else(|_| panic!("not a version: {text}"))
        })
        .collect();
    parts.resize(3, 0);
    parts
}

/// The Dockerfile's `FROM` lines: (image, tag).
fn stages(dockerfile: &str) -> Vec<(String, String)> {
    dockerfile
        .lines()
        .filter_map(|l| l.strip_prefix("FROM "))
        .map(|from| {
            let image = from.split_whitespace().next().unwrap_or_default();
            let (name, tag) = image.split_once(':').unwrap_or((image, "latest"));
            (name.to_owned(), tag.to_owned())
        })
        .collect()
}

/// The machine's own target, for `cargo metadata --filter-platform`: the lockfile also names
/// dependencies of other platforms' targets, which an offline machine never downloaded.
fn host() -> String {
    let out = Command::new("rustc").arg("-vV").output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .unwrap()
        .to_owned()
}

/// The builder's Rust image is the workspace's `rust-version`, and that is at least the highest
/// `rust-version` among the locked dependencies (read with `cargo metadata --offline`); the
/// runtime image is the same Debian release as the builder's, so the binary finds its glibc.
#[test]
fn the_image_builds_with_the_toolchain_the_lockfile_needs() {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--filter-platform",
        ])
        .arg(host())
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).unwrap();
    let members: BTreeSet<&str> = metadata["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let packages = metadata["packages"].as_array().unwrap();
    let (needed, by) = packages
        .iter()
        .filter(|p| !members.contains(p["id"].as_str().unwrap_or_default()))
        .filter_map(|p| {
            let v = p["rust_version"].as_str()?;
            Some((version(v), format!("{} {}", p["name"], p["version"])))
        })
        .max()
        .unwrap();
    let workspace = packages
        .iter()
        .find(|p| p["name"] == "rummy")
        .and_then(|p| p["rust_version"].as_str())
        .map(version)
        .expect("the rummy package has a rust-version");

    let stages = stages(&read("deploy/Dockerfile"));
    let (rust, runtime) = (&stages[0], &stages[stages.len() - 1]);
    assert_eq!(rust.0, "rust", "the first stage builds with the Rust image");
    let (toolchain, release) = rust.1.split_once('-').unwrap();
    let release = release.trim_start_matches("slim-");
    assert_eq!(
        (version(toolchain), runtime.clone()),
        (
            workspace.clone(),
            ("debian".to_owned(), format!("{release}-slim"))
        )
    );
    assert!(
        workspace >= needed,
        "rust-version {workspace:?} is below what {by} needs ({needed:?})"
    );
}

/// The build context leaves out the build output and the history.
#[test]
fn the_build_context_leaves_out_target_and_git() {
    let ignored: BTreeSet<String> = read(".dockerignore")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    for needed in ["target/", ".git"] {
        assert!(
            ignored.contains(needed),
            "{needed} is not ignored: {ignored:?}"
        );
    }
}

/// The value a Dockerfile instruction takes (the rest of its line, continuations joined).
fn instructions(dockerfile: &str) -> Vec<(String, String)> {
    let joined = dockerfile.replace("\\\n", " ");
    joined
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let (word, rest) = l.trim().split_once(' ')?;
            Some((
                word.to_owned(),
                rest.split_whitespace().collect::<Vec<_>>().join(" "),
            ))
        })
        .collect()
}

/// The image runs as a user of its own, keeps `RUMMY_HOME` on a volume, listens beyond its
/// loopback, and checks its health with the binary itself (the slim image has no curl).
#[test]
fn the_image_runs_unprivileged_with_its_home_on_a_volume() {
    let all = instructions(&read("deploy/Dockerfile"));
    let last_stage = all
        .iter()
        .rposition(|(w, _)| w == "FROM")
        .map_or(&all[..], |i| &all[i..]);
    let of = |word: &str| -> Vec<String> {
        last_stage
            .iter()
            .filter(|(w, _)| w == word)
            .map(|(_, v)| v.clone())
            .collect()
    };
    let env = settings_of_dockerfile(&read("deploy/Dockerfile"));
    let user = of("USER");
    assert_eq!(user.len(), 1, "one USER: {user:?}");
    assert!(!["root", "0"].contains(&user[0].as_str()), "{user:?}");
    assert_eq!(
        (
            env.get("RUMMY_HOME").cloned(),
            env.get("RUMMY_BIND").cloned(),
            of("VOLUME"),
        ),
        (
            Some("/var/lib/rummy".to_owned()),
            Some("0.0.0.0".to_owned()),
            vec!["[\"/var/lib/rummy\"]".to_owned()],
        )
    );
    assert_eq!(
        of("HEALTHCHECK")
            .iter()
            .map(|h| h.split(" CMD ").nth(1).unwrap_or_default().to_owned())
            .collect::<Vec<_>>(),
        vec!["[\"rummy\", \"doctor\", \"--health\"]".to_owned()]
    );
    assert_eq!(of("CMD"), vec!["[\"rummy\", \"serve\"]".to_owned()]);
}

/// `KEY=value` pairs of the Dockerfile's `ENV`.
fn settings_of_dockerfile(dockerfile: &str) -> BTreeMap<String, String> {
    instructions(dockerfile)
        .into_iter()
        .filter(|(w, _)| w == "ENV")
        .flat_map(|(_, v)| {
            v.split_whitespace()
                .filter_map(|pair| pair.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The compose file's `environment:` mapping and its `volumes:` list of the service.
fn compose() -> (
    BTreeMap<String, String>,
    Vec<String>,
    BTreeMap<String, String>,
) {
    let text = read("deploy/compose.yaml");
    // The service's keys are indented four spaces, their entries six.
    let mut section = String::new();
    let (mut env, mut volumes, mut keys) = (BTreeMap::new(), Vec::new(), BTreeMap::new());
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || trimmed.is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if indent == 4 {
            let (key, value) = trimmed.split_once(':').unwrap();
            section = key.to_owned();
            keys.insert(key.to_owned(), value.trim().to_owned());
        } else if indent == 6 && section == "environment" {
            let (key, value) = trimmed.split_once(':').unwrap();
            env.insert(key.to_owned(), value.trim().trim_matches('"').to_owned());
        } else if indent == 6 && ["volumes", "security_opt"].contains(&section.as_str()) {
            let item = trimmed.trim_start_matches("- ").to_owned();
            if section == "volumes" {
                volumes.push(item);
            } else {
                let joined = keys.entry(section.clone()).or_default();
                joined.push_str(if joined.is_empty() { "" } else { " " });
                joined.push_str(&item);
            }
        }
    }
    (env, volumes, keys)
}

/// The compose file restarts the server, keeps its home on a volume where the image expects
/// it, and mounts every project directory at the same path inside as outside — the path a
/// client says hello with is the host's — under the roots the server allows.
#[test]
fn compose_mounts_projects_at_their_own_paths_and_restarts() {
    let (env, volumes, keys) = compose();
    assert_eq!(
        (keys.get("restart"), keys.get("init")),
        (Some(&"unless-stopped".to_owned()), Some(&"true".to_owned()))
    );
    let mut projects = Vec::new();
    let mut named = Vec::new();
    for volume in &volumes {
        let (outside, inside) = volume.split_once(':').unwrap();
        if outside.starts_with('/') {
            assert_eq!(outside, inside, "a project is mounted at its own path");
            projects.push(inside.to_owned());
        } else {
            named.push(inside.to_owned());
        }
    }
    let roots: Vec<String> = env["RUMMY_PROJECT_ROOTS"]
        .split(':')
        .map(str::to_owned)
        .collect();
    assert_eq!(
        (named, &projects),
        (
            vec![
                env["RUMMY_HOME"].clone(),
                env["RUMMY_COMMAND_HOMES"].clone()
            ],
            &roots
        )
    );
}

/// `[Service]` and `[Unit]` settings of the unit: every value of each key.
fn unit() -> BTreeMap<String, Vec<String>> {
    let mut keys: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in read("deploy/rummy.service").lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with('[') {
            continue;
        }
        if let Some((key, value)) = line.split_once('=') {
            keys.entry(key.to_owned())
                .or_default()
                .push(value.to_owned());
        }
    }
    keys
}

/// The unit's `Environment=` settings.
fn settings_of_unit() -> BTreeMap<String, String> {
    unit()
        .get("Environment")
        .into_iter()
        .flatten()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The systemd unit is hardened — a dedicated user, its home as the
/// state directory, a read-only system but for the project roots it may open, no new
/// privileges, started once the network is online, configured by an environment file.
#[test]
fn the_systemd_unit_is_hardened() {
    let keys = unit();
    let env = settings_of_unit();
    let one = |key: &str| keys.get(key).map(|v| v.join(" ")).unwrap_or_default();
    assert_eq!(
        [
            "User",
            "StateDirectory",
            "ProtectSystem",
            "NoNewPrivileges",
            "Wants",
            "After",
            "EnvironmentFile",
            "ExecStart",
        ]
        .map(one),
        [
            "rummy",
            "rummy rummy-homes",
            "strict",
            "yes",
            "network-online.target",
            "network-online.target",
            "-/etc/rummy/env",
            "/usr/local/bin/rummy serve",
        ]
        .map(str::to_owned)
    );
    assert_eq!(
        env.get("RUMMY_HOME"),
        Some(&format!(
            "/var/lib/{}",
            keys["StateDirectory"][0].split(' ').next().unwrap()
        ))
    );
    let writable: BTreeSet<&str> = keys["ReadWritePaths"]
        .iter()
        .flat_map(|v| v.split_whitespace())
        .collect();
    for root in env["RUMMY_PROJECT_ROOTS"].split(':') {
        assert!(
            writable.contains(root),
            "project root {root} is not writable"
        );
    }
}

/// `rummy ARGS` in an empty environment; (exit code, stdout).
fn rummy(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rummy"))
        .args(args)
        .env_clear()
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The subcommands a help text lists under `Commands:`.
fn commands_in(help: &str) -> BTreeSet<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

/// The `rummy` invocations in a line of a command: each as its words from the binary's name on,
/// up to the end of that command (`&&`, `;`, `|`). A `rummy` that is an option's value (a user
/// or group name) is not the binary.
fn invocations(line: &str) -> Vec<Vec<String>> {
    let words: Vec<String> = line
        .split(|c: char| c.is_whitespace() || "[],\"".contains(c))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect();
    let mut found = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let binary = word == "rummy" || (word.ends_with("/rummy") && !word.contains('='));
        let an_option_value = i > 0 && words[i - 1].starts_with('-');
        let next_is_binary = words
            .get(i + 1)
            .is_some_and(|w| w == "rummy" || w.ends_with("/rummy"));
        if !binary || an_option_value || next_is_binary || i + 1 == words.len() {
            continue;
        }
        found.push(
            words[i + 1..]
                .iter()
                .take_while(|w| !["&&", ";", "|", "#"].contains(&w.as_str()))
                .cloned()
                .collect(),
        );
    }
    found
}

/// The lines of the deploy files that run the binary: the Dockerfile's `CMD` and `HEALTHCHECK`
/// (its `RUN` builds it), the unit's `Exec*=`, and the commands the files' comments tell a person to type
/// (indented three spaces after the `#`), and the commands of the README's *Deploying*.
fn command_lines() -> Vec<(String, String)> {
    let mut lines = Vec::new();
    for file in [
        "deploy/Dockerfile",
        "deploy/compose.yaml",
        "deploy/rummy.service",
    ] {
        for line in read(file).replace("\\\n", " ").lines() {
            let trimmed = line.trim();
            let runs = ["CMD ", "HEALTHCHECK ", "ExecStart=", "ExecStop="]
                .iter()
                .any(|p| trimmed.starts_with(p));
            if let Some(typed) = trimmed.strip_prefix("#   ") {
                // What follows a ` # ` on it is the comment's own comment.
                let command = typed.split(" # ").next().unwrap_or_default();
                lines.push((file.to_owned(), command.trim().to_owned()));
            } else if runs {
                lines.push((file.to_owned(), trimmed.to_owned()));
            }
        }
    }
    let readme = read("README.md");
    let deploying = readme
        .split("\n## Deploying\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("the README has a Deploying section");
    let mut in_block = false;
    for line in deploying.lines() {
        if line.starts_with("```") {
            in_block = !in_block;
        } else if in_block {
            let command = line.split(" # ").next().unwrap_or_default();
            lines.push(("README.md".to_owned(), command.trim().to_owned()));
        }
    }
    lines
}

/// Every `rummy` command the deploy files (and the README's *Deploying*) run or tell a person to
/// run exists, with every flag
/// it is given, as the binary's own `--help` says. `rummy doctor` is built in parallel (issue
/// 31 item 5): until this build has it, the HEALTHCHECK's `doctor --health` is reported as not
/// checked; once it has it, it is checked like the rest.
#[test]
fn the_deploy_files_run_only_commands_the_binary_has() {
    let (_, top) = rummy(&["--help"]);
    let commands = commands_in(&top);
    let mut checked = Vec::new();
    for (file, line) in command_lines() {
        for words in invocations(&line) {
            let first = words.first().cloned().unwrap_or_default();
            if first == "doctor" && !commands.contains("doctor") {
                eprintln!(
                    "deploy: this build has no `rummy doctor` yet; `{}` in {file} is not checked",
                    words.join(" ")
                );
                continue;
            }
            assert!(
                commands.contains(&first),
                "{file}: `rummy {first}` is no command: {line}"
            );
            let mut path = vec![first];
            let mut rest = words[1..].iter();
            let mut help;
            loop {
                let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
                args.push("--help");
                let (code, text) = rummy(&args);
                assert_eq!(code, Some(0), "{file}: rummy {}", args.join(" "));
                help = text;
                let sub = commands_in(&help);
                match rest.clone().next() {
                    Some(next) if sub.contains(next) => {
                        path.push(next.clone());
                        rest.next();
                    }
                    _ => break,
                }
            }
            for word in rest.filter(|w| w.starts_with("--")) {
                let flag = word.split('=').next().unwrap_or_default();
                assert!(
                    help.split(|c: char| c.is_whitespace() || c == ',' || c == '=')
                        .any(|w| w == flag),
                    "{file}: `rummy {}` has no {flag}: {line}",
                    path.join(" ")
                );
            }
            checked.push(words.join(" "));
        }
    }
    checked.sort();
    checked.dedup();
    let mut expected: Vec<String> = [
        "backup /var/lib/rummy/backup.db",
        "serve",
        "token create --user ops --admin",
    ]
    .map(str::to_owned)
    .to_vec();
    if commands.contains("doctor") {
        expected.insert(1, "doctor --health".to_owned());
    }
    assert_eq!(checked, expected);
}

/// The settings the deploy files set, each by file.
fn deploy_settings() -> Vec<(&'static str, BTreeMap<String, String>)> {
    vec![
        (
            "deploy/Dockerfile",
            settings_of_dockerfile(&read("deploy/Dockerfile")),
        ),
        ("deploy/compose.yaml", compose().0),
        ("deploy/rummy.service", settings_of_unit()),
    ]
}

/// The names the README's settings table documents.
fn documented_settings() -> BTreeSet<String> {
    let readme = read("README.md");
    let table = readme
        .split("## Settings")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap();
    table
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split(" | ").next())
        .flat_map(|cell| {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every setting a deploy file sets is one the README's settings table documents, and the
/// server's own configuration reader takes each file's settings as they are; the three agree
/// on the home, the bind and the port.
#[test]
fn the_deploy_files_set_only_settings_the_server_has() {
    let documented = documented_settings();
    let mut seen = BTreeMap::new();
    for (file, settings) in deploy_settings() {
        // HOME is the process's own (the deploy files keep it apart from RUMMY_HOME), not a
        // setting of rummy's.
        for name in settings.keys().filter(|k| *k != "HOME") {
            assert!(
                documented.contains(name),
                "{file}: {name} is no setting the README lists"
            );
        }
        let config = rummy::config::Config::from_vars(&settings, PathBuf::from("/nonexistent"))
            .unwrap_or_else(|e| panic!("{file}: the server refuses its settings: {e}"));
        seen.insert(
            file,
            (
                config.home.display().to_string(),
                config.access.bind.to_string(),
                config.port,
            ),
        );
    }
    let expected = ("/var/lib/rummy".to_owned(), "0.0.0.0".to_owned(), 3044);
    assert_eq!(
        seen,
        BTreeMap::from([
            ("deploy/Dockerfile", expected.clone()),
            ("deploy/compose.yaml", expected.clone()),
            ("deploy/rummy.service", expected),
        ])
    );
}

/// The systemd unit keeps the command sandbox working inside its own: it allows the namespaces
/// the sandbox makes (`RestrictNamespaces=yes` would refuse them), adds `@mount` and Landlock's
/// calls to `@system-service`, lets a refused call fail `EPERM`, mounts nothing over `/proc`
/// (no `ProtectKernelTunables=` or `ProtectKernelLogs=`), keeps the cgroup tree read-only for a
/// user that is not root, gives the server a `HOME` apart from `RUMMY_HOME` and the commands'
/// `HOME`s a writable state directory of their own; the rest of the hardening stays. Both
/// compose files give the container the security options the sandbox needs, the image keeps
/// `HOME` apart from `RUMMY_HOME` and makes the commands' homes for its user, and the README's
/// *Deploying* says what a container needs.
#[test]
fn the_deploy_keeps_the_command_sandbox() {
    let keys = unit();
    let env = settings_of_unit();
    let all = |key: &str| -> Vec<String> {
        keys.get(key)
            .into_iter()
            .flatten()
            .flat_map(|v| v.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
            .collect()
    };
    let namespaces: BTreeSet<String> = all("RestrictNamespaces").into_iter().collect();
    let filter: BTreeSet<String> = all("SystemCallFilter").into_iter().collect();
    let state: Vec<String> = all("StateDirectory");
    let command_homes = env["RUMMY_COMMAND_HOMES"].clone();
    assert_eq!(
        (
            namespaces,
            filter,
            all("SystemCallErrorNumber"),
            [
                "ProtectKernelTunables",
                "ProtectKernelLogs",
                "ProtectControlGroups"
            ]
            .map(&all),
            [
                "NoNewPrivileges",
                "ProtectSystem",
                "PrivateDevices",
                "CapabilityBoundingSet",
                "ProtectProc"
            ]
            .map(|k| all(k).join(" ")),
            state.clone(),
        ),
        (
            ["user", "mnt", "pid", "net", "ipc", "uts"]
                .map(str::to_owned)
                .into(),
            [
                "@system-service",
                "@mount",
                "landlock_create_ruleset",
                "landlock_add_rule",
                "landlock_restrict_self",
            ]
            .map(str::to_owned)
            .into(),
            vec!["EPERM".to_owned()],
            [vec![], vec![], vec!["yes".to_owned()]],
            ["yes", "strict", "yes", "", "invisible"].map(str::to_owned),
            vec!["rummy".to_owned(), "rummy-homes".to_owned()],
        )
    );
    let home = env["HOME"].clone();
    let rummy_home = env["RUMMY_HOME"].clone();
    let made: Vec<String> = state
        .iter()
        .map(|d| format!("/var/lib/{d}"))
        .chain(
            all("CacheDirectory")
                .iter()
                .map(|d| format!("/var/cache/{d}")),
        )
        .collect();
    assert!(
        made.contains(&home) && made.contains(&command_homes) && made.contains(&rummy_home),
        "HOME {home}, RUMMY_COMMAND_HOMES {command_homes} and RUMMY_HOME {rummy_home} are \
         directories systemd makes for the user: {made:?}"
    );
    for (what, dir) in [("HOME", &home), ("RUMMY_COMMAND_HOMES", &command_homes)] {
        assert!(
            !std::path::Path::new(dir).starts_with(&rummy_home),
            "{what} {dir} is inside RUMMY_HOME {rummy_home}, which commands never see"
        );
    }
    assert_ne!(home, command_homes);

    let needed =
        "seccomp=unconfined apparmor=unconfined systempaths=unconfined no-new-privileges:true";
    assert_eq!(
        compose().2.get("security_opt").map(String::as_str),
        Some(needed)
    );
    let postgres = read("deploy/compose.postgres.yaml");
    let options: Vec<&str> = postgres
        .lines()
        .skip_while(|l| l.trim() != "security_opt:")
        .skip(1)
        .take_while(|l| l.trim_start().starts_with("- "))
        .map(|l| l.trim().trim_start_matches("- "))
        .collect();
    assert_eq!(options.join(" "), needed);
    assert!(
        postgres.contains("RUMMY_COMMAND_HOMES: /var/lib/rummy-homes"),
        "compose.postgres.yaml gives commands their homes"
    );

    let image = settings_of_dockerfile(&read("deploy/Dockerfile"));
    assert_eq!(
        (image.get("HOME"), image.get("RUMMY_COMMAND_HOMES")),
        (
            Some(&"/home/rummy".to_owned()),
            Some(&"/var/lib/rummy-homes".to_owned())
        )
    );
    assert!(
        read("deploy/Dockerfile")
            .contains("install -d -o rummy -g rummy -m 0700 /var/lib/rummy-homes"),
        "the image makes the commands' homes for its user"
    );

    let readme = read("README.md");
    let deploying = readme
        .split("\n## Deploying\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for said in [
        "`security_opt: seccomp=unconfined, apparmor=unconfined, systempaths=unconfined`",
        "needs user namespaces, mounts and Landlock allowed by the container's seccomp and AppArmor profiles",
        "`RestrictNamespaces=` allows the user, mount, PID, network, IPC and UTS namespaces",
        "`SystemCallFilter=` adds `@mount` and the `landlock_*` calls",
        "`/var/cache/rummy` as the server's own `HOME` (apart from `RUMMY_HOME`)",
    ] {
        assert!(deploying.contains(said), "the README's Deploying does not say {said}");
    }
    assert!(
        !deploying.contains("Accepted commands run inside that sandbox too"),
        "the README still says commands run in the unit's sandbox only"
    );
}
