//! One connection to the server as its URL asks (plain TCP or TLS), before diesel or the
//! listener takes it: the single connect function both use, so they reach the server alike.

use crate::tls;
use crate::url::ConnectOptions;
use std::task::{Context, Poll};
use tokio_postgres::tls::{MakeTlsConnect, NoTlsStream};
use tokio_postgres::{AsyncMessage, Client, Config, Connection, NoTls, Socket};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The stream rustls wraps the socket in (its type is private to tokio-postgres-rustls).
type TlsStream = <MakeRustlsConnect as MakeTlsConnect<Socket>>::Stream;

/// The socket half of a connection: until it is polled, no query's answer arrives and no
/// notification either. Boxed: its state is hundreds of bytes, over a thousand with rustls, and
/// it moves into futures and tasks.
pub(crate) enum Raw {
    /// Over plain TCP (`sslmode=disable`).
    Plain(Box<Connection<Socket, NoTlsStream>>),
    /// Over TLS, or plain where `sslmode=prefer` found a server without it.
    Tls(Box<Connection<Socket, TlsStream>>),
}

impl Raw {
    /// Moves the connection on: sends queued requests, hands answers to the [`Client`], and
    /// yields what the server sent on its own (notifications, notices). `None` or an error
    /// ends the connection.
    pub(crate) fn poll_message(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<AsyncMessage, tokio_postgres::Error>>> {
        match self {
            Raw::Plain(connection) => connection.poll_message(cx),
            Raw::Tls(connection) => connection.poll_message(cx),
        }
    }
}

/// Where and how to connect: the URL's settings and its TLS, read once, so every reconnect
/// reaches the same server the same way.
#[derive(Clone)]
pub(crate) struct Target {
    /// Host, port, user, password, database and tokio-postgres's other options.
    pub(crate) config: Config,
    /// The TLS connector, or `None` for `sslmode=disable`.
    tls: Option<MakeRustlsConnect>,
}

impl Target {
    /// Reads `url` (see [`ConnectOptions`]) and builds its TLS settings.
    ///
    /// # Errors
    /// A URL that cannot be used, or a root certificate file that cannot be read.
    pub(crate) fn from_url(url: &str) -> Result<Target, String> {
        let options: ConnectOptions = url.parse().map_err(|e| format!("{e}"))?;
        let tls = tls::config(options.ssl, options.root.as_deref())?;
        Ok(Target {
            config: options.config,
            tls: tls.map(MakeRustlsConnect::new),
        })
    }

    /// Opens a connection; the caller must keep polling the returned [`Raw`] (on this
    /// crate's runtime) for the [`Client`] to get answers.
    ///
    /// # Errors
    /// The server's refusal, a TLS failure or an unreachable host, every cause named.
    pub(crate) async fn connect(&self) -> Result<(Client, Raw), String> {
        match &self.tls {
            None => {
                let (client, connection) = self.config.connect(NoTls).await.map_err(describe)?;
                Ok((client, Raw::Plain(Box::new(connection))))
            }
            Some(tls) => {
                let (client, connection) =
                    self.config.connect(tls.clone()).await.map_err(describe)?;
                Ok((client, Raw::Tls(Box::new(connection))))
            }
        }
    }
}

/// A tokio-postgres error with every cause it chains (the server's message, a TLS failure, an
/// unreachable host): its own text alone is only "db error".
pub(crate) fn describe(e: tokio_postgres::Error) -> String {
    let mut message = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
