//! The `ambient` binary: parses the command line and hands over to `cli`.

use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = ambient::cli::Cli::parse();
    ambient::cli::init_logging(&cli);
    match ambient::cli::dispatch(cli).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ambient: {e:#}");
            ExitCode::FAILURE
        }
    }
}
