//! `/memory forget-me` in the store: everything held of one person, in
//! every guild and direct message, removed or redacted in one transaction.
//!
//! Two kinds of trace are found. Rows that *are* the person's — their facts,
//! their messages, the context-stream lines, voice spans and journal
//! entries of those messages — are deleted or blanked. Text that merely
//! *quotes* them (a journal summary "remembered: …", the bot's own reply, a
//! garden note, a pending thought) is found by the forgotten texts
//! themselves and has each quote replaced by [`REDACTED`]. A text shorter
//! than [`MIN_QUOTE_CHARS`] is not searched for: "ok" would blank everyone's
//! words, and so short a text cannot say anything about a person anyway.
//!
//! Deleted bytes must not survive on disk: the store runs with
//! `secure_delete` (freed space is zeroed), the full-text index is merged so
//! no old segment still holds the words, and the write-ahead log, which
//! holds earlier versions of every page it saw, is checkpointed and truncated.

use std::collections::HashMap;

use regex::{Regex, RegexBuilder};
use rusqlite::{Transaction, params};

use super::people::{LedgerEntry, PersonEvent};
use super::{PeopleStore, Result, StoreError, to_ms};
use crate::ids::UserId;
use chrono::{DateTime, Utc};

/// What a quote of forgotten text becomes.
pub(crate) const REDACTED: &str = "[forgotten]";

/// Texts shorter than this (in characters) are not searched for as quotes.
pub(crate) const MIN_QUOTE_CHARS: usize = 6;

/// What the journal says instead of an entry about a forgotten message.
const REDACTED_ENTRY: &str = "[forgotten at a member's request]";

/// Free-text columns that can quote a person, searched for every forgotten
/// text. `true`: the column holds JSON, where the quote appears escaped.
const QUOTING_COLUMNS: &[(&str, &str, bool)] = &[
    ("facts", "content", false),
    ("messages", "content", false),
    ("context_stream", "content", false),
    ("journal", "summary", false),
    ("journal", "reason", false),
    ("journal", "data", true),
    ("pending_thoughts", "draft", false),
    ("pending_thoughts", "last_reason", false),
    ("initiative_outbox", "text", false),
    ("tasks", "text", false),
    ("tasks", "message", false),
    ("tasks", "context", false),
    ("ideas", "text", false),
    ("ideas", "sparked_by", false),
    ("garden_queue", "context", false),
    ("garden_cycles", "summary", false),
    ("garden_cycles", "todos", true),
    ("garden_cycles", "steps", true),
    ("garden_cycles", "proactive_work", false),
    ("usage", "detail", false),
];

/// What forget-me removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Forgotten {
    pub facts: usize,
    pub messages: usize,
    /// Stream lines deleted, journal entries blanked and quotes replaced elsewhere.
    pub redacted: usize,
    /// Whether the write-ahead log was emptied (false: another reader held it).
    pub log_truncated: bool,
}

struct Said {
    id: i64,
    content: String,
}

impl PeopleStore {
    /// Forgets `user` everywhere: the facts about them (and, with
    /// `messages`, the facts they told and the text of everything they
    /// said), and every quote of those texts. One transaction, then the
    /// write-ahead log is checkpointed so the old pages leave the disk.
    /// With a people ledger (`people`), the request is passed on to the
    /// bot's other processes first: if it cannot be, nothing is forgotten.
    pub fn forget_person(
        &self,
        user: UserId,
        messages: bool,
        at: DateTime<Utc>,
    ) -> Result<Forgotten> {
        self.pass_on(PersonEvent::ForgetMe { user, messages }, at)?;
        let asked = Erasure { user, messages, at };
        self.forget(&asked, Carried::Here)
    }

    /// Carries out again, here only, an erasure already recorded (it is not
    /// logged or passed on a second time): for work that read someone's
    /// words before they asked and stored what it learned after the erasure
    /// ran. Bounded by when they asked: what was said by then goes, facts
    /// learned from it included; what they said since is theirs.
    pub(crate) fn erase_again(&self, erasure: &Erasure) -> Result<Forgotten> {
        self.forget(erasure, Carried::Again)
    }

    /// When each of `users` last asked to be forgotten, for those who did.
    pub(crate) fn last_erasures(&self, users: &[UserId]) -> Result<HashMap<UserId, DateTime<Utc>>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached("SELECT max(at) FROM erasures WHERE user_id = ?1")?;
        let mut last = HashMap::new();
        for u in users {
            let at: Option<i64> = stmt.query_row([u.to_sql()], |r| r.get(0))?;
            if let Some(at) = at {
                last.insert(*u, super::from_ms(at));
            }
        }
        Ok(last)
    }

    /// Where the erasure log ends now: an extraction notes it before it
    /// reads a channel, and [`PeopleStore::erasures_after`] it before it stores.
    pub(crate) fn erasure_mark(&self) -> Result<i64> {
        Ok(self
            .0
            .lock()
            .query_row("SELECT coalesce(max(seq), 0) FROM erasures", [], |r| {
                r.get(0)
            })?)
    }

    /// The forget-mes carried out after `mark`, oldest first.
    pub fn erasures_after(&self, mark: i64) -> Result<Vec<Erasure>> {
        read_erasures(&self.0.lock(), mark)
    }

    /// Another process's forget-me from the people ledger, applied here:
    /// what was held of `user` when they asked (`entry.at`), with the
    /// cursor moved to the event in the same transaction. Applied again,
    /// it finds nothing more (what they said since is not theirs to lose).
    pub(crate) fn apply_forget_event(
        &self,
        ledger_id: &str,
        entry: &LedgerEntry,
        user: UserId,
        messages: bool,
    ) -> Result<Forgotten> {
        let asked = Erasure {
            user,
            messages,
            at: entry.at,
        };
        self.forget(&asked, Carried::FromLedger(ledger_id, entry.seq))
    }

    /// One erasure in one transaction, logged (but when carried out again),
    /// then the write-ahead log emptied.
    fn forget(&self, asked: &Erasure, carried: Carried<'_>) -> Result<Forgotten> {
        // Asked here, it takes everything held now; asked elsewhere or
        // earlier, what was held when they asked.
        let until = (carried != Carried::Here).then(|| to_ms(asked.at));
        let mut conn = self.0.lock();
        let tx = conn.transaction()?;
        let mut out = erase(&tx, asked, until)?;
        merge_fact_index(&tx)?;
        if let Carried::FromLedger(ledger_id, seq) = carried {
            super::people::set_cursor(&tx, ledger_id, seq)?;
        }
        if carried != Carried::Again {
            tx.execute(
                "INSERT INTO erasures (user_id, messages, at) VALUES (?1, ?2, ?3)",
                params![asked.user.to_sql(), asked.messages, to_ms(asked.at)],
            )?;
        }
        tx.commit()?;
        let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
        out.log_truncated = busy == 0;
        Ok(out)
    }
}

/// How an erasure came to be carried out in this store.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Carried<'a> {
    /// Asked here: everything held now, logged.
    Here,
    /// Another process's, from the people ledger (its id and the event's
    /// sequence number): what was held when asked, logged, the cursor moved.
    FromLedger(&'a str, i64),
    /// One already logged, once more: what was held when asked, not logged.
    Again,
}

/// One forget-me (a row of the erasure log, migration 18).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Erasure {
    pub user: UserId,
    /// The text of what they said went too.
    pub messages: bool,
    /// What was held of them until then went.
    pub at: DateTime<Utc>,
}

/// The erasures logged after `mark` (0: all of them), oldest first.
pub(super) fn read_erasures(conn: &rusqlite::Connection, mark: i64) -> Result<Vec<Erasure>> {
    let mut stmt = conn
        .prepare_cached("SELECT user_id, messages, at FROM erasures WHERE seq > ?1 ORDER BY seq")?;
    let rows = stmt
        .query_map([mark], |r| {
            Ok(Erasure {
                user: UserId::from_sql(r.get(0)?),
                messages: r.get(1)?,
                at: super::from_ms(r.get(2)?),
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// One erasure inside the caller's transaction: the facts, with
/// `messages` the texts, what was held until `until` (Unix ms) if given,
/// every quote of them redacted, and the full-text index merged.
pub(super) fn erase(tx: &Transaction<'_>, e: &Erasure, until: Option<i64>) -> Result<Forgotten> {
    let mut out = Forgotten::default();
    let mut quotes = forget_facts(tx, e.user, e.messages, until, &mut out)?;
    if e.messages {
        quotes.extend(forget_messages(tx, e.user, e.at, until, &mut out)?);
        forget_access(tx, e.user, until)?;
    }
    out.redacted += redact_quotes(tx, &quotes)?;
    Ok(out)
}

/// A pairing code names its holder, and when they were refused is about
/// them: both go with their words. An owner's approval stays — forget-me
/// is not a way to be let in or out.
fn forget_access(tx: &Transaction<'_>, user: UserId, until: Option<i64>) -> Result<()> {
    let until = until.unwrap_or(i64::MAX);
    tx.execute(
        "DELETE FROM dm_pairing_codes WHERE user_id = ?1 AND created_at <= ?2",
        params![user.to_sql(), until],
    )?;
    tx.execute(
        "DELETE FROM access_notices WHERE user_id = ?1 AND told_at <= ?2",
        params![user.to_sql(), until],
    )?;
    Ok(())
}

/// Rewrites the full-text index without the deleted facts' words: the old
/// segments' pages are freed (and zeroed by secure_delete).
pub(super) fn merge_fact_index(tx: &Transaction<'_>) -> Result<()> {
    tx.execute("INSERT INTO facts_fts (facts_fts) VALUES ('optimize')", [])?;
    Ok(())
}

/// The erasures that hold for each person: their latest, and — when that
/// one left their words — the latest that took their words too. (Joining
/// them into one would take words they said between the two, which they
/// did not ask for.)
pub(super) fn latest_per_person(all: Vec<Erasure>) -> Vec<Erasure> {
    let mut latest: HashMap<UserId, (Option<Erasure>, Option<Erasure>)> = HashMap::new();
    for e in all {
        let (any, words) = latest.entry(e.user).or_default();
        if e.messages && words.as_ref().is_none_or(|w| w.at < e.at) {
            *words = Some(e.clone());
        }
        if any.as_ref().is_none_or(|a| a.at < e.at) {
            *any = Some(e);
        }
    }
    let mut out = Vec::new();
    for (any, words) in latest.into_values() {
        let covered = any.as_ref().is_some_and(|a| a.messages);
        out.extend(any);
        out.extend(words.filter(|_| !covered));
    }
    out.sort_by_key(|e| (e.at, e.user.get()));
    out
}

/// Deletes the facts about `user` (and those they told, with `told`)
/// that were held by `until` (Unix ms) if given — stored by then, or
/// learned from a message said by then (its id tells when: a snowflake),
/// so a fact stored later from words said before the request goes too —
/// and returns their texts.
fn forget_facts(
    tx: &Transaction<'_>,
    user: UserId,
    told: bool,
    until: Option<i64>,
    out: &mut Forgotten,
) -> Result<Vec<String>> {
    let mut stmt = tx.prepare_cached(
        "SELECT id, content FROM facts
         WHERE ((scope = 'user' AND user_id = ?1) OR (?2 AND author_id = ?1))
           AND (?3 IS NULL OR created_at <= ?3
                OR EXISTS (SELECT 1 FROM json_each(facts.sources) AS s
                           WHERE s.value > 0 AND (s.value >> 22) + ?4 <= ?3))",
    )?;
    let epoch = crate::ids::DISCORD_EPOCH_MS;
    let facts: Vec<(String, String)> = stmt
        .query_map(params![user.to_sql(), told, until, epoch], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    for (id, _) in &facts {
        tx.execute("DELETE FROM fact_reinforcements WHERE fact_id = ?1", [id])?;
        tx.execute("DELETE FROM fact_links WHERE a = ?1 OR b = ?1", [id])?;
        tx.execute("DELETE FROM facts WHERE id = ?1", [id])?;
    }
    out.facts = facts.len();
    Ok(facts.into_iter().map(|(_, content)| content).collect())
}

/// Blanks every message `user` wrote (text and voice) up to `until` (Unix
/// ms) if given (which takes their lines out of the context stream, read
/// from these rows) and the journal entries about them; returns their texts.
fn forget_messages(
    tx: &Transaction<'_>,
    user: UserId,
    at: DateTime<Utc>,
    until: Option<i64>,
    out: &mut Forgotten,
) -> Result<Vec<String>> {
    let mut stmt = tx.prepare_cached(
        "SELECT id, content FROM messages
         WHERE author_id = ?1 AND (content != '' OR attachments != '[]')
           AND (?2 IS NULL OR created_at <= ?2)",
    )?;
    let said: Vec<Said> = stmt
        .query_map(params![user.to_sql(), until], |r| {
            Ok(Said {
                id: r.get(0)?,
                content: r.get(1)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    for m in &said {
        tx.execute(
            "UPDATE messages SET content = '', attachments = '[]', deleted_at = coalesce(deleted_at, ?2)
             WHERE id = ?1",
            params![m.id, to_ms(at)],
        )?;
        // When they spoke in a voice channel says something about them too.
        tx.execute("DELETE FROM voice_utterances WHERE message_id = ?1", [m.id])?;
        out.redacted += tx.execute(
            "UPDATE journal SET summary = ?2, reason = '', data = '{}' WHERE message_id = ?1",
            params![m.id, REDACTED_ENTRY],
        )?;
    }
    out.messages = said.len();
    Ok(said.into_iter().map(|m| m.content).collect())
}

/// Replaces every quote of a forgotten text by [`REDACTED`], wherever a
/// free-text column holds one: one pass over each column, whatever the
/// number of texts (a person may have said thousands of things).
fn redact_quotes(tx: &Transaction<'_>, texts: &[String]) -> Result<usize> {
    let texts: Vec<&str> = texts
        .iter()
        .map(|t| t.trim())
        .filter(|t| t.chars().count() >= MIN_QUOTE_CHARS)
        .collect();
    if texts.is_empty() {
        return Ok(0);
    }
    // Inside a JSON string a quote appears escaped.
    let escaped: Vec<String> = texts
        .iter()
        .map(|t| {
            let s = serde_json::Value::from(*t).to_string();
            s[1..s.len() - 1].to_string()
        })
        .collect();
    let plain = Quotes::new(texts.iter().copied())?;
    let json = Quotes::new(escaped.iter().map(String::as_str))?;
    let mut n = 0;
    for (table, column, is_json) in QUOTING_COLUMNS {
        n += redact_column(tx, table, column, if *is_json { &json } else { &plain })?;
    }
    Ok(n)
}

/// Quotes are often cut (the context stream at 240 characters, feedback at
/// 140, reflex notes at 80), so a quote is found by its first
/// [`HEAD_CHARS`] characters and runs as far as it follows the text.
const HEAD_CHARS: usize = 80;

/// Finds quotes of any of a set of texts.
struct Quotes {
    heads: Regex,
    texts: HashMap<String, Vec<String>>,
}

impl Quotes {
    fn new<'a>(texts: impl Iterator<Item = &'a str>) -> Result<Self> {
        let mut by_head: HashMap<String, Vec<String>> = HashMap::new();
        for t in texts {
            let head: String = t.chars().take(HEAD_CHARS).collect();
            by_head.entry(head).or_default().push(t.to_string());
        }
        // Longest first: a head containing another is replaced whole.
        let mut heads: Vec<&String> = by_head.keys().collect();
        heads.sort_by_key(|h| std::cmp::Reverse(h.len()));
        let pattern = heads
            .iter()
            .map(|h| regex::escape(h))
            .collect::<Vec<_>>()
            .join("|");
        let heads = RegexBuilder::new(&pattern)
            .size_limit(1 << 30)
            .build()
            .map_err(|e| StoreError::Forget(e.to_string()))?;
        Ok(Self {
            heads,
            texts: by_head,
        })
    }

    /// `text` with every quote replaced, or `None` when it quotes nothing.
    fn redact(&self, text: &str) -> Option<String> {
        let mut out = String::new();
        let mut done = 0;
        for m in self.heads.find_iter(text) {
            if m.start() < done {
                continue; // inside the quote just replaced
            }
            let rest = &text[m.start()..];
            let len = self.texts[m.as_str()]
                .iter()
                .map(|t| common_prefix(rest, t))
                .max()
                .unwrap_or(m.len());
            out.push_str(&text[done..m.start()]);
            out.push_str(REDACTED);
            done = m.start() + len;
        }
        if done == 0 {
            return None;
        }
        out.push_str(&text[done..]);
        Some(out)
    }
}

/// How many bytes of `a` begin as `b` does.
fn common_prefix(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or_else(|| a.len().min(b.len()), |((i, _), _)| i)
}

fn redact_column(
    tx: &Transaction<'_>,
    table: &str,
    column: &str,
    quotes: &Quotes,
) -> Result<usize> {
    let changed: Vec<(i64, String)> = {
        let mut stmt = tx.prepare_cached(&format!(
            "SELECT rowid, {column} FROM {table} WHERE {column} IS NOT NULL"
        ))?;
        let mut rows = stmt.query([])?;
        let mut changed = vec![];
        while let Some(row) = rows.next()? {
            let text: String = row.get(1)?;
            if let Some(new) = quotes.redact(&text) {
                changed.push((row.get(0)?, new));
            }
        }
        changed
    };
    let mut update = tx.prepare_cached(&format!(
        "UPDATE {table} SET {column} = ?2 WHERE rowid = ?1"
    ))?;
    for (rowid, new) in &changed {
        update.execute(params![rowid, new])?;
    }
    Ok(changed.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::UserId;
    use crate::store::Store;

    const DAVE: i64 = 7;

    fn store_with(said: &[&str], journal: &[(&str, &str)]) -> Store {
        let store = Store::open_in_memory().unwrap();
        {
            let conn = store.lock();
            for (i, text) in said.iter().enumerate() {
                conn.execute(
                    "INSERT INTO messages (id, guild_id, channel_id, author_id, author_name, content, created_at)
                     VALUES (?1, 1, 2, ?2, 'dave', ?3, 0)",
                    params![i as i64 + 1, DAVE, text],
                )
                .unwrap();
            }
            for (summary, data) in journal {
                conn.execute(
                    "INSERT INTO journal (ts, kind, summary, data) VALUES (0, 'reply', ?1, ?2)",
                    params![summary, data],
                )
                .unwrap();
            }
        }
        store
    }

    fn journal(store: &Store) -> Vec<(String, String)> {
        let conn = store.lock();
        let mut stmt = conn
            .prepare_cached("SELECT summary, data FROM journal ORDER BY id")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn a_quote_is_replaced_in_text_and_in_json_which_stays_valid() {
        let said = r#"she said "call me" at 9"#;
        let data = serde_json::json!({ "prompt": format!("dave: {said}!") }).to_string();
        let store = store_with(&[said], &[(&format!("answered: {said}"), &data)]);
        store
            .lock()
            .execute(
                "INSERT INTO voice_utterances (message_id, voice_channel_id, started_at, ended_at)
                 VALUES (1, 3, 0, 1)",
                [],
            )
            .unwrap();
        let gone = store
            .people()
            .forget_person(UserId(DAVE as u64), true, Utc::now())
            .unwrap();
        assert_eq!(gone.messages, 1);
        let rows = journal(&store);
        assert_eq!(rows[0].0, "answered: [forgotten]");
        let data: serde_json::Value = serde_json::from_str(&rows[0].1).unwrap();
        assert_eq!(data["prompt"], "dave: [forgotten]!");
        let spans: i64 = store
            .lock()
            .query_row("SELECT count(*) FROM voice_utterances", [], |r| r.get(0))
            .unwrap();
        assert_eq!(spans, 0, "the voice span of a forgotten message goes too");
    }

    #[test]
    fn a_cut_quote_of_a_long_message_is_found_by_its_beginning() {
        let long = format!(
            "my phone number is 555-0199 {}",
            "and more words ".repeat(12)
        );
        let cut: String = long.chars().take(140).collect();
        let store = store_with(
            &[&long],
            &[(&format!("erin replied (\"{cut}…\") and left"), "{}")],
        );
        store
            .people()
            .forget_person(UserId(DAVE as u64), true, Utc::now())
            .unwrap();
        assert_eq!(
            journal(&store)[0].0,
            "erin replied (\"[forgotten]…\") and left"
        );
    }

    #[test]
    fn short_texts_are_not_searched_for_and_other_words_stay() {
        let store = store_with(
            &["ok", "the blue door is mine"],
            &[
                ("ok, erin agreed", "{}"),
                ("erin: the blue door is mine too", "{}"),
            ],
        );
        store
            .people()
            .forget_person(UserId(DAVE as u64), true, Utc::now())
            .unwrap();
        let rows = journal(&store);
        assert_eq!(rows[0].0, "ok, erin agreed");
        assert_eq!(rows[1].0, "erin: [forgotten] too");
    }

    #[test]
    fn without_messages_the_words_stay() {
        let store = store_with(&["the blue door is mine"], &[]);
        let gone = store
            .people()
            .forget_person(UserId(DAVE as u64), false, Utc::now())
            .unwrap();
        assert_eq!(gone.messages, 0);
        let content: String = store
            .lock()
            .query_row("SELECT content FROM messages", [], |r| r.get(0))
            .unwrap();
        assert_eq!(content, "the blue door is mine");
    }

    #[test]
    fn an_applied_forget_me_takes_what_was_there_when_asked_once_with_its_cursor() {
        let store = store_with(&["the blue door is mine", "said after she asked"], &[]);
        // The second message came after the forget-me (created at 10 s).
        store
            .lock()
            .execute("UPDATE messages SET created_at = 10000 WHERE id = 2", [])
            .unwrap();
        let entry = LedgerEntry {
            seq: 3,
            at: super::super::from_ms(5000),
            writer: "0/2".into(),
            event: PersonEvent::ForgetMe {
                user: UserId(DAVE as u64),
                messages: true,
            },
        };
        let user = UserId(DAVE as u64);
        let gone = store
            .people()
            .apply_forget_event("L", &entry, user, true)
            .unwrap();
        assert_eq!(gone.messages, 1);
        assert_eq!(store.people().people_cursor("L").unwrap(), 3);
        let again = store
            .people()
            .apply_forget_event("L", &entry, user, true)
            .unwrap();
        assert_eq!(again.messages, 0, "applied twice, nothing more goes");
        let kept: Vec<String> = {
            let conn = store.lock();
            let mut stmt = conn
                .prepare("SELECT content FROM messages ORDER BY id")
                .unwrap();
            stmt.query_map([], |r| r.get(0))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap()
        };
        assert_eq!(kept, vec!["".to_string(), "said after she asked".into()]);
    }

    /// A fact stored after someone asked to be forgotten, but learned from
    /// what they said before, goes with the forget-me applied from the
    /// ledger (bounded by when they asked); one learned from what they said
    /// after stays theirs.
    #[test]
    fn a_bounded_erasure_takes_facts_learned_from_words_said_before_it() {
        use crate::vocab::fact::{Fact, FactKind, Importance, Scope};
        let store = Store::open_in_memory().unwrap();
        let t = |minutes: i64| {
            chrono::DateTime::parse_from_rfc3339("2026-03-01T12:00:00Z")
                .unwrap()
                .with_timezone(&Utc)
                + chrono::Duration::minutes(minutes)
        };
        let dave = UserId(DAVE as u64);
        let learned = |content: &str, said: i64| {
            let mut f = Fact::new(
                Scope::user(None, dave),
                FactKind::Fact,
                Importance::High,
                content,
                t(10),
            );
            f.sources = vec![crate::ids::MessageId(crate::ids::next_snowflake(t(said)))];
            f
        };
        store
            .memory()
            .insert_fact(&learned("Dave's number is 555-0101.", 0))
            .unwrap();
        store
            .memory()
            .insert_fact(&learned("Dave moved to Lyon.", 8))
            .unwrap();
        let entry = LedgerEntry {
            seq: 1,
            at: t(5),
            writer: "0-1/2".into(),
            event: PersonEvent::ForgetMe {
                user: dave,
                messages: false,
            },
        };
        let gone = store
            .people()
            .apply_forget_event("L", &entry, dave, false)
            .unwrap();
        assert_eq!(gone.facts, 1);
        let left: Vec<String> = {
            let conn = store.lock();
            let mut stmt = conn.prepare("SELECT content FROM facts").unwrap();
            stmt.query_map([], |r| r.get(0))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap()
        };
        assert_eq!(left, vec!["Dave moved to Lyon.".to_string()]);
    }
}
