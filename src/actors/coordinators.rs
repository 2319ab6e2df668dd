//! Coordinators: which of the cluster's coordinator units (store::placement::CoordinatorUnit:
//! each transaction shard, and the group coordinator) this broker runs. Every membership tick
//! (`PlaceCoordinators`) it takes the units placement gives it, when their lease is free, and
//! opens them from their sled databases (a transaction shard re-sends the markers of the
//! transactions it finds in a Prepare state); it hands over the units placement gives a live
//! peer: new calls are refused at once, the writes under way finish and are flushed, the actor
//! stops and only then is the lease let go. The others are recorded as served by their lease
//! holder. Runs on the cluster arbiter, which serves no connection.

use crate::store::auth::acl::SharedAcls;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use actix::{
    Actor, ActorFutureExt, Addr, ArbiterHandle, AsyncContext, Context, Handler, Message, Recipient, WrapFuture,
};

use super::directory::Directory;
use super::group_coordinator::GroupCoordinator;
use super::local_actor::LocalActor;
use super::messages::{HandOver, SendPeerMarker};
use super::txn_coordinator::{TxnCoordinator, TxnSettings};
use crate::config::Settings;
use crate::metrics::Metrics;
use crate::store::cluster::fence::SelfFence;
use crate::store::coordinator_key::OFFSETS_PARTITIONS;
use crate::store::group::consumer::TopicInfo;
use crate::store::group::GroupConfig;
use crate::store::leases::{self, HeldLease};
use crate::store::ownership::{Lease, Ownership};
use crate::store::placement::CoordinatorUnit;
use crate::store::topics::{internal_partitions, internal_topic_id, INTERNAL_TOPICS};

/// The membership tick: the live brokers' node ids (this one included).
#[derive(Message)]
#[rtype(result = "()")]
pub struct PlaceCoordinators {
    pub live: Vec<i32>,
    /// Peers whose heartbeat expired, with the incarnation seen (store::leases::Expired).
    pub expired: Vec<(i32, u64)>,
}

/// The coordinators' local actors (each cell empty while a peer, or nobody, runs it).
pub struct Coordinators {
    pub txn: Arc<Vec<LocalActor<TxnCoordinator>>>,
    pub groups: LocalActor<GroupCoordinator>,
    held: HashMap<CoordinatorUnit, HeldLease>,
    /// Units being handed over: their actor is finishing; the lease goes once it has stopped.
    releasing: HashSet<CoordinatorUnit>,
    directory: Directory,
    ownership: Arc<RwLock<Ownership>>,
    arbiter: ArbiterHandle,
    settings: Arc<Settings>,
    /// The cluster's id (the internal topics' ids derive from it).
    cluster_id: Arc<str>,
    /// Where the shards send markers for partitions peers lead.
    peers: Option<Recipient<SendPeerMarker>>,
    /// kaas_coordinator_shards_owned, and what the shards count into.
    metrics: Metrics,
    /// This broker's fence, checked by its coordinators after each flush (store::cluster::fence).
    fence: SelfFence,
    /// This node's previous process stopped cleanly: the units it ran keep their epochs and
    /// databases; else they are taken at new epochs, from copies (store::cluster::state_dir).
    keep_own: bool,
    /// The cluster's ACLs when the authorizer is on, for the group coordinator.
    acls: Option<SharedAcls>,
}

impl Coordinators {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        settings: Arc<Settings>,
        cluster_id: Arc<str>,
        directory: Directory,
        ownership: Arc<RwLock<Ownership>>,
        arbiter: ArbiterHandle,
        peers: Option<Recipient<SendPeerMarker>>,
        metrics: Metrics,
        fence: SelfFence,
        keep_own: bool,
    ) -> Coordinators {
        let txn = Arc::new((0..settings.transactions.txn_shards).map(|_| LocalActor::default()).collect());
        Coordinators {
            txn,
            groups: LocalActor::default(),
            held: HashMap::new(),
            releasing: HashSet::new(),
            directory,
            ownership,
            arbiter,
            settings,
            cluster_id,
            peers,
            metrics,
            fence,
            keep_own,
            acls: None,
        }
    }

    /// The ACLs the group coordinator resolves regex subscriptions with (the authorizer on).
    pub fn set_acls(&mut self, acls: Option<SharedAcls>) {
        self.acls = acls;
    }

    /// Publishes which units this broker holds (those being handed over until they stopped).
    fn report(&self) {
        let txn = self.held.keys().filter(|u| matches!(u, CoordinatorUnit::Txn(_))).count();
        self.metrics.set_coordinators(txn, self.held.contains_key(&CoordinatorUnit::Groups));
    }

    fn units(&self) -> Vec<CoordinatorUnit> {
        CoordinatorUnit::all(u32::try_from(self.txn.len()).unwrap_or(u32::MAX))
    }

    /// Takes what placement gives this broker (when free) and records who runs the rest;
    /// returns the units to hand over to the live peer placement now gives them to, and why
    /// units it took could not be opened. Also run once at start-up, before the listener opens,
    /// so a single broker answers at once (and does not start without its coordinators).
    pub fn place(&mut self, live: &[i32], expired: &leases::Expired) -> (Vec<CoordinatorUnit>, Vec<String>) {
        let me = self.settings.broker.node_id;
        let mut handing_over = Vec::new();
        let mut failed = Vec::new();
        for unit in self.units() {
            if self.releasing.contains(&unit) {
                continue;
            }
            let desired = unit.desired_owner(live);
            if let Some(lease) = self.held.get(&unit) {
                if desired.is_some_and(|d| d != me) {
                    self.table_revoke(unit);
                    handing_over.push(unit);
                } else {
                    self.table_grant(unit, lease.record.node_id, lease.record.epoch);
                }
                continue;
            }
            if desired == Some(me) {
                match self.take(unit, expired) {
                    Ok(true) => continue,
                    Ok(false) => {}
                    Err(e) => failed.push(e),
                }
            }
            let path = leases::unit_lease_path(&self.settings.broker.data_dir, unit);
            let newest = leases::read_lease_at(&path);
            match leases::release_previous_process(&path, newest, me, &self.fence) {
                Ok(true) => tracing::info!(?unit, "handed over a coordinator this node's previous process ran"),
                Ok(false) => {}
                Err(e) => tracing::warn!(?unit, "coordinator lease: {e}"),
            }
            match newest.filter(|r| r.node_id != me && live.contains(&r.node_id)) {
                Some(r) => self.table_grant(unit, r.node_id, r.epoch),
                None => self.table_revoke(unit),
            }
        }
        self.report();
        (handing_over, failed)
    }

    /// Takes `unit`'s lease when it is free and opens it; false when a peer holds it. Err when
    /// it cannot be opened (a coordinator that cannot read its state must not answer): the
    /// lease is let go and the next tick tries again.
    fn take(&mut self, unit: CoordinatorUnit, expired: &leases::Expired) -> Result<bool, String> {
        let (dir, me) = (&self.settings.broker.data_dir, self.settings.broker.node_id);
        let path = leases::unit_lease_path(dir, unit);
        let lease =
            match leases::try_acquire_from(dir, &path, me, leases::unit_first_epoch(dir), self.keep_own, expired) {
                Ok(Some(lease)) => lease,
                Ok(None) => return Ok(false),
                Err(e) => {
                    tracing::warn!(?unit, "coordinator lease: {e}");
                    return Ok(false);
                }
            };
        if let Some(prev) = lease.unreleased_predecessor {
            tracing::warn!(
                ?unit,
                node = prev.node_id,
                "fenced the coordinator's previous owner (it did not hand it over)"
            );
        }
        self.open(unit, lease.record.epoch).map_err(|e| format!("cannot open the coordinator {unit:?}: {e}"))?;
        tracing::info!(?unit, epoch = lease.record.epoch, "running the coordinator");
        self.table_grant(unit, me, lease.record.epoch);
        self.held.insert(unit, lease);
        Ok(true)
    }

    fn open(&mut self, unit: CoordinatorUnit, epoch: i32) -> Result<(), String> {
        let s = &self.settings;
        match unit {
            CoordinatorUnit::Groups => {
                let config = GroupConfig {
                    initial_rebalance_delay_ms: s.groups.group_initial_rebalance_delay_ms,
                    offsets_retention_ms: s.groups.offsets_retention_minutes.saturating_mul(60_000),
                    consumer: s.consumer_group_config(),
                    migration_policy: s.migration_policy().unwrap_or_default(),
                    producer_id_expiration_ms: s.transactions.producer_id_expiration_ms,
                    acls: self.acls.clone(),
                    ..GroupConfig::default()
                };
                let retention_check = Duration::from_millis(s.groups.offsets_retention_check_interval_ms.max(10));
                let topics = Some(self.directory.topics().clone().recipient());
                // Kafka's server-side regexes match internal topics too (TopicRegexResolver).
                let internal = INTERNAL_TOPICS
                    .iter()
                    .filter_map(|n| {
                        let partitions = internal_partitions(n, s.transactions.txn_shards)?;
                        Some((n.to_string(), TopicInfo { id: internal_topic_id(&self.cluster_id, n), partitions }))
                    })
                    .collect();
                let fence = self.fence.clone();
                let g = GroupCoordinator::open(
                    &s.broker.data_dir,
                    config,
                    retention_check,
                    topics,
                    internal,
                    fence,
                    epoch,
                )?;
                self.groups.set(Some(GroupCoordinator::start_in_arbiter(&self.arbiter, move |_| g)));
            }
            CoordinatorUnit::Txn(shard) => {
                let txn_settings = TxnSettings {
                    max_timeout_ms: s.transactions.transaction_max_timeout_ms,
                    expiration_ms: s.transactions.transactional_id_expiration_ms,
                    abort_check_interval: Duration::from_millis(
                        s.transactions.transaction_abort_check_interval_ms.max(10),
                    ),
                    cluster_tv2: s.transactions.transaction_version >= 2,
                    fence: self.fence.clone(),
                    epoch,
                };
                let Some(cell) = usize::try_from(shard).ok().and_then(|i| self.txn.get(i)) else {
                    return Err(format!("no transaction shard {shard}"));
                };
                let c = TxnCoordinator::open(
                    &s.broker.data_dir,
                    shard,
                    self.directory.clone(),
                    self.groups.clone(),
                    self.peers.clone(),
                    txn_settings,
                    self.metrics.clone(),
                )?;
                cell.set(Some(TxnCoordinator::start_in_arbiter(&self.arbiter, move |_| c)));
            }
        }
        Ok(())
    }

    fn table_grant(&self, unit: CoordinatorUnit, node_id: i32, epoch: i32) {
        let mut table = self.ownership.write().unwrap_or_else(PoisonError::into_inner);
        for what in unit.owned(OFFSETS_PARTITIONS) {
            table.grant(what, Lease { node_id, epoch });
        }
    }

    fn table_revoke(&self, unit: CoordinatorUnit) {
        let mut table = self.ownership.write().unwrap_or_else(PoisonError::into_inner);
        for what in unit.owned(OFFSETS_PARTITIONS) {
            table.revoke(&what);
        }
    }

    /// Empties the unit's cell (new calls see NOT_COORDINATOR) and returns the actor's answer
    /// to HandOver, which comes once its writes are flushed and it has stopped taking calls.
    fn stop(&mut self, unit: CoordinatorUnit) -> impl std::future::Future<Output = ()> + 'static {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let sent = match unit {
            CoordinatorUnit::Groups => self.groups.set(None).map(|a| a.do_send(HandOver { reply: tx })),
            CoordinatorUnit::Txn(n) => usize::try_from(n)
                .ok()
                .and_then(|i| self.txn.get(i))
                .and_then(|cell| cell.set(None))
                .map(|a: Addr<TxnCoordinator>| a.do_send(HandOver { reply: tx })),
        };
        async move {
            if sent.is_some() {
                let _ = rx.await;
            }
        }
    }
}

impl Actor for Coordinators {
    type Context = Context<Self>;
}

impl Handler<PlaceCoordinators> for Coordinators {
    type Result = ();

    fn handle(&mut self, msg: PlaceCoordinators, ctx: &mut Context<Self>) {
        let (handing_over, failed) = self.place(&msg.live, &msg.expired);
        for e in failed {
            tracing::error!("{e}");
        }
        for unit in handing_over {
            self.releasing.insert(unit);
            let stopped = self.stop(unit);
            ctx.spawn(stopped.into_actor(self).map(move |_, act, _| {
                // The actor has flushed and stopped: now the next owner may open its database.
                if let Some(lease) = act.held.remove(&unit) {
                    // Released, so the next owner need not fence this broker.
                    if let Err(e) = lease.release(&act.fence) {
                        tracing::warn!(?unit, "release mark not written: {e}");
                    }
                }
                act.releasing.remove(&unit);
                act.report();
                tracing::info!(?unit, "coordinator handed over to its peer");
            }));
        }
    }
}
