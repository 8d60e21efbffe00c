//! Deterministic fuzzing: random tag soup never panics and yields only known tools.

use pretty_assertions::assert_eq;

use crate::parse::parse_reply;

/// A tiny xorshift generator, so the fuzz inputs are the same on every run.
struct XorShift(u64);

impl XorShift {
    /// The next pseudo-random number.
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `bound`.
    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }
}

/// Fragments the fuzz replies are built from: tag pieces, quotes, entities, code markers.
const FRAGMENTS: &[&str] = &[
    "<",
    ">",
    "/>",
    "</",
    "</set",
    "</set>",
    "<set",
    "<set path=\"",
    "<get path=\"",
    "<GET ",
    "<update status=\"200\">",
    "</update>",
    "<sh>",
    "</sh",
    "<div>",
    "</div>",
    "<thinking>",
    "\"",
    "'",
    "=",
    " ",
    "\n",
    "&amp;",
    "&#x41;",
    "&",
    ";",
    "`",
    "``",
    "```",
    "```xml\n",
    "```rust\n",
    "<![CDATA[",
    "]]>",
    "<!--",
    "-->",
    "<?",
    "?>",
    "a",
    "b.js",
    "preview",
    "é",
    "日本",
    "\u{1}",
    "\r\n",
    "path=",
    "<rm/>",
    "<ask_user>",
];

/// Two thousand pseudo-random replies never panic, and every command is a known tool within the cap.
#[test]
fn fuzz_never_panics() {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    for _ in 0..2_000 {
        let length = rng.below(60);
        let reply: String = (0..length)
            .map(|_| FRAGMENTS[rng.below(FRAGMENTS.len())])
            .collect();
        let cap = rng.below(8);
        let parsed = parse_reply(&reply, cap);
        assert!(parsed.commands.len() <= cap, "{reply:?}");
        assert_eq!(parsed.unparsed.trim(), parsed.unparsed, "{reply:?}");
    }
}
