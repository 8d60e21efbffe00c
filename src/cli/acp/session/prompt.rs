//! A prompt's content blocks as rummy's prompt: text, the project files it mentions (brought
//! into the run's context), a resource outside the project quoted; an image or audio refused.

use crate::cli::acp::wire::{self as acp, code, Error as AcpError};
use std::path::Path;

/// The prompt's text, and the project files its resources name (relative to `root`): a
/// resource outside the project is quoted into the text; an image or audio is refused.
pub(super) fn read_prompt(
    blocks: &[acp::ContentBlock],
    root: &str,
) -> Result<(String, Vec<String>), AcpError> {
    let mut text = String::new();
    let mut files = Vec::new();
    let mut push = |s: &str| {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(s);
    };
    for block in blocks {
        match block {
            acp::ContentBlock::Text { text } => push(text),
            acp::ContentBlock::ResourceLink { uri } => match project_file(uri, root) {
                Some(file) => {
                    push(&format!("@{file}"));
                    files.push(file);
                }
                None => push(&format!("@{uri}")),
            },
            acp::ContentBlock::Resource { resource } => {
                match (project_file(&resource.uri, root), &resource.text) {
                    (Some(file), _) => {
                        push(&format!("@{file}"));
                        files.push(file);
                    }
                    (None, Some(text)) => push(&format!("{}:\n```\n{text}\n```", resource.uri)),
                    (None, None) => {
                        return Err(AcpError::new(
                            code::INVALID_PARAMS,
                            "rummy takes text only: a binary resource outside the project cannot \
                             be part of a prompt",
                        ))
                    }
                }
            }
            acp::ContentBlock::Image {} => {
                return Err(AcpError::new(
                    code::INVALID_PARAMS,
                    "rummy does not support images: describe what the image shows in words, or \
                     mention the file it comes from",
                ))
            }
            _ => {
                return Err(AcpError::new(
                    code::INVALID_PARAMS,
                    "rummy takes text, files and resource links only: this prompt holds another \
                     kind of content",
                ))
            }
        }
    }
    if text.trim().is_empty() {
        return Err(AcpError::new(
            code::INVALID_PARAMS,
            "the prompt is empty: say what to do",
        ));
    }
    Ok((text, files))
}

/// The project file a `file://` URI names, relative to `root`; `None` outside the project.
fn project_file(uri: &str, root: &str) -> Option<String> {
    let path = uri.strip_prefix("file://")?;
    let path = rummy_text::path::decode_component(path);
    let relative = Path::new(&path).strip_prefix(root).ok()?;
    let relative = relative.to_str()?.to_owned();
    (!relative.is_empty()).then_some(relative)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn text(t: &str) -> acp::ContentBlock {
        acp::ContentBlock::text(t)
    }

    #[test]
    fn mentioned_project_files_are_promoted_and_named_in_the_prompt() {
        let blocks = vec![
            text("Fix the bug in"),
            acp::ContentBlock::ResourceLink {
                uri: "file:///p/src/a%20b.rs".into(),
            },
            acp::ContentBlock::ResourceLink {
                uri: "file:///elsewhere/x".into(),
            },
        ];
        assert_eq!(
            read_prompt(&blocks, "/p").unwrap(),
            (
                "Fix the bug in\n@src/a b.rs\n@file:///elsewhere/x".to_owned(),
                vec!["src/a b.rs".to_owned()]
            )
        );
    }

    #[test]
    fn an_image_is_refused_with_what_to_do() {
        let blocks = vec![acp::ContentBlock::Image {}];
        let refused = read_prompt(&blocks, "/p").unwrap_err();
        assert_eq!(refused.code, code::INVALID_PARAMS);
        assert!(refused.message.starts_with("rummy does not support images"));
    }

    #[test]
    fn an_empty_prompt_is_refused() {
        assert_eq!(
            read_prompt(&[text("  ")], "/p").unwrap_err().message,
            "the prompt is empty: say what to do"
        );
    }
}
