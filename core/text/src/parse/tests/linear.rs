//! The parser's work is linear in the reply's size: replies of one repeated unit that once
//! made it rescan the rest of the reply per occurrence (an unclosed fence, an unterminated
//! comment, CDATA section or processing instruction) cost at most a few steps per byte, at
//! 64 KiB as at 4 MiB. Steps, not time: bytes looked at, by xmlparser and the parser's scans.

use crate::parse::{parse_reply, steps};

/// Steps per byte a reply may cost.
const PER_BYTE: u64 = 8;

/// The units, each repeated to fill a reply.
const UNITS: [&str; 7] = [
    "```get",
    "\n```get",
    "<![CDATA[",
    "<!--",
    "<?x ",
    "`` `",
    "<get path=\"",
];

/// `unit` repeated to `bytes` (rounded down to whole units).
fn reply_of(unit: &str, bytes: usize) -> String {
    unit.repeat(bytes / unit.len())
}

/// Each unit's reply costs at most [`PER_BYTE`] steps per byte, at 64 KiB and at 4 MiB.
#[test]
fn parsing_is_linear_in_the_replys_size() {
    let mut over = Vec::new();
    for unit in UNITS {
        for bytes in [64 * 1024, 4 * 1024 * 1024] {
            let text = reply_of(unit, bytes);
            steps::take();
            let _ = parse_reply(&text, 15);
            let taken = steps::take();
            if taken > PER_BYTE * text.len() as u64 {
                over.push(format!(
                    "{unit:?} × {}: {taken} steps",
                    text.len() / unit.len()
                ));
            }
        }
    }
    assert_eq!(over, Vec::<String>::new());
}

/// The count sees real work: a reply with one long text costs at least a step per byte.
#[test]
fn the_step_count_sees_the_work() {
    let text = "plain prose without any markup at all. ".repeat(1000);
    steps::take();
    let _ = parse_reply(&text, 15);
    assert!(steps::take() >= text.len() as u64);
}
