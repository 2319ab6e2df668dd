//! DescribeTopicPartitions (key 75, KIP-966): Metadata's partition view, paged by partition count
//! with a cursor (store::admin::partitions_page). kafka-topics --describe asks this first. One
//! copy per partition: no eligible leader replicas beyond the leader, none offline.

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
use crate::store::topics::INTERNAL_TOPICS;

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
    let mut entries: Vec<MetadataResponseTopic> = Vec::new();
    let mut unknown = Vec::new();
    if req.topics.is_empty() {
        let metas = s.directory.topics().send(ListTopics).await.unwrap_or_default();
        entries.extend(metas.iter().map(|m| topic_entry(&s, metadata_version, m)));
        entries.extend(INTERNAL_TOPICS.iter().filter_map(|n| internal_entry(&s, metadata_version, n)));
    } else {
        let mut names: Vec<String> = req.topics.iter().map(|t| t.name.0.to_string()).collect();
        names.sort();
        names.dedup();
        for name in names {
            if let Some(e) = internal_entry(&s, metadata_version, &name) {
                entries.push(e);
                continue;
            }
            match s.topic(&name, false).await {
                Ok(h) => entries.push(topic_entry(&s, metadata_version, &h.meta)),
                Err(_) => unknown.push(name),
            }
        }
    }
    entries.sort_by(|a, b| a.name.as_ref().map(|n| n.0.as_str()).cmp(&b.name.as_ref().map(|n| n.0.as_str())));
    let counts: Vec<(String, i32)> = entries
        .iter()
        .map(|e| {
            let name = e.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
            (name, i32::try_from(e.partitions.len()).unwrap_or(i32::MAX))
        })
        .collect();
    let cursor = req.cursor.as_ref().map(|c| (c.topic_name.0.as_str(), c.partition_index));
    let (page, next) = match partitions_page(&counts, cursor, req.response_partition_limit) {
        Ok(p) => p,
        Err(message) => {
            tracing::debug!("DescribeTopicPartitions refused: {message}");
            resp.topics = counts.iter().map(|(n, _)| error_topic(n, ResponseError::InvalidRequest)).collect();
            return resp;
        }
    };
    let mut by_name: std::collections::HashMap<String, MetadataResponseTopic> =
        entries.into_iter().map(|e| (e.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default(), e)).collect();
    resp.topics =
        page.into_iter().filter_map(|(name, range)| by_name.remove(&name).map(|e| from_metadata(e, range))).collect();
    resp.topics.extend(unknown.iter().map(|n| error_topic(n, ResponseError::UnknownTopicOrPartition)));
    resp.next_cursor = next.map(|(topic, partition)| {
        let mut c = Cursor::default();
        c.topic_name = TopicName(str_bytes(&topic));
        c.partition_index = partition;
        c
    });
    resp
}
