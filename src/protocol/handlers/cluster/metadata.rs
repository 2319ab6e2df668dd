//! Metadata (key 3): brokers, topics (auto-created on request), partition leaders, all as the
//! directory knows them.

use std::rc::Rc;

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};

use crate::actors::messages::ListTopics;
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::coordinator_key::OFFSETS_PARTITIONS;
use crate::store::ownership::Owned;
use crate::store::topics::{internal_topic_id, validate_name, TopicMeta, INTERNAL_TOPICS};
use crate::store::txn::CONSUMER_OFFSETS_TOPIC;
use uuid::Uuid;

/// Kafka's transaction-state topic (store::topics::INTERNAL_TOPICS).
const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";

pub(super) fn topic_entry(s: &Session, version: i16, meta: &TopicMeta) -> MetadataResponseTopic {
    let name = meta.name.clone();
    let owned = |p| Owned::Partition { topic: name.clone(), partition: p };
    partitions_entry(s, &meta.name, meta.id, version, meta.partitions, owned)
}

/// Kafka's internal topics as kaas serves what they stand for (store::topics::INTERNAL_TOPICS):
/// `__consumer_offsets` has Kafka's 50 partitions, each led by the broker running its group
/// coordinator; `__transaction_state` has one partition per transaction-coordinator shard, led
/// by the shard's owner. IsInternal is set, so clients skip them in pattern subscriptions.
pub(super) fn internal_entry(s: &Session, version: i16, name: &str) -> Option<MetadataResponseTopic> {
    let mut t = match name {
        CONSUMER_OFFSETS_TOPIC => partitions_entry(
            s,
            name,
            internal_topic_id(&s.cluster_id, name),
            version,
            OFFSETS_PARTITIONS,
            Owned::GroupShard,
        ),
        TRANSACTION_STATE_TOPIC => {
            let shards = i32::try_from(s.settings.transactions.txn_shards).unwrap_or(i32::MAX);
            let owned = |p: i32| Owned::TxnShard(p.unsigned_abs());
            partitions_entry(s, name, internal_topic_id(&s.cluster_id, name), version, shards, owned)
        }
        _ => return None,
    };
    t.is_internal = true;
    Some(t)
}

fn partitions_entry(
    s: &Session,
    name: &str,
    id: Uuid,
    version: i16,
    partitions: i32,
    owned: impl Fn(i32) -> Owned,
) -> MetadataResponseTopic {
    let table = s.directory.ownership();
    let mut t = MetadataResponseTopic::default();
    t.name = Some(TopicName(str_bytes(name)));
    if version >= 10 {
        t.topic_id = id;
    }
    t.partitions = (0..partitions)
        .map(|p| {
            let mut e = MetadataResponsePartition::default();
            e.partition_index = p;
            let what = owned(p);
            match (table.lease(&what), table.owner(&what)) {
                (Some(lease), Some(leader)) => {
                    // One copy on the shared disk: the leader is the only replica and the ISR.
                    e.leader_id = BrokerId(leader.node_id);
                    e.leader_epoch = lease.epoch;
                    e.replica_nodes = vec![BrokerId(leader.node_id)];
                    e.isr_nodes = vec![BrokerId(leader.node_id)];
                }
                _ => {
                    e.error_code = ResponseError::LeaderNotAvailable.code();
                    e.leader_id = BrokerId(-1);
                    e.leader_epoch = -1;
                }
            }
            e
        })
        .collect();
    t
}

fn error_entry(name: Option<&str>, code: i16) -> MetadataResponseTopic {
    let mut t = MetadataResponseTopic::default();
    t.name = name.map(|n| TopicName(str_bytes(n)));
    t.error_code = code;
    t
}

pub async fn handle(s: Rc<Session>, version: i16, req: MetadataRequest) -> MetadataResponse {
    let with_topic_ops = version >= 8 && req.include_topic_authorized_operations;
    let with_cluster_ops = (8..=10).contains(&version) && req.include_cluster_authorized_operations;
    let mut r = answer(s.clone(), version, req).await;
    // Asked for (v8+): what this client may do on each topic listed, and (v8-10) on the cluster.
    if with_topic_ops {
        for t in r.topics.iter_mut().filter(|t| t.error_code != ResponseError::TopicAuthorizationFailed.code()) {
            if let Some(name) = &t.name {
                t.topic_authorized_operations =
                    s.authorized_operations(&acl::TOPIC_OPERATIONS, acl::RESOURCE_TOPIC, name.as_str());
            }
        }
    }
    // Kafka: 0 for a client that may not DESCRIBE the cluster.
    if with_cluster_ops {
        r.cluster_authorized_operations = if s.authorized_cluster(acl::OP_DESCRIBE) {
            s.authorized_operations(&acl::CLUSTER_OPERATIONS, acl::RESOURCE_CLUSTER, acl::CLUSTER_NAME)
        } else {
            0
        };
    }
    r
}

async fn answer(s: Rc<Session>, version: i16, req: MetadataRequest) -> MetadataResponse {
    let mut r = MetadataResponse::default();
    {
        let table = s.directory.ownership();
        // The brokers' addresses on the listener this client came in on.
        let listener = s.listener.get().name();
        r.brokers = table
            .brokers()
            .filter_map(|b| {
                let (host, port) = b.address(listener)?;
                let mut broker = MetadataResponseBroker::default();
                broker.node_id = BrokerId(b.node_id);
                broker.host = str_bytes(host);
                broker.port = port;
                broker.rack = b.rack.as_deref().map(str_bytes);
                Some(broker)
            })
            .collect();
        r.controller_id = BrokerId(table.controller());
    }
    r.cluster_id = Some(str_bytes(&s.cluster_id));
    // v0: an empty list means every topic; v1+: null means every topic.
    let all = match &req.topics {
        None => true,
        Some(t) => version == 0 && t.is_empty(),
    };
    // Only the topics the client may describe are listed; one it names is
    // TOPIC_AUTHORIZATION_FAILED (Kafka's handleTopicMetadataRequest).
    let describable = |name: &str| s.authorized(acl::OP_DESCRIBE, acl::RESOURCE_TOPIC, name);
    if all {
        let metas = s.directory.topics().send(ListTopics).await.unwrap_or_default();
        r.topics = metas.iter().filter(|m| describable(&m.name)).map(|m| topic_entry(&s, version, m)).collect();
        r.topics
            .extend(INTERNAL_TOPICS.iter().filter(|n| describable(n)).filter_map(|n| internal_entry(&s, version, n)));
        return r;
    }
    // Before v4 there is no flag and Kafka auto-creates; with an authorizer, only for a client
    // that may CREATE on the cluster or the topic.
    let asked = version < 4 || req.allow_auto_topic_creation;
    let may_create = |name: &str| {
        asked && (s.authorized_cluster(acl::OP_CREATE) || s.authorized(acl::OP_CREATE, acl::RESOURCE_TOPIC, name))
    };
    // v10+: topics asked by id (librdkafka resolves KIP-848 assignments this way; the Java
    // client sends an empty name beside the id, which Kafka ignores once an id is set).
    let mut by_id: Option<Vec<TopicMeta>> = None;
    for t in req.topics.unwrap_or_default() {
        let Some(name) = t.name.filter(|n| t.topic_id.is_nil() || !n.is_empty()) else {
            if by_id.is_none() && !t.topic_id.is_nil() {
                by_id = Some(s.directory.topics().send(ListTopics).await.unwrap_or_default());
            }
            let internal = INTERNAL_TOPICS.iter().find(|n| internal_topic_id(&s.cluster_id, n) == t.topic_id);
            if let Some(entry) = internal.filter(|n| describable(n)).and_then(|n| internal_entry(&s, version, n)) {
                r.topics.push(entry);
                continue;
            }
            match by_id.iter().flatten().find(|m| m.id == t.topic_id && !t.topic_id.is_nil()) {
                Some(m) if !describable(&m.name) => {
                    let mut e = error_entry(None, ResponseError::TopicAuthorizationFailed.code());
                    e.topic_id = t.topic_id;
                    r.topics.push(e);
                }
                Some(m) => r.topics.push(topic_entry(&s, version, m)),
                None => {
                    let mut e = error_entry(None, ResponseError::UnknownTopicId.code());
                    e.topic_id = t.topic_id;
                    r.topics.push(e);
                }
            }
            continue;
        };
        let name = name.0.to_string();
        if validate_name(&name).is_err() {
            r.topics.push(error_entry(Some(&name), ResponseError::InvalidTopicException.code()));
            continue;
        }
        if !describable(&name) {
            r.topics.push(error_entry(Some(&name), ResponseError::TopicAuthorizationFailed.code()));
            continue;
        }
        if let Some(internal) = internal_entry(&s, version, &name) {
            r.topics.push(internal);
            continue;
        }
        match s.lookup(&name, may_create(&name)).await {
            Ok(h) => r.topics.push(topic_entry(&s, version, &h.meta)),
            Err(code) => r.topics.push(error_entry(Some(&name), topic_error(code))),
        }
    }
    r
}

/// A topic's lookup error as Metadata says it: a broker that is stopping (NOT_LEADER_OR_FOLLOWER
/// from the lookup, actors::directory) answers LEADER_NOT_AVAILABLE, the topic-level error
/// clients retry; NOT_LEADER_OR_FOLLOWER belongs to partition-level answers.
fn topic_error(code: i16) -> i16 {
    if code == ResponseError::NotLeaderOrFollower.code() {
        ResponseError::LeaderNotAvailable.code()
    } else {
        code
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopping_broker_answers_leader_not_available_for_a_topic() {
        assert_eq!(topic_error(ResponseError::NotLeaderOrFollower.code()), ResponseError::LeaderNotAvailable.code());
        let unknown = ResponseError::UnknownTopicOrPartition.code();
        assert_eq!(topic_error(unknown), unknown);
    }
}
