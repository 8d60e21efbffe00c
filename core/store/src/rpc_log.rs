//! The RPC log: every call with its params and result or error, truncated, with secrets redacted.

use super::StoreError;
use crate::db::Db;
use crate::ids::ProjectId;
use crate::schema::rpc_log;
use diesel::prelude::*;
use rummy_provider::time::Millis;
use serde_json::Value;

/// Longest params/result text kept per call.
pub const MAX_LOGGED_CHARS: usize = 4096;

/// The text that replaces a secret.
pub const REDACTED: &str = "[redacted]";

/// Whether a field name holds a secret (tokens, keys, passwords, credentials).
fn is_secret(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [
        "token",
        "key",
        "secret",
        "password",
        "authorization",
        "credential",
        "cookie",
    ]
    .iter()
    .any(|s| lower.contains(s))
}

/// A copy of `value` with every secret-named field's value replaced.
pub fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_secret(k) && !v.is_null() {
                        Value::from(REDACTED)
                    } else {
                        redact(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        other => other.clone(),
    }
}

fn truncated(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(MAX_LOGGED_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// One logged call.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedCall<'a> {
    /// The session's project, if bound.
    pub project_id: Option<ProjectId>,
    /// The user the call acted for, when a token names one.
    pub user: Option<&'a str>,
    /// Method name.
    pub method: &'a str,
    /// The request id, as JSON text.
    pub rpc_id: Option<String>,
    /// Params as sent.
    pub params: &'a Value,
    /// The result, on success.
    pub result: Option<&'a Value>,
    /// The error message, on failure.
    pub error: Option<&'a str>,
}

/// Records a call, redacted and truncated.
pub fn record(conn: &mut Db, call: &LoggedCall<'_>, now: Millis) -> Result<(), StoreError> {
    diesel::insert_into(rpc_log::table)
        .values((
            rpc_log::project_id.eq(call.project_id),
            rpc_log::user.eq(call.user),
            rpc_log::method.eq(call.method),
            rpc_log::rpc_id.eq(&call.rpc_id),
            rpc_log::params.eq(truncated(&redact(call.params))),
            rpc_log::result.eq(call.result.map(|r| truncated(&redact(r)))),
            rpc_log::error.eq(call.error),
            rpc_log::created_at.eq(now.0),
        ))
        .execute(conn)?;
    Ok(())
}

/// Deletes the calls logged before `cutoff`; answers how many.
pub fn purge_before(conn: &mut Db, cutoff: Millis) -> Result<usize, StoreError> {
    Ok(diesel::delete(rpc_log::table.filter(rpc_log::created_at.lt(cutoff.0))).execute(conn)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Secret-named fields are redacted at any depth; other values stay.
    #[test]
    fn secrets_are_redacted() {
        let input = json!({"name":"p","token":"abc","nested":{"apiKey":"k","list":[{"password":"x","ok":1}]},"Authorization":"Bearer z"});
        assert_eq!(
            redact(&input),
            json!({"name":"p","token":"[redacted]","nested":{"apiKey":"[redacted]","list":[{"password":"[redacted]","ok":1}]},"Authorization":"[redacted]"})
        );
    }

    /// Long params are cut at the limit.
    #[test]
    fn long_values_are_truncated() {
        let text = truncated(&json!("x".repeat(10_000)));
        assert_eq!(text.chars().count(), MAX_LOGGED_CHARS + 1);
        assert!(text.ends_with('…'));
    }
}
