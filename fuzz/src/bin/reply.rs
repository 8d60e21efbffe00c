//! Fuzz target: the reply parser, every dialect (`rummy_fuzz::reply`); built with `cargo afl build`, see the crate doc.

fn main() {
    afl::fuzz!(|data: &[u8]| rummy_fuzz::reply(data));
}
