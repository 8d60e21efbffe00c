//! The layers of confinement a probe found on this machine, and the judgement the server makes
//! of them: commands run only when every required layer is there.

use serde::{Deserialize, Serialize};
use std::fmt;

/// One layer of confinement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum LayerName {
    /// A user namespace: what lets an unprivileged helper make the others.
    UserNamespace,
    /// Landlock: the file system beyond the command's own paths is out of reach (required).
    Landlock,
    /// A private root: only the allowed paths are mounted at all.
    MountNamespace,
    /// A PID namespace: the command sees only its own processes and all of them die with it
    /// (required).
    PidNamespace,
    /// `/proc` shows the command's own processes only, or is absent (required).
    Proc,
    /// A network namespace of its own while network is off (required).
    Network,
    /// Per-command memory and process limits (cgroup, or rlimits in its place).
    Limits,
}

impl LayerName {
    /// Whether commands may run without this layer only when an admin says so
    /// (`RUMMY_UNSANDBOXED_COMMANDS=1`).
    pub fn required(self) -> bool {
        REQUIRED.contains(&self)
    }

    /// Its name for people.
    pub fn label(self) -> &'static str {
        match self {
            LayerName::UserNamespace => "user namespace",
            LayerName::Landlock => "file system (Landlock)",
            LayerName::MountNamespace => "private root (mount namespace)",
            LayerName::PidNamespace => "processes (PID namespace)",
            LayerName::Proc => "/proc isolation",
            LayerName::Network => "network (own namespace)",
            LayerName::Limits => "limits",
        }
    }
}

/// What a probe found of one layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Layer {
    /// Which layer.
    pub name: LayerName,
    /// Whether it works here.
    pub ok: bool,
    /// What it is, or why it is missing.
    pub detail: String,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mark = if self.ok { "ok" } else { "MISSING" };
        write!(f, "{}: {mark} ({})", self.name.label(), self.detail)
    }
}

/// Every layer a probe looked at.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// In the order they are set up.
    pub layers: Vec<Layer>,
}

impl Report {
    /// Records a layer (replacing an earlier word on it).
    pub fn set(&mut self, name: LayerName, ok: bool, detail: impl Into<String>) {
        self.layers.retain(|l| l.name != name);
        self.layers.push(Layer {
            name,
            ok,
            detail: detail.into(),
        });
    }

    /// A report where every layer is missing for the same reason (the helper could not start).
    pub fn failed(reason: &str) -> Report {
        let mut report = Report::default();
        for name in [
            LayerName::UserNamespace,
            LayerName::Landlock,
            LayerName::MountNamespace,
            LayerName::PidNamespace,
            LayerName::Proc,
            LayerName::Network,
            LayerName::Limits,
        ] {
            report.set(name, false, reason);
        }
        report
    }

    /// The required layers that are missing (none missing: commands may run); a required layer
    /// the report does not mention counts as missing.
    pub fn missing(&self) -> Vec<Layer> {
        REQUIRED
            .iter()
            .map(|&name| match self.layers.iter().find(|l| l.name == name) {
                Some(layer) => layer.clone(),
                None => Layer {
                    name,
                    ok: false,
                    detail: "not probed".to_owned(),
                },
            })
            .filter(|l| !l.ok)
            .collect()
    }

    /// One line for a log or a refusal: the missing required layers with their reasons, the
    /// layers that share a reason named together (`a, b: why; c: why`).
    pub fn missing_line(&self) -> String {
        let mut groups: Vec<(Vec<&'static str>, String)> = Vec::new();
        for layer in self.missing() {
            match groups.iter_mut().find(|(_, why)| *why == layer.detail) {
                Some((names, _)) => names.push(layer.name.label()),
                None => groups.push((vec![layer.name.label()], layer.detail)),
            }
        }
        groups
            .iter()
            .map(|(names, why)| format!("{}: {why}", names.join(", ")))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The layers without which the server runs no command itself (unless told to).
pub const REQUIRED: [LayerName; 4] = [
    LayerName::Landlock,
    LayerName::PidNamespace,
    LayerName::Proc,
    LayerName::Network,
];

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn full() -> Report {
        let mut r = Report::default();
        r.set(LayerName::UserNamespace, true, "yes");
        r.set(LayerName::Landlock, true, "ABI 7");
        r.set(LayerName::MountNamespace, true, "yes");
        r.set(LayerName::PidNamespace, true, "yes");
        r.set(LayerName::Proc, true, "private");
        r.set(LayerName::Network, true, "own namespace");
        r.set(LayerName::Limits, false, "no cgroup");
        r
    }

    /// Limits and the mount namespace are not required; Landlock is.
    #[test]
    fn only_required_layers_count_as_missing() {
        let mut report = full();
        assert_eq!(report.missing_line(), "");
        report.set(LayerName::Landlock, false, "not in this kernel");
        assert_eq!(
            report.missing_line(),
            "file system (Landlock): not in this kernel"
        );
        report.set(LayerName::Network, false, "not in this kernel");
        report.set(LayerName::Proc, false, "no mount");
        assert_eq!(
            report.missing_line(),
            "file system (Landlock), network (own namespace): not in this kernel; /proc isolation: no mount"
        );
    }

    /// A helper that could not start leaves every required layer missing, with its reason.
    #[test]
    fn a_failed_probe_misses_every_required_layer() {
        let names: Vec<LayerName> = Report::failed("EPERM")
            .missing()
            .iter()
            .map(|l| l.name)
            .collect();
        assert_eq!(
            names,
            [
                LayerName::Landlock,
                LayerName::PidNamespace,
                LayerName::Proc,
                LayerName::Network
            ]
        );
    }

    /// A report silent on a required layer counts it missing.
    #[test]
    fn an_unreported_required_layer_is_missing() {
        let mut report = full();
        report.layers.retain(|l| l.name != LayerName::Proc);
        assert_eq!(report.missing().len(), 1);
        assert_eq!(report.missing()[0].name, LayerName::Proc);
    }
}
