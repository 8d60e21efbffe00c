//! A WebSocket spoken byte by byte over a plain TCP socket, for what a well-behaved client
//! library never sends or hides: hand-made frame headers, ids whose exact text matters, and
//! whether the server closes the TCP connection itself.

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// A frame the server sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A text frame's payload.
    Text(String),
    /// A close frame: its code and reason.
    Close(u16, String),
    /// A ping.
    Ping,
    /// Any other opcode.
    Other(u8),
}

/// One raw WebSocket connection.
pub struct RawSocket {
    stream: TcpStream,
    buffer: Vec<u8>,
}

impl RawSocket {
    /// Connects to the server on `port` and completes the WebSocket handshake.
    pub async fn connect(port: u16) -> RawSocket {
        match RawSocket::connect_with(port, &[]).await {
            Ok(socket) => socket,
            Err((status, body)) => panic!("upgrade refused: {status} {body}"),
        }
    }

    /// Connects with extra upgrade headers; the refusal's HTTP status and body when the server
    /// does not upgrade.
    pub async fn connect_with(
        port: u16,
        headers: &[(&str, &str)],
    ) -> Result<RawSocket, (u16, String)> {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let mut request = format!(
            "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut socket = RawSocket {
            stream,
            buffer: Vec::new(),
        };
        let end = loop {
            if let Some(at) = socket.buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            assert!(socket.fill().await > 0, "the handshake was cut short");
        };
        let head = String::from_utf8_lossy(&socket.buffer[..end]).into_owned();
        if head.starts_with("HTTP/1.1 101") {
            socket.buffer.drain(..end);
            return Ok(socket);
        }
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let length: usize = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .and_then(|n| n.trim().parse().ok())
            })
            .unwrap_or(0);
        while socket.buffer.len() < end + length && socket.fill().await > 0 {}
        let body = String::from_utf8_lossy(&socket.buffer[end..]).into_owned();
        Err((status, body))
    }

    async fn fill(&mut self) -> usize {
        let mut chunk = [0u8; 8192];
        let n = timeout(Duration::from_secs(10), self.stream.read(&mut chunk))
            .await
            .expect("the server answers within 10 s")
            .unwrap_or(0);
        self.buffer.extend_from_slice(&chunk[..n]);
        n
    }

    /// Sends raw bytes as they are.
    pub async fn send_bytes(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    /// Sends one masked frame with `opcode` and `payload`.
    pub async fn send_frame(&mut self, opcode: u8, payload: &[u8]) {
        self.send_bytes(&frame(opcode, payload)).await;
    }

    /// Sends a text frame.
    pub async fn send_text(&mut self, text: &str) {
        self.send_frame(0x1, text.as_bytes()).await;
    }

    /// The next frame from the server, or `None` once the server closed the TCP connection.
    pub async fn next_frame(&mut self) -> Option<Frame> {
        loop {
            if let Some((frame, used)) = parse(&self.buffer) {
                self.buffer.drain(..used);
                return Some(frame);
            }
            if self.fill().await == 0 {
                return None;
            }
        }
    }

    /// The next text frame, skipping pings.
    pub async fn next_text(&mut self) -> String {
        loop {
            match self.next_frame().await {
                Some(Frame::Text(text)) => return text,
                Some(Frame::Ping) => {}
                other => panic!("expected a text frame, got {other:?}"),
            }
        }
    }

    /// Whether the server closes the TCP connection (end of stream) within `within`, reading
    /// and dropping whatever frames come first.
    pub async fn server_hangs_up(&mut self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let mut chunk = [0u8; 8192];
            match tokio::time::timeout_at(deadline, self.stream.read(&mut chunk)).await {
                Err(_) => return false,
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(_)) => {}
            }
        }
    }
}

/// A masked client frame (FIN set).
pub fn frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mask = [0x12, 0x34, 0x56, 0x78];
    let mut out = header(opcode, payload.len() as u64, mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    out
}

/// A masked client frame header announcing `len` payload bytes.
pub fn header(opcode: u8, len: u64, mask: [u8; 4]) -> Vec<u8> {
    let mut out = vec![0x80 | opcode];
    match len {
        0..=125 => out.push(0x80 | len as u8),
        126..=65_535 => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            out.push(0x80 | 127);
            out.extend_from_slice(&len.to_be_bytes());
        }
    }
    out.extend_from_slice(&mask);
    out
}

/// A server frame at the start of `bytes`, and how many bytes it took.
fn parse(bytes: &[u8]) -> Option<(Frame, usize)> {
    let (first, second) = (*bytes.first()?, *bytes.get(1)?);
    let (len, start) = match second & 0x7F {
        126 => (
            u16::from_be_bytes([*bytes.get(2)?, *bytes.get(3)?]) as usize,
            4,
        ),
        127 => (
            u64::from_be_bytes(bytes.get(2..10)?.try_into().ok()?) as usize,
            10,
        ),
        n => (n as usize, 2),
    };
    let payload = bytes.get(start..start + len)?;
    let frame = match first & 0x0F {
        0x1 => Frame::Text(String::from_utf8_lossy(payload).into_owned()),
        0x8 => {
            let code = payload
                .get(..2)
                .map_or(1005, |c| u16::from_be_bytes([c[0], c[1]]));
            let reason = payload
                .get(2..)
                .map_or(String::new(), |r| String::from_utf8_lossy(r).into_owned());
            Frame::Close(code, reason)
        }
        0x9 => Frame::Ping,
        other => Frame::Other(other),
    };
    Some((frame, start + len))
}

/// A client frame with every header bit chosen: `fin`, the three `rsv` bits, the opcode, and
/// whether it is masked (a client must mask).
pub fn frame_with(fin: bool, rsv: u8, opcode: u8, masked: bool, payload: &[u8]) -> Vec<u8> {
    let mask = [0x12, 0x34, 0x56, 0x78];
    let mut out = header(opcode, payload.len() as u64, mask);
    out[0] = (u8::from(fin) << 7) | ((rsv & 0x7) << 4) | (opcode & 0x0F);
    if !masked {
        out[1] &= 0x7F;
        out.truncate(out.len() - 4);
        out.extend_from_slice(payload);
    } else {
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    }
    out
}
