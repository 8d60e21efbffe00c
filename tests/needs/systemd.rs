//! The systemd unit verified by `systemd-analyze`, which not every machine has.

use crate::parts::Need;
use pretty_assertions::assert_eq;
use std::process::Command;

/// The unit's test: it needs `systemd-analyze`.
pub fn register(suites: &mut crate::Suites, need: &Need) {
    suites.add(
        "systemd::systemd_analyze_verifies_the_unit",
        need,
        systemd_analyze_verifies_the_unit,
    );
}

/// Whether `systemd-analyze` runs here; why not when it does not.
pub fn missing() -> Option<String> {
    let runs = Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    (!runs).then(|| "no systemd-analyze (apt-get install systemd)".to_owned())
}

/// `systemd-analyze verify` finds nothing to report in the unit (its `ExecStart` pointed at the
/// binary under test, which is not installed here).
fn systemd_analyze_verifies_the_unit() {
    let dir = tempfile::TempDir::new().unwrap();
    let unit = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/rummy.service"),
    )
    .unwrap()
    .replace("/usr/local/bin/rummy", env!("CARGO_BIN_EXE_rummy"));
    let path = dir.path().join("rummy.service");
    std::fs::write(&path, unit).unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned()
        ),
        (Some(0), String::new())
    );
}
