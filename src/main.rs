//! `kaas serve`: a Kafka-compatible broker.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use kaas::config::{Overrides, Settings};
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(name = "kaas", version, about = "A Kafka-compatible broker with exactly-once semantics")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a broker (defaults: data dir ./kaas-data, listener 127.0.0.1:9092, node id 0).
    Serve {
        /// TOML configuration file; KAAS_* environment variables and these flags override it.
        #[arg(long)]
        config: Option<PathBuf>,
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// HOST:PORT to listen on.
        #[arg(long)]
        listen: Option<String>,
        #[arg(long)]
        node_id: Option<i32>,
    },
}

/// Raises the soft open-file limit to the hard one: connections and the segment-file cache
/// (`max_open_segment_files`, a quarter of it by default) live within it.
fn raise_open_file_limit() {
    match kaas::limits::raise_nofile() {
        Ok((before, now)) if before != now => {
            tracing::info!(from = before, to = now, "raised the open-file limit (RLIMIT_NOFILE)");
        }
        Ok(_) => {}
        Err(e) => {
            let soft = kaas::limits::nofile().map(|(s, _)| s).unwrap_or(1024);
            tracing::warn!(limit = soft, "could not raise the open-file limit: {e}");
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
        .with_writer(std::io::stderr)
        .init();
    match cli.command {
        Command::Serve { config, data_dir, listen, node_id } => {
            let overrides = Overrides { data_dir, listen, node_id };
            let settings = match Settings::load(config.as_deref(), &overrides) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!("{e}");
                    return ExitCode::from(2);
                }
            };
            raise_open_file_limit();
            match kaas::server::run(settings) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    tracing::error!("{e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
