//! Fuzz target: SSE parsing and the streamed answer it feeds (`rummy_fuzz::sse`); built with `cargo afl build`, see the crate doc.

fn main() {
    afl::fuzz!(|data: &[u8]| rummy_fuzz::sse(data));
}
