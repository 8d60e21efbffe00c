//! Fuzz target: the XPath and JSONPath body filters (`rummy_fuzz::filters`); built with `cargo afl build`, see the crate doc.

fn main() {
    afl::fuzz!(|data: &[u8]| rummy_fuzz::filters(data));
}
