//! TLS to the shared database (`storage.sharedUrl`'s `sslmode`,
//! `storage.sharedCaFile`), against a real PostgreSQL that accepts TCP
//! connections only over TLS, with a certificate from a throwaway CA for
//! `localhost` and `127.0.0.1` (`support::postgres`). Without PostgreSQL or
//! the openssl CLI the tests say so and return.

use std::path::Path;

use ambient::store::shared::people::PgLedger;
use ambient::store::shared::{SharedDb, SharedError, config};
use serde_json::json;

use crate::shared_postgres::an_append_wakes_the_other_listener;
use crate::support::home::Home;
use crate::support::postgres::Postgres;
use crate::support::readme;

/// Whether this session's connection is encrypted, as the server sees it.
const ENCRYPTED: &str = "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()";

/// Connects to `url` as a process would and asks the server whether the
/// session is encrypted; the connection's error otherwise.
fn encrypted(url: &str, ca_file: Option<&Path>) -> Result<bool, SharedError> {
    let db = SharedDb::new(config(url, None, ca_file)?)?;
    let on = db.clone();
    db.block_on(async move {
        on.with_client(async |c| {
            c.query_one(ENCRYPTED, &[])
                .await
                .map(|row| row.get(0))
                .map_err(|e| SharedError::Refused(e.to_string()))
        })
        .await
    })
}

/// `postgres://postgres@NAME:PORT/postgres?…`, reached at 127.0.0.1
/// whatever `name` is (`hostaddr`), so `name` is only what TLS checks.
fn url_as(pg: &Postgres, name: &str, query: &str) -> String {
    format!(
        "postgres://postgres@{name}:{}/postgres?hostaddr=127.0.0.1&{query}",
        pg.port()
    )
}

/// `sslmode=require` encrypts the session without checking the
/// certificate (libpq's meaning: the test CA is trusted nowhere here);
/// `prefer`, the default, speaks TLS to a server that offers it; a server
/// that demands TLS refuses `disable`.
#[test]
fn require_and_prefer_encrypt_the_session() {
    let Some(pg) = Postgres::start_with_tls() else {
        return;
    };
    let url = pg.url();
    assert!(encrypted(&format!("{url}?sslmode=require"), None).unwrap());
    assert!(
        encrypted(&url, None).unwrap(),
        "prefer speaks TLS when offered"
    );
    let plain = encrypted(&format!("{url}?sslmode=disable"), None).unwrap_err();
    assert!(
        plain.to_string().contains("no encryption"),
        "the cluster refuses plain connections: {plain}"
    );
}

/// verify-full trusts the CA of `storage.sharedCaFile`, and refuses the
/// same server without it (the public roots do not know the test CA) or
/// reached by a name its certificate does not hold; verify-ca checks the
/// chain alone, whatever the name.
#[test]
fn verify_full_checks_the_ca_and_the_host_name() {
    let Some(pg) = Postgres::start_with_tls() else {
        return;
    };
    let ca = pg.ca_file();
    let full = format!("{}?sslmode=verify-full", pg.url());
    assert!(encrypted(&full, Some(&ca)).unwrap());
    assert!(encrypted(&url_as(&pg, "localhost", "sslmode=verify-full"), Some(&ca)).unwrap());

    let unknown = encrypted(&full, None).unwrap_err().to_string();
    assert!(
        unknown.starts_with(&format!(
            "cannot reach PostgreSQL at postgres@127.0.0.1:{}/postgres: error performing TLS \
             handshake: invalid peer certificate: UnknownIssuer (sslmode=verify-full trusts the \
             certificates of storage.sharedCaFile, else the public roots)",
            pg.port()
        )),
        "{unknown}"
    );

    let elsewhere = url_as(&pg, "db.elsewhere.test", "sslmode=verify-full");
    let wrong_name = encrypted(&elsewhere, Some(&ca)).unwrap_err().to_string();
    assert!(
        wrong_name.contains("certificate not valid for name \"db.elsewhere.test\""),
        "{wrong_name}"
    );

    let chain_only = url_as(&pg, "db.elsewhere.test", "sslmode=verify-ca");
    assert!(encrypted(&chain_only, Some(&ca)).unwrap());
    let untrusted = encrypted(&chain_only, None).unwrap_err().to_string();
    assert!(untrusted.contains("UnknownIssuer"), "{untrusted}");
}

/// The README's TLS settings are valid as written, and with the test
/// server's place and CA in them `ambient shared migrate` and `ambient
/// shared check` work over verify-full; a CA file that cannot be read is
/// named, with the key, before anything is connected.
#[test]
fn the_shared_verbs_work_over_the_readme_s_verified_tls() {
    let example: serde_json::Value =
        serde_json::from_str(&readme::block("**TLS to PostgreSQL.**", "json")).unwrap();
    let as_written = Home::new(example.clone());
    let checked = as_written.run(&["settings", "check"]);
    assert!(checked.status.success(), "{checked:?}");
    let Some(pg) = Postgres::start_with_tls() else {
        return;
    };
    let url = example["storage"]["sharedUrl"].as_str().unwrap().replace(
        "ambient@db.internal:5432/ambient",
        &format!("postgres@127.0.0.1:{}/postgres", pg.port()),
    );
    assert!(url.ends_with("?sslmode=verify-full"), "{url}");
    let ca = pg.ca_file().display().to_string();
    let home = Home::new(json!({"storage": {"sharedUrl": url, "sharedCaFile": ca}}));
    let said = |verb: &str| {
        let out = home.run(&["shared", verb]);
        let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        (out.status.code(), text.trim().to_string())
    };
    let (code, out) = said("migrate");
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.ends_with("shared schema migrated from version 0 to 2"),
        "{out}"
    );
    let (code, out) = said("check");
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.starts_with(&format!(
            "✓ shared database: postgres@127.0.0.1:{}/postgres: PostgreSQL ",
            pg.port()
        )) && out.ends_with("shared schema version 2 of 2, people ledger 0 event(s), last 0"),
        "{out}"
    );

    home.edit_settings(json!({"storage": {"sharedCaFile": "/nonexistent/ca.pem"}}));
    let (code, out) = said("check");
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("storage.sharedCaFile: /nonexistent/ca.pem: cannot read it")
            && out.contains("→ correct storage.sharedCaFile"),
        "{out}"
    );
}

/// `ambient run` reads `storage.sharedCaFile` when it starts: one it
/// cannot read stops it, naming the key and the file, before any
/// connection (no PostgreSQL is needed to see it).
#[test]
fn a_process_whose_ca_file_cannot_be_read_does_not_start() {
    let discord = crate::support::fake_discord::FakeDiscord::start();
    let home = Home::new(json!({
        "discord": {"apiBaseUrl": discord.url},
        "storage": {
            "sharedUrl": "postgres://postgres@127.0.0.1:1/postgres?sslmode=verify-full",
            "sharedCaFile": "/nonexistent/ca.pem",
        },
    }));
    let out = home
        .command(&["run"])
        .env("DISCORD_TOKEN", "test-token-abc")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("storage.sharedCaFile: /nonexistent/ca.pem: cannot read it"),
        "{said}"
    );
    assert!(!said.contains("cannot reach PostgreSQL"), "{said}");
}

/// The people ledger works over verify-full: one process's append wakes
/// another's `LISTEN`, on its own TLS connection, and the event reads back.
#[test]
fn the_people_ledger_appends_and_notifies_over_verified_tls() {
    let Some(pg) = Postgres::start_with_tls() else {
        return;
    };
    let url = format!("{}?sslmode=verify-full", pg.url());
    let ledger = |writer: &str| {
        let target = config(&url, None, Some(&pg.ca_file())).unwrap();
        PgLedger::open(SharedDb::new(target).unwrap(), writer).unwrap()
    };
    let (a, b) = (ledger("0/2"), ledger("1/2"));
    let _listening = an_append_wakes_the_other_listener(&a, &b);
    assert_eq!(
        pg.psql(
            "SELECT count(*) FILTER (WHERE ssl) || ' of ' || count(*) FROM pg_stat_ssl \
             JOIN pg_stat_activity USING (pid) WHERE application_name = 'ambient'"
        ),
        "3 of 3",
        "two statement connections and one listening, all encrypted"
    );
}

/// A password (SCRAM, from `PGPASSWORD`) over verify-full, with the
/// session bound to the TLS channel (`channel_binding=require`: the server
/// proves it saw the same certificate, so the password went to it alone).
#[test]
fn scram_binds_to_the_tls_channel() {
    let Some(pg) = Postgres::start_with_tls_and_password("s3cret-pg-pass") else {
        return;
    };
    let url = format!("{}?sslmode=verify-full&channel_binding=require", pg.url());
    let ca = pg.ca_file().display().to_string();
    let home = Home::new(json!({"storage": {"sharedUrl": url, "sharedCaFile": ca}}));
    let check = |password: &str| {
        let out = home
            .command(&["shared", "check"])
            .env("PGPASSWORD", password)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        (out.status.code(), said.trim().to_string())
    };
    let (code, said) = check("s3cret-pg-pass");
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains(&format!(
            "shared database: postgres@127.0.0.1:{}/postgres: PostgreSQL ",
            pg.port()
        )),
        "{said}"
    );
    let (code, said) = check("wrong-pass-here");
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("password authentication failed"), "{said}");
}
