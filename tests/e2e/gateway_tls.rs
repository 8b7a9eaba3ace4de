//! The gateway over TLS: Discord's is `wss://`, where every other test's
//! fake gateway is plain `ws://`. The bot's WebSocket crate builds its TLS
//! client on the process's rustls and checks the certificate against the
//! public authorities' roots; a gateway whose certificate none of them
//! signed is refused in the handshake, before a token is sent.
//!
//! The certificate is made with the `openssl` CLI; without it the test says
//! so and returns.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::json;

use crate::support::bot::Bot;
use crate::support::fake_discord::FakeDiscord;

/// A self-signed certificate for 127.0.0.1 in `dir` (`crt.pem`, `key.pem`),
/// or why not.
fn self_signed(dir: &Path) -> Result<(), String> {
    let out = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        // A server's own certificate, not an authority's (which webpki
        // refuses for another reason).
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(dir.join("key.pem"))
        .arg("-out")
        .arg(dir.join("crt.pem"))
        .output()
        .map_err(|e| format!("cannot run openssl: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(())
}

/// A TLS server on a free loopback port with the certificate in `dir`; each
/// connection's handshake ends in `outcomes`: "completed", or the error.
fn tls_server(dir: &Path, outcomes: Arc<Mutex<Vec<String>>>) -> u16 {
    let certs = CertificateDer::pem_file_iter(dir.join("crt.pem"))
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .expect("openssl wrote a certificate");
    let key = PrivateKeyDer::from_pem_file(dir.join("key.pem")).expect("openssl wrote a key");
    let config = Arc::new(
        rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .expect("a usable certificate"),
    );
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = listener.local_addr().expect("bound").port();
    std::thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(mut tcp) = tcp else { continue };
            // A client that stalls ends its handshake here, not the thread.
            tcp.set_read_timeout(Some(Duration::from_secs(10)))
                .expect("a timeout");
            let mut conn = rustls::ServerConnection::new(config.clone()).expect("a session");
            let outcome = loop {
                if !conn.is_handshaking() {
                    break "completed".to_string();
                }
                match conn.complete_io(&mut tcp) {
                    Ok((0, 0)) => break "closed before the handshake ended".to_string(),
                    Ok(_) => {}
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => break e.to_string(),
                }
            };
            outcomes.lock().unwrap().push(outcome);
        }
    });
    port
}

#[test]
fn a_gateway_whose_certificate_no_authority_signed_is_refused_before_identifying() {
    let dir = tempfile::tempdir().unwrap();
    if let Err(why) = self_signed(dir.path()) {
        eprintln!("SKIPPED: no certificate for a TLS gateway: {why}");
        return;
    }
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let port = tls_server(dir.path(), outcomes.clone());
    let discord = FakeDiscord::start();
    discord.with(|w| w.gateway_url = Some(format!("wss://127.0.0.1:{port}")));
    let bot = Bot::spawn(discord, json!({}), &[], "ambient=debug,serenity=warn");
    assert!(
        bot.discord
            .wait_until(30, |_| !outcomes.lock().unwrap().is_empty()),
        "the bot never opened a TLS connection to the gateway:\n{}",
        bot.log()
    );
    let first = outcomes.lock().unwrap()[0].clone();
    // rustls's client answers a certificate from an unknown issuer with the
    // `unknown_ca` alert.
    assert_eq!(first, "received fatal alert: UnknownCA", "{}", bot.log());
    assert_eq!(
        bot.discord.with(|w| w.identifies),
        0,
        "the bot identified to a gateway it should have refused"
    );
}
