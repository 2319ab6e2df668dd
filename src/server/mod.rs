//! Start-up and shutdown: the listener is bound first, every partition is recovered before the
//! first connection is accepted, the accept loops (`listeners`), and a clean stop on SIGTERM /
//! SIGINT; SIGHUP reads the TLS certificate again.

mod listeners;

use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use actix::{Actor, Arbiter};
use serde::{Deserialize, Serialize};
use thiserror::Error;
use tokio::net::TcpListener;

use crate::actors::cleaner::{CleanerSettings, LogCleaner};
use crate::actors::coordinators::Coordinators;
use crate::actors::directory::Directory;
use crate::actors::fence_watcher::FenceWatcher;
use crate::actors::fence_writer::FenceWriter;
use crate::actors::heartbeat::Heartbeats;
use crate::actors::membership::Membership;
use crate::actors::messages::ShutdownAll;
use crate::actors::partition::MAILBOX_CAPACITY;
use crate::actors::producer_ids::ProducerIds;
use crate::actors::supervisor::{install_panic_hook, mark_state_thread};
use crate::actors::syncer::{GroupCommit, Syncer};
use crate::actors::topics::TopicRegistry;
use crate::config::Settings;
use crate::metrics::http::{self as metrics_http, HttpLimits};
use crate::metrics::Metrics;
use crate::protocol::authorizer::Authorizer;
use crate::protocol::connection::Limits;
use crate::protocol::fetch_session::FetchSessions;
use crate::protocol::frame::RequestPool;
use crate::protocol::peer_link::{PeerLinkConfig, PeerLinks};
use crate::protocol::peer_security::PeerSecurity;
use crate::protocol::response_budget::ResponseBudget;
use crate::protocol::session::{Actors, Session};
use crate::store::auth::credentials::ScramCredentials;
use crate::store::cluster::fence::SelfFence;
use crate::store::cluster::fence_log::FenceLog;
use crate::store::cluster::liveness::Freshness;
use crate::store::durable::create_atomic;
use crate::store::leases;
use crate::store::ownership::{self, Ownership};
use crate::store::producer_ids::ProducerIdAllocator;

#[derive(Debug, Error)]
pub enum ServerError {
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Startup(String),
    #[error("cannot listen on {addr}: {source} (another broker on that port? choose one with --listen HOST:PORT)")]
    Bind { addr: String, source: std::io::Error },
}

#[derive(Serialize, Deserialize)]
struct ClusterMeta {
    cluster_id: String,
}

/// The cluster id lives with the data, so every broker sharing the disk reports the same one;
/// brokers starting together race to create it and all read the winner's. An unreadable file
/// stops the broker: a new id would make every client and peer see another cluster.
fn cluster_id(data_dir: &Path) -> Result<String, ServerError> {
    let path = data_dir.join("__cluster").join("meta.json");
    let id = uuid::Uuid::new_v4().simple().to_string()[..22].to_string();
    let bytes = serde_json::to_vec(&ClusterMeta { cluster_id: id }).map_err(|e| ServerError::Startup(e.to_string()))?;
    create_atomic(&path, &bytes)?;
    let read = std::fs::read(&path).map_err(|e| e.to_string());
    match read.and_then(|b| serde_json::from_slice::<ClusterMeta>(&b).map_err(|e| e.to_string())) {
        Ok(meta) => Ok(meta.cluster_id),
        Err(e) => Err(ServerError::Startup(format!(
            "unreadable cluster id file {}: {e}; it names this cluster, so kaas does not write a new one over \
             it: restore it (from a backup or another broker's logs) and start again",
            path.display()
        ))),
    }
}

/// Settings every broker of a cluster must share, fixed by the first broker that started on
/// the data directory (`__cluster/settings.json`).
#[derive(Serialize, Deserialize, PartialEq, Eq, Debug)]
struct SharedSettings {
    /// Which shard a transactional id belongs to depends on it (store::coordinator_key).
    txn_shards: usize,
}

/// Records the shared settings at the first start and refuses a broker configured otherwise.
fn check_shared_settings(settings: &Settings) -> Result<(), ServerError> {
    let path = settings.broker.data_dir.join("__cluster").join("settings.json");
    let mine = SharedSettings { txn_shards: settings.transactions.txn_shards };
    let bytes = serde_json::to_vec(&mine).map_err(|e| ServerError::Startup(e.to_string()))?;
    create_atomic(&path, &bytes)?;
    let read = std::fs::read(&path).map_err(|e| e.to_string());
    let stored = read
        .and_then(|b| serde_json::from_slice::<SharedSettings>(&b).map_err(|e| e.to_string()))
        .map_err(|e| ServerError::Startup(format!("unreadable {}: {e}", path.display())))?;
    if stored != mine {
        return Err(ServerError::Startup(format!(
            "txn_shards = {} here, but this cluster was created with txn_shards = {} ({}): every broker \
             sharing the data directory must map a transactional id to the same shard",
            mine.txn_shards,
            stored.txn_shards,
            path.display()
        )));
    }
    Ok(())
}

pub fn run(settings: Settings) -> Result<(), ServerError> {
    install_panic_hook();
    // Bound first, so a taken port stops the broker at once, before it touches the data
    // directory, joins a cluster or reads a partition; connections wait in the backlog until
    // recovery is done.
    let bound = listeners::bind_all(&settings)?;
    let settings = Arc::new(settings);
    crate::store::durable::create_dir_all_durable(&settings.broker.data_dir)?;
    let cluster_id: Arc<str> = cluster_id(&settings.broker.data_dir)?.into();
    let system = actix::System::new();
    system.block_on(serve(settings, cluster_id, bound))
}

/// The broker's actors without a listener: partitions (recovered), coordinators and the cluster
/// view. `serve` accepts connections into it; the fuzz harness (fuzz/) feeds frames to it.
pub struct Broker {
    pub actors: Actors,
    arbiters: Vec<Arbiter>,
    /// This broker's membership of the cluster (its broker lock); dropped when it stops.
    registration: leases::Registration,
    /// This broker's fence: a fenced broker's stop is never marked clean.
    fence: SelfFence,
    /// Held so the watcher lives as long as the broker (nothing sends it messages).
    _fence_watcher: actix::Addr<FenceWatcher>,
    /// The heartbeat thread; stops with the broker.
    _heartbeats: Option<Heartbeats>,
    /// The log cleaner's threads: told to stop first at a shutdown (a pass in flight is
    /// abandoned by its leader's stop).
    cleaner: LogCleaner,
}

impl Broker {
    /// Recovers every partition and starts the actors. Must run inside an actix System.
    pub fn start(settings: &Arc<Settings>) -> Result<Broker, ServerError> {
        crate::store::durable::create_dir_all_durable(&settings.broker.data_dir.join("__cluster"))?;
        let this_cluster: Arc<str> = cluster_id(&settings.broker.data_dir)?.into();
        check_shared_settings(settings)?;
        let mut arbiters: Vec<Arbiter> =
            (0..Settings::threads(settings.broker.partition_threads)).map(|_| Arbiter::new()).collect();
        let cluster_arbiter = Arbiter::new();
        // Producer ids and this broker's fence file: InitProducerId must not wait behind a
        // takeover, which opens partitions on the cluster arbiter (seconds on a shared disk).
        let producer_arbiter = Arbiter::new();
        let coordinator_arbiter = Arbiter::new();
        let peer_arbiter = Arbiter::new();
        // Panics where broker state lives stop the broker (see actors::supervisor); a dead peer
        // link would leave markers retried forever, so its thread counts too.
        for a in arbiters.iter().chain([&cluster_arbiter, &producer_arbiter, &coordinator_arbiter, &peer_arbiter]) {
            a.spawn_fn(mark_state_thread);
        }
        let metrics = Metrics::new();
        let metrics_arbiter = serve_metrics(settings, &metrics)?;
        if settings.log.debug_skip_fsync {
            tracing::error!("debug_skip_fsync is set: the log is never fsynced, acknowledged records can be lost on a power loss (test hook only)");
        }
        let data_dir = &settings.broker.data_dir;
        crate::store::durable::create_dir_all_durable(data_dir)
            .map_err(|e| ServerError::Startup(format!("creating {}: {e}", data_dir.display())))?;
        let started = Instant::now();
        let (host, port) = settings.advertised();
        let endpoints = settings
            .advertised_listeners()
            .into_iter()
            .map(|l| ownership::Endpoint { listener: l.name().to_string(), host: l.host, port: i32::from(l.port) })
            .collect();
        let local = ownership::Broker { node_id: settings.broker.node_id, host, port, rack: None, endpoints };
        // Joining the cluster of brokers sharing the data directory (a cluster of one, alone).
        let mut registration =
            leases::register(&settings.broker.data_dir, &local).map_err(|e| ServerError::Startup(e.to_string()))?;
        let fence = SelfFence::new(&settings.broker.data_dir, settings.broker.node_id, registration.incarnation());
        let freshness = Freshness::new(Duration::from_millis(settings.cluster.broker_session_timeout_ms));
        let heartbeats = match registration.heartbeat.take() {
            Some(writer) => {
                let every = Duration::from_millis(settings.cluster.broker_heartbeat_interval_ms);
                Some(Heartbeats::start(writer, every, freshness.clone(), fence.clone())?)
            }
            None => None,
        };
        let syncer = start_syncer(settings, &metrics, &fence);
        let cleaner = start_cleaner(settings, &metrics);
        let cleaner_handle = cleaner.clone();
        let live =
            leases::live_brokers(&settings.broker.data_dir, &local).map_err(|e| ServerError::Startup(e.to_string()))?;
        let live_ids: Vec<i32> = live.iter().map(|b| b.node_id).collect();
        let mut table = Ownership::member(local.clone());
        table.set_peers(live);
        let ownership = Arc::new(RwLock::new(table));
        let registry = TopicRegistry::load(
            settings.clone(),
            arbiters.iter().map(|a| a.handle()).collect(),
            (syncer, cleaner),
            ownership.clone(),
            live_ids.clone(),
            metrics.clone(),
            registration.previous_clean,
        )
        .map_err(ServerError::Startup)?;
        let topics = TopicRegistry::start_in_arbiter(&cluster_arbiter.handle(), move |_| registry);
        let allocator =
            ProducerIdAllocator::open(&settings.broker.data_dir, settings.broker.node_id, registration.incarnation())
                .map_err(|e| ServerError::Startup(format!("producer ids: {e}")))?;
        let id_fence = fence.clone();
        let producer_ids =
            ProducerIds::start_in_arbiter(&producer_arbiter.handle(), move |_| ProducerIds::new(allocator, id_fence));
        let fence_log = FenceLog::open(&settings.broker.data_dir, settings.broker.node_id)
            .map_err(|e| ServerError::Startup(format!("fence log: {e}")))?;
        let max_age = settings.transactions.producer_id_expiration_ms;
        let fences =
            FenceWriter::start_in_arbiter(&producer_arbiter.handle(), move |_| FenceWriter::new(fence_log, max_age));
        // eos-rules 43, 50: markers for partitions peers lead, over the wire, on their own thread.
        let security =
            PeerSecurity::from_settings(settings).map_err(|e| ServerError::Startup(format!("peer links: {e}")))?;
        let link_config = PeerLinkConfig {
            max_version: settings.transactions.write_txn_markers_max_version,
            security,
            ..PeerLinkConfig::default()
        };
        let peer_links = PeerLinks::start_in_arbiter(&peer_arbiter.handle(), move |_| PeerLinks::new(link_config));
        let peers = peer_links.clone().recipient();
        // Peers' fences reach the local leaders through the registry, never our own fence file.
        let (data_dir, node_id, registry) = (settings.broker.data_dir.clone(), settings.broker.node_id, topics.clone());
        let poll = std::time::Duration::from_millis(settings.cluster.fence_poll_interval_ms);
        let fence_watcher = FenceWatcher::start_in_arbiter(&cluster_arbiter.handle(), move |_| {
            FenceWatcher::new(data_dir, node_id, poll, registry)
        });
        let directory = Directory::new(ownership.clone(), topics.clone(), producer_ids, fences, freshness.clone());
        let mut coordinators = Coordinators::new(
            settings.clone(),
            this_cluster,
            directory.clone(),
            ownership.clone(),
            coordinator_arbiter.handle(),
            Some(peers),
            metrics.clone(),
            fence.clone(),
            registration.previous_clean,
        );
        let acls = crate::store::auth::acl_store::load(&settings.broker.data_dir)
            .map_err(|e| ServerError::Startup(format!("ACLs: {e}")))?;
        let authorizer = Authorizer::from_settings(settings, acls, metrics.clone());
        coordinators.set_acls(authorizer.as_ref().map(Authorizer::shared));
        let (_, failed) = coordinators.place(&live_ids, &[]);
        if !failed.is_empty() {
            return Err(ServerError::Startup(failed.join("; ")));
        }
        let (txn, groups) = (coordinators.txn.clone(), coordinators.groups.clone());
        let coordinators = Coordinators::start_in_arbiter(&cluster_arbiter.handle(), move |_| coordinators);
        let membership =
            Membership::new(settings.clone(), local, ownership, topics, coordinators, fence.clone(), freshness);
        Membership::start_in_arbiter(&cluster_arbiter.handle(), move |_| membership);
        tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, "recovered partitions");
        arbiters.extend([cluster_arbiter, producer_arbiter, coordinator_arbiter, peer_arbiter]);
        arbiters.extend(metrics_arbiter);
        let responses = ResponseBudget::new(settings.network.queued_max_response_bytes);
        let fetch_sessions = FetchSessions::new(settings.network.max_incremental_fetch_session_cache_slots);
        Ok(Broker {
            actors: Actors {
                directory,
                txn,
                groups,
                responses,
                fetch_sessions,
                peers: peer_links,
                metrics,
                authorizer,
            },
            arbiters,
            registration,
            fence,
            _fence_watcher: fence_watcher,
            _heartbeats: heartbeats,
            cleaner: cleaner_handle,
        })
    }

    /// The per-connection state a client's requests are dispatched with.
    pub fn session(&self, settings: &Arc<Settings>, cluster_id: &Arc<str>, peer: String) -> std::rc::Rc<Session> {
        Session::new(self.actors.clone(), settings.clone(), cluster_id.clone(), peer)
    }

    /// Flushes every partition and stops the actors' threads. Once every partition is flushed
    /// and stopped, the stop is marked clean: the next start of this node goes on with its
    /// partitions' epochs instead of sealing them (store::leases::Registration).
    pub async fn shutdown(&self) {
        self.cleaner.stop();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let stopped = self.actors.directory.topics().send(ShutdownAll { reply: tx }).await.is_ok() && rx.await.is_ok();
        // A fenced broker was taken over: its next start must not go on with its old files.
        if stopped && self.fence.check().is_ok() {
            if let Err(e) = self.registration.mark_clean_stop() {
                tracing::warn!("clean stop not recorded (the next start seals its partitions): {e}");
            }
        }
        for a in &self.arbiters {
            a.stop();
        }
    }

    /// Blocks until the stopped actors' threads are gone (their files and sled databases closed),
    /// so the data directory can be opened again. Call outside the actor system.
    pub fn join(self) {
        for a in self.arbiters {
            let _ = a.join();
        }
    }
}

async fn serve(settings: Arc<Settings>, cluster_id: Arc<str>, bound: Vec<listeners::Bound>) -> Result<(), ServerError> {
    let tls = listeners::load_tls(&settings)?;
    let scram = listeners::load_credentials(&settings)?;
    let broker = Broker::start(&settings)?;
    let conn_arbiters: Vec<Arbiter> =
        (0..Settings::threads(settings.broker.connection_threads)).map(|_| Arbiter::new()).collect();
    let limits = Limits {
        max_frame: settings.network.max_request_bytes,
        max_inflight: settings.network.max_inflight_requests,
        max_idle: Duration::from_millis(settings.network.connections_max_idle_ms),
        pool: RequestPool::new(settings.network.queued_max_request_bytes),
    };
    let acceptor = std::rc::Rc::new(listeners::Acceptor::new(
        broker.actors.clone(),
        settings.clone(),
        cluster_id.clone(),
        &conn_arbiters,
        limits,
    ));
    let mut loops = Vec::new();
    for b in bound {
        let context = Arc::new(listeners::context(&settings, &b.listener, tls.as_ref(), &scram));
        let socket = TcpListener::from_std(b.socket)?;
        tracing::info!(listener = %b.listener, "listening");
        loops.push(actix_rt::spawn(listeners::accept_loop(socket, context, acceptor.clone())));
    }
    tracing::info!(data_dir = %settings.broker.data_dir.display(), node_id = settings.broker.node_id, "kaas is serving");
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut sighup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    // Credentials and ACLs another broker changed reach this one within a tick.
    let mut credentials_tick = tokio::time::interval(SECURITY_FILES_CHECK);
    let mut security_files = SecurityFiles::default();
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => { tracing::info!("SIGINT: shutting down"); break; }
            _ = sigterm.recv() => { tracing::info!("SIGTERM: shutting down"); break; }
            _ = sighup.recv() => match &tls {
                Some(t) => match t.certificates.reload() {
                    Ok(()) => tracing::info!("SIGHUP: TLS certificate read again"),
                    Err(e) => tracing::error!("SIGHUP: the TLS certificate stays as it was: {e}"),
                },
                None => tracing::info!("SIGHUP: no TLS listener"),
            },
            _ = credentials_tick.tick() => {
                security_files.refresh(&settings, &scram, broker.actors.authorizer.as_ref()).await;
            }
        }
    }
    for l in loops {
        l.abort();
    }
    stop_serving(conn_arbiters).await;
    broker.shutdown().await;
    tracing::info!("stopped cleanly");
    Ok(())
}

/// Closes every client connection before the leaders stop, in Apache Kafka's order
/// (`BrokerServer.shutdown`: `SocketServer.stopProcessingRequests` before the coordinators, the
/// replica manager and the logs): a client then sees its connection close and goes to the
/// cluster's metadata, instead of NOT_LEADER_OR_FOLLOWER from partitions stopping one after the
/// other while metadata still names this broker. A request in flight gets no answer; nothing
/// unanswered was acknowledged. The connection threads are joined off this thread, so none is
/// still handling a request when the leaders stop.
async fn stop_serving(conn_arbiters: Vec<Arbiter>) {
    for a in &conn_arbiters {
        a.stop();
    }
    let joined = tokio::task::spawn_blocking(move || {
        for a in conn_arbiters {
            let _ = a.join();
        }
    });
    if let Err(e) = joined.await {
        tracing::warn!("connection threads did not stop: {e}");
    }
}

/// The cluster's SCRAM credentials and ACL files as this broker last read them: each tick looks
/// at their metadata (inode: they are replaced by a rename; modification time; length) and reads
/// them again when it changed, and at least every [`SECURITY_FILES_REREAD`] (a shared file
/// system may cache metadata), so that what another broker changed applies here too.
#[derive(Default)]
struct SecurityFiles {
    seen: Option<[Option<FileStamp>; 2]>,
    read_at: Option<Instant>,
}

impl SecurityFiles {
    async fn refresh(&mut self, settings: &Settings, scram: &ScramCredentials, authorizer: Option<&Authorizer>) {
        let dir = settings.broker.data_dir.clone();
        let stamp = |p: std::path::PathBuf| {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(p).ok().map(|m| (m.ino(), m.mtime(), m.mtime_nsec(), m.len()))
        };
        let stat_dir = dir.clone();
        let stat = move || {
            [
                stamp(crate::store::auth::credentials::credentials_path(&stat_dir)),
                stamp(crate::store::auth::acl_store::acls_path(&stat_dir)),
            ]
        };
        let Ok(now_seen) = tokio::task::spawn_blocking(stat).await else { return };
        let due = self.read_at.is_none_or(|t| t.elapsed() >= SECURITY_FILES_REREAD);
        if !due && self.seen == Some(now_seen) {
            return;
        }
        let read = move || (crate::store::auth::credentials::load(&dir), crate::store::auth::acl_store::load(&dir));
        let Ok((credentials, acls)) = tokio::task::spawn_blocking(read).await else { return };
        self.read_at = Some(Instant::now());
        self.seen = Some(now_seen);
        match credentials {
            Ok(map) => scram.replace(map),
            Err(e) => tracing::warn!("reading the SCRAM credentials: {e}"),
        }
        match (acls, authorizer) {
            (Ok(bindings), Some(a)) => a.replace_bindings(bindings),
            (Err(e), Some(_)) => tracing::warn!("reading the ACLs: {e}"),
            _ => {}
        }
    }
}

/// A file's inode, modification time (seconds, nanoseconds) and length.
type FileStamp = (u64, i64, i64, u64);

/// How often a broker looks whether the cluster's SCRAM credentials or ACLs changed.
const SECURITY_FILES_CHECK: Duration = Duration::from_millis(250);
/// How often it reads them again regardless.
const SECURITY_FILES_REREAD: Duration = Duration::from_secs(5);

/// The Prometheus endpoint, when `metrics_listen` is set: bound now (a bad address stops the
/// start) and served on a thread of its own (not a partition thread, nor a state thread).
fn serve_metrics(settings: &Settings, metrics: &Metrics) -> Result<Option<Arbiter>, ServerError> {
    if settings.broker.metrics_listen.is_empty() {
        return Ok(None);
    }
    let listener =
        metrics_http::bind(&settings.broker.metrics_listen).map_err(|e| ServerError::Startup(e.to_string()))?;
    let arbiter = Arbiter::new();
    let m = metrics.clone();
    arbiter.spawn_fn(move || {
        actix_rt::spawn(metrics_http::serve(listener, m, HttpLimits::default()));
    });
    tracing::info!(metrics_listen = %settings.broker.metrics_listen, "serving Prometheus metrics at /metrics");
    Ok(Some(arbiter))
}

/// The log cleaner's threads (none when `log_cleaner_enable` is off).
fn start_cleaner(settings: &Settings, metrics: &Metrics) -> LogCleaner {
    let l = &settings.log;
    let cleaner = CleanerSettings {
        enable: l.cleaner_enable,
        threads: l.cleaner_threads,
        dedupe_buffer_bytes: l.cleaner_dedupe_buffer_size,
        io_max_bytes_per_second: l.cleaner_io_max_bytes_per_second,
        backoff: Duration::from_millis(l.cleaner_backoff_ms),
    };
    LogCleaner::start(cleaner, metrics.clone())
}

/// The fsync threads; several partitions waiting at once are flushed by one syncfs where the
/// file system makes that durable (`group_commit_min_partitions`).
fn start_syncer(settings: &Settings, metrics: &Metrics, fence: &SelfFence) -> Syncer {
    let data_dir = &settings.broker.data_dir;
    let group = (settings.log.group_commit_min_partitions > 0 && crate::store::durable::syncfs_flushes(data_dir))
        .then(|| GroupCommit { dir: data_dir.clone(), min_partitions: settings.log.group_commit_min_partitions });
    tracing::debug!(group_commit_by_syncfs = group.is_some(), "fsync threads");
    Syncer::start(
        settings.log.sync_threads,
        settings.log.partition_syncs_in_flight,
        MAILBOX_CAPACITY * 4,
        settings.log.debug_skip_fsync,
        group,
        metrics.clone(),
        fence.clone(),
    )
}
