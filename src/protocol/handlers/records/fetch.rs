//! Fetch (key 1): reads stored batches as they are, long-polls on max_wait_ms / min_bytes, and
//! honours the response and partition byte limits (the first batch is always returned whole).
//! Every partition read is reserved in the broker-wide response budget first
//! (protocol::response_budget); the answer carries the charge until it is written.
//! KIP-227 sessions (protocol::fetch_session) pick what is read and what an incremental
//! answer carries.

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::select_all;
use futures::FutureExt;
use kafka_protocol::messages::fetch_response::{AbortedTransaction, FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{FetchRequest, FetchResponse, ProducerId, TopicName};
use tokio::sync::oneshot;

use crate::actors::messages::{Read as ReadPartition, ReadResult, Stored, WaitForData};
use crate::actors::topics::TopicHandle;
use crate::error_code::ResponseError;
use crate::protocol::fetch_session::{Answered, FetchPartition, FetchSessionError, PartitionKey, SessionRequest};
use crate::protocol::response_budget::Charge;
use crate::protocol::{str_bytes, Session};
use crate::store::auth::acl;
use crate::store::log::file_range::{stand_in, FileRange};
use crate::store::ownership::{check_leader_epoch, Owned};

struct Wanted {
    topic: Arc<str>,
    partition: i32,
    offset: i64,
    max_bytes: usize,
    current_leader_epoch: i32,
}

/// The answer, the response-budget charge of its records, and the file ranges its records stand
/// in for (sent with sendfile, protocol::outgoing), in the order they are encoded.
pub async fn handle(s: Rc<Session>, _version: i16, req: FetchRequest) -> (FetchResponse, Charge, Vec<FileRange>) {
    // The session decides what is read: the request's partitions, or all of an incremental
    // session's at their cached offsets.
    let plan = match s.fetch_sessions.begin(session_request(&req)) {
        Ok(plan) => plan,
        Err(e) => return (session_error(e), Charge::none(), Vec::new()),
    };
    // The broker's fetch.max.bytes caps what a client may ask for (memory per response).
    let cap = s.settings.network.fetch_max_bytes;
    let wanted: Vec<Wanted> = plan
        .partitions
        .iter()
        .map(|p| Wanted {
            topic: p.key.topic.clone(),
            partition: p.key.partition,
            offset: p.fetch_offset,
            max_bytes: (p.max_bytes.max(0) as usize).min(cap),
            current_leader_epoch: p.current_leader_epoch,
        })
        .collect();
    let deadline = Instant::now() + Duration::from_millis(req.max_wait_ms.max(0) as u64);
    let min_bytes = req.min_bytes.max(0) as usize;
    let max_bytes = if req.max_bytes <= 0 { cap } else { (req.max_bytes as usize).min(cap) };
    loop {
        let read = read_all(&s, &wanted, max_bytes, req.isolation_level).await;
        let total: usize = read.results.iter().map(|r| r.records.len()).sum();
        let any_error = read.results.iter().any(|r| r.error_code != 0);
        if total >= min_bytes.max(1) || any_error || Instant::now() >= deadline || wanted.is_empty() {
            // The session remembers what this answer says (and leaves out what did not change).
            let answered: Vec<Answered> = read.results.iter().map(answered).collect();
            trace_answer(&req, &wanted, &read.results);
            return match s.fetch_sessions.finish(&plan, &answered) {
                Ok(reply) => {
                    let (mut resp, files) = build(&wanted, read.results, &reply.include, req.isolation_level);
                    if reply.session_id != req.session_id && reply.session_id != 0 {
                        tracing::debug!(session_id = reply.session_id, "fetch session created");
                    }
                    resp.session_id = reply.session_id;
                    (resp, read.charge, files)
                }
                Err(e) => (session_error(e), Charge::none(), Vec::new()),
            };
        }
        let mut waits = Vec::new();
        if read.starved {
            // The broker-wide budget is spent: wait for bytes to come back, not for data.
            let budget = s.responses.clone();
            waits.push(async move { budget.released().await }.boxed_local());
        } else {
            // Wait for any partition's readable end to move past what we just saw.
            for (w, r) in wanted.iter().zip(&read.results) {
                if let Ok(h) = s.topic(&w.topic, false).await {
                    if let Ok(leader) = s.leader(&h, w.partition) {
                        let (tx, rx) = oneshot::channel();
                        let seen = if w.offset > r.high_watermark { w.offset } else { r.high_watermark };
                        if leader.try_send(WaitForData { offset: seen, reply: tx }).is_ok() {
                            waits.push(rx.map(|_| ()).boxed_local());
                        }
                    }
                }
            }
        }
        waits.push(tokio::time::sleep_until(deadline.into()).boxed_local());
        // What this pass read is not answered: its bytes go back before the wait.
        drop(read);
        let _ = select_all(waits).await;
    }
}

/// At TRACE, what a Fetch answers per partition: where it read, the offsets it saw, the bytes.
fn trace_answer(req: &FetchRequest, wanted: &[Wanted], results: &[ReadResult]) {
    if !tracing::enabled!(tracing::Level::TRACE) {
        return;
    }
    let parts: Vec<String> = wanted
        .iter()
        .zip(results)
        .map(|(w, r)| {
            let (hw, lso, bytes) = (r.high_watermark, r.last_stable_offset, r.records.len());
            format!("{}-{}@{} hw={hw} lso={lso} bytes={bytes} err={}", w.topic, w.partition, w.offset, r.error_code)
        })
        .collect();
    tracing::trace!(session = req.session_id, epoch = req.session_epoch, "fetch answers {}", parts.join(", "));
}

/// One pass over the wanted partitions.
struct Read {
    results: Vec<ReadResult>,
    /// What the records hold of the response budget.
    charge: Charge,
    /// A partition went without data because the response budget was spent.
    starved: bool,
}

async fn read_all(s: &Session, wanted: &[Wanted], max_bytes: usize, isolation_level: i8) -> Read {
    let mut budget = max_bytes;
    let mut returned_data = false;
    let mut read = Read { results: Vec::with_capacity(wanted.len()), charge: Charge::none(), starved: false };
    // READ on each topic, asked once per topic of the request (a fetch names many partitions).
    let mut readable: std::collections::HashMap<&str, bool> = std::collections::HashMap::new();
    for w in wanted {
        let mut r = ReadResult {
            error_code: ResponseError::UnknownTopicOrPartition.code(),
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            ..Default::default()
        };
        let may_read = *readable
            .entry(w.topic.as_ref())
            .or_insert_with(|| s.authorized(acl::OP_READ, acl::RESOURCE_TOPIC, &w.topic));
        if !may_read {
            r.error_code = ResponseError::TopicAuthorizationFailed.code();
        } else if let Some(here) = s.internal_partition(&w.topic, w.partition) {
            r = internal_read(here, w.offset);
        } else if let Some(h) = found(&mut r, s.topic(&w.topic, false).await) {
            // A client that knows another leader epoch than this leader's is told so before
            // any offset is looked at (Kafka's Partition.fetchRecords): FENCED_LEADER_EPOCH when
            // its epoch is older, UNKNOWN_LEADER_EPOCH when newer (a leader that does not know
            // yet that it was replaced, or one that just took over); it refreshes its metadata
            // and retries, never reading a stale leader's offsets as out of range.
            let owned = Owned::Partition { topic: w.topic.to_string(), partition: w.partition };
            let epoch = s.directory.lease(&owned).map_or(0, |l| l.epoch);
            let leader = s
                .leader(&h, w.partition)
                .and_then(|l| check_leader_epoch(w.current_leader_epoch, epoch).map(|()| l).map_err(|e| e.code()));
            if let Err(code) = leader {
                r.error_code = code;
            }
            if let Ok(leader) = leader {
                // KIP-74: once the request's budget is spent, later partitions still answer
                // (offsets, no data); likewise when the broker's response budget is spent.
                let limit = w.max_bytes.min(budget).min(s.responses.limit());
                let charge = if budget == 0 { None } else { s.responses.try_reserve(limit.max(1)) };
                read.starved |= budget > 0 && charge.is_none();
                let (tx, rx) = oneshot::channel();
                let max_bytes = if charge.is_some() { limit } else { 0 };
                let msg = ReadPartition { offset: w.offset, max_bytes, isolation_level, reply: tx };
                match leader.send(msg).await {
                    Ok(()) => match rx.await {
                        Ok(res) => r = res,
                        Err(_) => r.error_code = super::LEADER_GONE.code(),
                    },
                    Err(_) => {
                        s.evict(&w.topic);
                        r.error_code = super::LEADER_GONE.code();
                    }
                }
                // KIP-74 (Kafka's ReplicaManager.readFromLog, minOneMessage): only the first
                // partition that returns data may return a first batch larger than its limit; a
                // later one whose first batch does not fit what is left returns none.
                if returned_data && r.records.len() > limit {
                    r.records = Default::default();
                }
                match charge {
                    Some(mut charge) => {
                        charge.settle(r.records.len());
                        read.charge.absorb(charge);
                    }
                    None => r.records = Default::default(),
                }
                returned_data |= !r.records.is_empty();
            }
        }
        budget = budget.saturating_sub(r.records.len());
        read.results.push(r);
    }
    read
}

/// The topic's handle, or its lookup's error code written into `r` (UNKNOWN_TOPIC_OR_PARTITION
/// when there is no such topic, NOT_LEADER_OR_FOLLOWER when the broker is stopping).
fn found(r: &mut ReadResult, topic: Result<TopicHandle, i16>) -> Option<TopicHandle> {
    topic.map_err(|code| r.error_code = code).ok()
}

/// A read of an internal topic's partition (Session::internal_partition): an empty log.
fn internal_read(here: Result<(), i16>, offset: i64) -> ReadResult {
    let mut r = ReadResult { high_watermark: 0, last_stable_offset: 0, log_start_offset: 0, ..Default::default() };
    r.error_code = match here {
        Ok(()) if offset == 0 => 0,
        Ok(()) => ResponseError::OffsetOutOfRange.code(),
        Err(code) => {
            (r.high_watermark, r.last_stable_offset, r.log_start_offset) = (-1, -1, -1);
            code
        }
    };
    r
}

/// The request's session fields and partitions, for protocol::fetch_session.
fn session_request(req: &FetchRequest) -> SessionRequest {
    let mut partitions = Vec::new();
    for t in &req.topics {
        let topic: Arc<str> = Arc::from(t.topic.0.as_str());
        partitions.extend(t.partitions.iter().map(|p| FetchPartition {
            key: PartitionKey { topic: topic.clone(), partition: p.partition },
            fetch_offset: p.fetch_offset,
            log_start_offset: p.log_start_offset,
            max_bytes: p.partition_max_bytes,
            current_leader_epoch: p.current_leader_epoch,
        }));
    }
    let mut forgotten = Vec::new();
    for t in &req.forgotten_topics_data {
        let topic: Arc<str> = Arc::from(t.topic.0.as_str());
        forgotten.extend(t.partitions.iter().map(|&partition| PartitionKey { topic: topic.clone(), partition }));
    }
    SessionRequest { session_id: req.session_id, epoch: req.session_epoch, partitions, forgotten }
}

fn answered(r: &ReadResult) -> Answered {
    Answered {
        error_code: r.error_code,
        has_records: !r.records.is_empty(),
        high_watermark: r.high_watermark,
        last_stable_offset: r.last_stable_offset,
        log_start_offset: r.log_start_offset,
    }
}

/// Kafka's SessionErrorContext: the top-level error, no session, no partitions.
fn session_error(e: FetchSessionError) -> FetchResponse {
    tracing::debug!(error = %e, "fetch session error");
    let mut resp = FetchResponse::default();
    resp.error_code = e.code();
    resp.session_id = 0;
    resp
}

/// The response and the file ranges its records stand in for; `include` says which partitions it
/// carries (all but an incremental one's unchanged partitions).
fn build(
    wanted: &[Wanted],
    results: Vec<ReadResult>,
    include: &[bool],
    isolation_level: i8,
) -> (FetchResponse, Vec<FileRange>) {
    let mut resp = FetchResponse::default();
    let mut files = Vec::new();
    for ((w, r), _) in wanted.iter().zip(results).zip(include).filter(|(_, inc)| **inc) {
        let mut p = PartitionData::default();
        p.partition_index = w.partition;
        p.error_code = r.error_code;
        p.high_watermark = r.high_watermark;
        p.last_stable_offset = r.last_stable_offset;
        p.log_start_offset = r.log_start_offset;
        // A partition refused before any read (READ denied) carries Kafka's generated default,
        // an empty list; one that was read carries it for read_committed only.
        let refused = r.error_code == ResponseError::TopicAuthorizationFailed.code();
        p.aborted_transactions = (isolation_level == 1 || refused).then(|| {
            r.aborted
                .iter()
                .map(|(pid, first)| {
                    let mut a = AbortedTransaction::default();
                    a.producer_id = ProducerId(*pid);
                    a.first_offset = *first;
                    a
                })
                .collect()
        });
        p.records = Some(match r.records {
            Stored::Mem(b) => b,
            // Ranges above MAX_STAND_IN come in memory (actors::partition).
            Stored::File(range) => match stand_in(range.len) {
                Some(s) => {
                    files.push(range);
                    s
                }
                None => {
                    p.error_code = ResponseError::KafkaStorageError.code();
                    Bytes::new()
                }
            },
        });
        match resp.responses.last_mut() {
            Some(t) if t.topic.0.as_str() == &*w.topic => t.partitions.push(p),
            _ => {
                let mut t = FetchableTopicResponse::default();
                t.topic = TopicName(str_bytes(&w.topic));
                t.partitions.push(p);
                resp.responses.push(t);
            }
        }
    }
    (resp, files)
}
