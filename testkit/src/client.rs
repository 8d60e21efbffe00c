//! A WebSocket JSON-RPC 2.0 client for tests: calls match responses by id, notifications are buffered.
//!
//! It is `rummy_client`'s [`Connection`] with two in-order buffers: every incoming message is
//! sorted into *notifications* (objects with a `method` and no `id`) and *responses*
//! (everything else, including batch arrays and `"id": null` parse-error answers). Methods
//! that wait for something read frames until it shows up, buffering whatever else arrives
//! meanwhile; nothing reads the socket otherwise, so a test can stop reading.

use std::collections::VecDeque;
use std::time::Duration;

use rummy_client::connection::{into_result, method_of, params_of};
use rummy_client::{ConnectOptions, Connection, Incoming};
use serde_json::{json, Value};
use tokio::time::Instant;

pub use rummy_client::{CallError, ClientError, RpcError};

/// How long calls and waits without an explicit timeout may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The code `call_err` gives a call that unexpectedly succeeded (`data` holds the result).
pub const UNEXPECTED_SUCCESS: i64 = 0;

/// A connected JSON-RPC test client.
pub struct RpcClient {
    conn: Connection,
    timeout: Duration,
    notifications: VecDeque<Value>,
    responses: VecDeque<Value>,
}

impl RpcClient {
    /// Opens a WebSocket to `url`, e.g. `ws://127.0.0.1:1234/`.
    pub async fn connect(url: &str) -> Result<RpcClient, ClientError> {
        RpcClient::open(url, ConnectOptions::default()).await
    }

    /// Opens a WebSocket to `url`, adding these headers to the upgrade request (e.g. auth).
    pub async fn connect_with_headers(
        url: &str,
        headers: &[(&str, &str)],
    ) -> Result<RpcClient, ClientError> {
        let headers = headers
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        let options = ConnectOptions {
            headers,
            ..ConnectOptions::default()
        };
        RpcClient::open(url, options).await
    }

    /// Opens a WebSocket to `url` over a socket whose receive buffer is asked to be `bytes`
    /// (the kernel rounds it): a client that stops reading then holds up the server's writes
    /// after little data, as a stalled client on a real network does after more.
    pub async fn connect_with_receive_buffer(
        url: &str,
        bytes: u32,
    ) -> Result<RpcClient, ClientError> {
        let options = ConnectOptions {
            receive_buffer: Some(bytes),
            ..ConnectOptions::default()
        };
        RpcClient::open(url, options).await
    }

    async fn open(url: &str, options: ConnectOptions) -> Result<RpcClient, ClientError> {
        Ok(RpcClient {
            conn: Connection::open(url, &options).await?,
            timeout: DEFAULT_TIMEOUT,
            notifications: VecDeque::new(),
            responses: VecDeque::new(),
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
    /// A success becomes code [`UNEXPECTED_SUCCESS`] with the result in `data`;
    /// a transport failure becomes code [`RpcError::CLIENT_FAILURE`].
    pub async fn call_err(&mut self, method: &str, params: Value) -> RpcError {
        match self.call(method, params).await {
            Ok(result) => RpcError {
                code: UNEXPECTED_SUCCESS,
                message: format!("expected an error from {method}, got a result"),
                data: Some(result),
            },
            Err(err) => err.into_rpc(),
        }
    }

    /// Sends a request without waiting and returns its id (pair with `response_for`).
    pub async fn send_request(&mut self, method: &str, params: Value) -> Result<u64, ClientError> {
        self.conn.send_request(method, params).await
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
        self.conn.notify(method, params).await
    }

    /// Sends one raw text frame, e.g. malformed JSON.
    pub async fn send_text(&mut self, text: &str) -> Result<(), ClientError> {
        self.conn.send_text(text).await
    }

    /// Sends one raw binary frame.
    pub async fn send_binary(&mut self, bytes: impl Into<Vec<u8>>) -> Result<(), ClientError> {
        self.conn.send_binary(bytes.into()).await
    }

    /// Sends a text frame whose payload is exactly `bytes`, valid UTF-8 or not (for the server's 1007 close).
    pub async fn send_raw_text_frame(
        &mut self,
        bytes: impl Into<Vec<u8>>,
    ) -> Result<(), ClientError> {
        self.conn.send_raw_text_frame(bytes.into()).await
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
    pub async fn close(self) {
        self.conn.close().await;
    }

    /// Reads frames until one JSON message has been buffered, or fails.
    async fn pump(&mut self, deadline: Instant) -> Result<(), ClientError> {
        match self.conn.read(Some(deadline)).await? {
            Incoming::Notification(message) => self.notifications.push_back(message),
            Incoming::Response(message) => self.responses.push_back(message),
        }
        Ok(())
    }
}

impl std::fmt::Debug for RpcClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcClient")
            .field("connection", &self.conn)
            .field("buffered_notifications", &self.notifications.len())
            .field("buffered_responses", &self.responses.len())
            .finish_non_exhaustive()
    }
}
