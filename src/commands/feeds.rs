//! `/feeds add|list|remove|edit|pause|resume|test|preview`: a server's feed
//! subscriptions (Manage Server), as the text to show — thin over
//! [`crate::feeds::Feeds`], which checks everything and says why it refuses.
//!
//! A slash command's text box has one line, so a `\n` typed in a template
//! starts a new line here, in Discord and the console alike.

use crate::app::App;
use crate::feeds::manage::{AddRequest, Added, Changes, Listed, PREVIEW_ITEMS, Sample};
use crate::feeds::subscription::Destination;
use crate::ids::{ChannelId, GuildId, UserId};
use crate::store::MessageStore;
use crate::when::ago;

/// The console form's usage, shown for anything it does not understand.
pub(crate) const USAGE: &str = "usage: /feeds list | /feeds add URL #channel [thread] [embed] [backfill N] [dedupe guid|link|title] [template TEXT...] \
| /feeds remove ID | /feeds pause ID | /feeds resume ID | /feeds test ID | /feeds preview ID [FILTERS...] \
| /feeds edit ID template TEXT... | /feeds edit ID filters TEXT... | /feeds edit ID embed on|off | /feeds edit ID dedupe guid|link|title";

/// A template as typed in a one-line box: `\n` is a new line.
pub(crate) fn template_lines(typed: &str) -> String {
    typed.replace("\\n", "\n")
}

fn where_to(d: Destination) -> &'static str {
    match d {
        Destination::Channel => "a message in the channel",
        Destination::ThreadPerItem => "a message and a thread per item",
        Destination::Forum => "a forum post per item",
    }
}

pub(crate) async fn add(app: &App, guild: GuildId, by: UserId, mut req: AddRequest) -> String {
    req.template = req.template.map(|t| template_lines(&t));
    let channel = req.channel;
    match app.feeds.add(guild, by, req).await {
        Ok(Added {
            id,
            feed,
            destination,
            items,
            backfilled,
        }) => format!(
            "Added subscription {id}: {feed} posts in <#{channel}> ({}). {items} items it lists now are noted as seen; {backfilled} go out now.",
            where_to(destination)
        ),
        Err(e) => format!("Not added: {e}"),
    }
}

/// One subscription on one line.
pub(crate) fn line(l: &Listed, now: chrono::DateTime<chrono::Utc>) -> String {
    let mut parts = vec![format!(
        "{} · {} → <#{}> ({})",
        l.id,
        l.feed,
        l.channel,
        l.destination.as_str()
    )];
    if let Some(why) = &l.paused {
        parts.push(format!("paused: {why}"));
    }
    if l.failures > 0 {
        parts.push(format!("{} failed fetches in a row", l.failures));
    }
    parts.push(match l.last_delivered_at {
        Some(t) => format!("last delivery {}", ago(t, now)),
        None => "nothing delivered yet".into(),
    });
    let c = &l.counts;
    parts.push(format!(
        "sent {}, waiting {}, filtered {}",
        c.sent, c.waiting, c.filtered
    ));
    parts.join(" · ")
}

pub(crate) fn list(app: &App, guild: GuildId) -> String {
    match app.feeds.list(guild) {
        Ok(all) if all.is_empty() => {
            "No feed subscriptions in this server; /feeds add URL #channel adds one.".into()
        }
        Ok(all) => {
            let now = app.clock.now();
            let lines: Vec<String> = all.iter().map(|l| line(l, now)).collect();
            format!("Feed subscriptions:\n{}", lines.join("\n"))
        }
        Err(e) => format!("Cannot list the subscriptions: {e}"),
    }
}

pub(crate) fn remove(app: &App, guild: GuildId, id: i64) -> String {
    match app.feeds.remove(guild, id) {
        Ok(l) => format!("Removed subscription {id} ({} → <#{}>).", l.feed, l.channel),
        Err(e) => format!("Not removed: {e}"),
    }
}

pub(crate) fn edit(app: &App, guild: GuildId, id: i64, mut changes: Changes) -> String {
    changes.template = changes.template.map(|t| template_lines(&t));
    // A slash command cannot send an empty option: `none` clears the filters.
    if changes.filters.as_deref().map(str::trim) == Some("none") {
        changes.filters = Some(String::new());
    }
    match app.feeds.edit(guild, id, changes) {
        Ok(l) => format!(
            "Subscription {id} changed: template {:?}, filters {:?}, embed {}, dedupe {}.",
            l.template,
            l.filters,
            if l.embed { "on" } else { "off" },
            l.dedupe
        ),
        Err(e) => format!("Not changed: {e}"),
    }
}

pub(crate) fn pause(app: &App, guild: GuildId, by: UserId, id: i64) -> String {
    match app.feeds.pause(guild, id, by) {
        Ok(l) => format!(
            "Subscription {id} paused: new items of {} are noted, none posted, until /feeds resume {id}.",
            l.feed
        ),
        Err(e) => format!("Not paused: {e}"),
    }
}

pub(crate) fn resume(app: &App, guild: GuildId, id: i64) -> String {
    match app.feeds.resume(guild, id) {
        Ok(l) => format!(
            "Subscription {id} resumed: new items of {} post in <#{}> again.",
            l.feed, l.channel
        ),
        Err(e) => format!("Not resumed: {e}"),
    }
}

/// The feed's latest item as the subscription would post it.
pub(crate) async fn test(app: &App, guild: GuildId, id: i64) -> String {
    match app.feeds.test(guild, id).await {
        Ok(sample) => sample_text(id, &sample),
        Err(e) => format!("Cannot test: {e}"),
    }
}

fn sample_text(id: i64, s: &Sample) -> String {
    let mut text = format!(
        "Subscription {id} would post its latest item as:\n{}",
        s.content
    );
    for card in &s.cards {
        text.push_str(&format!("\n[card] {}", card.title));
        if let Some(url) = &card.url {
            text.push_str(&format!(" — {url}"));
        }
        if !card.description.is_empty() {
            text.push_str(&format!("\n[card] {}", card.description));
        }
        if let Some(author) = &card.author {
            text.push_str(&format!("\n[card] by {author}"));
        }
        if let Some(footer) = &card.footer {
            text.push_str(&format!("\n[card] {footer}"));
        }
    }
    text.push_str(if s.passes {
        "\nThe filters pass it."
    } else {
        "\nThe filters hold it back: it would not be posted."
    });
    text
}

/// The latest items and whether `filters` (or the subscription's own) pass each.
pub(crate) async fn preview(app: &App, guild: GuildId, id: i64, filters: Option<&str>) -> String {
    let filters = filters.map(str::trim).filter(|f| !f.is_empty());
    match app.feeds.preview(guild, id, filters).await {
        Ok(lines) if lines.is_empty() => "The feed lists no items now.".into(),
        Ok(lines) => {
            let which = match filters {
                Some(f) => format!("the filters {f:?}"),
                None => "its filters".into(),
            };
            let shown: Vec<String> = lines
                .iter()
                .map(|l| {
                    let mark = if l.passes { "passes  " } else { "filtered" };
                    format!("{mark} · {}", l.title)
                })
                .collect();
            format!(
                "Subscription {id}'s latest {} items (at most {PREVIEW_ITEMS}) under {which}:\n{}",
                lines.len(),
                shown.join("\n")
            )
        }
        Err(e) => format!("Cannot preview: {e}"),
    }
}

/// The console form: see [`USAGE`]. A channel is `#name` (one this
/// server's store knows), `<#id>` or an id.
pub async fn run_text(app: &App, guild: GuildId, by: UserId, args: &str) -> String {
    let words: Vec<&str> = args.split_whitespace().collect();
    let id = |w: &str| w.parse::<i64>().ok();
    match words.as_slice() {
        [] | ["list"] => list(app, guild),
        ["add", feed, channel, options @ ..] => match channel_named(app, guild, channel) {
            Ok(channel) => match add_request(feed, channel, options) {
                Some(req) => add(app, guild, by, req).await,
                None => USAGE.into(),
            },
            Err(e) => e,
        },
        [verb, n, rest @ ..] if id(n).is_some() => {
            let n = id(n).unwrap_or_default();
            match (*verb, rest) {
                ("remove", []) => remove(app, guild, n),
                ("pause", []) => pause(app, guild, by, n),
                ("resume", []) => resume(app, guild, n),
                ("test", []) => test(app, guild, n).await,
                ("preview", filters) => {
                    let filters = filters.join(" ");
                    preview(app, guild, n, Some(&filters)).await
                }
                ("edit", [part, value @ ..]) if !value.is_empty() => {
                    match changes(part, &rest_of(args, value)) {
                        Some(c) => edit(app, guild, n, c),
                        None => USAGE.into(),
                    }
                }
                _ => USAGE.into(),
            }
        }
        _ => USAGE.into(),
    }
}

/// The text of `args` from the first of `words` on, as typed (spaces kept).
fn rest_of(args: &str, words: &[&str]) -> String {
    let Some(first) = words.first() else {
        return String::new();
    };
    // `first` is a slice of `args` (split_whitespace borrows), so its offset is exact.
    let at = first.as_ptr() as usize - args.as_ptr() as usize;
    args[at..].trim().to_string()
}

fn changes(part: &str, value: &str) -> Option<Changes> {
    let mut c = Changes::default();
    match part {
        "template" => c.template = Some(value.into()),
        "filters" => c.filters = Some(value.into()),
        "embed" => c.embed = Some(on_off(value)?),
        "dedupe" => c.dedupe = Some(value.into()),
        _ => return None,
    }
    Some(c)
}

fn on_off(word: &str) -> Option<bool> {
    match word {
        "on" | "true" | "yes" => Some(true),
        "off" | "false" | "no" => Some(false),
        _ => None,
    }
}

/// `[thread] [embed] [backfill N] [dedupe RULE] [template TEXT...]`.
fn add_request(feed: &str, channel: ChannelId, options: &[&str]) -> Option<AddRequest> {
    let mut req = AddRequest::new(feed, channel);
    let mut rest = options;
    while let [word, tail @ ..] = rest {
        rest = tail;
        match *word {
            "thread" => req.thread_per_item = true,
            "embed" => req.embed = true,
            "backfill" | "dedupe" => {
                let [value, tail @ ..] = rest else {
                    return None;
                };
                rest = tail;
                if *word == "backfill" {
                    req.backfill = value.parse().ok()?;
                } else {
                    req.dedupe = Some((*value).into());
                }
            }
            "template" if !rest.is_empty() => {
                req.template = Some(rest.join(" "));
                rest = &[];
            }
            _ => return None,
        }
    }
    Some(req)
}

/// `#name` (a channel of this server the bot knows), `<#id>` or an id.
fn channel_named(app: &App, guild: GuildId, text: &str) -> Result<ChannelId, String> {
    let id = text.trim_start_matches("<#").trim_end_matches('>');
    if let Ok(n) = id.parse::<u64>() {
        return Ok(ChannelId(n));
    }
    let name = text.trim_start_matches('#');
    match app.stores::<MessageStore>().channel_by_name(guild, name) {
        Ok(Some(c)) => Ok(c),
        Ok(None) => Err(format!(
            "Not added: this server has no channel {text} the bot knows; /channels lists them"
        )),
        Err(e) => Err(format!("Not added: the store failed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_console_form_reads_its_options_in_any_order() {
        let c = ChannelId(7);
        let r = add_request(
            "hn",
            c,
            &[
                "embed",
                "backfill",
                "3",
                "thread",
                "template",
                "**{title}**",
                "{link}",
            ],
        )
        .unwrap();
        assert!(r.embed && r.thread_per_item);
        assert_eq!(r.backfill, 3);
        assert_eq!(r.template.as_deref(), Some("**{title}** {link}"));
        assert!(add_request("hn", c, &["backfill"]).is_none());
        assert!(add_request("hn", c, &["backfill", "lots"]).is_none());
        assert!(add_request("hn", c, &["colour"]).is_none());
    }

    #[test]
    fn an_edit_keeps_the_text_as_typed() {
        let args = "edit 3 template  **{title}**   by {author}";
        let words: Vec<&str> = args.split_whitespace().collect();
        assert_eq!(rest_of(args, &words[3..]), "**{title}**   by {author}");
        assert_eq!(
            template_lines("**{title}**\\n{link}"),
            "**{title}**\n{link}"
        );
    }
}
