//! Plumbing for the benchmarks that drive a real server: the fake provider in its own
//! process, the server's configuration, and CPU/RSS readings from `/proc`.

use rummy::config::{Config, OpenAiConfig, ProviderLimits};
use rummy_client::params::{HelloParams, RunAttributes, SetParams};
use rummy_client::{Client, ClientOptions};
use rummy_store::models::ModelSeed;
use rummy_testkit::{FakeProvider, Reply};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The flag that turns a bench binary into the fake-provider child.
pub const CHILD_FLAG: &str = "--fake-provider";

/// The model's reply on turn `turn` (1-based) of a `turns`-turn loop: a fact and a 102,
/// until the last turn concludes with 200.
pub fn reply_for_turn(turn: u32, turns: u32) -> String {
    let status = if turn >= turns { 200 } else { 102 };
    format!(
        "<set path=\"known://step_{turn}\">step {turn} noted</set>\n<update status=\"{status}\">step {turn} done</update>"
    )
}

/// Runs the fake provider in this (child) process when `args` ask for it; returns false otherwise.
///
/// The child (`<exe> --fake-provider <latency ms> <turns>`, as [`ProviderChild::spawn`] starts
/// it) answers every completion after the latency with [`reply_for_turn`] for loops of that many
/// turns, reading the turn from the request (one `<update` in `<performed>` per earlier turn of
/// the loop), prints its base URL, and serves until its stdin closes.
pub fn serve_fake_provider_if_child(args: &[String]) -> bool {
    if args.first().map(String::as_str) != Some(CHILD_FLAG) {
        return false;
    }
    let latency_ms: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(0);
    let turns: u32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(3);
    let Ok(provider) = FakeProvider::start() else {
        std::process::exit(1)
    };
    provider.set_responder(move |body| {
        let user = body["messages"][1]["content"].as_str().unwrap_or_default();
        let earlier = u32::try_from(user.matches("<update ").count()).unwrap_or(turns);
        Reply::content(reply_for_turn(earlier + 1, turns)).delay(Duration::from_millis(latency_ms))
    });
    println!("{}", provider.base_url());
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    true
}

/// The fake provider child process; it exits when this is dropped (its stdin closes).
pub struct ProviderChild {
    child: Child,
    /// Its base URL.
    pub base_url: String,
}

impl ProviderChild {
    /// Starts this executable again as the fake provider with `latency_ms` per reply, for loops
    /// of `turns` turns.
    pub fn spawn(latency_ms: u64, turns: u32) -> Result<ProviderChild, String> {
        // argv[0] when it is a path, so that the bench also runs under valgrind (whose
        // /proc/self/exe is the tool, not this program) for instruction counts.
        let exe = match std::env::args_os().next().map(PathBuf::from) {
            Some(path) if path.components().count() > 1 => path,
            _ => std::env::current_exe().map_err(|e| e.to_string())?,
        };
        let mut child = Command::new(exe)
            .args([CHILD_FLAG, &latency_ms.to_string(), &turns.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().ok_or("no stdout")?)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        Ok(ProviderChild {
            child,
            base_url: line.trim().to_owned(),
        })
    }

    /// The child's CPU time so far.
    pub fn cpu(&self) -> Duration {
        process_cpu(&self.child.id().to_string())
    }
}

impl Drop for ProviderChild {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// A server configuration with model `fast` on the fake provider, home in `home`, and the
/// provider's concurrency cap at `concurrency`.
pub fn config(home: &Path, base_url: &str, concurrency: usize) -> Config {
    let mut config = Config::with_home(home.to_path_buf());
    config.port = 0;
    config.providers.limits.insert(
        "openai".into(),
        ProviderLimits {
            concurrency,
            ..ProviderLimits::default()
        },
    );
    config.models = vec![ModelSeed {
        alias: "fast".into(),
        actual: "openai/fake".into(),
        context_length: Some(131_072),
        fallback: None,
    }];
    config.providers.openai = Some(OpenAiConfig {
        base_url: base_url.to_owned(),
        api_key: None,
    });
    config
}

/// Writes `files` small text files into `root` (the project a run sees as entries).
pub fn write_project(root: &Path, files: usize) -> Result<(), String> {
    for i in 0..files {
        let path = root.join(format!("file_{i:04}.txt"));
        std::fs::write(&path, format!("line {i}\n").repeat(20)).map_err(|e| e.to_string())?;
        // A project's files are mostly old; freshly written ones are re-read at every scan
        // until their modification time is safely in the past.
        let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_modified(an_hour_ago))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// CPU time (user + system) of process `pid` (`"self"` for this one), at clock-tick resolution.
pub fn process_cpu(pid: &str) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    // utime and stime are fields 14 and 15 of /proc/<pid>/stat (12 and 13 after the comm field).
    let ticks: u64 = fields
        .get(11..13)
        .map_or(0, |f| f.iter().filter_map(|v| v.parse::<u64>().ok()).sum());
    Duration::from_millis(ticks * 10)
}

/// CPU time this process has used (`CLOCK_PROCESS_CPUTIME_ID`): nanosecond-grained where
/// [`process_cpu`] counts 10 ms ticks.
pub fn own_cpu() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}

/// CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}

/// Runs a bench's client on a thread of its own (with its own actix system), so it neither
/// shares the server's arbiter thread nor counts as server CPU: `work` measures its thread
/// with [`thread_cpu`] and subtracts it from [`own_cpu`]. Resolves when `work` is done.
pub async fn on_client_thread<F, Fut, T>(work: F) -> Result<T, String>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<T, String>> + 'static,
    T: Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("bench-client".into())
        .spawn(move || {
            let _ = tx.send(actix_rt::System::new().block_on(work()));
        })
        .map_err(|e| e.to_string())?;
    rx.await
        .map_err(|_| "the client thread panicked".to_owned())?
}

/// Serves `config` in this process and runs `client` (given the server's WebSocket URL) on a
/// client thread of its own ([`on_client_thread`]); the server stops once the client is done.
pub fn serve_and_drive<F, Fut, T>(config: Config, client: F) -> Result<T, String>
where
    F: FnOnce(String) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<T, String>> + 'static,
    T: Send + 'static,
{
    actix_rt::System::new().block_on(async move {
        let server = rummy::serve(config, std::future::pending())
            .await
            .map_err(|e| e.to_string())?;
        let url = server.ws_url();
        let result = on_client_thread(move || client(url)).await;
        server.stop().await;
        result
    })
}

/// This process's peak resident set, in MB.
pub fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// A client of the server at `ws_url` that has said hello for the project at `root`.
pub async fn hello(ws_url: &str, root: &Path, timeout: Duration) -> Result<Client, String> {
    let mut options = ClientOptions::new(ws_url);
    options.timeout = timeout;
    // A bench that loses its connection has failed; it must not measure a reconnect.
    options.reconnect = None;
    let mut client = Client::connect(options).await.map_err(|e| e.to_string())?;
    client
        .hello(HelloParams {
            name: "bench".into(),
            project_root: Some(root.display().to_string()),
            ..HelloParams::default()
        })
        .await
        .map_err(|e| e.to_string())?;
    Ok(client)
}

/// The `set` params that start run `alias` on model `fast`.
pub fn start_params(alias: &str) -> SetParams {
    let attributes = RunAttributes {
        model: Some("fast".into()),
        ..RunAttributes::default()
    };
    SetParams {
        path: format!("run://{alias}"),
        body: Some("Work".into()),
        attributes: Some(attributes.to_map()),
        ..SetParams::default()
    }
}

/// Starts run `alias` on model `fast` (fire-and-forget, as clients do).
pub async fn start_run(client: &mut Client, alias: &str) -> Result<(), String> {
    client
        .set(&start_params(alias))
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}
