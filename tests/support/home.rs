//! A throwaway home for one bot: a temp directory holding `settings.json`
//! and the data directory, plus helpers to run the real `ambient` binary in it.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};

use serde_json::{Value, json};

/// The `ambient` binary under test: cargo's build, or the one `AMBIENT_BIN`
/// names, so the load harness can compare two builds turn about.
pub fn bin() -> &'static str {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        std::env::var("AMBIENT_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_ambient").to_string())
    })
}

pub struct Home {
    pub dir: tempfile::TempDir,
    /// The binary this home runs, when not [`bin`] (see [`Home::with_own_binary`]).
    binary: Option<PathBuf>,
}

impl Home {
    /// A home whose settings are `extra` merged over a data dir inside it.
    pub fn new(extra: Value) -> Self {
        Self::in_dir(tempfile::tempdir().expect("tempdir"), extra)
    }

    /// [`Home::new`] in a directory made inside `parent` (homes side by side).
    pub fn new_in(parent: &Path, extra: Value) -> Self {
        Self::in_dir(tempfile::tempdir_in(parent).expect("tempdir"), extra)
    }

    fn in_dir(dir: tempfile::TempDir, extra: Value) -> Self {
        let mut settings =
            json!({ "storage": { "dataDir": dir.path().join("data").to_string_lossy() } });
        merge(&mut settings, extra);
        std::fs::write(
            dir.path().join("settings.json"),
            serde_json::to_string_pretty(&settings).unwrap(),
        )
        .unwrap();
        Self { dir, binary: None }
    }

    /// This home runs its own copy of the binary. Pages of a file that
    /// another process maps stay resident when the bot gives its start-up
    /// pages back (`MADV_PAGEOUT` leaves shared pages), so a test of that
    /// would see nothing given back while other tests' bots run the same
    /// file. The copy is flushed first: its pages are then clean, as an
    /// installed binary's are, and can be dropped.
    pub fn with_own_binary(mut self) -> Self {
        let own = self.path().join("ambient-own");
        std::fs::copy(bin(), &own).expect("copy the binary under test");
        std::fs::File::open(&own)
            .and_then(|f| f.sync_all())
            .expect("flush the copy");
        self.binary = Some(own);
        self
    }

    /// Changes `settings.json` as an editor saves it: `change` merged over
    /// the file, written to a temporary file and renamed over the original.
    pub fn edit_settings(&self, change: Value) {
        let path = self.path().join("settings.json");
        let mut settings: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        merge(&mut settings, change);
        self.write_settings(&serde_json::to_string_pretty(&settings).unwrap());
    }

    /// Replaces `settings.json` with `text` at once (temporary file and rename).
    pub fn write_settings(&self, text: &str) {
        let tmp = self.path().join(".settings.json.tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, self.path().join("settings.json")).unwrap();
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The binary this home runs: its own copy, if it has one, else [`bin`].
    fn binary(&self) -> &Path {
        self.binary.as_deref().unwrap_or(Path::new(bin()))
    }

    /// `ambient ARGS` run in this home, with no secrets in its environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(self.binary());
        cmd.args(args)
            .current_dir(self.path())
            .env_remove("DISCORD_TOKEN")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENROUTER_API_KEY")
            // The runtime's default (one worker) is what the tests run.
            .env_remove("TOKIO_WORKER_THREADS")
            .env("RUST_LOG", "warn");
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run ambient")
    }

    /// A shell line run exactly as a README shows it, in this home, with
    /// `ambient` on the PATH (the binary under test) and `env` set.
    pub fn shell(&self, line: &str, env: &[(&str, &str)]) -> Output {
        let bin_dir = self.path().join("bin");
        if !bin_dir.join("ambient").exists() {
            std::fs::create_dir_all(&bin_dir).unwrap();
            std::os::unix::fs::symlink(self.binary(), bin_dir.join("ambient")).unwrap();
        }
        let path = format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = self.command(&[]);
        cmd.env("PATH", path);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut sh = Command::new("sh");
        sh.arg("-c").arg(line).current_dir(self.path());
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => sh.env(k, v),
                None => sh.env_remove(k),
            };
        }
        sh.stdin(Stdio::null()).output().expect("run sh")
    }

    /// Pipes `input` into `ambient console --json` and returns its JSON events.
    pub fn console(&self, input: &str) -> (Vec<Value>, Output) {
        self.console_with(input, &[])
    }

    /// Like [`Home::console`], with extra environment variables and arguments.
    pub fn console_with(&self, input: &str, env: &[(&str, &str)]) -> (Vec<Value>, Output) {
        self.console_raw(input.as_bytes(), env)
    }

    /// Like [`Home::console`], with input that need not be text.
    pub fn console_bytes(&self, input: &[u8]) -> (Vec<Value>, Output) {
        self.console_raw(input, &[])
    }

    fn console_raw(&self, input: &[u8], env: &[(&str, &str)]) -> (Vec<Value>, Output) {
        let mut cmd = self.command(&["console", "--json", "--user", "ada"]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn console");
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        let events = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect();
        (events, out)
    }

    /// A console kept running, for tests that talk to it line by line.
    pub fn spawn_console(&self) -> LiveConsole {
        let mut child = self
            .command(&["console", "--json"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn console");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        LiveConsole {
            child,
            stdin,
            stdout,
        }
    }
}

pub struct LiveConsole {
    pub child: Child,
    pub stdin: ChildStdin,
    pub stdout: BufReader<ChildStdout>,
}

impl LiveConsole {
    pub fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next event whose "event" field is `kind`.
    pub fn next_event(&mut self, kind: &str) -> Value {
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "console ended before a {kind} event");
            let v: Value = serde_json::from_str(line.trim()).unwrap();
            if v["event"] == kind {
                return v;
            }
        }
    }
}

pub fn merge(base: &mut Value, extra: Value) {
    match (base, extra) {
        (Value::Object(b), Value::Object(e)) => {
            for (k, v) in e {
                merge(b.entry(k).or_insert(Value::Null), v);
            }
        }
        (b, e) => *b = e,
    }
}

pub fn events_of<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == kind).collect()
}

/// The text of every notice the console printed, in order.
pub fn notices(events: &[Value]) -> Vec<&str> {
    events_of(events, "notice")
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect()
}
