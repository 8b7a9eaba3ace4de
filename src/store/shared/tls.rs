//! TLS to the shared database, as libpq's `sslmode` means it: `disable`
//! speaks none; `prefer` (the default; `allow` is taken as it) speaks TLS
//! when the server offers it and plain when it does not; `require` insists
//! on TLS but, like libpq, does not check the server's certificate;
//! `verify-ca` checks the certificate chains to a trusted root, and
//! `verify-full` also that it names the host of the URL. The roots are the
//! PEM file of `storage.sharedCaFile`, or else the public ones built in
//! (webpki-roots, as reqwest's).
//!
//! tokio-postgres knows only `disable`, `prefer` and `require`, so the
//! verifying modes are taken out of the URL here and told to it as
//! `require`; what is checked lives in the rustls configuration.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::verify_server_cert_signed_by_trust_anchor;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::config::SslMode as PgSslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::{Result, SharedError};

/// What the URL's `sslmode` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    /// What tokio-postgres is told: whether to ask for TLS and insist on it.
    pub(super) fn negotiation(self) -> PgSslMode {
        match self {
            Self::Disable => PgSslMode::Disable,
            Self::Prefer => PgSslMode::Prefer,
            Self::Require | Self::VerifyCa | Self::VerifyFull => PgSslMode::Require,
        }
    }

    /// As the URL says it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }

    fn verifies(self) -> bool {
        matches!(self, Self::VerifyCa | Self::VerifyFull)
    }
}

/// `url` with its `sslmode` (the last, as libpq) told as tokio-postgres
/// knows it, and the mode asked for; an unknown mode says the valid ones.
pub(super) fn split_mode(url: &str) -> Result<(String, SslMode)> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_string(), SslMode::Prefer));
    };
    let mut mode = SslMode::Prefer;
    let mut kept = Vec::new();
    for pair in query.split('&') {
        let Some(value) = pair.strip_prefix("sslmode=") else {
            kept.push(pair.to_string());
            continue;
        };
        mode = match value {
            "disable" => SslMode::Disable,
            "allow" | "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(SharedError::Url(format!(
                    "sslmode={other} is not a mode: use disable, prefer, require, verify-ca or \
                     verify-full"
                )));
            }
        };
    }
    if kept.is_empty() {
        return Ok((base.to_string(), mode));
    }
    Ok((format!("{base}?{}", kept.join("&")), mode))
}

/// The TLS side of connections in `mode`, trusting the certificates in
/// `ca_file` (PEM) or else the public roots. The file is read now, once.
pub(super) fn connector(mode: SslMode, ca_file: Option<&Path>) -> Result<MakeRustlsConnect> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| SharedError::Refused(format!("cannot set up TLS: {e}")))?;
    let roots = match ca_file {
        Some(file) => Arc::new(read_roots(file)?),
        None => Arc::new(RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        }),
    };
    let config = match mode {
        // rustls's own verifier: the chain, then the name.
        SslMode::VerifyFull => builder.with_root_certificates(roots).with_no_client_auth(),
        _ => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnly {
                roots: mode.verifies().then_some(roots),
                algorithms: provider.signature_verification_algorithms,
            }))
            .with_no_client_auth(),
    };
    Ok(MakeRustlsConnect::new(config))
}

/// The certificates of a CA file; an unreadable file or one holding none
/// is an error naming `storage.sharedCaFile`.
fn read_roots(file: &Path) -> Result<RootCertStore> {
    let bad = |why: String| SharedError::CaFile(format!("{}: {why}", file.display()));
    let pem = std::fs::read(file).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| bad(format!("not a PEM certificate file: {e}")))?;
        roots
            .add(cert)
            .map_err(|e| bad(format!("holds a certificate that cannot be used: {e}")))?;
    }
    if roots.is_empty() {
        return Err(bad(
            "holds no certificate (expected PEM, -----BEGIN CERTIFICATE-----)".into(),
        ));
    }
    Ok(roots)
}

/// `require` (no roots: nothing about the certificate is checked, libpq's
/// meaning) and `verify-ca` (the chain to a root, whatever name it holds).
/// The handshake's signatures are checked either way: the server holds the
/// key of the certificate it shows.
#[derive(Debug)]
struct ChainOnly {
    roots: Option<Arc<RootCertStore>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _name: &ServerName<'_>,
        _ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.roots {
            let cert = ParsedCertificate::try_from(end_entity)?;
            verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.algorithms.all,
            )?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_s_sslmode_is_told_to_tokio_postgres_as_it_knows_it() {
        let split = |url| split_mode(url).unwrap();
        assert_eq!(
            split("postgres://a@db/x"),
            ("postgres://a@db/x".into(), SslMode::Prefer)
        );
        assert_eq!(
            split("postgres://a@db/x?sslmode=verify-full"),
            ("postgres://a@db/x".into(), SslMode::VerifyFull)
        );
        assert_eq!(
            split("postgres://a@db/x?connect_timeout=2&sslmode=verify-ca&sslmode=require"),
            (
                "postgres://a@db/x?connect_timeout=2".into(),
                SslMode::Require
            )
        );
        assert_eq!(split("postgres://a@db/x?sslmode=allow").1, SslMode::Prefer);
        assert_eq!(SslMode::VerifyCa.negotiation(), PgSslMode::Require);
        let said = split_mode("postgres://a@db/x?sslmode=verify")
            .unwrap_err()
            .to_string();
        assert!(
            said.contains("sslmode=verify is not a mode: use disable"),
            "{said}"
        );
    }

    #[test]
    fn a_ca_file_that_cannot_be_used_names_the_setting_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let said = |file: &Path| {
            connector(SslMode::VerifyFull, Some(file))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let gone = said(&missing);
        assert!(gone.starts_with("storage.sharedCaFile: "), "{gone}");
        assert!(gone.contains("missing.pem: cannot read it"), "{gone}");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        assert!(
            said(&empty).contains("holds no certificate"),
            "{}",
            said(&empty)
        );
        assert!(connector(SslMode::Require, None).is_ok());
    }
}
