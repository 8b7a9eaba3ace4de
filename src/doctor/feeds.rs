//! The discovery sources the settings name answer: one GET each through the
//! guarded fetcher, with its address checks, size and time limits, exactly
//! as the bot's own fetches go.

use super::Check;
use crate::discovery::sources::{SourceKind, configured};
use crate::net::{FetchError, Fetcher};
use crate::settings::Settings;

/// One check per configured source; none when discovery names none.
pub(crate) async fn checks(settings: &Settings) -> Vec<Check> {
    let d = &settings.initiative.discovery;
    let fetcher = Fetcher::new(&settings.network);
    let mut out = Vec::new();
    for spec in configured(settings) {
        let name = format!("{} source {}", spec.kind, spec.label());
        let setting = match spec.kind {
            SourceKind::Rss => "initiative.discovery.rssFeeds",
            SourceKind::Reddit => "initiative.discovery.redditSubreddits",
            SourceKind::Youtube => "initiative.discovery.youtubeChannelIds",
            SourceKind::X => "initiative.discovery.xHandles",
            SourceKind::Hackernews => "initiative.discovery.sources.hackerNews",
        };
        let url = match spec.url(d, d.source_fetch_limit) {
            Ok(url) => url,
            Err(e) => {
                out.push(Check::fail(
                    name,
                    e.to_string(),
                    format!("correct it in {setting}"),
                ));
                continue;
            }
        };
        out.push(match fetcher.get(&url).await {
            Ok(f) => Check::ok(name, format!("{url}: HTTP {}, {} bytes", f.status, f.body.len())),
            Err(e @ FetchError::Status(_)) => Check::fail(
                name,
                format!("{url}: {e}"),
                format!("check the address (`ambient discovery fetch URL` shows what it serves), or remove it from {setting}"),
            ),
            Err(e) => Check::fail(
                name,
                format!("{url}: {e}"),
                format!("check the network and network.* limits, or remove it from {setting}"),
            ),
        });
    }
    out
}
