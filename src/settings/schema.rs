//! The settings schema: every key the bot understands, with its default.
//!
//! This is the single source of truth. `settings.example.json` is this
//! schema's defaults serialized (a test keeps them equal), validation walks
//! the defaults to know which keys exist and what type each has, and the
//! README documents every leaf path (a test checks that too). Keys are
//! camelCase in JSON, matching the seeds' names (`initiative.text.eagerness`).
//!
//! Secrets are deliberately absent: tokens and API keys come only from the
//! environment (see `settings::secrets`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ids::{ChannelId, GuildId, RoleId, UserId};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Settings {
    pub bot: BotSettings,
    pub guild: GuildSettings,
    pub discord: DiscordSettings,
    pub storage: StorageSettings,
    pub network: NetworkSettings,
    pub attention: AttentionSettings,
    pub executive: ExecutiveSettings,
    pub budget: BudgetSettings,
    pub permissions: PermissionsSettings,
    pub initiative: InitiativeSettings,
    pub feeds: FeedsSettings,
    pub memory: MemorySettings,
    pub reflexes: ReflexSettings,
    pub impulses: ImpulseSettings,
    pub garden: GardenSettings,
    pub voice: VoiceSettings,
    pub dashboard: DashboardSettings,
    pub metrics: MetricsSettings,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BotSettings {
    /// The name people use to address the bot (`@ambient`, "hey ambient").
    pub name: String,
    /// Who the bot is, in a few sentences; goes at the top of every prompt.
    pub persona: String,
}

impl Default for BotSettings {
    fn default() -> Self {
        Self {
            name: "ambient".into(),
            persona: "You are ambient, a friendly, low-key member of this Discord community. \
                      You speak casually and briefly, like a regular here, never like an assistant. \
                      You would rather stay quiet than say something forgettable."
                .into(),
        }
    }
}

/// The server itself, as its people live it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GuildSettings {
    /// IANA zone of the server, e.g. "Europe/Berlin": quiet hours, hush ends, reminders,
    /// cron schedules and the times the bot shows. Empty: `impulses.timezone` (its older name).
    pub timezone: String,
}

impl Settings {
    /// The server's zone (`guild.timezone`, else `impulses.timezone`, else UTC).
    pub fn zone(&self) -> chrono_tz::Tz {
        let name = if self.guild.timezone.trim().is_empty() {
            &self.impulses.timezone
        } else {
            &self.guild.timezone
        };
        name.trim().parse().unwrap_or(chrono_tz::Tz::UTC)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DiscordSettings {
    /// Base URL of the Discord REST API. Point it at a Discord-compatible server
    /// (or the tests' fake Discord) to run the bot elsewhere.
    pub api_base_url: String,
    /// Where a Discord-compatible server keeps its attachments when that is not
    /// `apiBaseUrl`'s origin: origins (`https://files.example`, `http://10.0.0.5:8081`)
    /// read from as `apiBaseUrl`'s is (see [`DiscordSettings::file_origins`]).
    pub attachment_origins: Vec<String>,
    /// With a custom `apiBaseUrl`: true when it is a rate-limiting REST proxy (nirn-proxy,
    /// twilight-http-proxy) that handles 429s; false: the bot waits out 429s and retries itself.
    pub rest_proxy_handles_rate_limits: bool,
    /// When set, slash commands are registered in this guild only (instant, for development).
    pub dev_guild_id: Option<GuildId>,
    /// Users who may run operator-level commands everywhere.
    pub owner_user_ids: Vec<UserId>,
    /// The older switch for direct messages: `true` is `discord.dms` `open`, `false` is `off`
    /// and wins over `discord.dms` (see [`DiscordSettings::dm_policy`]). Unset: `discord.dms` alone.
    pub allow_dms: Option<bool>,
    /// Who may talk to the bot in direct messages: `off`, `open`, `allowlist` or `pairing`.
    pub dms: DmPolicy,
    /// With `discord.dms` `allowlist`: the people whose direct messages are answered.
    pub dm_allowlist: Vec<UserId>,
    /// With `discord.dms` `pairing`: how long a pairing code may be approved.
    pub pairing_code_minutes: u32,
    /// Ask for the privileged Server Members intent (switch it on in the developer
    /// portal too), so `member_join` reflexes see people arrive.
    pub members_intent: bool,
    /// After a new gateway session (not a resume), at most this many messages per channel that
    /// were said while the bot was away are fetched and stored (0: none; Discord serves 100 a request).
    pub backfill_messages: u32,
    /// Missed messages older than this are not fetched.
    pub backfill_hours: u32,
    /// A missed message that addressed the bot is answered if it is at most this old.
    pub answer_missed_within_minutes: u32,
    /// Older missed questions get one short "I was away" reply per channel; false: nothing.
    pub away_notice: bool,
    /// Images and text files people show the bot (see `senses::attachments`).
    pub attachments: AttachmentSettings,
    /// Show a long answer while it is written: post its start, edit it as text arrives,
    /// continue in new messages past 2,000 characters (the console shows it too).
    pub stream_replies: bool,
    /// While an answer is written, a streamed message is edited at most once
    /// per this many milliseconds; the final text goes out at once.
    pub stream_edit_interval_ms: u32,
    /// The gateway shards this process runs, `"0-3"` or `"5"`; empty: all of them
    /// (see `settings::shards`). `ambient run --shards` overrides it.
    pub shards: String,
    /// How many shards the whole bot runs (every process the same); 0: Discord's
    /// recommendation. `ambient run --total-shards` overrides it.
    pub total_shards: u32,
}

impl Default for DiscordSettings {
    fn default() -> Self {
        Self {
            api_base_url: DISCORD_API_BASE_URL.into(),
            attachment_origins: Vec::new(),
            rest_proxy_handles_rate_limits: false,
            dev_guild_id: None,
            owner_user_ids: Vec::new(),
            allow_dms: None,
            dms: DmPolicy::Open,
            dm_allowlist: Vec::new(),
            pairing_code_minutes: 60,
            members_intent: false,
            backfill_messages: 100,
            backfill_hours: 6,
            answer_missed_within_minutes: 15,
            away_notice: true,
            stream_replies: true,
            stream_edit_interval_ms: 1500,
            attachments: AttachmentSettings::default(),
            shards: String::new(),
            total_shards: 0,
        }
    }
}

/// Who may talk to the bot in direct messages (`discord.dms`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DmPolicy {
    /// Nobody but `discord.ownerUserIds`.
    Off,
    /// Everyone the bot can see.
    #[default]
    Open,
    /// `discord.dmAllowlist` and `discord.ownerUserIds`.
    Allowlist,
    /// Anyone an owner approved with `/ambient pair CODE`; an unknown person is
    /// given a code (`discord.pairingCodeMinutes`).
    Pairing,
}

impl DiscordSettings {
    /// The policy in force: `discord.allowDms` `false` (the older switch) turns direct
    /// messages off whatever `discord.dms` says, so an old file keeps meaning what it said.
    pub(crate) fn dm_policy(&self) -> DmPolicy {
        match self.allow_dms {
            Some(false) => DmPolicy::Off,
            _ => self.dms,
        }
    }
}

/// Discord's own REST API: `discord.apiBaseUrl` unless the bot runs elsewhere.
pub(crate) const DISCORD_API_BASE_URL: &str = "https://discord.com";

impl DiscordSettings {
    /// The operator's own origins attachments may be read from, besides
    /// Discord's CDN: `apiBaseUrl`'s when it points at a Discord-compatible
    /// server (not at Discord) — its origin, whatever path the URL has — then
    /// each of `attachmentOrigins`. Entries that are not an http(s) origin
    /// are left out (validation names them).
    pub(crate) fn file_origins(&self) -> Vec<url::Origin> {
        let discord = url::Url::parse(DISCORD_API_BASE_URL).map(|u| u.origin());
        let api = url::Url::parse(&self.api_base_url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
            .map(|u| u.origin())
            .filter(|origin| discord.as_ref() != Ok(origin));
        api.into_iter()
            .chain(
                self.attachment_origins
                    .iter()
                    .filter_map(|text| web_origin(text).ok()),
            )
            .collect()
    }
}

/// `text` as an http(s) origin — a scheme, a host and an optional port, and
/// nothing after (a lone `/` is allowed) — or what is wrong with it.
pub(crate) fn web_origin(text: &str) -> Result<url::Origin, &'static str> {
    let url = url::Url::parse(text).map_err(|_| "not a URL")?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err("not an http:// or https:// address with a host");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("it holds credentials");
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err("it has a path, query or fragment");
    }
    Ok(url.origin())
}

/// Limits on the attachments read for the model: only a message that
/// addresses the bot (and the message it replies to) is read, from Discord's
/// CDN or the operator's own origins (`discord.apiBaseUrl`'s and
/// `discord.attachmentOrigins`), through the guarded fetcher.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AttachmentSettings {
    /// The largest image downloaded; a larger one is named, not fetched.
    pub max_image_bytes: u64,
    /// Most images one answer looks at (the message and the one it replies to together).
    pub max_images: u32,
    /// The most pixels (width × height) an image may have; checked before it is decoded.
    pub max_image_pixels: u64,
    /// Images are scaled down so that their longer side is at most this (1568: Anthropic's advice).
    pub max_image_side: u32,
    /// A text file is read up to this many bytes; a longer one is cut with a marker.
    pub max_text_file_bytes: u64,
    /// Most text files one answer reads.
    pub max_text_files: u32,
    /// Also read attachments when the bot considers chiming in, unaddressed, in
    /// `permissions.replies.replyChannelIds` (costs tokens on the ambient role).
    pub read_in_reply_channels: bool,
}

impl Default for AttachmentSettings {
    fn default() -> Self {
        Self {
            max_image_bytes: 8_000_000,
            max_images: 4,
            max_image_pixels: 25_000_000,
            max_image_side: 1568,
            max_text_file_bytes: 100_000,
            max_text_files: 3,
            read_in_reply_channels: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StorageSettings {
    /// Directory holding the SQLite database and the bot's `state/` files.
    pub data_dir: String,
    /// A directory every process of a sharded bot shares (empty: none, one
    /// process): a person's boundaries and forget-me requests reach the other
    /// processes through it.
    pub shared_dir: String,
    /// The PostgreSQL database every process of the bot shares instead,
    /// for processes on different hosts (`postgres://user@host:port/db`;
    /// empty: none). The password comes from `PGPASSWORD`, never the URL.
    pub shared_url: String,
    /// A PEM file of the certificates trusted for the shared database's TLS
    /// with `sslmode=verify-ca` or `verify-full` in `storage.sharedUrl`
    /// (empty: the public roots). Read at start.
    pub shared_ca_file: String,
    /// How long each kind of record is kept (see [`RetentionSettings`]).
    pub retention: RetentionSettings,
    /// Backups the running bot makes on its own (`ambient backup` makes one by hand).
    pub backup: BackupSettings,
}

impl Default for StorageSettings {
    fn default() -> Self {
        Self {
            data_dir: "./data".into(),
            shared_dir: String::new(),
            shared_url: String::new(),
            shared_ca_file: String::new(),
            retention: RetentionSettings::default(),
            backup: BackupSettings::default(),
        }
    }
}

/// Days each kind of record is kept before the background sweep removes
/// it; 0 keeps it forever. A server may set shorter values for itself,
/// never longer ones (`settings::service`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RetentionSettings {
    /// People's messages (and the bot's own), text and voice transcripts.
    /// The facts learned from them stay: memory is the point.
    pub messages_days: u32,
    /// The journal: every decision and its reason.
    pub journal_days: u32,
    /// Model usage rows; older ones become daily totals per role and model.
    pub usage_days: u32,
    /// Who reacted to which message with what.
    pub reactions_days: u32,
    /// When each person spoke in a voice channel.
    pub voice_days: u32,
    /// Feed items read from discovery sources (a link once shared keeps its address).
    pub discovery_days: u32,
    /// The garden's cycle transcripts and its done queue.
    pub garden_days: u32,
    /// Days a server's data is kept after it removed the bot (kicked,
    /// banned or left; not an outage), in case it invites the bot back;
    /// then it is removed as `ambient guild remove` does. 0: at once.
    /// The operator's alone.
    pub departed_guild_days: u32,
}

impl Default for RetentionSettings {
    fn default() -> Self {
        Self {
            messages_days: 30,
            journal_days: 90,
            usage_days: 90,
            reactions_days: 30,
            voice_days: 30,
            discovery_days: 30,
            garden_days: 30,
            departed_guild_days: 30,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BackupSettings {
    /// Hours between scheduled backups; 0: none.
    pub every_hours: u32,
    /// How many scheduled backups are kept (the oldest beyond go).
    pub keep: u32,
    /// Where scheduled backups go: never the data directory or inside it.
    pub dir: String,
}

impl Default for BackupSettings {
    fn default() -> Self {
        Self {
            every_hours: 0,
            keep: 7,
            dir: String::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NetworkSettings {
    /// Allow outbound fetches to private, loopback and link-local addresses.
    /// Off by default so nothing from outside can make the bot probe its own network.
    pub allow_private_hosts: bool,
    pub fetch_timeout_seconds: u32,
    pub max_response_bytes: u64,
    pub max_redirects: u32,
    pub user_agent: String,
    /// A SearXNG-compatible search endpoint for the `web_search` tool; empty: no web search.
    pub search_base_url: String,
    /// Largest answer read from the search service.
    pub search_max_response_bytes: u64,
    /// The search service is the operator's own and may be on a private address
    /// (redirects may not leave it).
    pub search_allow_private: bool,
    /// An HTTP(S) proxy for every outbound request; empty: none. Environment
    /// proxies (`HTTP_PROXY`…) are ignored.
    pub proxy: String,
}

impl Default for NetworkSettings {
    fn default() -> Self {
        Self {
            allow_private_hosts: false,
            fetch_timeout_seconds: 20,
            max_response_bytes: 2_000_000,
            max_redirects: 5,
            search_base_url: String::new(),
            search_max_response_bytes: 1_000_000,
            search_allow_private: false,
            proxy: String::new(),
            user_agent: concat!(
                "ambient/",
                env!("CARGO_PKG_VERSION"),
                " (Discord companion bot)"
            )
            .into(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AttentionSettings {
    /// How many inputs may be handled at once (per-channel order is always kept).
    pub max_concurrent: u32,
    /// How long a channel stays ACTIVE after the bot exchanged messages there.
    pub active_conversation_minutes: u32,
    /// Salience (0–1) an unaddressed message in a reply channel needs for an unsolicited answer.
    pub unsolicited_reply_threshold: f64,
    /// After the model was asked whether to chime in somewhere, minutes before it is asked there again.
    /// Bounds unprompted considerations to 60 / this per channel and hour, whatever the room's pace.
    pub chime_in_cooldown_minutes: u32,
}

impl Default for AttentionSettings {
    fn default() -> Self {
        Self {
            max_concurrent: 4,
            active_conversation_minutes: 5,
            unsolicited_reply_threshold: 0.6,
            chime_in_cooldown_minutes: 10,
        }
    }
}

/// Which backend a model role uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// Pick from what the environment offers (API keys, a reachable Ollama).
    #[default]
    Auto,
    Anthropic,
    Openai,
    Openrouter,
    Ollama,
    /// Never call a model for this role.
    None,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RoleSettings {
    pub provider: ProviderKind,
    /// Empty: the provider's default for this role.
    pub model: String,
    /// Empty: the provider's standard URL.
    pub base_url: String,
    pub max_output_tokens: u32,
    /// Whether the role's model sees images: `true`, `false`, or `"auto"`
    /// (from the known-model list in `executive::vision`).
    pub vision: Vision,
}

impl RoleSettings {
    fn with_tokens(max_output_tokens: u32) -> Self {
        Self {
            provider: ProviderKind::Auto,
            model: String::new(),
            base_url: String::new(),
            max_output_tokens,
            vision: Vision::Auto,
        }
    }
}

/// `executive.roles.<role>.vision`: written `true`, `false` or `"auto"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Vision {
    /// The model's name decides (a documented list of models known to take images).
    #[default]
    Auto,
    On,
    Off,
}

impl Serialize for Vision {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Vision::Auto => s.serialize_str("auto"),
            Vision::On => s.serialize_bool(true),
            Vision::Off => s.serialize_bool(false),
        }
    }
}

impl<'de> Deserialize<'de> for Vision {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Bool(true) => Ok(Vision::On),
            serde_json::Value::Bool(false) => Ok(Vision::Off),
            serde_json::Value::String(s) if s == "auto" => Ok(Vision::Auto),
            other => Err(serde::de::Error::custom(format!(
                "expected true, false or \"auto\", got {other}"
            ))),
        }
    }
}

impl Default for RoleSettings {
    fn default() -> Self {
        Self::with_tokens(1024)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RolesSettings {
    /// Answering people (mentions, replies, DMs).
    pub reply: RoleSettings,
    /// Initiative decisions and the garden.
    pub ambient: RoleSettings,
    /// Level-2 reflexes: a small, cheap (ideally local) model.
    pub reflex: RoleSettings,
    /// Memory extraction.
    pub extract: RoleSettings,
}

impl Default for RolesSettings {
    fn default() -> Self {
        Self {
            reply: RoleSettings::with_tokens(1024),
            ambient: RoleSettings::with_tokens(1024),
            reflex: RoleSettings::with_tokens(256),
            extract: RoleSettings::with_tokens(1024),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContextStreamSettings {
    /// Roles whose cold-start calls get an `[AMBIENT CONTEXT]` summary prepended (costs tokens):
    /// "ambient" (garden cycles, initiative considerations), "reflex" (level-2 reflexes).
    pub roles: Vec<String>,
    pub window_minutes: u32,
    /// At most this many events in the summary (the newest).
    pub max_lines: u32,
    /// How long the stream's own lines are kept, and the oldest a summary
    /// reaches back (people's messages are read from the stored messages).
    pub retention_hours: u32,
}

impl Default for ContextStreamSettings {
    fn default() -> Self {
        Self {
            roles: Vec::new(),
            window_minutes: 5,
            max_lines: 20,
            retention_hours: 24,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ExecutiveSettings {
    pub roles: RolesSettings,
    /// Where Ollama is looked for when a role's provider is `auto` or `ollama`.
    pub ollama_base_url: String,
    pub request_timeout_seconds: u32,
    pub max_retries: u32,
    /// Consecutive failures after which a provider is skipped for a while.
    pub failure_threshold: u32,
    pub provider_cooldown_minutes: u32,
    /// Let autonomous roles (ambient, reflex, extract) spend pay-per-token API keys.
    pub allow_pay_per_token_for_autonomous: bool,
    pub prompts_dir: String,
    /// Stored channel messages included when answering someone.
    pub reply_history_messages: u32,
    pub max_tool_steps: u32,
    pub max_tool_calls: u32,
    /// Tools a reply may use beyond memory and the journal.
    pub reply_tools: ReplyToolsSettings,
    pub context_stream: ContextStreamSettings,
    pub prompt_limits: PromptLimits,
    /// US$ per million tokens by model name, for cost estimates; added to
    /// (and winning over) the built-in list prices.
    pub prices: BTreeMap<String, Price>,
}

/// Looking things up while answering someone (`reply::web`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReplyToolsSettings {
    /// `web_search` and `web_scrape` in replies; in effect only when
    /// `network.searchBaseUrl` names a search endpoint. A server may turn it
    /// off for itself, not on when the file has it off.
    pub web: bool,
    /// Web searches and page reads one reply may make; a further call is refused.
    pub max_web_calls_per_reply: u32,
}

impl Default for ReplyToolsSettings {
    fn default() -> Self {
        Self {
            web: true,
            max_web_calls_per_reply: 3,
        }
    }
}

/// US$ per million tokens.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Price {
    pub input_per_million: f64,
    pub output_per_million: f64,
}

impl Default for ExecutiveSettings {
    fn default() -> Self {
        Self {
            roles: RolesSettings::default(),
            ollama_base_url: "http://127.0.0.1:11434".into(),
            request_timeout_seconds: 60,
            max_retries: 3,
            failure_threshold: 3,
            provider_cooldown_minutes: 5,
            allow_pay_per_token_for_autonomous: false,
            prompts_dir: "prompts".into(),
            reply_history_messages: 20,
            max_tool_steps: 6,
            max_tool_calls: 8,
            reply_tools: ReplyToolsSettings::default(),
            context_stream: ContextStreamSettings::default(),
            prompt_limits: PromptLimits::default(),
            prices: BTreeMap::new(),
        }
    }
}

/// Ceilings on what goes into one model request, in characters. Whatever
/// people write, a page says or a tool returns, a prompt never grows past
/// these: a longer piece is cut with a visible marker
/// ("… [cut: 5,000,000 characters, showing the first 4,000]").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PromptLimits {
    /// One message, fact, feed item or draft. 4,000: the longest message a
    /// person can send on Discord (with Nitro), so real messages go in whole.
    pub message_chars: u32,
    /// One tool result going back to the model (a page, search snippets,
    /// memory hits). 16,000 (about 4,000 tokens): a page's readable text fits.
    pub tool_result_chars: u32,
    /// One prompt section (the history, the memory list, the feed, the
    /// ambient context). 24,000 (about 6,000 tokens): many messages, none
    /// able to crowd out the rest; long items are shortened first.
    pub section_chars: u32,
    /// The whole request (system prompt, messages, tool results). 200,000
    /// (about 50,000 tokens): inside every supported model's context, and
    /// well past what the limits above let any prompt reach.
    pub total_chars: u32,
}

impl Default for PromptLimits {
    fn default() -> Self {
        Self {
            message_chars: 4_000,
            tool_result_chars: 16_000,
            section_chars: 24_000,
            total_chars: 200_000,
        }
    }
}

/// Per-day token caps. 0 means "no cap" for that role.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RoleBudgets {
    pub reply: u64,
    pub ambient: u64,
    pub reflex: u64,
    pub extract: u64,
}

impl Default for RoleBudgets {
    fn default() -> Self {
        Self {
            reply: 0,
            ambient: 200_000,
            reflex: 100_000,
            extract: 100_000,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BudgetSettings {
    pub daily_tokens: RoleBudgets,
    /// Autonomous tokens (ambient + reflex + extract) one guild may use per day; 0 = no cap.
    pub guild_autonomous_daily_tokens: u64,
    /// Cap on pay-per-token autonomous use per day, when it is allowed at all.
    pub pay_per_token_daily_tokens: u64,
}

impl Default for BudgetSettings {
    fn default() -> Self {
        Self {
            daily_tokens: RoleBudgets::default(),
            guild_autonomous_daily_tokens: 50_000,
            pay_per_token_daily_tokens: 100_000,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PermissionsSettings {
    pub replies: ReplyPermissions,
    pub roles: RolePermissions,
}

/// Who may talk to the bot in a server, by role: applied before any model call
/// (`permissions::refusal`). `discord.ownerUserIds` always pass.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RolePermissions {
    /// If non-empty, only people with one of these roles are answered.
    pub allowed: Vec<RoleId>,
    /// People with one of these roles are not answered, whatever other role they have.
    pub blocked: Vec<RoleId>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReplyPermissions {
    /// Channels the bot may post in on its own (the initiative pool).
    pub discovery_channel_ids: Vec<ChannelId>,
    /// Channels where the bot may answer without being addressed (a "vibe" bonus).
    pub reply_channel_ids: Vec<ChannelId>,
    /// If non-empty, the only channels the bot sees at all.
    pub allowed_channel_ids: Vec<ChannelId>,
    /// Channels the bot never sees.
    pub blocked_channel_ids: Vec<ChannelId>,
    /// Users the bot never sees.
    pub blocked_user_ids: Vec<UserId>,
    /// Most messages the bot sends per channel per hour (each part of a long answer counts).
    /// 60 — one a minute, sustained for an hour — keeps up with a lively conversation;
    /// Discord's own limit (5 per 5 s) still guards bursts.
    pub max_messages_per_hour: u32,
    /// Most Discord messages (2,000 characters each) one answer or post may take; a longer one is cut with a marker.
    pub max_parts_per_answer: u32,
}

impl Default for ReplyPermissions {
    fn default() -> Self {
        Self {
            discovery_channel_ids: Vec::new(),
            reply_channel_ids: Vec::new(),
            allowed_channel_ids: Vec::new(),
            blocked_channel_ids: Vec::new(),
            blocked_user_ids: Vec::new(),
            max_messages_per_hour: 60,
            max_parts_per_answer: 4,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InitiativeSettings {
    pub text: InitiativeTextSettings,
    pub discovery: DiscoverySettings,
    /// When the bot keeps to itself, in `guild.timezone`: "23:00-08:00",
    /// "fri,sat 01:00-10:00", rules joined by ";". Empty: never.
    pub quiet_hours: String,
    /// During quiet hours, still answer people who address the bot.
    pub replies_during_quiet_hours: bool,
}

impl Default for InitiativeSettings {
    fn default() -> Self {
        Self {
            text: InitiativeTextSettings::default(),
            discovery: DiscoverySettings::default(),
            quiet_hours: String::new(),
            replies_during_quiet_hours: true,
        }
    }
}

/// Which model role makes the ambient-text decision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Execution {
    /// The strong `ambient` role (default).
    #[default]
    Ambient,
    /// The cheap `reflex` role.
    Reflex,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InitiativeTextSettings {
    pub enabled: bool,
    pub execution: Execution,
    /// Percent chance (0–100) that a tick which passed every other gate consults the model.
    pub eagerness: u32,
    pub min_minutes_between_posts: u32,
    pub max_posts_per_day: u32,
    pub lookback_messages: u32,
    pub allow_active_curiosity: bool,
    pub max_tool_steps: u32,
    pub max_tool_calls: u32,
    /// Seconds between initiative ticks.
    pub tick_seconds: u32,
    /// A held thought is dropped this long after it was first created.
    pub pending_thought_max_age_minutes: u32,
    /// A held thought is looked at again at most this often (0: every tick).
    pub revisit_minutes: u32,
    /// Longest post the model may make; longer ones are rejected.
    pub max_post_chars: u32,
    /// No consideration when no person has posted in the pool for this long (0: off):
    /// the bot does not talk to an empty room.
    pub require_activity_within_hours: u32,
    /// How many of the bot's unprompted posts in a row may go unanswered (0: off).
    /// At 1 (the default) a post nobody has answered by a message in the pool,
    /// or a reaction to it, stops the next until a person speaks: no talking to itself.
    pub max_unanswered_posts: u32,
}

impl Default for InitiativeTextSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            execution: Execution::Ambient,
            eagerness: 20,
            min_minutes_between_posts: 60,
            max_posts_per_day: 6,
            lookback_messages: 30,
            allow_active_curiosity: false,
            max_tool_steps: 4,
            max_tool_calls: 6,
            tick_seconds: 60,
            pending_thought_max_age_minutes: 180,
            revisit_minutes: 10,
            max_post_chars: 1800,
            require_activity_within_hours: 24,
            max_unanswered_posts: 1,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DiscoverySources {
    pub reddit: bool,
    pub rss: bool,
    pub youtube: bool,
    pub x: bool,
    pub hacker_news: bool,
}

impl Default for DiscoverySources {
    fn default() -> Self {
        Self {
            reddit: true,
            rss: true,
            youtube: true,
            x: false,
            hacker_news: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ImageGenerationSettings {
    /// OpenAI-compatible images endpoint base URL; empty disables image generation.
    pub base_url: String,
    pub model: String,
    /// The whole request, answer included.
    pub timeout_seconds: u32,
    /// The generator is the operator's own server on a private address.
    pub allow_private: bool,
}

impl Default for ImageGenerationSettings {
    fn default() -> Self {
        Self {
            base_url: String::new(),
            model: "gpt-image-1".into(),
            timeout_seconds: 120,
            allow_private: false,
        }
    }
}

/// A Giphy-compatible GIF search API; used only when `GIPHY_API_KEY` is set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GifSourceSettings {
    /// Base URL of the search API (`{baseUrl}/v1/gifs/search`); empty turns GIFs off.
    pub base_url: String,
    /// Content rating asked for: g, pg, pg-13 or r.
    pub rating: String,
    /// The search service may be on a private address (the operator's own).
    pub allow_private: bool,
}

impl Default for GifSourceSettings {
    fn default() -> Self {
        Self {
            base_url: "https://api.giphy.com".into(),
            rating: "pg".into(),
            allow_private: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DiscoverySettings {
    pub sources: DiscoverySources,
    pub reddit_subreddits: Vec<String>,
    pub rss_feeds: Vec<String>,
    pub youtube_channel_ids: Vec<String>,
    pub x_handles: Vec<String>,
    /// RSS bridge for X (X has no free API), e.g. a Nitter or RSSHub instance.
    pub x_bridge_base_url: String,
    pub reddit_base_url: String,
    pub youtube_base_url: String,
    pub hacker_news_base_url: String,
    pub fetch_interval_minutes: u32,
    pub freshness_hours: u32,
    pub dedupe_hours: u32,
    /// Most items kept from one source per fetch.
    pub source_fetch_limit: u32,
    pub allow_self_curation: bool,
    pub max_sources_per_type: u32,
    pub allow_image_posts: bool,
    pub allow_video_posts: bool,
    pub allow_gif_posts: bool,
    pub allow_reply_gifs: bool,
    pub max_images_per_day: u32,
    pub max_videos_per_day: u32,
    pub max_gifs_per_day: u32,
    pub allowed_image_models: Vec<String>,
    pub allowed_video_models: Vec<String>,
    pub image_generation: ImageGenerationSettings,
    pub gif_source: GifSourceSettings,
}

impl Default for DiscoverySettings {
    fn default() -> Self {
        Self {
            sources: DiscoverySources::default(),
            reddit_subreddits: Vec::new(),
            rss_feeds: Vec::new(),
            youtube_channel_ids: Vec::new(),
            x_handles: Vec::new(),
            x_bridge_base_url: String::new(),
            reddit_base_url: "https://www.reddit.com".into(),
            youtube_base_url: "https://www.youtube.com".into(),
            hacker_news_base_url: "https://hacker-news.firebaseio.com".into(),
            fetch_interval_minutes: 30,
            freshness_hours: 48,
            dedupe_hours: 168,
            source_fetch_limit: 10,
            allow_self_curation: false,
            max_sources_per_type: 10,
            allow_image_posts: false,
            allow_video_posts: false,
            allow_gif_posts: false,
            allow_reply_gifs: false,
            max_images_per_day: 3,
            max_videos_per_day: 1,
            max_gifs_per_day: 5,
            allowed_image_models: Vec::new(),
            allowed_video_models: Vec::new(),
            image_generation: ImageGenerationSettings::default(),
            gif_source: GifSourceSettings::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MemorySettings {
    pub enabled: bool,
    /// Extract facts from conversations the bot took part in.
    pub extract_conversations: bool,
    /// Extract facts, in batches, from channels the bot only listens to.
    pub extract_listened: bool,
    /// Minutes of quiet after which a conversation counts as ended (and is extracted).
    pub conversation_idle_minutes: u32,
    /// Messages per batch when extracting from listened channels.
    pub listen_batch_size: u32,
    pub guild_compaction_threshold: u32,
    pub channel_compaction_threshold: u32,
    pub user_compaction_threshold: u32,
    /// Facts not touched for this many days expire.
    pub ttl_days: u32,
    /// Facts of a deleted channel are kept this many days after archival.
    pub archive_retention_days: u32,
    /// Recency half-life used by search scoring.
    pub search_half_life_days: u32,
    /// Keyword overlap above which a new decision supersedes an earlier one (seed: decisions only).
    pub supersede_threshold: f64,
    /// Most facts put into one prompt.
    pub max_prompt_facts: u32,
}

impl Default for MemorySettings {
    fn default() -> Self {
        Self {
            enabled: true,
            extract_conversations: true,
            extract_listened: true,
            conversation_idle_minutes: 10,
            listen_batch_size: 50,
            guild_compaction_threshold: 40,
            channel_compaction_threshold: 80,
            user_compaction_threshold: 40,
            ttl_days: 90,
            archive_retention_days: 7,
            search_half_life_days: 30,
            supersede_threshold: 0.4,
            max_prompt_facts: 12,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReflexSettings {
    pub enabled: bool,
    /// Directory of reflex YAML files (relative paths are relative to the working directory).
    pub dir: String,
    /// Let the executive write new reflexes (`reflex_create`) for this guild on anyone's
    /// request; without it only `discord.ownerUserIds` may ask.
    pub allow_self_create: bool,
    /// How many reflexes the executive may create per guild.
    pub max_created_per_guild: u32,
    /// Base URL of the GitHub REST API for the `github_api` action (`GITHUB_TOKEN` authenticates).
    pub github_api_base_url: String,
}

impl Default for ReflexSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            dir: "reflexes".into(),
            allow_self_create: false,
            max_created_per_guild: 20,
            github_api_base_url: "https://api.github.com".into(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ImpulseSettings {
    /// Seconds between impulse checks while people are talking with the bot.
    pub active_check_seconds: u32,
    /// Seconds between impulse checks when idle.
    pub idle_check_seconds: u32,
    /// Minutes of idleness before ideas become impulses.
    pub idea_idle_minutes: u32,
    /// The server's zone under its older name; `guild.timezone` wins when set.
    pub timezone: String,
    /// Open tasks one person may have in a server.
    pub max_open_tasks_per_person: u32,
}

impl Default for ImpulseSettings {
    fn default() -> Self {
        Self {
            active_check_seconds: 5,
            idle_check_seconds: 60,
            idea_idle_minutes: 60,
            timezone: "UTC".into(),
            max_open_tasks_per_person: 20,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GardenSettings {
    pub enabled: bool,
    pub min_interval_minutes: u32,
    pub max_interval_minutes: u32,
    /// Interval used before any rate-limit headers have been seen.
    pub default_interval_minutes: u32,
    /// Pause (rather than only slow down) while people are talking with the bot.
    pub pause_on_active: bool,
    /// Prepare tasks, ideas and pending thoughts, not only tend memory.
    pub proactive_work: bool,
    /// Successful garden-only cycles before proactive work unlocks.
    pub warmup_cycles: u32,
    pub skip_warmup: bool,
    /// Confidence half-life for the decay used by pruning.
    pub confidence_half_life_days: u32,
    /// Consecutive cycles without a rate limit after which the interval shortens by a quarter.
    pub clean_cycles_to_shorten: u32,
    /// Hours without anyone talking after which cycles run twice as often.
    pub idle_hours_for_more_often: u32,
    /// How much longer the interval gets while people talk with the bot (unless `pauseOnActive`).
    pub active_multiplier: u32,
    /// Longest a cycle's deterministic pass may run before it stops at a checkpoint.
    pub max_pass_seconds: u32,
    /// At most this many contradiction and stale-fact candidates go to the model per cycle.
    pub max_candidates: u32,
}

impl Default for GardenSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            min_interval_minutes: 5,
            max_interval_minutes: 120,
            default_interval_minutes: 30,
            pause_on_active: false,
            proactive_work: true,
            warmup_cycles: 3,
            skip_warmup: false,
            confidence_half_life_days: 30,
            clean_cycles_to_shorten: 3,
            idle_hours_for_more_often: 3,
            active_multiplier: 4,
            max_pass_seconds: 120,
            max_candidates: 12,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VoiceLink {
    pub voice_channel_id: ChannelId,
    pub text_channel_id: ChannelId,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TranscriptionSettings {
    /// OpenAI-compatible base URL (…/v1); empty disables voice transcription.
    pub base_url: String,
    pub model: String,
    pub max_concurrent: u32,
    pub timeout_seconds: u32,
    pub language: String,
    /// The endpoint is the operator's own server on a private address (a local whisper.cpp).
    pub allow_private: bool,
}

impl Default for TranscriptionSettings {
    fn default() -> Self {
        Self {
            base_url: String::new(),
            model: "whisper-1".into(),
            max_concurrent: 2,
            timeout_seconds: 30,
            language: String::new(),
            allow_private: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VoiceSettings {
    pub enabled: bool,
    /// Join the channels in `autoJoinChannelIds` while humans are in them.
    pub auto_join: bool,
    pub auto_join_channel_ids: Vec<ChannelId>,
    /// Which text channel receives each voice channel's transcript.
    pub links: Vec<VoiceLink>,
    pub transcription: TranscriptionSettings,
    /// Silence that ends an utterance.
    pub silence_hangover_ms: u32,
    pub max_utterance_seconds: u32,
    pub min_utterance_ms: u32,
    /// RMS energy (16-bit PCM) above which a frame counts as speech.
    pub energy_threshold: u32,
    /// Utterances waiting for transcription; beyond this the oldest is dropped.
    pub queue_capacity: u32,
    /// Answering aloud in the voice channel (off: answers are text only).
    pub speech: SpeechSettings,
}

/// An OpenAI-compatible text-to-speech endpoint (`…/v1/audio/speech`) that
/// speaks answers to people who addressed the bot by voice; its key comes
/// from `SPEECH_API_KEY`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SpeechSettings {
    /// Also speak the text answer to someone who addressed the bot by voice.
    pub enabled: bool,
    /// OpenAI-compatible base URL (…/v1).
    pub base_url: String,
    pub model: String,
    /// The endpoint's voice name.
    pub voice: String,
    /// The longest answer spoken; longer audio is cut here.
    pub max_seconds: u32,
    /// Seconds spoken per server per day (UTC); an answer is cut to what remains.
    pub max_seconds_per_day: u32,
    pub timeout_seconds: u32,
    /// The endpoint is the operator's own server on a private address (a local TTS).
    pub allow_private: bool,
}

impl Default for SpeechSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            base_url: String::new(),
            model: "tts-1".into(),
            voice: "alloy".into(),
            max_seconds: 30,
            max_seconds_per_day: 600,
            timeout_seconds: 30,
            allow_private: false,
        }
    }
}

impl Default for VoiceSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            auto_join: false,
            auto_join_channel_ids: Vec::new(),
            links: Vec::new(),
            transcription: TranscriptionSettings::default(),
            silence_hangover_ms: 700,
            max_utterance_seconds: 15,
            min_utterance_ms: 300,
            energy_threshold: 500,
            queue_capacity: 16,
            speech: SpeechSettings::default(),
        }
    }
}

impl Default for VoiceLink {
    fn default() -> Self {
        Self {
            voice_channel_id: ChannelId(0),
            text_channel_id: ChannelId(0),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DashboardSettings {
    /// Serve the dashboard from `ambient run` and `ambient console` too
    /// (`ambient dashboard` serves it on its own whatever this says).
    pub enabled: bool,
    /// Address and port it listens on. Beyond loopback a token is required.
    pub bind: String,
}

impl DashboardSettings {
    /// `bind` as a socket address: an IP address and a port (0: any free port).
    pub fn address(&self) -> Result<std::net::SocketAddr, BadBind> {
        self.bind.trim().parse().map_err(|_| BadBind {
            bind: self.bind.clone(),
        })
    }
}

/// `dashboard.bind` is not an address to listen on; holds the text as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "must be an IP address and a port, such as \"127.0.0.1:8377\" (this machine only) \
     or \"0.0.0.0:8377\" (every interface; a token is then required), got {bind:?}"
)]
pub struct BadBind {
    pub bind: String,
}

impl Default for DashboardSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            bind: "127.0.0.1:8377".into(),
        }
    }
}

/// Feeds people subscribe to (`/feeds`): every new item of a feed posted
/// to a channel, a thread per item or a forum post, beside the initiative.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FeedsSettings {
    /// Deliver subscribed feeds at all. Off: subscriptions are kept, and
    /// their new items wait until it is on again.
    pub enabled: bool,
    /// How often a subscribed feed is fetched (a source the initiative
    /// also reads is fetched at the shorter of this and
    /// `initiative.discovery.fetchIntervalMinutes`).
    pub fetch_interval_minutes: u32,
    /// Most items one subscription posts in an hour; the rest wait their turn.
    pub max_per_feed_per_hour: u32,
    /// Most items all of a server's subscriptions post in an hour.
    pub max_per_guild_per_hour: u32,
    /// Failed fetches in a row after which a subscription pauses itself
    /// (and says so once) until someone resumes it.
    pub pause_after_failures: u32,
    /// Role ids a feed's template may mention (and so ping); no other role,
    /// and never `@everyone` or `@here`.
    pub allowed_role_mentions: Vec<RoleId>,
    /// Where `{summary}` is cut, in characters.
    pub summary_chars: u32,
    /// Most subscriptions one server may have.
    pub max_subscriptions_per_guild: u32,
    /// The template a new subscription gets when `/feeds add` names none.
    pub default_template: String,
}

impl Default for FeedsSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            fetch_interval_minutes: 15,
            max_per_feed_per_hour: 10,
            max_per_guild_per_hour: 30,
            pause_after_failures: 10,
            allowed_role_mentions: Vec::new(),
            summary_chars: 300,
            max_subscriptions_per_guild: 50,
            default_template: "**{title}**\n{link}".into(),
        }
    }
}

/// Prometheus metrics, `/healthz` and `/readyz` on one loopback port.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MetricsSettings {
    /// Loopback address and port to serve `/metrics`, `/healthz` and
    /// `/readyz` on; empty: not served.
    pub bind: String,
    /// Label the per-server families with the server's id (one series per
    /// server: fine for a few, costly for hundreds).
    pub per_guild: bool,
}

impl MetricsSettings {
    /// Where to listen: `None` when off; an address beyond loopback is
    /// refused (the endpoints have no token; a proxy in front may expose them).
    pub(crate) fn address(&self) -> Result<Option<std::net::SocketAddr>, BadMetricsBind> {
        let bind = self.bind.trim();
        if bind.is_empty() {
            return Ok(None);
        }
        match bind.parse::<std::net::SocketAddr>() {
            Ok(addr) if addr.ip().is_loopback() => Ok(Some(addr)),
            _ => Err(BadMetricsBind {
                bind: self.bind.clone(),
            }),
        }
    }
}

/// `metrics.bind` is not a loopback address and port; holds the text as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "must be empty (off) or a loopback IP address and a port, such as \"127.0.0.1:9184\" \
     (the endpoints have no token: put a proxy in front to reach them from elsewhere), got {bind:?}"
)]
pub(crate) struct BadMetricsBind {
    pub bind: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(text: &str) -> url::Origin {
        url::Url::parse(text).unwrap().origin()
    }

    #[test]
    fn file_origins_are_api_base_urls_origin_whatever_its_path_and_the_named_ones() {
        let mut discord = DiscordSettings {
            api_base_url: "http://127.0.0.1:3000/api".into(),
            attachment_origins: vec!["http://127.0.0.1:3001".into(), "not an origin".into()],
            ..DiscordSettings::default()
        };
        assert_eq!(
            discord.file_origins(),
            [
                origin("http://127.0.0.1:3000"),
                origin("http://127.0.0.1:3001")
            ]
        );
        // Discord itself is not the operator's server, with or without a path.
        for api in [
            "https://discord.com",
            "https://discord.com/",
            "https://discord.com/api",
        ] {
            discord.api_base_url = api.into();
            assert_eq!(
                discord.file_origins(),
                [origin("http://127.0.0.1:3001")],
                "{api}"
            );
        }
        assert!(DiscordSettings::default().file_origins().is_empty());
    }
}
