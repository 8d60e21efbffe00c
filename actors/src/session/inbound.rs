//! What the client sends, frame by frame: text handled as JSON-RPC, binary refused, pings
//! answered, a close honoured, and a message sent in fragments put back together under the
//! size limit.

use super::frames::Trip;
use super::{ws, SessionActor};
use actix::prelude::*;
use actix_http::ws::Item;
use rummy_core::wire::{ErrorKind, RpcError};
use std::time::Instant;

impl StreamHandler<Result<ws::Message, ws::ProtocolError>> for SessionActor {
    fn handle(&mut self, msg: Result<ws::Message, ws::ProtocolError>, ctx: &mut Self::Context) {
        self.heard = Instant::now();
        match msg {
            Ok(ws::Message::Text(text)) => self.on_text(&text, ctx),
            Ok(ws::Message::Binary(_)) => {
                let err = RpcError::new(
                    ErrorKind::InvalidRequest,
                    "invalid request: binary frames are not JSON-RPC; send text",
                );
                self.send_error(ctx, None, &err);
            }
            Ok(ws::Message::Ping(payload)) => ctx.pong(&payload),
            Ok(ws::Message::Pong(_)) | Ok(ws::Message::Nop) => {}
            Ok(ws::Message::Close(reason)) => {
                ctx.close(reason);
                ctx.stop();
            }
            Ok(ws::Message::Continuation(item)) => self.on_fragment(item, ctx),
            Err(ws::ProtocolError::Overflow) => {
                self.close(ctx, ws::CloseCode::Size, "frame over the size limit")
            }
            // The decoder's errors say why only in their text: the frame guard, which saw the
            // bytes, says it in a type.
            Err(e) => match self.tripped.get() {
                Some(Trip::Oversized(announced)) => {
                    let reason = format!(
                        "a frame of {announced} bytes announced; the limit is {}",
                        self.limit.get()
                    );
                    self.close(ctx, ws::CloseCode::Size, &reason)
                }
                Some(Trip::OversizedMessage(announced)) => {
                    let reason = format!(
                        "a message of {announced} bytes announced; the limit is {}",
                        self.limit.get()
                    );
                    self.close(ctx, ws::CloseCode::Size, &reason)
                }
                Some(Trip::InvalidUtf8) => {
                    self.close(ctx, ws::CloseCode::Invalid, "text frame is not valid UTF-8")
                }
                None => {
                    tracing::debug!(session = self.id, error = %e, "websocket protocol error");
                    self.close(ctx, ws::CloseCode::Protocol, "websocket protocol error");
                }
            },
        }
    }
}

impl SessionActor {
    fn on_fragment(&mut self, item: Item, ctx: &mut ws::WebsocketContext<Self>) {
        let (first, last, bytes) = match item {
            Item::FirstText(b) => (true, false, b),
            Item::FirstBinary(_) => {
                let err = RpcError::new(
                    ErrorKind::InvalidRequest,
                    "invalid request: binary frames are not JSON-RPC; send text",
                );
                return self.send_error(ctx, None, &err);
            }
            Item::Continue(b) => (false, false, b),
            Item::Last(b) => (false, true, b),
        };
        let buffer = if first {
            self.fragments.insert(Vec::new())
        } else {
            match self.fragments.as_mut() {
                Some(buffer) => buffer,
                None => {
                    return self.close(
                        ctx,
                        ws::CloseCode::Protocol,
                        "continuation without a first fragment",
                    )
                }
            }
        };
        buffer.extend_from_slice(&bytes);
        if buffer.len() as u64 > self.limit.get() {
            self.fragments = None;
            return self.close(ctx, ws::CloseCode::Size, "message over the size limit");
        }
        if last {
            let bytes = self.fragments.take().unwrap_or_default();
            match String::from_utf8(bytes) {
                Ok(text) => self.on_text(&text, ctx),
                Err(_) => self.close(
                    ctx,
                    ws::CloseCode::Invalid,
                    "text message is not valid UTF-8",
                ),
            }
        }
    }
}
