//! The disk phase of a resolution: checking the files against what the model saw, then writing and removing them — no connection, so it never runs on the store's writer.

use super::{
    max_file_bytes, Applied, Decision, DiskChange, Effect, Proposal, Proposed, Resolution, Verdict,
};
use crate::files::root::{Root, RootError};
use crate::files::scan::{classify, FileRead};
use rummy_text::path::{normalize, scheme_of};
use serde_json::Value;
use std::path::Path;

/// Carries out `decision` on `proposal`: an acceptance applies it on disk under `root` (the
/// project root); a reject or an error touches nothing.
pub fn apply(proposal: &Proposal, decision: Decision, root: &Path) -> Resolution {
    match decision {
        Decision::Reject(reason) => Resolution::Rejected(reason),
        Decision::Error(output) => Resolution::Errored(output),
        Decision::Accept(output) => {
            let mut effects = Vec::new();
            let verdict = match accept(proposal, root, &mut effects) {
                Ok(()) => Verdict::Done,
                Err(verdict) => verdict,
            };
            Resolution::Accepted {
                output,
                applied: Applied { verdict, effects },
            }
        }
    }
}

/// Applies an accepted proposal's file changes, noting each in `effects` as it happens.
fn accept(proposal: &Proposal, root: &Path, effects: &mut Vec<Effect>) -> Result<(), Verdict> {
    if let Some(path) = &proposal.readonly {
        return Err(Verdict::Readonly(path.clone()));
    }
    let kind = proposal
        .kind
        .as_ref()
        .map_err(|e| Verdict::Failed(e.clone()))?;
    match kind {
        Proposed::Edit { .. } | Proposed::Cp { .. } | Proposed::Mv { .. } | Proposed::Rm { .. } => {
        }
        // Nothing on disk: the record phase opens the channels or keeps the answer.
        Proposed::Sh { .. }
        | Proposed::Env { .. }
        | Proposed::AskUser { .. }
        | Proposed::Call { .. }
        | Proposed::Fetch { .. } => return Ok(()),
    }
    let root = Root::open(root).map_err(verdict)?;
    unchanged_on_disk(&root, proposal, kind, effects)?;
    match kind {
        Proposed::Edit { path, content } => write(&root, path, content, effects),
        Proposed::Cp { to, content, .. } => write(&root, to, content, effects),
        Proposed::Mv { from, to, content } => {
            write(&root, to, content, effects)?;
            // An entry moved into a file leaves the run in the record phase.
            if scheme_of(from).is_none() {
                remove(&root, from, effects)?;
            }
            Ok(())
        }
        Proposed::Rm { paths } => paths
            .iter()
            .try_for_each(|path| remove(&root, path, effects)),
        Proposed::Sh { .. }
        | Proposed::Env { .. }
        | Proposed::AskUser { .. }
        | Proposed::Call { .. }
        | Proposed::Fetch { .. } => Ok(()),
    }
}

/// Refuses the proposal when a file it writes, removes or copies is no longer what the model saw
/// (`bases`); the refused file's entry then takes the disk's content (or leaves the project when
/// the file is gone). A file that already holds the proposed content passes. Proposals recorded
/// without `bases` (before they existed) are not checked.
fn unchanged_on_disk(
    root: &Root,
    proposal: &Proposal,
    kind: &Proposed,
    effects: &mut Vec<Effect>,
) -> Result<(), Verdict> {
    let Some(bases) = proposal.attrs.get("bases").and_then(Value::as_object) else {
        return Ok(());
    };
    let written = kind.written();
    let proposed = match kind {
        Proposed::Edit { content, .. }
        | Proposed::Cp { content, .. }
        | Proposed::Mv { content, .. } => Some(content.as_str()),
        Proposed::Rm { .. }
        | Proposed::Sh { .. }
        | Proposed::Env { .. }
        | Proposed::AskUser { .. }
        | Proposed::Call { .. }
        | Proposed::Fetch { .. } => None,
    };
    for (path, base) in bases {
        // No entry is larger than a scan takes, so the capped read tells every difference.
        let disk = root.read(path, max_file_bytes()).map_err(verdict)?;
        let applied = written == Some(path.as_str())
            && disk.is_some()
            && disk.as_deref() == proposed.map(str::as_bytes);
        let change = match (disk, base.as_str()) {
            (None, None) => None,
            (Some(bytes), Some(hash)) if rummy_store::entries::hex_sha256(&bytes) == hash => None,
            _ if applied => None,
            // The model saw no file here: what is there now stays out of its context (it may
            // be a file the scan keeps out, such as a hidden `.env`).
            (Some(_), None) => Some(DiskChange::Appeared),
            (None, Some(_)) => {
                effects.push(Effect::Forget(path.clone()));
                Some(DiskChange::Removed)
            }
            (Some(bytes), Some(_)) => {
                // Text a scan would take reaches the model; the next scan settles any other.
                if let FileRead::Text(text) = classify(bytes, max_file_bytes()) {
                    effects.push(Effect::Refresh(path.clone(), text));
                }
                Some(DiskChange::Changed)
            }
        };
        if let Some(change) = change {
            return Err(Verdict::Conflict(path.clone(), change));
        }
    }
    Ok(())
}

fn write(root: &Root, path: &str, content: &str, effects: &mut Vec<Effect>) -> Result<(), Verdict> {
    let written = root.write(path, content.as_bytes()).map_err(verdict)?;
    effects.push(Effect::Wrote {
        // The write normalised it already.
        path: normalize(path).unwrap_or_else(|_| path.to_owned()),
        content: content.to_owned(),
        created: written.created,
    });
    Ok(())
}

fn remove(root: &Root, path: &str, effects: &mut Vec<Effect>) -> Result<(), Verdict> {
    root.remove(path).map_err(verdict)?;
    effects.push(Effect::Forget(path.to_owned()));
    Ok(())
}

/// A path refused (outside the root, not a regular file) is 403; a disk that failed is 500.
fn verdict(e: RootError) -> Verdict {
    if e.is_refusal() {
        Verdict::Refused(e.to_string())
    } else {
        Verdict::Failed(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use std::os::unix::fs::symlink;
    use tempfile::TempDir;

    fn proposal(kind: &str, attrs: Value) -> Proposal {
        Proposal {
            path: format!("{kind}://1"),
            tool: rummy_text::parse::ToolName::from_scheme(kind)
                .unwrap_or(rummy_text::parse::ToolName::Set),
            kind: Proposed::read(&attrs),
            attrs,
            readonly: None,
        }
    }

    fn accepted(applied: Applied) -> Resolution {
        Resolution::Accepted {
            output: None,
            applied,
        }
    }

    fn hash(text: &str) -> String {
        rummy_store::entries::hex_sha256(text)
    }

    /// The hostile-disk probe: a symlink planted at the old temporary name does not redirect an
    /// accepted edit; the file is written and the outside file is untouched.
    #[test]
    fn an_accepted_edit_ignores_a_planted_temporary_symlink() {
        let (project, outside) = (TempDir::new().unwrap(), TempDir::new().unwrap());
        std::fs::write(project.path().join("b.txt"), "old\n").unwrap();
        std::fs::write(outside.path().join("victim.txt"), "victim\n").unwrap();
        symlink(
            outside.path().join("victim.txt"),
            project.path().join(".b.txt.rummy-tmp"),
        )
        .unwrap();
        let edit = proposal(
            "edit",
            json!({ "kind": "edit", "path": "b.txt", "content": "new\n", "bases": { "b.txt": hash("old\n") } }),
        );

        let resolution = apply(&edit, Decision::Accept(None), project.path());

        assert_eq!(
            resolution,
            accepted(Applied {
                verdict: Verdict::Done,
                effects: vec![Effect::Wrote {
                    path: "b.txt".to_owned(),
                    content: "new\n".to_owned(),
                    created: false
                }],
            })
        );
        assert_eq!(
            (
                std::fs::read_to_string(project.path().join("b.txt")).unwrap(),
                std::fs::read_to_string(outside.path().join("victim.txt")).unwrap()
            ),
            ("new\n".to_owned(), "victim\n".to_owned())
        );
    }

    /// A FIFO where a new file would go is refused 403 at the base check, without blocking and
    /// without anything written.
    #[test]
    fn a_fifo_target_is_refused() {
        let project = TempDir::new().unwrap();
        let fd = rustix::fs::open(
            project.path(),
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        rustix::fs::mknodat(
            &fd,
            "pipe",
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let create = proposal(
            "edit",
            json!({ "kind": "edit", "path": "pipe", "content": "x", "bases": { "pipe": null } }),
        );

        assert_eq!(
            apply(&create, Decision::Accept(None), project.path()),
            accepted(Applied {
                verdict: Verdict::Refused(
                    "refused: pipe is not a regular file (it is a FIFO)".to_owned()
                ),
                effects: vec![],
            })
        );
    }

    /// An rm through a symlinked directory is refused 403 and removes nothing outside; a
    /// readonly file is refused before the disk is looked at; rejects touch nothing.
    #[test]
    fn refusals_touch_nothing() {
        let (project, outside) = (TempDir::new().unwrap(), TempDir::new().unwrap());
        std::fs::write(outside.path().join("victim.txt"), "victim\n").unwrap();
        symlink(outside.path(), project.path().join("out")).unwrap();
        let rm = proposal("rm", json!({ "kind": "rm", "paths": ["out/victim.txt"] }));
        let mut readonly = proposal("rm", json!({ "kind": "rm", "paths": ["out/victim.txt"] }));
        readonly.readonly = Some("out/victim.txt".to_owned());

        assert_eq!(
            [
                apply(&rm, Decision::Accept(None), project.path()),
                apply(&readonly, Decision::Accept(None), project.path()),
                apply(&rm, Decision::Reject(Some("no".to_owned())), project.path()),
            ],
            [
                accepted(Applied {
                    verdict: Verdict::Refused(
                        "refused: out/victim.txt escapes the project root (out is a symlink)"
                            .to_owned()
                    ),
                    effects: vec![],
                }),
                accepted(Applied {
                    verdict: Verdict::Readonly("out/victim.txt".to_owned()),
                    effects: vec![],
                }),
                Resolution::Rejected(Some("no".to_owned())),
            ]
        );
        assert_eq!(
            std::fs::read_to_string(outside.path().join("victim.txt")).unwrap(),
            "victim\n"
        );
    }

    /// A file changed since the model read it refuses the proposal, and its entry is to take
    /// the disk's text; a removed one is to be forgotten.
    #[test]
    fn conflicts_carry_what_the_disk_holds() {
        let project = TempDir::new().unwrap();
        std::fs::write(project.path().join("a.txt"), "theirs\n").unwrap();
        let edit = proposal(
            "edit",
            json!({ "kind": "edit", "path": "a.txt", "content": "mine\n", "bases": { "a.txt": hash("seen\n") } }),
        );
        let gone = proposal(
            "rm",
            json!({ "kind": "rm", "paths": ["b.txt"], "bases": { "b.txt": hash("seen\n") } }),
        );

        assert_eq!(
            [
                apply(&edit, Decision::Accept(None), project.path()),
                apply(&gone, Decision::Accept(None), project.path()),
            ],
            [
                accepted(Applied {
                    verdict: Verdict::Conflict("a.txt".to_owned(), DiskChange::Changed),
                    effects: vec![Effect::Refresh("a.txt".to_owned(), "theirs\n".to_owned())],
                }),
                accepted(Applied {
                    verdict: Verdict::Conflict("b.txt".to_owned(), DiskChange::Removed),
                    effects: vec![Effect::Forget("b.txt".to_owned())],
                }),
            ]
        );
        assert_eq!(
            std::fs::read_to_string(project.path().join("a.txt")).unwrap(),
            "theirs\n"
        );
    }
}
