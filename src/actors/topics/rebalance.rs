//! The membership tick on the topics (`Rebalance`): new and deleted topics from the disk, then
//! each partition taken when this broker should lead it and it is free (store::leases), learnt
//! from its lease file when another broker leads it, or handed over when a live peer should.

use std::collections::HashMap;

use actix::{ActorFutureExt, Addr, Handler, ResponseActFuture, WrapFuture};

use super::{open_logs, stop_all, Acquired, HandingOver, Rebalance, TopicRegistry};
use crate::actors::partition::PartitionLeader;
use crate::store::leases;
use crate::store::ownership::{Lease, Owned};
use crate::store::placement;
use crate::store::topics;

impl TopicRegistry {
    /// Takes the partitions this broker should lead and are free, learns who leads the others,
    /// and hands over those a live peer should lead.
    pub(super) fn claim_and_release(&mut self) -> Vec<((String, i32), Addr<PartitionLeader>)> {
        let mut handing_over = Vec::new();
        let mut acquired = Vec::new();
        let names: Vec<String> = self.topics.keys().cloned().collect();
        for name in names {
            self.claim_topic(&name, Some(&mut handing_over), &mut acquired);
        }
        self.start_acquired(acquired);
        handing_over
    }

    /// Opens the partitions whose leases were just taken (recovery, on several threads when
    /// there are many) and starts their leaders.
    pub(super) fn start_acquired(&mut self, acquired: Vec<Acquired>) {
        Self::log_fenced(&acquired);
        let mut offline: HashMap<String, u64> = HashMap::new();
        for (a, opened) in open_logs(&self.settings.broker.data_dir, acquired, true).into_iter().flatten() {
            if self.start_partition(&a.topic, a.partition, &a.log_config, a.lease, opened) {
                *offline.entry(a.topic.meta.name.clone()).or_default() += 1;
            }
        }
        for (topic, offline) in offline {
            tracing::error!(
                topic = %topic,
                offline,
                "partitions served offline (KAFKA_STORAGE_ERROR): they did not open; a restart opens them once \
                 the cause (see above) is gone"
            );
        }
    }

    /// `claim_and_release` of one topic; the leaders to hand over are added to `handing_over`
    /// (None: nothing is handed over, only taken).
    pub(super) fn claim_topic(
        &mut self,
        name: &str,
        mut handing_over: Option<&mut HandingOver>,
        acquired: &mut Vec<Acquired>,
    ) {
        let me = self.local_node();
        let name = name.to_string();
        {
            let Some(h) = self.topics.get(&name).cloned() else { return };
            let log_config = self.log_config(&h.meta);
            for p in 0..h.meta.partitions {
                let what = Owned::Partition { topic: name.clone(), partition: p };
                let key = (name.clone(), p);
                let desired = placement::leader_of(&h.meta, p, &self.live);
                let held = self.held.contains_key(&key);
                if held && desired != Some(me) && !self.releasing.contains(&key) {
                    let Some(handing_over) = handing_over.as_deref_mut() else { continue };
                    // New requests see NOT_LEADER_OR_FOLLOWER at once; what is queued on the
                    // leader is still written and flushed before its lease is let go.
                    let slot = usize::try_from(p).ok().and_then(|i| h.partitions.get(i));
                    if let Some(leader) = slot.and_then(|s| s.set(None)) {
                        self.table_mut().revoke(&what);
                        self.releasing.insert(key.clone());
                        handing_over.push((key, leader));
                    }
                    continue;
                }
                if held {
                    continue;
                }
                if desired == Some(me) {
                    match leases::try_acquire(
                        &self.settings.broker.data_dir,
                        &leases::partition_lease_path(&self.settings.broker.data_dir, &h.meta, p),
                        me,
                        leases::first_lease(&h.meta, p),
                        self.keep_own,
                        &self.expired,
                    ) {
                        Ok(Some(lease)) => {
                            let log_config = log_config.clone();
                            acquired.push(Acquired { topic: h.clone(), partition: p, log_config, lease });
                            continue;
                        }
                        Ok(None) => {}
                        Err(e) => tracing::warn!(partition = %format!("{name}-{p}"), "lease: {e}"),
                    }
                }
                // Led elsewhere (or not yet): the lease file says by whom.
                let path = leases::partition_lease_path(&self.settings.broker.data_dir, &h.meta, p);
                let record = leases::read_lease(&path, leases::first_lease(&h.meta, p));
                if !self.releasing.contains(&key) {
                    match leases::release_previous_process(&path, record, me, &self.syncer.fence()) {
                        Ok(true) => tracing::info!(
                            partition = %format!("{name}-{p}"),
                            "handed over a partition this node's previous process held"
                        ),
                        Ok(false) => {}
                        Err(e) => tracing::warn!(partition = %format!("{name}-{p}"), "lease: {e}"),
                    }
                }
                let mut table = self.table_mut();
                match record {
                    Some(r) if r.node_id != me && self.live.contains(&r.node_id) => {
                        table.grant(what, Lease { node_id: r.node_id, epoch: r.epoch });
                    }
                    _ => table.revoke(&what),
                }
            }
        }
    }
}

impl Handler<Rebalance> for TopicRegistry {
    type Result = ResponseActFuture<Self, ()>;

    /// One membership tick: new and deleted topics from the disk, then claims and hand-overs.
    /// A partition handed over is flushed and stopped before its lease is let go, so its new
    /// leader starts from everything this one acknowledged.
    fn handle(&mut self, msg: Rebalance, _: &mut Self::Context) -> Self::Result {
        self.live = msg.live;
        self.expired = msg.expired;
        let deleted = self.refresh_topics().unwrap_or_else(|e| {
            tracing::warn!("reading the topic files: {e}");
            Vec::new()
        });
        let data_dir = self.settings.broker.data_dir.clone();
        let (keys, leaving): (Vec<_>, Vec<_>) = self.claim_and_release().into_iter().unzip();
        let work = async move {
            let mut cleared = Vec::new();
            for (name, id, running) in deleted {
                let parts: Vec<i32> = running.iter().map(|(p, _)| *p).collect();
                stop_all(running.into_iter().map(|(_, l)| l).collect()).await;
                // This broker's share of a topic a peer deleted, once its leaders stopped.
                if let Err(e) = leases::remove_partition_leases(&data_dir, &name, id, &parts) {
                    tracing::warn!(topic = %name, "removing the lease files of a deleted topic: {e}");
                }
                if let Err(e) = topics::remove_partitions(&data_dir, &name, id, &parts) {
                    tracing::warn!(topic = %name, "removing the partitions of a deleted topic: {e}");
                }
                cleared.push(name);
            }
            stop_all(leaving).await;
            cleared
        };
        Box::pin(work.into_actor(self).map(move |cleared, act, _| {
            for name in cleared {
                act.deleting.remove(&name);
                act.metrics.remove_topic(&name);
            }
            for key in keys {
                act.releasing.remove(&key);
                if let Some(lease) = act.held.remove(&key) {
                    // Released, so the next leader need not fence this broker.
                    if let Err(e) = lease.release(&act.syncer.fence()) {
                        tracing::warn!(partition = %format!("{}-{}", key.0, key.1), "release mark not written: {e}");
                    }
                }
                tracing::info!(partition = %format!("{}-{}", key.0, key.1), "handed over to its peer");
            }
        }))
    }
}
