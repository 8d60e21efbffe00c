//! TLS for PostgreSQL connections through rustls (the ring provider the server already uses).

use crate::url::SslMode;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::sync::Arc;

/// The rustls client settings for `mode`, or `None` for a plain connection.
pub(crate) fn config(mode: SslMode, root: Option<&str>) -> Result<Option<ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up: {e}"))?;
    Ok(match (mode, root) {
        (SslMode::Disable, _) => None,
        (SslMode::VerifyFull, Some(root)) => {
            let mut roots = RootCertStore::empty();
            let certificates = CertificateDer::pem_file_iter(root)
                .map_err(|e| format!("sslrootcert {root}: {e}"))?;
            for certificate in certificates {
                let certificate = certificate.map_err(|e| format!("sslrootcert {root}: {e}"))?;
                roots
                    .add(certificate)
                    .map_err(|e| format!("sslrootcert {root}: {e}"))?;
            }
            Some(builder.with_root_certificates(roots).with_no_client_auth())
        }
        (SslMode::VerifyFull, None) => {
            return Err("checking the server's certificate needs sslrootcert".to_string())
        }
        (SslMode::Prefer | SslMode::Require, _) => Some(
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Unchecked(provider)))
                .with_no_client_auth(),
        ),
    })
}

/// libpq's `require`: the connection is encrypted but the server's certificate is not checked
/// (its handshake signatures still are). `verify-full` with `sslrootcert` checks it.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signed: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            certificate,
            signed,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signed: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            certificate,
            signed,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
