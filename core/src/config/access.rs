//! Access settings (docs/design/team.md): browser origins, where project roots may be, and the
//! connection limits that keep one client from holding the server.

use super::{invalid, positive, switch, ConfigError};
use crate::access::origin;
use crate::access::roots::RootBound;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

/// Who may connect, how many at once, and where their projects may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// `RUMMY_BIND` (`127.0.0.1`): the address the server listens on.
    pub bind: IpAddr,
    /// `RUMMY_TLS_CERT` / `RUMMY_TLS_KEY`: PEM files; with both the server speaks TLS (`wss://`).
    pub tls: Option<TlsFiles>,
    /// `RUMMY_TRUST_PROXY`: the server sits behind a reverse proxy, so it is reachable from the
    /// network whatever its bind says (tokens are required, as on a network bind).
    pub trust_proxy: bool,
    /// `RUMMY_INSECURE`: serve a network without tokens anyway (said loudly at start).
    pub insecure: bool,
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
    /// `RUMMY_MAX_ANONYMOUS_CONNECTIONS` (64): once a token exists, connections that have not
    /// shown a valid token yet open at once; one more is refused (HTTP 503) before it is
    /// upgraded.
    pub max_anonymous_connections: usize,
    /// `RUMMY_HELLO_TIMEOUT` in ms (10,000): once a token exists, how long a connection may stay
    /// open without showing a valid token before it is closed (1008).
    pub hello_timeout_ms: u64,
}

/// The largest message (and frame) a connection may send before it has shown a valid token,
/// once a token exists: a larger one closes it (1009). Enough for any `rummy/hello` or
/// `getProjects`.
pub const ANONYMOUS_MESSAGE_BYTES: usize = 64 * 1024;

/// The certificate chain and private key of a TLS listener, as PEM files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, leaf first.
    pub cert: PathBuf,
    /// The private key.
    pub key: PathBuf,
}

impl Access {
    /// Whether clients from other machines can reach the server: a bind other than loopback,
    /// or a reverse proxy in front. Such a server needs tokens.
    pub fn networked(&self) -> bool {
        !self.bind.is_loopback() || self.trust_proxy
    }

    /// The defaults, for a server whose home is `home`.
    pub fn with_home(home: &Path) -> Access {
        Access {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            tls: None,
            trust_proxy: false,
            insecure: false,
            allowed_origins: Vec::new(),
            project_roots: RootBound::System {
                home: home.to_path_buf(),
            },
            max_connections: 4_096,
            ping_interval_ms: 30_000,
            max_anonymous_connections: 64,
            hello_timeout_ms: 10_000,
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
        if let Some(bind) = get("RUMMY_BIND") {
            access.bind = bind.parse().map_err(|_| {
                invalid(
                    "RUMMY_BIND",
                    bind,
                    "expected an IP address such as 127.0.0.1 or 0.0.0.0",
                )
            })?;
        }
        access.tls = match (get("RUMMY_TLS_CERT"), get("RUMMY_TLS_KEY")) {
            (None, None) => None,
            (Some(cert), Some(key)) => Some(TlsFiles {
                cert: PathBuf::from(cert),
                key: PathBuf::from(key),
            }),
            (Some(cert), None) => {
                return Err(invalid(
                    "RUMMY_TLS_CERT",
                    cert,
                    "RUMMY_TLS_KEY must be set too",
                ))
            }
            (None, Some(key)) => {
                return Err(invalid(
                    "RUMMY_TLS_KEY",
                    key,
                    "RUMMY_TLS_CERT must be set too",
                ))
            }
        };
        access.trust_proxy = switch(vars, "RUMMY_TRUST_PROXY", access.trust_proxy)?;
        access.insecure = switch(vars, "RUMMY_INSECURE", access.insecure)?;
        access.max_connections = positive(vars, "RUMMY_MAX_CONNECTIONS", access.max_connections)?;
        access.ping_interval_ms = positive(vars, "RUMMY_PING_INTERVAL", access.ping_interval_ms)?;
        access.max_anonymous_connections = positive(
            vars,
            "RUMMY_MAX_ANONYMOUS_CONNECTIONS",
            access.max_anonymous_connections,
        )?;
        access.hello_timeout_ms = positive(vars, "RUMMY_HELLO_TIMEOUT", access.hello_timeout_ms)?;
        Ok(access)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::vars;
    use super::*;
    use pretty_assertions::assert_eq;

    /// A network bind or a trusted proxy makes the server networked; TLS takes both files.
    #[test]
    fn reads_where_and_how_to_listen() {
        let home = Path::new("/h");
        let read = |pairs: &[(&str, &str)]| Access::from_vars(&vars(pairs), home).unwrap();
        assert!(!read(&[]).networked());
        assert!(!read(&[("RUMMY_BIND", "::1")]).networked());
        let open = read(&[("RUMMY_BIND", "0.0.0.0"), ("RUMMY_INSECURE", "1")]);
        assert_eq!((open.networked(), open.insecure), (true, true));
        assert!(read(&[("RUMMY_TRUST_PROXY", "yes")]).networked());
        assert_eq!(
            read(&[("RUMMY_TLS_CERT", "/c.pem"), ("RUMMY_TLS_KEY", "/k.pem")]).tls,
            Some(TlsFiles {
                cert: PathBuf::from("/c.pem"),
                key: PathBuf::from("/k.pem")
            })
        );
    }

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
                ("RUMMY_MAX_ANONYMOUS_CONNECTIONS", "3"),
                ("RUMMY_HELLO_TIMEOUT", "2500"),
            ]),
            home,
        )
        .unwrap();
        assert_eq!(
            access,
            Access {
                bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
                tls: None,
                trust_proxy: false,
                insecure: false,
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
                max_anonymous_connections: 3,
                hello_timeout_ms: 2500,
            }
        );
        assert_eq!(
            Access::from_vars(&vars(&[]), home),
            Ok(Access::with_home(home))
        );
        for (name, value) in [
            ("RUMMY_BIND", "localhost"),
            ("RUMMY_TLS_CERT", "/etc/rummy/cert.pem"),
            ("RUMMY_ALLOWED_ORIGINS", "evil.example"),
            ("RUMMY_PROJECT_ROOTS", "/srv:projects"),
            ("RUMMY_MAX_CONNECTIONS", "0"),
            ("RUMMY_MAX_ANONYMOUS_CONNECTIONS", "0"),
            ("RUMMY_HELLO_TIMEOUT", "10s"),
        ] {
            let err = Access::from_vars(&vars(&[(name, value)]), home).unwrap_err();
            assert_eq!(err.name, name);
        }
    }
}
