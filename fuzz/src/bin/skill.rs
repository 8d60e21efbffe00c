//! Fuzz target: skill frontmatter (`rummy_fuzz::skill`); built with `cargo afl build`, see the crate doc.

fn main() {
    afl::fuzz!(|data: &[u8]| rummy_fuzz::skill(data));
}
