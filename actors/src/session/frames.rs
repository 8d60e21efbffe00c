//! `FrameGuard`: reads each WebSocket frame's header as its bytes arrive, and ends the
//! connection at a header announcing more than the frame limit — before its payload is buffered.
//!
//! actix-http's frame decoder compares a frame's length with the limit only once the whole
//! frame is in its buffer, so a header claiming 2^62 bytes made the server buffer whatever the
//! client sent (400 MB before one probe gave up). The guard sits between the connection's
//! bytes and that decoder, keeps no payload itself, and on an oversized header stops the byte
//! stream with an error and marks the session's [`Tripped`] cell, from which the session
//! closes 1009.
//!
//! It also checks the payload of every whole text frame (unmasked as it passes, a few bytes of
//! an unfinished character carried to the next chunk) for UTF-8, and marks [`Trip::InvalidUtf8`]
//! at the first that is not. The bytes still pass: the decoder refuses that frame with an I/O
//! error that says nothing typed, and the session, seeing the mark, closes 1007 instead of
//! reading the error's text. A fragmented text message is the session's to check once whole.

use actix_web::error::PayloadError;
use bytes::Bytes;
use futures_util::Stream;
use std::cell::Cell;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

/// What the guard saw that ends the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trip {
    /// A frame header announced this many bytes, over the limit: the guard stopped the byte
    /// stream (the session closes 1009).
    Oversized(u64),
    /// A fragment's header brought its message to this many bytes, over the limit: stopped
    /// the same way.
    OversizedMessage(u64),
    /// A whole text frame's payload is not UTF-8: the bytes go on to the decoder, which refuses
    /// the frame (the session closes 1007).
    InvalidUtf8,
}

/// Set by the guard at the first thing it saw that ends the connection.
pub type Tripped = Rc<Cell<Option<Trip>>>;

/// The largest frame, and fragmented message, the guard lets through; the session raises it
/// once the connection has shown a valid token.
pub type Limit = Rc<Cell<u64>>;

/// Where the guard is in the frame it is reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Position {
    /// `have` bytes of a header read so far (at most 14: 2 + 8 of length + 4 of mask).
    Header { bytes: [u8; 14], have: usize },
    /// This many payload bytes of the current frame still to pass, checked as UTF-8 when the
    /// frame is a whole text frame.
    Payload(u64, Option<Utf8Check>),
}

/// The UTF-8 check of one text frame's payload, fed the masked bytes as they arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Utf8Check {
    /// The frame's masking key (zeros for an unmasked frame).
    mask: [u8; 4],
    /// Payload bytes seen so far: where the next byte is in the mask's cycle.
    at: usize,
    /// The start of a character the last chunk ended in (at most 3 bytes), unmasked.
    pending: [u8; 3],
    /// How many bytes of `pending` are held.
    held: usize,
}

/// How many payload bytes are unmasked and checked at a time (on the stack).
const CHECK_BLOCK: usize = 512;

impl Utf8Check {
    fn new(mask: [u8; 4]) -> Self {
        Utf8Check {
            mask,
            at: 0,
            pending: [0; 3],
            held: 0,
        }
    }

    /// Checks the next masked payload bytes; false at the first byte that cannot be UTF-8.
    fn feed(&mut self, masked: &[u8]) -> bool {
        let mut block = [0u8; CHECK_BLOCK];
        for piece in masked.chunks(CHECK_BLOCK - self.pending.len()) {
            let mut n = self.held;
            block[..n].copy_from_slice(&self.pending[..n]);
            for &byte in piece {
                block[n] = byte ^ self.mask[self.at % 4];
                self.at += 1;
                n += 1;
            }
            match std::str::from_utf8(&block[..n]) {
                Ok(_) => self.held = 0,
                // Only the end is unfinished: a character split across chunks.
                Err(e) if e.error_len().is_none() => {
                    let start = e.valid_up_to();
                    self.held = n - start;
                    self.pending[..self.held].copy_from_slice(&block[start..n]);
                }
                Err(_) => return false,
            }
        }
        true
    }

    /// Whether the payload ended on a whole character.
    fn finished(&self) -> bool {
        self.held == 0
    }
}

/// The byte stream of one WebSocket connection, with every frame header checked against `limit`.
pub struct FrameGuard<S> {
    inner: S,
    limit: Limit,
    position: Position,
    tripped: Tripped,
    /// The bytes announced so far by the frames of the fragmented message being read.
    message: u64,
}

impl<S> FrameGuard<S> {
    /// Guards `inner`, refusing frames over `limit` bytes; `tripped` is told when it does.
    #[cfg(test)]
    pub fn new(inner: S, limit: usize, tripped: Tripped) -> Self {
        let limit = Rc::new(Cell::new(u64::try_from(limit).unwrap_or(u64::MAX)));
        FrameGuard::with_limit(inner, limit, tripped)
    }

    /// Guards `inner` with a limit its owner may change between frames.
    pub fn with_limit(inner: S, limit: Limit, tripped: Tripped) -> Self {
        FrameGuard {
            inner,
            limit,
            position: Position::Header {
                bytes: [0; 14],
                have: 0,
            },
            tripped,
            message: 0,
        }
    }

    /// Follows `chunk` through the frames it continues and starts: what ends the connection,
    /// if it holds a header over the limit (nothing after it is read) or ends a text frame
    /// that is not UTF-8 (the rest is still followed).
    fn follow(&mut self, mut chunk: &[u8]) -> Option<Trip> {
        let mut found = None;
        while !chunk.is_empty() {
            match &mut self.position {
                Position::Payload(remaining, check) => {
                    let step = chunk
                        .len()
                        .min(usize::try_from(*remaining).unwrap_or(usize::MAX));
                    let (payload, rest) = chunk.split_at(step);
                    chunk = rest;
                    *remaining -= step as u64;
                    let mut valid = check.as_mut().is_none_or(|c| c.feed(payload));
                    if *remaining == 0 {
                        valid &= check.is_none_or(|c| c.finished());
                        self.position = Position::Header {
                            bytes: [0; 14],
                            have: 0,
                        };
                    } else if !valid {
                        // Found: the rest of this frame needs no checking.
                        *check = None;
                    }
                    if !valid {
                        found = found.or(Some(Trip::InvalidUtf8));
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
                    if len > self.limit.get() {
                        return Some(Trip::Oversized(len));
                    }
                    // A data frame (not a control frame, which may come between fragments):
                    // a continuation adds to its message, which ends with the FIN bit.
                    if bytes[0] & 0x08 == 0 {
                        let total = match bytes[0] & 0x0F {
                            0 => self.message.saturating_add(len),
                            _ => len,
                        };
                        if total > self.limit.get() {
                            return Some(Trip::OversizedMessage(total));
                        }
                        self.message = if bytes[0] & 0x80 != 0 { 0 } else { total };
                    }
                    let check = whole_text(bytes[0]).then(|| {
                        // A masked header ends with its key; a client's frames are masked,
                        // and the decoder refuses one that is not.
                        let key = match bytes[1] & 0x80 {
                            0 => [0; 4],
                            _ => bytes[header_len - 4..header_len]
                                .try_into()
                                .unwrap_or([0; 4]),
                        };
                        Utf8Check::new(key)
                    });
                    self.position = if len == 0 {
                        Position::Header {
                            bytes: [0; 14],
                            have: 0,
                        }
                    } else {
                        Position::Payload(len, check)
                    };
                }
            }
        }
        found
    }
}

/// Whether a frame's first byte starts a whole text frame (FIN set, opcode 1): one the decoder
/// turns into text at once. A first fragment (FIN clear) is checked by the session once its
/// message is whole.
fn whole_text(first: u8) -> bool {
    first & 0x80 != 0 && first & 0x0F == 0x1
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
        if let Some(Trip::Oversized(_) | Trip::OversizedMessage(_)) = self.tripped.get() {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => match self.follow(&chunk) {
                Some(oversized @ (Trip::Oversized(_) | Trip::OversizedMessage(_))) => {
                    self.tripped.set(Some(oversized));
                    Poll::Ready(Some(Err(PayloadError::Overflow)))
                }
                Some(Trip::InvalidUtf8) => {
                    // The first trip stands; the decoder refuses the frame itself.
                    if self.tripped.get().is_none() {
                        self.tripped.set(Some(Trip::InvalidUtf8));
                    }
                    Poll::Ready(Some(Ok(chunk)))
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

    /// The key every test frame is masked with.
    const KEY: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

    /// A masked client frame header with `len` announced, `first` its first byte (FIN and
    /// opcode).
    fn header_of(first: u8, len: u64) -> Vec<u8> {
        let mut out = vec![first];
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
        out.extend_from_slice(&KEY);
        out
    }

    /// A whole text frame's header with `len` announced.
    fn header(len: u64) -> Vec<u8> {
        header_of(0x81, len)
    }

    /// A whole frame (header and masked payload) as a client sends it.
    fn frame(first: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = header_of(first, payload.len() as u64);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ KEY[i % 4]));
        out
    }

    async fn pass(
        chunks: Vec<Vec<u8>>,
        limit: usize,
    ) -> (Vec<Result<usize, String>>, Option<Trip>) {
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
        let mut bytes = frame(0x81, &[b'x'; 300]);
        bytes.extend(header(0));
        bytes.extend(frame(0x81, b"hello"));
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
        let first = frame(0x81, b"0123456789");
        let big = header(1 << 62);
        let chunks = vec![first, big[..5].to_vec(), big[5..].to_vec(), vec![0; 100]];
        let (out, tripped) = pass(chunks, 1024).await;
        assert_eq!(out.len(), 3);
        assert!(out[..2].iter().all(Result::is_ok));
        assert!(out[2].is_err());
        assert_eq!(tripped, Some(Trip::Oversized(1 << 62)));
        let (_, tripped) = pass(vec![header(1025)], 1024).await;
        assert_eq!(tripped, Some(Trip::Oversized(1025)));
    }

    /// A whole text frame that is not UTF-8 is marked, and its bytes still pass (the decoder
    /// refuses it); a binary frame, a control frame or a first fragment holding the same bytes
    /// is not the guard's to judge.
    #[actix_rt::test]
    async fn a_text_frame_that_is_not_utf8_is_marked_and_passes() {
        let bad = [0x7b, 0xff, 0xfe, 0x7d];
        let (out, tripped) = pass(vec![frame(0x81, &bad)], 1024).await;
        assert_eq!(out, vec![Ok(4 + 6)]);
        assert_eq!(tripped, Some(Trip::InvalidUtf8));
        for first in [0x82, 0x89, 0x01] {
            let (_, tripped) = pass(vec![frame(first, &bad)], 1024).await;
            assert_eq!(tripped, None, "first byte {first:#x}");
        }
        // Ending inside a character is as bad as a byte that starts none.
        let (_, tripped) = pass(vec![frame(0x81, "é".as_bytes()[..1].as_ref())], 1024).await;
        assert_eq!(tripped, Some(Trip::InvalidUtf8));
    }

    /// A fragmented message is stopped at the header of the fragment that brings it over the
    /// limit, before that fragment's payload; control frames between fragments count nothing,
    /// and a finished message leaves nothing behind for the next.
    #[actix_rt::test]
    async fn a_fragmented_message_over_the_limit_stops_at_the_fragment_header() {
        let mut bytes = frame(0x01, &[b'x'; 600]);
        bytes.extend(frame(0x89, b"ping"));
        bytes.extend(frame(0x80, &[b'x'; 400]));
        bytes.extend(frame(0x01, &[b'x'; 600]));
        let (out, tripped) = pass(vec![bytes], 1024).await;
        assert_eq!(out.len(), 1);
        assert_eq!(tripped, None);
        let mut bytes = frame(0x01, &[b'x'; 600]);
        bytes.extend(frame(0x00, &[b'x'; 400]));
        let (_, tripped) = pass(vec![bytes, header_of(0x80, 25)], 1024).await;
        assert_eq!(tripped, Some(Trip::OversizedMessage(1025)));
    }

    /// A limit raised by the guard's owner holds from the next frame.
    #[actix_rt::test]
    async fn a_raised_limit_holds_from_the_next_frame() {
        let limit: Limit = Rc::new(Cell::new(10));
        let mut g = FrameGuard::with_limit(
            futures_util::stream::empty::<Result<Bytes, PayloadError>>(),
            Rc::clone(&limit),
            Tripped::default(),
        );
        assert_eq!(g.follow(&frame(0x81, b"0123456789")), None);
        limit.set(100);
        assert_eq!(g.follow(&frame(0x81, &[b'x'; 100])), None);
        assert_eq!(g.follow(&header(101)), Some(Trip::Oversized(101)));
    }

    /// Characters split across chunks, at every cut, are read whole: valid text never trips.
    #[actix_rt::test]
    async fn characters_split_across_chunks_are_read_whole() {
        let text = "a€𝄞é—\u{10FFFF}z".repeat(3);
        let bytes = frame(0x81, text.as_bytes());
        for cut in 1..bytes.len() {
            let chunks = vec![bytes[..cut].to_vec(), bytes[cut..].to_vec()];
            let (_, tripped) = pass(chunks, 1024).await;
            assert_eq!(tripped, None, "cut at {cut}");
        }
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

        /// What feeding `bytes` cut at `cuts` finds first, and the oversized trip if any.
        fn follow_all(
            g: &mut FrameGuard<futures_util::stream::Empty<Result<Bytes, PayloadError>>>,
            bytes: &[u8],
            cuts: &[usize],
        ) -> Option<Trip> {
            let mut first = None;
            for chunk in chunks(bytes, cuts) {
                match g.follow(&chunk) {
                    Some(oversized @ (Trip::Oversized(_) | Trip::OversizedMessage(_))) => {
                        return Some(oversized)
                    }
                    found => first = first.or(found),
                }
            }
            first
        }

        proptest! {
            /// Any bytes, cut anywhere: the guard never panics, and once it trips for size it
            /// reports a length over the limit.
            #[test]
            fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048), cuts in proptest::collection::vec(any::<usize>(), 0..16), limit in 0usize..4096) {
                let mut g = guard(limit);
                if let Some(Trip::Oversized(announced)) = follow_all(&mut g, &bytes, &cuts) {
                    prop_assert!(announced > limit as u64);
                }
            }

            /// Frames within the limit, cut anywhere, never trip it; one frame over it trips it
            /// at its header, announcing its length, whatever came before.
            #[test]
            fn only_a_frame_over_the_limit_trips(lens in proptest::collection::vec(0u64..70_000, 1..6), over in proptest::option::of(70_001u64..u64::MAX / 2), cuts in proptest::collection::vec(any::<usize>(), 0..16)) {
                let limit = 70_000usize;
                let mut bytes = Vec::new();
                for len in &lens {
                    bytes.extend(frame(0x81, &vec![b'x'; *len as usize]));
                }
                if let Some(len) = over {
                    bytes.extend(header(len));
                }
                let mut g = guard(limit);
                prop_assert_eq!(follow_all(&mut g, &bytes, &cuts), over.map(Trip::Oversized));
            }

            /// A whole text frame of any bytes, cut anywhere, is marked exactly when its
            /// payload is not UTF-8 — as the decoder judges it.
            #[test]
            fn a_text_frame_is_marked_exactly_when_not_utf8(payload in proptest::collection::vec(prop_oneof![any::<u8>(), 0x20u8..0x7f, 0x80u8..0xc0], 0..600), cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
                let mut g = guard(1 << 20);
                let mut bytes = frame(0x81, &payload);
                bytes.extend(frame(0x81, b"after"));
                let expected = std::str::from_utf8(&payload).is_err().then_some(Trip::InvalidUtf8);
                prop_assert_eq!(follow_all(&mut g, &bytes, &cuts), expected);
            }

            /// Valid text, cut anywhere, never trips.
            #[test]
            fn valid_text_never_trips(text in ".{0,300}", cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
                let mut g = guard(1 << 20);
                prop_assert_eq!(follow_all(&mut g, &frame(0x81, text.as_bytes()), &cuts), None);
            }
        }
    }
}
