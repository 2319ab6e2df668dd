//! DescribeTopicPartitions (key 75, KIP-966): Metadata's partition view, paged by partition count
//! with a cursor (store::admin::partitions_page). kafka-topics --describe asks this first. One
//! copy per partition: no eligible leader replicas beyond the leader, none offline.

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
use kafka_protocol::messages::{DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, TopicName};

use super::metadata::{internal_entry, topic_entry};
use crate::actors::messages::ListTopics;
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::admin::partitions_page;
use crate::store::auth::acl;
use crate::store::topics::{TopicMeta, INTERNAL_TOPICS};

fn from_metadata(t: MetadataResponseTopic, range: std::ops::Range<i32>) -> DescribeTopicPartitionsResponseTopic {
    let mut out = DescribeTopicPartitionsResponseTopic::default();
    out.name = t.name;
    out.topic_id = t.topic_id;
    out.is_internal = t.is_internal;
    out.topic_authorized_operations = i32::MIN;
    out.partitions = t
        .partitions
        .into_iter()
        .filter(|p| range.contains(&p.partition_index))
        .map(|p| {
            let mut d = DescribeTopicPartitionsResponsePartition::default();
            d.error_code = p.error_code;
            d.partition_index = p.partition_index;
            d.leader_id = p.leader_id;
            d.leader_epoch = p.leader_epoch;
            d.replica_nodes = p.replica_nodes;
            d.isr_nodes = p.isr_nodes;
            d.eligible_leader_replicas = Some(Vec::new());
            d.last_known_elr = Some(Vec::new());
            d
        })
        .collect();
    out
}

/// A topic found for the request: a log's metadata, or an internal topic's entry (small).
enum Described {
    Topic(TopicMeta),
    Internal(MetadataResponseTopic),
}

impl Described {
    fn partitions(&self) -> i32 {
        match self {
            Described::Topic(m) => m.partitions,
            Described::Internal(e) => i32::try_from(e.partitions.len()).unwrap_or(i32::MAX),
        }
    }
}

fn error_topic(name: &str, error: ResponseError) -> DescribeTopicPartitionsResponseTopic {
    let mut t = DescribeTopicPartitionsResponseTopic::default();
    t.name = Some(TopicName(str_bytes(name)));
    t.error_code = error.code();
    t.topic_authorized_operations = i32::MIN;
    t
}

pub async fn handle(
    s: Rc<Session>,
    version: i16,
    req: DescribeTopicPartitionsRequest,
) -> DescribeTopicPartitionsResponse {
    let mut resp = DescribeTopicPartitionsResponse::default();
    // Metadata v12's view (topic ids, internal flags).
    let metadata_version = 12.max(version);
    // The topics asked about, by name; only the page's are turned into partition entries (a
    // request for every topic must not build every partition's entry of a 100,000-partition
    // broker to answer 2,000).
    let mut found: BTreeMap<String, Described> = BTreeMap::new();
    let mut unknown = Vec::new();
    // Topics the client may not describe: left out of an all-topics answer, a named one is
    // TOPIC_AUTHORIZATION_FAILED.
    let mut denied = Vec::new();
    if req.topics.is_empty() {
        let metas = s.directory.topics().send(ListTopics).await.unwrap_or_default();
        found.extend(
            metas
                .into_iter()
                .filter(|m| s.authorized(acl::OP_DESCRIBE, acl::RESOURCE_TOPIC, &m.name))
                .map(|m| (m.name.clone(), Described::Topic(m))),
        );
        for n in INTERNAL_TOPICS.iter().filter(|n| s.authorized(acl::OP_DESCRIBE, acl::RESOURCE_TOPIC, n)) {
            if let Some(e) = internal_entry(&s, metadata_version, n) {
                found.insert(n.to_string(), Described::Internal(e));
            }
        }
    } else {
        for t in &req.topics {
            let name = t.name.0.to_string();
            if found.contains_key(&name) || unknown.contains(&name) || denied.contains(&name) {
                continue;
            }
            if !s.authorized(acl::OP_DESCRIBE, acl::RESOURCE_TOPIC, &name) {
                denied.push(name);
                continue;
            }
            if let Some(e) = internal_entry(&s, metadata_version, &name) {
                found.insert(name, Described::Internal(e));
                continue;
            }
            match s.topic(&name, false).await {
                Ok(h) => {
                    found.insert(name, Described::Topic(h.meta.clone()));
                }
                Err(_) => unknown.push(name),
            }
        }
        unknown.sort();
    }
    let counts: Vec<(String, i32)> = found.iter().map(|(n, d)| (n.clone(), d.partitions())).collect();
    let cursor = req.cursor.as_ref().map(|c| (c.topic_name.0.as_str(), c.partition_index));
    let (page, next) = match partitions_page(&counts, cursor, req.response_partition_limit) {
        Ok(p) => p,
        Err(message) => {
            tracing::debug!("DescribeTopicPartitions refused: {message}");
            resp.topics = counts.iter().map(|(n, _)| error_topic(n, ResponseError::InvalidRequest)).collect();
            return resp;
        }
    };
    resp.topics = page
        .into_iter()
        .filter_map(|(name, range)| {
            let entry = match found.remove(&name)? {
                Described::Topic(meta) => topic_entry(&s, metadata_version, &meta),
                Described::Internal(e) => e,
            };
            Some(from_metadata(entry, range))
        })
        .collect();
    resp.topics.extend(unknown.iter().map(|n| error_topic(n, ResponseError::UnknownTopicOrPartition)));
    // What this client may do on each topic it may describe (Kafka sets it on every such topic).
    for t in &mut resp.topics {
        if let Some(name) = &t.name {
            t.topic_authorized_operations =
                s.authorized_operations(&acl::TOPIC_OPERATIONS, acl::RESOURCE_TOPIC, name.as_str());
        }
    }
    resp.topics.extend(denied.iter().map(|n| error_topic(n, ResponseError::TopicAuthorizationFailed)));
    resp.next_cursor = next.map(|(topic, partition)| {
        let mut c = Cursor::default();
        c.topic_name = TopicName(str_bytes(&topic));
        c.partition_index = partition;
        c
    });
    resp
}
