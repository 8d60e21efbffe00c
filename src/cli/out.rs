//! Writing to the terminal: listings on stdout (ending quietly when the pipe closes) and
//! failures on stderr.

use super::session::Failure;
use serde_json::Value;
use std::io::Write;

/// Writes lines to stdout; a closed stdout (`| head`) ends the listing quietly.
pub fn print(text: &str) {
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{text}");
}

/// Writes a JSON value as one line on stdout.
pub fn print_json(value: &Value) {
    print(&value.to_string());
}

/// Prints a failure to stderr: `rummy: what` and its hint.
pub fn eprintln_failure(failure: &Failure) {
    let mut err = std::io::stderr();
    let _ = writeln!(err, "rummy: {}", failure.message);
    if let Some(hint) = &failure.hint {
        let _ = writeln!(err, "  {hint}");
    }
}
