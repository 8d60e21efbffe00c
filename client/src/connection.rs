//! One WebSocket connection speaking JSON-RPC 2.0: requests out, each incoming message read and
//! sorted on demand.
//!
//! The connection reads only when asked ([`Connection::read`]): nothing drains the socket
//! behind its owner's back, so an owner that stops reading is a client that stopped reading,
//! as the server sees it. [`crate::Client`] builds calls, notifications and reconnection on it;
//! the testkit's client builds its buffers on it.

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

use crate::error::{CallError, ClientError, RpcError};

/// How long the WebSocket handshake may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Close code reported when the server's close frame carried no code (RFC 6455 "no status").
const NO_STATUS: u16 = 1005;

/// How to open a connection.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    /// Sent as `Authorization: Bearer <token>` on the upgrade request.
    pub token: Option<String>,
    /// More headers for the upgrade request.
    pub headers: Vec<(String, String)>,
    /// Asks the kernel for this receive buffer (bytes) before connecting: a client that stops
    /// reading then holds up the server's writes after little data.
    pub receive_buffer: Option<u32>,
}

/// One message from the server, sorted.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// An object with a `method` and no `id` (the whole message).
    Notification(Value),
    /// Anything else: answers, batch arrays, `"id": null` parse-error answers (the whole message).
    Response(Value),
}

/// A connected WebSocket.
pub struct Connection {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    /// The server's close frame, once seen.
    close_frame: Option<(u16, String)>,
    /// Set once the stream has ended; later reads fail fast.
    ended: bool,
}

impl Connection {
    /// Opens a WebSocket to `url` (`ws://host:port/ws`).
    pub async fn open(url: &str, options: &ConnectOptions) -> Result<Connection, ClientError> {
        let mut request = url
            .into_client_request()
            .map_err(|e| ClientError::Connect(e.to_string()))?;
        let bearer = options
            .token
            .as_ref()
            .map(|t| ("Authorization".to_owned(), format!("Bearer {t}")));
        for (name, value) in options.headers.iter().cloned().chain(bearer) {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| ClientError::Connect(format!("header name {name:?}: {e}")))?;
            let value = HeaderValue::from_str(&value)
                .map_err(|e| ClientError::Connect(format!("header {name} value: {e}")))?;
            request.headers_mut().append(header, value);
        }
        match options.receive_buffer {
            None => handshake(tokio_tungstenite::connect_async(request)).await,
            Some(bytes) => {
                let stream = socket_with_buffer(&request, bytes).await?;
                handshake(tokio_tungstenite::client_async(
                    request,
                    MaybeTlsStream::Plain(stream),
                ))
                .await
            }
        }
    }

    /// Sends a request and returns its id (numbered from 1 on this connection).
    pub async fn send_request(&mut self, method: &str, params: Value) -> Result<u64, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_text(&request.to_string()).await?;
        Ok(id)
    }

    /// Sends a notification (a request without id).
    pub async fn notify(&mut self, method: &str, params: Value) -> Result<(), ClientError> {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_text(&message.to_string()).await
    }

    /// Sends one text frame as it is.
    pub async fn send_text(&mut self, text: &str) -> Result<(), ClientError> {
        self.send(Message::Text(text.to_owned())).await
    }

    /// Sends one binary frame.
    pub async fn send_binary(&mut self, bytes: Vec<u8>) -> Result<(), ClientError> {
        self.send(Message::Binary(bytes)).await
    }

    /// Sends a text frame whose payload is exactly `bytes`, valid UTF-8 or not.
    pub async fn send_raw_text_frame(&mut self, bytes: Vec<u8>) -> Result<(), ClientError> {
        use tungstenite::protocol::frame::coding::{Data, OpCode};
        use tungstenite::protocol::frame::Frame;
        let frame = Frame::message(bytes, OpCode::Data(Data::Text), true);
        self.send(Message::Frame(frame)).await
    }

    async fn send(&mut self, message: Message) -> Result<(), ClientError> {
        if self.ended {
            return Err(ClientError::Closed(self.close_frame.clone()));
        }
        self.ws.send(message).await.map_err(|e| self.map_err(e))
    }

    /// Reads until one JSON message arrives (or `deadline` passes, or the connection ends).
    ///
    /// Pings are answered and skipped; a close frame is kept ([`Connection::close_frame`]) and
    /// reported as [`ClientError::Closed`]. Cancel-safe: a read dropped midway loses nothing.
    pub async fn read(&mut self, deadline: Option<Instant>) -> Result<Incoming, ClientError> {
        loop {
            if self.ended {
                return Err(ClientError::Closed(self.close_frame.clone()));
            }
            let next = match deadline {
                Some(deadline) => tokio::time::timeout_at(deadline, self.ws.next())
                    .await
                    .map_err(|_| ClientError::Timeout)?,
                None => self.ws.next().await,
            };
            let frame = match next {
                None => {
                    self.ended = true;
                    continue;
                }
                Some(Err(e)) => return Err(self.map_err(e)),
                Some(Ok(frame)) => frame,
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
                return Ok(Incoming::Notification(message));
            }
            return Ok(Incoming::Response(message));
        }
    }

    /// The server's close frame (code, reason), once one was read.
    pub fn close_frame(&self) -> Option<&(u16, String)> {
        self.close_frame.as_ref()
    }

    /// Whether the connection has ended (closed by either side or broken).
    pub fn has_ended(&self) -> bool {
        self.ended
    }

    /// Closes politely and waits up to a second for the server's side of the handshake.
    pub async fn close(mut self) {
        if self.ws.close(None).await.is_err() {
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(1);
        while let Ok(Some(Ok(_))) = tokio::time::timeout_at(deadline, self.ws.next()).await {}
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
            other => {
                self.ended = true;
                ClientError::Transport(other.to_string())
            }
        }
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("next_id", &self.next_id)
            .field("close_frame", &self.close_frame)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

/// The id of an answer, when it is a number this client could have sent.
pub fn response_id(response: &Value) -> Option<u64> {
    response.get("id").and_then(Value::as_u64)
}

/// Turns an answer object into its result or its error.
pub fn into_result(mut response: Value) -> Result<Value, CallError> {
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

/// The `method` of a notification.
pub fn method_of(message: &Value) -> Option<&str> {
    message.get("method").and_then(Value::as_str)
}

/// The `params` of a notification (`Null` if absent).
pub fn params_of(mut message: Value) -> Value {
    message
        .get_mut("params")
        .map(Value::take)
        .unwrap_or(Value::Null)
}

/// A TCP stream to the request's host whose receive buffer was asked to be `bytes`.
async fn socket_with_buffer(
    request: &tungstenite::handshake::client::Request,
    bytes: u32,
) -> Result<TcpStream, ClientError> {
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
    socket
        .connect(address)
        .await
        .map_err(|e| ClientError::Connect(e.to_string()))
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
) -> Result<Connection, ClientError> {
    let (ws, _response) = match tokio::time::timeout(CONNECT_TIMEOUT, connecting).await {
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
    Ok(Connection {
        ws,
        next_id: 1,
        close_frame: None,
        ended: false,
    })
}
