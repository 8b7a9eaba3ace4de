//! Shared test support: temporary bot homes, running the real binary, and
//! (in later modules) the fake Discord and scripted model servers.

#![allow(dead_code)]

pub mod alone;
pub mod bot;
pub mod discord_shapes;
pub mod exec;
pub mod fake_discord;
pub mod fake_gateway;
pub mod fake_voice;
pub mod feed_server;
pub mod files;
pub mod gif_server;
pub mod health;
pub mod home;
pub mod image_server;
pub mod model_server;
pub mod model_stream;
pub mod postgres;
pub mod readme;
pub mod replaying;
pub mod serve;
pub mod shards;
pub mod spellings;
pub mod stt_server;
pub mod tmpfs;
pub mod tts_server;
pub mod world;
