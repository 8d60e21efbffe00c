//! A WebSocket JSON-RPC 2.0 client for tests: calls match responses by id, notifications are buffered.
//!
//! Every incoming message is sorted into one of two in-order buffers: *notifications*
//! (objects with a `method` and no `id`) and *responses* (everything else, including
//! batch arrays and `"id": null` parse-error answers). Methods that wait for something
//! read frames until it shows up, buffering whatever else arrives meanwhile.

mod error;

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::ProtocolError;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub use error::{CallError, ClientError, RpcError};

/// How long calls and waits without an explicit timeout may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Close code reported when the server's close frame carried no code (RFC 6455 "no status").
const NO_STATUS: u16 = 1005;

/// A connected JSON-RPC test client.
pub struct RpcClient {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    timeout: Duration,
    notifications: VecDeque<Value>,
    responses: VecDeque<Value>,
    /// The server's close frame, once seen.
    close_frame: Option<(u16, String)>,
    /// Set once the stream has ended; later reads fail fast.
    ended: bool,
}

impl RpcClient {
    /// Opens a WebSocket to `url`, e.g. `ws://127.0.0.1:1234/`.
    pub async fn connect(url: &str) -> Result<RpcClient, ClientError> {
        RpcClient::connect_with_headers(url, &[]).await
    }

    /// Opens a WebSocket to `url`, adding these headers to the upgrade request (e.g. auth).
    pub async fn connect_with_headers(
        url: &str,
        headers: &[(&str, &str)],
    ) -> Result<RpcClient, ClientError> {
        let mut request = url
            .into_client_request()
            .map_err(|e| ClientError::Connect(e.to_string()))?;
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| ClientError::Connect(format!("header name {name:?}: {e}")))?;
            let value = HeaderValue::from_str(value)
                .map_err(|e| ClientError::Connect(format!("header value {value:?}: {e}")))?;
            request.headers_mut().append(name, value);
        }
        let connecting = tokio_tungstenite::connect_async(request);
        RpcClient::handshake(connecting).await
    }

    /// Opens a WebSocket to `url` over a socket whose receive buffer is asked to be `bytes`
    /// (the kernel rounds it): a client that stops reading then holds up the server's writes
    /// after little data, as a stalled client on a real network does after more.
    pub async fn connect_with_receive_buffer(
        url: &str,
        bytes: u32,
    ) -> Result<RpcClient, ClientError> {
        let request = url
            .into_client_request()
            .map_err(|e| ClientError::Connect(e.to_string()))?;
        let uri = request.uri();
        let address = format!(
            "{}:{}",
            uri.host().unwrap_or_default(),
            uri.port_u16().unwrap_or(80)
        );
        let address: std::net::SocketAddr = address
            .parse()
            .map_err(|e| ClientError::Connect(format!("{address}: {e}")))?;
        let socket = if address.is_ipv4() {
            tokio::net::TcpSocket::new_v4()
        } else {
            tokio::net::TcpSocket::new_v6()
        }
        .map_err(|e| ClientError::Connect(e.to_string()))?;
        socket
            .set_recv_buffer_size(bytes)
            .map_err(|e| ClientError::Connect(e.to_string()))?;
        let stream = socket
            .connect(address)
            .await
            .map_err(|e| ClientError::Connect(e.to_string()))?;
        let connecting = tokio_tungstenite::client_async(request, MaybeTlsStream::Plain(stream));
        RpcClient::handshake(connecting).await
    }

    /// Finishes a connection once its WebSocket handshake is done.
    async fn handshake(
        connecting: impl std::future::Future<
            Output = Result<
                (
                    WebSocketStream<MaybeTlsStream<TcpStream>>,
                    tungstenite::handshake::client::Response,
                ),
                tungstenite::Error,
            >,
        >,
    ) -> Result<RpcClient, ClientError> {
        let (ws, _response) = match tokio::time::timeout(DEFAULT_TIMEOUT, connecting).await {
            Err(_) => return Err(ClientError::Timeout),
            Ok(Err(tungstenite::Error::Http(response))) => {
                return Err(ClientError::Rejected {
                    status: response.status().as_u16(),
                    body: String::from_utf8_lossy(response.body().as_deref().unwrap_or_default())
                        .into_owned(),
                })
            }
            Ok(Err(e)) => return Err(ClientError::Connect(e.to_string())),
            Ok(Ok(connected)) => connected,
        };
        Ok(RpcClient {
            ws,
            next_id: 1,
            timeout: DEFAULT_TIMEOUT,
            notifications: VecDeque::new(),
            responses: VecDeque::new(),
            close_frame: None,
            ended: false,
        })
    }

    /// Changes the timeout used by `call` and `next_response` (default 10 s).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Sends a request and waits for the response with the same id.
    pub async fn call(&mut self, method: &str, params: Value) -> Result<Value, CallError> {
        let id = self.send_request(method, params).await?;
        self.response_for(id).await
    }

    /// Like `call`, but for calls expected to fail: returns the error, never panics.
    ///
    /// A success becomes code [`RpcError::UNEXPECTED_SUCCESS`] with the result in `data`;
    /// a transport failure becomes code [`RpcError::CLIENT_FAILURE`].
    pub async fn call_err(&mut self, method: &str, params: Value) -> RpcError {
        match self.call(method, params).await {
            Ok(result) => RpcError {
                code: RpcError::UNEXPECTED_SUCCESS,
                message: format!("expected an error from {method}, got a result"),
                data: Some(result),
            },
            Err(err) => err.into_rpc(),
        }
    }

    /// Sends a request without waiting and returns its id (pair with `response_for`).
    pub async fn send_request(&mut self, method: &str, params: Value) -> Result<u64, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_text(&request.to_string()).await?;
        Ok(id)
    }

    /// Waits for the response to request `id`; other responses stay buffered.
    pub async fn response_for(&mut self, id: u64) -> Result<Value, CallError> {
        let deadline = Instant::now() + self.timeout;
        let wanted = json!(id);
        loop {
            let found = self
                .responses
                .iter()
                .position(|r| r.get("id") == Some(&wanted));
            if let Some(index) = found {
                let Some(response) = self.responses.remove(index) else {
                    continue;
                };
                return into_result(response);
            }
            self.pump(deadline).await?;
        }
    }

    /// Sends a notification (a request without id).
    pub async fn notify(&mut self, method: &str, params: Value) -> Result<(), ClientError> {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_text(&message.to_string()).await
    }

    /// Sends one raw text frame, e.g. malformed JSON.
    pub async fn send_text(&mut self, text: &str) -> Result<(), ClientError> {
        self.send(Message::Text(text.to_owned())).await
    }

    /// Sends one raw binary frame.
    pub async fn send_binary(&mut self, bytes: impl Into<Vec<u8>>) -> Result<(), ClientError> {
        self.send(Message::Binary(bytes.into())).await
    }

    /// Sends a text frame whose payload is exactly `bytes`, valid UTF-8 or not (for the server's 1007 close).
    pub async fn send_raw_text_frame(
        &mut self,
        bytes: impl Into<Vec<u8>>,
    ) -> Result<(), ClientError> {
        use tungstenite::protocol::frame::coding::{Data, OpCode};
        use tungstenite::protocol::frame::Frame;
        let frame = Frame::message(bytes.into(), OpCode::Data(Data::Text), true);
        self.send(Message::Frame(frame)).await
    }

    async fn send(&mut self, message: Message) -> Result<(), ClientError> {
        if self.ended {
            return Err(ClientError::Closed(self.close_frame.clone()));
        }
        self.ws.send(message).await.map_err(|e| self.map_err(e))
    }

    /// The next message that is not a notification (oldest buffered first), for raw sends.
    pub async fn next_response(&mut self) -> Result<Value, ClientError> {
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(response) = self.responses.pop_front() {
                return Ok(response);
            }
            self.pump(deadline).await?;
        }
    }

    /// Removes and returns the params of the first notification of `method` (buffered or new).
    ///
    /// Notifications of other methods stay buffered in order.
    pub async fn next_notification(
        &mut self,
        method: &str,
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        let deadline = Instant::now() + timeout;
        loop {
            let found = self
                .notifications
                .iter()
                .position(|n| method_of(n) == Some(method));
            if let Some(index) = found {
                if let Some(message) = self.notifications.remove(index) {
                    return Ok(params_of(message));
                }
            }
            self.pump(deadline).await?;
        }
    }

    /// Removes and returns the oldest notification of any method (the full message), reading
    /// from the socket only when none is buffered: a caller that takes each as it comes sees
    /// them at the moment they were read.
    pub async fn next_any_notification(&mut self, timeout: Duration) -> Result<Value, ClientError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(message) = self.notifications.pop_front() {
                return Ok(message);
            }
            self.pump(deadline).await?;
        }
    }

    /// Waits for a notification of `method` whose params satisfy `pred` and returns its params.
    ///
    /// Earlier notifications of the same method that fail `pred` are consumed (dropped);
    /// notifications of other methods stay buffered.
    pub async fn wait_for_notification(
        &mut self,
        method: &str,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Result<Value, ClientError> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut index = 0;
            while index < self.notifications.len() {
                if method_of(&self.notifications[index]) != Some(method) {
                    index += 1;
                    continue;
                }
                if let Some(message) = self.notifications.remove(index) {
                    let params = params_of(message);
                    if pred(&params) {
                        return Ok(params);
                    }
                }
            }
            self.pump(deadline).await?;
        }
    }

    /// Takes every buffered notification (full messages, oldest first).
    pub fn drain_notifications(&mut self) -> Vec<Value> {
        self.notifications.drain(..).collect()
    }

    /// True if no notification of `method` is buffered or arrives within `within`.
    ///
    /// Does not consume anything: a notification that does arrive stays buffered.
    /// A connection that closes during the window counts as "none arrived".
    pub async fn expect_no_notification(&mut self, method: &str, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            if self
                .notifications
                .iter()
                .any(|n| method_of(n) == Some(method))
            {
                return false;
            }
            match self.pump(deadline).await {
                Ok(()) | Err(ClientError::InvalidMessage(_)) => {}
                Err(_) => return true,
            }
        }
    }

    /// Reads (buffering messages) until the server closes; returns its close code and reason.
    ///
    /// `None` if the connection ended without a close frame or `timeout` passed first.
    pub async fn close_reason(&mut self, timeout: Duration) -> Option<(u16, String)> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.pump(deadline).await {
                Ok(()) | Err(ClientError::InvalidMessage(_)) => {}
                Err(ClientError::Closed(frame)) => return frame,
                Err(_) => return None,
            }
        }
    }

    /// Closes the connection politely and waits briefly for the server to finish the handshake.
    pub async fn close(mut self) {
        if self.ws.close(None).await.is_err() {
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(1);
        while let Ok(Some(Ok(_))) = tokio::time::timeout_at(deadline, self.ws.next()).await {}
    }

    /// Reads frames until one JSON message has been buffered, or fails.
    async fn pump(&mut self, deadline: Instant) -> Result<(), ClientError> {
        loop {
            if self.ended {
                return Err(ClientError::Closed(self.close_frame.clone()));
            }
            let frame = match tokio::time::timeout_at(deadline, self.ws.next()).await {
                Err(_) => return Err(ClientError::Timeout),
                Ok(None) => {
                    self.ended = true;
                    continue;
                }
                Ok(Some(Err(e))) => return Err(self.map_err(e)),
                Ok(Some(Ok(frame))) => frame,
            };
            let text = match frame {
                Message::Text(text) => text,
                Message::Binary(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Message::Close(frame) => {
                    self.close_frame = Some(match frame {
                        Some(frame) => (u16::from(frame.code), frame.reason.into_owned()),
                        None => (NO_STATUS, String::new()),
                    });
                    self.ended = true;
                    continue;
                }
                // Pings are answered by tungstenite itself; raw frames never surface on reads.
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
            };
            let Ok(message) = serde_json::from_str::<Value>(&text) else {
                return Err(ClientError::InvalidMessage(text));
            };
            if message.get("method").is_some() && message.get("id").is_none() {
                self.notifications.push_back(message);
            } else {
                self.responses.push_back(message);
            }
            return Ok(());
        }
    }

    /// Maps a tungstenite error, treating "closed" errors as [`ClientError::Closed`].
    fn map_err(&mut self, err: tungstenite::Error) -> ClientError {
        match err {
            tungstenite::Error::ConnectionClosed
            | tungstenite::Error::AlreadyClosed
            | tungstenite::Error::Protocol(ProtocolError::SendAfterClosing) => {
                self.ended = true;
                ClientError::Closed(self.close_frame.clone())
            }
            other => ClientError::Transport(other.to_string()),
        }
    }
}

impl std::fmt::Debug for RpcClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcClient")
            .field("next_id", &self.next_id)
            .field("buffered_notifications", &self.notifications.len())
            .field("buffered_responses", &self.responses.len())
            .field("close_frame", &self.close_frame)
            .finish_non_exhaustive()
    }
}

/// The `method` of a message, if it has one.
fn method_of(message: &Value) -> Option<&str> {
    message.get("method").and_then(Value::as_str)
}

/// The `params` of a notification (`Null` if absent).
fn params_of(mut message: Value) -> Value {
    message
        .get_mut("params")
        .map(Value::take)
        .unwrap_or(Value::Null)
}

/// Turns a response object into its result or its error.
fn into_result(mut response: Value) -> Result<Value, CallError> {
    if let Some(error) = response.get("error") {
        return match RpcError::from_value(error) {
            Some(err) => Err(CallError::Rpc(err)),
            None => Err(CallError::Client(ClientError::InvalidMessage(
                response.to_string(),
            ))),
        };
    }
    match response.get_mut("result") {
        Some(result) => Ok(result.take()),
        None => Err(CallError::Client(ClientError::InvalidMessage(
            response.to_string(),
        ))),
    }
}
