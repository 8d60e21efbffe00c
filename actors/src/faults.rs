//! Fault injection for the tests that show a failing actor does not take its run or the server
//! down. Compiled only with the `fault-injection` feature, which the workspace's own tests turn
//! on (the root crate's dev-dependency); a server built for use has none of it, and
//! [`turn_begun`] is then empty.

#[cfg(feature = "fault-injection")]
use std::sync::Mutex;

/// The markers whose loops' turns panic (see [`panic_turns_of`]).
#[cfg(feature = "fault-injection")]
static TURN_PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Makes every turn of a loop whose prompt holds `marker` panic once it has begun (its row and
/// the prompt written), as a bug in the pipeline would. A test picks a marker of its own, so
/// other tests in the same process are untouched.
#[cfg(feature = "fault-injection")]
pub fn panic_turns_of(marker: &str) {
    if let Ok(mut markers) = TURN_PANICS.lock() {
        markers.push(marker.to_owned());
    }
}

/// Called by a turn once it has begun: panics when [`panic_turns_of`] named a marker the
/// loop's `prompt` holds.
pub(crate) fn turn_begun(prompt: &str) {
    #[cfg(feature = "fault-injection")]
    {
        let marked = TURN_PANICS
            .lock()
            .is_ok_and(|markers| markers.iter().any(|m| prompt.contains(m.as_str())));
        if marked {
            panic!("fault injected: this loop's turns panic once begun");
        }
    }
    #[cfg(not(feature = "fault-injection"))]
    let _ = prompt;
}
