//! The first hour, again (issue 35): what a newcomer met and should not
//! have — a verb piped into `head` that panics, `/ambient why` at the
//! console answering with the hush usage, a `/wait` that says nothing when
//! the model never decides, raw `<@id>` markup, a dashboard that hides what
//! the bot sent, and a long line of accented text dropped whole.

use std::process::Stdio;
use std::sync::Arc;

use ambient::clock::SystemClock;
use ambient::dashboard::{self, Site};
use ambient::ids::UserId;
use ambient::impulses::NewTask;
use ambient::journal::Journal;
use ambient::store::messages::Source;
use ambient::vocab::journal::{Entry, Kind};
use serde_json::json;

use crate::conversation::{model_env, with_env};
use crate::support::feed_server::FeedServer;
use crate::support::home::{Home, events_of, notices};
use crate::support::model_server::{ModelServer, Scripted};
use crate::support::readme::example as readme_example;
use crate::support::world::{self, GENERAL, World};

fn home() -> Home {
    Home::new(json!({"executive": {"ollamaBaseUrl": "http://127.0.0.1:9"}}))
}

/// Every printing verb, run with its standard output a pipe whose reader
/// has already gone (`ambient journal | head` once `head` has its lines):
/// each stops quietly with exit 0 — no panic, no "Broken pipe".
#[test]
fn a_verb_whose_reader_has_gone_ends_quietly() {
    let home = home();
    let feeds = FeedServer::start_at(chrono::Utc::now());
    home.edit_settings(json!({"network": {"allowPrivateHosts": true}}));
    let (_, out) = home.console("hello\n@ambient hello\n");
    assert!(out.status.success());
    std::fs::write(
        home.path().join("export.jsonl"),
        "{\"ts\": \"2026-05-04T18:05:00Z\", \"channel\": \"general\", \"author\": \"maya\", \"content\": \"morning all\"}\n",
    )
    .unwrap();
    let export = home.run(&["guild", "export", "console"]);
    assert!(export.status.success());
    let other = Home::new(json!({}));
    let guild_file = other.path().join("console.json");
    std::fs::write(&guild_file, &export.stdout).unwrap();
    let feed = format!("{}/blog/rss.xml", feeds.url);
    let verbs: &[&[&str]] = &[
        &["replay", "export.jsonl"],
        &["replay", "export.jsonl", "--format", "json"],
        &["memories", "search", "hello"],
        &["remember", "the meetup is on Thursdays"],
        &["discovery", "fetch", &feed],
        &["journal", "--since", "1h"],
        &["journal", "--json"],
        &["status"],
        &["usage"],
        &["memories"],
        &["memories", "stats"],
        &["memories", "export"],
        &["settings", "example"],
        &["settings", "check"],
        &["reflexes", "check"],
        &["reflexes", "stats"],
        &["garden", "log"],
        &["context", "--guild", "console", "--since", "1h"],
        &["discovery", "list"],
        &["shards", "plan", "--total", "2"],
        &["guild", "export", "console"],
    ];
    let guild_import = ["guild", "import", guild_file.to_str().unwrap()];
    let runs = verbs
        .iter()
        .map(|v| (&home, *v))
        .chain([(&other, &guild_import[..])]);
    for (home, verb) in runs {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = home
            .command(verb)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(0),
            "ambient {} into a closed pipe: {stderr}",
            verb.join(" ")
        );
        assert!(
            !stderr.contains("panicked") && !stderr.to_lowercase().contains("broken pipe"),
            "ambient {}: {stderr}",
            verb.join(" ")
        );
    }
}

/// `ambient memories delete` asks first; with nobody able to read the
/// question (its output already closed) the answer is no: nothing is
/// deleted, and it says so on stderr with exit 1, as when the answer is no.
#[test]
fn a_delete_whose_question_cannot_be_read_deletes_nothing() {
    let home = home();
    let (_, out) = home.console("hello\n");
    assert!(out.status.success());
    let remembered = home.run(&["remember", "the meetup is on Thursdays"]);
    assert!(
        remembered.status.success(),
        "{}",
        String::from_utf8_lossy(&remembered.stderr)
    );
    let export = home.run(&["memories", "export"]);
    let doc: serde_json::Value = serde_json::from_slice(&export.stdout).unwrap();
    let id = doc["facts"][0]["id"].as_str().unwrap().to_string();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = home
        .command(&["memories", "delete", &id[..8]])
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("nothing deleted: the question could not be shown"),
        "a failure says why: {stderr:?}"
    );
    let after = home.run(&["memories", "search", "meetup"]);
    assert!(
        String::from_utf8_lossy(&after.stdout).contains("the meetup is on Thursdays"),
        "kept"
    );
}

/// The README's `ambient journal | head`, exactly as written, over a
/// journal far longer than a pipe holds: `head` leaves after ten lines
/// while `ambient` still writes, and the pipeline (with `pipefail`, so
/// `ambient`'s own status counts) ends with 0 and nothing on stderr.
#[test]
fn the_readme_journal_into_head_ends_quietly() {
    let example = readme_example("ambient journal | head");
    let home = home();
    let (_, out) = home.console("hello\n");
    assert!(out.status.success());
    let store = ambient::store::Store::open(&home.data_dir()).unwrap();
    let journal = Journal::new(store.journal(), Arc::new(SystemClock));
    for i in 0..3_000 {
        journal.record(
            Entry::new(Kind::Route, format!("routed line {i} of a long day → pass"))
                .guild(Some(ambient::console::guild_id()))
                .reason("not addressed, and nothing in it for the bot to pick up on"),
        );
    }
    drop(journal);
    assert!(!example.contains('\''), "{example}");
    let out = home.shell(&format!("bash -o pipefail -c '{example}'"), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stdout.lines().count(), 10, "{stdout}");
    assert!(out.status.success(), "exit {:?}: {stderr}", out.status);
    assert!(stderr.is_empty(), "{stderr}");
}

/// A valid line over 64 KiB of three-byte characters: the limit falls
/// inside a '€'. The line is cut before that character, said to be cut, and
/// stored; the session goes on.
#[test]
fn a_long_line_of_accented_text_is_cut_between_characters_and_kept() {
    let home = home();
    let mut input = "€".repeat(30_000).into_bytes();
    input.extend_from_slice(b"\n@ambient hello\n");
    let (events, out) = home.console_bytes(&input);
    assert!(out.status.success());
    let kept = 64 * 1024 / 3;
    let notices = notices(&events);
    assert!(
        notices.contains(
            &format!("line 1 is longer than 64 KiB: only its first {kept} characters are read")
                .as_str()
        ),
        "{notices:#?}"
    );
    assert!(
        !notices.iter().any(|n| n.contains("not valid UTF-8")),
        "{notices:#?}"
    );
    assert_eq!(events_of(&events, "stored").len(), 2, "{notices:#?}");
    let store = ambient::store::Store::open(&home.data_dir()).unwrap();
    let stored = store
        .messages()
        .recent_messages(ambient::console::channel_id("general"), 10)
        .unwrap();
    assert_eq!(stored[0].content, "€".repeat(kept));
}

/// `ambient console` in text mode, kept running so a test can answer what
/// it printed, as a person at the terminal does.
pub(crate) struct TextConsole {
    pub(crate) child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
}

impl TextConsole {
    pub(crate) fn start(home: &Home, env: &[(&str, &str)]) -> Self {
        let mut cmd = home.command(&["console", "--user", "ada"]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in stdout.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
        }
    }

    pub(crate) fn send(&mut self, line: &str) {
        use std::io::Write;
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The lines printed up to and including the first that `done` accepts
    /// (waiting at most a minute for it).
    pub(crate) fn until(&self, done: impl Fn(&str) -> bool) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            match self.lines.recv_timeout(std::time::Duration::from_secs(60)) {
                Ok(line) => {
                    let last = done(&line);
                    seen.push(line);
                    if last {
                        return seen;
                    }
                }
                Err(e) => panic!("{e} waiting; the console printed:\n{}", seen.join("\n")),
            }
        }
    }

    /// What `command` printed: everything until the console has also
    /// answered a command after it, which marks the end.
    pub(crate) fn ask(&mut self, command: &str) -> Vec<String> {
        self.send(command);
        self.send("/as ada");
        let mut said = self.until(|l| l == "· you are now ada");
        said.pop();
        said
    }

    /// Ends input and returns the rest of what was printed.
    pub(crate) fn finish(self) -> String {
        drop(self.stdin);
        let status = self.child.wait_with_output().unwrap().status;
        assert!(status.success(), "{status}");
        self.lines.iter().collect::<Vec<_>>().join("\n")
    }
}

/// The id in `line` after `marker` (`stored as message 123`, `(id 123)`).
pub(crate) fn id_after(line: &str, marker: &str) -> String {
    let at = line
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker:?} in {line:?}"));
    line[at + marker.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect()
}

/// At the console, as in Discord, `/ambient why` explains a message, by the
/// id the console shows: the bot's own words carry theirs, a person's line
/// is acknowledged with its own; `/why` is the short form of the same verb.
#[test]
fn ambient_why_at_the_console_explains_a_message_by_the_id_it_shows() {
    let home = home();
    let mut console = TextConsole::start(&home, &[]);
    console.send("@ambient remind me in 10 minutes to stretch");
    let printed = console.until(|l| l.starts_with("[#general] ambient: "));
    let asked = printed
        .iter()
        .find(|l| l.starts_with("· stored as message "))
        .unwrap_or_else(|| panic!("the line's id is shown: {printed:#?}"));
    let asked = id_after(asked, "stored as message ");
    let answer = printed.last().unwrap();
    assert!(
        answer.contains("Okay ada, I'll remind you in 10 minutes: stretch"),
        "{answer}"
    );
    let answer = id_after(answer, "(id ");

    let why_answer = console.ask(&format!("/ambient why {answer}"));
    let why_asked = console.ask(&format!("/ambient why {asked}"));
    let short = console.ask(&format!("/why {asked}"));
    let rest = console.finish();

    let why_answer = why_answer.join("\n");
    assert!(
        why_answer.contains("· Why I said that:") && !why_answer.contains("usage"),
        "{why_answer}"
    );
    let why_asked = why_asked.join("\n");
    assert!(
        why_asked.contains("· What I made of that message:"),
        "{why_asked}"
    );
    assert_eq!(short.join("\n"), why_asked, "/why is the same verb");
    assert!(!rest.contains("usage"), "{rest}");
}

/// What the bot writes for Discord — `<@id>` to ping whom a reminder is for,
/// `<#id>` for a channel — reads at the console as names: `@ada`,
/// `#general`; a channel the console does not know stays readable as one.
/// `--json` keeps the text as it would be sent.
#[test]
fn mentions_at_the_console_read_as_names() {
    let server = ModelServer::start();
    let ada = ambient::console::user_id("ada");
    let general = ambient::console::channel_id("general");
    server.fallback(Scripted::text(&format!(
        "<@{ada}> the schedule is pinned in <#{general}>; the archive was in <#4242>."
    )));
    let home = home();
    let env = model_env(&server);
    let input = "@ambient remind me in 1 minute to stretch\n\
                 @ambient where is the schedule?\n\
                 /wait 2m\n\
                 /journal\n";
    let out = home
        .command(&["console", "--user", "ada"])
        .envs(with_env(&env))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(input.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("[#general] ambient: @ada reminder: stretch  (id "),
        "{text}"
    );
    assert!(
        text.contains(
            "[#general] ambient: @ada the schedule is pinned in #general; \
             the archive was in #channel:4242.  (id "
        ),
        "{text}"
    );
    assert!(
        text.contains("said \"@ada reminder: stretch\""),
        "the journal's lines too: {text}"
    );
    assert!(!text.contains("<@") && !text.contains("<#"), "{text}");

    let (events, _) = home.console_with(input, &with_env(&env));
    let sent: Vec<&str> = events_of(&events, "message")
        .iter()
        .map(|e| e["content"].as_str().unwrap())
        .collect();
    assert!(
        sent.contains(&format!("<@{ada}> reminder: stretch").as_str()),
        "{sent:#?}"
    );
}

/// The README's ambient-post example with `model` answering every request:
/// what was printed, once the model was asked and nothing was posted.
fn readme_initiative_example_with(model: Scripted) -> String {
    let server = ModelServer::start();
    server.fallback(model);
    let example = readme_example(
        "printf '/channels\\n/settings set permissions.replies.discoveryChannelIds #general",
    );
    let home = home();
    let out = home.shell(&example, &with_env(&model_env(&server)));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}");
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.body.to_string().contains("AMBIENT TEXT MODE")),
        "the initiative asked the model: {text}"
    );
    assert!(
        !text.contains("[#general] ambient:"),
        "nothing posted: {text}"
    );
    text
}

/// The line `/wait` printed after it ended that contains `what`.
fn said_after_the_wait<'a>(text: &'a str, what: &str) -> &'a str {
    let after_wait = &text[text.find("(waited 5m;").expect("the wait ended")..];
    after_wait
        .lines()
        .find(|l| l.contains(what))
        .unwrap_or_else(|| panic!("/wait says {what:?}: {text}"))
}

/// A model that answers in prose and never calls a tool: nothing is posted,
/// and `/wait 5m` says so — the model answered without a decision — and
/// where to see why, instead of nothing.
#[test]
fn a_wait_where_the_model_never_decides_says_so() {
    let text = readme_initiative_example_with(Scripted::text(
        "It is quiet in here; maybe someone would like to talk about the eclipse.",
    ));
    let said = said_after_the_wait(&text, "the model answered without a decision");
    assert!(said.contains("nothing was posted"), "{said}");
    assert!(said.contains("/journal shows each step"), "{said}");
}

/// A model that decides to stay quiet: `/wait 5m` says so, with its reason.
#[test]
fn a_wait_where_the_bot_stays_quiet_says_why() {
    let text = readme_initiative_example_with(Scripted::tool(
        "decide",
        json!({"action": "drop", "reason": "the room has nothing to pick up on"}),
    ));
    let said = said_after_the_wait(&text, "it decided to stay quiet");
    assert!(
        said.contains(
            "nothing was posted: it decided to stay quiet — the room has nothing to pick up on."
        ),
        "{said}"
    );
}

/// A reminder, a routine's post and an ambient post, each with text that
/// must stay text: the dashboard's default timeline shows all three with
/// what the bot said (mentions as names), and the Initiative page lists the
/// post with its text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_what_the_bot_sent_on_its_own() {
    let w = World::start(world::settings()).await;
    w.hear(GENERAL, "ada", "morning all", Source::Text);
    let ada = UserId(50);
    w.app
        .impulses
        .add_task(NewTask {
            guild: Some(world::GUILD_A),
            channel: Some(GENERAL),
            text: "remind ada to stretch".into(),
            due: "in 5m".into(),
            message: Some(format!("<@{ada}> stretch <b>now</b> & drink water")),
            context: "test".into(),
            created_by: "ada".into(),
            owner: Some(ada),
        })
        .unwrap();
    w.app
        .impulses
        .add_schedule(
            world::GUILD_A,
            Some(GENERAL),
            "checkin",
            "*/5 * * * *",
            "ask how everyone is doing",
            "test",
        )
        .unwrap();
    w.model.push(Scripted::tool(
        "act",
        json!({"say": "How is everyone doing? <i>honestly</i>", "note": "asked how it's going"}),
    ));
    w.clock.advance(chrono::Duration::minutes(5));
    assert_eq!(
        w.app.impulses.check().len(),
        2,
        "the reminder and the routine"
    );
    w.app.spine.drain().await;
    w.model.fallback(Scripted::tool(
        "decide",
        json!({"action": "post", "channel": "memes", "text": "Quiet in here. <script>alert(1)</script> Anyone up?", "reason": "the room went idle"}),
    ));
    w.tick().await;
    assert_eq!(w.said().len(), 3, "{:#?}", w.said());

    let served = dashboard::start(
        Site::of_app(&w.app),
        "127.0.0.1:0".parse().unwrap(),
        &w.app.data_dir,
        false,
    )
    .await
    .unwrap();
    let get = |path: &str| {
        let url = format!("http://127.0.0.1:{}{path}", served.addr.port());
        async move { reqwest::get(url).await.unwrap().text().await.unwrap() }
    };
    let today = get("/").await;
    for said in [
        "@ada stretch &lt;b&gt;now&lt;&#x2f;b&gt; &amp; drink water",
        "How is everyone doing? &lt;i&gt;honestly&lt;&#x2f;i&gt;",
        "Quiet in here. &lt;script&gt;alert(1)&lt;&#x2f;script&gt; Anyone up?",
    ] {
        assert!(
            today.contains(&format!(r#"<div class="said text">{said}</div>"#)),
            "the timeline shows {said:?}:\n{today}"
        );
    }
    assert!(
        today.contains("did a task: remind ada to stretch"),
        "{today}"
    );
    assert!(today.contains("ran the routine checkin"), "{today}");
    assert!(
        !today.contains("<b>now") && !today.contains("<i>") && !today.contains("<script"),
        "{today}"
    );
    let initiative = get("/initiative").await;
    assert!(
        initiative.contains(
            r#"<div class="said text">Quiet in here. &lt;script&gt;alert(1)&lt;&#x2f;script&gt; Anyone up?</div>"#
        ),
        "the post's text on the Initiative page:\n{initiative}"
    );
    served.stop().await;
}
