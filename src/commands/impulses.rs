//! `/task add|list|done`, `/schedule add|list|remove`, `/idea list|add`: the
//! bot's impulses, under people's control.
//!
//! Anyone may add a task (by default a reminder the bot says when due) and
//! close their own; Manage Server may close any. The schedule — routines the
//! bot runs by itself — needs Manage Server. In a DM only that DM's tasks
//! are shown.

use crate::app::App;
use crate::commands::Asker;
use crate::impulses::{NewTask, RoutineFlags, when};
use crate::store::ImpulseStore;
use crate::store::impulses::Task;

fn task_line(app: &App, t: &Task) -> String {
    let now = app.clock.now();
    let tz = app.impulses.timezone(t.guild);
    let state = match (t.done_at, t.fired_at) {
        (Some(_), _) => "done".to_string(),
        (None, Some(_)) => "due now".to_string(),
        (None, None) => crate::when::until(t.due, now),
    };
    format!(
        "`{}` {} ({state}) — {} · by {}",
        t.short_id(),
        t.due.with_timezone(&tz).format("%a %Y-%m-%d %H:%M %Z"),
        t.text,
        t.created_by
    )
}

/// A task; with `remind` (the default) the bot says `@you reminder: TEXT` when due,
/// otherwise it decides then what to do about it.
pub(crate) fn task_add(app: &App, who: &Asker, text: &str, due: &str, remind: bool) -> String {
    let message = remind.then(|| format!("<@{}> reminder: {}", who.user, text.trim()));
    let context = format!("added with /task by {}", who.name);
    let new = NewTask {
        guild: who.guild,
        channel: Some(who.channel),
        text: text.to_string(),
        due: due.to_string(),
        message,
        context,
        created_by: who.name.clone(),
        owner: Some(who.user),
    };
    match app.impulses.add_task(new) {
        Ok(t) => format!("Task added: {}", task_line(app, &t)),
        Err(e) => e.to_string(),
    }
}

/// A list that could not be read says so: "nothing" would be a guess.
fn cannot_list(what: &str, e: &crate::store::StoreError) -> String {
    format!("I can't tell: store read failed: {what}: {e}")
}

pub fn task_list(app: &App, who: &Asker) -> String {
    let tasks = match app.stores::<ImpulseStore>().tasks(who.guild, false) {
        Ok(tasks) => tasks,
        Err(e) => return cannot_list("the tasks", &e),
    };
    let tasks: Vec<Task> = tasks
        .into_iter()
        .filter(|t| who.guild.is_some() || t.channel == Some(who.channel))
        .collect();
    if tasks.is_empty() {
        return "No open tasks. Add one with /task add (e.g. text \"water the plants\", due \"in 2 hours\").".into();
    }
    let lines: Vec<String> = tasks.iter().map(|t| task_line(app, t)).collect();
    format!("Open tasks:\n{}", lines.join("\n"))
}

pub(crate) fn task_done(app: &App, who: &Asker, id: &str) -> String {
    let id = id.trim().trim_matches('`');
    if id.len() < 4 {
        return "Give at least the first 4 characters of the task id (see /task list).".into();
    }
    let found: Vec<Task> = app
        .stores::<ImpulseStore>()
        .task_by_prefix(who.guild, id)
        .unwrap_or_default()
        .into_iter()
        .filter(|t| who.guild.is_some() || t.channel == Some(who.channel))
        .collect();
    let task = match found.as_slice() {
        [] => return format!("No task here starts with `{id}` (see /task list)."),
        [t] => t,
        many => return format!("`{id}` matches {} tasks; give more of the id.", many.len()),
    };
    if !who.manage && task.owner != Some(who.user) {
        return format!(
            "Only the person it is for or someone with Manage Server can close that task ({}).",
            task.text
        );
    }
    match app
        .stores::<ImpulseStore>()
        .complete_task(&task.id, app.clock.now())
    {
        Ok(true) => {
            app.journal.record(
                crate::vocab::journal::Entry::new(
                    crate::vocab::journal::Kind::Impulse,
                    format!("task done: {}", task.text),
                )
                .place(task.guild, task.channel)
                .reason(format!("closed by {}", who.name)),
            );
            format!("Done: {}", task.text)
        }
        Ok(false) => "That task was already done.".into(),
        Err(e) => format!("Could not close the task: {e}"),
    }
}

/// `flags`: whether the routine runs during the server's quiet hours too
/// (`anyway`), and posts even when nobody answered the bot's last posts (`unanswered`).
pub(crate) fn schedule_add(
    app: &App,
    who: &Asker,
    name: &str,
    cron: &str,
    action: &str,
    flags: RoutineFlags,
) -> String {
    let Some(guild) = who.guild else {
        return "Schedules belong to a server; use this in one.".into();
    };
    if !who.manage {
        return "Only members with Manage Server can change the schedule.".into();
    }
    match app.impulses.add_routine_with(
        guild,
        Some(who.channel),
        name,
        cron,
        action,
        &who.name,
        flags,
    ) {
        Ok(entry) => {
            let tz = app.impulses.timezone(Some(guild));
            let next = when::parse_cron(&entry.cron)
                .ok()
                .and_then(|s| when::next_fire(&s, app.clock.now(), tz))
                .map(|t| {
                    t.with_timezone(&tz)
                        .format("%a %Y-%m-%d %H:%M %Z")
                        .to_string()
                })
                .unwrap_or_else(|| "never".into());
            let quiet = if entry.during_quiet_hours {
                " It runs during quiet hours too."
            } else if app
                .settings
                .for_guild(Some(guild))
                .initiative
                .quiet_hours
                .trim()
                .is_empty()
            {
                ""
            } else {
                " It is skipped during quiet hours (add it with \"anyway\" to run then too)."
            };
            let settings = app.settings.for_guild(Some(guild));
            let unanswered = unanswered_note(&settings, entry.even_if_unanswered);
            format!(
                "Scheduled **{}** (`{}`, {tz}) in this channel: {}. Next: {next}.{quiet}{unanswered}",
                entry.name, entry.cron, entry.action
            )
        }
        Err(e) => e.to_string(),
    }
}

/// What a new routine does when nobody answered the bot's last unprompted
/// posts: nothing to say when that gate is off.
fn unanswered_note(settings: &crate::settings::Settings, even_if_unanswered: bool) -> String {
    let max = settings.initiative.text.max_unanswered_posts;
    if even_if_unanswered {
        " It posts even when nobody has answered my last posts.".into()
    } else if max == 0 {
        String::new()
    } else {
        " It is skipped while nobody has answered my last posts (initiative.text.maxUnansweredPosts; \
         add it with \"unanswered\" to post then too)."
            .into()
    }
}

pub fn schedule_list(app: &App, who: &Asker) -> String {
    let Some(guild) = who.guild else {
        return "Schedules belong to a server; use this in one.".into();
    };
    let entries = match app.stores::<ImpulseStore>().schedules(Some(guild)) {
        Ok(entries) => entries,
        Err(e) => return cannot_list("the schedules", &e),
    };
    if entries.is_empty() {
        return "Nothing is scheduled. /schedule add NAME \"*/30 * * * *\" WHAT adds a routine."
            .into();
    }
    let tz = app.impulses.timezone(Some(guild));
    let now = app.clock.now();
    let lines: Vec<String> = entries
        .iter()
        .map(|e| {
            let next = when::parse_cron(&e.cron)
                .ok()
                .and_then(|s| when::next_fire(&s, now, tz))
                .map(|t| crate::when::until(t, now))
                .unwrap_or_else(|| "never".into());
            let place = e.channel.map(|c| format!(" in <#{c}>")).unwrap_or_default();
            let anyway = match (e.during_quiet_hours, e.even_if_unanswered) {
                (true, true) => ", runs in quiet hours too, posts even unanswered",
                (true, false) => ", runs in quiet hours too",
                (false, true) => ", posts even unanswered",
                (false, false) => "",
            };
            format!(
                "**{}** `{}`{place} — {} (next {next}{anyway})",
                e.name, e.cron, e.action
            )
        })
        .collect();
    format!("Schedule ({tz}):\n{}", lines.join("\n"))
}

pub(crate) fn schedule_remove(app: &App, who: &Asker, name: &str) -> String {
    let Some(guild) = who.guild else {
        return "Schedules belong to a server; use this in one.".into();
    };
    if !who.manage {
        return "Only members with Manage Server can change the schedule.".into();
    }
    match app
        .stores::<ImpulseStore>()
        .remove_schedule(guild, name.trim())
    {
        Ok(true) => {
            app.journal.record(
                crate::vocab::journal::Entry::new(
                    crate::vocab::journal::Kind::Impulse,
                    format!("schedule removed: {}", name.trim()),
                )
                .guild(Some(guild))
                .reason(format!("by {}", who.name)),
            );
            format!("Removed **{}** from the schedule.", name.trim())
        }
        Ok(false) => format!(
            "Nothing named {:?} is scheduled here (see /schedule list).",
            name.trim()
        ),
        Err(e) => format!("Could not remove it: {e}"),
    }
}

pub(crate) fn idea_add(app: &App, who: &Asker, text: &str) -> String {
    match app
        .impulses
        .add_idea(who.guild, text, &format!("suggested by {}", who.name))
    {
        Ok(i) => format!("Noted. I'll look into it when it's quiet: {}", i.text),
        Err(e) => e.to_string(),
    }
}

pub fn idea_list(app: &App, who: &Asker) -> String {
    let Some(guild) = who.guild else {
        return "Ideas belong to a server; use this in one.".into();
    };
    let ideas = match app.stores::<ImpulseStore>().ideas(Some(guild), true) {
        Ok(ideas) => ideas,
        Err(e) => return cannot_list("the ideas", &e),
    };
    if ideas.is_empty() {
        return "No ideas yet.".into();
    }
    let now = app.clock.now();
    let lines: Vec<String> = ideas
        .iter()
        .take(25)
        .map(|i| {
            let state = match i.explored_at {
                Some(t) => format!("explored {}", crate::when::ago(t, now)),
                None => "waiting for a quiet moment".into(),
            };
            format!("• {} — {} ({state})", i.text, i.sparked_by)
        })
        .collect();
    format!("Ideas:\n{}", lines.join("\n"))
}

/// The console forms: `/task add DUE | TEXT`, `/task list`, `/task done ID`, …
pub fn run_text(app: &App, who: &Asker, family: &str, args: &str) -> String {
    let (verb, rest) = args.trim().split_once(' ').unwrap_or((args.trim(), ""));
    let rest = rest.trim();
    match (family, verb) {
        ("task", "" | "list") => task_list(app, who),
        ("task", "add") => match rest.split_once('|') {
            Some((due, text)) => task_add(app, who, text.trim(), due.trim(), true),
            None => "usage: /task add DUE | TEXT   (e.g. /task add in 10m | stretch)".into(),
        },
        ("task", "done") => task_done(app, who, rest),
        ("schedule", "" | "list") => schedule_list(app, who),
        ("schedule", "add") => {
            let (rest, flags) = routine_flags(rest);
            let parts: Vec<&str> = rest.splitn(3, '|').map(str::trim).collect();
            match parts.as_slice() {
                [name, cron, action] => schedule_add(app, who, name, cron, action, flags),
                _ => "usage: /schedule add NAME | CRON | WHAT [| anyway] [| unanswered]   (e.g. /schedule add standup | 0 9 * * 1-5 | ask how everyone is)".into(),
            }
        }
        ("schedule", "remove") => schedule_remove(app, who, rest),
        ("idea", "" | "list") => idea_list(app, who),
        ("idea", "add") => idea_add(app, who, rest),
        _ => format!("unknown: /{family} {verb}; /help lists the commands"),
    }
}

/// The flags at the end of `/schedule add …`, in any order: `| anyway` (it
/// runs in quiet hours too) and `| unanswered` (it posts even when nobody
/// answered the bot's last posts). What is left is NAME | CRON | WHAT.
fn routine_flags(mut rest: &str) -> (&str, RoutineFlags) {
    let mut flags = RoutineFlags::default();
    while let Some((head, tail)) = rest.rsplit_once('|') {
        let tail = tail.trim();
        if tail.eq_ignore_ascii_case("anyway") {
            flags.during_quiet_hours = true;
        } else if tail.eq_ignore_ascii_case("unanswered") {
            flags.even_if_unanswered = true;
        } else {
            break;
        }
        rest = head;
    }
    (rest, flags)
}
