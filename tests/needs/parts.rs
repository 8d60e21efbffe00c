//! Which parts of the machine are here, each probed once before any test runs: PostgreSQL
//! (`RUMMY_TEST_POSTGRES_URL`), Chromium and its WebDriver, a command sandbox for a server
//! running as this user (and, as root, as `nobody`), root itself, `systemd-analyze`, and Node.js
//! with the test editor's ACP SDK.

use std::path::PathBuf;

/// A part some tests need: missing (why) or here, and the variable that makes a missing one a
/// failure.
pub struct Need {
    /// `RUMMY_REQUIRE_…`: set to `1`, a missing part fails its tests instead of skipping them.
    pub require_var: &'static str,
    /// Why the part is missing; `None` when it is here.
    pub missing: Option<String>,
}

impl Need {
    /// What a test that needs nothing needs.
    pub fn nothing() -> Need {
        Need {
            require_var: "",
            missing: None,
        }
    }

    /// Whether this run requires the part (`RUMMY_REQUIRE_…=1`).
    pub fn required(&self) -> bool {
        !self.require_var.is_empty() && std::env::var(self.require_var).is_ok_and(|v| v == "1")
    }
}

/// The variable naming the server the PostgreSQL suites create their databases on.
pub const POSTGRES_URL_VAR: &str = "RUMMY_TEST_POSTGRES_URL";

/// Every part, probed.
pub struct Parts {
    /// A PostgreSQL server to create databases on.
    pub postgres: Need,
    /// Chromium and chromedriver: where they are.
    pub browser: Need,
    /// A sandbox for commands of a server running as this user.
    pub sandbox: Need,
    /// Running as root, and a sandbox for a server running as root.
    pub sandbox_as_root: Need,
    /// A sandbox for a server running as `nobody` (probed as root only; as anyone else the
    /// unprivileged variant runs as this user).
    pub sandbox_as_nobody: Need,
    /// Running as root.
    pub root: Need,
    /// `systemd-analyze`.
    pub systemd_analyze: Need,
    /// Node.js and the test editor's ACP SDK (`npm ci --prefix tests/acp`).
    pub acp_client: Need,
}

impl Parts {
    /// What `--list` assumes: every part here (nothing is probed).
    pub fn assumed() -> Parts {
        let here = |require_var| Need {
            require_var,
            missing: None,
        };
        Parts {
            postgres: here("RUMMY_REQUIRE_POSTGRES"),
            browser: here("RUMMY_REQUIRE_BROWSER"),
            sandbox: here("RUMMY_REQUIRE_SANDBOX"),
            sandbox_as_root: here("RUMMY_REQUIRE_SANDBOX"),
            sandbox_as_nobody: here("RUMMY_REQUIRE_SANDBOX"),
            root: here("RUMMY_REQUIRE_SANDBOX"),
            systemd_analyze: here("RUMMY_REQUIRE_SYSTEMD"),
            acp_client: here("RUMMY_REQUIRE_ACP_CLIENT"),
        }
    }

    /// Looks for each part; the two sandbox probes (a server started and its log read) run at
    /// once.
    pub fn probe() -> Parts {
        let root = crate::sandbox::is_root();
        let as_nobody = std::thread::spawn(move || {
            root.then(|| crate::sandbox::no_sandbox(Some(crate::sandbox::NOBODY)))
                .flatten()
        });
        let as_self = crate::sandbox::no_sandbox(None);
        let as_nobody = as_nobody.join().expect("the sandbox probe as nobody");
        let sandbox = |missing| Need {
            require_var: "RUMMY_REQUIRE_SANDBOX",
            missing,
        };
        let not_root = (!root).then(|| "the tests do not run as root".to_owned());
        Parts {
            postgres: Need {
                require_var: "RUMMY_REQUIRE_POSTGRES",
                missing: std::env::var_os(POSTGRES_URL_VAR).is_none().then(|| {
                    format!(
                        "no PostgreSQL: {POSTGRES_URL_VAR} is not set (`.ci/postgres cargo test \
                         --workspace` starts a throwaway one)"
                    )
                }),
            },
            browser: Need {
                require_var: "RUMMY_REQUIRE_BROWSER",
                missing: browser().err(),
            },
            sandbox_as_root: sandbox(not_root.clone().or_else(|| as_self.clone())),
            sandbox: sandbox(as_self),
            sandbox_as_nobody: sandbox(as_nobody),
            root: sandbox(not_root),
            systemd_analyze: Need {
                require_var: "RUMMY_REQUIRE_SYSTEMD",
                missing: crate::systemd::missing(),
            },
            acp_client: Need {
                require_var: "RUMMY_REQUIRE_ACP_CLIENT",
                missing: crate::acp::missing(),
            },
        }
    }
}

/// Where the browser and its driver are: `RUMMY_CHROMIUM` / `RUMMY_CHROMEDRIVER`, else the
/// Debian packages' paths (`chromium`, `chromium-driver`); or which of them is missing.
pub fn browser() -> Result<(PathBuf, PathBuf), String> {
    let path = |var: &str, default: &str| {
        std::env::var_os(var).map_or_else(|| PathBuf::from(default), PathBuf::from)
    };
    let chromium = path("RUMMY_CHROMIUM", "/usr/bin/chromium");
    let driver = path("RUMMY_CHROMEDRIVER", "/usr/bin/chromedriver");
    let missing: Vec<String> = [&chromium, &driver]
        .iter()
        .filter(|p| !p.is_file())
        .map(|p| p.display().to_string())
        .collect();
    if missing.is_empty() {
        Ok((chromium, driver))
    } else {
        Err(format!(
            "no browser: {} missing (apt-get install chromium chromium-driver)",
            missing.join(" and ")
        ))
    }
}
