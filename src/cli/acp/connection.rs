//! ACP's transport: JSON-RPC 2.0, one message per line, on stdin and stdout. A task reads
//! stdin and sorts each message into a request or notification for the router, or an answer
//! to one of `rummy acp`'s own requests; a task writes stdout, one whole line at a time.

use super::wire::{code, Error};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::rc::Rc;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

/// The longest line read: a prompt with embedded files fits; a larger one is refused.
const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// A message from the editor: a request (with its id) or a notification.
#[derive(Debug)]
pub struct Incoming {
    /// The request's id; `None` for a notification.
    pub id: Option<Value>,
    /// The method.
    pub method: String,
    /// Its params.
    pub params: Value,
}

/// `rummy acp`'s requests waiting for the editor's answer, by id.
type Waiting = HashMap<u64, oneshot::Sender<Result<Value, Error>>>;

/// What the writer task writes: a line, or word back once every line before it is written.
enum Out {
    Line(String),
    Flushed(oneshot::Sender<()>),
}

/// The editor's end of the line: sends and answers, and waits for its answers.
#[derive(Clone)]
pub struct Connection {
    out: mpsc::UnboundedSender<Out>,
    pending: Rc<RefCell<Waiting>>,
    next_id: Rc<Cell<u64>>,
}

impl Connection {
    /// Starts reading stdin and writing stdout: what the editor asks arrives on the receiver,
    /// which closes when stdin does.
    pub fn stdio() -> (Connection, mpsc::UnboundedReceiver<Incoming>) {
        let (out, mut lines) = mpsc::unbounded_channel::<Out>();
        actix_rt::spawn(async move {
            let mut stdout = tokio::io::stdout();
            while let Some(out) = lines.recv().await {
                match out {
                    Out::Line(line) => {
                        let written = stdout.write_all(line.as_bytes()).await;
                        if written.is_err() || stdout.flush().await.is_err() {
                            break;
                        }
                    }
                    Out::Flushed(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        let connection = Connection {
            out,
            pending: Rc::default(),
            next_id: Rc::new(Cell::new(1)),
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let reader = connection.clone();
        actix_rt::spawn(async move {
            let mut stdin = BufReader::new(tokio::io::stdin());
            let mut line = Vec::new();
            loop {
                line.clear();
                match (&mut stdin)
                    .take(MAX_LINE_BYTES as u64 + 1)
                    .read_until(b'\n', &mut line)
                    .await
                {
                    Ok(0) | Err(_) => break,
                    Ok(_) if line.len() > MAX_LINE_BYTES => {
                        // Nothing after it can be told apart from its rest: the connection ends.
                        reader.error_reply(
                            Value::Null,
                            Error::new(
                                code::INVALID_REQUEST,
                                format!(
                                    "a message over {MAX_LINE_BYTES} bytes is not read: closing"
                                ),
                            ),
                        );
                        break;
                    }
                    Ok(_) => {
                        if let Some(incoming) = reader.read(&line) {
                            if tx.send(incoming).is_err() {
                                break;
                            }
                        }
                    }
                }
            }
            // The editor is gone: whatever waits for its answer gets none.
            reader.pending.borrow_mut().clear();
        });
        (connection, rx)
    }

    /// One line from the editor: a message for the router, or an answer taken here.
    fn read(&self, line: &[u8]) -> Option<Incoming> {
        let text = String::from_utf8_lossy(line);
        if text.trim().is_empty() {
            return None;
        }
        let message: Value = match serde_json::from_str(&text) {
            Ok(message) => message,
            Err(e) => {
                self.error_reply(
                    Value::Null,
                    Error::new(code::PARSE_ERROR, format!("not JSON: {e}")),
                );
                return None;
            }
        };
        let id = message.get("id").cloned().filter(|id| !id.is_null());
        match message.get("method").and_then(Value::as_str) {
            Some(method) => Some(Incoming {
                id,
                method: method.to_owned(),
                params: message.get("params").cloned().unwrap_or(Value::Null),
            }),
            None => {
                let waiting = id
                    .and_then(|id| id.as_u64())
                    .and_then(|id| self.pending.borrow_mut().remove(&id));
                if let Some(waiting) = waiting {
                    let answer = match message.get("error") {
                        Some(error) => Err(Error::new(
                            error
                                .get("code")
                                .and_then(Value::as_i64)
                                .and_then(|c| i32::try_from(c).ok())
                                .unwrap_or(code::INTERNAL_ERROR),
                            error
                                .get("message")
                                .and_then(Value::as_str)
                                .unwrap_or_default(),
                        )),
                        None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                    };
                    let _ = waiting.send(answer);
                }
                None
            }
        }
    }

    fn write(&self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        let _ = self.out.send(Out::Line(line));
    }

    /// Waits until every message sent so far is written (before the process ends).
    pub async fn flush(&self) {
        let (done, written) = oneshot::channel();
        if self.out.send(Out::Flushed(done)).is_ok() {
            let _ = written.await;
        }
    }

    /// Sends notification `method`.
    pub fn notify(&self, method: &str, params: &impl Serialize) {
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        self.write(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    /// Sends request `method`: its id, and its answer to come (read as `R`).
    pub fn request<R: DeserializeOwned>(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> (u64, impl std::future::Future<Output = Result<R, Error>>) {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let (tx, rx) = oneshot::channel();
        self.pending.borrow_mut().insert(id, tx);
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        self.write(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        let answer = async move {
            let value = rx.await.map_err(|_| {
                Error::new(code::INTERNAL_ERROR, "the editor went before it answered")
            })??;
            serde_json::from_value(value)
                .map_err(|e| Error::new(code::INTERNAL_ERROR, format!("the editor's answer: {e}")))
        };
        (id, answer)
    }

    /// Withdraws request `id` (`$/cancel_request`): the editor answers it cancelled.
    pub fn cancel_request(&self, id: u64) {
        self.notify("$/cancel_request", &json!({ "requestId": id }));
    }

    fn reply(&self, id: Value, result: Value) {
        self.write(&json!({ "jsonrpc": "2.0", "id": id, "result": result }));
    }

    fn error_reply(&self, id: Value, error: Error) {
        self.write(&json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": error.code, "message": error.message },
        }));
    }

    /// The answer to request `id`, typed `T`.
    pub fn responder<T: Serialize>(&self, id: Value) -> Responder<T> {
        Responder {
            id,
            connection: self.clone(),
            answer: PhantomData,
        }
    }
}

/// Answers one request of the editor, once.
pub struct Responder<T> {
    id: Value,
    connection: Connection,
    answer: PhantomData<fn(T)>,
}

impl<T: Serialize> Responder<T> {
    /// Answers with `result`.
    pub fn respond(self, result: T) {
        let result = serde_json::to_value(result).unwrap_or(Value::Null);
        self.connection.reply(self.id, result);
    }

    /// Answers with an error.
    pub fn respond_with_error(self, error: Error) {
        self.connection.error_reply(self.id, error);
    }
}
