//! The scripted model a newcomer tries rummy with: `rummy serve --demo-model` serves it to
//! `ask` and `act`, and `rummy demo --pause` never claims a check that did not pass.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;
use tempfile::TempDir;
use tokio::io::AsyncWriteExt;

/// What the scripted model answers any task but the demo's.
const OTHER_TASK: &str = "This is rummy's scripted demo model (rummy serve --demo-model)";

/// `rummy <args>` in `dir` with only `vars` (and `PATH`) in its environment, `stdin` typed to
/// it; its output, within 30 s.
async fn rummy(dir: &Path, args: &[&str], vars: &[(&str, &str)], stdin: &str) -> Output {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_rummy"))
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("NO_COLOR", "1")
        .envs(vars.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).await.unwrap();
    drop(input);
    tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("ends within 30 s")
        .unwrap()
}

/// `rummy serve --demo-model` on a free port over `home`, with no provider configured; killed
/// when dropped.
struct DemoServer {
    child: Child,
    url: String,
}

impl DemoServer {
    fn start(home: &Path) -> DemoServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rummy"))
            .args(["serve", "--demo-model"])
            .env_clear()
            .env("PORT", "0")
            .env("RUMMY_HOME", home)
            .env("HOME", home)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("rummy listening on ")
            .unwrap_or_else(|| panic!("no start-up line: {line:?}"))
            .to_owned();
        DemoServer { child, url }
    }
}

impl Drop for DemoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// With `--demo-model` and no provider configured, the server answers `rummy ask` and `rummy
/// act` in a project of one's own with the scripted model's line, and lists `demo` as its
/// model.
#[actix_rt::test]
async fn serve_with_the_demo_model_answers_ask_and_act() {
    let home = TempDir::new().unwrap();
    let project = TempDir::new().unwrap();
    std::fs::write(project.path().join("notes.txt"), "mine\n").unwrap();
    let server = DemoServer::start(home.path());
    let vars = [("RUMMY_URL", server.url.as_str())];

    let ask = rummy(
        project.path(),
        &["ask", "What does this project do?"],
        &vars,
        "",
    )
    .await;
    let act = rummy(project.path(), &["act", "Add a --version flag"], &vars, "").await;
    let models = rummy(project.path(), &["models"], &vars, "").await;

    for (what, out) in [("ask", &ask), ("act", &act), ("models", &models)] {
        assert_eq!(
            out.status.code(),
            Some(0),
            "{what}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for out in [&ask, &act] {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains(OTHER_TASK), "{stdout}");
        assert!(stdout.contains("✔ done · 1 turn"), "{stdout}");
    }
    let listed = String::from_utf8_lossy(&models.stdout);
    assert!(
        listed.contains("demo") && listed.contains("rummy-demo"),
        "{listed}"
    );
    assert_eq!(
        std::fs::read_to_string(project.path().join("notes.txt")).unwrap(),
        "mine\n"
    );
}

/// `rummy demo --pause` with the fix rejected: the check runs on the unfixed greeting (or
/// cannot run), and the run ends saying the fix is not confirmed — never "check.sh passes".
#[actix_rt::test]
async fn the_demo_with_its_fix_rejected_does_not_claim_the_check_passed() {
    let home = TempDir::new().unwrap();

    let out = rummy(home.path(), &["demo", "--pause"], &[], "n\ny\n").await;

    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let at = |text: &str| {
        stdout
            .find(text)
            .unwrap_or_else(|| panic!("no {text:?} in {stdout}"))
    };
    let order = [
        at("? edit greet.sh"),
        at("✗ rejected"),
        at("? sh $ sh check.sh"),
        at("so the fix is not confirmed."),
        at("✔ done · 4 turns"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{stdout}");
    assert!(!stdout.contains("check.sh passes"), "{stdout}");
    assert!(
        !stdout.contains("1 file changed"),
        "the rejected fix changed nothing: {stdout}"
    );
}
