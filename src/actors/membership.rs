//! Membership: this broker's place in the cluster of brokers sharing the data directory. Every
//! `cluster_tick_ms` it reads which brokers are live (store::leases: those holding their broker
//! lock), tells the Directory (Metadata, DescribeCluster, FindCoordinator) and the TopicRegistry
//! (which partitions to take or hand over), and runs the coordinators when it holds their lease:
//! the transaction-coordinator shards and the group coordinator move together, under one lease
//! whose epoch is the coordinator epoch. Runs on the cluster arbiter, which serves no connection,
//! so its small reads of the shared disk never block a client.

use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use actix::{Actor, ArbiterHandle, AsyncContext, Context, Recipient};

use super::directory::Directory;
use super::group_coordinator::GroupCoordinator;
use super::messages::SendPeerMarker;
use super::slot::Slot;
use super::topics::{Rebalance, TopicRegistry};
use super::txn_coordinator::{TxnCoordinator, TxnSettings};
use crate::config::Settings;
use crate::store::coordinator_key::OFFSETS_PARTITIONS;
use crate::store::group::GroupConfig;
use crate::store::leases::{self, HeldLease};
use crate::store::ownership::{Broker, Lease, Owned, Ownership};

/// The coordinators' local actors (empty while a peer runs them) and their lease.
pub struct Coordinators {
    pub txn: Arc<Vec<Slot<TxnCoordinator>>>,
    pub groups: Slot<GroupCoordinator>,
    held: Option<HeldLease>,
    arbiter: ArbiterHandle,
    settings: Arc<Settings>,
    /// Where the shards send markers for partitions peers lead.
    peers: Option<Recipient<SendPeerMarker>>,
}

impl Coordinators {
    pub fn new(
        settings: Arc<Settings>,
        arbiter: ArbiterHandle,
        peers: Option<Recipient<SendPeerMarker>>,
    ) -> Coordinators {
        let txn = Arc::new((0..settings.txn_shards).map(|_| Slot::default()).collect());
        Coordinators { txn, groups: Slot::default(), held: None, arbiter, settings, peers }
    }

    fn lease_path(&self) -> PathBuf {
        leases::coordinators_lease_path(&self.settings.data_dir)
    }

    /// Takes the coordinators when their lease is free: opens the group coordinator and every
    /// transaction shard from their sled databases (the shards re-send the markers of
    /// transactions left in a Prepare state) and grants their leases here. Otherwise records
    /// which live peer runs them. Err only when this broker took the lease and could not open
    /// them (the broker stops: a coordinator that cannot open its state must not answer).
    pub fn take_or_follow(
        &mut self,
        directory: &Directory,
        ownership: &RwLock<Ownership>,
        live: &[i32],
    ) -> Result<(), String> {
        let me = self.settings.node_id;
        if self.held.is_none() {
            match leases::try_acquire_at(&self.lease_path(), me) {
                Ok(Some(lease)) => {
                    self.open(directory)?;
                    tracing::info!(epoch = lease.record.epoch, "running the transaction and group coordinators");
                    self.held = Some(lease);
                }
                Ok(None) => {}
                Err(e) => tracing::warn!("coordinators lease: {e}"),
            }
        }
        let holder = match &self.held {
            Some(l) => Some(l.record),
            None => leases::read_lease_at(&self.lease_path()).filter(|r| r.node_id != me && live.contains(&r.node_id)),
        };
        let mut table = ownership.write().unwrap_or_else(PoisonError::into_inner);
        let shards = (0..self.txn.len()).map(|n| Owned::TxnShard(u32::try_from(n).unwrap_or(u32::MAX)));
        for what in shards.chain((0..OFFSETS_PARTITIONS).map(Owned::GroupShard)) {
            match holder {
                Some(r) => {
                    table.grant(what, Lease { node_id: r.node_id, epoch: r.epoch });
                }
                None => table.revoke(&what),
            }
        }
        Ok(())
    }

    fn open(&mut self, directory: &Directory) -> Result<(), String> {
        let s = &self.settings;
        let group_coordinator = GroupCoordinator::open(
            &s.data_dir,
            GroupConfig {
                initial_rebalance_delay_ms: s.group_initial_rebalance_delay_ms,
                offsets_retention_ms: s.offsets_retention_minutes.saturating_mul(60_000),
                ..GroupConfig::default()
            },
            Duration::from_millis(s.offsets_retention_check_interval_ms.max(10)),
        )?;
        self.groups.set(Some(GroupCoordinator::start_in_arbiter(&self.arbiter, move |_| group_coordinator)));
        let txn_settings = TxnSettings {
            max_timeout_ms: s.transaction_max_timeout_ms,
            expiration_ms: s.transactional_id_expiration_ms,
            abort_check_interval: Duration::from_millis(s.transaction_abort_check_interval_ms.max(10)),
            cluster_tv2: s.transaction_version >= 2,
        };
        for (shard, slot) in self.txn.iter().enumerate() {
            let shard = u32::try_from(shard).unwrap_or(u32::MAX);
            let c = TxnCoordinator::open(
                &s.data_dir,
                shard,
                directory.clone(),
                self.groups.clone(),
                self.peers.clone(),
                txn_settings.clone(),
            )?;
            slot.set(Some(TxnCoordinator::start_in_arbiter(&self.arbiter, move |_| c)));
        }
        Ok(())
    }
}

pub struct Membership {
    settings: Arc<Settings>,
    local: Broker,
    directory: Directory,
    ownership: Arc<RwLock<Ownership>>,
    registry: actix::Addr<TopicRegistry>,
    coordinators: Coordinators,
}

impl Membership {
    pub fn new(
        settings: Arc<Settings>,
        local: Broker,
        directory: Directory,
        ownership: Arc<RwLock<Ownership>>,
        registry: actix::Addr<TopicRegistry>,
        coordinators: Coordinators,
    ) -> Membership {
        Membership { settings, local, directory, ownership, registry, coordinators }
    }

    fn tick(&mut self) {
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
        if let Err(e) = self.coordinators.take_or_follow(&self.directory, &self.ownership, &ids) {
            // The lease is held and the state cannot be read: stop rather than serve without it.
            tracing::error!("cannot open the coordinators: {e}");
            std::process::exit(70);
        }
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
