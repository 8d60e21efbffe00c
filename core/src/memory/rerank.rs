//! Re-ranking a loop's recall with the sidecar (`RUMMY_RECALL_RERANK`, off by default; a run's `recallRerank` attribute): the model keeps the lexical candidates that help with the prompt, in the order it judges best.
//!
//! The sidecar sees the prompt and the best lexical sections — twice as many as the block may
//! hold ([`POOL`]) — numbered, each cut to [`NOTE_CHARS`]; it answers a JSON array of the
//! numbers it keeps (`[]`: none helps, so nothing is injected). An answer that is not such an
//! array, or names a number it was not shown, is unreadable: the caller keeps the lexical
//! order, as when the call fails or times out.

use super::recall::Chosen;
use crate::sidecar::SideTask;
use crate::tools::strip_rationale;
use serde_json::Value;
use std::sync::LazyLock;

/// How many lexical candidates the sidecar is shown, per item the block may hold.
pub const POOL: usize = 2;

/// Characters of a candidate's text the sidecar reads.
pub const NOTE_CHARS: usize = 400;

/// The most tokens a ranking takes: a short array of numbers.
pub const MAX_TOKENS: u32 = 64;

static SYSTEM: LazyLock<String> = LazyLock::new(|| strip_rationale(include_str!("rerank.md")));

/// The side task that re-ranks `candidates` for `prompt`: it answers the kept candidates'
/// indexes (0-based, into `candidates`), best first.
pub fn task(prompt: &str, candidates: &[Chosen]) -> SideTask<Vec<usize>> {
    let mut input = format!("Prompt:\n{}\n\nNotes:", prompt.trim());
    for (n, c) in candidates.iter().enumerate() {
        let mut source = c.item.path.clone();
        if let Some(run) = &c.item.run {
            source.push_str(&format!(" (run {run})"));
        }
        if let Some(section) = &c.item.section {
            source.push_str(&format!(" — {section}"));
        }
        let text: String = c.content.chars().take(NOTE_CHARS).collect();
        input.push_str(&format!("\n\n[{}] {source}\n{text}", n + 1));
    }
    let shown = candidates.len();
    SideTask::new("rerank", SYSTEM.as_str(), input, move |text| {
        read(text, shown)
    })
    .with_max_tokens(MAX_TOKENS)
}

/// Reads a ranking of `shown` notes: the JSON array in the answer (code fences and words
/// around it are tolerated), each number once, every one from 1 to `shown`; answers 0-based
/// indexes.
pub fn read(text: &str, shown: usize) -> Result<Vec<usize>, String> {
    let start = text.find('[').ok_or("no JSON array in the answer")?;
    let end = text[start..]
        .find(']')
        .map(|e| start + e)
        .ok_or("an unclosed JSON array")?;
    let numbers: Vec<Value> =
        serde_json::from_str(&text[start..=end]).map_err(|e| format!("not a JSON array: {e}"))?;
    let mut kept = Vec::new();
    for n in numbers {
        let index = n
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| (1..=shown).contains(n))
            .ok_or_else(|| format!("{n} is not one of the notes 1 to {shown}"))?;
        if !kept.contains(&(index - 1)) {
            kept.push(index - 1);
        }
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use rummy_protocol::results::RecallItem;

    fn note(path: &str, run: Option<&str>, section: Option<&str>, content: &str) -> Chosen {
        Chosen {
            item: RecallItem {
                path: path.into(),
                source: "memory".into(),
                run: run.map(str::to_owned),
                section: section.map(str::to_owned),
                score: 1.0,
                matched: vec![],
            },
            content: content.into(),
        }
    }

    /// The task shows the prompt and the numbered notes with their sources, cut, and asks for
    /// a short answer; its instructions carry no rationale.
    #[test]
    fn the_task_numbers_the_notes() {
        let long = "x".repeat(NOTE_CHARS + 50);
        let task = task(
            " Which host? ",
            &[
                note("memory://deploy/host", None, None, "prod-3"),
                note("known://db", Some("b"), Some("Current state"), &long),
            ],
        );
        assert_eq!(task.name, "rerank");
        assert!(!task.system.contains("<!--") && task.system.ends_with("[] for none."));
        assert_eq!(
            task.input,
            format!(
                "Prompt:\nWhich host?\n\nNotes:\n\n[1] memory://deploy/host\nprod-3\n\n[2] known://db (run b) — Current state\n{}",
                "x".repeat(NOTE_CHARS)
            )
        );
        assert_eq!(task.max_tokens, Some(MAX_TOKENS));
    }

    /// A ranking is the array's numbers, each once, as indexes; anything else is unreadable.
    #[test]
    fn reading_a_ranking() {
        assert_eq!(read("[3, 1]", 3), Ok(vec![2, 0]));
        assert_eq!(read("```json\n[2, 2]\n```", 3), Ok(vec![1]));
        assert_eq!(read("Kept: []", 3), Ok(vec![]));
        assert_eq!(
            read("none", 3),
            Err("no JSON array in the answer".to_owned())
        );
        assert_eq!(
            read("[4]", 3),
            Err("4 is not one of the notes 1 to 3".to_owned())
        );
        assert_eq!(
            read("[\"1\"]", 3),
            Err("\"1\" is not one of the notes 1 to 3".to_owned())
        );
        assert!(read("[1,", 3).is_err());
    }
}
