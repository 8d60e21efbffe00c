//! The environment an accepted command runs in: a clean one built from a short list of the
//! server's variables, so that no provider key, access token or other secret of the server
//! reaches a command the model wrote.
//!
//! A command gets `PATH` (a default when the server has none), `HOME`, `USER`, `LOGNAME`,
//! `SHELL`, `LANG`, `LANGUAGE`, every `LC_*`, `TZ` and `TMPDIR` as the server has them, the
//! names an operator lists in `RUMMY_COMMAND_ENV`, and `GIT_TERMINAL_PROMPT=0` (nobody can
//! answer a prompt: stdin is closed). `TERM` is left out: the output goes to a pipe, not a
//! terminal. Whatever else the server's environment holds — `OPENAI_API_KEY`, `RUMMY_*`,
//! cloud credentials — is not passed, whatever its name.

/// The server's variables every command gets when the server has them.
pub const PASSED: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR",
];

/// `PATH` for a command when the server has none.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Variables every command gets, whatever the server's environment says.
pub const FIXED: &[(&str, &str)] = &[("GIT_TERMINAL_PROMPT", "0")];

/// Names of variables that hold database credentials though no secret word is part of them.
const SECRET_NAMES: &[&str] = &["DATABASE_URL", "PGPASSWORD", "PGPASSFILE"];

/// Words whose presence anywhere in a variable's name (upper-cased) makes it look like a
/// secret. Matched inside words on purpose (`APIKEY`, `GHTOKEN`, `X_AUTHKEY`): a false positive
/// (`KEYBOARD`, `MONKEY`, `GIT_AUTHOR_NAME`, `OAUTH_CALLBACK_URL`) costs an operator a rename,
/// a miss hands a secret to every command the model writes.
const SECRET_WORDS: &[&str] = &[
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "AUTH",
];

/// Whether a variable's name looks like one of the server's secrets: every `RUMMY_*` (among them
/// `RUMMY_DATABASE_URL`), `DATABASE_URL`, `PGPASSWORD`, `PGPASSFILE`, and any name whose
/// upper-case form contains `KEY`, `TOKEN`, `SECRET`, `PASSWORD`, `PASSWD`, `CREDENTIAL` or
/// `AUTH`.
pub fn is_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.starts_with("RUMMY_")
        || SECRET_NAMES.contains(&upper.as_str())
        || SECRET_WORDS.iter().any(|word| upper.contains(word))
}

/// The environment of a command, from the server's variables (`server`) and the extra names
/// the operator allowed (`pass`), sorted by name. A secret-looking name is never passed, even
/// when listed.
pub fn command_env<I>(server: I, pass: &[String]) -> Vec<(String, String)>
where
    I: IntoIterator<Item = (String, String)>,
{
    let mut env: Vec<(String, String)> = server
        .into_iter()
        .filter(|(name, _)| {
            PASSED.contains(&name.as_str())
                || name.starts_with("LC_")
                || pass.iter().any(|p| p == name)
        })
        .filter(|(name, _)| !is_secret(name))
        .collect();
    if !env.iter().any(|(name, _)| name == "PATH") {
        env.push(("PATH".to_owned(), DEFAULT_PATH.to_owned()));
    }
    env.retain(|(name, _)| !FIXED.iter().any(|(fixed, _)| fixed == name));
    env.extend(
        FIXED
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
    );
    env.sort();
    env
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// Only the listed variables pass; keys, tokens and every `RUMMY_*` stay behind.
    #[test]
    fn keeps_only_the_plain_variables() {
        let server = pairs(&[
            ("PATH", "/opt/bin:/usr/bin"),
            ("HOME", "/home/ann"),
            ("USER", "ann"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C.UTF-8"),
            ("TERM", "xterm-256color"),
            ("OPENAI_API_KEY", "sk-live"),
            ("XAI_API_KEY", "xai-live"),
            ("RUMMY_TOKEN", "tok"),
            ("RUMMY_HOME", "/srv/rummy"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
            ("GITHUB_TOKEN", "ghp"),
            ("JAVA_HOME", "/usr/lib/jvm"),
        ]);
        assert_eq!(
            command_env(server, &[]),
            pairs(&[
                ("GIT_TERMINAL_PROMPT", "0"),
                ("HOME", "/home/ann"),
                ("LANG", "C.UTF-8"),
                ("LC_ALL", "C.UTF-8"),
                ("PATH", "/opt/bin:/usr/bin"),
                ("USER", "ann"),
            ])
        );
    }

    /// Names the operator lists pass too, but never one that looks like a secret; the fixed
    /// variables win over the server's.
    #[test]
    fn passes_listed_names_but_no_secret() {
        let server = pairs(&[
            ("JAVA_HOME", "/usr/lib/jvm"),
            ("GITHUB_TOKEN", "ghp"),
            ("GIT_TERMINAL_PROMPT", "1"),
        ]);
        let pass = vec!["JAVA_HOME".to_owned(), "GITHUB_TOKEN".to_owned()];
        assert_eq!(
            command_env(server, &pass),
            pairs(&[
                ("GIT_TERMINAL_PROMPT", "0"),
                ("JAVA_HOME", "/usr/lib/jvm"),
                ("PATH", DEFAULT_PATH),
            ])
        );
    }

    /// What counts as a secret's name: the listed names, `RUMMY_*`, and a secret word anywhere
    /// in the name, false positives such as `KEYBOARD` included.
    #[test]
    fn recognises_secret_names() {
        let names = [
            ("RUMMY_TOKEN", true),
            ("rummy_home", true),
            ("RUMMY_DATABASE_URL", true),
            ("DATABASE_URL", true),
            ("database_url", true),
            ("PGPASSWORD", true),
            ("PGPASSFILE", true),
            ("OPENAI_API_KEY", true),
            ("OPENROUTER_APIKEY", true),
            ("DB_PASSWORD", true),
            ("MYSQL_PASSWD", true),
            ("GOOGLE_APPLICATION_CREDENTIALS", true),
            ("GHTOKEN", true),
            ("SECRET", true),
            ("AUTH_HEADER", true),
            ("KEYBOARD", true),
            ("MONKEY_BUSINESS", true),
            ("GIT_AUTHOR_NAME", true),
            ("PATH", false),
            ("JAVA_HOME", false),
            ("GOPATH", false),
            ("PGHOST", false),
            ("DATABASE", false),
        ];
        let judged: Vec<(&str, bool)> = names.iter().map(|(n, _)| (*n, is_secret(n))).collect();
        assert_eq!(judged, names);
    }
}
