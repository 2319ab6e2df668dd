//! `kaas serve`: a Kafka-compatible broker.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use kaas::config::{Overrides, Settings};
use kaas::store::topics;
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

/// Raises the soft open-file limit to the hard one (one open file per log segment) and resolves
/// `max_partitions = 0` (auto) against it; an explicit limit above what the files allow is
/// kept, with a warning (creations then fail cleanly when files run out).
fn open_file_budget(max_partitions: u32) -> u32 {
    let nofile = match kaas::limits::raise_nofile() {
        Ok((before, now)) => {
            if before != now {
                tracing::info!(from = before, to = now, "raised the open-file limit (RLIMIT_NOFILE)");
            }
            now
        }
        Err(e) => {
            let soft = kaas::limits::nofile().map(|(s, _)| s).unwrap_or(1024);
            tracing::warn!(limit = soft, "could not raise the open-file limit: {e}");
            soft
        }
    };
    let fits = topics::partitions_for_nofile(nofile);
    if max_partitions == 0 {
        let auto = topics::auto_max_partitions(nofile);
        tracing::info!(max_partitions = auto, open_file_limit = nofile, "partition limit (auto)");
        return auto;
    }
    if u64::from(max_partitions) > fits {
        tracing::warn!(
            max_partitions,
            open_file_limit = nofile,
            "max_partitions is above the {fits} partitions the open-file limit supports; raise `ulimit -n` \
             (nofile) or creations will fail when files run out"
        );
    }
    max_partitions
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
            let mut settings = match Settings::load(config.as_deref(), &overrides) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!("{e}");
                    return ExitCode::from(2);
                }
            };
            settings.max_partitions = open_file_budget(settings.max_partitions);
            if i64::from(settings.max_partitions) < i64::from(settings.num_partitions) {
                tracing::warn!(
                    max_partitions = settings.max_partitions,
                    num_partitions = settings.num_partitions,
                    "the open-file limit holds fewer partitions than one auto-created topic needs; auto-creation \
                     will be refused (raise `ulimit -n`)"
                );
            }
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
