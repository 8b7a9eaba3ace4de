//! Attachments a person shows the bot: images for a model that sees, text
//! files quoted into the prompt, everything else named.
//!
//! Read only for a message that addresses the bot and the message it replies
//! to (in the same channel); an unaddressed message's files are never
//! fetched (that would spend bandwidth and tokens on talk the bot only
//! listens to), except when the bot considers chiming in, in a reply channel,
//! with `discord.attachments.readInReplyChannels` on.
//!
//! **Where from.** Attachment bytes are fetched only from
//! - Discord's CDN over https (`cdn.discordapp.com`, `media.discordapp.net`),
//!   through the guarded fetcher (private addresses refused on every hop), or
//! - the operator's own origins, for a Discord-compatible server: that of
//!   `discord.apiBaseUrl` when it is set to one (a server that serves its
//!   attachments itself), and each of `discord.attachmentOrigins` (one whose
//!   files live on another host or port). These, and only these, may be a
//!   private address, and no redirect may leave the origin asked.
//!
//! Any other address — another private host, a metadata service, an
//! arbitrary site — is refused before a connection is made, and the prompt
//! says the file was not shown.
//!
//! **Limits** (`discord.attachments`): at most `maxImages` images and
//! `maxTextFiles` text files per answer; an image larger than
//! `maxImageBytes` or `maxImagePixels` (by what Discord says, then by what
//! arrives) is refused; images are scaled to `maxImageSide` (`images`); text
//! is read up to `maxTextFileBytes` and cut with a marker (`text_files`).
//!
//! **What the model is told.** Every attachment gets one line in the prompt,
//! `[…], from alice's message`: `[image: cat.png — image 1 below]`,
//! `[image: cat.png, not visible to you]` (a model that cannot see, see
//! `executive::vision`), `[image: x.png, not shown: …why]`, `[file: notes.md
//! — quoted below]`, `[file: a.zip, not read: a binary file]`. Files follow
//! the prompt as quoted text, and images as image parts, each after a line
//! naming it.

use std::sync::Arc;

use base64::Engine as _;
use futures_util::future::join_all;
use url::Url;

use super::images::{self, Prepared};
use super::text_files::{self, Cut, Kind};
use crate::executive::vision::unseen;
use crate::executive::wire::{Message, Part, Speaker};
use crate::net::{FetchError, Fetcher};
use crate::settings::{AttachmentSettings, Settings};
use crate::store::MessageStore;
use crate::store::messages::{Attachment, StoredMessage};

/// Discord's attachment hosts.
pub(crate) const DISCORD_CDN_HOSTS: [&str; 2] = ["cdn.discordapp.com", "media.discordapp.net"];

/// What may be fetched for this answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reading {
    /// Images are fetched and shown (the answering model sees).
    pub images: bool,
    /// Text files are fetched and quoted.
    pub files: bool,
}

impl Reading {
    /// Nothing is fetched; every attachment is only named.
    pub(crate) const NAMES_ONLY: Reading = Reading {
        images: false,
        files: false,
    };
}

/// The attachments as the model gets them.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Shown {
    /// One line per attachment, for the prompt.
    pub notes: Vec<String>,
    /// Quoted files, then each image after a line naming it.
    pub parts: Vec<Part>,
    /// Some image is named but not shown: the model must not pretend to see it.
    pub unseen_images: bool,
}

impl Shown {
    /// The prompt's user text followed by the files and images.
    pub(crate) fn user_message(&self, text: String) -> Message {
        let mut parts = vec![Part::Text { text }];
        parts.extend(self.parts.iter().cloned());
        Message {
            speaker: Speaker::User,
            parts,
        }
    }
}

/// A message's attachments, and whose they are in words ("alice's message").
pub(crate) struct Source<'a> {
    pub whose: String,
    pub attachments: &'a [Attachment],
}

/// The attachments of `message` and of the message it replies to (when that
/// one is stored, in the same channel), read as `reading` allows.
pub(crate) async fn for_message(
    store: &MessageStore,
    settings: &Settings,
    message: &StoredMessage,
    reading: Reading,
) -> Shown {
    let replied = message
        .reply_to
        .and_then(|id| store.message(id).ok().flatten())
        .filter(|r| r.channel == message.channel && r.guild == message.guild);
    let mut sources = vec![Source {
        whose: format!("{}'s message", message.author_name),
        attachments: &message.attachments,
    }];
    if let Some(r) = &replied {
        sources.push(Source {
            whose: format!(
                "the message by {} that {} replied to",
                r.author_name, message.author_name
            ),
            attachments: &r.attachments,
        });
    }
    show(&sources, settings, reading).await
}

/// What became of one attachment.
enum Outcome {
    Image(Prepared),
    Text {
        text: String,
        cut: Option<Cut>,
    },
    /// Named only; the words say why.
    Named(String),
}

/// Reads the attachments of `sources`, in order, within the limits.
pub(crate) async fn show(sources: &[Source<'_>], settings: &Settings, reading: Reading) -> Shown {
    let limits = &settings.discord.attachments;
    let (mut images, mut files) = (0u32, 0u32);
    let mut plans = Vec::new();
    for source in sources {
        for a in source.attachments {
            let plan = plan(a, limits, reading, &mut images, &mut files);
            plans.push((source.whose.as_str(), a, plan));
        }
    }
    let outcomes = join_all(
        plans
            .iter()
            .map(|(_, a, plan)| carry_out(a, *plan, settings)),
    )
    .await;
    let mut shown = Shown::default();
    let mut shown_images = 0;
    for ((whose, a, plan), outcome) in plans.iter().zip(outcomes) {
        let name = text_files::display_name(&a.name);
        let is_image = matches!(plan, Plan::Image | Plan::NotVisible | Plan::ImageRefused(_));
        match outcome {
            Outcome::Image(p) => {
                shown_images += 1;
                shown.notes.push(format!(
                    "[image: {name} — image {shown_images} below], from {whose}"
                ));
                shown.parts.push(Part::Text {
                    text: format!("\n\nImage {shown_images}: {name}, from {whose}:"),
                });
                shown.parts.push(Part::Image {
                    name: name.clone(),
                    media_type: p.media_type.into(),
                    data: Arc::from(base64::engine::general_purpose::STANDARD.encode(&p.bytes)),
                    width: p.width,
                    height: p.height,
                });
            }
            Outcome::Text { text, cut } => {
                shown
                    .notes
                    .push(format!("[file: {name} — quoted below], from {whose}"));
                shown.parts.push(Part::Text {
                    text: text_files::quoted(&name, whose, &text, cut),
                });
            }
            Outcome::Named(why) if is_image => {
                shown.unseen_images = true;
                let line = if matches!(plan, Plan::NotVisible) {
                    unseen(&name)
                } else {
                    format!("[image: {name}, not shown: {why}]")
                };
                shown.notes.push(format!("{line}, from {whose}"));
            }
            Outcome::Named(why) => {
                shown
                    .notes
                    .push(format!("[file: {name}, not read: {why}], from {whose}"));
            }
        }
    }
    shown
}

/// What will be done with one attachment, decided before any fetch.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Plan {
    Image,
    /// The model cannot see: named as not visible, never fetched.
    NotVisible,
    ImageRefused(&'static str),
    Text,
    /// Fetched and kept if it turns out to be text.
    Sniff,
    Named(&'static str),
}

fn plan(
    a: &Attachment,
    limits: &AttachmentSettings,
    reading: Reading,
    images: &mut u32,
    files: &mut u32,
) -> Plan {
    match text_files::kind(a) {
        Kind::Image if !reading.images => Plan::NotVisible,
        Kind::Image if *images >= limits.max_images => Plan::ImageRefused(
            "past the number of images looked at (discord.attachments.maxImages)",
        ),
        Kind::Image if a.size.is_some_and(|s| s > limits.max_image_bytes) => Plan::ImageRefused(
            "larger than the image size limit (discord.attachments.maxImageBytes)",
        ),
        Kind::Image
            if a.width
                .zip(a.height)
                .is_some_and(|(w, h)| u64::from(w) * u64::from(h) > limits.max_image_pixels) =>
        {
            Plan::ImageRefused("more pixels than allowed (discord.attachments.maxImagePixels)")
        }
        Kind::Image => {
            *images += 1;
            Plan::Image
        }
        Kind::OtherImage => Plan::ImageRefused("only PNG, JPEG, WebP and GIF images are looked at"),
        Kind::Binary => Plan::Named("a binary file"),
        Kind::Text | Kind::Unknown if !reading.files => Plan::Named("files are not read here"),
        Kind::Text | Kind::Unknown if *files >= limits.max_text_files => {
            Plan::Named("past the number of files read (discord.attachments.maxTextFiles)")
        }
        kind => {
            *files += 1;
            if kind == Kind::Text {
                Plan::Text
            } else {
                Plan::Sniff
            }
        }
    }
}

async fn carry_out(a: &Attachment, plan: Plan, settings: &Settings) -> Outcome {
    let limits = &settings.discord.attachments;
    match plan {
        Plan::NotVisible => Outcome::Named(String::new()),
        Plan::ImageRefused(why) | Plan::Named(why) => {
            tracing::info!(file = %a.name, reason = why, "attachment not read");
            Outcome::Named(why.into())
        }
        Plan::Image => match fetch(a, settings, limits.max_image_bytes, false).await {
            Err(why) => Outcome::Named(why.to_string()),
            Ok(bytes) => {
                let (max_pixels, max_side) = (limits.max_image_pixels, limits.max_image_side);
                let prepared = tokio::task::spawn_blocking(move || {
                    images::prepare(&bytes.body, max_pixels, max_side)
                })
                .await;
                match prepared {
                    Ok(Ok(p)) => Outcome::Image(p),
                    Ok(Err(e)) => {
                        tracing::info!(file = %a.name, reason = %e, "image not shown");
                        Outcome::Named(e.to_string())
                    }
                    Err(e) => Outcome::Named(format!("it could not be read ({e})")),
                }
            }
        },
        Plan::Text | Plan::Sniff => {
            let fetched = match fetch(a, settings, limits.max_text_file_bytes, true).await {
                Ok(f) => f,
                Err(why) => return Outcome::Named(why.to_string()),
            };
            let Some(text) = text_files::as_text(&fetched.body, fetched.truncated) else {
                return Outcome::Named(if plan == Plan::Sniff {
                    "a binary file".into()
                } else {
                    "not UTF-8 text".into()
                });
            };
            let cut = fetched.truncated.then_some(Cut {
                total_bytes: a.size,
                shown_bytes: text.len() as u64,
            });
            Outcome::Text {
                text: text.to_string(),
                cut,
            }
        }
    }
}

/// Why an attachment was not fetched; the text is words for the prompt.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AttachmentError {
    #[error(
        "its address is not Discord's CDN, discord.apiBaseUrl's server or one of discord.attachmentOrigins"
    )]
    NotDiscords,
    #[error("larger than the image size limit (discord.attachments.maxImageBytes)")]
    TooLarge,
    #[error("its address is refused")]
    Refused,
    #[error("it could not be fetched ({0})")]
    Failed(FetchError),
}

/// The attachment's bytes, from an allowed place only.
async fn fetch(
    a: &Attachment,
    settings: &Settings,
    max_bytes: u64,
    truncate: bool,
) -> Result<crate::net::Fetched, AttachmentError> {
    let fetcher = match fetcher_for(&a.url, settings, max_bytes) {
        Ok(f) if truncate => f.truncating(),
        Ok(f) => f,
        Err(why) => {
            tracing::warn!(file = %a.name, reason = %why, "attachment refused");
            return Err(why);
        }
    };
    fetcher.get(&a.url).await.map_err(|e| {
        tracing::warn!(file = %a.name, error = %e, "attachment could not be fetched");
        match e {
            FetchError::TooLarge(_) => AttachmentError::TooLarge,
            FetchError::Refused(_) => AttachmentError::Refused,
            other => AttachmentError::Failed(other),
        }
    })
}

/// A fetcher for an attachment URL, or why it may not be fetched (see the
/// module's "Where from").
pub(crate) fn fetcher_for(
    url: &str,
    settings: &Settings,
    max_bytes: u64,
) -> Result<Fetcher, AttachmentError> {
    let parsed = Url::parse(url).map_err(|_| AttachmentError::NotDiscords)?;
    let on_cdn = parsed.scheme() == "https"
        && parsed
            .host_str()
            .is_some_and(|h| DISCORD_CDN_HOSTS.contains(&h));
    let network = &settings.network;
    if on_cdn {
        return Ok(Fetcher::for_endpoint(network, url, max_bytes, false));
    }
    // The operator's own server: it may be private, and the fetcher is pinned to its origin.
    let origin = parsed.origin();
    match settings.discord.file_origins().contains(&origin) {
        true => Ok(Fetcher::for_endpoint(network, url, max_bytes, true)),
        false => Err(AttachmentError::NotDiscords),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(api: &str) -> Settings {
        let mut s = Settings::default();
        s.discord.api_base_url = api.into();
        s
    }

    #[test]
    fn only_discords_cdn_and_the_operators_own_server_are_fetched_from() {
        let discord = settings("https://discord.com");
        for ok in [
            "https://cdn.discordapp.com/attachments/1/2/cat.png?ex=1&is=2&hm=3",
            "https://media.discordapp.net/attachments/1/2/cat.png",
        ] {
            assert!(fetcher_for(ok, &discord, 1_000).is_ok(), "{ok}");
        }
        for refused in [
            "http://cdn.discordapp.com/attachments/1/2/cat.png",
            "https://cdn.discordapp.com.evil.example/cat.png",
            "https://example.com/cat.png",
            "http://127.0.0.1:8080/cat.png",
            "http://169.254.169.254/latest/meta-data/",
            "https://discord.com/attachments/1/2/cat.png",
            "file:///etc/passwd",
        ] {
            assert_eq!(
                fetcher_for(refused, &discord, 1_000)
                    .err()
                    .map(|e| e.to_string())
                    .as_deref(),
                Some(
                    "its address is not Discord's CDN, discord.apiBaseUrl's server or one of discord.attachmentOrigins"
                ),
                "{refused}"
            );
        }
        let own = settings("http://127.0.0.1:3000");
        assert!(fetcher_for("http://127.0.0.1:3000/attachments/1/2/a.png", &own, 1_000).is_ok());
        assert!(fetcher_for("http://127.0.0.1:3001/attachments/1/2/a.png", &own, 1_000).is_err());
        assert!(fetcher_for("http://localhost:3000/attachments/1/2/a.png", &own, 1_000).is_err());
    }

    #[test]
    fn the_operators_file_origins_are_fetched_from_and_nothing_beside_them() {
        let mut s = settings("http://127.0.0.1:3000");
        s.discord.attachment_origins = vec![
            "http://127.0.0.1:3001".into(),
            "https://files.example/".into(),
        ];
        for ok in [
            "http://127.0.0.1:3000/attachments/1/2/a.png",
            "http://127.0.0.1:3001/attachments/1/2/a.png",
            "https://files.example/a/b/c.png?ex=1",
            "https://cdn.discordapp.com/attachments/1/2/cat.png",
        ] {
            assert!(fetcher_for(ok, &s, 1_000).is_ok(), "{ok}");
        }
        for refused in [
            "http://127.0.0.1:3002/attachments/1/2/a.png",
            "http://files.example/a.png",
            "https://files.example:8443/a.png",
            "https://sub.files.example/a.png",
            "http://169.254.169.254/latest/meta-data/",
        ] {
            assert!(fetcher_for(refused, &s, 1_000).is_err(), "{refused}");
        }
        // apiBaseUrl may have a path (a proxy keeps it): its server's files are read all the same.
        let with_path = settings("http://127.0.0.1:3000/api");
        assert!(
            fetcher_for(
                "http://127.0.0.1:3000/attachments/1/2/a.png",
                &with_path,
                1_000
            )
            .is_ok()
        );
        assert!(
            fetcher_for(
                "http://127.0.0.1:3001/attachments/1/2/a.png",
                &with_path,
                1_000
            )
            .is_err()
        );
        // On Discord itself, a named origin is the only one beside the CDN.
        let mut discord = settings("https://discord.com");
        discord.discord.attachment_origins = vec!["http://127.0.0.1:3001".into()];
        assert!(fetcher_for("http://127.0.0.1:3001/a.png", &discord, 1_000).is_ok());
        assert!(fetcher_for("https://discord.com/a.png", &discord, 1_000).is_err());
    }

    fn attachment(name: &str, size: u64) -> Attachment {
        Attachment {
            name: name.into(),
            url: "http://127.0.0.1:9/never".into(),
            size: Some(size),
            ..Attachment::default()
        }
    }

    #[tokio::test]
    async fn names_only_fetches_nothing_and_says_so() {
        let list = [
            attachment("cat.png", 10),
            attachment("notes.md", 10),
            attachment("a.zip", 10),
        ];
        let shown = show(
            &[Source {
                whose: "alice's message".into(),
                attachments: &list,
            }],
            &Settings::default(),
            Reading::NAMES_ONLY,
        )
        .await;
        assert_eq!(
            shown.notes,
            [
                "[image: cat.png, not visible to you], from alice's message",
                "[file: notes.md, not read: files are not read here], from alice's message",
                "[file: a.zip, not read: a binary file], from alice's message",
            ]
        );
        assert!(shown.parts.is_empty());
        assert!(shown.unseen_images);
    }
}
