//! Helpers of the shared-disk cluster tests: a six-partition topic spread over brokers sharing one
//! data directory, and the requests the tests send to find and use its leaders and coordinators.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::{Broker, Client};

pub const TOPIC: &str = "spread";
pub const PARTITIONS: i32 = 6;
pub const NOT_LEADER_OR_FOLLOWER: i16 = 6;
pub const TICK: &str = "200";

/// The settings of a broker started in the test process (`kaas::server::Broker::start`) on
/// `data_dir`: one thread each, `txn_shards` shards, room for 100 partitions, and no membership
/// tick in between (the tests edit the ownership table themselves).
pub fn in_process_settings(data_dir: &std::path::Path, txn_shards: usize) -> kaas::config::Settings {
    let mut s = kaas::config::Settings::default();
    s.broker.data_dir = data_dir.to_path_buf();
    s.broker.partition_threads = 1;
    s.broker.connection_threads = 1;
    s.log.sync_threads = 1;
    s.transactions.txn_shards = txn_shards;
    s.log.max_partitions = 100;
    s.cluster.cluster_tick_ms = 3_600_000;
    s
}

pub fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

/// (live brokers: node -> port, partition -> leader node) as `c` sees them.
pub fn metadata(c: &mut Client) -> (BTreeMap<i32, u16>, BTreeMap<i32, i32>) {
    metadata_of(c, TOPIC)
}

/// `metadata` of `topic` (no partitions while it is unknown).
pub fn metadata_of(c: &mut Client, topic: &str) -> (BTreeMap<i32, u16>, BTreeMap<i32, i32>) {
    let mut t = MetadataRequestTopic::default();
    t.name = Some(name(topic));
    let mut req = MetadataRequest::default();
    req.topics = Some(vec![t]);
    req.allow_auto_topic_creation = false;
    let resp: MetadataResponse = c.call(ApiKey::Metadata, 9, req);
    let brokers = resp.brokers.iter().map(|b| (b.node_id.0, b.port as u16)).collect();
    let leaders = resp
        .topics
        .iter()
        .filter(|t| t.error_code == 0)
        .flat_map(|t| t.partitions.iter().map(|p| (p.partition_index, p.leader_id.0)))
        .collect();
    (brokers, leaders)
}

pub fn create(c: &mut Client) {
    super::create_topic_with(c, TOPIC, PARTITIONS);
}

/// (error, base offset) of one Produce v9 with acks=all.
pub fn produce(c: &mut Client, partition: i32, records: Bytes) -> (i16, i64) {
    produce_to(c, TOPIC, partition, records)
}

/// `produce` to `topic`.
pub fn produce_to(c: &mut Client, topic: &str, partition: i32, records: Bytes) -> (i16, i64) {
    let mut p = PartitionProduceData::default();
    p.index = partition;
    p.records = Some(records);
    let mut t = TopicProduceData::default();
    t.name = name(topic);
    t.partition_data = vec![p];
    let mut req = ProduceRequest::default();
    req.acks = -1;
    req.timeout_ms = 10_000;
    req.topic_data = vec![t];
    let resp: ProduceResponse = c.call(ApiKey::Produce, 9, req);
    let p = &resp.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

pub fn coordinator(c: &mut Client, key: &str, key_type: i8) -> i32 {
    let mut req = FindCoordinatorRequest::default();
    req.key_type = key_type;
    req.coordinator_keys = vec![StrBytes::from_string(key.to_string())];
    let resp: FindCoordinatorResponse = c.call(ApiKey::FindCoordinator, 4, req);
    resp.coordinators[0].node_id.0
}

/// Polls `check` every 50 ms until it returns Some, for at most `within`.
pub fn wait_for<T>(within: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every partition led by one of `live`, as broker `via` sees it.
pub fn settled(via: &Broker, live: &BTreeSet<i32>) -> Option<(BTreeMap<i32, u16>, BTreeMap<i32, i32>)> {
    let (brokers, leaders) = metadata(&mut via.client());
    let ok = brokers.keys().copied().collect::<BTreeSet<_>>() == *live
        && leaders.len() == PARTITIONS as usize
        && leaders.values().all(|l| live.contains(l));
    ok.then_some((brokers, leaders))
}

/// (producer id, epoch) from InitProducerId for `transactional_id`, sent to its coordinator.
pub fn init_producer_id(c: &mut Client, transactional_id: &str) -> (i64, i16) {
    let (code, ids) = try_init_producer_id(c, transactional_id);
    assert_eq!(code, 0);
    ids
}

/// InitProducerId's (error, (producer id, epoch)).
pub fn try_init_producer_id(c: &mut Client, transactional_id: &str) -> (i16, (i64, i16)) {
    let mut req = InitProducerIdRequest::default();
    req.transactional_id = Some(TransactionalId(StrBytes::from_string(transactional_id.to_string())));
    req.transaction_timeout_ms = 60_000;
    req.producer_id = ProducerId(-1);
    req.producer_epoch = -1;
    let resp: InitProducerIdResponse = c.call(ApiKey::InitProducerId, 4, req);
    (resp.error_code, (resp.producer_id.0, resp.producer_epoch))
}

pub fn signal(pid: u32, sig: &str) {
    let status = std::process::Command::new("kill").args([sig, &pid.to_string()]).status().expect("kill");
    assert!(status.success(), "kill {sig} {pid}");
}

/// FindCoordinator's answer for 32 transactional ids (every shard) and a group, once every
/// broker of `live` (their ports from `via`'s Metadata) gives the same answer, each naming a
/// broker of `live`: no hand-over is under way.
pub fn coordinator_map(via: &Broker, live: &BTreeSet<i32>) -> Option<BTreeMap<String, i32>> {
    let ports = metadata(&mut via.client()).0;
    let mut agreed: Option<BTreeMap<String, i32>> = None;
    for node in live {
        let mut c = Client::connect(*ports.get(node)?);
        let mut map: BTreeMap<String, i32> =
            (0..32).map(|i| format!("tx-{i}")).map(|k| (k.clone(), coordinator(&mut c, &k, 1))).collect();
        map.insert("group g".into(), coordinator(&mut c, "g", 0));
        if !map.values().all(|n| live.contains(n)) || agreed.as_ref().is_some_and(|a| *a != map) {
            return None;
        }
        agreed = Some(map);
    }
    agreed
}

fn txn_id(id: &str) -> TransactionalId {
    TransactionalId(StrBytes::from_string(id.to_string()))
}

/// InitProducerId and AddPartitionsToTxn v3 at `coordinator`, then one transactional batch of 3
/// records (Produce v9) to `partition` at `leader`, left open: (producer id, epoch).
pub fn open_transaction(coordinator: &mut Client, leader: &mut Client, id: &str, partition: i32) -> (i64, i16) {
    let (pid, epoch) = init_producer_id(coordinator, id);
    let mut t = kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic::default();
    t.name = name(TOPIC);
    t.partitions = vec![partition];
    let mut add = AddPartitionsToTxnRequest::default();
    add.v3_and_below_transactional_id = txn_id(id);
    add.v3_and_below_producer_id = ProducerId(pid);
    add.v3_and_below_producer_epoch = epoch;
    add.v3_and_below_topics = vec![t];
    let resp: AddPartitionsToTxnResponse = coordinator.call(ApiKey::AddPartitionsToTxn, 3, add);
    assert_eq!(resp.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code, 0);
    let mut p = PartitionProduceData::default();
    p.index = partition;
    p.records = Some(super::txn_batch(pid, epoch, 0, 3, "txn"));
    let mut t = TopicProduceData::default();
    t.name = name(TOPIC);
    t.partition_data = vec![p];
    let mut req = ProduceRequest::default();
    req.transactional_id = Some(txn_id(id));
    req.acks = -1;
    req.timeout_ms = 30_000;
    req.topic_data = vec![t];
    let resp: ProduceResponse = leader.call(ApiKey::Produce, 9, req);
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0, "transactional batch");
    (pid, epoch)
}

/// EndTxn v3's error code.
pub fn end_txn(c: &mut Client, id: &str, pid: i64, epoch: i16, commit: bool) -> i16 {
    let mut req = EndTxnRequest::default();
    req.transactional_id = txn_id(id);
    req.producer_id = ProducerId(pid);
    req.producer_epoch = epoch;
    req.committed = commit;
    let resp: EndTxnResponse = c.call(ApiKey::EndTxn, 3, req);
    resp.error_code
}

/// DescribeTransactions v0: the transaction's state as its coordinator names it.
pub fn txn_state(c: &mut Client, id: &str) -> (i16, String) {
    let mut req = DescribeTransactionsRequest::default();
    req.transactional_ids = vec![txn_id(id)];
    let resp: DescribeTransactionsResponse = c.call(ApiKey::DescribeTransactions, 0, req);
    let s = &resp.transaction_states[0];
    (s.error_code, s.transaction_state.to_string())
}

/// A transactional id among those `coordinator_map` asked for whose coordinator is `node`.
pub fn txn_id_on(map: &BTreeMap<String, i32>, node: i32) -> Option<String> {
    map.iter().find(|(k, n)| k.starts_with("tx-") && **n == node).map(|(k, _)| k.clone())
}

/// Partition `p`'s leader epoch in Metadata.
pub fn leader_epoch(c: &mut Client, p: i32) -> i32 {
    let mut t = MetadataRequestTopic::default();
    t.name = Some(name(TOPIC));
    let mut req = MetadataRequest::default();
    req.topics = Some(vec![t]);
    let resp: MetadataResponse = c.call(ApiKey::Metadata, 9, req);
    resp.topics[0].partitions.iter().find(|x| x.partition_index == p).map_or(-1, |x| x.leader_epoch)
}

/// OffsetForLeaderEpoch v4 for partition `p`: (error, leader epoch, end offset).
pub fn epoch_end_offset(c: &mut Client, p: i32, current_leader_epoch: i32, leader_epoch: i32) -> (i16, i32, i64) {
    use kafka_protocol::messages::offset_for_leader_epoch_request::{OffsetForLeaderPartition, OffsetForLeaderTopic};
    let mut part = OffsetForLeaderPartition::default();
    part.partition = p;
    part.current_leader_epoch = current_leader_epoch;
    part.leader_epoch = leader_epoch;
    let mut t = OffsetForLeaderTopic::default();
    t.topic = name(TOPIC);
    t.partitions = vec![part];
    let mut req = OffsetForLeaderEpochRequest::default();
    req.replica_id = BrokerId(-1);
    req.topics = vec![t];
    let resp: OffsetForLeaderEpochResponse = c.call(ApiKey::OffsetForLeaderEpoch, 4, req);
    let e = &resp.topics[0].partitions[0];
    (e.error_code, e.leader_epoch, e.end_offset)
}

/// Partition `p` fetched from offset 0 (Fetch v12) with `isolation_level` (0 or 1).
fn fetch_from_start(c: &mut Client, p: i32, isolation_level: i8) -> fetch_response::PartitionData {
    fetch_from(c, p, 0, isolation_level)
}

/// A Fetch of partition `p` from `offset` (it reads one segment, as Kafka's does).
fn fetch_from(c: &mut Client, p: i32, offset: i64, isolation_level: i8) -> fetch_response::PartitionData {
    let mut fp = FetchPartition::default();
    fp.partition = p;
    fp.fetch_offset = offset;
    fp.partition_max_bytes = 1 << 20;
    fp.log_start_offset = -1;
    fp.current_leader_epoch = -1;
    let mut t = FetchTopic::default();
    t.topic = name(TOPIC);
    t.partitions = vec![fp];
    let mut req = FetchRequest::default();
    req.replica_id = BrokerId(-1);
    req.max_bytes = 1 << 20;
    req.isolation_level = isolation_level;
    req.topics = vec![t];
    let mut resp: FetchResponse = c.call(ApiKey::Fetch, 12, req);
    resp.responses.swap_remove(0).partitions.swap_remove(0)
}

/// (error, high watermark) of a fetch from offset 0.
pub fn high_watermark(c: &mut Client, partition: i32) -> (i16, i64) {
    let p = fetch_from_start(c, partition, 0);
    (p.error_code, p.high_watermark)
}

/// (error, high watermark, last stable offset) of a read_committed fetch from offset 0.
pub fn stable_offsets(c: &mut Client, partition: i32) -> (i16, i64, i64) {
    let p = fetch_from_start(c, partition, 1);
    (p.error_code, p.high_watermark, p.last_stable_offset)
}

/// The partition leader epoch the last record of partition `p` was stored with.
pub fn last_stored_leader_epoch(c: &mut Client, p: i32) -> i32 {
    // A leader that took the partition over appends to a segment of its own epoch: fetch there.
    let last = high_watermark(c, p).1 - 1;
    let mut records = fetch_from(c, p, last.max(0), 0).records.unwrap_or_default();
    let sets = kafka_protocol::records::RecordBatchDecoder::decode_all(&mut records).expect("batches");
    sets.iter().flat_map(|s| s.records.iter()).last().map_or(-2, |r| r.partition_leader_epoch)
}
