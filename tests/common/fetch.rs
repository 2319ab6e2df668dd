//! Fetch as a consumer sends it, and the records of its answer: shared by the wire tests and the
//! conformance harness (tests/conformance/apis.rs), which sends the request on its own connection.

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::{BrokerId, FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Record, RecordBatchDecoder};

/// A consumer's Fetch of one partition from `offset`: no wait, no session, 1 MiB at most.
/// `isolation_level` 0 is read_uncommitted, 1 read_committed.
pub fn fetch_request(topic: &str, partition: i32, offset: i64, isolation_level: i8) -> FetchRequest {
    let mut p = FetchPartition::default();
    p.partition = partition;
    p.current_leader_epoch = -1;
    p.fetch_offset = offset;
    p.last_fetched_epoch = -1;
    p.log_start_offset = -1;
    p.partition_max_bytes = 1 << 20;
    let mut t = FetchTopic::default();
    t.topic = TopicName(StrBytes::from_string(topic.to_string()));
    t.partitions = vec![p];
    let mut req = FetchRequest::default();
    req.replica_id = BrokerId(-1);
    req.max_wait_ms = 0;
    req.min_bytes = 0;
    req.max_bytes = 1 << 20;
    req.isolation_level = isolation_level;
    req.session_id = 0;
    req.session_epoch = -1;
    req.topics = vec![t];
    req
}

/// Every record of the partition's answer, batch after batch (control records included).
pub fn records(p: &PartitionData) -> Result<Vec<Record>, String> {
    let mut bytes = p.records.clone().unwrap_or_default();
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    let sets = RecordBatchDecoder::decode_all(&mut bytes).map_err(|e| e.to_string())?;
    Ok(sets.into_iter().flat_map(|s| s.records).collect())
}
