//! The scheme registry: what each scheme is for, who may write it, where it lives, and whether the model sees it.
//!
//! This list is the one source of truth: [`write_registry`] writes it into the `schemes` table at
//! start-up so SQL joins agree with it, and permission checks read it directly.

use crate::db::Db;
use crate::entry::{Category, ScopeKind, Writer};
use crate::schema::schemes;
use crate::StoreError;
use diesel::prelude::*;
use diesel::upsert::excluded;

/// One scheme's registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemeSpec {
    /// The scheme name (`known`); `file` stands for bare project paths.
    pub name: &'static str,
    /// Whether entries of this scheme can appear in the model's context.
    pub model_visible: bool,
    /// Where the entries render.
    pub category: Category,
    /// Which scope new entries take.
    pub default_scope: ScopeKind,
    /// The lowest writer tier allowed to write; every higher tier may too.
    pub lowest_writer: Writer,
}

const fn spec(
    name: &'static str,
    model_visible: bool,
    category: Category,
    default_scope: ScopeKind,
    lowest_writer: Writer,
) -> SchemeSpec {
    SchemeSpec {
        name,
        model_visible,
        category,
        default_scope,
        lowest_writer,
    }
}

use Category::*;
use ScopeKind::{Global, Project, Run};
use Writer::{Client, Model, Plugin, System};

/// Every scheme the server knows.
pub const SCHEMES: &[SchemeSpec] = &[
    spec("instructions", false, Audit, Run, System),
    spec("system", false, Audit, Run, System),
    spec("user", false, Audit, Run, System),
    spec("assistant", false, Audit, Run, System),
    spec("reasoning", false, Audit, Run, System),
    spec("model", false, Audit, Run, System),
    spec("content", false, Audit, Run, System),
    spec("prompt", true, Prompt, Run, Plugin),
    spec("run", false, Logging, Run, Client),
    spec("file", true, Data, Project, Model),
    spec("known", true, Data, Run, Model),
    spec("unknown", true, Unknown, Run, Model),
    spec("skill", true, Data, Global, Plugin),
    spec("get", true, Logging, Run, Model),
    spec("set", true, Logging, Run, Model),
    spec("rm", true, Logging, Run, Model),
    spec("cp", true, Logging, Run, Model),
    spec("mv", true, Logging, Run, Model),
    spec("sh", true, Logging, Run, Model),
    spec("env", true, Logging, Run, Model),
    spec("ask_user", true, Logging, Run, Model),
    spec("call", true, Logging, Run, Model),
    spec("search", true, Logging, Run, Model),
    spec("update", true, Logging, Run, Model),
    spec("think", false, Logging, Run, Model),
    spec("error", true, Logging, Run, Plugin),
    spec("budget", true, Logging, Run, Plugin),
    // The run's session state (`session://state`), kept by the sidecar between loops and shown
    // apart from the knowns, first in the system message (`turn::assemble`).
    spec("session", true, Data, Run, Plugin),
    spec("summary", true, Logging, Run, Plugin),
    spec("http", true, Data, Run, Model),
    spec("https", true, Data, Run, Model),
    // The project's durable memory and the history of its loops: no run holds a view of them
    // (a write of one must not make the project's runs read their context again); a loop's
    // first turn recalls what is relevant into its own `recall://<loop>` (`store::memory`).
    spec("memory", true, Data, Project, Model),
    spec("history", true, Logging, Project, Plugin),
    spec("recall", true, Logging, Run, Plugin),
];

/// Looks up a scheme by name; `None` is for bare file paths (`file`).
pub fn lookup(scheme: Option<&str>) -> Option<&'static SchemeSpec> {
    let name = scheme.unwrap_or("file");
    SCHEMES.iter().find(|s| s.name == name)
}

impl SchemeSpec {
    /// The writer tiers allowed to write, as stored in `schemes.writable_by`.
    pub fn writable_by(&self) -> Vec<&'static str> {
        [
            Writer::System,
            Writer::Plugin,
            Writer::Client,
            Writer::Model,
        ]
        .into_iter()
        .filter(|w| *w >= self.lowest_writer)
        .map(Writer::as_str)
        .collect()
    }

    /// Whether `writer` may write entries of this scheme.
    pub fn admits(&self, writer: Writer) -> bool {
        writer >= self.lowest_writer
    }
}

/// Upserts every registered scheme.
pub fn write_registry(conn: &mut Db) -> Result<(), StoreError> {
    for s in SCHEMES {
        let writable_by = serde_json::to_string(&s.writable_by())?;
        crate::on_backend!(conn, c => diesel::insert_into(schemes::table)
            .values((
                schemes::name.eq(s.name),
                schemes::model_visible.eq(s.model_visible),
                schemes::category.eq(s.category.as_str()),
                schemes::default_scope.eq(s.default_scope.as_str()),
                schemes::writable_by.eq(&writable_by),
            ))
            .on_conflict(schemes::name)
            .do_update()
            .set((
                schemes::model_visible.eq(excluded(schemes::model_visible)),
                schemes::category.eq(excluded(schemes::category)),
                schemes::default_scope.eq(excluded(schemes::default_scope)),
                schemes::writable_by.eq(excluded(schemes::writable_by)),
            ))
            .execute(c))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Audit schemes are the server's alone and invisible to the model.
    #[test]
    fn audit_schemes_are_system_only() {
        for s in SCHEMES.iter().filter(|s| s.category == Category::Audit) {
            assert!(!s.model_visible, "{}", s.name);
            assert_eq!(s.writable_by(), vec!["system"], "{}", s.name);
        }
    }

    /// The history filter names exactly the audit schemes and `run`.
    #[test]
    fn history_leaves_out_the_audit_schemes_and_run() {
        let mut expected: Vec<_> = SCHEMES
            .iter()
            .filter(|s| s.category == Category::Audit)
            .map(|s| s.name)
            .chain(["run"])
            .collect();
        let mut listed = crate::entries::NOT_HISTORY.to_vec();
        expected.sort_unstable();
        listed.sort_unstable();
        assert_eq!(listed, expected);
    }

    /// A scheme open to the model admits every tier; names are unique.
    #[test]
    fn tiers_are_a_hierarchy() {
        let known = lookup(Some("known")).map(SchemeSpec::writable_by);
        assert_eq!(known, Some(vec!["system", "plugin", "client", "model"]));
        let prompt = lookup(Some("prompt"));
        assert_eq!(prompt.map(|s| s.admits(Writer::Client)), Some(false));
        assert_eq!(lookup(None).map(|s| s.name), Some("file"));
        let mut names: Vec<_> = SCHEMES.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SCHEMES.len());
    }
}
