//! The Discord front end: serenity for the gateway and REST, poise for slash
//! commands. An adapter only: events become percepts (`events`), the core
//! speaks through `transport`, and commands call into `crate::commands`.
//!
//! `discord.apiBaseUrl` routes every REST call (and so the gateway URL
//! lookup) to another Discord-compatible server; the tests' fake Discord
//! uses it. Serenity's rate limiter ignores the base URL (it would send to
//! discord.com), so it is off for a custom base URL and kept for Discord
//! itself. Behind a custom base URL, `discord.restProxyHandlesRateLimits`
//! says who honours 429s: true, a rate-limiting REST proxy (nirn-proxy,
//! twilight-http-proxy) does and the bot sends straight through; false (the
//! default), the chat transport waits and retries itself (`ratelimit`).
//!
//! Which gateway shards the process runs, when it identifies and which
//! guilds' events it keeps is `shards`' job (`discord.shards`); a shard
//! Discord refuses is said, stopped, and the end of the process when it was
//! the last one (`refusals`).

use crate::store::{FileStore, MessageStore};
mod backfill;
mod commands;
pub(crate) mod convert;
mod departed;
mod events;
pub(crate) mod ratelimit;
mod reconnect;
pub mod refusals;
pub(crate) mod shards;
mod startup_pages;
pub mod transport;
pub(crate) mod voice;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use serenity::all::{ClientBuilder, GatewayIntents, GuildId as SGuildId, HttpBuilder};

use crate::app::{App, Parts};
use crate::attention::Author;
use crate::ids::UserId;
use crate::live::Watching;
use crate::settings::Settings;
use crate::vocab::journal::{Entry, Kind};
use commands::Data;

pub(crate) const DISCORD: &str = "https://discord.com";

pub(crate) fn intents(settings: &Settings) -> GatewayIntents {
    let members = if settings.discord.members_intent {
        GatewayIntents::GUILD_MEMBERS
    } else {
        GatewayIntents::empty()
    };
    members
        | GatewayIntents::GUILDS
        | GatewayIntents::GUILD_MESSAGES
        | GatewayIntents::MESSAGE_CONTENT
        | GatewayIntents::DIRECT_MESSAGES
        | GatewayIntents::GUILD_MESSAGE_REACTIONS
        | GatewayIntents::DIRECT_MESSAGE_REACTIONS
        | GatewayIntents::GUILD_VOICE_STATES
}

fn http(token: &str, settings: &Settings, client: reqwest::Client) -> serenity::all::Http {
    let base = settings.discord.api_base_url.trim_end_matches('/');
    let builder = HttpBuilder::new(token).client(client);
    if base == DISCORD {
        builder.build()
    } else {
        builder.proxy(base).ratelimiter_disabled(true).build()
    }
}

/// Our own 429 handling for the chat transport, only where neither serenity's
/// limiter (discord.com) nor a rate-limiting proxy does it.
fn own_limiter(settings: &Settings, client: &reqwest::Client) -> Option<ratelimit::Limiter> {
    let base = settings.discord.api_base_url.trim_end_matches('/');
    (base != DISCORD && !settings.discord.rest_proxy_handles_rate_limits)
        .then(|| ratelimit::Limiter::new(client.clone(), base))
}

/// The chat transport as the bot builds it for `settings` (`discord.apiBaseUrl`,
/// `discord.restProxyHandlesRateLimits`) with the bot's own identity `me`:
/// for the tests that drive it against a fake Discord.
pub fn chat_transport(
    token: &str,
    settings: &Settings,
    me: Author,
) -> anyhow::Result<transport::DiscordTransport> {
    let client = crate::net::platform_client(&settings.network)
        .context("cannot build the Discord HTTP client")?;
    let rest = Arc::new(http(token, settings, client.clone()));
    Ok(transport::DiscordTransport::new(
        rest,
        me,
        own_limiter(settings, &client),
    ))
}

/// The names of the slash commands the bot registers (`ambient doctor` looks for them).
pub(crate) fn command_names() -> Vec<String> {
    commands::all()
        .into_iter()
        .map(|c| c.name.into_owned())
        .collect()
}

/// How long stopping may take, from SIGINT/SIGTERM to the end of [`run`].
/// Leaving voice, closing the gateway, the loops' work in flight and the
/// dashboard's requests share it; what has not finished by then is cut
/// short. A cut answer is never said twice: the bot records its words
/// before it sends them, and sends them with a nonce.
const STOP_WITHIN: Duration = Duration::from_millis(1500);

/// How long leaving voice and closing the gateway may take, within
/// [`STOP_WITHIN`]. A connected shard reads its messages between two reads
/// of the gateway, at most 0.5 s apart, and then waits for the gateway's
/// answer to its close; a shard waiting at the gate has no connection to
/// close, and would only be waited for.
const CLOSE_WITHIN: Duration = Duration::from_secs(1);

/// Connects and runs until SIGINT/SIGTERM, and returns within
/// [`STOP_WITHIN`] of it whatever the gateway is doing: connecting, backing
/// off between attempts, identified, or refused. `watching` says how the
/// settings are reloaded meanwhile (`crate::live`).
///
/// Serenity's own stop is not waited on: between a failed attempt and the
/// next (a gateway that is down), no shard of its is registered, and
/// `ShardManager::shutdown_all` then does nothing at all, so `Client::start`
/// never returned and SIGTERM was ignored.
pub(crate) async fn run(parts: Parts, token: &str, watching: Watching) -> anyhow::Result<()> {
    // Listening first: a stop asked while Discord is slow to answer, or
    // down, ends the start as well.
    let signalled = wait_for_signal();
    tokio::pin!(signalled);
    let prepared = tokio::select! {
        prepared = prepare(parts, token) => prepared?,
        () = &mut signalled => {
            tracing::info!("stopped before connecting to Discord");
            return Ok(());
        }
    };
    serve(prepared, watching, signalled).await
}

/// What [`run`] makes before it connects: the app (its loops not started
/// yet) and serenity's client with the slash commands installed.
struct Prepared {
    app: Arc<App>,
    lock: crate::store::lock::DataLock,
    client: serenity::all::Client,
    gate: Arc<reconnect::Gate>,
    settler: startup_pages::Settler,
    plan: Option<crate::vocab::shards::Shards>,
    departures: Arc<departed::Departures>,
}

/// Takes the data directory, logs in, builds the app and the client.
async fn prepare(parts: Parts, token: &str) -> anyhow::Result<Prepared> {
    let settings = parts.settings.clone();
    // One bot per data directory: refused before logging in or touching the data.
    let lock =
        crate::store::lock::DataLock::acquire(std::path::Path::new(&settings.storage.data_dir))?;
    // A data directory holding another shard range's servers is refused
    // before logging in; a fine one records the plan (`store::partition`).
    let plan = settings.discord.shard_plan();
    let data_dir = std::path::Path::new(&settings.storage.data_dir);
    crate::store::partition::enter_dir(data_dir, plan, parts.clock.now())?;
    // The one client for Discord's REST API, serenity's and our limiter's.
    let client = crate::net::platform_client(&settings.network)
        .context("cannot build the Discord HTTP client")?;
    let rest = Arc::new(http(token, &settings, client.clone()));
    let me = log_in(&rest, &settings).await?;

    let transport = Arc::new(transport::DiscordTransport::new(
        rest.clone(),
        me.clone(),
        own_limiter(&settings, &client),
    ));
    let chat: Arc<dyn crate::chat::Transport> = transport.clone();
    let app = App::build(parts, |_| chat).await?;
    transport.count_into(app.journal.metrics());
    app.stores::<FileStore>()
        .time_into(app.journal.metrics().store_timings());
    let commands = shards::Commands::default();
    let songbird = voice::songbird();
    let gate = Arc::new(reconnect::Gate::default());
    let settler = startup_pages::Settler::default();
    let departures = departed::Departures::new(app.clone(), plan);
    let discord = ClientBuilder::new_with_http(http(token, &settings, client), intents(&settings))
        .voice_manager_arc(songbird.clone())
        .raw_event_handler(events::Events {
            app: app.clone(),
            me: me.id,
            gate: gate.clone(),
            plan,
            settler: settler.clone(),
            commands: commands.clone(),
            departures: departures.clone(),
        })
        .await
        .context("cannot set up the Discord client")?;
    commands
        .install(
            framework(app.clone(), settings.discord.dev_guild_id),
            &discord,
        )
        .await;
    app.voice.set_backend(Arc::new(voice::SongbirdBackend {
        manager: songbird,
        cache: discord.cache.clone(),
        me: me.id,
    }));
    Ok(Prepared {
        app,
        lock,
        client: discord,
        gate,
        settler,
        plan,
        departures,
    })
}

/// Starts the app's loops and the dashboard, connects, and runs until the
/// shards end or `signalled`; then stops everything by [`STOP_WITHIN`].
async fn serve(
    p: Prepared,
    watching: Watching,
    signalled: std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
) -> anyhow::Result<()> {
    let Prepared {
        app,
        lock,
        mut client,
        gate,
        settler,
        plan,
        departures,
    } = p;
    let mut refusals =
        refusals::Watch::new(app.journal.clone(), client.shard_manager.clone(), plan)
            .context("the Discord front end runs once per process")?;
    let dashboard = crate::dashboard::start_for(&app).await?;
    for line in dashboard.iter().flat_map(|d| d.announce()) {
        // Said on stderr, not logged: the first start's line holds the token.
        eprintln!("{line}");
    }
    let health = crate::health::Health::start(&app, gateway_state(&client, &gate)).await?;
    let mut running = app.start(lock);
    let live = app.live.clone();
    live.hold_command_line(watching.command_line.clone());
    running.spawn(move |shutdown| live.run(shutdown, watching));
    running.spawn(move |shutdown| departures.run(shutdown));
    tracing::info!("this process runs {}", shards::describe(plan.as_ref()));
    let settling = settler.spawn();
    let door = gate.spawn(client.ws_url.clone()).await;
    let shard_manager = client.shard_manager.clone();
    let result = tokio::select! {
        ended = connect(&mut client, plan.as_ref(), &mut refusals) => ended,
        () = signalled => {
            tracing::info!("shutting down");
            Ok(())
        }
    };
    health.stop();
    // Voice is left first, while the gateway is there to say so.
    let close = async {
        app.voice.leave_all().await;
        shard_manager.shutdown_all().await;
    };
    let dashboard = |deadline| async move {
        if let Some(d) = dashboard {
            d.stop_by(deadline).await;
        }
    };
    stop_within(close, running, dashboard, &app.stores()).await;
    // The door is not opened (aborting its task would let a shard waiting
    // at it connect now); it goes with the runtime.
    drop(door);
    settling.abort();
    result
}

/// Whether the gateway is connected, for `/readyz`, `/metrics` and
/// systemd: every shard serenity runs at its `Connected` stage, and no
/// attempt through the gate since the last READY or RESUMED (a shard
/// resuming after a drop keeps its `Connected` stage; which one it is, the
/// gate cannot tell, so while one reconnects each shard reads as down).
fn gateway_state(
    client: &serenity::all::Client,
    gate: &Arc<reconnect::Gate>,
) -> crate::health::Gateway {
    let manager = client.shard_manager.clone();
    let gate = gate.clone();
    Arc::new(move || {
        let manager = manager.clone();
        let gate = gate.clone();
        Box::pin(async move {
            let runners = manager.runners.lock().await;
            let mut staged: Vec<(u32, bool)> = runners
                .iter()
                .map(|(id, info)| {
                    (
                        id.0,
                        info.stage == serenity::all::ConnectionStage::Connected,
                    )
                })
                .collect();
            staged.sort_unstable();
            let not_connected: Vec<String> = staged
                .iter()
                .filter(|(_, connected)| !connected)
                .map(|(id, _)| id.to_string())
                .collect();
            let up = gate.up();
            let down = if staged.is_empty() {
                Some("not connected yet".to_string())
            } else if !not_connected.is_empty() {
                Some(format!("shard {} not connected", not_connected.join(", ")))
            } else if !up {
                Some("reconnecting".to_string())
            } else {
                None
            };
            let shards = staged.into_iter().map(|(id, c)| (id, c && up)).collect();
            crate::health::GatewayNow { shards, down }
        })
    })
}

/// Stops everything by [`STOP_WITHIN`] from now. The gateway closes
/// (`close`, within [`CLOSE_WITHIN`]), the loops stop and the dashboard
/// ends (`dashboard`, told the deadline) side by side, so a shard waiting
/// at the gate, with nothing to close, does not spend the loops' time.
/// Then the store's last group of writes is committed: the messages the
/// gateway delivered while it closed are grouped (`store::group_commit`),
/// and the group is otherwise committed only when the store's last handle
/// goes — never, if a blocking task still holds it when the runtime ends
/// (`cli::runtime::FINISH_WITHIN`).
async fn stop_within<D: Future<Output = ()>>(
    close: impl Future<Output = ()>,
    running: crate::app::Running,
    dashboard: impl FnOnce(tokio::time::Instant) -> D,
    store: &Stores,
) {
    let deadline = tokio::time::Instant::now() + STOP_WITHIN;
    let close = tokio::time::timeout(CLOSE_WITHIN, close);
    let (closed, (), ()) =
        tokio::join!(close, running.stop_by(Some(deadline)), dashboard(deadline));
    if closed.is_err() {
        tracing::warn!(
            "the gateway did not close within {} ms; stopping without it",
            CLOSE_WITHIN.as_millis()
        );
    }
    store.file.flush();
}

/// Identifies (after the plan's stagger) and runs until the shards stop, or
/// Discord has refused every shard of this process; a refusal is said as it
/// happens, and ends the run in its own words.
async fn connect(
    client: &mut serenity::all::Client,
    plan: Option<&crate::vocab::shards::Shards>,
    refusals: &mut refusals::Watch,
) -> anyhow::Result<()> {
    let wait = shards::stagger(plan);
    let run = async {
        if !wait.is_zero() {
            tracing::info!(
                "waiting {} s before identifying, so processes started together identify one \
                 shard per 5 s",
                wait.as_secs()
            );
            tokio::time::sleep(wait).await;
        }
        shards::start(client, plan).await
    };
    let result = tokio::select! {
        ended = run => ended,
        gone = refusals.until_none_left() => return Err(gone),
    };
    match result {
        Err(e) => Err(refusals.explain(e).await),
        ok => ok,
    }
}

/// Who the token logs in as; a rejected token is said plainly (it is the
/// usual first-start mistake), anything else names the server tried.
async fn log_in(rest: &serenity::all::Http, settings: &Settings) -> anyhow::Result<Author> {
    let me = rest.get_current_user().await.map_err(|e| match &e {
        serenity::Error::Http(h) if h.status_code().map(|s| s.as_u16()) == Some(401) => anyhow!(
            "Discord rejected DISCORD_TOKEN (401 Unauthorized): copy the bot token again from the \
             Developer Portal (Bot → Reset Token)"
        ),
        _ => anyhow!(
            "cannot reach Discord at {}: {e}",
            settings.discord.api_base_url
        ),
    })?;
    let me = Author {
        id: UserId(me.id.get()),
        name: me.name.clone(),
        is_bot: true,
    };
    tracing::info!(bot = %me.name, "logged in");
    Ok(me)
}

/// The slash commands (poise); mentions stay conversation, not commands.
fn framework(
    app: Arc<App>,
    dev_guild: Option<crate::ids::GuildId>,
) -> poise::Framework<Data, commands::Error> {
    poise::Framework::builder()
        .options(poise::FrameworkOptions {
            commands: commands::all(),
            on_error: |e| Box::pin(commands::on_error(e)),
            prefix_options: poise::PrefixFrameworkOptions {
                // Mentions are conversation, not commands.
                mention_as_prefix: false,
                ..Default::default()
            },
            ..Default::default()
        })
        .initialize_owners(false)
        .setup(move |ctx, _ready, framework| {
            Box::pin(async move {
                register(ctx, &framework.options().commands, dev_guild, &app).await;
                Ok(Data { app })
            })
        })
        .build()
}

/// Registers the slash commands in the development guild, else globally.
/// Never fails: a failed poise setup leaves the bot hanging, so a refusal
/// is logged and journaled instead.
async fn register(
    ctx: &serenity::all::Context,
    commands: &[poise::Command<Data, commands::Error>],
    dev_guild: Option<crate::ids::GuildId>,
    app: &App,
) {
    let result = match dev_guild {
        Some(g) => poise::builtins::register_in_guild(ctx, commands, SGuildId::new(g.get())).await,
        None => poise::builtins::register_globally(ctx, commands).await,
    };
    let scope = dev_guild.map_or("globally".to_string(), |g| format!("in guild {g}"));
    match result {
        Ok(()) => tracing::info!("slash commands registered {scope}"),
        Err(e) => {
            tracing::error!(error = %e, "could not register slash commands {scope}");
            app.journal.record(
                Entry::new(Kind::Error, "could not register slash commands").reason(e.to_string()),
            );
        }
    }
}

/// Waits for Ctrl-C or SIGTERM. On Unix the handlers are installed when
/// this is called, not when it is first awaited: a caller that announces
/// itself (a port, a token) calls it first, so a SIGTERM sent right after
/// the announcement still stops it cleanly instead of killing it.
pub(crate) fn wait_for_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let interrupt = signal(SignalKind::interrupt());
        let term = signal(SignalKind::terminate());
        async move {
            match (interrupt, term) {
                (Ok(mut interrupt), Ok(mut term)) => {
                    tokio::select! {
                        _ = interrupt.recv() => {}
                        _ = term.recv() => {}
                    }
                }
                _ => {
                    // Harmless: an error here means no signal can be waited for; stopping is right.
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            // Harmless: an error here means no signal can be waited for; stopping is right.
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// The store's handles this module uses, one per family of tables (see
/// `store::handles`): what it may read and write, and nothing else.
#[derive(Clone)]
pub(crate) struct Stores {
    pub messages: MessageStore,
    pub file: FileStore,
}

#[cfg(test)]
mod tests {
    //! The stop sequence on tokio's paused clock: each deadline is met
    //! exactly, whatever the machine's load, and what a loop is given is
    //! independent of how long the gateway takes to close.

    use std::sync::Arc;
    use std::time::Duration;

    use tokio::time::Instant;

    use super::{CLOSE_WITHIN, STOP_WITHIN, stop_within};
    use crate::app::Running;
    use crate::clock::SystemClock;
    use crate::journal::Journal;
    use crate::store::messages::{Commit, Seen, sample};
    use crate::store::{JournalStore, Store};
    use crate::vocab::journal::{Filter, Kind};

    /// A store whose grouped writes only a flush (or its end) commits.
    fn store(dir: &std::path::Path) -> Store {
        Store::open(dir)
            .unwrap()
            .with_group_window(Duration::from_secs(3_600))
            .with_group_rest(Duration::ZERO)
    }

    /// Loops that take `stopping` each to stop once told to (`None`: never).
    fn running(store: &Store, stopping: &[Option<Duration>]) -> Running {
        let mut running = Running::new(Journal::new(store.journal(), Arc::new(SystemClock)));
        for stopping in stopping.iter().copied() {
            running.spawn(move |mut shutdown| async move {
                // Harmless: a closed channel is a stop too.
                let _ = shutdown.changed().await;
                match stopping {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            });
        }
        running
    }

    /// The journal's "stopped" entry: its reason says what was cut short.
    fn stopped(store: &JournalStore) -> String {
        let filter = Filter {
            kinds: vec![Kind::System],
            ..Default::default()
        };
        let entries = store.journal_query(&filter).unwrap();
        let stopped = entries.iter().find(|e| e.summary == "stopped");
        stopped.expect("no 'stopped' in the journal").reason.clone()
    }

    fn never() -> impl Future<Output = ()> {
        std::future::pending()
    }

    #[tokio::test(start_paused = true)]
    async fn a_gateway_that_never_closes_does_not_spend_the_loops_time() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        // A shard waiting at the gate: there is nothing to close, and the
        // close is given up at CLOSE_WITHIN. A loop needing more than that
        // (but less than STOP_WITHIN) still stops whole.
        let slow = CLOSE_WITHIN + Duration::from_millis(300);
        let loops = running(&store, &[Some(Duration::ZERO), Some(slow)]);
        let started = Instant::now();
        stop_within(never(), loops, |_| async {}, &(&store).into()).await;
        assert_eq!(started.elapsed(), slow);
        assert_eq!(stopped(&store.journal()), "", "a loop was cut short");
    }

    #[tokio::test(start_paused = true)]
    async fn everything_stuck_is_cut_at_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let loops = running(&store, &[Some(Duration::ZERO), None, None]);
        let told = Arc::new(std::sync::Mutex::new(None));
        let dashboard = {
            let told = told.clone();
            // A request that never ends: the dashboard cuts it at the deadline it is told.
            move |deadline| {
                *told.lock().unwrap() = Some(deadline);
                tokio::time::sleep_until(deadline)
            }
        };
        let started = Instant::now();
        stop_within(never(), loops, dashboard, &(&store).into()).await;
        assert_eq!(started.elapsed(), STOP_WITHIN);
        assert_eq!(*told.lock().unwrap(), Some(started + STOP_WITHIN));
        assert_eq!(
            stopped(&store.journal()),
            "2 loop(s) still at work were cut short to stop in time"
        );
    }

    /// A message the gateway delivers while it closes is stored in the open
    /// group of writes; with a blocking task still holding the store when
    /// the runtime ends, the group was never committed.
    #[tokio::test(start_paused = true)]
    async fn a_message_stored_while_the_gateway_closes_is_on_disk_after_the_stop() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let loops = running(&store, &[Some(Duration::ZERO)]);
        let message = sample(77, 5, "said as the bot was stopping", chrono::Utc::now());
        let close = {
            let store = store.clone();
            let message = message.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let seen = Seen {
                    message: &message,
                    guild_name: Some("the harbour"),
                    channel_name: Some("general"),
                    now: message.created_at,
                };
                store
                    .messages()
                    .insert_seen(&seen, Commit::Grouped)
                    .unwrap();
            }
        };
        stop_within(close, loops, |_| async {}, &(&store).into()).await;

        // `store` is still held, as by the blocking task: another connection reads the file.
        let on_disk = rusqlite::Connection::open_with_flags(
            dir.path().join(crate::store::DB_FILE),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let content: Option<String> = on_disk
            .query_row("SELECT content FROM messages WHERE id = 77", [], |r| {
                r.get(0)
            })
            .ok();
        assert_eq!(content.as_deref(), Some("said as the bot was stopping"));
    }
}
