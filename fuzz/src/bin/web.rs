//! Fuzz target: a web page's readable text and a `robots.txt` (`rummy_fuzz::web`); built with `cargo afl build`, see the crate doc.

fn main() {
    afl::fuzz!(|data: &[u8]| rummy_fuzz::web(data));
}
