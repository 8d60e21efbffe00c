//! JSON-RPC 2.0 framing: requests, responses, notifications and the error codes of PROTOCOL.md.

use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

/// The protocol version this server speaks.
pub const PROTOCOL_VERSION: &str = "2.0.0";

/// One call read off the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The request id; `None` for a client notification (no response is sent).
    pub id: Option<Value>,
    /// The method name.
    pub method: String,
    /// The params (an object, or `Null` when absent).
    pub params: Value,
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

/// Reads one JSON value as a request, or says why it is not one (-32600).
pub fn parse_request(value: Value) -> Result<Request, (Option<Value>, RpcError)> {
    let Value::Object(mut map) = value else {
        return Err((
            None,
            RpcError::new(
                ErrorKind::InvalidRequest,
                "invalid request: expected a JSON object",
            ),
        ));
    };
    let id = map.remove("id");
    let id_ok = matches!(
        id,
        None | Some(Value::String(_) | Value::Number(_) | Value::Null)
    );
    if !id_ok {
        return Err((
            None,
            RpcError::new(
                ErrorKind::InvalidRequest,
                "invalid request: id must be a string, number or null",
            ),
        ));
    }
    let invalid = |msg: &str| {
        (
            id.clone(),
            RpcError::new(ErrorKind::InvalidRequest, msg.to_owned()),
        )
    };
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("invalid request: jsonrpc must be \"2.0\""));
    }
    let Some(Value::String(method)) = map.remove("method") else {
        return Err(invalid("invalid request: method must be a string"));
    };
    let params = map.remove("params").unwrap_or(Value::Null);
    if !matches!(params, Value::Object(_) | Value::Null) {
        return Err(invalid("invalid request: params must be an object"));
    }
    Ok(Request { id, method, params })
}

/// Deserialises params into a typed struct; a mismatch is -32602 naming the offending field.
pub fn params<T: DeserializeOwned>(params: &Value) -> Result<T, RpcError> {
    let value = if params.is_null() {
        json!({})
    } else {
        params.clone()
    };
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let param = if path == "." {
            missing_field(&inner).unwrap_or_else(|| "params".to_owned())
        } else {
            path
        };
        RpcError::invalid_param(&param, strip_position(&inner))
    })
}

fn missing_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("missing field `")?;
    Some(rest.split('`').next()?.to_owned())
}

fn strip_position(message: &str) -> &str {
    message.split(" at line ").next().unwrap_or(message)
}

/// A success response.
pub fn response(id: Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// An error response (`id` is null when the request's id could not be read).
pub fn error_response(id: Option<Value>, error: &RpcError) -> Value {
    json!({ "jsonrpc": "2.0", "id": id.unwrap_or(Value::Null), "error": error.to_value() })
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
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Hello {
        name: String,
        project_root: String,
    }

    /// A well-formed request is read with its id, method and params.
    #[test]
    fn reads_requests() {
        let req = parse_request(json!({"jsonrpc":"2.0","id":7,"method":"ping"})).unwrap();
        assert_eq!(
            req,
            Request {
                id: Some(json!(7)),
                method: "ping".into(),
                params: Value::Null
            }
        );
    }

    /// Requests that are not JSON-RPC are -32600, keeping the id when it can be read.
    #[test]
    fn refuses_invalid_requests() {
        let cases = [
            (json!([1]), None),
            (
                json!({"jsonrpc":"1.0","id":1,"method":"ping"}),
                Some(json!(1)),
            ),
            (json!({"jsonrpc":"2.0","id":2,"method":5}), Some(json!(2))),
            (
                json!({"jsonrpc":"2.0","id":3,"method":"ping","params":[1]}),
                Some(json!(3)),
            ),
            (json!({"jsonrpc":"2.0","id":{"a":1},"method":"ping"}), None),
        ];
        for (input, id) in cases {
            let (got_id, err) = parse_request(input.clone()).unwrap_err();
            assert_eq!(
                (got_id, err.kind),
                (id, ErrorKind::InvalidRequest),
                "{input}"
            );
        }
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
    }

    /// A notification built around stored params text is byte for byte the serialised one.
    #[test]
    fn a_notification_around_stored_params_is_the_serialised_notification() {
        let params = json!({"run": "a\"b", "history": [{"body": "line\n<tag>"}], "seq": 3});
        let text = notification_text("run/state", &params.to_string());
        assert_eq!(text, notification("run/state", params).to_string());
    }
}
