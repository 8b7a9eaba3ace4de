//! The GIF source for ambient posts: a Giphy-compatible search API with the
//! operator's key (`GIPHY_API_KEY`).
//!
//! - On only with `initiative.discovery.allowGifPosts`, a key, and a
//!   non-empty `initiative.discovery.gifSource.baseUrl`.
//! - `GET {baseUrl}/v1/gifs/search?api_key=…&q=…&limit=…&rating=…` through
//!   the guarded fetcher (`net::Fetcher`): redirects checked per hop, the
//!   answer bounded, `network.fetchTimeoutSeconds`; the service may be on a
//!   private address only with `gifSource.allowPrivate`.
//! - At most `maxGifsPerDay` per guild in 24 h, counted from the usage rows
//!   (provider `gifs`) every search leaves, found or not.
//! - The key rides in the URL, so every error text passes through the secret
//!   masking before it reaches the usage table, the journal or a log.
//! - The GIF is posted as its URL: Discord embeds it, and nothing is
//!   downloaded or re-uploaded (no attachment size to police, no bytes held).
//! - Replies (`initiative.discovery.allowReplyGifs`): the reply model is
//!   offered `gif_search` while the source is configured and the day's
//!   budget not used up; it gets a link to put in its answer. Same source,
//!   budget and masking; the usage row says role `reply`.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::media::{GIF_PROVIDER, MediaCall, MediaError, gifs_today, unconfigured};
use crate::clock::SharedClock;
use crate::executive::tools::{Tool, ToolError, TypedTool, typed};
use crate::ids::GuildId;
use crate::initiative::Stores;
use crate::net::{FetchError, Fetcher};
use crate::settings::{Secrets, Settings, SettingsService};

/// Results asked for; the first usable one is posted.
const SEARCH_LIMIT: u32 = 5;

/// A search answer with a few results is a few kilobytes; this is generous.
const MAX_ANSWER_BYTES: u64 = 512 * 1024;

/// Searches for a GIF matching `query` and returns its URL. The search is
/// recorded in the usage log whatever its outcome (the daily budget counts it).
pub(crate) async fn search(
    settings: &Settings,
    secrets: &Secrets,
    query: &str,
    store: &Stores,
    guild: GuildId,
    now: DateTime<Utc>,
    role: &'static str,
) -> Result<String, MediaError> {
    let started = std::time::Instant::now();
    let result = find(settings, secrets, query)
        .await
        .map_err(|e| secrets.redact(&e.to_string()));
    // Every search counts against the budget, found or not, so a broken
    // service cannot be asked again and again.
    MediaCall {
        role,
        store,
        guild,
        now,
        provider: GIF_PROVIDER,
        model: "search".into(),
        pay_per_token: false,
        started,
    }
    .record(result, "the GIF search")
}

/// Why a reply in `guild` may not search for a GIF now, if it may not.
pub(crate) fn unavailable_for_replies(
    settings: &Settings,
    secrets: &Secrets,
    store: &Stores,
    guild: GuildId,
    now: DateTime<Utc>,
) -> Option<String> {
    let d = &settings.initiative.discovery;
    if !d.allow_reply_gifs {
        return Some("GIFs in replies are off (initiative.discovery.allowReplyGifs)".into());
    }
    if let Some(why) = unconfigured(settings, secrets) {
        return Some(why);
    }
    let used = match gifs_today(&store.usage, guild, now) {
        Ok(used) => used,
        Err(e) => return Some(format!("store read failed: the day's GIF count: {e}")),
    };
    (used >= u64::from(d.max_gifs_per_day)).then(|| {
        format!(
            "today's GIFs are used up ({used} of initiative.discovery.maxGifsPerDay {})",
            d.max_gifs_per_day
        )
    })
}

/// `gif_search` for a reply in `guild`; offer it only where
/// [`unavailable_for_replies`] says nothing.
pub(crate) fn reply_tool(
    settings: Arc<SettingsService>,
    secrets: Secrets,
    store: Stores,
    clock: SharedClock,
    guild: GuildId,
) -> Arc<dyn Tool> {
    typed(GifSearch {
        settings,
        secrets,
        store,
        clock,
        guild,
    })
}

struct GifSearch {
    settings: Arc<SettingsService>,
    secrets: Secrets,
    store: Stores,
    clock: SharedClock,
    guild: GuildId,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GifArgs {
    /// A few search words, e.g. "happy dance".
    query: String,
}

/// The longest query sent: a few words, not a paragraph.
const MAX_QUERY_CHARS: usize = 100;

#[async_trait]
impl TypedTool for GifSearch {
    type Args = GifArgs;

    fn name(&self) -> &'static str {
        "gif_search"
    }

    fn description(&self) -> String {
        "Find one GIF to go with your answer: give a few search words; you get its link to put \
         on its own line in your answer (Discord shows it). Use it only when a GIF really fits."
            .into()
    }

    async fn run(&self, args: GifArgs) -> Result<String, ToolError> {
        let settings = self.settings.for_guild(Some(self.guild));
        let now = self.clock.now();
        // The budget again: the model may ask twice in one answer.
        if let Some(why) =
            unavailable_for_replies(&settings, &self.secrets, &self.store, self.guild, now)
        {
            return Err(ToolError(why));
        }
        let query: String = args.query.chars().take(MAX_QUERY_CHARS).collect();
        let url = search(
            &settings,
            &self.secrets,
            &query,
            &self.store,
            self.guild,
            now,
            "reply",
        )
        .await
        .map_err(|e| e.to_string())?;
        Ok(format!(
            "{url}\n(put this link on its own line in your answer)"
        ))
    }
}

/// Why the GIF source gave no GIF (masked before it is recorded or shown:
/// the source may quote the key it refused).
#[derive(Debug, thiserror::Error)]
enum SearchError {
    #[error("no GIF source key is set (GIPHY_API_KEY)")]
    NoKey,
    #[error("initiative.discovery.gifSource.baseUrl is not a URL: {0}")]
    NotAUrl(#[source] url::ParseError),
    #[error("the GIF search failed: {0}")]
    Failed(#[source] FetchError),
    #[error("the GIF search answered something that is not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    #[error("the GIF search found nothing for {query:?}")]
    NothingFound { query: String },
}

async fn find(settings: &Settings, secrets: &Secrets, query: &str) -> Result<String, SearchError> {
    let source = &settings.initiative.discovery.gif_source;
    let key = secrets.giphy_api_key.as_ref().ok_or(SearchError::NoKey)?;
    let base = source.base_url.trim_end_matches('/');
    let mut url =
        url::Url::parse(&format!("{base}/v1/gifs/search")).map_err(SearchError::NotAUrl)?;
    url.query_pairs_mut()
        .append_pair("api_key", key.expose())
        .append_pair("q", query)
        .append_pair("limit", &SEARCH_LIMIT.to_string())
        .append_pair("rating", &source.rating);
    let fetcher = Fetcher::for_endpoint(
        &settings.network,
        &source.base_url,
        MAX_ANSWER_BYTES,
        source.allow_private,
    );
    let answer = fetcher
        .get(url.as_str())
        .await
        .map_err(SearchError::Failed)?;
    let body: Value = serde_json::from_slice(&answer.body).map_err(SearchError::NotJson)?;
    first_gif(&body).ok_or_else(|| SearchError::NothingFound {
        query: query.to_string(),
    })
}

/// The first result's `images.original.url` that is an https URL.
fn first_gif(body: &Value) -> Option<String> {
    body["data"].as_array()?.iter().find_map(|g| {
        let url = g.pointer("/images/original/url")?.as_str()?;
        let parsed = url::Url::parse(url).ok()?;
        (parsed.scheme() == "https").then(|| parsed.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_https_result_is_taken_and_others_are_skipped() {
        let body = json!({"data": [
            {"id": "a", "images": {"original": {"url": "javascript:alert(1)"}}},
            {"id": "b", "images": {}},
            {"id": "c", "images": {"original": {"url": "http://plain.example/c.gif"}}},
            {"id": "d", "images": {"original": {"url": "https://media.example/d.gif"}}},
        ]});
        assert_eq!(
            first_gif(&body).as_deref(),
            Some("https://media.example/d.gif")
        );
        assert_eq!(first_gif(&json!({"data": []})), None);
        assert_eq!(first_gif(&json!({"meta": {"status": 401}})), None);
    }
}
