//! Migrations on a real file: fresh, upgrade with data, and a newer database refused.

use ambient::ids::{ChannelId, GuildId, MessageId, UserId};
use ambient::store::messages::StoredMessage;
use ambient::store::{Store, migrations};
use ambient::vocab::journal::{Entry, Filter, Kind};
use chrono::Utc;
use serde_json::json;

fn message(id: u64) -> StoredMessage {
    StoredMessage::said(
        MessageId(id),
        Some(GuildId(1)),
        ChannelId(2),
        UserId(3),
        "ada",
        "kept across upgrades",
        Utc::now(),
    )
}

#[test]
fn a_fresh_database_is_at_the_latest_version() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.file().schema_version().unwrap(), migrations::latest());
    let mode: String = rusqlite::Connection::open(dir.path().join("ambient.db"))
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn an_old_database_upgrades_and_keeps_its_data() {
    let dir = tempfile::tempdir().unwrap();
    {
        let old = Store::open_at_version(dir.path(), 1).unwrap();
        assert_eq!(old.file().schema_version().unwrap(), 1);
        old.messages().insert_message(&message(77)).unwrap();
        let mut e = Entry::new(Kind::Route, "before the upgrade");
        e.at = Utc::now();
        old.journal().journal_append(&e).unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.file().schema_version().unwrap(), migrations::latest());
    assert_eq!(
        store
            .messages()
            .message(MessageId(77))
            .unwrap()
            .unwrap()
            .content,
        "kept across upgrades"
    );
    let entries = store.journal().journal_query(&Filter::default()).unwrap();
    assert_eq!(entries[0].summary, "before the upgrade");
    // A table added by a later migration works.
    store
        .overrides()
        .set_guild_override(
            GuildId(1),
            "initiative.text.eagerness",
            &json!(5),
            None,
            Utc::now(),
        )
        .unwrap();
    assert_eq!(
        store.overrides().guild_overrides(GuildId(1)).unwrap().len(),
        1
    );
}

#[test]
fn a_database_from_a_newer_ambient_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open(dir.path()).unwrap());
    let future = migrations::latest() + 5;
    rusqlite::Connection::open(dir.path().join("ambient.db"))
        .unwrap()
        .pragma_update(None, "user_version", future)
        .unwrap();
    let err = Store::open(dir.path()).err().expect("refused").to_string();
    assert!(err.contains("written by a newer ambient"), "{err}");
    let version: u32 = rusqlite::Connection::open(dir.path().join("ambient.db"))
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, future, "the newer database was not modified");
}

#[test]
fn voice_opt_outs_become_the_persons_boundary_on_upgrade() {
    use ambient::store::boundaries::Boundary;
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open_at_version(dir.path(), 11).unwrap());
    {
        let raw = rusqlite::Connection::open(dir.path().join("ambient.db")).unwrap();
        // Ada opted out on two servers, Bob on one; the earliest time is kept.
        raw.execute_batch(
            "INSERT INTO voice_optout (guild_id, user_id, at) VALUES (1, 3, 2000), (2, 3, 1000), (1, 4, 1500);",
        )
        .unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.file().schema_version().unwrap(), migrations::latest());
    let ada = store.people().boundaries(UserId(3)).unwrap();
    assert_eq!(ada.len(), 1);
    assert_eq!(ada[0].0, Boundary::NoVoice);
    assert_eq!(ada[0].1.timestamp_millis(), 1000);
    assert!(
        store
            .people()
            .has_boundary(UserId(4), Boundary::NoVoice)
            .unwrap()
    );
    assert_eq!(
        store.voice().voice_opted_out_users().unwrap(),
        [UserId(3), UserId(4)].into_iter().collect()
    );
    let old_table: i64 = rusqlite::Connection::open(dir.path().join("ambient.db"))
        .unwrap()
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'voice_optout'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(old_table, 0, "one place for the opt-out now");
}

/// The forget-mes carried out before the erasure log existed are read back
/// from the journal's lines about them, here and from another process, with
/// whether any of the person's words were erased — so an old export is
/// cleaned of them on import like a new one.
#[test]
fn forget_mes_from_before_the_erasure_log_are_found_in_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    {
        let old = Store::open_at_version(dir.path(), 17).unwrap();
        for (summary, reason) in [
            (
                "forgot everything about member 4242",
                "2 fact(s), 3 message(s) erased, 1 quote(s) redacted at their request",
            ),
            (
                "forgot everything about member 77, asked on another server",
                "1 fact(s), 0 message(s) erased, 0 quote(s) redacted; from 0-1/2",
            ),
            (
                "forgot: a fact that is not a person",
                "asked by the operator (dashboard)",
            ),
        ] {
            let mut e = Entry::new(Kind::Memory, summary).reason(reason);
            e.at = Utc::now();
            old.journal().journal_append(&e).unwrap();
        }
    }
    let store = Store::open(dir.path()).unwrap();
    let found: Vec<(u64, bool)> = store
        .people()
        .erasures_after(0)
        .unwrap()
        .into_iter()
        .map(|e| (e.user.get(), e.messages))
        .collect();
    assert_eq!(found, vec![(4242, true), (77, false)]);
}
