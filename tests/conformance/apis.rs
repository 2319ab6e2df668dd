//! One function per API: builds the request from resolved values and normalizes the response
//! (`answer`). Everything a client or the rule book looks at is kept: error codes, producer
//! ids (renamed) and epochs, offsets, LSO / high watermark / log start, aborted-transaction
//! lists, the records returned, producer and transaction states.

use kafka_protocol::messages::add_partitions_to_txn_request::{AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction};
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::*;

use crate::answer::{Answer, PidNames};
use crate::common::fetch::{fetch_request, records as fetched_records};
use crate::common::{batch, txn_batch};
use crate::exec::Sent;
use crate::steps::{part_name, OTHER};
use crate::wire::{str_bytes, topic_name, Conn, WireResult};
use kaas::protocol::txn_markers_codec::{decode_response, encode_request, MarkerTopic, TxnMarker};

fn txn_id(s: &str) -> TransactionalId {
    TransactionalId(str_bytes(s))
}

/// (error, pid, epoch)
pub fn init_producer_id(
    c: &mut Conn,
    id: Option<&str>,
    timeout_ms: i32,
    pid: i64,
    epoch: i16,
    version: i16,
) -> WireResult<(i16, i64, i16)> {
    let mut req = InitProducerIdRequest::default();
    req.transactional_id = id.map(txn_id);
    req.transaction_timeout_ms = timeout_ms;
    req.producer_id = ProducerId(pid);
    req.producer_epoch = epoch;
    let r: InitProducerIdResponse = c.call(ApiKey::InitProducerId, version, req)?;
    Ok((r.error_code, r.producer_id.0, r.producer_epoch))
}

/// `parts` below `steps::OTHER` are partitions of `topics.0`, the others of `topics.1`.
#[allow(clippy::too_many_arguments)]
pub fn add_partitions(
    c: &mut Conn,
    id: &str,
    topics: (&str, &str),
    parts: &[u8],
    pid: i64,
    epoch: i16,
    version: i16,
    verify_only: bool,
) -> WireResult<Answer> {
    let topic_of = |name: &str, other: bool| {
        let mut t = AddPartitionsToTxnTopic::default();
        t.name = topic_name(name);
        t.partitions = parts.iter().filter(|&&p| (p >= OTHER) == other).map(|&p| (p % OTHER) as i32).collect();
        t
    };
    let t: Vec<AddPartitionsToTxnTopic> = [topic_of(topics.0, false), topic_of(topics.1, true)]
        .into_iter()
        .filter(|t| !t.partitions.is_empty())
        .collect();
    let mut req = AddPartitionsToTxnRequest::default();
    if version <= 3 {
        req.v3_and_below_transactional_id = txn_id(id);
        req.v3_and_below_producer_id = ProducerId(pid);
        req.v3_and_below_producer_epoch = epoch;
        req.v3_and_below_topics = t;
    } else {
        let mut tx = AddPartitionsToTxnTransaction::default();
        tx.transactional_id = txn_id(id);
        tx.producer_id = ProducerId(pid);
        tx.producer_epoch = epoch;
        tx.verify_only = verify_only;
        tx.topics = t;
        req.transactions = vec![tx];
    }
    let r: AddPartitionsToTxnResponse = c.call(ApiKey::AddPartitionsToTxn, version, req)?;
    let mut a = Answer::new();
    let by_topic: Vec<_> = if version <= 3 {
        r.results_by_topic_v3_and_below.iter().collect()
    } else {
        a.push("top", r.error_code);
        r.results_by_transaction.iter().flat_map(|x| x.topic_results.iter()).collect()
    };
    let mut results: Vec<(String, i16)> = by_topic
        .iter()
        .flat_map(|t| {
            let other = t.name.0.as_str() != topics.0;
            t.results_by_partition.iter().map(move |p| {
                let k = p.partition_index as u8 + if other { OTHER } else { 0 };
                (part_name(k), p.partition_error_code)
            })
        })
        .collect();
    results.sort();
    for (p, e) in results {
        a.push(&p, e);
    }
    Ok(a)
}

pub fn add_offsets(c: &mut Conn, id: &str, group: &str, pid: i64, epoch: i16, version: i16) -> WireResult<Answer> {
    let mut req = AddOffsetsToTxnRequest::default();
    req.transactional_id = txn_id(id);
    req.producer_id = ProducerId(pid);
    req.producer_epoch = epoch;
    req.group_id = GroupId(str_bytes(group));
    let r: AddOffsetsToTxnResponse = c.call(ApiKey::AddOffsetsToTxn, version, req)?;
    Ok(Answer::new().with("err", r.error_code))
}

#[allow(clippy::too_many_arguments)]
pub fn txn_offset_commit(
    c: &mut Conn,
    id: &str,
    group: &str,
    topic: &str,
    parts: &[u8],
    pid: i64,
    epoch: i16,
    version: i16,
) -> WireResult<Answer> {
    let mut t = TxnOffsetCommitRequestTopic::default();
    t.name = topic_name(topic);
    t.partitions = parts
        .iter()
        .map(|&p| {
            let mut tp = TxnOffsetCommitRequestPartition::default();
            tp.partition_index = p as i32;
            tp.committed_offset = 1;
            tp.committed_leader_epoch = -1;
            tp.committed_metadata = Some(str_bytes(""));
            tp
        })
        .collect();
    let mut req = TxnOffsetCommitRequest::default();
    req.transactional_id = txn_id(id);
    req.group_id = GroupId(str_bytes(group));
    req.producer_id = ProducerId(pid);
    req.producer_epoch = epoch;
    req.generation_id = -1;
    req.member_id = str_bytes("");
    req.topics = vec![t];
    let r: TxnOffsetCommitResponse = c.call(ApiKey::TxnOffsetCommit, version, req)?;
    let mut res: Vec<(i32, i16)> =
        r.topics.iter().flat_map(|t| t.partitions.iter().map(|p| (p.partition_index, p.error_code))).collect();
    res.sort();
    let mut a = Answer::new();
    for (p, e) in res {
        a.push(&format!("p{p}"), e);
    }
    Ok(a)
}

pub fn produce(c: &mut Conn, topic: &str, part: u8, txn: Option<&str>, b: &Sent, version: i16) -> WireResult<Answer> {
    let records = if b.txnal {
        txn_batch(b.pid, b.epoch, b.seq, b.n as usize, &b.tag)
    } else {
        batch(b.pid, b.epoch, b.seq, b.n as usize, &b.tag)
    };
    let mut p = PartitionProduceData::default();
    p.index = part as i32;
    p.records = Some(records);
    let mut t = TopicProduceData::default();
    t.name = topic_name(topic);
    t.partition_data = vec![p];
    let mut req = ProduceRequest::default();
    req.transactional_id = txn.map(txn_id);
    req.acks = -1;
    req.timeout_ms = 30_000;
    req.topic_data = vec![t];
    let r: ProduceResponse = c.call(ApiKey::Produce, version, req)?;
    let p = r
        .responses
        .first()
        .and_then(|t| t.partition_responses.first())
        .ok_or_else(|| "empty produce response".to_string())?;
    Ok(Answer::new()
        .with("err", p.error_code)
        .with("base", p.base_offset)
        .with("log_start", p.log_start_offset)
        .with("append_time", if p.log_append_time_ms == -1 { "-1" } else { "set" }))
}

/// (error, pid, epoch)
pub fn end_txn(
    c: &mut Conn,
    id: &str,
    pid: i64,
    epoch: i16,
    commit: bool,
    version: i16,
) -> WireResult<(i16, i64, i16)> {
    let mut req = EndTxnRequest::default();
    req.transactional_id = txn_id(id);
    req.producer_id = ProducerId(pid);
    req.producer_epoch = epoch;
    req.committed = commit;
    let r: EndTxnResponse = c.call(ApiKey::EndTxn, version, req)?;
    Ok((r.error_code, r.producer_id.0, r.producer_epoch))
}

#[allow(clippy::too_many_arguments)]
pub fn write_marker(
    c: &mut Conn,
    topic: &str,
    parts: &[u8],
    pid: i64,
    epoch: i16,
    commit: bool,
    version: i16,
    tv: i8,
) -> WireResult<Answer> {
    let marker = TxnMarker {
        producer_id: pid,
        producer_epoch: epoch,
        commit,
        topics: vec![MarkerTopic { name: topic.to_string(), partitions: parts.iter().map(|&p| p as i32).collect() }],
        coordinator_epoch: 0,
        transaction_version: if version >= 2 { tv } else { 0 },
    };
    let body = c.call_raw(ApiKey::WriteTxnMarkers, version, &encode_request(&[marker], version))?;
    let mut res: Vec<(i32, i16)> = decode_response(body, version)
        .map_err(|e| format!("decode: {e}"))?
        .iter()
        .map(|r| (r.partition, r.error_code))
        .collect();
    res.sort();
    let mut a = Answer::new();
    for (p, e) in res {
        a.push(&format!("p{p}"), e);
    }
    Ok(a)
}

/// Reads the partition from offset 0 as a consumer would: fetching again from after the last
/// record returned until the high watermark (read_uncommitted) or LSO (read_committed) is
/// reached or nothing more comes. (Apache Kafka may end a response before a trailing control
/// batch that a next fetch returns.) The offsets and the aborted list are the first answer's,
/// merged with the later ones'.
pub fn fetch(c: &mut Conn, topic: &str, part: u8, committed: bool, names: &mut PidNames) -> WireResult<Answer> {
    let mut first: Option<PartitionData> = None;
    let mut aborted: Option<Vec<(i64, i64)>> = None;
    let mut records = Vec::new();
    let mut offset = 0;
    for _ in 0..20 {
        let p = fetch_once(c, topic, part, committed, offset)?;
        if let Some(list) = &p.aborted_transactions {
            let all = aborted.get_or_insert_with(Vec::new);
            // A read_committed answer's records end below its LSO; an aborted transaction that
            // starts at or past it concerns none of them. Apache Kafka bounds the list by its
            // sparse offset index (often up to the log end), kaas by the LSO: compared is what a
            // consumer can use.
            for a in list.iter().filter(|a| !committed || a.first_offset < p.last_stable_offset) {
                if !all.contains(&(a.first_offset, a.producer_id.0)) {
                    all.push((a.first_offset, a.producer_id.0));
                }
            }
        }
        let mut last = None;
        for r in fetched_records(&p).map_err(|e| format!("records: {e}"))?.iter().filter(|r| r.offset >= offset) {
            last = Some(r.offset);
            records.push(render_record(r, names));
        }
        let end = if committed { p.last_stable_offset } else { p.high_watermark };
        let done = p.error_code != 0 || last.is_none_or(|l| l + 1 >= end);
        if first.is_none() {
            first = Some(p);
        }
        match last {
            Some(l) if !done => offset = l + 1,
            _ => break,
        }
    }
    let p = first.ok_or_else(|| "no fetch answer".to_string())?;
    let aborted = match aborted {
        None => "null".to_string(),
        Some(mut v) => {
            v.sort();
            let v: Vec<String> = v.into_iter().map(|(o, pid)| format!("{}@{o}", names.name(pid))).collect();
            format!("[{}]", v.join(","))
        }
    };
    Ok(Answer::new()
        .with("err", p.error_code)
        .with("hw", p.high_watermark)
        .with("lso", p.last_stable_offset)
        .with("log_start", p.log_start_offset)
        .with("aborted", aborted)
        .with("records", format!("[{}]", records.join(" "))))
}

fn render_record(r: &kafka_protocol::records::Record, names: &mut PidNames) -> String {
    let what = if r.control {
        match r.key.as_ref().map(|k| k.as_ref()) {
            Some([_, _, 0, 0]) => "ABORT".to_string(),
            Some([_, _, 0, 1]) => "COMMIT".to_string(),
            _ => "CONTROL?".to_string(),
        }
    } else {
        r.value.as_ref().map(|v| String::from_utf8_lossy(v).into_owned()).unwrap_or_default()
    };
    format!(
        "{}:{}/e{}/s{}{}:{what}",
        r.offset,
        names.name(r.producer_id),
        r.producer_epoch,
        r.sequence,
        if r.transactional { "T" } else { "" }
    )
}

fn fetch_once(c: &mut Conn, topic: &str, part: u8, committed: bool, offset: i64) -> WireResult<PartitionData> {
    let r: FetchResponse = c.call(ApiKey::Fetch, 12, fetch_request(topic, part as i32, offset, committed as i8))?;
    r.responses
        .into_iter()
        .next()
        .and_then(|t| t.partitions.into_iter().next())
        .ok_or_else(|| "empty fetch response".to_string())
}

pub fn list_offsets(c: &mut Conn, topic: &str, part: u8, committed: bool) -> WireResult<Answer> {
    let mut lp = ListOffsetsPartition::default();
    lp.partition_index = part as i32;
    lp.current_leader_epoch = -1;
    lp.timestamp = -1;
    let mut t = ListOffsetsTopic::default();
    t.name = topic_name(topic);
    t.partitions = vec![lp];
    let mut req = ListOffsetsRequest::default();
    req.replica_id = BrokerId(-1);
    req.isolation_level = committed as i8;
    req.topics = vec![t];
    let r: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 7, req)?;
    let p = r.topics.first().and_then(|t| t.partitions.first()).ok_or_else(|| "empty answer".to_string())?;
    Ok(Answer::new().with("err", p.error_code).with("offset", p.offset).with("timestamp", p.timestamp))
}

pub fn describe_producers(c: &mut Conn, topic: &str, names: &mut PidNames) -> WireResult<Answer> {
    let mut t = TopicRequest::default();
    t.name = topic_name(topic);
    t.partition_indexes = vec![0, 1];
    let mut req = DescribeProducersRequest::default();
    req.topics = vec![t];
    let r: DescribeProducersResponse = c.call(ApiKey::DescribeProducers, 0, req)?;
    let mut a = Answer::new();
    let mut parts: Vec<_> = r.topics.iter().flat_map(|t| t.partitions.iter()).collect();
    parts.sort_by_key(|p| p.partition_index);
    for p in parts {
        // Only producers of this sequence: kaas writes an epoch fence of every bumped producer to
        // every partition it leads, so other sequences' producers appear there (see README).
        let ps: Vec<_> = p.active_producers.iter().filter(|s| names.known(s.producer_id.0)).collect();
        let mut v: Vec<String> = ps
            .iter()
            .map(|s| {
                format!(
                    "{}/e{}/last{}/coord{}/txn{}",
                    names.name(s.producer_id.0),
                    s.producer_epoch,
                    s.last_sequence,
                    s.coordinator_epoch,
                    s.current_txn_start_offset
                )
            })
            .collect();
        // Every listed producer is already named: the order of the listing does not matter.
        v.sort();
        a.push(&format!("p{}.err", p.partition_index), p.error_code);
        a.push(&format!("p{}.producers", p.partition_index), format!("[{}]", v.join(" ")));
    }
    Ok(a)
}

/// A transaction as DescribeTransactions shows it, before normalization.
pub struct TxnSeen {
    pub state: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
}

/// The normalized answer and the raw state, producer id and epoch.
pub fn describe_txn(c: &mut Conn, id: &str, topic: &str, names: &mut PidNames) -> WireResult<(Answer, TxnSeen)> {
    let mut req = DescribeTransactionsRequest::default();
    req.transactional_ids = vec![txn_id(id)];
    let r: DescribeTransactionsResponse = c.call(ApiKey::DescribeTransactions, 0, req)?;
    let s = r.transaction_states.first().ok_or_else(|| "empty answer".to_string())?;
    let mut parts: Vec<String> = s
        .topics
        .iter()
        .flat_map(|t| {
            // The sequence's topics as T and T-x (the authz mode's second topic).
            let name = match t.topic.0.as_str().strip_prefix(topic) {
                Some(rest) => format!("T{rest}"),
                None => t.topic.0.to_string(),
            };
            t.partitions.iter().map(move |p| format!("{name}-{p}"))
        })
        .collect();
    parts.sort();
    let state = s.transaction_state.to_string();
    let a = Answer::new()
        .with("err", s.error_code)
        .with("state", &state)
        .with("pid", names.name(s.producer_id.0))
        .with("epoch", s.producer_epoch)
        .with("timeout", s.transaction_timeout_ms)
        .with("started", if s.transaction_start_time_ms == -1 { "-1" } else { "set" })
        .with("partitions", format!("[{}]", parts.join(",")));
    Ok((a, TxnSeen { state, producer_id: s.producer_id.0, producer_epoch: s.producer_epoch }))
}

/// ListTransactions without filters: the run's transactional ids as `T<k>` (any other as
/// `other:<id>`: the authz mode's user may describe none), with state and producer, sorted.
pub fn list_transactions(c: &mut Conn, version: i16, prefix: &str, names: &mut PidNames) -> WireResult<Answer> {
    let r: ListTransactionsResponse = c.call(ApiKey::ListTransactions, version, ListTransactionsRequest::default())?;
    let mut v: Vec<(String, String, i64)> = r
        .transaction_states
        .iter()
        .map(|t| {
            let id = t.transactional_id.0.as_str();
            let label = match id.strip_prefix(prefix) {
                Some(k) => format!("T{k}"),
                None => format!("other:{id}"),
            };
            (label, t.transaction_state.to_string(), t.producer_id.0)
        })
        .collect();
    v.sort();
    let listed: Vec<String> =
        v.into_iter().map(|(id, state, pid)| format!("{id}/{state}/{}", names.name(pid))).collect();
    Ok(Answer::new().with("err", r.error_code).with("txns", format!("[{}]", listed.join(" "))))
}

/// FindCoordinator for one key (v4+: as a batch of one): its error code (a single node is its
/// own coordinator; the address is not compared).
pub fn find_coordinator(c: &mut Conn, key: &str, key_type: i8, version: i16) -> WireResult<Answer> {
    let mut req = FindCoordinatorRequest::default();
    req.key_type = key_type;
    if version >= 4 {
        req.coordinator_keys = vec![str_bytes(key)];
    } else {
        req.key = str_bytes(key);
    }
    let r: FindCoordinatorResponse = c.call(ApiKey::FindCoordinator, version, req)?;
    let code = if version >= 4 { r.coordinators.first().map(|k| k.error_code).unwrap_or(-2) } else { r.error_code };
    Ok(Answer::new().with("err", code))
}
