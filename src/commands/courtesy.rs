//! `/ambient hush [duration] [channel]`, `/ambient unhush [channel]` and
//! `/ambient me [boundary on|off]` (Discord and console alike). Who may hush
//! what is `courtesy::hush`'s rule; a boundary is the asker's own, so anyone
//! may set theirs, anywhere, DMs included.

use crate::app::App;
use crate::commands::Asker;
use crate::courtesy::hush::{self, Ctx};
use crate::store::MessageStore;
use crate::store::PeopleStore;
use crate::store::boundaries::Boundary;

/// A hush or unhush refused; the text is for the asker alone.
#[derive(Debug, thiserror::Error)]
pub enum HushRefused {
    #[error("Hush works in a server; in a DM I only answer you anyway.")]
    HushInDm,
    #[error("Hush works in a server.")]
    UnhushInDm,
    /// `courtesy::hush`'s own refusal: a duration, a place or a permission, in its words.
    #[error(transparent)]
    Courtesy(#[from] hush::HushError),
}

/// Hushes; `Ok` is the confirmation everyone in the channel may see, `Err`
/// a refusal for the asker alone.
pub fn hush(app: &App, who: &Asker, duration: &str, place: &str) -> Result<String, HushRefused> {
    let Some(guild) = who.guild else {
        return Err(HushRefused::HushInDm);
    };
    let duration = hush::parse_duration(duration)?;
    let place = hush::parse_place(place, &app.stores::<MessageStore>(), guild, who.channel)?;
    let settings = app.settings.for_guild(Some(guild));
    hush::hush(
        &ctx(app, &settings, guild),
        &hush_asker(who),
        place,
        duration,
    )
    .map_err(HushRefused::from)
}

pub(crate) fn unhush(app: &App, who: &Asker, place: &str) -> Result<String, HushRefused> {
    let Some(guild) = who.guild else {
        return Err(HushRefused::UnhushInDm);
    };
    let place = hush::parse_place(place, &app.stores::<MessageStore>(), guild, who.channel)?;
    let settings = app.settings.for_guild(Some(guild));
    hush::unhush(&ctx(app, &settings, guild), &hush_asker(who), place).map_err(HushRefused::from)
}

/// `courtesy::hush`'s refusal, in its own words.
fn ctx<'a>(
    app: &'a App,
    settings: &'a crate::settings::Settings,
    guild: crate::ids::GuildId,
) -> Ctx<'a> {
    Ctx {
        settings,
        store: app.stores(),
        journal: &app.journal,
        guild,
        now: app.clock.now(),
    }
}

fn hush_asker(who: &Asker) -> hush::Asker {
    hush::Asker {
        user: who.user,
        name: who.name.clone(),
        manage: who.manage,
        channel: who.channel,
    }
}

/// `/ambient me` shows the asker's boundaries; `/ambient me no-ping on` sets one.
pub(crate) fn me(app: &App, who: &Asker, boundary: &str, state: &str) -> String {
    if boundary.trim().is_empty() {
        return show(app, who);
    }
    let Some(b) = Boundary::parse(boundary) else {
        return format!(
            "{:?} is not a boundary; choose one of {}.",
            boundary.trim(),
            words()
        );
    };
    let on = match state.trim().to_ascii_lowercase().as_str() {
        "" | "on" | "yes" | "true" => true,
        "off" | "no" | "false" => false,
        other => {
            return format!(
                "{other:?}: say on or off, e.g. /ambient me {} off.",
                b.word()
            );
        }
    };
    let now = app.clock.now();
    match app
        .stores::<PeopleStore>()
        .set_boundary(who.user, b, on, now)
    {
        Ok(changed) => {
            if b == Boundary::NoVoice {
                app.voice.boundary_changed(who.user, on);
            }
            // The operator's journal only (no server): a person's boundaries are theirs,
            // not something a server's members should read back with /ambient why.
            app.journal.record(crate::vocab::journal::Entry::new(
                crate::vocab::journal::Kind::Settings,
                format!(
                    "{} {} a boundary: {}",
                    who.name,
                    if on { "set" } else { "lifted" },
                    b.meaning()
                ),
            ));
            match (on, changed) {
                (true, _) => format!(
                    "Done — {}: {} It holds on every server I share with you.",
                    b.meaning(),
                    promise(b)
                ),
                (false, true) => format!("Okay, {:?} is lifted.", b.meaning()),
                (false, false) => format!("You had not asked for {:?}.", b.meaning()),
            }
        }
        Err(e) => format!("Could not save that: {e}"),
    }
}

fn show(app: &App, who: &Asker) -> String {
    let set = match app.stores::<PeopleStore>().boundaries(who.user) {
        Ok(set) => set,
        Err(e) => return format!("Could not read your boundaries: {e}"),
    };
    let mut lines = vec![
        "Your boundaries (yours everywhere: every server I share with you, and DMs):".to_string(),
    ];
    for b in Boundary::ALL {
        let state = match set.iter().find(|(x, _)| *x == b) {
            Some((_, at)) => format!("on since {}", at.format("%Y-%m-%d")),
            None => "off".into(),
        };
        lines.push(format!("- {} ({}): {state}", b.word(), b.meaning()));
    }
    lines.push(format!(
        "Change one with /ambient me <boundary> on|off, e.g. /ambient me no-ping on. ({})",
        words()
    ));
    lines.join("\n")
}

/// What the bot does from now on, in its own words.
fn promise(b: Boundary) -> &'static str {
    match b {
        Boundary::NoPing => {
            "I write your name instead of @mentioning you, in answers, reminders and posts alike."
        }
        Boundary::NoUnprompted => {
            "I answer you when you talk to me, but never join in after your messages on my own."
        }
        Boundary::NoMemory => {
            "I no longer learn anything from your messages. What I remember already stays until /memory forget-me."
        }
        Boundary::NoVoice => "your voice is never recorded or transcribed.",
        Boundary::NoVoiceAnswers => {
            "I never answer aloud in a voice channel while you are in it; answers come as text."
        }
    }
}

fn words() -> String {
    Boundary::ALL
        .iter()
        .map(|b| b.word())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The console's `/ambient …` courtesy verbs: `hush [DURATION]
/// [#channel|server]`, `unhush [#channel|server]`, `me [BOUNDARY [on|off]]`
/// (the console answers `why`, `status` and `garden` itself); anything
/// else gets the usage of every `/ambient` verb.
pub fn run_text(app: &App, who: &Asker, rest: &str) -> String {
    let (verb, args) = rest.trim().split_once(' ').unwrap_or((rest.trim(), ""));
    match verb {
        "hush" => {
            let (duration, place) = split_place(args);
            hush(app, who, duration, place).unwrap_or_else(|e| e.to_string())
        }
        "unhush" => unhush(app, who, args).unwrap_or_else(|e| e.to_string()),
        "me" => {
            let mut words = args.split_whitespace();
            me(app, who, words.next().unwrap_or(""), words.next().unwrap_or(""))
        }
        _ => "usage: /ambient why [MESSAGE-ID], /ambient status, /ambient garden, /ambient hush [DURATION] [#channel|server], /ambient unhush [#channel|server], /ambient me [BOUNDARY on|off]".into(),
    }
}

/// "2 hours #memes" → ("2 hours", "#memes"); a last word naming a place is the place.
fn split_place(args: &str) -> (&str, &str) {
    let args = args.trim();
    match args.rsplit_once(' ').unwrap_or(("", args)) {
        (duration, last)
            if last.starts_with('#')
                || last.starts_with("<#")
                || ["server", "here"].contains(&last.to_ascii_lowercase().as_str()) =>
        {
            (duration.trim(), last)
        }
        _ => (args, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::split_place;

    #[test]
    fn the_last_word_may_name_the_place() {
        assert_eq!(split_place("2h"), ("2h", ""));
        assert_eq!(split_place("an hour"), ("an hour", ""));
        assert_eq!(split_place("2 hours #memes"), ("2 hours", "#memes"));
        assert_eq!(split_place("30m server"), ("30m", "server"));
        assert_eq!(split_place("server"), ("", "server"));
        assert_eq!(split_place(""), ("", ""));
    }
}
