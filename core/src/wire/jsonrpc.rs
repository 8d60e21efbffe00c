//! JSON-RPC 2.0 framing: requests, responses, notifications and the error codes `docs/protocol.md` lists.

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// The protocol version this server speaks.
pub const PROTOCOL_VERSION: &str = "2.1.0";

/// The most calls one batch may hold: a bigger batch is refused whole.
pub const MAX_BATCH: usize = 100;

/// A request id exactly as the client wrote it (a string, a number, or `null`): answers echo
/// these bytes, so an id no `f64` holds (`123456789012345678901234567890`, `1e400`) comes
/// back unchanged.
#[derive(Debug, Clone)]
pub struct RequestId(Box<RawValue>);

impl RequestId {
    /// The id's JSON text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for RequestId {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

/// One call read off the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The request id; `None` for a client notification (no response is sent).
    pub id: Option<RequestId>,
    /// The method name.
    pub method: String,
    /// The params (an object, or `Null` when absent).
    pub params: Value,
}

/// One WebSocket message as JSON-RPC reads it: a single call or a batch of them, each still
/// JSON text (its id is kept as written; see [`RequestId`]).
#[derive(Debug)]
pub enum Message<'t> {
    /// One call.
    Single(&'t RawValue),
    /// A batch of at most [`MAX_BATCH`] calls.
    Batch(Vec<&'t RawValue>),
}

/// Reads a message's text: -32700 when it is not JSON, -32600 for an empty batch or one over
/// [`MAX_BATCH`] calls (refused whole, before any call runs).
pub fn read_message(text: &str) -> Result<Message<'_>, RpcError> {
    let raw: &RawValue = serde_json::from_str(text)
        .map_err(|e| RpcError::new(ErrorKind::Parse, format!("parse error: {e}")))?;
    if !raw.get().starts_with('[') {
        return Ok(Message::Single(raw));
    }
    let items: Vec<&RawValue> = serde_json::from_str(raw.get())
        .map_err(|e| RpcError::new(ErrorKind::Parse, format!("parse error: {e}")))?;
    match items.len() {
        0 => Err(RpcError::new(
            ErrorKind::InvalidRequest,
            "invalid request: empty batch",
        )),
        n if n > MAX_BATCH => Err(RpcError::new(
            ErrorKind::InvalidRequest,
            format!("invalid request: a batch of {n} calls is over the limit of {MAX_BATCH}; send fewer per batch"),
        )
        .with("limit", Value::from(MAX_BATCH))),
        _ => Ok(Message::Batch(items)),
    }
}

/// The error families clients can act on; each has its code and `data.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// -32700: the text was not JSON.
    Parse,
    /// -32600: JSON, but not a JSON-RPC request.
    InvalidRequest,
    /// -32601: no such method.
    MethodNotFound,
    /// -32602: params missing or of the wrong shape (the message names the param).
    InvalidParams,
    /// -32603: the server failed; details are in the log, not on the wire.
    Internal,
    /// -32000: `rummy/hello` first.
    NotInitialized,
    /// -32001: missing or wrong token.
    Unauthorized,
    /// -32002: the client speaks another major protocol version.
    ProtocolMismatch,
    /// -32003: the writer tier may not write that scheme.
    Permission,
    /// -32004: no such run, entry, model or skill, or a model with no provider.
    NotFound,
    /// -32005: alias taken, project root differs, proposal already resolved.
    Conflict,
    /// -32006: retry later.
    Overloaded,
    /// -32007: frame or body over the limit.
    TooLarge,
}

impl ErrorKind {
    /// Every kind, for the catalogue.
    pub const ALL: [ErrorKind; 13] = [
        ErrorKind::Parse,
        ErrorKind::InvalidRequest,
        ErrorKind::MethodNotFound,
        ErrorKind::InvalidParams,
        ErrorKind::Internal,
        ErrorKind::NotInitialized,
        ErrorKind::Unauthorized,
        ErrorKind::ProtocolMismatch,
        ErrorKind::Permission,
        ErrorKind::NotFound,
        ErrorKind::Conflict,
        ErrorKind::Overloaded,
        ErrorKind::TooLarge,
    ];

    /// The kind a JSON-RPC error code names, if any.
    pub fn from_code(code: i64) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.code() == code)
    }

    /// The JSON-RPC error code.
    pub fn code(self) -> i64 {
        match self {
            ErrorKind::Parse => -32700,
            ErrorKind::InvalidRequest => -32600,
            ErrorKind::MethodNotFound => -32601,
            ErrorKind::InvalidParams => -32602,
            ErrorKind::Internal => -32603,
            ErrorKind::NotInitialized => -32000,
            ErrorKind::Unauthorized => -32001,
            ErrorKind::ProtocolMismatch => -32002,
            ErrorKind::Permission => -32003,
            ErrorKind::NotFound => -32004,
            ErrorKind::Conflict => -32005,
            ErrorKind::Overloaded => -32006,
            ErrorKind::TooLarge => -32007,
        }
    }

    /// The `data.kind` string programs match on.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Parse => "parse_error",
            ErrorKind::InvalidRequest => "invalid_request",
            ErrorKind::MethodNotFound => "method_not_found",
            ErrorKind::InvalidParams => "invalid_params",
            ErrorKind::Internal => "internal",
            ErrorKind::NotInitialized => "not_initialized",
            ErrorKind::Unauthorized => "unauthorized",
            ErrorKind::ProtocolMismatch => "protocol_mismatch",
            ErrorKind::Permission => "permission",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::TooLarge => "too_large",
        }
    }
}

/// An error answer.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// Which family.
    pub kind: ErrorKind,
    /// Human-readable message.
    pub message: String,
    /// Extra data merged next to `kind`.
    pub extra: Map<String, Value>,
}

impl RpcError {
    /// An error of `kind` with a message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> RpcError {
        RpcError {
            kind,
            message: message.into(),
            extra: Map::new(),
        }
    }

    /// Adds a field to `data`.
    pub fn with(mut self, key: &str, value: Value) -> RpcError {
        self.extra.insert(key.to_owned(), value);
        self
    }

    /// -32602 naming the param.
    pub fn invalid_param(param: &str, problem: impl std::fmt::Display) -> RpcError {
        RpcError::new(
            ErrorKind::InvalidParams,
            format!("invalid params: {param}: {problem}"),
        )
        .with("param", Value::from(param))
    }

    /// The `error` object of a response.
    pub fn to_value(&self) -> Value {
        let mut data = self.extra.clone();
        data.insert("kind".to_owned(), Value::from(self.kind.name()));
        json!({ "code": self.kind.code(), "message": self.message, "data": data })
    }
}

/// Reads one call, or says why it is not one (-32600, with the id when it could be read).
pub fn parse_request(raw: &RawValue) -> Result<Request, (Option<RequestId>, RpcError)> {
    let not_object = || {
        (
            None,
            RpcError::new(
                ErrorKind::InvalidRequest,
                "invalid request: expected a JSON object",
            ),
        )
    };
    if !raw.get().starts_with('{') {
        return Err(not_object());
    }
    let mut map: HashMap<String, &RawValue> =
        serde_json::from_str(raw.get()).map_err(|_| not_object())?;
    let id = match map.remove("id") {
        None => None,
        // The text is valid JSON: its first byte tells a string, a number or `null`.
        Some(id)
            if id
                .get()
                .starts_with(|c: char| c == '"' || c == '-' || c == 'n' || c.is_ascii_digit()) =>
        {
            Some(RequestId(id.to_owned()))
        }
        Some(_) => {
            return Err((
                None,
                RpcError::new(
                    ErrorKind::InvalidRequest,
                    "invalid request: id must be a string, number or null",
                ),
            ))
        }
    };
    let invalid = |msg: &str| {
        (
            id.clone(),
            RpcError::new(ErrorKind::InvalidRequest, msg.to_owned()),
        )
    };
    let field = |raw: Option<&RawValue>| -> Option<Value> {
        raw.and_then(|r| serde_json::from_str(r.get()).ok())
    };
    if field(map.get("jsonrpc").copied()) != Some(Value::from("2.0")) {
        return Err(invalid("invalid request: jsonrpc must be \"2.0\""));
    }
    // Valid JSON that serde_json still refuses to read (nested past its limit, a lone
    // surrogate): say why, rather than misreport its type.
    let unreadable = |name: &str, raw: &RawValue| {
        serde_json::from_str::<Value>(raw.get()).err().map(|e| {
            invalid(&format!(
                "invalid request: {name}: {}",
                strip_position(&e.to_string())
            ))
        })
    };
    let method_raw = map.remove("method");
    if let Some(err) = method_raw.and_then(|raw| unreadable("method", raw)) {
        return Err(err);
    }
    let Some(Value::String(method)) = field(method_raw) else {
        return Err(invalid("invalid request: method must be a string"));
    };
    let params = match map.remove("params") {
        None => Value::Null,
        Some(raw) if raw.get().starts_with('{') || raw.get() == "null" => {
            if let Some(err) = unreadable("params", raw) {
                return Err(err);
            }
            field(Some(raw)).ok_or_else(|| invalid("invalid request: params must be an object"))?
        }
        Some(_) => return Err(invalid("invalid request: params must be an object")),
    };
    Ok(Request { id, method, params })
}

/// Deserialises params into a typed struct; a mismatch is -32602 naming the offending field
/// (a missing one, one of the wrong type, or one the method does not know).
pub fn params<T: DeserializeOwned>(params: &Value) -> Result<T, RpcError> {
    params_at(params, "")
}

/// [`params`] for an object nested in the params: the field named is `prefix` + its own path
/// (`attributes.mode`).
pub fn params_at<T: DeserializeOwned>(params: &Value, prefix: &str) -> Result<T, RpcError> {
    let value = if params.is_null() {
        json!({})
    } else {
        params.clone()
    };
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let param = if path == "." {
            named_field(&inner).unwrap_or_else(|| "params".to_owned())
        } else {
            path
        };
        RpcError::invalid_param(&format!("{prefix}{param}"), strip_position(&inner))
    })
}

/// The field a serde message names as missing or unknown.
fn named_field(message: &str) -> Option<String> {
    let rest = message
        .strip_prefix("missing field `")
        .or_else(|| message.strip_prefix("unknown field `"))?;
    Some(rest.split('`').next()?.to_owned())
}

fn strip_position(message: &str) -> &str {
    message.split(" at line ").next().unwrap_or(message)
}

/// A success response's text.
pub fn response(id: &RequestId, result: &Value) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#,
        id.as_str()
    )
}

/// An error response's text (`id` is null when the request's id could not be read).
pub fn error_response(id: Option<&RequestId>, error: &RpcError) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"error":{}}}"#,
        id.map_or("null", RequestId::as_str),
        error.to_value()
    )
}

/// A server → client notification.
pub fn notification(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

/// A server → client notification as text, around `params_json` (JSON text) as it is: the
/// same text [`notification`] serialises to.
pub fn notification_text(method: &str, params_json: &str) -> String {
    let method = Value::from(method);
    format!(r#"{{"jsonrpc":"2.0","method":{method},"params":{params_json}}}"#)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    #[expect(
        dead_code,
        reason = "the fields are only deserialised, to test the errors naming them"
    )]
    struct Hello {
        name: String,
        project_root: String,
    }

    fn parse(text: &str) -> Result<Request, (Option<String>, RpcError)> {
        let raw: &RawValue = serde_json::from_str(text).unwrap();
        parse_request(raw).map_err(|(id, e)| (id.map(|id| id.as_str().to_owned()), e))
    }

    /// A well-formed request is read with its id, method and params.
    #[test]
    fn reads_requests() {
        let req = parse(r#"{"jsonrpc":"2.0","id":7,"method":"ping","params":{"a":1}}"#).unwrap();
        assert_eq!(req.id.as_ref().map(RequestId::as_str), Some("7"));
        assert_eq!((req.method.as_str(), req.params), ("ping", json!({"a":1})));
        let note = parse(r#"{"jsonrpc":"2.0","method":"ping","params":null}"#).unwrap();
        assert_eq!((note.id, note.params), (None, Value::Null));
    }

    /// Requests that are not JSON-RPC are -32600, keeping the id when it can be read.
    #[test]
    fn refuses_invalid_requests() {
        let cases = [
            ("[1]", None),
            ("\"ping\"", None),
            (r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, Some("1")),
            (r#"{"jsonrpc":"2.0","id":2,"method":5}"#, Some("2")),
            (
                r#"{"jsonrpc":"2.0","id":"x","method":"ping","params":[1]}"#,
                Some("\"x\""),
            ),
            (r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#, None),
            (r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#, None),
        ];
        for (input, id) in cases {
            let (got_id, err) = parse(input).unwrap_err();
            assert_eq!(
                (got_id.as_deref(), err.kind),
                (id, ErrorKind::InvalidRequest),
                "{input}"
            );
        }
    }

    /// An id is echoed byte for byte, however large: no float rounding, no re-spelling.
    #[test]
    fn ids_are_echoed_exactly() {
        for id in [
            "123456789012345678901234567890",
            "1e400",
            "-0.5",
            "\"é\\u00e9\"",
            "null",
        ] {
            let req = parse(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#)).unwrap();
            let id_of = req.id.expect("an id");
            assert_eq!(
                response(&id_of, &json!({})),
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)
            );
            let err = RpcError::new(ErrorKind::Internal, "x");
            let text = error_response(Some(&id_of), &err);
            assert!(
                text.starts_with(&format!(r#"{{"jsonrpc":"2.0","id":{id},"error":"#)),
                "{text}"
            );
        }
    }

    /// A message is one call or a batch of 1 to 100; not JSON is -32700, an empty or bigger batch -32600.
    #[test]
    fn reads_messages_and_bounds_batches() {
        assert!(matches!(
            read_message(r#" {"a":1} "#),
            Ok(Message::Single(_))
        ));
        let batch = format!("[{}]", vec!["{}"; MAX_BATCH].join(","));
        assert!(
            matches!(read_message(&batch), Ok(Message::Batch(items)) if items.len() == MAX_BATCH)
        );
        let kind = |text: &str| read_message(text).err().map(|e| e.kind);
        assert_eq!(kind("{"), Some(ErrorKind::Parse));
        assert_eq!(kind("[]"), Some(ErrorKind::InvalidRequest));
        let over = format!("[{}]", vec!["{}"; MAX_BATCH + 1].join(","));
        let err = read_message(&over).err().unwrap();
        assert_eq!(
            err.message,
            "invalid request: a batch of 101 calls is over the limit of 100; send fewer per batch"
        );
    }

    /// Bad params name the param that is missing or of the wrong type.
    #[test]
    fn bad_params_name_the_param() {
        let missing = params::<Hello>(&json!({"name":"x"})).unwrap_err();
        assert_eq!(missing.kind, ErrorKind::InvalidParams);
        assert_eq!(
            missing.message,
            "invalid params: projectRoot: missing field `projectRoot`"
        );
        let wrong = params::<Hello>(&json!({"name":3,"projectRoot":"/"})).unwrap_err();
        assert_eq!(
            wrong.message,
            "invalid params: name: invalid type: integer `3`, expected a string"
        );
        assert_eq!(
            wrong.to_value()["data"],
            json!({"kind":"invalid_params","param":"name"})
        );
        let unknown =
            params::<Hello>(&json!({"name":"x","projectRoot":"/","projectroot":"/"})).unwrap_err();
        assert_eq!(
            unknown.message,
            "invalid params: projectroot: unknown field `projectroot`, expected `name` or `projectRoot`"
        );
        assert_eq!(
            unknown.to_value()["data"],
            json!({"kind":"invalid_params","param":"projectroot"})
        );
        let nested = params_at::<Hello>(&json!({"name":"x"}), "attributes.").unwrap_err();
        assert_eq!(
            nested.message,
            "invalid params: attributes.projectRoot: missing field `projectRoot`"
        );
    }

    /// A notification built around stored params text is byte for byte the serialised one.
    #[test]
    fn a_notification_around_stored_params_is_the_serialised_notification() {
        let params = json!({"run": "a\"b", "history": [{"body": "line\n<tag>"}], "seq": 3});
        let text = notification_text("run/state", &params.to_string());
        assert_eq!(text, notification("run/state", params).to_string());
    }
}
