//! `ambient replay` against what issue 35 found: a kept directory that is a
//! live bot's, an export with a field of hundreds of megabytes or a time no
//! Discord message can have, a pinned endpoint that was sent the operator's
//! key, and a live replay with no model that reported $0 as if that meant
//! something. Each test runs the real binary as a person would.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::replay_cli::home;
use crate::support::home::Home;
use crate::support::model_server::{ModelServer, Scripted};

fn run(home: &Home, line: &str, env: &[(&str, &str)]) -> (String, String, bool) {
    let out = home.shell(line, env);
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

/// Every file under `dir` with its bytes: what "nothing was written" compares.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            for (name, bytes) in snapshot(&path) {
                files.insert(format!("{}/{name}", path.display()), bytes);
            }
        } else {
            files.insert(path.display().to_string(), std::fs::read(&path).unwrap());
        }
    }
    files
}

// --- --keep DIR -----------------------------------------------------------------------------

#[test]
fn keep_refuses_a_live_bots_data_directory_and_writes_nothing_there() {
    let home = home();
    let (_, stderr, ok) = run(
        &home,
        "ambient remember 'a memory of the bot' --guild 42",
        &[],
    );
    assert!(ok, "{stderr}");
    let data = home.data_dir();
    assert!(data.join(ambient::store::DB_FILE).exists());
    let before = snapshot(&data);

    for line in [
        "ambient replay examples/replay/sample.jsonl --keep data",
        "ambient replay examples/replay/sample.jsonl --keep data --eagerness 0,50",
    ] {
        let (stdout, stderr, ok) = run(&home, line, &[]);
        assert!(!ok, "{line} replayed into the bot's data directory");
        assert!(
            stderr.contains("--keep data: it holds a bot's store (ambient.db)"),
            "{line}: {stderr}"
        );
        assert!(stderr.contains("an empty or new directory"), "{stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert_eq!(
            snapshot(&data),
            before,
            "{line}: the bot's data directory was written to"
        );
    }
}

#[test]
fn keep_refuses_a_directory_another_process_holds_the_lock_of() {
    let home = home();
    let held = home.path().join("held");
    std::fs::create_dir(&held).unwrap();
    let mut lock = std::fs::File::create(held.join("ambient.lock")).unwrap();
    lock.lock().unwrap();
    write!(lock, "{}", std::process::id()).unwrap();

    let (stdout, stderr, ok) = run(
        &home,
        "ambient replay examples/replay/sample.jsonl --keep held",
        &[],
    );
    assert!(!ok, "replayed into a locked directory");
    assert!(
        stderr.contains(&format!(
            "--keep held: it holds the lock of a bot's data directory (ambient.lock, pid {})",
            std::process::id()
        )),
        "{stderr}"
    );
    assert!(stdout.is_empty(), "{stdout}");
    let names: Vec<_> = std::fs::read_dir(&held)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        ["ambient.lock"],
        "nothing was added next to the lock"
    );

    // An empty directory that already exists is fine, as a new one is.
    std::fs::create_dir(home.path().join("empty")).unwrap();
    let (_, stderr, ok) = run(
        &home,
        "ambient replay examples/replay/sample.jsonl --keep empty",
        &[],
    );
    assert!(ok, "{stderr}");
    assert!(
        home.path()
            .join("empty")
            .join(ambient::store::DB_FILE)
            .exists()
    );
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `--keep .` put a store among the person's files; a directory kept by an
/// earlier replay was refused later as "the lock of a bot's data directory",
/// naming the pid of a replay long gone. Now anything but an empty or new
/// directory is refused before anything is written, saying what is in it.
#[test]
fn keep_takes_only_an_empty_or_new_directory_and_says_what_is_in_another() {
    let home = home();
    // The shell puts `ambient` on the PATH (bin/) the first time: before the look.
    run(&home, "true", &[]);
    let before = names_in(home.path());
    let (stdout, stderr, ok) = run(
        &home,
        "ambient replay examples/replay/sample.jsonl --keep .",
        &[],
    );
    assert!(!ok, "replayed into the current directory: {stdout}");
    assert!(
        stderr.contains("--keep .: it is not empty (it holds "),
        "{stderr}"
    );
    assert!(
        stderr.contains("a replay keeps its data only in an empty or new directory"),
        "{stderr}"
    );
    assert_eq!(names_in(home.path()), before, "--keep . wrote there");

    for keep in ["kept", "sweep --eagerness 0,50"] {
        let line = format!("ambient replay examples/replay/sample.jsonl --keep {keep}");
        let (_, stderr, ok) = run(&home, &line, &[]);
        assert!(ok, "{line}: {stderr}");
        let dir = home.path().join(keep.split(' ').next().unwrap());
        let kept = snapshot(&dir);
        let (stdout, stderr, ok) = run(&home, &line, &[]);
        assert!(
            !ok,
            "{line} replayed again into the same directory: {stdout}"
        );
        assert!(
            stderr.contains("it holds the data an earlier replay kept ("),
            "{line}: {stderr}"
        );
        assert!(
            stderr.contains("remove it first, or name another one"),
            "{stderr}"
        );
        assert!(
            !stderr.contains("pid"),
            "{line}: a dead replay's pid: {stderr}"
        );
        assert_eq!(snapshot(&dir), kept, "{line}: the kept data changed");
    }
    assert_eq!(
        names_in(&home.path().join("sweep")),
        ["eagerness-0", "eagerness-50"]
    );
    let marker = std::fs::read_to_string(home.path().join("kept").join("replay.txt")).unwrap();
    assert!(
        marker.contains("`ambient replay` did with examples/replay/sample.jsonl"),
        "{marker}"
    );
}

// --- bounds -----------------------------------------------------------------------------------

/// Runs `cmd` to its end and returns whether it succeeded and the peak of
/// its resident memory in KiB, as its own `VmHWM` shows it while it runs.
/// Not `getrusage`: a child spawned from this test process starts with the
/// test process's own high-water mark (the kernel counts it at `exec`), and
/// with the other tests running here that is often past any bound.
fn peak_memory_kib(mut cmd: Command) -> (bool, u64) {
    let mut child = cmd.spawn().expect("run ambient");
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        // The mark only grows; read until the process ends (a big field takes seconds to read).
        if let Some(kib) = std::fs::read_to_string(&status)
            .ok()
            .and_then(|s| high_water_kib(&s))
        {
            peak = peak.max(kib);
        }
        if let Some(exit) = child.try_wait().unwrap() {
            return (exit.success(), peak);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `VmHWM` of a `/proc/PID/status` text, in KiB.
fn high_water_kib(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Writes `unit` repeated to about `n` bytes (whole units only) without holding them.
fn repeat(out: &mut impl std::io::Write, unit: &str, n: usize) {
    let per_block = (64 * 1024 / unit.len()).max(1);
    let block = unit.repeat(per_block);
    let mut units = n / unit.len();
    while units > 0 {
        let take = units.min(per_block);
        out.write_all(&block.as_bytes()[..take * unit.len()])
            .unwrap();
        units -= take;
    }
}

const MB: usize = 1024 * 1024;

#[test]
fn a_field_of_hundreds_of_megabytes_is_cut_while_streaming_in_bounded_memory() {
    let home = home();
    let path = home.path().join("huge.json");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let message = |id: u64, ts: &str, content: &str| {
        format!(
            r#"{{"id": "{id}", "type": "Default", "timestamp": "{ts}", "content": "{content}",
                "author": {{"id": "5", "name": "dana", "isBot": false}}, "mentions": []}}"#
        )
    };
    // A server name of 100 MB, and one message of 200 MB among ordinary ones.
    write!(out, r#"{{"guild": {{"id": "1", "name": "Tide"#).unwrap();
    repeat(&mut out, "pool", 100 * MB);
    write!(
        out,
        r#""}}, "channel": {{"id": "2", "name": "general"}}, "messages": [{}, "#,
        message(10, "2024-05-01T18:30:00+00:00", "before the long one")
    )
    .unwrap();
    write!(
        out,
        r#"{{"id": "11", "type": "Default", "timestamp": "2024-05-01T18:31:00+00:00", "content": "#
    )
    .unwrap();
    write!(out, "\"").unwrap();
    repeat(&mut out, "all work and no play \\\"ok\\\" é ", 200 * MB);
    write!(
        out,
        r#"", "author": {{"id": "6", "name": "jack", "isBot": false}}}}, {}]}}"#,
        message(12, "2024-05-01T18:32:00+00:00", "after the long one")
    )
    .unwrap();
    out.flush().unwrap();
    drop(out);

    let mut cmd = home.command(&[
        "replay",
        "huge.json",
        "--format",
        "json",
        "--html",
        "page.html",
    ]);
    let stdout = std::fs::File::create(home.path().join("stdout")).unwrap();
    let stderr = std::fs::File::create(home.path().join("stderr")).unwrap();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr));
    let (ok, peak_kib) = peak_memory_kib(cmd);
    let stderr = std::fs::read_to_string(home.path().join("stderr")).unwrap();
    assert!(ok, "{stderr}");
    // The whole bot runs in about 50 MB; holding the 200 MB field once, as
    // serde_json's scratch buffer or as a String, would pass this bound.
    assert!(
        peak_kib < 160 * 1024,
        "the replay peaked at {} MB",
        peak_kib / 1024
    );

    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("stdout")).unwrap())
            .unwrap();
    assert_eq!(report["messages"], 3);
    let guild = report["run"]["guild"].as_str().unwrap();
    assert!(
        guild.starts_with("Tidepoolpool") && guild.ends_with('…') && guild.chars().count() == 101,
        "the server's name is cut to 100 characters and says so: {guild:?}"
    );
    let page = std::fs::read_to_string(home.path().join("page.html")).unwrap();
    assert!(page.len() < MB, "the page holds {} bytes", page.len());
    assert!(page.contains("before the long one") && page.contains("after the long one"));
    let long = page
        .find("all work and no play")
        .expect("the long message is in the timeline");
    let notice = "[… cut here: the message is longer than 16 KiB]";
    let cut_at = page[long..]
        .find(notice)
        .expect("the long message is cut with a notice");
    assert!(
        cut_at > 15_000 && cut_at < 17 * 1024 * 2,
        "the notice follows the first 16 KiB of the text ({cut_at} bytes in)"
    );
}

/// A server given as a list of millions of small numbers: each number was
/// counted as an item of its own, so the list passed the bounds, and it was
/// read whole into memory (some 30 bytes per 2 bytes of file). Now only the
/// messages are counted one by one: the list is one value, refused past
/// 1 MiB before it is held, and a server is read for its id and name alone.
#[test]
fn a_server_given_as_a_huge_list_is_refused_in_bounded_memory() {
    let home = home();
    let path = home.path().join("listed.json");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    write!(out, r#"{{"guild": ["#).unwrap();
    repeat(&mut out, "0,", 16 * MB);
    write!(
        out,
        r#"0], "channel": {{"id": "2", "name": "general"}}, "messages": [{{"id": "10",
            "type": "Default", "timestamp": "2024-05-01T18:30:00+00:00", "content": "hi",
            "author": {{"id": "5", "name": "dana", "isBot": false}}}}]}}"#
    )
    .unwrap();
    out.flush().unwrap();
    drop(out);

    let mut cmd = home.command(&["replay", "listed.json"]);
    let stderr = std::fs::File::create(home.path().join("stderr")).unwrap();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(stderr));
    let (ok, peak_kib) = peak_memory_kib(cmd);
    let stderr = std::fs::read_to_string(home.path().join("stderr")).unwrap();
    // Held whole, the list's eight million numbers take a few hundred megabytes.
    assert!(
        peak_kib < 160 * 1024,
        "the replay peaked at {} MB",
        peak_kib / 1024
    );
    assert!(!ok, "the export was replayed");
    assert!(
        stderr.contains(
            "listed.json: before its messages, a value longer than 1048576 bytes even with \
             its long texts cut: not what DiscordChatExporter writes"
        ),
        "{stderr}"
    );
}

/// `ambient ARGS` in `home`, stopped if it has not ended within two minutes:
/// a replay asked to live through thousands of years would never end.
fn run_within(home: &Home, args: &[&str]) -> (String, String, bool) {
    let (out, err) = (home.path().join("out"), home.path().join("err"));
    let mut child = home
        .command(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            // Harmless if it ended just now: the panic below is the point.
            let _ = child.kill();
            let _ = child.wait();
            panic!("ambient {args:?} was still running after two minutes");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    (
        std::fs::read_to_string(out).unwrap(),
        std::fs::read_to_string(err).unwrap(),
        status.success(),
    )
}

fn export_with(home: &Home, name: &str, timestamps: &[&str]) {
    let messages: Vec<String> = timestamps
        .iter()
        .enumerate()
        .map(|(i, ts)| {
            format!(
                r#"{{"id": "{}", "type": "Default", "timestamp": "{ts}", "content": "hi",
                    "author": {{"id": "5", "name": "ada", "isBot": false}}}}"#,
                10 + i
            )
        })
        .collect();
    std::fs::write(
        home.path().join(name),
        format!(
            r#"{{"guild": {{"id": "1", "name": "G"}}, "channel": {{"id": "2", "name": "general"}},
                "messages": [{}]}}"#,
            messages.join(", ")
        ),
    )
    .unwrap();
}

#[test]
fn absurd_timestamps_are_refused_naming_the_message_or_line() {
    let home = home();
    let cases = [
        (
            ["2024-05-01T18:30:00+00:00", "9999-12-31T23:59:59+00:00"],
            "general.json: message 2: \"timestamp\" is \"9999-12-31T23:59:59+00:00\", \
             not a time a Discord message can have: from 2015-01-01 (Discord's first \
             year) to ",
        ),
        (
            ["2009-05-01T18:30:00+00:00", "2024-05-01T18:30:00+00:00"],
            "general.json: message 1: \"timestamp\" is \"2009-05-01T18:30:00+00:00\", \
             not a time a Discord message can have",
        ),
    ];
    for (timestamps, error) in cases {
        export_with(&home, "general.json", &timestamps);
        let (stdout, stderr, ok) = run_within(&home, &["replay", "general.json"]);
        assert!(!ok, "{timestamps:?} was replayed");
        assert!(stderr.contains(error), "{stderr}");
        assert!(stdout.is_empty(), "{stdout}");
    }

    std::fs::write(
        home.path().join("made.jsonl"),
        "{\"ts\": \"2024-05-01T18:30:00Z\", \"channel\": \"general\", \"author\": \"ada\", \"content\": \"hi\"}\n\
         {\"ts\": 253402300799, \"channel\": \"general\", \"author\": \"ada\", \"content\": \"hi\"}\n",
    )
    .unwrap();
    let (_, stderr, ok) = run_within(&home, &["replay", "made.jsonl"]);
    assert!(!ok);
    assert!(
        stderr.contains(
            "made.jsonl: line 2: \"ts\" is 253402300799, not a time a Discord message can have"
        ),
        "{stderr}"
    );
}

// --- --model URL ------------------------------------------------------------------------------

const OPERATOR_OPENAI: &str = "sk-operator-openai-0123456789";
const OPERATOR_ANTHROPIC: &str = "sk-ant-operator-0123456789";
const OPERATOR_OPENROUTER: &str = "sk-or-operator-0123456789";

fn operator_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("OPENAI_API_KEY", OPERATOR_OPENAI),
        ("ANTHROPIC_API_KEY", OPERATOR_ANTHROPIC),
        ("OPENROUTER_API_KEY", OPERATOR_OPENROUTER),
    ]
}

/// Every header of every request the server received, as one text.
fn headers_sent(server: &ModelServer) -> String {
    let requests = server.requests();
    assert!(
        !requests.is_empty(),
        "the replay's calls reached the endpoint"
    );
    requests
        .iter()
        .map(|r| format!("{:?}", r.headers))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_pinned_url_gets_no_operator_key_and_its_password_is_shown_nowhere() {
    let home = home();
    let server = ModelServer::start();
    server.fallback(Scripted::text("an answer from the pinned model"));
    let base = server.openai_base();
    let with_password = base.replace("http://", "http://replayer:hunter2-pass@");
    let mut env = operator_env();
    env.push(("RUST_LOG", "debug"));
    let (stdout, stderr, ok) = run(
        &home,
        &format!(
            "ambient replay examples/replay/sample.jsonl --model {with_password} --yes \
             --format json --html page.html --keep kept"
        ),
        &env,
    );
    assert!(ok, "{stderr}");

    let sent = headers_sent(&server);
    for key in [OPERATOR_OPENAI, OPERATOR_ANTHROPIC, OPERATOR_OPENROUTER] {
        assert!(
            !sent.contains(key),
            "the operator's key went to the URL: {sent}"
        );
    }
    // The URL's own user and password go to it, as basic auth; no key was named, so none is sent.
    use base64::Engine as _;
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("replayer:hunter2-pass")
    );
    for r in server.requests() {
        assert_eq!(
            r.headers.get("authorization"),
            Some(&basic),
            "{:?}",
            r.headers
        );
    }

    let report: Value = serde_json::from_str(&stdout).unwrap();
    let masked = base.replace("http://", "http://***@");
    assert_eq!(report["run"]["model"], masked.as_str());
    let page = std::fs::read_to_string(home.path().join("page.html")).unwrap();
    // The page escapes the URL's slashes; its host follows the mask.
    let host = base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap();
    assert!(
        page.contains(&format!("***@{host}")),
        "the page names the endpoint, masked: {}",
        page.lines()
            .find(|l| l.starts_with("Models:"))
            .unwrap_or(&page)
    );
    let kept = snapshot(&home.path().join("kept"));
    for (what, text) in [
        ("the report", stdout.as_str()),
        ("the logs", &stderr),
        ("the page", &page),
    ] {
        assert!(
            !text.contains("hunter2-pass"),
            "{what} shows the password: {text}"
        );
    }
    for (file, bytes) in kept {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("hunter2-pass"), "{file} keeps the password");
    }

    // An endpoint that cannot be reached: its failures, logged and kept in
    // the usage records, name the URL masked too.
    let (_, stderr, ok) = run(
        &home,
        "ambient replay examples/replay/sample.jsonl --model http://replayer:hunter2-pass@127.0.0.1:9/v1 \
         --yes --keep unreachable",
        &env,
    );
    assert!(ok, "{stderr}");
    assert!(
        !stderr.contains("hunter2-pass"),
        "the logs show the password: {stderr}"
    );
    let kept = snapshot(&home.path().join("unreachable"));
    let kept: String = kept
        .values()
        .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
        .collect();
    assert!(
        kept.contains("cannot reach http://***@127.0.0.1:9/v1"),
        "the failures are kept, masked"
    );
    assert!(
        !kept.contains("hunter2-pass"),
        "the store keeps the password"
    );
}

#[test]
fn a_pinned_url_gets_the_key_named_by_api_key_env_and_no_other() {
    let home = home();
    let server = ModelServer::start();
    server.fallback(Scripted::text("an answer from the pinned model"));
    let url = server.openai_base();
    let mut env = operator_env();
    env.push(("PINNED_KEY", "sk-pinned-for-this-url-42"));
    let (_, stderr, ok) = run(
        &home,
        &format!(
            "ambient replay examples/replay/sample.jsonl --model {url} --api-key-env PINNED_KEY --yes --format json"
        ),
        &env,
    );
    assert!(ok, "{stderr}");
    for r in server.requests() {
        assert_eq!(
            r.headers.get("authorization").map(String::as_str),
            Some("Bearer sk-pinned-for-this-url-42"),
            "{:?}",
            r.headers
        );
    }
    assert!(!headers_sent(&server).contains(OPERATOR_OPENAI));

    // A name the environment does not hold, or one without a URL, is refused before anything runs.
    let (_, stderr, ok) = run(
        &home,
        &format!(
            "ambient replay examples/replay/sample.jsonl --model {url} --api-key-env NO_SUCH_KEY --yes"
        ),
        &env,
    );
    assert!(!ok);
    assert!(
        stderr.contains("--api-key-env NO_SUCH_KEY: the environment has no NO_SUCH_KEY"),
        "{stderr}"
    );
    let (_, stderr, ok) = run(
        &home,
        "ambient replay examples/replay/sample.jsonl --model live --api-key-env PINNED_KEY --yes",
        &env,
    );
    assert!(!ok);
    assert!(
        stderr.contains("--api-key-env goes with --model URL"),
        "{stderr}"
    );
}

// --- --model live without a model -------------------------------------------------------------

#[test]
fn a_live_replay_with_no_model_is_refused_with_how_to_configure_one() {
    let home = home();
    let (stdout, stderr, ok) = run(
        &home,
        "ambient replay examples/replay/sample.jsonl --model live --yes",
        &[],
    );
    assert!(!ok, "a live replay ran with no model: {stdout}");
    assert!(
        stderr.contains(
            "--model live: no role has a model (reply, ambient, reflex, extract), so the \
             replayed bot would answer nobody and post nothing, and cost $0"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("set ANTHROPIC_API_KEY"), "{stderr}");
    assert!(stderr.contains("--model offline"), "{stderr}");
    assert!(!stderr.contains("Worst case"), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
}

#[test]
fn a_live_replay_with_some_roles_unserved_says_which_and_what_that_means() {
    let home = home();
    home.edit_settings(json!({"executive": {"roles": {
        "ambient": {"provider": "none"},
        "extract": {"provider": "none"},
        "reflex": {"provider": "none"}
    }}}));
    let server = ModelServer::start();
    server.fallback(Scripted::text("an answer from the live model"));
    let base = server.openai_base();
    let env = [
        ("OPENAI_BASE_URL", base.as_str()),
        ("OPENAI_API_KEY", "sk-test-live"),
    ];
    let (stdout, stderr, ok) = run(
        &home,
        "ambient replay examples/replay/sample.jsonl --model live --yes --html page.html",
        &env,
    );
    assert!(ok, "{stderr}");
    let gap = "No model for the ambient, reflex and extract roles \
               (executive.roles.ambient.provider is \"none\"; executive.roles.reflex.provider \
               is \"none\"; executive.roles.extract.provider is \"none\")";
    let meaning = "so the bot would not post on its own, chime in or tend its garden; \
                   run level-2 reflexes; or remember anything from conversations";
    for (what, text) in [("the question", &stderr), ("the report", &stdout)] {
        assert!(text.contains(gap), "{what}: {text}");
        assert!(text.contains(meaning), "{what}: {text}");
    }
    let page = std::fs::read_to_string(home.path().join("page.html")).unwrap();
    assert!(page.contains(meaning), "the page says it too");

    let (stdout, _, ok) = run(
        &home,
        "ambient replay examples/replay/sample.jsonl --model live --yes --format json",
        &env,
    );
    assert!(ok);
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        report["run"]["roles_without_model"],
        json!(["ambient", "reflex", "extract"])
    );
}
