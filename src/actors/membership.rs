//! Membership: this broker's place in the cluster of brokers sharing the data directory. Every
//! `cluster_tick_ms` it reads which brokers are live (store::leases: those holding their broker
//! lock), tells the Directory (Metadata, DescribeCluster, FindCoordinator) and the TopicRegistry
//! (which partitions to take or hand over) and the Coordinators (which transaction shards and
//! whether the group coordinator to run). Runs on the cluster arbiter, which serves no
//! connection, so its small reads of the shared disk never block a client.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use actix::{Actor, Addr, AsyncContext, Context};

use super::coordinators::{Coordinators, PlaceCoordinators};
use super::topics::{Rebalance, TopicRegistry};
use crate::config::Settings;
use crate::store::cluster::fence::{FenceError, SelfFence};
use crate::store::leases;

/// The exit code of a fenced broker (EX_TEMPFAIL: restart it).
pub const FENCED_EXIT_CODE: i32 = 75;
use crate::store::ownership::{Broker, Ownership};

pub struct Membership {
    settings: Arc<Settings>,
    local: Broker,
    ownership: Arc<RwLock<Ownership>>,
    registry: actix::Addr<TopicRegistry>,
    coordinators: Addr<Coordinators>,
    fence: SelfFence,
}

impl Membership {
    pub fn new(
        settings: Arc<Settings>,
        local: Broker,
        ownership: Arc<RwLock<Ownership>>,
        registry: actix::Addr<TopicRegistry>,
        coordinators: Addr<Coordinators>,
        fence: SelfFence,
    ) -> Membership {
        Membership { settings, local, ownership, registry, coordinators, fence }
    }

    fn tick(&mut self) {
        // A fenced broker stops at once (store::cluster::fence): a broker took over what it
        // served while it was cut off from the disk or stalled, and it must not answer for any
        // of it again. A restart (its supervisor's) joins again as a new incarnation.
        if let Err(e @ FenceError::Fenced { .. }) = self.fence.check() {
            tracing::error!("stopping: {e}");
            std::process::exit(FENCED_EXIT_CODE);
        }
        let live = match leases::live_brokers(&self.settings.data_dir, &self.local) {
            Ok(l) => l,
            Err(e) => return tracing::warn!("reading the brokers of the cluster: {e}"),
        };
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
        self.coordinators.do_send(PlaceCoordinators { live: ids.clone() });
        self.registry.do_send(Rebalance { live: ids });
    }
}

impl Actor for Membership {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let every = Duration::from_millis(self.settings.cluster_tick_ms.max(10));
        ctx.run_interval(every, |act, _| act.tick());
    }
}
