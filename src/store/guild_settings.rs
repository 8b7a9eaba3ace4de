//! Per-guild setting overrides, layered over the settings file by
//! `settings::SettingsService`. Values are stored as JSON text.

use chrono::{DateTime, Utc};
use rusqlite::params;
use serde_json::Value;

use super::{OverrideStore, Result, StoreError, to_ms};
use crate::ids::{GuildId, UserId};

impl OverrideStore {
    pub fn set_guild_override(
        &self,
        guild: GuildId,
        path: &str,
        value: &Value,
        by: Option<UserId>,
        at: DateTime<Utc>,
    ) -> Result<()> {
        self.0.lock().execute(
            "INSERT INTO guild_settings (guild_id, path, value, updated_at, updated_by)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (guild_id, path) DO UPDATE SET value = excluded.value,
                 updated_at = excluded.updated_at, updated_by = excluded.updated_by",
            params![
                guild.to_sql(),
                path,
                value.to_string(),
                to_ms(at),
                by.map(UserId::to_sql)
            ],
        )?;
        Ok(())
    }

    /// Removes one override; returns whether there was one.
    pub(crate) fn remove_guild_override(&self, guild: GuildId, path: &str) -> Result<bool> {
        let n = self.0.lock().execute(
            "DELETE FROM guild_settings WHERE guild_id = ?1 AND path = ?2",
            params![guild.to_sql(), path],
        )?;
        Ok(n > 0)
    }

    /// The guilds with an override of some key under `prefix` (`"storage.retention."`).
    pub(crate) fn guilds_overriding(&self, prefix: &str) -> Result<Vec<GuildId>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT DISTINCT guild_id FROM guild_settings WHERE substr(path, 1, length(?1)) = ?1 ORDER BY guild_id",
        )?;
        let rows = stmt
            .query_map([prefix], |r| r.get::<_, i64>(0).map(GuildId::from_sql))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// A guild's overrides, in the order they were first set.
    pub fn guild_overrides(&self, guild: GuildId) -> Result<Vec<(String, Value)>> {
        let conn = self.0.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT path, value FROM guild_settings WHERE guild_id = ?1 ORDER BY rowid",
        )?;
        let rows = stmt
            .query_map([guild.to_sql()], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        rows.into_iter()
            .map(|(path, text)| {
                serde_json::from_str(&text)
                    .map(|v| (path.clone(), v))
                    .map_err(|e| StoreError::Corrupt(format!("guild {guild} override {path}: {e}")))
            })
            .collect()
    }
}
