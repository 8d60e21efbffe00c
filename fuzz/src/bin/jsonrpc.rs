//! Fuzz target: JSON-RPC decoding (`rummy_fuzz::jsonrpc`); built with `cargo afl build`, see the crate doc.

fn main() {
    afl::fuzz!(|data: &[u8]| rummy_fuzz::jsonrpc(data));
}
