//! Metadata (key 3): brokers, topics (auto-created on request), partition leaders.

use std::rc::Rc;

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};

use crate::actors::messages::ListTopics;
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::topics::{validate_name, TopicMeta};

fn topic_entry(s: &Session, version: i16, meta: &TopicMeta) -> MetadataResponseTopic {
    let mut t = MetadataResponseTopic::default();
    t.name = Some(TopicName(str_bytes(&meta.name)));
    if version >= 10 {
        t.topic_id = meta.id;
    }
    t.partitions = (0..meta.partitions)
        .map(|p| {
            let mut e = MetadataResponsePartition::default();
            e.partition_index = p;
            e.leader_id = BrokerId(s.node_id());
            e.leader_epoch = 0;
            e.replica_nodes = vec![BrokerId(s.node_id())];
            e.isr_nodes = vec![BrokerId(s.node_id())];
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
    let (host, port) = s.settings.advertised();
    let mut r = MetadataResponse::default();
    let mut broker = MetadataResponseBroker::default();
    broker.node_id = BrokerId(s.node_id());
    broker.host = str_bytes(&host);
    broker.port = port;
    r.brokers = vec![broker];
    r.cluster_id = Some(str_bytes(&s.cluster_id));
    r.controller_id = BrokerId(s.node_id());
    // v0: an empty list means every topic; v1+: null means every topic.
    let all = match &req.topics {
        None => true,
        Some(t) => version == 0 && t.is_empty(),
    };
    if all {
        let metas = s.cluster.send(ListTopics).await.unwrap_or_default();
        r.topics = metas.iter().map(|m| topic_entry(&s, version, m)).collect();
        return r;
    }
    // Before v4 there is no flag and Kafka auto-creates.
    let auto_create = version < 4 || req.allow_auto_topic_creation;
    for t in req.topics.unwrap_or_default() {
        let Some(name) = t.name else {
            r.topics.push(error_entry(None, ResponseError::UnknownTopicId.code()));
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
