//! Hedberg's tests: pattern tables, the filter limits, the eight formats, applying edits, replies the original server met, properties, SQL.

mod applying;
mod formats;
mod limits;
mod patterns;
mod props;
mod reference;

use super::{apply, parse_edit, Applied, EditAttrs};

/// No edit attributes: the body alone decides.
fn no_attrs() -> EditAttrs {
    EditAttrs::default()
}

/// Parses `body` and applies it to `text` at path `a.txt` with a token divisor of 4.
fn edit(text: &str, body: &str) -> Result<Applied, String> {
    apply("a.txt", text, &parse_edit(body, &no_attrs()), 4).map_err(|e| e.to_string())
}
