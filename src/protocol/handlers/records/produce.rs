//! Produce (key 0): validates each partition's batch (eos-rules 14) and its records as Kafka's
//! LogValidator does (store::validate), enqueues it on the
//! partition leader in request order, and answers once every append is durable.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

use actix::dev::SendError;
use futures::future::{join_all, LocalBoxFuture};
use futures::FutureExt;
use kafka_protocol::messages::produce_request::PartitionProduceData;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse, TopicName};
use tokio::sync::oneshot;

use crate::actors::messages::{Append, AppendAck, BeginVerification, ListOffset, Verified};
use crate::actors::partition::PartitionLeader;
use crate::actors::topics::TopicHandle;
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::batch::{BatchHeader, Incoming};
use crate::store::clock::now_ms;
use crate::store::partition::{check_parsed_partition_data, check_request};
use crate::store::recompress::{self, Compression};
use crate::store::topics::is_internal;
use crate::store::txn::{produce_verification_error, ImplicitAddRetry, TopicPartition};
use crate::store::validate::{self, RecordError, TimestampPolicy};

/// What one partition of a Produce answers, or will once its append is durable.
enum PartitionAnswer {
    Done(AppendAck),
    /// Refused by the record validator: Kafka answers with the log start offset and, for
    /// record-level errors, error_message and record_errors (v8+).
    Rejected(AppendAck, Option<(String, Vec<RecordError>)>),
    /// Appending; the second field is the LogAppendTime stamped on the batch, if any.
    Waiting(oneshot::Receiver<AppendAck>, Option<i64>),
}

fn err(code: i16) -> PartitionAnswer {
    // eos-rules 22: LogStartOffset is -1 for these (the partition was never consulted).
    PartitionAnswer::Done(AppendAck { error_code: code, base_offset: -1, log_append_time: -1, log_start_offset: -1 })
}

/// Kafka's LogValidator on the batch, then the append. The records are walked by streaming
/// decompression (bounded memory, see store::records), never decoded whole.
async fn validate_and_append(s: &Session, name: &str, ready: Ready, acks: i16) -> PartitionAnswer {
    let Ready { leader, header, records, verified, timestamp, compression, max_message_bytes, partition } = ready;
    let leader = &leader;
    let now = now_ms();
    let validated = match validate::validate_client_batch(&records, &header, &timestamp, now, &partition) {
        Ok(v) => v,
        Err(e) => {
            tracing::debug!(topic = name, "produce refused by the record validator: {e}");
            // eos-rules 22: validation errors carry the log start offset (processFailedRecord).
            let log_start = log_start_offset(leader).await;
            let ack =
                AppendAck { error_code: e.code(), base_offset: -1, log_append_time: -1, log_start_offset: log_start };
            let details = e.record_errors().map(|(m, errors)| (m.to_string(), errors.to_vec()));
            return PartitionAnswer::Rejected(ack, details);
        }
    };
    // The topic's compression.type: a batch in another codec is stored recompressed.
    let (records, header) = match recompress::wanted(&header, compression) {
        None => (records, header),
        Some(target) => match recompress::recompress(&records, &header, target, max_message_bytes) {
            Ok(batch) => match BatchHeader::parse(&batch) {
                Ok(h) => (bytes::Bytes::from(batch), h),
                Err(_) => return err(ResponseError::InvalidRecord.code()),
            },
            Err(e) => {
                tracing::debug!(topic = name, "produce refused at recompression: {e}");
                return err(e.code());
            }
        },
    };
    // The records stay in the request's buffer (or the recompressed one); only the header is
    // copied, to be patched.
    let Ok(mut data) = Incoming::new(records) else {
        return err(ResponseError::InvalidRecord.code());
    };
    let mut header = header;
    if validated.needs_patch(&header) {
        data.set_max_timestamp(validated.max_timestamp, validated.log_append_time.is_some());
        match data.header() {
            Ok(h) => header = h,
            Err(_) => return err(ResponseError::InvalidRecord.code()),
        }
    }
    let (tx, rx) = oneshot::channel();
    let reply = if acks == 0 { None } else { Some(tx) };
    let msg = Append { data, header, verified, reply };
    if enqueue(leader, msg).await {
        PartitionAnswer::Waiting(rx, validated.log_append_time)
    } else {
        s.evict(name);
        err(super::LEADER_GONE.code())
    }
}

async fn log_start_offset(leader: &actix::Addr<PartitionLeader>) -> i64 {
    let (tx, rx) = oneshot::channel();
    if leader.send(ListOffset { timestamp: -2, isolation_level: 0, reply: tx }).await.is_err() {
        return -1;
    }
    rx.await.map_or(-1, |a| a.offset)
}

/// A partition's batch that passed its leader and shape checks, before the transaction
/// verification and the append.
struct Ready {
    leader: actix::Addr<PartitionLeader>,
    header: BatchHeader,
    records: bytes::Bytes,
    verified: Verified,
    /// The topic's timestamp rules (its configs, else the broker's).
    timestamp: TimestampPolicy,
    /// The topic's compression.type: None stores the batch as sent.
    compression: Option<Compression>,
    max_message_bytes: usize,
    /// "topic-index", for the validator's messages.
    partition: String,
}

enum Prepared {
    Done(PartitionAnswer),
    Ready(Ready),
}

/// One partition's leader (eos-rules 44) and batch shape.
fn prepare_partition(
    s: &Session,
    version: i16,
    topic: &TopicHandle,
    p: PartitionProduceData,
    parsed: Option<BatchHeader>,
) -> Prepared {
    let leader = match s.leader(topic, p.index) {
        Ok(leader) => leader,
        Err(code) => return Prepared::Done(err(code)),
    };
    let limits = topic.produce_limits();
    let header = match check_parsed_partition_data(p.records.as_deref(), parsed, limits.max_message_bytes, version) {
        Ok(header) => header,
        Err(e) => return Prepared::Done(err(e.code())),
    };
    let records = p.records.unwrap_or_default();
    let partition = format!("{}-{}", topic.meta.name, p.index);
    Prepared::Ready(Ready {
        leader,
        header,
        records,
        verified: Verified::No,
        timestamp: limits.timestamp,
        compression: limits.compression,
        max_message_bytes: limits.max_message_bytes,
        partition,
    })
}

/// Enqueues every append now; the returned future completes with the response (None for acks=0).
pub async fn dispatch(
    s: Rc<Session>,
    version: i16,
    req: ProduceRequest,
) -> LocalBoxFuture<'static, Option<ProduceResponse>> {
    let acks = req.acks;
    let transactional_id = req.transactional_id.as_ref().map(|t| t.0.to_string());
    // Each partition's batch header, parsed once: the request-wide checks read the batches'
    // flags before any batch is validated, as Kafka's ProduceRequest does.
    let headers: Vec<Vec<Option<BatchHeader>>> = req
        .topic_data
        .iter()
        .map(|t| t.partition_data.iter().map(|p| p.records.as_ref().and_then(|r| BatchHeader::parse(r).ok())).collect())
        .collect();
    // Invalid acks, eos-rules 24 and 25: the same answer for every partition.
    let refused = check_request(acks, transactional_id.is_some(), headers.iter().flatten().flatten()).err();
    // A transactional Produce needs WRITE on its transactional id, else every partition is
    // refused (Kafka's check); each topic needs WRITE on it.
    let txn_denied =
        transactional_id.as_deref().is_some_and(|id| !s.authorized(acl::OP_WRITE, acl::RESOURCE_TRANSACTIONAL_ID, id));
    let mut prepared: Vec<(String, Vec<(i32, Prepared)>)> = Vec::with_capacity(req.topic_data.len());
    for (t, headers) in req.topic_data.into_iter().zip(headers) {
        let name = t.name.0.to_string();
        let handle = match refused {
            Some(e) => Err(e.code()),
            None if txn_denied => Err(ResponseError::TransactionalIdAuthorizationFailed.code()),
            None if !s.authorized(acl::OP_WRITE, acl::RESOURCE_TOPIC, &name) => {
                Err(ResponseError::TopicAuthorizationFailed.code())
            }
            // Kafka: "Cannot append to internal topic" (store::topics::INTERNAL_TOPICS).
            None if is_internal(&name) => Err(ResponseError::InvalidTopicException.code()),
            None => s.topic(&name, false).await,
        };
        let parts = t
            .partition_data
            .into_iter()
            .zip(headers)
            .map(|(p, parsed)| {
                let index = p.index;
                match &handle {
                    Err(code) => (index, Prepared::Done(err(*code))),
                    Ok(topic) => (index, prepare_partition(&s, version, topic, p, parsed)),
                }
            })
            .collect();
        prepared.push((name, parts));
    }
    if let Some(id) = transactional_id.as_deref() {
        verify_all(&s, version, id, &mut prepared).await;
    }
    let mut topics = Vec::with_capacity(prepared.len());
    for (name, parts) in prepared {
        let mut answers = Vec::with_capacity(parts.len());
        for (index, part) in parts {
            let answer = match part {
                Prepared::Done(answer) => answer,
                Prepared::Ready(r) => validate_and_append(&s, &name, r, acks).await,
            };
            answers.push((index, answer));
        }
        topics.push((name, answers));
    }
    async move {
        if acks == 0 {
            return None;
        }
        let mut resp = ProduceResponse::default();
        for (name, answers) in topics {
            let partitions = join_all(answers.into_iter().map(|(index, answer)| async move {
                let (ack, details) = settled(answer).await;
                partition_response(version, index, ack, details)
            }))
            .await;
            let mut t = TopicProduceResponse::default();
            t.name = TopicName(str_bytes(&name));
            t.partition_responses = partitions;
            resp.responses.push(t);
        }
        Some(resp)
    }
    .boxed_local()
}

/// A partition's answer once its append is durable (or failed).
async fn settled(answer: PartitionAnswer) -> (AppendAck, Option<(String, Vec<RecordError>)>) {
    match answer {
        PartitionAnswer::Done(a) => (a, None),
        PartitionAnswer::Rejected(a, details) => (a, details),
        PartitionAnswer::Waiting(rx, append_time) => {
            // The leader went away mid-append (topic deleted or shutdown).
            let mut a = rx.await.unwrap_or(AppendAck {
                error_code: super::LEADER_GONE.code(),
                base_offset: -1,
                log_append_time: -1,
                log_start_offset: -1,
            });
            // Kafka answers the LogAppendTime it stamped (-1 under CreateTime); a duplicate
            // already carries its original batch's time.
            if a.error_code == 0 && a.log_append_time == -1 {
                a.log_append_time = append_time.unwrap_or(-1);
            }
            (a, None)
        }
    }
}

fn partition_response(
    version: i16,
    index: i32,
    a: AppendAck,
    details: Option<(String, Vec<RecordError>)>,
) -> PartitionProduceResponse {
    let mut p = PartitionProduceResponse::default();
    p.index = index;
    p.error_code = a.error_code;
    p.base_offset = a.base_offset;
    p.log_append_time_ms = a.log_append_time;
    p.log_start_offset = a.log_start_offset;
    // record_errors and error_message exist from Produce v8 (KIP-467).
    if let Some((message, errors)) = details.filter(|_| version >= 8) {
        p.error_message = Some(str_bytes(&message));
        p.record_errors = errors
            .into_iter()
            .map(|e| {
                BatchIndexAndErrorMessage::default()
                    .with_batch_index(e.batch_index)
                    .with_batch_index_error_message(Some(str_bytes(&e.message)))
            })
            .collect();
    }
    p
}

/// Puts the message in the leader's bounded mailbox, waiting while it is full so that the
/// appends of one connection keep their order. False when the leader is gone.
async fn enqueue(leader: &actix::Addr<PartitionLeader>, mut msg: Append) -> bool {
    loop {
        match leader.try_send(msg) {
            Ok(()) => return true,
            Err(SendError::Full(m)) => {
                msg = m;
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            Err(SendError::Closed(_)) => return false,
        }
    }
}

/// eos-rules 27-28: before a transaction opens on a partition, the coordinator must confirm
/// the partition is in it (TV2: adds it). Every transactional batch of the request is asked
/// about in one call per producer (Kafka's AddPartitionsToTxnManager sends one request for
/// them): one call per partition would make the coordinator answer all but the first with
/// CONCURRENT_TRANSACTIONS while the first's state write is under way. Sets each batch's
/// `verified`, or turns it into its Produce error.
async fn verify_all(
    s: &Session,
    version: i16,
    transactional_id: &str,
    prepared: &mut [(String, Vec<(i32, Prepared)>)],
) {
    // Each leader first: does this batch open a transaction there? (TV1: under which guard.)
    let mut asks: BTreeMap<(i64, i16), BTreeSet<TopicPartition>> = BTreeMap::new();
    let mut guards: BTreeMap<TopicPartition, u64> = BTreeMap::new();
    for (name, parts) in prepared.iter_mut() {
        for (index, part) in parts.iter_mut() {
            let Prepared::Ready(r) = part else { continue };
            if !r.header.is_transactional() {
                continue;
            }
            let (tx, rx) = oneshot::channel();
            let begin = BeginVerification {
                producer_id: r.header.producer_id,
                producer_epoch: r.header.producer_epoch,
                base_sequence: r.header.base_sequence,
                tv2: version >= 12,
                reply: tx,
            };
            let begun = match r.leader.send(begin).await {
                Ok(()) => rx.await.ok(),
                Err(_) => None,
            };
            match begun {
                None => *part = Prepared::Done(err(super::LEADER_GONE.code())),
                Some(Err(e)) => *part = Prepared::Done(err(e.code())),
                Some(Ok(None)) => {}
                Some(Ok(Some(guard))) => {
                    let tp = (name.clone(), *index);
                    guards.insert(tp.clone(), guard);
                    asks.entry((r.header.producer_id, r.header.producer_epoch)).or_default().insert(tp);
                }
            }
        }
    }
    let mut answers: BTreeMap<TopicPartition, Result<Verified, i16>> = BTreeMap::new();
    for ((pid, epoch), partitions) in asks {
        for (tp, answer) in coordinator_verdicts(s, version, transactional_id, pid, epoch, partitions).await {
            let verified = answer.map(|tv2| match tv2 {
                true => Verified::Tv2Added,
                false => Verified::Guard(guards.get(&tp).copied().unwrap_or_default()),
            });
            answers.insert(tp, verified);
        }
    }
    for (name, parts) in prepared.iter_mut() {
        for (index, part) in parts.iter_mut() {
            let Prepared::Ready(r) = part else { continue };
            match answers.get(&(name.clone(), *index)).cloned() {
                Some(Ok(verified)) => r.verified = verified,
                Some(Err(code)) => *part = Prepared::Done(err(code)),
                None => {}
            }
        }
    }
}

/// The coordinator's answer for each partition: Ok(true) added (TV2, Produce v12, after its
/// CONCURRENT_TRANSACTIONS retries), Ok(false) verified (TV1), or the Produce error code.
async fn coordinator_verdicts(
    s: &Session,
    version: i16,
    transactional_id: &str,
    pid: i64,
    epoch: i16,
    partitions: BTreeSet<TopicPartition>,
) -> BTreeMap<TopicPartition, Result<bool, i16>> {
    let tv2 = version >= 12;
    let retry = ImplicitAddRetry::starting(now_ms());
    loop {
        let answers = s.add_to_transaction_each(transactional_id, pid, epoch, partitions.clone(), !tv2).await;
        // eos-rules 29: Produce v12 (TV2) adds the partitions implicitly and retries while the
        // coordinator is busy with this transaction.
        let busy = answers.values().find_map(|a| a.err().filter(|e| tv2 && retry.retry_after(*e, now_ms()).is_some()));
        if busy.is_some() {
            tokio::time::sleep(Duration::from_millis(ImplicitAddRetry::BACKOFF_MS.unsigned_abs())).await;
            continue;
        }
        return answers
            .into_iter()
            .map(|(tp, a)| (tp, a.map(|()| tv2).map_err(|e| produce_verification_error(e, version))))
            .collect();
    }
}
