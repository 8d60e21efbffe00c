//! A long run's script, for the tests where earlier loops must leave a small context (the
//! history, summaries, the web page's summary): prompts and answers of about 1,200 characters
//! each, all different, and the sidecar model's name on the fake provider.

/// The sidecar model on the fake provider (`openai/side-model`, alias `side` where a test adds it).
pub const SIDE_MODEL: &str = "side-model";

/// The `n`th prompt: distinct words, about 1,200 characters.
pub fn prompt(n: usize) -> String {
    format!(
        "Question {n}: {}",
        format!("tell me about part {n} of the system. ").repeat(30)
    )
}

/// The `n`th answer: a concluding update of about 1,200 characters.
pub fn answer(n: usize) -> String {
    format!(
        "<update status=\"200\">Answer {n}: {}</update>",
        format!("part {n} does its job well. ").repeat(45)
    )
}
