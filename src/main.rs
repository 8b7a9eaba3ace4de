//! The `ambient` binary: parses the command line and hands over to `cli`.

use std::process::ExitCode;

use clap::Parser;

/// mimalloc, not the system allocator: each gateway event is decoded
/// through a generic JSON value and a buffered copy of it before it becomes
/// a message (serenity's way), dozens of small values made and freed, and
/// glibc's malloc was a fifth of what an unaddressed message cost (the load
/// harness under callgrind; see the README's "Performance").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = ambient::cli::Cli::parse();
    ambient::cli::init_logging(&cli);
    // The WebSocket crates (serenity's gateway, songbird's voice) build their
    // TLS clients on rustls's process-wide provider. rustls picks it from its
    // features while only one is on; naming ring keeps the gateway working
    // should a dependency turn on a second, where rustls would refuse to pick.
    // An error means one is installed already, and that one is used.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ran = ambient::cli::runtime::build()
        .map_err(anyhow::Error::from)
        .and_then(|runtime| ambient::cli::runtime::block_on(runtime, ambient::cli::dispatch(cli)));
    match ran {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ambient: {e:#}");
            ExitCode::FAILURE
        }
    }
}
