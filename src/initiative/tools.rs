//! Active-curiosity tools for the initiative tool loop, offered only when
//! `initiative.text.allowActiveCuriosity` is on: `web_scrape` (read a page,
//! through the guarded fetcher) and `web_search` (when
//! `network.searchBaseUrl` names a SearXNG-compatible endpoint).

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::executive::tools::{Tool, ToolError, TypedTool, typed};
use crate::net::{Fetcher, html};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScrapeArgs {
    /// The http(s) URL of the page to read.
    url: String,
}

pub(crate) struct WebScrape {
    pub fetcher: Arc<Fetcher>,
}

#[async_trait]
impl TypedTool for WebScrape {
    type Args = ScrapeArgs;

    fn name(&self) -> &'static str {
        "web_scrape"
    }

    fn description(&self) -> String {
        "Read a web page: returns its title and readable text (cut to about 3,000 characters)."
            .into()
    }

    async fn run(&self, args: ScrapeArgs) -> Result<String, ToolError> {
        let page = self
            .fetcher
            .get(&args.url)
            .await
            .map_err(|e| format!("could not read {}: {e}", args.url))?;
        let body = String::from_utf8_lossy(&page.body);
        let is_html = page
            .content_type
            .as_deref()
            .is_none_or(|t| t.contains("html"));
        let (title, text) = if is_html {
            html::readable(&body, 3_000)
        } else {
            (None, body.chars().take(3_000).collect())
        };
        Ok(format!(
            "{}\n{}",
            title.unwrap_or_else(|| page.url.clone()),
            text
        ))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchArgs {
    /// What to search the web for.
    query: String,
}

pub(crate) struct WebSearch {
    pub base_url: String,
    /// Bounded by `network.searchMaxResponseBytes`; private only with `network.searchAllowPrivate`.
    pub fetcher: Fetcher,
}

#[async_trait]
impl TypedTool for WebSearch {
    type Args = SearchArgs;

    fn name(&self) -> &'static str {
        "web_search"
    }

    fn description(&self) -> String {
        "Search the web: returns up to five results (title, URL, snippet).".into()
    }

    async fn run(&self, args: SearchArgs) -> Result<String, ToolError> {
        let mut url = url::Url::parse(&format!("{}/search", self.base_url.trim_end_matches('/')))
            .map_err(|e| format!("network.searchBaseUrl is not a URL: {e}"))?;
        url.query_pairs_mut()
            .append_pair("q", &args.query)
            .append_pair("format", "json");
        let fetched = self
            .fetcher
            .get(url.as_str())
            .await
            .map_err(|e| format!("the search service failed: {e}"))?;
        let body: Value = serde_json::from_slice(&fetched.body)
            .map_err(|e| format!("the search service answered badly: {e}"))?;
        let results: Vec<String> = body["results"]
            .as_array()
            .map(|r| {
                r.iter()
                    .take(5)
                    .map(|x| {
                        format!(
                            "{} — {}\n{}",
                            x["title"].as_str().unwrap_or(""),
                            x["url"].as_str().unwrap_or(""),
                            x["content"].as_str().unwrap_or("")
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        if results.is_empty() {
            return Ok(format!("no results for {:?}", args.query));
        }
        Ok(results.join("\n\n"))
    }
}

/// The curiosity tools this configuration offers, and a line for CAPABILITIES about each.
pub(crate) fn curiosity(
    settings: &crate::settings::Settings,
    fetcher: &Arc<Fetcher>,
) -> (Vec<Arc<dyn Tool>>, Vec<String>) {
    let mut tools = Vec::new();
    let mut lines = Vec::new();
    if !settings.initiative.text.allow_active_curiosity {
        lines.push("web tools: off (initiative.text.allowActiveCuriosity)".into());
        return (tools, lines);
    }
    tools.push(typed(WebScrape {
        fetcher: fetcher.clone(),
    }));
    lines.push("web_scrape: read a web page".into());
    if settings.network.search_base_url.is_empty() {
        lines.push("web_search: not configured (network.searchBaseUrl)".into());
    } else {
        let n = &settings.network;
        tools.push(typed(WebSearch {
            base_url: n.search_base_url.clone(),
            fetcher: Fetcher::for_endpoint(
                n,
                &n.search_base_url,
                n.search_max_response_bytes,
                n.search_allow_private,
            ),
        }));
        lines.push("web_search: search the web".into());
    }
    (tools, lines)
}
