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
use crate::store::ownership::Owned;
use crate::store::topics::{validate_name, TopicMeta};

fn topic_entry(s: &Session, version: i16, meta: &TopicMeta) -> MetadataResponseTopic {
    let table = s.directory.ownership();
    let mut t = MetadataResponseTopic::default();
    t.name = Some(TopicName(str_bytes(&meta.name)));
    if version >= 10 {
        t.topic_id = meta.id;
    }
    t.partitions = (0..meta.partitions)
        .map(|p| {
            let mut e = MetadataResponsePartition::default();
            e.partition_index = p;
            let what = Owned::Partition { topic: meta.name.clone(), partition: p };
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
    let mut r = MetadataResponse::default();
    {
        let table = s.directory.ownership();
        r.brokers = table
            .brokers()
            .map(|b| {
                let mut broker = MetadataResponseBroker::default();
                broker.node_id = BrokerId(b.node_id);
                broker.host = str_bytes(&b.host);
                broker.port = b.port;
                broker.rack = b.rack.as_deref().map(str_bytes);
                broker
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
    if all {
        let metas = s.directory.topics().send(ListTopics).await.unwrap_or_default();
        r.topics = metas.iter().map(|m| topic_entry(&s, version, m)).collect();
        return r;
    }
    // Before v4 there is no flag and Kafka auto-creates.
    let auto_create = version < 4 || req.allow_auto_topic_creation;
    // v10+: topics asked by id (librdkafka resolves KIP-848 assignments this way).
    let mut by_id: Option<Vec<TopicMeta>> = None;
    for t in req.topics.unwrap_or_default() {
        let Some(name) = t.name else {
            if by_id.is_none() && !t.topic_id.is_nil() {
                by_id = Some(s.directory.topics().send(ListTopics).await.unwrap_or_default());
            }
            match by_id.iter().flatten().find(|m| m.id == t.topic_id && !t.topic_id.is_nil()) {
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
        match s.lookup(&name, auto_create).await {
            Ok(h) => r.topics.push(topic_entry(&s, version, &h.meta)),
            Err(code) => r.topics.push(error_entry(Some(&name), code)),
        }
    }
    r
}
