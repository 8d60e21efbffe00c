//! Reading a `postgres://` URL the way libpq does for the TLS options tokio-postgres lacks.

use std::str::FromStr;

/// How a connection uses TLS: libpq's `sslmode`, as far as rustls can honour it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Plain TCP.
    Disable,
    /// TLS when the server offers it, plain otherwise (libpq's default).
    Prefer,
    /// TLS or no connection.
    Require,
    /// TLS with the server's certificate checked against `sslrootcert`, its name included
    /// (rustls always checks the name: libpq's `verify-ca` is read as `verify-full`).
    VerifyFull,
}

/// A connection's settings: tokio-postgres's, plus the TLS choices made here.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Host, port, user, password, database and the other options tokio-postgres reads.
    pub config: tokio_postgres::Config,
    /// How TLS is used.
    pub ssl: SslMode,
    /// The root certificate(s) to check the server against (PEM file), when given.
    pub root: Option<String>,
}

/// Why a URL cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UrlError {
    /// `sslmode` has a value rustls cannot honour.
    #[error(
        "sslmode={0} is not supported: use disable, prefer, require, verify-ca or verify-full"
    )]
    SslMode(String),
    /// Checking the server needs a root certificate.
    #[error("sslmode={0} needs sslrootcert=<PEM file> (there is no system root store here)")]
    NoRoot(String),
    /// tokio-postgres refused the rest of the URL.
    #[error("{0}")]
    Invalid(String),
}

impl FromStr for ConnectOptions {
    type Err = UrlError;

    /// Takes `sslmode` and `sslrootcert` out of the query (tokio-postgres knows only three
    /// modes and no root file) and hands the rest to tokio-postgres. As with libpq, a root
    /// certificate turns `prefer`/`require` into checking the server.
    fn from_str(url: &str) -> Result<Self, UrlError> {
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut mode = None;
        let mut root = None;
        let mut rest = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("sslmode", value)) => mode = Some(value.to_string()),
                Some(("sslrootcert", value)) => root = Some(value.to_string()),
                _ => rest.push(pair),
            }
        }
        let named = mode.unwrap_or_else(|| "prefer".to_string());
        let ssl = match (named.as_str(), &root) {
            ("disable", _) => SslMode::Disable,
            ("prefer", None) => SslMode::Prefer,
            ("require", None) => SslMode::Require,
            ("prefer" | "require" | "verify-ca" | "verify-full", Some(_)) => SslMode::VerifyFull,
            ("verify-ca" | "verify-full", None) => return Err(UrlError::NoRoot(named)),
            _ => return Err(UrlError::SslMode(named)),
        };
        let plain = if rest.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", rest.join("&"))
        };
        let mut config = tokio_postgres::Config::from_str(&plain)
            .map_err(|e| UrlError::Invalid(format!("bad PostgreSQL URL: {e}")))?;
        config.ssl_mode(match ssl {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyFull => tokio_postgres::config::SslMode::Require,
        });
        Ok(ConnectOptions { config, ssl, root })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(url: &str) -> Result<(SslMode, Option<String>), UrlError> {
        url.parse::<ConnectOptions>().map(|o| (o.ssl, o.root))
    }

    /// libpq's modes map onto what rustls can do; a root file means checking the server.
    #[test]
    fn ssl_modes_read_as_libpq_reads_them() {
        let base = "postgres://u:p@127.0.0.1:5432/db";
        assert_eq!(read(base), Ok((SslMode::Prefer, None)));
        assert_eq!(
            read(&format!("{base}?sslmode=disable")),
            Ok((SslMode::Disable, None))
        );
        assert_eq!(
            read(&format!("{base}?sslmode=require")),
            Ok((SslMode::Require, None))
        );
        assert_eq!(
            read(&format!("{base}?sslmode=require&sslrootcert=/ca.pem")),
            Ok((SslMode::VerifyFull, Some("/ca.pem".to_string())))
        );
        assert_eq!(
            read(&format!(
                "{base}?connect_timeout=5&sslmode=verify-ca&sslrootcert=/ca.pem"
            )),
            Ok((SslMode::VerifyFull, Some("/ca.pem".to_string())))
        );
        assert_eq!(
            read(&format!("{base}?sslmode=verify-full")),
            Err(UrlError::NoRoot("verify-full".to_string()))
        );
        assert_eq!(
            read(&format!("{base}?sslmode=allow")),
            Err(UrlError::SslMode("allow".to_string()))
        );
    }

    /// The options tokio-postgres knows pass through; what it refuses is named.
    #[test]
    fn other_options_pass_to_tokio_postgres() {
        let options: ConnectOptions = "postgres://u:p@db.example:6543/rummy?connect_timeout=5"
            .parse()
            .unwrap();
        assert_eq!(options.config.get_dbname(), Some("rummy"));
        assert_eq!(options.config.get_ports(), &[6543]);
        assert_eq!(
            options.config.get_connect_timeout(),
            Some(&std::time::Duration::from_secs(5))
        );
        assert!(matches!(
            "postgres://u@h/db?nonsense=1".parse::<ConnectOptions>(),
            Err(UrlError::Invalid(_))
        ));
    }
}
