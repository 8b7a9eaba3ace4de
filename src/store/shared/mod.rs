//! What spans hosts: the PostgreSQL database every process of the bot
//! shares (`storage.sharedUrl`), for processes that cannot share a
//! directory. It holds only what belongs to the whole bot — the people
//! ledger ([`people`]) and the daily budgets' leases ([`budget`]) — while each process keeps its servers in its own
//! SQLite store.
//!
//! [`SharedDb`] is a handle with its own small runtime: its connections
//! live there, so the store's synchronous callers (a boundary set from a
//! slash command) and async ones (the `LISTEN` loop) use the same database
//! without a runtime inside a runtime. One connection runs statements, one
//! per listener waits for notifications; a lost one is made again at the
//! next use. Every wait is bounded ([`CONNECT_TIMEOUT`], [`QUERY_TIMEOUT`]),
//! so an unreachable server is an error soon, never a hung reply. TLS is
//! spoken as the URL's `sslmode` asks ([`tls`]).
//!
//! The schema is versioned like the store's: `ambient_schema` lists the
//! migrations applied, [`SharedDb::migrate`] applies the missing ones under
//! an advisory lock, and a database newer than this ambient is refused.

pub mod budget;
pub mod people;
pub mod tls;

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio_postgres::config::Host;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{AsyncMessage, Client, Config, Socket};
use tokio_postgres_rustls::MakeRustlsConnect;

/// How long to wait for PostgreSQL to accept a connection.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// How long one operation (a statement, a transaction) may take.
pub(crate) const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// The advisory lock `migrate` holds: processes starting together take turns.
const MIGRATE_LOCK: i64 = 0x616d_6269_656e_7401;

/// One migration of the shared schema: its version, what it adds, its SQL.
struct Migration {
    version: i32,
    name: &'static str,
    sql: &'static str,
}

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "the people ledger: boundaries and forget-me, append-only, in sequence order",
        sql: people::SCHEMA,
    },
    Migration {
        version: 2,
        name: "budget leases: each process's grant of a role's daily tokens",
        sql: budget::SCHEMA,
    },
];

/// The shared schema's version this ambient knows.
pub(crate) fn known_version() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

#[derive(Debug, thiserror::Error)]
pub enum SharedError {
    #[error("storage.sharedUrl: {0}")]
    Url(String),
    #[error("cannot reach PostgreSQL at {place}: {reason}")]
    Unreachable { place: String, reason: String },
    #[error("PostgreSQL at {place} failed: {reason}")]
    Query { place: String, reason: String },
    #[error(
        "the shared schema at {place} is version {found}, newer than this ambient's {known}: \
         upgrade this ambient (every process of the bot runs the same version)"
    )]
    Newer {
        place: String,
        found: i32,
        known: i32,
    },
    #[error("storage.sharedCaFile: {0}")]
    CaFile(String),
    #[error("{0}")]
    Refused(String),
}

pub(crate) type Result<T> = std::result::Result<T, SharedError>;

/// Where `config` points, without secrets: `user@host:port/database`.
fn place_of(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!(
        "{}@{host}:{port}/{}",
        config.get_user().unwrap_or("?"),
        config.get_dbname().unwrap_or("?")
    )
}

/// Where the shared database is and how to speak to it: the connection
/// settings and the TLS its `sslmode` asks for.
pub struct Target {
    config: Config,
    mode: tls::SslMode,
    tls: MakeRustlsConnect,
}

impl Target {
    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn ssl_mode(&self) -> tls::SslMode {
        self.mode
    }
}

/// The connection settings from `url`, the password from the environment
/// (`PGPASSWORD`), and TLS as the URL's `sslmode` asks, trusting the PEM
/// certificates of `ca_file` (`storage.sharedCaFile`, read now) or else the
/// public roots. A password in the URL is refused (see `settings::shards`
/// for the same rules said to the operator).
pub fn config(url: &str, password: Option<&str>, ca_file: Option<&Path>) -> Result<Target> {
    let url = url.trim();
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(SharedError::Url("must start with postgres://".into()));
    }
    let (url, mode) = tls::split_mode(url)?;
    let mut config: Config = url
        .parse()
        .map_err(|e: tokio_postgres::Error| SharedError::Url(e.to_string()))?;
    if config.get_password().is_some() {
        return Err(SharedError::Url(
            "holds a password: remove it and set PGPASSWORD instead".into(),
        ));
    }
    config.ssl_mode(mode.negotiation());
    if config.get_user().is_none() {
        config.user(whoami_user());
    }
    if let Some(p) = password {
        config.password(p);
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    config.application_name("ambient");
    Ok(Target {
        config,
        mode,
        tls: tls::connector(mode, ca_file)?,
    })
}

/// PostgreSQL's own default user: the operating system's.
fn whoami_user() -> String {
    std::env::var("USER").unwrap_or_else(|_| "postgres".into())
}

/// The shared database; cheap to clone.
#[derive(Clone)]
pub struct SharedDb {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    mode: tls::SslMode,
    tls: MakeRustlsConnect,
    place: String,
    rt: Worker,
    client: tokio::sync::Mutex<Option<Client>>,
}

/// The runtime the connections live on. Shut down without waiting: the
/// last handle may be dropped on an async worker, where waiting panics.
struct Worker(Option<tokio::runtime::Runtime>);

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

impl std::fmt::Debug for SharedDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedDb({})", self.inner.place)
    }
}

impl SharedDb {
    /// A handle on the database `target` names; nothing is connected yet.
    pub fn new(target: Target) -> Result<Self> {
        let Target { config, mode, tls } = target;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("ambient-shared")
            .enable_all()
            .build()
            .map_err(|e| SharedError::Refused(format!("cannot start the shared worker: {e}")))?;
        Ok(Self {
            inner: Arc::new(Inner {
                place: place_of(&config),
                config,
                mode,
                tls,
                rt: Worker(Some(rt)),
                client: tokio::sync::Mutex::new(None),
            }),
        })
    }

    /// `user@host:port/database`, for messages.
    pub(crate) fn place(&self) -> &str {
        &self.inner.place
    }

    fn handle(&self) -> Result<&tokio::runtime::Handle> {
        self.inner
            .rt
            .0
            .as_ref()
            .map(|rt| rt.handle())
            .ok_or_else(|| SharedError::Refused("the shared worker has stopped".into()))
    }

    /// Runs `work` on the shared worker and waits for it: for synchronous
    /// callers, on an async worker or not (it blocks the thread, as a
    /// SQLite lock does, for at most the operation's timeout).
    pub fn block_on<T: Send + 'static>(
        &self,
        work: impl Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle()?.spawn(async move {
            // The receiver waits until this sends; gone only if the caller's thread is.
            let _ = tx.send(work.await);
        });
        rx.recv()
            .map_err(|_| SharedError::Refused("the shared worker stopped mid-operation".into()))?
    }

    fn unreachable(&self, reason: impl std::fmt::Display) -> SharedError {
        SharedError::Unreachable {
            place: self.inner.place.clone(),
            reason: reason.to_string(),
        }
    }

    /// A failed statement; on a closed connection, the next use makes a new one.
    pub(crate) fn failed(&self, e: tokio_postgres::Error) -> SharedError {
        if e.is_closed() {
            return self.unreachable(describe(&e));
        }
        SharedError::Query {
            place: self.inner.place.clone(),
            reason: describe(&e),
        }
    }

    /// A new connection, driven on the shared worker until it closes.
    async fn connect(&self) -> Result<(Client, Connection)> {
        let tls = self.inner.tls.clone();
        match tokio::time::timeout(CONNECT_TIMEOUT, self.inner.config.connect(tls)).await {
            Err(_) => {
                Err(self.unreachable(format!("no answer in {} s", CONNECT_TIMEOUT.as_secs())))
            }
            Ok(Err(e)) => Err(self.unreachable(self.describe_connect(&e))),
            Ok(Ok(pair)) => Ok(pair),
        }
    }

    /// Why a connection failed; a certificate refused also says what was
    /// trusted, the usual fix.
    fn describe_connect(&self, e: &tokio_postgres::Error) -> String {
        let said = describe(e);
        if !said.contains("invalid peer certificate") {
            return said;
        }
        format!(
            "{said} (sslmode={} trusts the certificates of storage.sharedCaFile, else the \
             public roots)",
            self.inner.mode.name()
        )
    }

    /// Runs `op` with the statement connection (made first if there is
    /// none or it closed), bounded by [`QUERY_TIMEOUT`].
    pub async fn with_client<T>(
        &self,
        op: impl AsyncFnOnce(&mut Client) -> Result<T>,
    ) -> Result<T> {
        let mut slot = self.inner.client.lock().await;
        if slot.as_ref().is_none_or(Client::is_closed) {
            let (client, conn) = self.connect().await?;
            self.handle()?.spawn(async move {
                if let Err(e) = conn.await {
                    tracing::debug!(error = %e, "the shared database's connection closed");
                }
            });
            *slot = Some(client);
        }
        let Some(client) = slot.as_mut() else {
            return Err(self.unreachable("no connection"));
        };
        match tokio::time::timeout(QUERY_TIMEOUT, op(client)).await {
            Ok(done) => done,
            Err(_) => {
                // A statement still running on it: the next use starts clean.
                *slot = None;
                Err(SharedError::Query {
                    place: self.inner.place.clone(),
                    reason: format!("no answer in {} s", QUERY_TIMEOUT.as_secs()),
                })
            }
        }
    }

    /// Applies the migrations this database lacks, in order, each in its own
    /// transaction under an advisory lock; (version before, version after).
    pub async fn migrate(&self) -> Result<(i32, i32)> {
        let this = self.clone();
        self.with_client(async move |c| {
            let tx = c.transaction().await.map_err(|e| this.failed(e))?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATE_LOCK])
                .await
                .map_err(|e| this.failed(e))?;
            tx.batch_execute(
                "CREATE TABLE IF NOT EXISTS ambient_schema (
                     version    INTEGER PRIMARY KEY,
                     name       TEXT NOT NULL,
                     applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
                 )",
            )
            .await
            .map_err(|e| this.failed(e))?;
            let from = version_in(&tx).await.map_err(|e| this.failed(e))?;
            this.refuse_newer(from)?;
            for m in MIGRATIONS.iter().filter(|m| m.version > from) {
                tx.batch_execute(m.sql).await.map_err(|e| this.failed(e))?;
                tx.execute(
                    "INSERT INTO ambient_schema (version, name) VALUES ($1, $2)",
                    &[&m.version, &m.name],
                )
                .await
                .map_err(|e| this.failed(e))?;
            }
            tx.commit().await.map_err(|e| this.failed(e))?;
            Ok((from, known_version()))
        })
        .await
    }

    fn refuse_newer(&self, found: i32) -> Result<()> {
        if found > known_version() {
            return Err(SharedError::Newer {
                place: self.inner.place.clone(),
                found,
                known: known_version(),
            });
        }
        Ok(())
    }

    /// What `ambient shared check` reports: the server, the schema's
    /// version, and the ledger's size. Changes nothing.
    pub(crate) async fn check(&self) -> Result<Checked> {
        let this = self.clone();
        self.with_client(async move |c| {
            let q = |e| this.failed(e);
            let server: String = c
                .query_one("SHOW server_version", &[])
                .await
                .map_err(q)?
                .get(0);
            let has_schema: bool = c
                .query_one("SELECT to_regclass('ambient_schema') IS NOT NULL", &[])
                .await
                .map_err(q)?
                .get(0);
            let version = if has_schema {
                version_in(&*c).await.map_err(q)?
            } else {
                0
            };
            this.refuse_newer(version)?;
            let (events, last) = if version >= 1 {
                let row = c
                    .query_one(
                        "SELECT count(*), coalesce(max(seq), 0) FROM people_events",
                        &[],
                    )
                    .await
                    .map_err(q)?;
                (row.get::<_, i64>(0), row.get::<_, i64>(1))
            } else {
                (0, 0)
            };
            Ok(Checked {
                place: this.place().to_string(),
                server,
                version,
                known: known_version(),
                events,
                last_seq: last,
            })
        })
        .await
    }

    /// A receiver woken (at most one wake-up waiting) each time someone
    /// runs `NOTIFY channel`, and once after every (re)connection, since
    /// what was sent while not listening was missed. Listens on its own
    /// connection, made again a second after it is lost, until the
    /// receiver is dropped.
    pub(crate) fn listen(&self, channel: &'static str) -> Result<tokio::sync::mpsc::Receiver<()>> {
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        let this = self.clone();
        self.handle()?.spawn(async move {
            while !tx.is_closed() {
                if let Err(e) = this.listen_once(channel, &tx).await {
                    tracing::debug!(error = %e, "not listening to the shared database; again in 1 s");
                }
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = tx.closed() => return,
                }
            }
        });
        Ok(rx)
    }

    async fn listen_once(&self, channel: &str, tx: &tokio::sync::mpsc::Sender<()>) -> Result<()> {
        let (client, mut conn) = self.connect().await?;
        let wake = tx.clone();
        let mut messages = futures_util::stream::poll_fn(move |cx| conn.poll_message(cx));
        // The connection is driven by reading its messages; LISTEN is sent meanwhile.
        let driven = async move {
            while let Some(m) = messages.next().await {
                match m {
                    Ok(AsyncMessage::Notification(_)) => {
                        // Full: a wake-up already waits, and covers this one.
                        let _ = wake.try_send(());
                    }
                    Ok(_) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        };
        let listening = async {
            client
                .batch_execute(&format!("LISTEN {channel}"))
                .await
                .map_err(|e| self.failed(e))?;
            // Full: a wake-up already waits, and covers this one.
            let _ = tx.try_send(());
            std::future::pending::<Result<()>>().await
        };
        tokio::select! {
            ended = driven => ended.map_err(|e| self.unreachable(e)),
            failed = listening => failed,
            _ = tx.closed() => Ok(()),
        }
    }
}

/// A connection to the shared database, TLS or not as `sslmode` made it.
type Connection =
    tokio_postgres::Connection<Socket, <MakeRustlsConnect as MakeTlsConnect<Socket>>::Stream>;

/// What the server said (its own message, "password authentication failed
/// for user …"), or the client's error when the server said nothing.
fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(d) = e.as_db_error() {
        return d.message().to_string();
    }
    // "invalid configuration" alone does not say "password missing".
    match std::error::Error::source(e) {
        Some(why) if !e.to_string().contains(&why.to_string()) => format!("{e}: {why}"),
        _ => e.to_string(),
    }
}

/// The highest migration applied (0: none).
async fn version_in(
    c: &impl tokio_postgres::GenericClient,
) -> std::result::Result<i32, tokio_postgres::Error> {
    Ok(
        c.query_one("SELECT coalesce(max(version), 0) FROM ambient_schema", &[])
            .await?
            .get(0),
    )
}

/// What `ambient shared check` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Checked {
    pub place: String,
    pub server: String,
    pub version: i32,
    pub known: i32,
    pub events: i64,
    pub last_seq: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_names_its_place_keeps_passwords_out_and_asks_for_tls_as_it_says() {
        let t = config(
            "postgres://ambient@db.example:6543/bot",
            Some("hunter2"),
            None,
        )
        .unwrap();
        assert_eq!(place_of(t.config()), "ambient@db.example:6543/bot");
        assert_eq!(t.config().get_password(), Some(&b"hunter2"[..]));
        assert_eq!(t.ssl_mode(), tls::SslMode::Prefer);
        let said = |url| config(url, None, None).err().unwrap().to_string();
        assert!(
            said("postgres://a:pw@db/x").contains("PGPASSWORD"),
            "{}",
            said("postgres://a:pw@db/x")
        );
        let full = config("postgres://a@db/x?sslmode=verify-full", None, None).unwrap();
        assert_eq!(full.ssl_mode(), tls::SslMode::VerifyFull);
        assert_eq!(
            full.config().get_ssl_mode(),
            tokio_postgres::config::SslMode::Require
        );
        assert!(said("postgres://a@db/x?sslmode=sometimes").contains("verify-full"));
        assert!(said("mysql://a@db/x").contains("postgres://"));
    }
}
