//! `rummy token`: users and tokens, made, listed and revoked on the server's database itself
//! (its SQLite file, or the PostgreSQL database of `RUMMY_DATABASE_URL`), so a new home's first admin token exists before its server ever starts and
//! revoking works with or without a server running (a running one closes the token's
//! connections at its next sweep, within seconds).

use super::args::{TokenCommand, TokenCreateArgs};
use super::exit::Exit;
use rummy_provider::time::Millis;
use rummy_store::location::Location;
use rummy_store::tokens::{self, NewToken, TokenInfo};
use rummy_store::StoreError;
use std::collections::BTreeMap;
use std::io::Write;

/// Runs a `token` subcommand.
pub fn run(command: TokenCommand) -> Exit {
    let process: BTreeMap<String, String> = std::env::vars().collect();
    let config = match rummy::env::load(process) {
        Ok(config) => config,
        Err(e) => return fail(Exit::Usage, &e.to_string()),
    };
    let location = config.database();
    // An SQLite file may be the first thing in a new home.
    if let Location::Sqlite(path) = &location {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if let Err(e) = std::fs::create_dir_all(dir) {
                return fail(
                    Exit::Failure,
                    &format!("cannot create {}: {e}", dir.display()),
                );
            }
        }
    }
    let mut conn = match rummy_store::database::open(&location) {
        Ok(conn) => conn,
        Err(e) => {
            let message = format!("cannot open {}: {e}", location.display());
            return fail(Exit::Failure, &message);
        }
    };
    let now = now();
    let done = match command {
        TokenCommand::Create(args) => {
            // Not the store's failure, nor the user's: the system has no randomness to give.
            let mut secret = [0u8; 32];
            if let Err(e) = getrandom::fill(&mut secret) {
                return fail(Exit::Failure, &format!("no randomness for a token: {e}"));
            }
            create(&mut conn, &args, &secret, now)
        }
        TokenCommand::List(args) => tokens::list(&mut conn).map(|list| list_out(&list, args.json)),
        TokenCommand::Revoke(args) => tokens::revoke(&mut conn, &args.token, now).map(|t| {
            say(&format!(
                "revoked token {} ({}) of {}",
                t.id, t.prefix, t.user
            ));
        }),
    };
    match done {
        Ok(()) => Exit::Ok,
        Err(StoreError::Invalid(m)) => fail(Exit::Usage, &m),
        Err(e @ (StoreError::NotFound(_) | StoreError::Conflict(_))) => {
            fail(Exit::Refused, &e.to_string())
        }
        Err(e) => fail(Exit::Failure, &e.to_string()),
    }
}

/// Makes the token and prints its text alone on stdout (`TOKEN=$(rummy token create …)`),
/// what it is on stderr.
fn create(
    conn: &mut rummy_store::db::Db,
    args: &TokenCreateArgs,
    secret: &[u8; 32],
    now: Millis,
) -> Result<(), StoreError> {
    let expires_at = match args.expires.as_deref().map(age_ms).transpose() {
        Ok(age) => age.map(|ms| Millis(now.0.saturating_add(ms))),
        Err(why) => return Err(StoreError::Invalid(why)),
    };
    let new = NewToken {
        user: args.user.clone(),
        admin: args.admin,
        projects: args
            .projects
            .iter()
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty())
            .collect(),
        expires_at,
    };
    let (text, made) = tokens::create(conn, &new, secret, now)?;
    let grant = if made.admin {
        "admin: every project".to_owned()
    } else if made.projects.is_empty() {
        "no project yet".to_owned()
    } else {
        format!("projects {}", made.projects.join(", "))
    };
    let _ = writeln!(std::io::stdout(), "{text}");
    say(&format!(
        "token {} for {} ({grant}){}; shown once: keep it now",
        made.id,
        made.user,
        made.expires_at
            .map(|at| format!(", expires {}", Millis(at).to_rfc3339()))
            .unwrap_or_default()
    ));
    Ok(())
}

fn list_out(list: &[TokenInfo], json: bool) {
    let mut out = std::io::stdout();
    if json {
        let _ = writeln!(out, "{}", serde_json::to_string(list).unwrap_or_default());
        return;
    }
    let _ = writeln!(
        out,
        "{:>4}  {:<16} {:<15} {:<5} {:<24} {:<20} STATE",
        "ID", "USER", "PREFIX", "ADMIN", "PROJECTS", "CREATED"
    );
    let now = now().0;
    for t in list {
        let state = match (t.revoked_at, t.expires_at) {
            (Some(at), _) => format!("revoked {}", Millis(at).to_rfc3339()),
            (None, Some(at)) if at <= now => format!("expired {}", Millis(at).to_rfc3339()),
            (None, Some(at)) => format!("expires {}", Millis(at).to_rfc3339()),
            (None, None) => "valid".to_owned(),
        };
        let projects = if t.admin {
            "*".to_owned()
        } else {
            t.projects.join(",")
        };
        let _ = writeln!(
            out,
            "{:>4}  {:<16} {:<15} {:<5} {:<24} {:<20} {state}",
            t.id,
            t.user,
            t.prefix,
            if t.admin { "yes" } else { "no" },
            projects,
            Millis(t.created_at).to_rfc3339()
        );
    }
}

/// Milliseconds in an age such as `90d`, `12h` or `30m`.
fn age_ms(age: &str) -> Result<i64, String> {
    let age = age.trim();
    let (number, unit) = age.split_at(age.len().saturating_sub(1));
    let unit_ms = match unit {
        "d" => 86_400_000,
        "h" => 3_600_000,
        "m" => 60_000,
        _ => {
            return Err(format!(
            "--expires {age}: expected a number of days, hours or minutes, such as 90d, 12h or 30m"
        ))
        }
    };
    match number.parse::<i64>() {
        Ok(n) if n > 0 => Ok(n.saturating_mul(unit_ms)),
        _ => Err(format!(
            "--expires {age}: expected a number above zero before {unit}"
        )),
    }
}

fn now() -> Millis {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    Millis(i64::try_from(ms).unwrap_or(i64::MAX))
}

fn say(message: &str) {
    let _ = writeln!(std::io::stderr(), "rummy: {message}");
}

fn fail(exit: Exit, message: &str) -> Exit {
    say(message);
    exit
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ages read as days, hours or minutes; anything else names the flag.
    #[test]
    fn ages() {
        assert_eq!(age_ms("90d"), Ok(90 * 86_400_000));
        assert_eq!(age_ms("12h"), Ok(12 * 3_600_000));
        assert_eq!(age_ms("30m"), Ok(30 * 60_000));
        for bad in ["", "d", "0d", "-1h", "3w", "1.5d"] {
            assert!(age_ms(bad).is_err(), "{bad}");
        }
    }
}
