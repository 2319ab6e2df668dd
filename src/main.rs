//! `kaas serve`: a Kafka-compatible broker.

// Nothing a client or the disk controls may panic the broker: no unwrap()/expect() outside the
// tests (a poisoned lock is taken with `unwrap_or_else(PoisonError::into_inner)`).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

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
    ///
    /// Settings come from the embedded defaults, then --config FILE, then KAAS_* environment
    /// variables (KAAS_NUM_PARTITIONS=3), then these flags; docs/configuration.md lists every
    /// setting.
    /// Logging follows RUST_LOG (default info); colours only on a terminal, never with NO_COLOR.
    /// SIGTERM or SIGINT stops it cleanly. To start over, stop it and delete the data directory.
    Serve {
        /// TOML file of settings (same keys as KAAS_* without the prefix, lower case).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Directory of all data (topics, logs, coordinator state); brokers given the same
        /// directory on a shared disk form one cluster. [default: ./kaas-data]
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// Address to listen on; clients are told this one unless advertised_listener is set.
        /// [default: 127.0.0.1:9092]
        #[arg(long, value_name = "HOST:PORT")]
        listen: Option<String>,
        /// This broker's id (0..=1023), unique among the brokers sharing the data directory.
        /// [default: 0]
        #[arg(long, value_name = "N")]
        node_id: Option<i32>,
    },
}

/// Colour codes only where a person reads them: a terminal, unless NO_COLOR is set
/// (https://no-color.org); never in a file or a pipe.
fn log_colours() -> bool {
    use std::io::IsTerminal;
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
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
        .with_ansi(log_colours())
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
