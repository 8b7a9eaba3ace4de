//! The small things a newcomer meets first, each as the person sees it: the
//! real `ambient` binary's output, `./dev.sh`'s usage, the fake Discord's
//! registered commands and replies.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::support::bot::Bot;
use crate::support::fake_discord::{ALICE, BOB, GENERAL, MANAGE_GUILD};
use crate::support::home::Home;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `ambient remember TEXT --guild G`, returning the new memory's short id.
fn remember(home: &Home, text: &str, guild: &str) -> String {
    let out = home.run(&["remember", text, "--guild", guild]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    said.trim()
        .rsplit("id ")
        .next()
        .and_then(|s| s.strip_suffix(")."))
        .unwrap_or_else(|| panic!("no id in {said:?}"))
        .to_string()
}

#[test]
fn settings_check_warns_about_x_and_hacker_news_keys_while_their_switch_is_off() {
    let home = Home::new(json!({}));
    let file = home.path().join("x.json");
    let text = json!({"initiative": {"discovery": {
        "xHandles": ["@rustlang"],
        "xBridgeBaseUrl": "https://rsshub.example/twitter/user/{handle}",
        "hackerNewsBaseUrl": "https://hn.example"
    }}});
    std::fs::write(&file, text.to_string()).unwrap();
    let out = home.run(&["settings", "check", file.to_str().unwrap()]);
    assert!(out.status.success(), "a warning is not a problem");
    let said = stdout(&out);
    assert!(
        said.contains("x.json: warning: initiative.discovery.xHandles, initiative.discovery.xBridgeBaseUrl: ignored while initiative.discovery.sources.x is false; set it to true to use them"),
        "{said}"
    );
    assert!(
        said.contains("x.json: warning: initiative.discovery.hackerNewsBaseUrl: ignored while initiative.discovery.sources.hackerNews is false"),
        "{said}"
    );
    assert!(said.contains("OK"), "{said}");
    // The bot says it too when it starts (here the console; `run` loads the same way).
    let started = home
        .command(&["--settings", file.to_str().unwrap(), "console", "--json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(started.status.success(), "{}", stderr(&started));
    assert!(
        stderr(&started).contains("warning: initiative.discovery.xHandles, initiative.discovery.xBridgeBaseUrl: ignored while initiative.discovery.sources.x is false"),
        "{}",
        stderr(&started)
    );

    let on = home.path().join("on.json");
    let mut with_switches = text.clone();
    with_switches["initiative"]["discovery"]["sources"] = json!({"x": true, "hackerNews": true});
    std::fs::write(&on, with_switches.to_string()).unwrap();
    let out = home.run(&["settings", "check", on.to_str().unwrap()]);
    assert!(!stdout(&out).contains("warning"), "{}", stdout(&out));
}

#[test]
fn memories_edit_runs_an_editor_with_arguments_the_way_git_does() {
    let home = Home::new(json!({}));
    let id = remember(&home, "we indent with tabs", "42");
    // Like `code --wait`: a command and its own arguments in one variable.
    let out = home
        .command(&["memories", "edit", &id])
        .env_remove("VISUAL")
        .env("EDITOR", "sed -i s/tabs/spaces/")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("we indent with spaces"),
        "{}",
        stdout(&out)
    );
    let listed = stdout(&home.run(&["memories"]));
    assert!(listed.contains("we indent with spaces"), "{listed}");
    assert!(!listed.contains("tabs"), "{listed}");

    let failing = home
        .command(&["memories", "edit", &id])
        .env_remove("VISUAL")
        .env("EDITOR", "false --wait")
        .output()
        .unwrap();
    assert_eq!(failing.status.code(), Some(1));
    assert!(
        stderr(&failing)
            .contains("the editor \"false --wait\" exited with exit status: 1; nothing changed"),
        "{}",
        stderr(&failing)
    );
}

#[test]
fn a_bad_cron_expression_is_refused_in_the_users_own_terms() {
    let home = Home::new(json!({}));
    let (events, _) = home.console("/schedule add standup | 61 9 * * 1-5 | say hi\n");
    let notices: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "notice")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(
        notices.contains(&"\"61 9 * * 1-5\": the minute field has 61, but minutes are 0–59"),
        "{notices:#?}"
    );
}

#[test]
fn a_missing_settings_file_is_named_once() {
    let home = Home::new(json!({}));
    let out = home.run(&["--settings", "/nonexistent.json", "status"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "ambient: /nonexistent.json: cannot read the settings file: No such file or directory (os error 2)\n"
    );
}

#[test]
fn garden_log_on_a_fresh_install_ends_its_line() {
    let home = Home::new(json!({}));
    remember(&home, "the store exists now", "42");
    let out = home.run(&["garden", "log"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "no garden cycles yet\n");
}

fn console_ready(home: &Home, env: &[(&str, &str)]) -> (Value, String) {
    let mut cmd = home.command(&["console", "--json"]);
    cmd.env_remove("USER").env_remove("LOGNAME");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let ready = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["event"] == "ready")
        .expect("a ready event");
    (ready, stderr(&out))
}

#[test]
fn the_console_names_you_without_user_and_says_how_to_choose() {
    let home = Home::new(json!({}));
    let (ready, err) = console_ready(&home, &[]);
    let name = ready["user"].as_str().unwrap();
    assert!(!name.is_empty() && name != "you", "{ready}");
    assert!(
        err.contains(&format!("you are {name:?}"))
            && err.contains("choose a name with --user NAME"),
        "{err}"
    );

    let (ready, err) = console_ready(&home, &[("USER", "ada")]);
    assert_eq!(ready["user"], "ada");
    assert!(
        !err.contains("--user"),
        "no hint when $USER names you: {err}"
    );
}

#[test]
fn logs_written_to_a_file_or_pipe_carry_no_colour_codes() {
    let home = Home::new(json!({}));
    let bad = home.path().join("typo.json");
    std::fs::write(&bad, r#"{"bot": {"nmae": "x"}}"#).unwrap();
    let out = home.run(&["--settings", bad.to_str().unwrap(), "garden", "log"]);
    let err = stderr(&out);
    assert!(err.contains("WARN") && err.contains("bot.nmae"), "{err}");
    assert!(!out.stderr.contains(&0x1b), "ESC in {err:?}");
}

#[test]
fn settings_show_is_for_managers_as_the_readme_says() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    assert!(
        readme.contains("| `/settings show [path]` | Manage Server |"),
        "README and command disagree"
    );

    let bot = Bot::start(json!({"permissions": {"replies": {"blockedUserIds": ["77"]}}}));
    let registered = bot.discord.with(|w| w.find("PUT", "/guilds/100/commands"));
    let settings = registered[0]
        .body
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "settings")
        .cloned()
        .expect("settings is registered");
    assert_eq!(
        settings["default_member_permissions"], "32",
        "hidden from members without Manage Server: {settings}"
    );

    let path = [("path", "permissions.replies.blockedUserIds")];
    let denied = bot
        .discord
        .slash(GENERAL, BOB, 0, "settings", "show", &path);
    let r = bot.discord.interaction_reply(denied).expect("a reply");
    assert_eq!(
        r["data"]["content"],
        "Only members with **Manage Guild** can do that."
    );
    let shown = bot
        .discord
        .slash(GENERAL, ALICE, MANAGE_GUILD, "settings", "show", &path);
    let r = bot.discord.interaction_reply(shown).expect("a reply");
    assert!(r["data"]["content"].as_str().unwrap().contains("77"), "{r}");
}

#[test]
fn guild_works_before_or_after_the_verb_and_export_takes_it() {
    let home = Home::new(json!({}));
    remember(&home, "we deploy on fridays", "42");
    remember(&home, "the other server deploys on mondays", "43");
    for args in [
        ["memories", "--guild", "42", "search", "deploy"],
        ["memories", "search", "deploy", "--guild", "42"],
    ] {
        let out = home.run(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let found = stdout(&out);
        assert!(found.contains("we deploy on fridays"), "{args:?}: {found}");
        assert!(!found.contains("mondays"), "{args:?}: {found}");
    }

    let out = home.run(&["memories", "export", "--guild", "42"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let contents: Vec<&str> = doc["facts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["content"].as_str())
        .collect();
    assert_eq!(contents, ["we deploy on fridays"]);

    let out = home.run(&["memories", "--guild", "42", "stats"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("--guild does not apply to `ambient memories stats`"),
        "{}",
        stderr(&out)
    );
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn dev_sh_offers_install_and_the_readme_says_so_after_the_quick_start() {
    let syntax = Command::new("sh")
        .args(["-n", "dev.sh"])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(syntax.status.success(), "{}", stderr(&syntax));
    // No verb: the usage, without installing or building anything.
    let usage = Command::new("sh")
        .arg("dev.sh")
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(usage.status.code(), Some(2));
    let text = stderr(&usage);
    assert!(
        text.contains("./dev.sh install       install the `ambient` command into ~/.cargo/bin (must be on PATH)"),
        "{text}"
    );

    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let quick = &readme
        [readme.find("## Quick start").unwrap()..readme.find("## What works today").unwrap()];
    let block = &quick[quick.find("```sh\n").unwrap() + 6..];
    let block = &block[..block.find("```").unwrap()];
    let commands: Vec<&str> = block
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .collect();
    assert_eq!(commands, ["./dev.sh run", "./dev.sh test"]);
    assert!(
        quick.contains("`./dev.sh install`") && quick.contains("`ambient …` below"),
        "{quick}"
    );
}
