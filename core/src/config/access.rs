//! Access settings (TEAM.md §1, §3): browser origins, where project roots may be, and the
//! connection limits that keep one client from holding the server.

use super::{invalid, positive, ConfigError};
use crate::access::origin;
use crate::access::roots::RootBound;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Who may connect, how many at once, and where their projects may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// `RUMMY_ALLOWED_ORIGINS`: browser origins (`scheme://host[:port]`, normalised) allowed to
    /// open a WebSocket besides the server's own page; comma- or space-separated.
    pub allowed_origins: Vec<String>,
    /// `RUMMY_PROJECT_ROOTS` (directories separated by `:`), or the system default.
    pub project_roots: RootBound,
    /// `RUMMY_MAX_CONNECTIONS` (4,096): WebSocket sessions open at once; one more is refused
    /// (HTTP 503) before it is upgraded.
    pub max_connections: usize,
    /// `RUMMY_PING_INTERVAL` in ms (30,000): the server pings every connection this often and
    /// closes one it has heard nothing from (not even a pong) for three intervals.
    pub ping_interval_ms: u64,
}

impl Access {
    /// The defaults, for a server whose home is `home`.
    pub fn with_home(home: &Path) -> Access {
        Access {
            allowed_origins: Vec::new(),
            project_roots: RootBound::System {
                home: home.to_path_buf(),
            },
            max_connections: 4_096,
            ping_interval_ms: 30_000,
        }
    }

    /// Reads the access settings over the defaults for `home`.
    pub fn from_vars(vars: &BTreeMap<String, String>, home: &Path) -> Result<Access, ConfigError> {
        let mut access = Access::with_home(home);
        let get = |name: &str| vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
        if let Some(list) = get("RUMMY_ALLOWED_ORIGINS") {
            access.allowed_origins = list
                .split([',', ' '])
                .filter(|o| !o.is_empty())
                .map(|o| {
                    origin::normalize(o).ok_or_else(|| {
                        invalid(
                            "RUMMY_ALLOWED_ORIGINS",
                            list,
                            &format!("{o} is not an origin (expected scheme://host[:port], http or https)"),
                        )
                    })
                })
                .collect::<Result<_, _>>()?;
        }
        if let Some(list) = get("RUMMY_PROJECT_ROOTS") {
            let dirs: Vec<PathBuf> = list
                .split(':')
                .filter(|d| !d.trim().is_empty())
                .map(|d| {
                    crate::access::roots::lexical(Path::new(d.trim())).ok_or_else(|| {
                        invalid(
                            "RUMMY_PROJECT_ROOTS",
                            list,
                            &format!("{d} is not an absolute path"),
                        )
                    })
                })
                .collect::<Result<_, _>>()?;
            access.project_roots = RootBound::Listed(dirs);
        }
        access.max_connections = positive(vars, "RUMMY_MAX_CONNECTIONS", access.max_connections)?;
        access.ping_interval_ms = positive(vars, "RUMMY_PING_INTERVAL", access.ping_interval_ms)?;
        Ok(access)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::vars;
    use super::*;
    use pretty_assertions::assert_eq;

    /// Origins and roots are read as lists and normalised; a bad entry names the variable.
    #[test]
    fn reads_origins_roots_and_limits() {
        let home = Path::new("/h/.rummy");
        let access = Access::from_vars(
            &vars(&[
                (
                    "RUMMY_ALLOWED_ORIGINS",
                    "https://Team.Example/, http://127.0.0.1:8080",
                ),
                ("RUMMY_PROJECT_ROOTS", "/srv/projects:/home/team/./work/"),
                ("RUMMY_MAX_CONNECTIONS", "10"),
                ("RUMMY_PING_INTERVAL", "500"),
            ]),
            home,
        )
        .unwrap();
        assert_eq!(
            access,
            Access {
                allowed_origins: vec![
                    "https://team.example".to_owned(),
                    "http://127.0.0.1:8080".to_owned()
                ],
                project_roots: RootBound::Listed(vec![
                    PathBuf::from("/srv/projects"),
                    PathBuf::from("/home/team/work")
                ]),
                max_connections: 10,
                ping_interval_ms: 500,
            }
        );
        assert_eq!(
            Access::from_vars(&vars(&[]), home),
            Ok(Access::with_home(home))
        );
        for (name, value) in [
            ("RUMMY_ALLOWED_ORIGINS", "evil.example"),
            ("RUMMY_PROJECT_ROOTS", "/srv:projects"),
            ("RUMMY_MAX_CONNECTIONS", "0"),
        ] {
            let err = Access::from_vars(&vars(&[(name, value)]), home).unwrap_err();
            assert_eq!(err.name, name);
        }
    }
}
