//! Media for ambient posts: what is available (CAPABILITIES says so, so the
//! model does not ask for the impossible) and generating images.
//!
//! Images come from an OpenAI-compatible images endpoint
//! (`initiative.discovery.imageGeneration`), within the daily budget
//! `maxImagesPerDay` per guild and the `allowedImageModels` allowlist; each
//! call is recorded in the usage log, and every call counts against the
//! budget, made or failed, so a generator that always fails is not asked
//! again and again. The request goes through the guarded
//! fetcher (`net::Fetcher::post`): a private endpoint only with
//! `imageGeneration.allowPrivate`, no redirects, `timeoutSeconds` for all of
//! it, and the answer read only up to what an image under Discord's 25 MiB
//! attachment limit needs; a larger image is refused before it is decoded.
//! A refusal's body is read only up to `net::MAX_ERROR_BODY_BYTES`.
//! GIFs come from the GIF source (`gifs.rs`: a Giphy-compatible search with
//! `GIPHY_API_KEY`), within `maxGifsPerDay`. No video source is built in, so
//! videos are reported unavailable and such a request is dropped with a reason.

use std::time::Duration;

use base64::Engine as _;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::ids::GuildId;
use crate::initiative::Stores;
use crate::net::{FetchError, Fetcher, MAX_ERROR_BODY_BYTES, PostBody};
use crate::settings::{Secrets, Settings};
use crate::store::StoreError;
use crate::store::UsageStore;
use crate::store::usage::{UsageFilter, UsageRecord};
use crate::vocab::pending::MediaKind;

pub(crate) const IMAGE_PROVIDER: &str = "images";
/// The usage rows of GIF searches (`gifs.rs`), which the day's GIF budget counts.
pub(crate) const GIF_PROVIDER: &str = "gifs";

/// Discord's attachment limit: a larger image could not be posted anyway.
pub(crate) const MAX_IMAGE_BYTES: u64 = 25 * 1024 * 1024;

/// The largest answer read: the image in base64 (4/3 of it) and some JSON.
const MAX_ANSWER_BYTES: u64 = MAX_IMAGE_BYTES / 3 * 4 + 64 * 1024;

/// What today's budgets and the operator's keys allow, for `availability`.
/// A count the store cannot give is an error: the budget it feeds counts as
/// spent (a call not counted could be one too many).
pub(crate) struct MediaState {
    pub images_today: Result<u64, String>,
    pub gifs_today: Result<u64, String>,
    /// Why the GIF source cannot be used (no base URL, no key), if it cannot.
    pub gif_source_missing: Option<String>,
}

impl MediaState {
    pub(crate) fn now(
        settings: &Settings,
        secrets: &Secrets,
        store: &UsageStore,
        guild: GuildId,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            images_today: images_today(store, guild, now).map_err(|e| e.to_string()),
            gifs_today: gifs_today(store, guild, now).map_err(|e| e.to_string()),
            gif_source_missing: unconfigured(settings, secrets),
        }
    }
}

/// Why a kind of media cannot be used now. The text goes into CAPABILITIES
/// (the model is told) and into the journal, naming the setting that decides.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unavailable {
    #[error("images are off (initiative.discovery.allowImagePosts)")]
    ImagesOff,
    #[error("no image generator is configured (initiative.discovery.imageGeneration.baseUrl)")]
    NoImageGenerator,
    #[error("the image model {model} is not in initiative.discovery.allowedImageModels")]
    ModelNotAllowed { model: String },
    #[error("today's images are used up ({used} of initiative.discovery.maxImagesPerDay {max})")]
    ImagesUsedUp { used: u64, max: u32 },
    #[error("videos are off (initiative.discovery.allowVideoPosts)")]
    VideosOff,
    #[error("GIFs are off (initiative.discovery.allowGifPosts)")]
    GifsOff,
    /// No GIF source base URL or key ([`unconfigured`] says which).
    #[error("{0}")]
    GifSourceMissing(String),
    #[error("today's GIFs are used up ({used} of initiative.discovery.maxGifsPerDay {max})")]
    GifsUsedUp { used: u64, max: u32 },
    #[error("no {kind} source is configured")]
    NoSource { kind: &'static str },
    /// The day's count could not be read: no call is made against a budget nobody can check.
    #[error("store read failed: the day's {kind} count: {why}")]
    UsageUnread { kind: &'static str, why: String },
}

/// Why a media call gave nothing: the provider's failure (its words, with
/// secrets already masked), or a usage row that could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MediaError {
    #[error("{0}")]
    Failed(String),
    /// Not used: unrecorded, it would not count against the daily budget.
    #[error("{what} could not be recorded: {why}")]
    Unrecorded { what: &'static str, why: String },
}

/// Why the GIF source cannot be used, if it cannot (the budget aside).
pub(crate) fn unconfigured(settings: &Settings, secrets: &Secrets) -> Option<String> {
    if settings.initiative.discovery.gif_source.base_url.is_empty() {
        return Some("no GIF source is configured (initiative.discovery.gifSource.baseUrl)".into());
    }
    if secrets.giphy_api_key.is_none() {
        return Some("no GIF source key is set (GIPHY_API_KEY)".into());
    }
    None
}

/// GIF searches a guild made in the last 24 h.
pub(crate) fn gifs_today(
    store: &UsageStore,
    guild: GuildId,
    now: DateTime<Utc>,
) -> Result<u64, StoreError> {
    store.usage_count(&UsageFilter {
        since: Some(now - chrono::Duration::hours(24)),
        guild: Some(guild),
        provider: Some(GIF_PROVIDER.into()),
        ..Default::default()
    })
}

/// Whether each kind of media can be used now, and why not.
pub(crate) fn availability(
    settings: &Settings,
    state: &MediaState,
    kind: MediaKind,
) -> Result<(), Unavailable> {
    let d = &settings.initiative.discovery;
    match kind {
        MediaKind::Image => image_availability(settings, counted("image", &state.images_today)?),
        MediaKind::Video if !d.allow_video_posts => Err(Unavailable::VideosOff),
        MediaKind::Gif if !d.allow_gif_posts => Err(Unavailable::GifsOff),
        MediaKind::Gif => {
            if let Some(why) = &state.gif_source_missing {
                return Err(Unavailable::GifSourceMissing(why.clone()));
            }
            let used = counted("GIF", &state.gifs_today)?;
            if used >= u64::from(d.max_gifs_per_day) {
                return Err(Unavailable::GifsUsedUp {
                    used,
                    max: d.max_gifs_per_day,
                });
            }
            Ok(())
        }
        MediaKind::Video => Err(Unavailable::NoSource {
            kind: kind.as_str(),
        }),
    }
}

fn counted(kind: &'static str, count: &Result<u64, String>) -> Result<u64, Unavailable> {
    count
        .clone()
        .map_err(|why| Unavailable::UsageUnread { kind, why })
}

/// Images: switched on, a generator and an allowed model, budget left today.
fn image_availability(settings: &Settings, images_today: u64) -> Result<(), Unavailable> {
    let d = &settings.initiative.discovery;
    if !d.allow_image_posts {
        return Err(Unavailable::ImagesOff);
    }
    if d.image_generation.base_url.is_empty() {
        return Err(Unavailable::NoImageGenerator);
    }
    if !d.allowed_image_models.is_empty()
        && !d.allowed_image_models.contains(&d.image_generation.model)
    {
        return Err(Unavailable::ModelNotAllowed {
            model: d.image_generation.model.clone(),
        });
    }
    if images_today >= u64::from(d.max_images_per_day) {
        return Err(Unavailable::ImagesUsedUp {
            used: images_today,
            max: d.max_images_per_day,
        });
    }
    Ok(())
}

/// Images a guild asked the generator for in the last 24 h, made or failed:
/// a failed call costs the provider's time (and often money) all the same.
pub(crate) fn images_today(
    store: &UsageStore,
    guild: GuildId,
    now: DateTime<Utc>,
) -> Result<u64, StoreError> {
    store.usage_count(&UsageFilter {
        since: Some(now - chrono::Duration::hours(24)),
        guild: Some(guild),
        provider: Some(IMAGE_PROVIDER.into()),
        ..Default::default()
    })
}

/// Generates one PNG through an OpenAI-compatible `/images/generations`,
/// with `IMAGE_API_KEY` (else `OPENAI_API_KEY`). Its errors pass through the
/// secret masking before they reach the usage table or the journal: a
/// provider may quote the key it refused.
///
pub async fn generate_image(
    settings: &Settings,
    secrets: &Secrets,
    prompt: &str,
    store: &Stores,
    guild: GuildId,
    now: DateTime<Utc>,
) -> Result<Vec<u8>, MediaError> {
    let generator = &settings.initiative.discovery.image_generation;
    let url = format!(
        "{}/images/generations",
        generator.base_url.trim_end_matches('/')
    );
    let door = Fetcher::for_endpoint(
        &settings.network,
        &generator.base_url,
        MAX_ANSWER_BYTES,
        generator.allow_private,
    )
    .with_timeout(Duration::from_secs(u64::from(
        generator.timeout_seconds.max(1),
    )));
    let headers = crate::net::bearer(
        secrets
            .image_api_key
            .as_ref()
            .or(secrets.openai_api_key.as_ref()),
    );
    let request = json!({"model": generator.model, "prompt": prompt, "n": 1, "size": "1024x1024", "response_format": "b64_json"});
    let started = std::time::Instant::now();
    let result = async {
        let answer = door
            .post(&url, PostBody::Json(request), &headers)
            .await
            .map_err(door_error)?;
        if !(200..300).contains(&answer.status) {
            let long = if answer.truncated {
                format!(", in more than {MAX_ERROR_BODY_BYTES} bytes")
            } else {
                String::new()
            };
            return Err(format!(
                "the image generator refused ({}{long}): {}",
                answer.status,
                refusal(&answer.body)
            ));
        }
        let body: Value = serde_json::from_slice(&answer.body)
            .map_err(|e| format!("the image generator answered something that is not JSON: {e}"))?;
        let b64 = body
            .pointer("/data/0/b64_json")
            .and_then(Value::as_str)
            .ok_or("the image generator's answer has no data[0].b64_json")?;
        if b64.len() as u64 / 4 * 3 > MAX_IMAGE_BYTES {
            return Err(format!(
                "the image is larger than Discord's {MAX_IMAGE_BYTES}-byte attachment limit"
            ));
        }
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| format!("the image was not valid base64: {e}"))
    }
    .await
    .map_err(|e| secrets.redact(&e));
    MediaCall {
        role: "ambient",
        store,
        guild,
        now,
        provider: IMAGE_PROVIDER,
        model: generator.model.clone(),
        pay_per_token: true,
        started,
    }
    .record(result, "the image")
}

/// One media call, as the usage row the daily media budgets count.
pub(super) struct MediaCall<'a> {
    /// The role the call served: "ambient" for a post, "reply" for an answer.
    pub role: &'static str,
    pub store: &'a Stores,
    pub guild: GuildId,
    pub now: DateTime<Utc>,
    pub provider: &'static str,
    pub model: String,
    pub pay_per_token: bool,
    pub started: std::time::Instant,
}

impl MediaCall<'_> {
    /// Records the call with its (already masked) outcome. A result that
    /// cannot be recorded is not used: it would not count against the budget.
    pub(crate) fn record<T>(
        self,
        result: Result<T, String>,
        what: &'static str,
    ) -> Result<T, MediaError> {
        let recorded = self.store.usage.usage_append(&UsageRecord {
            id: 0,
            at: self.now,
            role: self.role.into(),
            source: self.role.into(),
            guild: Some(self.guild),
            provider: self.provider.into(),
            model: self.model,
            pay_per_token: self.pay_per_token,
            tokens_in: 0,
            tokens_out: 0,
            latency_ms: self.started.elapsed().as_millis() as u64,
            outcome: if result.is_ok() { "ok" } else { "client_error" }.into(),
            detail: result.as_ref().err().cloned().unwrap_or_default(),
        });
        match recorded {
            Err(e) if result.is_ok() => Err(MediaError::Unrecorded {
                what,
                why: e.to_string(),
            }),
            _ => result.map_err(MediaError::Failed),
        }
    }
}

/// The generator's own words for a refusal: its JSON's `error.message`, or
/// the start of what it answered when that is not JSON (or was cut).
fn refusal(body: &[u8]) -> String {
    match serde_json::from_slice::<Value>(body) {
        Ok(json) => json
            .pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or("no reason given")
            .to_string(),
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    }
}

/// What went wrong on the way to the image generator, in the operator's terms.
fn door_error(e: FetchError) -> String {
    match e {
        FetchError::TooLarge(limit) => {
            format!("the image generator's answer is larger than {limit} bytes")
        }
        FetchError::Timeout(_) => "the image generator gave no complete answer in time \
             (initiative.discovery.imageGeneration.timeoutSeconds)"
            .into(),
        e if e.is_private_refusal() => format!(
            "the image generator was {e}; if it is your own server, set \
             initiative.discovery.imageGeneration.allowPrivate to true"
        ),
        FetchError::Refused(why) => format!("the image generator was refused: {why}"),
        e => format!("the image generator is unreachable: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A day's count the store could not give spends nothing: the kind is
    /// unavailable, saying which read failed (the budget gate asks the
    /// same table first, so this is the guard behind it).
    #[test]
    fn an_unreadable_days_count_makes_the_media_unavailable() {
        let mut settings = Settings::default();
        let d = &mut settings.initiative.discovery;
        d.allow_image_posts = true;
        d.image_generation.base_url = "https://images.example".into();
        d.allow_gif_posts = true;
        let state = MediaState {
            images_today: Err("no such table: usage".into()),
            gifs_today: Err("no such table: usage".into()),
            gif_source_missing: None,
        };
        for (kind, said) in [(MediaKind::Image, "image"), (MediaKind::Gif, "GIF")] {
            let why = availability(&settings, &state, kind)
                .unwrap_err()
                .to_string();
            assert_eq!(
                why,
                format!("store read failed: the day's {said} count: no such table: usage")
            );
        }
        let counted = MediaState {
            images_today: Ok(0),
            gifs_today: Ok(0),
            gif_source_missing: None,
        };
        assert_eq!(availability(&settings, &counted, MediaKind::Image), Ok(()));
    }
}
