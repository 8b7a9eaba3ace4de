//! Hostile settings and reflex files: too large, not plain files, binary,
//! absurdly long text, huge lists. Each is refused with a short message that
//! names the file or setting and the limit, and never echoes the file back.

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::Output;

use serde_json::json;

use crate::support::home::{Home, notices};

/// Anything longer would be echoing the input: every refusal here is a line or two.
const SHORT: usize = 2048;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Exit 1 with a short answer containing every one of `expected`.
fn refused_briefly(out: &Output, expected: &[&str]) {
    let text = stdout(out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        out.stdout.len() + out.stderr.len() < SHORT,
        "{} bytes of output: {}…",
        out.stdout.len() + out.stderr.len(),
        text.chars().take(300).collect::<String>()
    );
    for e in expected {
        assert!(text.contains(e), "{e:?} not in {text}");
    }
}

/// A sparse file: `len` bytes long on paper, nothing on disk, zeros when read.
fn sparse(path: &Path, len: u64) {
    File::create(path).unwrap().set_len(len).unwrap();
}

fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status();
    assert!(made.unwrap().success(), "mkfifo {}", path.display());
}

/// Linux's `O_NONBLOCK`: opening a FIFO's read end with it never waits.
const O_NONBLOCK: i32 = 0o4000;

/// Runs `check` with `fifo` in place. Were the FIFO opened, a writer waiting
/// here would feed it `content` and the check would finish on it (so old code
/// fails the test instead of hanging it); the writer is released afterwards
/// by opening the read end ourselves without waiting, so no clock is involved.
fn with_writer(fifo: &Path, content: &'static str, check: impl FnOnce() -> Output) -> Output {
    let path = fifo.to_path_buf();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let mut w = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        // The reader may have gone: a broken pipe here is the point of the test.
        let _ = w.write_all(content.as_bytes());
    });
    let out = check();
    let release = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(fifo)
        .unwrap();
    writer.join().unwrap();
    drop(release);
    out
}

#[test]
fn settings_files_too_large_or_not_plain_are_refused_before_reading() {
    let home = Home::new(json!({}));
    let big = home.path().join("big.json");
    sparse(&big, 300 * 1024 * 1024);
    let out = home.run(&["settings", "check", big.to_str().unwrap()]);
    refused_briefly(
        &out,
        &["big.json: cannot read the settings file: it is larger than the limit of 1048576 bytes"],
    );

    let out = home.run(&["settings", "check", "/dev/zero"]);
    refused_briefly(
        &out,
        &["/dev/zero: cannot read the settings file: it is a device, not a regular file"],
    );

    let fifo = home.path().join("pipe.json");
    mkfifo(&fifo);
    let out = with_writer(&fifo, "{}", || {
        home.run(&["settings", "check", fifo.to_str().unwrap()])
    });
    refused_briefly(
        &out,
        &[
            "pipe.json: cannot read the settings file: it is a FIFO (named pipe), not a regular file",
        ],
    );
}

#[test]
fn long_text_and_huge_id_lists_in_settings_name_the_path_and_the_limit() {
    let home = Home::new(json!({
        "bot": {"persona": "You are very verbose. ".repeat(250)},
        "permissions": {"replies": {"blockedUserIds": (1..=5000).collect::<Vec<u64>>()}},
    }));
    let out = home.run(&["settings", "check"]);
    refused_briefly(
        &out,
        &[
            "settings.json: bot.persona: is 5500 characters long; at most 4000 are allowed",
            "settings.json: permissions.replies.blockedUserIds: has 5000 entries; at most 1000 are allowed",
            "2 problem(s) found",
        ],
    );

    // The 50 MB persona of the attack does not get as far as validation.
    let home = Home::new(json!({"bot": {"persona": "x".repeat(50 * 1024 * 1024)}}));
    let out = home.run(&["settings", "check"]);
    refused_briefly(
        &out,
        &[
            "settings.json: cannot read the settings file: it is larger than the limit of 1048576 bytes",
        ],
    );
}

#[test]
fn a_huge_key_or_thousands_of_unknown_keys_are_answered_briefly() {
    let home = Home::new(json!({"bot": {"k".repeat(900_000): 1}}));
    let out = home.run(&["settings", "check"]);
    refused_briefly(
        &out,
        &[
            &format!(
                "settings.json: bot.{}…: unknown setting: no setting's name is longer than 64 characters",
                "k".repeat(64)
            ),
            "1 problem(s) found",
        ],
    );

    let many: serde_json::Map<String, serde_json::Value> =
        (0..60_000).map(|i| (format!("k{i}"), json!(1))).collect();
    let home = Home::new(json!({ "bot": many }));
    let out = home.run(&["settings", "check"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    // Fifty problems shown (the first with a suggestion), and the rest counted.
    assert_eq!(text.lines().count(), 52, "{text}");
    assert!(
        text.contains("settings.json: bot.k0: unknown setting; did you mean"),
        "{text}"
    );
    assert!(
        text.ends_with("… and 59950 more\n60000 problem(s) found\n"),
        "{text}"
    );
}

#[test]
fn a_servers_override_gets_the_same_limits() {
    let home = Home::new(json!({}));
    let persona = "y".repeat(4001);
    let (events, out) = home.console(&format!("/settings set bot.persona {persona}\n"));
    assert!(out.status.success());
    let notices = notices(&events);
    assert!(
        notices.contains(&"bot.persona: is 4001 characters long; at most 4000 are allowed"),
        "{:?}",
        notices
            .iter()
            .map(|n| n.chars().take(200).collect::<String>())
            .collect::<Vec<_>>()
    );
}

#[test]
fn reflex_files_binary_too_large_or_not_plain_are_reported_briefly() {
    let home = Home::new(json!({}));
    let dir = tempfile::tempdir().unwrap();
    // A NUL byte and then a lot of text: the text is never the error message.
    std::fs::write(
        dir.path().join("nul.yaml"),
        format!("\u{0}{}", "secret content ".repeat(10_000)),
    )
    .unwrap();
    sparse(&dir.path().join("huge.yaml"), 300 * 1024 * 1024);
    let fifo = dir.path().join("pipe.yaml");
    mkfifo(&fifo);
    let good = "name: hello\ndescription: says hi\nlevel: 0\ntrigger:\n  pattern: \"^hi$\"\npipeline:\n  - action: reply\n    message: hello\n";
    std::fs::write(dir.path().join("good.yaml"), good).unwrap();

    let out = with_writer(&fifo, good, || {
        home.run(&["reflexes", "check", dir.path().to_str().unwrap()])
    });
    refused_briefly(
        &out,
        &[
            "ok   hello",
            "huge.yaml: cannot read the reflex file: it is larger than the limit of 262144 bytes",
            "pipe.yaml: cannot read the reflex file: it is a FIFO (named pipe), not a regular file",
            "nul.yaml:",
            "1 reflex(es) ok, 3 problem(s)",
        ],
    );
    assert!(
        stdout(&out).matches("secret content").count() <= 20,
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_reflex_folder_with_too_many_files_is_refused() {
    let home = Home::new(json!({}));
    let dir = tempfile::tempdir().unwrap();
    for i in 0..=ambient::reflexes::MAX_FILES {
        std::fs::write(dir.path().join(format!("r{i}.yaml")), "name: x\n").unwrap();
    }
    let out = home.run(&["reflexes", "check", dir.path().to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(out.stdout.len() + out.stderr.len() < SHORT, "{text}");
    assert!(
        text.contains("more than 200 reflex files; keep at most 200 .yaml files there"),
        "{text}"
    );
}

#[test]
fn a_prompt_template_that_is_a_fifo_or_huge_stops_the_start_briefly() {
    let prompts = tempfile::tempdir().unwrap();
    let home = Home::new(json!({"executive": {"promptsDir": prompts.path().to_string_lossy()}}));
    let fifo = prompts.path().join("reply.j2");
    mkfifo(&fifo);
    let template = "{% block system %}s{% endblock %}{% block user %}u{% endblock %}";
    let out = with_writer(&fifo, template, || home.console("hi\n").1);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("reply.j2: cannot read: it is a FIFO (named pipe), not a regular file"),
        "{err}"
    );
    std::fs::remove_file(&fifo).unwrap();
    sparse(&prompts.path().join("initiative.j2"), 300 * 1024 * 1024);
    let (_, out) = home.console("hi\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("initiative.j2: cannot read: it is larger than the limit of 262144 bytes"),
        "{err}"
    );
    assert!(out.stderr.len() < SHORT, "{err}");
}
