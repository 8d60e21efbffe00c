//! The server's own state is never a project's file: a project root that holds the server's
//! home, its database or another project's root, or lies inside another project's root, is
//! refused at `rummy/hello` (-32003, saying why and naming no other project), by name too; a
//! scan never opens the server's files under any name; `rummy backup` writes into no project;
//! and the commands that read the database beside a running server never remove its live log.

use crate::support::process::ServerProcess;
use crate::support::{TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy_testkit::{FakeProvider, Reply, RpcClient};
use serde_json::{json, Value};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A fresh directory's real path, and the directory (deleted when dropped).
fn base() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::TempDir::new().unwrap();
    let real = dir.path().canonicalize().unwrap();
    (dir, real)
}

/// A new directory at `path` (with its parents), as text.
fn dir(path: &Path) -> String {
    std::fs::create_dir_all(path).unwrap();
    path.display().to_string()
}

/// What a refused hello answers: the code and the message.
async fn refused(client: &mut RpcClient, params: Value) -> (i64, String) {
    let err = client.call_err("rummy/hello", params).await;
    (err.code, err.message)
}

/// The refusal of `root` for `why`, as the client hears it.
fn refusal(root: &str, why: &str) -> (i64, String) {
    (-32003, format!("project root {root} is not allowed: {why}"))
}

const HOLDS_HOME: &str = "it holds the server's home (RUMMY_HOME)";

/// A root that holds the server's home — its parent, or the home itself — is refused for
/// what it holds; a directory inside the home may be a project.
#[actix_rt::test]
async fn a_root_holding_the_servers_home_is_refused() {
    let (_keep, base) = base();
    let home = base.join("srv/home");
    let server = TestServer::start_with(|c| c.home = home.clone()).await;
    let mut client = server.client().await;
    for root in [base.join("srv"), home.clone(), base.clone()] {
        let root = root.display().to_string();
        assert_eq!(
            refused(&mut client, json!({ "name": "p", "projectRoot": root })).await,
            refusal(&root, HOLDS_HOME)
        );
    }
    let inside = dir(&home.join("projects/p"));
    let bound = client
        .call("rummy/hello", json!({ "name": "p", "projectRoot": inside }))
        .await
        .unwrap();
    assert_eq!(bound["projectRoot"], json!(inside));
    server.stop().await;
}

/// With the SQLite database away from the home, a root that holds the database's directory
/// is refused for the database (on PostgreSQL there is no file to hold).
#[actix_rt::test]
async fn a_root_holding_the_database_file_is_refused() {
    if crate::support::database::on_postgres() {
        return; // no database file: the server's data is in PostgreSQL
    }
    let (_keep, base) = base();
    let data = dir(&base.join("data"));
    let db = base.join("data/live.sqlite");
    let server = TestServer::start_with(|c| c.db_path = db.clone()).await;
    assert!(
        db.exists(),
        "the server uses the database away from its home"
    );
    let mut client = server.client().await;
    for root in [data.clone(), base.display().to_string()] {
        assert_eq!(
            refused(&mut client, json!({ "name": "p", "projectRoot": root })).await,
            refusal(&root, "it holds the server's database (RUMMY_DB_PATH)")
        );
    }
    server.stop().await;
}

/// Project roots never nest: a root that is, holds or lies inside another project's root is
/// refused, saying which without naming the other project; a sibling is a project.
#[actix_rt::test]
async fn project_roots_never_nest() {
    let (_keep, base) = base();
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let first = dir(&base.join("work/secret-plans"));
    client
        .call(
            "rummy/hello",
            json!({ "name": "secret-plans", "projectRoot": first }),
        )
        .await
        .unwrap();
    let outer = base.join("work").display().to_string();
    let inner = dir(&base.join("work/secret-plans/sub"));
    for (name, root, why) in [
        ("outer", outer, "it holds another project's root"),
        ("inner", inner, "it lies inside another project's root"),
        ("twin", first.clone(), "it is another project's root"),
    ] {
        assert_eq!(
            refused(&mut client, json!({ "name": name, "projectRoot": root })).await,
            refusal(&root, why),
            "{name}"
        );
    }
    let sibling = dir(&base.join("work/other"));
    client
        .call(
            "rummy/hello",
            json!({ "name": "other", "projectRoot": sibling }),
        )
        .await
        .unwrap();
    // The same project, bound again at its own root, is not its own neighbour.
    client
        .call(
            "rummy/hello",
            json!({ "name": "secret-plans", "projectRoot": first }),
        )
        .await
        .unwrap();
    server.stop().await;
}

/// A project opened by name is checked again: once the server's home has moved inside its
/// root, or another project (stored before roots were kept apart) nests with it, it is
/// refused (-32003) as a new root would be.
#[actix_rt::test]
async fn a_project_opened_by_name_is_checked_again() {
    let (_keep, base) = base();
    let root = dir(&base.join("work"));
    let mut server = TestServer::start().await;
    let mut client = server.client().await;
    client
        .call("rummy/hello", json!({ "name": "w", "projectRoot": root }))
        .await
        .unwrap();
    let by_name = json!({ "name": "w" });
    client.call("rummy/hello", by_name.clone()).await.unwrap();
    server
        .restart_with(|c| c.home = base.join("work/.rummy"))
        .await;
    let mut client = server.client().await;
    assert_eq!(
        refused(&mut client, by_name.clone()).await,
        refusal(&root, HOLDS_HOME)
    );
    assert_eq!(
        refused(
            &mut client,
            json!({ "name": "w", "projectRoot": root.clone() })
        )
        .await,
        refusal(&root, HOLDS_HOME)
    );

    server.restart_with(|_| {}).await;
    let nested = dir(&base.join("work/old"));
    let mut conn = crate::support::database::connect(&server.database());
    diesel::RunQueryDsl::execute(
        diesel::sql_query(format!(
            "INSERT INTO projects (name, project_root, created_at) VALUES ('old', '{nested}', 0)"
        )),
        &mut conn,
    )
    .unwrap();
    drop(conn);
    let mut client = server.client().await;
    assert_eq!(
        refused(&mut client, by_name).await,
        refusal(&root, "it holds another project's root")
    );
    assert_eq!(
        refused(&mut client, json!({ "name": "old" })).await,
        refusal(&nested, "it lies inside another project's root")
    );
    server.stop().await;
}

/// The real binary, run with `$HOME` and `RUMMY_HOME` under it as a user would: `$HOME` is no
/// project root.
#[actix_rt::test]
async fn home_is_no_root_when_the_servers_home_is_under_it() {
    let (_keep, base) = base();
    let rummy_home = base.join(".rummy");
    let user_home = base.display().to_string();
    let server = ServerProcess::start(&rummy_home, &[("HOME", &user_home)], Stdio::null());
    let mut client = RpcClient::connect(&format!("ws://127.0.0.1:{}/", server.port))
        .await
        .unwrap();
    client.set_timeout(WAIT);
    assert_eq!(
        refused(
            &mut client,
            json!({ "name": "home", "projectRoot": user_home })
        )
        .await,
        refusal(&user_home, HOLDS_HOME)
    );
    let code = dir(&base.join("code/app"));
    client
        .call("rummy/hello", json!({ "name": "app", "projectRoot": code }))
        .await
        .unwrap();
}

/// Runs `rummy ARGS` in `cwd` with only `RUMMY_HOME` (and the home's database) set.
fn rummy(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rummy"))
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("RUMMY_HOME", home)
        .envs(crate::support::database::vars(home))
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `rummy backup` into a project's root — named from inside it or by a path through it — is
/// refused (4) and writes nothing there; elsewhere it backs up.
#[actix_rt::test]
async fn a_backup_is_never_written_into_a_project() {
    if crate::support::database::on_postgres() {
        return; // SQLite's backup: PostgreSQL is backed up with pg_dump
    }
    let (_keep, base) = base();
    let home = base.join("home");
    let project = PathBuf::from(dir(&base.join("project/src")))
        .parent()
        .unwrap()
        .to_path_buf();
    let server = ServerProcess::start(&home, &[], Stdio::null());
    crate::support::process::project_client(server.port, "p", &project, WAIT).await;
    let through = base.join("project/src/../copy.db").display().to_string();
    for (cwd, path, shown) in [
        (project.clone(), "copy.db", "copy.db".to_owned()),
        (base.clone(), through.as_str(), through.clone()),
    ] {
        let taken = rummy(&home, &cwd, &["backup", path]);
        assert_eq!(
            (taken.status.code(), stderr(&taken)),
            (
                Some(4),
                format!(
                    "rummy: {shown} is inside a project's root: a backup there would be one of \
                     the project's files, which its runs read; write it outside every project\n"
                )
            )
        );
    }
    assert!(!project.join("copy.db").exists());
    let taken = rummy(&home, &base, &["backup", "copy.db"]);
    assert!(taken.status.success(), "{}", stderr(&taken));
    assert!(base.join("copy.db").exists());
}

/// The identity (device, inode) of the file at `path`.
fn inode(path: &Path) -> (u64, u64) {
    let meta = std::fs::metadata(path).unwrap();
    (meta.dev(), meta.ino())
}

/// The names of the projects in the SQLite database at `db`, read through a connection that
/// cannot remove its log.
fn project_names(db: &Path) -> Vec<String> {
    #[derive(diesel::QueryableByName)]
    struct Name {
        #[diesel(sql_type = diesel::sql_types::Text)]
        name: String,
    }
    let mut conn = rummy_store::database::open_existing(db).unwrap();
    diesel::RunQueryDsl::load::<Name>(
        diesel::sql_query("SELECT name FROM projects ORDER BY name"),
        &mut conn,
    )
    .unwrap()
    .into_iter()
    .map(|n| n.name)
    .collect()
}

/// A project holding the server's database files under other names (hard links), a link to
/// its home and a file of its own named like the log: the scan reads the project's file and
/// never opens the server's, so `rummy export` and `rummy token list` beside the live server
/// leave its log in place, and what the server writes after them survives a kill -9.
#[actix_rt::test]
async fn the_scan_never_opens_the_servers_files() {
    if crate::support::database::on_postgres() {
        return; // no database file to link into a project
    }
    let (_keep, base) = base();
    let home = base.join("home");
    let project = base.join("project");
    std::fs::create_dir_all(project.join("state")).unwrap();
    let provider = FakeProvider::start().unwrap();
    provider.push(Reply::content("<update status=\"200\">looked</update>"));
    let url = provider.base_url();
    let server = ServerProcess::start(
        &home,
        &[
            ("OPENAI_BASE_URL", url.as_str()),
            ("RUMMY_MODEL_fast", "openai/fake-model"),
        ],
        Stdio::null(),
    );
    let db = home.join("rummy.db");
    let wal = home.join("rummy.db-wal");
    for name in ["rummy.db", "rummy.db-wal", "rummy.db-shm"] {
        std::fs::hard_link(home.join(name), project.join("state").join(name)).unwrap();
    }
    std::os::unix::fs::symlink(&home, project.join("home")).unwrap();
    std::fs::write(project.join("rummy.db-wal"), "the project's own notes\n").unwrap();
    let live = inode(&wal);

    let mut client =
        crate::support::process::project_client(server.port, "linked", &project, WAIT).await;
    client
        .call(
            "set",
            json!({ "path": "run://look", "body": "look", "attributes": { "model": "fast" } }),
        )
        .await
        .unwrap();
    crate::support::wait_status(&mut client, "look", 200).await;
    let files: Vec<Value> = client
        .call("getEntries", json!({ "run": "look", "limit": 1000 }))
        .await
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| !e["path"].as_str().unwrap_or_default().contains("://"))
        .map(|e| e["path"].clone())
        .collect();
    assert_eq!(files, vec![json!("rummy.db-wal")]);

    let exported = rummy(&home, &base, &["export", "look", "--project", "linked"]);
    assert!(exported.status.success(), "{}", stderr(&exported));
    let listed = rummy(&home, &base, &["token", "list"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert_eq!(inode(&wal), live, "the server's log is the one it writes");

    let other = dir(&base.join("after"));
    client
        .call(
            "rummy/hello",
            json!({ "name": "after", "projectRoot": other }),
        )
        .await
        .unwrap();
    server.kill();
    assert_eq!(
        project_names(&db),
        vec!["after".to_owned(), "linked".to_owned()]
    );
}

/// `rummy export` beside a process that has the database open but lost its locks on it (what
/// a stray open and close of the file does) never takes itself for the last user: the log is
/// not removed, and the other process's later writes are there for the next reader.
#[test]
fn export_never_removes_the_log_of_a_database_in_use() {
    if crate::support::database::on_postgres() {
        return; // SQLite's write-ahead log
    }
    use diesel::connection::SimpleConnection as _;
    let (_keep, home) = base();
    let db = home.join("rummy.db");
    let wal = home.join("rummy.db-wal");
    let mut writer = rummy_store::database::open_writer(&db).unwrap();
    writer
        .batch_execute(
            "INSERT INTO projects (name, project_root, created_at) VALUES ('before', '/b', 0)",
        )
        .unwrap();
    let live = inode(&wal);
    // Opening and closing the file drops every POSIX lock this process holds on it.
    drop(std::fs::File::open(&db).unwrap());

    let exported = rummy(&home, &home, &["export", "r", "--project", "before"]);
    assert_eq!(exported.status.code(), Some(4), "{}", stderr(&exported));
    assert_eq!(inode(&wal), live, "the log is still the writer's");
    writer
        .batch_execute(
            "INSERT INTO projects (name, project_root, created_at) VALUES ('later', '/l', 0)",
        )
        .unwrap();
    assert_eq!(
        project_names(&db),
        vec!["before".to_owned(), "later".to_owned()]
    );
}

/// The mode bits of `path`.
fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().mode() & 0o7777
}

/// The built server makes its files its user's alone: a home found 0755 is tightened to 0700
/// (said in the log), and the database with its `-wal`, `-shm` and `.lock` files is 0600, as is
/// a backup of it.
#[actix_rt::test]
async fn the_servers_home_and_database_files_are_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let (_keep, base) = base();
    let home = base.join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut server = ServerProcess::start(&home, &[], Stdio::piped());
    let mut logged = server.child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        use std::io::Read as _;
        let mut text = String::new();
        let _ = logged.read_to_string(&mut text);
        text
    });
    let project = PathBuf::from(dir(&base.join("project")));
    crate::support::process::project_client(server.port, "p", &project, WAIT).await;
    assert_eq!(mode(&home), 0o700);
    if !crate::support::database::on_postgres() {
        let files = ["rummy.db", "rummy.db-wal", "rummy.db-shm", "rummy.db.lock"];
        let modes: Vec<(&str, u32)> = files.iter().map(|f| (*f, mode(&home.join(f)))).collect();
        assert_eq!(modes, files.iter().map(|f| (*f, 0o600)).collect::<Vec<_>>());
        let taken = rummy(&home, &base, &["backup", "copy.db"]);
        assert!(taken.status.success(), "{}", stderr(&taken));
        assert_eq!(mode(&base.join("copy.db")), 0o600);
    }
    server.terminate();
    let log = log.join().unwrap();
    let tightened = log
        .lines()
        .find(|l| l.contains("tightened the mode of the server's own file"))
        .unwrap_or_else(|| panic!("no line says the home was tightened:\n{log}"));
    assert!(
        tightened.contains(&home.display().to_string())
            && tightened.contains("was=755")
            && tightened.contains("now=700"),
        "{tightened}"
    );
}

/// Without RUMMY_PROJECT_ROOTS, `/run` and everything under it, and `/home` itself, are refused
/// as project roots (-32003) before the disk is looked at; a directory elsewhere is not.
#[actix_rt::test]
async fn run_and_home_are_refused_as_project_roots() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let system =
        "system directories are not projects (RUMMY_PROJECT_ROOTS names where projects may be)";
    let homes = "/home holds every user's home; it is not a project (RUMMY_PROJECT_ROOTS names where projects may be)";
    let mut answers = Vec::new();
    for root in [
        "/run",
        "/run/user/1000",
        "/run/lock/",
        "/home",
        "/home/../home/.",
    ] {
        answers.push(refused(&mut client, json!({ "name": "x", "projectRoot": root })).await);
    }
    let here = |root: &str, why: &str| {
        (
            -32003,
            format!("project root {root} is not allowed here: {why}"),
        )
    };
    assert_eq!(
        answers,
        vec![
            here("/run", system),
            here("/run/user/1000", system),
            here("/run/lock/", system),
            here("/home", homes),
            here("/home/../home/.", homes),
        ]
    );
    let root = server.project_root("fine");
    client
        .call(
            "rummy/hello",
            json!({ "name": "fine", "projectRoot": root }),
        )
        .await
        .unwrap();
    server.stop().await;
}
