//! Fuzz target: the edit formats, read and applied (`rummy_fuzz::edits`); built with `cargo afl build`, see the crate doc.

fn main() {
    afl::fuzz!(|data: &[u8]| rummy_fuzz::edits(data));
}
