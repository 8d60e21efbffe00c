//! Fuzz target: hedberg patterns of every kind (`rummy_fuzz::patterns`); built with `cargo afl build`, see the crate doc.

fn main() {
    afl::fuzz!(|data: &[u8]| rummy_fuzz::patterns(data));
}
