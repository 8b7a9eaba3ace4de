//! The replay report on the terminal: what an owner reads in ten seconds
//! first (what the bot did, what it would cost), the detail after.

/// A line into a `String`, which cannot fail (so no `Result` to drop).
macro_rules! say {
    ($out:expr, $($arg:tt)*) => {{
        $out.push_str(&format!($($arg)*));
        $out.push('\n');
    }};
}

use super::report::{Counts, Report};

/// The whole report as text.
pub fn report(r: &Report) -> String {
    let mut out = String::new();
    headline(&mut out, r);
    did(&mut out, r);
    models(&mut out, r);
    restraint(&mut out, r);
    places(&mut out, r);
    out
}

fn headline(out: &mut String, r: &Report) {
    let run = &r.run;
    say!(
        out,
        "Replayed {} messages of {} in {} ({} to {}, {:.1} days).",
        r.messages,
        run.guild,
        run.files.join(", "),
        run.from.format("%Y-%m-%d %H:%M"),
        run.to.format("%Y-%m-%d %H:%M"),
        run.days
    );
    let mode = match run.post_rate {
        Some(rate) => format!(
            "{} (placeholder answers; decisions post at rate {rate:.2}, seed {})",
            run.model, run.seed
        ),
        None => run.model.clone(),
    };
    say!(out, "Models: {mode}. Eagerness {}.", run.eagerness);
    if run.skipped > 0 || run.bot_messages_left_out > 0 {
        say!(
            out,
            "Left out: {} not chat, {} by the bot itself in the export.",
            messages(run.skipped),
            messages(run.bot_messages_left_out)
        );
    }
    out.push('\n');
}

fn did(out: &mut String, r: &Report) {
    let days = r.run.days;
    let active = r.active_days.max(1) as f64;
    say!(
        out,
        "What the bot did        total   per day   per active day"
    );
    for (what, n) in rows(&r.did) {
        say!(
            out,
            "  {what:<20} {n:>6}  {:>8.1}  {:>15.1}",
            n as f64 / days,
            n as f64 / active
        );
    }
    say!(
        out,
        "  (active days: the {} dates on which people spoke; the export spans {:.1} days)",
        r.active_days,
        days
    );
    out.push('\n');
}

fn rows(c: &Counts) -> [(&'static str, u64); 5] {
    [
        ("replies", c.replies),
        ("chime-ins", c.chime_ins),
        ("ambient posts", c.ambient_posts),
        ("reactions", c.reactions),
        ("reminders", c.reminders),
    ]
}

fn models(out: &mut String, r: &Report) {
    say!(
        out,
        "Model calls   calls  refused  tokens in  out likely  out worst  likely cost  worst cost  model"
    );
    for role in &r.roles {
        say!(
            out,
            "  {:<10} {:>6} {:>8} {:>10} {:>11} {:>10} {:>12} {:>11}  {}",
            role.role,
            role.calls,
            role.refused,
            role.input_tokens,
            role.likely_output_tokens,
            role.worst_output_tokens,
            money(role.likely_cost),
            money(role.worst_cost),
            role.models.join(", ")
        );
    }
    if r.roles.is_empty() {
        say!(out, "  none: every message was handled without a model");
    }
    if !r.calls_by_purpose.is_empty() {
        let by: Vec<String> = r
            .calls_by_purpose
            .iter()
            .map(|(what, n)| format!("{what} {n}"))
            .collect();
        say!(out, "  Calls by purpose: {}.", by.join(", "));
    }
    say!(
        out,
        "Estimated cost per day: likely {}, worst case {}; per active day: likely {}, worst case {}.",
        money(r.likely_cost_per_day),
        money(r.worst_cost_per_day),
        money(r.likely_cost_per_active_day),
        money(r.worst_cost_per_active_day)
    );
    if r.run.post_rate.is_some() {
        say!(
            out,
            "  Likely: each call answering as long as a typical answer of its kind; worst case: \
             each answering its role's maxOutputTokens."
        );
    }
    if !r.unpriced_models.is_empty() {
        say!(
            out,
            "  No price for {}: add it to executive.prices.",
            r.unpriced_models.join(", ")
        );
    }
    if let Some(note) = unserved(&r.run.roles_without_model, &r.run.no_model_because) {
        say!(out, "  {note}");
    }
    if r.run.models_assumed_on_request {
        say!(
            out,
            "  Assumed providers (--assume-providers): an Anthropic key for replies and a local \
             Ollama for the rest, whatever this set-up has. A what-if, not what your bot would do."
        );
    } else if r.run.models_assumed {
        say!(
            out,
            "  No model serves any role here, so the bot as configured would answer nobody and \
             post nothing; the roles' models are assumed: an Anthropic key for replies and a \
             local Ollama for the rest."
        );
    }
    out.push('\n');
}

fn restraint(out: &mut String, r: &Report) {
    let share = if r.messages == 0 {
        100.0
    } else {
        100.0 * r.without_strong_call as f64 / r.messages as f64
    };
    say!(
        out,
        "Handled without the strong model: {} of {} messages ({share:.1}%).",
        r.without_strong_call,
        r.messages
    );
    let said_no: Vec<String> = r
        .gates
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(g, n)| format!("{} {n}", g.replace('_', " ")))
        .collect();
    say!(
        out,
        "Gates that said no (the initiative's once per tick they stopped it; budget and \
         hourly cap once per call or message too): {}.",
        if said_no.is_empty() {
            "none".to_string()
        } else {
            said_no.join(", ")
        }
    );
    say!(out, "Limits that bound its own posts: {}.", binds(r));
    say!(
        out,
        "Answers paid for but not delivered: {}. Model calls past a gate's no: {}.",
        r.undeliverable,
        r.calls_past_a_gate
    );
    say!(
        out,
        "Consecutive unanswered ambient posts (straight after its own, nobody speaking in between): {} of {}.",
        r.consecutive_unanswered,
        r.did.ambient_posts
    );
    if r.turned_away > r.undeliverable {
        say!(
            out,
            "Unpaid texts (reflexes, reminders) turned away at the hourly cap or a refusal: {}.",
            r.turned_away - r.undeliverable
        );
    }
    out.push('\n');
}

fn places(out: &mut String, r: &Report) {
    say!(
        out,
        "Per channel        messages  replies  chime-ins  ambient  reactions  reminders"
    );
    for c in &r.per_channel {
        line(out, &c.channel, c.messages, &c.did);
    }
    out.push('\n');
    say!(
        out,
        "Per day            messages  replies  chime-ins  ambient  reactions  reminders"
    );
    for d in &r.per_day {
        line(out, &d.day, d.messages, &d.did);
    }
}

fn line(out: &mut String, what: &str, messages: u64, c: &Counts) {
    say!(
        out,
        "  {what:<18} {messages:>6} {:>8} {:>10} {:>8} {:>10} {:>10}",
        c.replies,
        c.chime_ins,
        c.ambient_posts,
        c.reactions,
        c.reminders
    );
}

fn messages(n: u64) -> String {
    match n {
        1 => "1 message".into(),
        n => format!("{n} messages"),
    }
}

/// What roles without a model mean for the bot, in words; `None` when every role has one.
pub(crate) fn unserved(roles: &[String], reasons: &[String]) -> Option<String> {
    let (last, rest) = roles.split_last()?;
    let names = if rest.is_empty() {
        format!("the {last} role")
    } else {
        format!("the {} and {last} roles", rest.join(", "))
    };
    let would_not: Vec<&str> = roles
        .iter()
        .map(|role| match role.as_str() {
            "reply" => "answer anyone who speaks to it",
            "ambient" => "post on its own, chime in or tend its garden",
            "reflex" => "run level-2 reflexes",
            "extract" => "remember anything from conversations",
            _ => "do that role's work",
        })
        .collect();
    let would_not = match would_not.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{}; or {last}", rest.join("; ")),
        _ => would_not.concat(),
    };
    Some(format!(
        "No model for {names} ({}), so the bot would not {would_not}.",
        reasons.join("; ")
    ))
}

/// US$, with cents below a dollar shown to a tenth of a cent.
pub fn money(v: Option<f64>) -> String {
    match v {
        None => "unknown".into(),
        Some(v) if v < 1.0 => format!("${v:.3}"),
        Some(v) => format!("${v:.2}"),
    }
}

/// The caps that stopped the bot's own posts, in words.
fn binds(r: &Report) -> String {
    if r.binding_limits.is_empty() {
        "none (the eagerness dice and the room decided)".into()
    } else {
        r.binding_limits.join(", ")
    }
}

/// One row of a sweep: the value the swept setting had, and its replay.
pub(crate) struct SweepRow<'a> {
    pub value: String,
    pub report: &'a Report,
}

/// The table an owner picks a setting's value from (`setting` heads the
/// first column): what the bot did and cost per day and per active day,
/// and which limit bound it.
pub(crate) fn sweep(setting: &str, rows: &[SweepRow<'_>]) -> String {
    let width = setting.len().max(9);
    let mut out = String::new();
    say!(
        out,
        "{setting:>width$}  posts/day  per active day  chime-ins/day  calls/day  likely cost/day  \
         worst cost/day  limits that bound"
    );
    for row in rows {
        let r = row.report;
        let days = r.run.days;
        say!(
            out,
            "{:>width$} {:>10.1} {:>15.1} {:>14.1} {:>10.1} {:>16} {:>15}  {}",
            row.value,
            r.did.ambient_posts as f64 / days,
            r.did.ambient_posts as f64 / r.active_days.max(1) as f64,
            r.did.chime_ins as f64 / days,
            r.calls as f64 / days,
            money(r.likely_cost_per_day),
            money(r.worst_cost_per_day),
            binds(r)
        );
    }
    out
}
