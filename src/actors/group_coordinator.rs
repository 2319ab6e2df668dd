//! GroupCoordinator: owns every consumer group of this broker (classic protocol). Rules live in
//! `store::group_state`; this actor parks requests under tokens, drives the timers, and keeps
//! each group's snapshot (generation, committed and pending transactional offsets) in sled
//! (`<data>/__cluster/groups/`), flushed on the blocking pool before a commit is answered.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, WrapFuture};

use super::messages::*;
use crate::store::clock::now_ms;
use crate::store::coordinator_key::offsets_partition;
use crate::store::group_state::{Group, GroupConfig, GroupSnapshot, Reply as GroupReply};

pub struct GroupCoordinator {
    db: sled::Db,
    /// The sled `db` file, fdatasynced after each flush (see store::durable::flush_sled).
    db_file: std::sync::Arc<std::fs::File>,
    groups: HashMap<String, Group>,
    config: GroupConfig,
    waiting: HashMap<u64, Reply<GroupResponse>>,
    next_token: u64,
    /// Kafka's offsets.retention.check.interval.ms.
    retention_check: Duration,
}

impl GroupCoordinator {
    pub fn open(data_dir: &Path, config: GroupConfig, retention_check: Duration) -> Result<GroupCoordinator, String> {
        let path = data_dir.join("__cluster").join("groups");
        let (db, db_file) = crate::store::durable::open_sled(&path)?;
        let db_file = std::sync::Arc::new(db_file);
        let mut groups = HashMap::new();
        for item in db.iter() {
            let (k, v) = item.map_err(|e| format!("reading {}: {e}", path.display()))?;
            let id = String::from_utf8_lossy(&k).into_owned();
            let snap: GroupSnapshot =
                serde_json::from_slice(&v).map_err(|e| format!("corrupt group {id} in {}: {e}", path.display()))?;
            groups.insert(id.clone(), Group::from_snapshot(id, config.clone(), snap));
        }
        Ok(GroupCoordinator { db, db_file, groups, config, waiting: HashMap::new(), next_token: 1, retention_check })
    }

    fn group(&mut self, id: &str) -> &mut Group {
        let config = self.config.clone();
        self.groups.entry(id.to_string()).or_insert_with(|| Group::new(id, config))
    }

    /// Offset expiration: expired offsets are dropped and groups left with nothing are forgotten,
    /// so groups and offsets created by clients do not pile up forever.
    fn expire(&mut self, ctx: &mut Context<Self>) {
        let now = now_ms() as u64;
        let mut changed = Vec::new();
        for (id, g) in self.groups.iter_mut() {
            let expired = g.expire_offsets(now);
            if expired > 0 || g.is_removable() {
                changed.push((id.clone(), expired));
            }
        }
        let mut flushes = Vec::new();
        for (id, expired) in changed {
            if self.groups.get(&id).is_some_and(|g| g.is_removable()) {
                self.groups.remove(&id);
                tracing::info!(group = %id, expired, "group expired (offsets_retention_minutes)");
            }
            flushes.push(self.persist(&id));
        }
        ctx.spawn(
            async move {
                for f in flushes {
                    if let Err(e) = f.await {
                        tracing::error!("offset expiration not written: {e}");
                    }
                }
            }
            .into_actor(self),
        );
    }

    fn deliver(&mut self, replies: Vec<GroupReply>) {
        for r in replies {
            if let Some(tx) = self.waiting.remove(&r.token) {
                let _ = tx.send(r.response);
            }
        }
    }

    /// Writes the group's snapshot (in order, on this thread: sled's insert does not wait for
    /// the disk) and returns the flush to await where the answer must be durable.
    fn persist(&self, id: &str) -> impl std::future::Future<Output = Result<(), String>> + 'static {
        let written = match self.groups.get(id) {
            Some(g) => serde_json::to_vec(&g.snapshot())
                .map_err(|e| e.to_string())
                .and_then(|bytes| self.db.insert(id.as_bytes(), bytes).map(|_| ()).map_err(|e| e.to_string())),
            None => self.db.remove(id.as_bytes()).map(|_| ()).map_err(|e| e.to_string()),
        };
        let db = self.db.clone();
        let db_file = self.db_file.clone();
        async move {
            written?;
            tokio::task::spawn_blocking(move || crate::store::durable::flush_sled(&db, &db_file))
                .await
                .map_err(|e| e.to_string())?
        }
    }
}

impl Actor for GroupCoordinator {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(1024);
        ctx.run_interval(Duration::from_millis(100), |act, _| {
            let now = now_ms() as u64;
            let mut replies = Vec::new();
            for g in act.groups.values_mut() {
                if g.next_deadline().is_some_and(|d| d <= now) {
                    replies.extend(g.tick(now));
                }
            }
            act.deliver(replies);
        });
        ctx.run_interval(self.retention_check, |act, ctx| act.expire(ctx));
    }
}

impl Handler<GroupCall> for GroupCoordinator {
    type Result = ();

    fn handle(&mut self, msg: GroupCall, _: &mut Self::Context) {
        let token = self.next_token;
        self.next_token += 1;
        self.waiting.insert(token, msg.reply);
        let now = now_ms() as u64;
        // Only JoinGroup creates a group: SyncGroup, Heartbeat and LeaveGroup for an unknown
        // group are answered (UNKNOWN_MEMBER_ID, as Kafka) by a scratch group that is not kept.
        let mut scratch;
        let group = match (&msg.op, self.groups.contains_key(&msg.group_id)) {
            (GroupOp::Join(_), _) | (_, true) => self.group(&msg.group_id),
            _ => {
                scratch = Group::new(msg.group_id.clone(), self.config.clone());
                &mut scratch
            }
        };
        let replies = match msg.op {
            GroupOp::Join(req) => {
                let client_id = req.client_id.clone();
                group.join(now, token, req, || format!("{client_id}-{}", uuid::Uuid::new_v4()))
            }
            GroupOp::Sync(req) => group.sync(now, token, req),
            GroupOp::Heartbeat { generation_id, member_id, group_instance_id } => {
                group.heartbeat(now, token, generation_id, &member_id, group_instance_id.as_deref())
            }
            GroupOp::Leave(members) => group.leave(now, token, members),
        };
        self.deliver(replies);
    }
}

impl Handler<CommitOffsets> for GroupCoordinator {
    type Result = ();

    fn handle(&mut self, msg: CommitOffsets, ctx: &mut Self::Context) {
        let now = now_ms() as u64;
        let instance = msg.group_instance_id.as_deref();
        let g = self.group(&msg.group_id);
        let result = match msg.txn {
            None => g.commit_offsets(now, msg.generation_id, &msg.member_id, instance, msg.offsets),
            Some((pid, epoch)) => {
                g.txn_offset_commit(now, pid, epoch, msg.generation_id, &msg.member_id, instance, msg.offsets)
            }
        };
        if let Err(e) = result {
            let _ = msg.reply.send(Err(e));
            return;
        }
        let flush = self.persist(&msg.group_id);
        let reply = msg.reply;
        ctx.spawn(flush.into_actor(self).map(move |res, _, _| {
            let _ = reply.send(res.map_err(|e| {
                tracing::error!("group offsets not written: {e}");
                GroupError::CoordinatorNotAvailable
            }));
        }));
    }
}

impl Handler<FetchOffsets> for GroupCoordinator {
    type Result = ();

    fn handle(&mut self, msg: FetchOffsets, _: &mut Self::Context) {
        let answer = match self.groups.get(&msg.group_id) {
            Some(g) => Ok(g.fetch_offsets(msg.partitions.as_deref(), msg.require_stable)),
            // An unknown group has no offsets: every asked partition answers -1.
            None => Ok(Group::new(&msg.group_id, self.config.clone()).fetch_offsets(msg.partitions.as_deref(), false)),
        };
        let _ = msg.reply.send(answer);
    }
}

impl Handler<GroupAdmin> for GroupCoordinator {
    type Result = ();

    fn handle(&mut self, msg: GroupAdmin, ctx: &mut Self::Context) {
        let mut flushes = Vec::new();
        let answer =
            match msg.op {
                GroupAdminOp::List => GroupAdminAnswer::List(
                    self.groups
                        .iter()
                        .filter(|(_, g)| g.state() != crate::store::group_state::GroupState::Dead)
                        .map(|(id, g)| {
                            let (ptype, state) = g.list_entry();
                            (id.clone(), ptype, state.to_string())
                        })
                        .collect(),
                ),
                GroupAdminOp::Describe(ids) => GroupAdminAnswer::Describe(
                    ids.into_iter()
                        .map(|id| {
                            let d = match self.groups.get(&id) {
                                Some(g) => Ok(g.describe()),
                                // Apache Kafka describes an unknown group as Dead, without an error.
                                None => Ok(GroupDescription {
                                    state: crate::store::group_state::GroupState::Dead,
                                    protocol_type: String::new(),
                                    protocol: String::new(),
                                    members: Vec::new(),
                                }),
                            };
                            (id, d)
                        })
                        .collect(),
                ),
                GroupAdminOp::Delete(ids) => {
                    let mut out = Vec::new();
                    for id in ids {
                        let code = match self.groups.get_mut(&id) {
                            None => GroupError::GroupIdNotFound.code(),
                            Some(g) => match g.delete_group() {
                                Ok(()) => {
                                    self.groups.remove(&id);
                                    flushes.push(self.persist(&id));
                                    0
                                }
                                Err(e) => e.code(),
                            },
                        };
                        out.push((id, code));
                    }
                    GroupAdminAnswer::Delete(out)
                }
                GroupAdminOp::DeleteOffsets { group_id, partitions } => {
                    let result = match self.groups.get_mut(&group_id) {
                        None => Err(GroupError::GroupIdNotFound),
                        Some(g) => g.delete_offsets(&partitions, subscribed_topics),
                    };
                    if result.is_ok() {
                        flushes.push(self.persist(&group_id));
                    }
                    GroupAdminAnswer::DeleteOffsets(result.map(|v| {
                        v.into_iter().map(|(t, p, e)| (t, p, crate::store::group_state::error_code(e))).collect()
                    }))
                }
            };
        // Deletions are answered only once they are on disk; a failed write is not a success.
        let reply = msg.reply;
        ctx.spawn(
            async move {
                let mut written = true;
                for f in flushes {
                    if let Err(e) = f.await {
                        tracing::error!("group change not written: {e}");
                        written = false;
                    }
                }
                written
            }
            .into_actor(self)
            .map(move |written, _, _| {
                let answer = if written { answer } else { unwritten(answer) };
                let _ = reply.send(answer);
            }),
        );
    }
}

impl Handler<CompleteTxnOffsets> for GroupCoordinator {
    type Result = ();

    fn handle(&mut self, msg: CompleteTxnOffsets, ctx: &mut Self::Context) {
        let ids: Vec<String> =
            self.groups.keys().filter(|id| offsets_partition(id) == msg.offsets_partition).cloned().collect();
        let mut flushes = Vec::new();
        for id in ids {
            let changed = self.groups.get_mut(&id).is_some_and(|g| g.complete_txn(msg.producer_id, msg.commit));
            if changed {
                flushes.push(self.persist(&id));
            }
        }
        let reply = msg.reply;
        ctx.spawn(
            async move {
                for f in flushes {
                    if let Err(e) = f.await {
                        // The marker is not written: the coordinator retries it, the
                        // transaction stays in its prepare state until it is (eos-rules 50).
                        tracing::error!("transactional offsets not written: {e}");
                        return GroupError::CoordinatorNotAvailable.code();
                    }
                }
                0
            }
            .into_actor(self)
            .map(move |code, _, _| {
                let _ = reply.send(code);
            }),
        );
    }
}

/// The answer to give when the change could not be flushed: Kafka answers a failed write of
/// the group's log as COORDINATOR_NOT_AVAILABLE (the client retries).
fn unwritten(answer: GroupAdminAnswer) -> GroupAdminAnswer {
    let failed = GroupError::CoordinatorNotAvailable;
    match answer {
        GroupAdminAnswer::Delete(v) => GroupAdminAnswer::Delete(
            v.into_iter().map(|(id, code)| (id, if code == 0 { failed.code() } else { code })).collect(),
        ),
        GroupAdminAnswer::DeleteOffsets(Ok(_)) => GroupAdminAnswer::DeleteOffsets(Err(failed)),
        other => other,
    }
}

/// Topics of a consumer-protocol Subscription (int16 version, then an array of int16-length
/// strings); None when it cannot be read (then treated as subscribed to everything).
fn subscribed_topics(metadata: &[u8]) -> Option<Vec<String>> {
    let mut pos = 2usize;
    let read = |pos: &mut usize, n: usize| -> Option<&[u8]> {
        let s = metadata.get(*pos..*pos + n)?;
        *pos += n;
        Some(s)
    };
    let count = i32::from_be_bytes(read(&mut pos, 4)?.try_into().ok()?);
    if count < 0 || count as usize > metadata.len() {
        return None;
    }
    let mut topics = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let len = i16::from_be_bytes(read(&mut pos, 2)?.try_into().ok()?);
        if len < 0 {
            return None;
        }
        topics.push(String::from_utf8(read(&mut pos, len as usize)?.to_vec()).ok()?);
    }
    Some(topics)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_consumer_subscription_topics() {
        let mut m = vec![0, 1, 0, 0, 0, 2];
        for t in ["a", "bc"] {
            m.extend_from_slice(&(t.len() as i16).to_be_bytes());
            m.extend_from_slice(t.as_bytes());
        }
        m.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
        assert_eq!(subscribed_topics(&m), Some(vec!["a".to_string(), "bc".to_string()]));
        assert_eq!(subscribed_topics(&[0, 1, 0x7f, 0, 0, 0]), None);
    }
}
