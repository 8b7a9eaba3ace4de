//! A throwaway PostgreSQL cluster for the shared-database tests: `initdb`
//! into a temp dir, `pg_ctl start` on a free 127.0.0.1 port with its socket
//! in that dir and `fsync=off` (nothing here needs to survive a crash of
//! the machine), stopped and removed when dropped.
//!
//! The server binaries come from `PATH` or Debian's
//! `/usr/lib/postgresql/<version>/bin` (`./dev.sh test` installs the
//! package where it can). PostgreSQL refuses to run as root, so as root the
//! cluster is made and run by the `postgres` user, who owns the temp dir.
//! [`Postgres::start`] says on stderr why it cannot start one and returns
//! `None`: the test then returns without checking anything.
//!
//! [`Postgres::start_with_tls`] turns TLS on: a throwaway CA and a server
//! certificate for `localhost` and `127.0.0.1` made with the `openssl` CLI,
//! and TCP connections accepted only over TLS (`hostssl`).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Postgres {
    bin: PathBuf,
    /// As root: the user the server runs as.
    run_as: Option<&'static str>,
    port: u16,
    /// Connections over TCP must give it (SCRAM); `None`: trusted.
    password: Option<String>,
    /// TLS on, and required of TCP connections.
    tls: bool,
    dir: tempfile::TempDir,
}

/// The CA's name, and the names the server's certificate holds.
pub const TEST_CA: &str = "ambient test CA";
const SERVER_NAMES: &str = "subjectAltName=DNS:localhost,IP:127.0.0.1";

/// Where `initdb`, `pg_ctl` and `postgres` are, if anywhere.
fn server_bin() -> Option<PathBuf> {
    let mut debian: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("pg_ctl").is_file())
        .collect();
    // The newest version: the directories are named by it.
    debian.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    if let Some(b) = debian.pop() {
        return Some(b);
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
    })
}

fn is_root() -> bool {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() == 0 }
}

impl Postgres {
    /// A new cluster, started; `None` (said on stderr) when it cannot be.
    pub fn start() -> Option<Self> {
        Self::start_as(None)
    }

    /// [`Postgres::start`], where a connection over TCP must give `password`.
    pub fn start_with_password(password: &str) -> Option<Self> {
        Self::start_as(Some(password.to_string()))
    }

    /// [`Postgres::start`] with TLS required of TCP connections; its CA's
    /// certificate is [`Postgres::ca_file`]. `None` (said on stderr) also
    /// without the `openssl` CLI.
    pub fn start_with_tls() -> Option<Self> {
        Self::start_tls(None)
    }

    /// [`Postgres::start_with_tls`], where a connection must give `password`.
    pub fn start_with_tls_and_password(password: &str) -> Option<Self> {
        Self::start_tls(Some(password.to_string()))
    }

    fn start_tls(password: Option<String>) -> Option<Self> {
        if !Command::new("openssl")
            .arg("version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            eprintln!("SKIPPED: no TLS PostgreSQL for this test: no openssl CLI on PATH");
            return None;
        }
        Self::start_with(password, true)
    }

    fn start_as(password: Option<String>) -> Option<Self> {
        Self::start_with(password, false)
    }

    fn start_with(password: Option<String>, tls: bool) -> Option<Self> {
        let skip = |why: String| {
            eprintln!(
                "SKIPPED: no PostgreSQL for this test: {why} (./dev.sh test installs the postgresql package)"
            );
            None
        };
        let Some(bin) = server_bin() else {
            return skip("no initdb and pg_ctl on PATH or in /usr/lib/postgresql/*/bin".into());
        };
        let run_as = is_root().then_some("postgres");
        let dir = tempfile::Builder::new()
            .prefix("ambient-pg-")
            .tempdir()
            .expect("tempdir");
        if let Some(user) = run_as {
            let owned = Command::new("chown")
                .args([user, &dir.path().display().to_string()])
                .status();
            if !owned.is_ok_and(|s| s.success()) {
                return skip(format!(
                    "cannot give {} to the {user} user",
                    dir.path().display()
                ));
            }
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let pg = Self {
            bin,
            run_as,
            port,
            password,
            tls,
            dir,
        };
        let data = pg.data().display().to_string();
        let mut auth = vec!["--auth=trust".to_string()];
        // With a password: the socket stays trusted (the harness's own
        // pg_ctl), TCP connections must give it.
        if let Some(pw) = &pg.password {
            let file = pg.dir.path().join("pwfile");
            std::fs::write(&file, pw).expect("write the password file");
            if let Some(user) = pg.run_as {
                // Harmless if it fails: initdb then says it cannot read the file.
                let _ = Command::new("chown").arg(user).arg(&file).status();
            }
            auth = vec![
                "--auth-local=trust".into(),
                "--auth-host=scram-sha-256".into(),
                format!("--pwfile={}", file.display()),
            ];
        }
        let mut args = vec!["-D", &data, "-U", "postgres", "-E", "UTF8", "--no-sync"];
        args.push("--no-instructions");
        args.extend(auth.iter().map(String::as_str));
        let made = pg.run("initdb", &args);
        if !made.status.success() {
            return skip(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&made.stderr)
            ));
        }
        if tls && let Err(why) = pg.make_tls() {
            return skip(why);
        }
        if let Err(why) = pg.try_start() {
            return skip(why);
        }
        Some(pg)
    }

    /// The CA's certificate (PEM) when TLS is on.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.crt")
    }

    /// The CA and the server's key and certificate, and `hostssl` in place
    /// of `host` in pg_hba.conf.
    fn make_tls(&self) -> Result<(), String> {
        let at = |f: &str| self.dir.path().join(f).display().to_string();
        let (ca_key, ca_crt) = (at("ca.key"), at("ca.crt"));
        let (key, csr, crt) = (at("server.key"), at("server.csr"), at("server.crt"));
        let ca_name = format!("/CN={TEST_CA}");
        // EC keys: quick to make, and what rustls and PostgreSQL both take.
        let new_key = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        let steps: [Vec<&str>; 3] = [
            [
                &["req", "-x509", "-days", "2", "-subj", &ca_name][..],
                &new_key,
                &["-keyout", &ca_key, "-out", &ca_crt],
                &["-addext", "basicConstraints=critical,CA:TRUE"],
                &["-addext", "keyUsage=critical,keyCertSign"],
            ]
            .concat(),
            [
                &["req", "-subj", "/CN=localhost", "-addext", SERVER_NAMES][..],
                &new_key,
                &["-keyout", &key, "-out", &csr],
            ]
            .concat(),
            vec![
                "x509",
                "-req",
                "-days",
                "2",
                "-copy_extensions",
                "copy",
                "-in",
                &csr,
                "-CA",
                &ca_crt,
                "-CAkey",
                &ca_key,
                "-CAcreateserial",
                "-out",
                &crt,
            ],
        ];
        for args in steps {
            let out = Command::new("openssl")
                .args(&args)
                .output()
                .map_err(|e| format!("cannot run openssl: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "openssl {}: {}",
                    args[0],
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
        // The server refuses a key others can read, or one it does not own.
        let key = self.dir.path().join("server.key");
        std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .map_err(|e| format!("chmod server.key: {e}"))?;
        if let Some(user) = self.run_as {
            let owned = Command::new("chown").arg(user).arg(&key).status();
            if !owned.is_ok_and(|s| s.success()) {
                return Err(format!("cannot give server.key to the {user} user"));
            }
        }
        let hba = self.data().join("pg_hba.conf");
        let rules = std::fs::read_to_string(&hba).map_err(|e| format!("pg_hba.conf: {e}"))?;
        let rules: String = rules
            .lines()
            .map(|l| match l.strip_prefix("host ") {
                Some(rest) => format!("hostssl {rest}\n"),
                None => format!("{l}\n"),
            })
            .collect();
        std::fs::write(&hba, rules).map_err(|e| format!("pg_hba.conf: {e}"))
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn run(&self, tool: &str, args: &[&str]) -> Output {
        let exe = self.bin.join(tool);
        let mut cmd = match self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        // The cluster's own locale settings: the machine's may not exist.
        if let Some(pw) = &self.password {
            cmd.env("PGPASSWORD", pw);
        }
        cmd.args(args)
            .env("LC_ALL", "C")
            .current_dir(self.dir.path())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()))
    }

    fn try_start(&self) -> Result<(), String> {
        let mut options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off \
             -c full_page_writes=off -c max_connections=40",
            self.port,
            self.dir.path().display()
        );
        if self.tls {
            let dir = self.dir.path().display();
            options.push_str(&format!(
                " -c ssl=on -c ssl_cert_file={dir}/server.crt -c ssl_key_file={dir}/server.key"
            ));
        }
        let log = self.dir.path().join("server.log").display().to_string();
        let data = self.data().display().to_string();
        let started = self.run(
            "pg_ctl",
            &[
                "-D", &data, "-l", &log, "-w", "-t", "60", "-o", &options, "start",
            ],
        );
        if started.status.success() {
            return Ok(());
        }
        Err(format!(
            "pg_ctl start failed: {}{}",
            String::from_utf8_lossy(&started.stderr),
            std::fs::read_to_string(&log).unwrap_or_default()
        ))
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server (fast: connections are closed) and waits until it has.
    pub fn stop(&self) {
        let data = self.data().display().to_string();
        let stopped = self.run("pg_ctl", &["-D", &data, "-m", "fast", "-w", "stop"]);
        assert!(
            stopped.status.success(),
            "pg_ctl stop: {}",
            String::from_utf8_lossy(&stopped.stderr)
        );
    }

    /// Starts the stopped server again on the same port and data.
    pub fn restart(&self) {
        self.try_start().unwrap_or_else(|e| panic!("{e}"));
    }

    /// Runs `sql` with `psql`, as the tests' eye on the database; its output.
    pub fn psql(&self, sql: &str) -> String {
        let out = self.run(
            "psql",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-XAtq",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ],
        );
        assert!(
            out.status.success(),
            "psql {sql:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.data().display().to_string();
        // Already stopped by the test, or never fully started: nothing to stop.
        let _ = self.run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]);
    }
}
