//! Membership: this broker's place in the cluster of brokers sharing the data directory. Every
//! `cluster_tick_ms` it reads which brokers are live (store::cluster::liveness: those holding
//! their broker lock whose heartbeat moved within `broker_session_timeout_ms`), tells the Directory (Metadata, DescribeCluster, FindCoordinator) and the TopicRegistry
//! (which partitions to take or hand over) and the Coordinators (which transaction shards and
//! whether the group coordinator to run). Runs on the cluster arbiter, which serves no
//! connection, so its small reads of the shared disk never block a client.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use actix::{Actor, Addr, AsyncContext, Context};

use super::coordinators::{Coordinators, PlaceCoordinators};
use super::topics::{Rebalance, TopicRegistry};
use crate::config::{Settings, WhenFenced};
use crate::store::cluster::fence::{FenceError, SelfFence};
use crate::store::cluster::liveness::{Freshness, Liveness};
use crate::store::leases;
use crate::store::ownership::{Broker, Ownership};

/// The exit code of a fenced broker (EX_TEMPFAIL: restart it).
pub const FENCED_EXIT_CODE: i32 = 75;

/// Starts this broker again in place: the same command line and environment in a new process
/// image (execve), so nothing of the fenced incarnation survives (no partition, coordinator,
/// cached state or connection; every descriptor is close-on-exec, so its locks go too) and the
/// new one registers as any restarted broker does. Returns only if the exec failed.
fn rejoin() {
    use std::os::unix::process::CommandExt;
    let mut args = std::env::args_os();
    let argv0 = args.next().unwrap_or_else(|| "kaas".into());
    tracing::warn!("rejoining the cluster as a new incarnation (when_fenced = rejoin)");
    // /proc/self/exe: this binary even if its path was replaced or removed meanwhile.
    let error = std::process::Command::new("/proc/self/exe").arg0(argv0).args(args).exec();
    tracing::error!("could not start again ({error}); exiting for a supervisor to restart it");
}

pub struct Membership {
    settings: Arc<Settings>,
    local: Broker,
    ownership: Arc<RwLock<Ownership>>,
    registry: actix::Addr<TopicRegistry>,
    coordinators: Addr<Coordinators>,
    fence: SelfFence,
    freshness: Freshness,
    liveness: Liveness,
    /// This broker's own lease was stale at the last tick (logged once per stale spell).
    stale: bool,
    /// When the last tick began.
    last_tick: Option<Instant>,
}

impl Membership {
    pub fn new(
        settings: Arc<Settings>,
        local: Broker,
        ownership: Arc<RwLock<Ownership>>,
        registry: actix::Addr<TopicRegistry>,
        coordinators: Addr<Coordinators>,
        fence: SelfFence,
        freshness: Freshness,
    ) -> Membership {
        let liveness = Liveness::new(Duration::from_millis(settings.cluster.broker_session_timeout_ms));
        Membership {
            settings,
            local,
            ownership,
            registry,
            coordinators,
            fence,
            freshness,
            liveness,
            stale: false,
            last_tick: None,
        }
    }

    /// A fenced broker stops at once (store::cluster::fence): a broker took over what it
    /// served while it was cut off from the disk or stalled, and it must not answer for any of
    /// it again. It then joins again as a new incarnation: in place (`when_fenced = rejoin`)
    /// or by its supervisor's restart (`exit`).
    fn stop_if_fenced(&self) {
        if let Err(e @ FenceError::Fenced { .. }) = self.fence.check() {
            tracing::error!("stopping: {e}");
            if self.settings.cluster.when_fenced == WhenFenced::Rejoin {
                rejoin();
            }
            std::process::exit(FENCED_EXIT_CODE);
        }
    }

    fn tick(&mut self) {
        self.stop_if_fenced();
        let timeout = Duration::from_millis(self.settings.cluster.broker_session_timeout_ms);
        let started = Instant::now();
        if let Some(gap) = self.last_tick.replace(started).map(|t| started.saturating_duration_since(t)) {
            if gap > timeout / 2 {
                // This broker itself did not run (a stall): its peers may have fenced it, and
                // what it last saw of them is old. It looks again before it acts on anything.
                return tracing::warn!(gap_ms = gap.as_millis() as u64, "this broker did not run for a while");
            }
        }
        // The instant of judging is taken before the reading: a stall in between then makes
        // the peers look fresher, never expired (store::cluster::liveness).
        let now = Instant::now();
        let peers = match leases::peers(&self.settings.broker.data_dir, self.local.node_id) {
            Ok(p) => p,
            Err(e) => return tracing::warn!("reading the brokers of the cluster: {e}"),
        };
        let mut live = vec![self.local.clone()];
        for p in peers {
            if self.liveness.observe(p.broker.node_id, p.lock_held, p.heartbeat, now) {
                live.push(p.broker);
            }
        }
        live.sort_by_key(|b| b.node_id);
        self.freshness.set_alone(live.len() == 1);
        // A broker that cannot prove its own lease fresh takes nothing: its peers may be taking
        // what it leads right now (and fence it when they do).
        if !self.freshness.lease_fresh() && live.len() > 1 {
            if !std::mem::replace(&mut self.stale, true) {
                tracing::warn!(
                    "this broker's lease is not fresh (no heartbeat renewed within two thirds of \
                     broker_session_timeout_ms): answering for nothing it leads until it renews"
                );
            }
            return;
        }
        if std::mem::take(&mut self.stale) {
            tracing::info!("this broker's lease is fresh again");
        }
        // Taken over while it read (it stalled in between)? Then it must not take anything.
        self.stop_if_fenced();
        let ids: Vec<i32> = live.iter().map(|b| b.node_id).collect();
        let changed = {
            let mut table = self.ownership.write().unwrap_or_else(PoisonError::into_inner);
            let before: Vec<i32> = table.brokers().map(|b| b.node_id).collect();
            table.set_peers(live);
            before != ids
        };
        if changed {
            tracing::info!(brokers = ?ids, "cluster membership changed");
        }
        let expired = self.liveness.expired();
        self.coordinators.do_send(PlaceCoordinators { live: ids.clone(), expired: expired.clone() });
        self.registry.do_send(Rebalance { live: ids, expired });
    }
}

impl Actor for Membership {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let every = Duration::from_millis(self.settings.cluster.cluster_tick_ms.max(10));
        ctx.run_interval(every, |act, _| act.tick());
    }
}
