//! `FrameGuard`: reads each WebSocket frame's header as its bytes arrive, and ends the
//! connection at a header announcing more than the frame limit — before its payload is buffered.
//!
//! actix-http's frame decoder compares a frame's length with the limit only once the whole
//! frame is in its buffer, so a header claiming 2^62 bytes made the server buffer whatever the
//! client sent (400 MB before one probe gave up). The guard sits between the connection's
//! bytes and that decoder, keeps no payload itself, and on an oversized header stops the byte
//! stream with an error and marks the session's [`Tripped`] cell, from which the session
//! closes 1009.

use actix_web::error::PayloadError;
use bytes::Bytes;
use futures_util::Stream;
use std::cell::Cell;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

/// Set by the guard when it stopped the connection: the length the offending header announced.
pub type Tripped = Rc<Cell<Option<u64>>>;

/// Where the guard is in the frame it is reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Position {
    /// `have` bytes of a header read so far (at most 14: 2 + 8 of length + 4 of mask).
    Header { bytes: [u8; 14], have: usize },
    /// This many payload bytes of the current frame still to pass.
    Payload(u64),
}

/// The byte stream of one WebSocket connection, with every frame header checked against `limit`.
pub struct FrameGuard<S> {
    inner: S,
    limit: u64,
    position: Position,
    tripped: Tripped,
}

impl<S> FrameGuard<S> {
    /// Guards `inner`, refusing frames over `limit` bytes; `tripped` is told when it does.
    pub fn new(inner: S, limit: usize, tripped: Tripped) -> Self {
        FrameGuard {
            inner,
            limit: u64::try_from(limit).unwrap_or(u64::MAX),
            position: Position::Header {
                bytes: [0; 14],
                have: 0,
            },
            tripped,
        }
    }

    /// Follows `chunk` through the frames it continues and starts; the announced length of
    /// the first header over the limit, if any.
    fn follow(&mut self, mut chunk: &[u8]) -> Option<u64> {
        while !chunk.is_empty() {
            match &mut self.position {
                Position::Payload(remaining) => {
                    let step = chunk
                        .len()
                        .min(usize::try_from(*remaining).unwrap_or(usize::MAX));
                    chunk = &chunk[step..];
                    *remaining -= step as u64;
                    if *remaining == 0 {
                        self.position = Position::Header {
                            bytes: [0; 14],
                            have: 0,
                        };
                    }
                }
                Position::Header { bytes, have } => {
                    bytes[*have] = chunk[0];
                    *have += 1;
                    chunk = &chunk[1..];
                    let Some((len, header_len)) = header_length(&bytes[..*have]) else {
                        continue;
                    };
                    if *have < header_len {
                        continue;
                    }
                    if len > self.limit {
                        return Some(len);
                    }
                    self.position = if len == 0 {
                        Position::Header {
                            bytes: [0; 14],
                            have: 0,
                        }
                    } else {
                        Position::Payload(len)
                    };
                }
            }
        }
        None
    }
}

/// A header's announced payload length and its own length, once its first bytes tell them
/// (RFC 6455 §5.2: 7 bits, or 126 + 16 bits, or 127 + 64 bits; then a 4-byte mask if masked).
fn header_length(header: &[u8]) -> Option<(u64, usize)> {
    let second = *header.get(1)?;
    let mask = if second & 0x80 != 0 { 4 } else { 0 };
    match second & 0x7F {
        126 => {
            let len = u16::from_be_bytes([*header.get(2)?, *header.get(3)?]);
            Some((u64::from(len), 4 + mask))
        }
        127 => {
            let bytes: [u8; 8] = header.get(2..10)?.try_into().ok()?;
            Some((u64::from_be_bytes(bytes), 10 + mask))
        }
        short => Some((u64::from(short), 2 + mask)),
    }
}

impl<S> Stream for FrameGuard<S>
where
    S: Stream<Item = Result<Bytes, PayloadError>> + Unpin,
{
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.tripped.get().is_some() {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => match self.follow(&chunk) {
                Some(announced) => {
                    self.tripped.set(Some(announced));
                    Poll::Ready(Some(Err(PayloadError::Overflow)))
                }
                None => Poll::Ready(Some(Ok(chunk))),
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::stream::{self, StreamExt};

    /// A masked client frame header with `len` announced, as the client's first bytes.
    fn header(len: u64) -> Vec<u8> {
        let mut out = vec![0x81];
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
        out.extend_from_slice(&[1, 2, 3, 4]);
        out
    }

    async fn pass(chunks: Vec<Vec<u8>>, limit: usize) -> (Vec<Result<usize, String>>, Option<u64>) {
        let tripped = Tripped::default();
        let inner = stream::iter(chunks.into_iter().map(|c| Ok(Bytes::from(c))));
        let guard = FrameGuard::new(inner, limit, Rc::clone(&tripped));
        let out = guard
            .map(|item| item.map(|b| b.len()).map_err(|e| e.to_string()))
            .collect()
            .await;
        (out, tripped.get())
    }

    /// Frames within the limit pass byte for byte, whatever the chunking, across frames.
    #[actix_rt::test]
    async fn frames_within_the_limit_pass_untouched() {
        let mut bytes = header(300);
        bytes.extend(vec![b'x'; 300]);
        bytes.extend(header(0));
        bytes.extend(header(5));
        bytes.extend(b"hello");
        let chunks: Vec<Vec<u8>> = bytes.chunks(7).map(<[u8]>::to_vec).collect();
        let n = chunks.len();
        let (out, tripped) = pass(chunks, 300).await;
        assert_eq!(out.len(), n);
        assert!(out.iter().all(Result::is_ok));
        assert_eq!(tripped, None);
    }

    /// A header over the limit stops the stream when the header arrives, even split across
    /// chunks and with no payload sent, and the stream ends after the error.
    #[actix_rt::test]
    async fn an_oversized_header_stops_the_stream_at_once() {
        let mut first = header(10);
        first.extend(b"0123456789");
        let big = header(1 << 62);
        let chunks = vec![first, big[..5].to_vec(), big[5..].to_vec(), vec![0; 100]];
        let (out, tripped) = pass(chunks, 1024).await;
        assert_eq!(out.len(), 3);
        assert!(out[..2].iter().all(Result::is_ok));
        assert!(out[2].is_err());
        assert_eq!(tripped, Some(1 << 62));
        let (_, tripped) = pass(vec![header(1025)], 1024).await;
        assert_eq!(tripped, Some(1025));
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        /// A guard over nothing, fed by hand through `follow`.
        fn guard(
            limit: usize,
        ) -> FrameGuard<futures_util::stream::Empty<Result<Bytes, PayloadError>>> {
            FrameGuard::new(futures_util::stream::empty(), limit, Tripped::default())
        }

        /// `bytes` cut at the given points (each taken modulo the length).
        fn chunks(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
            let mut at: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
            at.push(0);
            at.push(bytes.len());
            at.sort_unstable();
            at.dedup();
            at.windows(2).map(|w| bytes[w[0]..w[1]].to_vec()).collect()
        }

        proptest! {
            /// Any bytes, cut anywhere: the guard never panics, and once it trips it reports
            /// a length over the limit.
            #[test]
            fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048), cuts in proptest::collection::vec(any::<usize>(), 0..16), limit in 0usize..4096) {
                let mut g = guard(limit);
                for chunk in chunks(&bytes, &cuts) {
                    if let Some(announced) = g.follow(&chunk) {
                        prop_assert!(announced > limit as u64);
                        break;
                    }
                }
            }

            /// Frames within the limit, cut anywhere, never trip it; one frame over it trips it
            /// at its header, announcing its length, whatever came before.
            #[test]
            fn only_a_frame_over_the_limit_trips(lens in proptest::collection::vec(0u64..70_000, 1..6), over in proptest::option::of(70_001u64..u64::MAX / 2), cuts in proptest::collection::vec(any::<usize>(), 0..16)) {
                let limit = 70_000usize;
                let mut bytes = Vec::new();
                for len in &lens {
                    bytes.extend(header(*len));
                    bytes.extend(std::iter::repeat_n(b'x', *len as usize));
                }
                if let Some(len) = over {
                    bytes.extend(header(len));
                }
                let mut g = guard(limit);
                let mut tripped = None;
                for chunk in chunks(&bytes, &cuts) {
                    if let Some(announced) = g.follow(&chunk) {
                        tripped = Some(announced);
                        break;
                    }
                }
                prop_assert_eq!(tripped, over);
            }
        }
    }
}
