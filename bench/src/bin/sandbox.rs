//! Starting a sandboxed command: `true` run through the helper the server uses (`rummy __sandbox
//! run`, every layer this machine allows), against a plain `sh -c true`; median of 20.
//! Needs the `rummy` binary built beside this one (`cargo build --release`).

use rummy_bench::{report, sample};
use rummy_sandbox::{Limits, Network, Spec};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};

fn main() -> ExitCode {
    let Some(helper) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("rummy")))
        .filter(|p| p.is_file())
    else {
        eprintln!("no rummy binary beside this bench: cargo build --release first");
        return ExitCode::FAILURE;
    };
    let Ok(root) = tempfile::TempDir::new() else {
        return ExitCode::FAILURE;
    };
    let root: PathBuf = root.path().canonicalize().unwrap_or_default();
    let spec = Spec {
        command: "true".to_owned(),
        cwd: root.clone(),
        env: vec![("PATH".to_owned(), "/usr/bin:/bin".to_owned())],
        read: Vec::new(),
        write: vec![root.clone()],
        hide: Vec::new(),
        tmp_bytes: 1 << 30,
        limits: Limits {
            memory_bytes: 2 << 30,
            pids: 512,
        },
        network: Network::Off,
        cgroups: Vec::new(),
        parent: std::process::id(),
        probe: false,
    };
    let Ok(text) = serde_json::to_vec(&spec) else {
        return ExitCode::FAILURE;
    };
    let mut failed = false;
    let sandboxed = sample(3, 20, || {
        let child = Command::new(&helper)
            .args([rummy_sandbox::HELPER_ARG, "run"])
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn();
        let Ok(mut child) = child else {
            failed = true;
            return;
        };
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(&text);
        }
        failed |= !child.wait().is_ok_and(|s| s.success());
    });
    let plain = sample(3, 20, || {
        let _ = Command::new("sh").args(["-c", "true"]).status();
    });
    if failed {
        eprintln!("the sandboxed command failed: this machine cannot make the sandbox");
        return ExitCode::FAILURE;
    }
    report("sandboxed `true` (helper, every layer)", &sandboxed, "—");
    report("plain `sh -c true`", &plain, "—");
    ExitCode::SUCCESS
}
