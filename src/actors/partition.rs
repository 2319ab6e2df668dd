//! PartitionLeader: owns one partition's Log and ProducerStateTable. Appends are written at once
//! and answered after the syncer has made them durable; the high watermark only covers durable
//! data, so consumers never see what a crash could take back.

use crate::error_code::ResponseError;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Duration;

use actix::{Actor, ActorContext, AsyncContext, Context, Handler};
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::messages::*;
use super::syncer::{SyncJob, Synced, Syncer};
use crate::store::clock::now_ms;
use crate::store::control;
use crate::store::log::{Log, LogError};
use crate::store::producer_state::{AppendDecision, CompletedTxn, ProducerStateTable};
use crate::store::records;
use crate::store::topics::write_atomic;

const SNAPSHOT_FILE: &str = "producer-state.json";
/// Appends waiting for their fsync; beyond this the mailbox stops being drained fast enough and
/// senders see a full mailbox (backpressure).
pub const MAILBOX_CAPACITY: usize = 1024;

#[derive(Serialize, Deserialize)]
struct Snapshot {
    /// The table and the aborted list reflect every batch below this offset.
    offset: i64,
    table: ProducerStateTable,
    #[serde(default)]
    aborted: Vec<CompletedTxn>,
}

/// Someone waiting for an offset to become durable.
enum Waiter {
    Append(Reply<AppendAck>, AppendAck),
    Marker(Reply<i16>),
}

pub struct PartitionLeader {
    name: String,
    dir: PathBuf,
    log: Log,
    producers: ProducerStateTable,
    /// The transaction index: aborted transactions still in the log, by first offset.
    aborted: Vec<CompletedTxn>,
    /// Everything below is durable and readable.
    high_watermark: i64,
    pending: VecDeque<(i64, Waiter)>,
    waiters: Vec<(i64, Reply<()>)>,
    sync_in_flight: bool,
    failed: bool,
    /// Log end offset at the last producer-state snapshot.
    snapshot_offset: i64,
    syncer: Syncer,
    retention_check: Duration,
    producer_expiration_ms: i64,
}

impl PartitionLeader {
    /// Opens the log (recovery) and rebuilds producer state from the snapshot plus the log tail.
    pub fn open(
        name: String,
        dir: PathBuf,
        log_config: crate::store::log::LogConfig,
        syncer: Syncer,
        retention_check: Duration,
        producer_expiration_ms: i64,
    ) -> Result<PartitionLeader, LogError> {
        let (log, info) = Log::open(&dir, log_config)?;
        if info.truncated_bytes > 0 {
            tracing::warn!(partition = %name, bytes = info.truncated_bytes, "recovery truncated a torn log tail");
        }
        let end = log.next_offset();
        let snapshot: Option<Snapshot> =
            std::fs::read(dir.join(SNAPSHOT_FILE)).ok().and_then(|b| serde_json::from_slice(&b).ok());
        let (mut producers, mut aborted, from) = match snapshot {
            Some(s) if s.offset <= end => (s.table, s.aborted, s.offset),
            _ => (ProducerStateTable::new(), Vec::new(), log.log_start_offset()),
        };
        // Rebuild what the snapshot does not cover from the batch headers (and markers).
        let now = now_ms();
        for h in log.headers_from(from)? {
            if !h.is_control() {
                producers.record_append(&h, now);
                continue;
            }
            let batch = log.read(h.base_offset, h.base_offset + 1, h.total_size())?;
            if let Some(m) = control::parse_marker(&batch) {
                let done = producers.record_marker(
                    h.producer_id,
                    h.producer_epoch,
                    m.coordinator_epoch,
                    h.base_offset,
                    m.commit,
                    now,
                );
                aborted.extend(done.filter(|t| t.aborted));
            }
        }
        // The high watermark exposes what is on disk: recovery found the log end in the page
        // cache, which a power loss after an earlier crash could still take back.
        for f in log.segment_files() {
            f.sync_data()?;
        }
        Ok(PartitionLeader {
            name,
            dir,
            high_watermark: end,
            log,
            producers,
            aborted,
            pending: VecDeque::new(),
            waiters: Vec::new(),
            sync_in_flight: false,
            failed: false,
            snapshot_offset: from,
            syncer,
            retention_check,
            producer_expiration_ms,
        })
    }

    /// A partition whose log could not be opened: it owns no file, answers produce, fetch,
    /// markers and ListOffsets with KAFKA_STORAGE_ERROR, and never writes a snapshot, so what
    /// is on disk stays as it was until a restart opens it.
    pub fn offline(
        name: String,
        dir: PathBuf,
        log_config: crate::store::log::LogConfig,
        syncer: Syncer,
        retention_check: Duration,
        producer_expiration_ms: i64,
    ) -> PartitionLeader {
        PartitionLeader {
            name,
            log: Log::offline(&dir, log_config),
            dir,
            high_watermark: 0,
            producers: ProducerStateTable::new(),
            aborted: Vec::new(),
            pending: VecDeque::new(),
            waiters: Vec::new(),
            sync_in_flight: false,
            failed: true,
            snapshot_offset: 0,
            syncer,
            retention_check,
            producer_expiration_ms,
        }
    }

    fn log_start(&self) -> i64 {
        self.log.log_start_offset()
    }

    fn last_stable_offset(&self) -> i64 {
        self.producers.first_unstable_offset().map_or(self.high_watermark, |f| f.min(self.high_watermark))
    }

    fn error_ack(&self, code: i16, with_log_start: bool) -> AppendAck {
        AppendAck {
            error_code: code,
            base_offset: -1,
            log_append_time: -1,
            log_start_offset: if with_log_start { self.log_start() } else { -1 },
        }
    }

    fn request_sync(&mut self, ctx: &mut Context<Self>) {
        if self.sync_in_flight || self.failed || self.log.next_offset() <= self.high_watermark {
            return;
        }
        let files = self.log.sync_handles();
        self.sync_in_flight = true;
        let job = SyncJob { files, upto: self.log.next_offset(), reply: ctx.address().recipient() };
        if let Err(e) = self.syncer.submit(job) {
            self.fail(e);
        }
    }

    /// A failed fsync leaves the log in an unknown state: stop acknowledging (KAFKA_STORAGE_ERROR).
    fn fail(&mut self, why: String) {
        tracing::error!(partition = %self.name, "log failure, partition offline: {why}");
        self.failed = true;
        let ack = self.error_ack(ResponseError::KafkaStorageError.code(), false);
        for (_, waiter) in self.pending.drain(..) {
            match waiter {
                Waiter::Append(reply, _) => {
                    let _ = reply.send(ack);
                }
                Waiter::Marker(reply) => {
                    let _ = reply.send(ResponseError::KafkaStorageError.code());
                }
            }
        }
    }

    fn write_snapshot(&mut self) {
        self.snapshot_offset = self.log.next_offset();
        let snap =
            Snapshot { offset: self.log.next_offset(), table: self.producers.clone(), aborted: self.aborted.clone() };
        match serde_json::to_vec(&snap) {
            Ok(bytes) => {
                if let Err(e) = write_atomic(&self.dir.join(SNAPSHOT_FILE), &bytes) {
                    tracing::warn!(partition = %self.name, "producer snapshot not written: {e}");
                }
            }
            Err(e) => tracing::warn!(partition = %self.name, "producer snapshot not encoded: {e}"),
        }
    }

    fn housekeeping(&mut self) {
        match self.log.enforce_retention(now_ms()) {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(partition = %self.name, segments = n, log_start = self.log_start(), "retention removed segments");
                self.producers.truncate_head(self.log_start());
                let start = self.log_start();
                self.aborted.retain(|t| t.last_offset >= start);
            }
            Err(e) => tracing::warn!(partition = %self.name, "retention: {e}"),
        }
        self.producers.expire(now_ms(), self.producer_expiration_ms);
        // Everything below the high watermark is on disk: the next recovery starts there.
        if let Err(e) = self.log.checkpoint_recovery_point(self.high_watermark) {
            tracing::warn!(partition = %self.name, "recovery point not written: {e}");
        }
        // Bound the replay after a crash: snapshot the producer state when the log moved.
        if self.log.next_offset() != self.snapshot_offset {
            self.write_snapshot();
        }
    }
}

impl Actor for PartitionLeader {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(MAILBOX_CAPACITY);
        ctx.run_interval(self.retention_check, |act, _| act.housekeeping());
    }
}

impl Handler<Append> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: Append, ctx: &mut Self::Context) {
        let Append { data, header, verified, reply } = msg;
        let answer = |reply: Option<Reply<AppendAck>>, ack: AppendAck| {
            if let Some(r) = reply {
                let _ = r.send(ack);
            }
        };
        if self.failed {
            return answer(reply, self.error_ack(ResponseError::KafkaStorageError.code(), false));
        }
        // eos-rules 14: shape checks answer with LogStartOffset (rule 22).
        if let Err(e) = ProducerStateTable::check_client_batch_shape(&header) {
            return answer(reply, self.error_ack(e.code(), true));
        }
        // eos-rules 27/28: a transaction may only open here after the coordinator verified the
        // partition, and only if no marker for this producer slipped in since.
        if let Err(e) = self.producers.check_verification(&header, verified) {
            return answer(reply, self.error_ack(e.code(), true));
        }
        match self.producers.check_append(&header) {
            Err(e) => {
                tracing::debug!(partition = %self.name, "append refused: {e}");
                answer(reply, self.error_ack(e.code(), true))
            }
            Ok(AppendDecision::Duplicate(m)) => {
                // eos-rules 19: answer with the original offset once it is durable, and (as Kafka
                // does for a duplicate) the original batch's max timestamp as LogAppendTime.
                let ack = AppendAck {
                    error_code: 0,
                    base_offset: m.first_offset,
                    log_append_time: m.timestamp,
                    log_start_offset: self.log_start(),
                };
                match reply {
                    Some(r) if m.last_offset >= self.high_watermark => {
                        self.pending.push_back((m.last_offset, Waiter::Append(r, ack)))
                    }
                    other => answer(other, ack),
                }
            }
            Ok(AppendDecision::Append) => match self.log.append(data) {
                Ok(h) => {
                    self.producers.record_append(&h, now_ms());
                    if let Some(r) = reply {
                        let ack = AppendAck {
                            error_code: 0,
                            base_offset: h.base_offset,
                            log_append_time: -1,
                            log_start_offset: self.log_start(),
                        };
                        self.pending.push_back((h.last_offset(), Waiter::Append(r, ack)));
                    }
                    self.request_sync(ctx);
                }
                // A batch the log refuses leaves it unchanged: answer INVALID_RECORD, stay online.
                Err(LogError::InvalidBatch(e)) => {
                    tracing::warn!(partition = %self.name, "append refused by the log: {e}");
                    answer(reply, self.error_ack(ResponseError::InvalidRecord.code(), true))
                }
                Err(e) => {
                    // Nothing counted as written (the log end did not move): refuse this batch
                    // and let the producer retry; only a failed fsync takes the partition offline.
                    tracing::error!(partition = %self.name, "append not written: {e}");
                    answer(reply, self.error_ack(ResponseError::KafkaStorageError.code(), false));
                }
            },
        }
    }
}

impl Handler<Synced> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: Synced, ctx: &mut Self::Context) {
        self.sync_in_flight = false;
        if let Err(e) = msg.result {
            return self.fail(format!("fsync: {e}"));
        }
        self.high_watermark = self.high_watermark.max(msg.upto);
        while let Some((last, _)) = self.pending.front() {
            if *last >= self.high_watermark {
                break;
            }
            match self.pending.pop_front() {
                Some((_, Waiter::Append(reply, mut ack))) => {
                    ack.log_start_offset = self.log_start();
                    let _ = reply.send(ack);
                }
                Some((_, Waiter::Marker(reply))) => {
                    let _ = reply.send(0);
                }
                None => break,
            }
        }
        let hw = self.high_watermark;
        let (ready, waiting): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.waiters).into_iter().partition(|(o, _)| *o < hw);
        self.waiters = waiting;
        for (_, w) in ready {
            let _ = w.send(());
        }
        self.request_sync(ctx);
    }
}

impl Handler<Read> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: Read, _: &mut Self::Context) {
        let upper = if msg.isolation_level == 1 { self.last_stable_offset() } else { self.high_watermark };
        let mut result = ReadResult {
            error_code: 0,
            high_watermark: self.high_watermark,
            last_stable_offset: self.last_stable_offset(),
            log_start_offset: self.log_start(),
            records: Bytes::new(),
            aborted: Vec::new(),
        };
        if self.failed {
            result.error_code = ResponseError::KafkaStorageError.code();
        } else {
            match self.log.read(msg.offset, upper, msg.max_bytes) {
                Ok(records) => {
                    result.records = records;
                    if msg.isolation_level == 1 {
                        // eos-rules 52: aborted transactions overlapping [fetch offset, LSO).
                        // The index is in marker order: skip what ended before the fetch offset.
                        let from = self.aborted.partition_point(|t| t.last_offset < msg.offset);
                        result.aborted = self.aborted[from..]
                            .iter()
                            .filter(|t| t.first_offset < upper)
                            .map(|t| (t.producer_id, t.first_offset))
                            .collect();
                    }
                }
                Err(LogError::OffsetOutOfRange { .. }) => result.error_code = ResponseError::OffsetOutOfRange.code(),
                Err(e) => {
                    tracing::error!(partition = %self.name, "read: {e}");
                    result.error_code = ResponseError::KafkaStorageError.code();
                }
            }
        }
        let _ = msg.reply.send(result);
    }
}

impl Handler<WaitForData> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: WaitForData, _: &mut Self::Context) {
        if msg.offset < self.high_watermark || self.failed {
            let _ = msg.reply.send(());
            return;
        }
        // Fetches that gave up already leave closed senders behind: drop them (bounded list).
        self.waiters.retain(|(_, w)| !w.is_closed());
        self.waiters.push((msg.offset, msg.reply));
    }
}

impl Handler<ListOffset> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: ListOffset, _: &mut Self::Context) {
        if self.failed {
            let _ = msg.reply.send(OffsetAnswer {
                error_code: ResponseError::KafkaStorageError.code(),
                offset: -1,
                timestamp: -1,
            });
            return;
        }
        let latest = if msg.isolation_level == 1 { self.last_stable_offset() } else { self.high_watermark };
        let answer = |offset, timestamp| OffsetAnswer { error_code: 0, offset, timestamp };
        let result = match msg.timestamp {
            -1 => answer(latest, -1),
            -2 | -4 => answer(self.log_start(), -1),
            -3 => {
                let max = self.log.max_timestamp();
                self.find_by_timestamp(max, latest, true).unwrap_or(answer(-1, -1))
            }
            ts if ts >= 0 => self.find_by_timestamp(ts, latest, false).unwrap_or(answer(-1, -1)),
            _ => answer(-1, -1),
        };
        let _ = msg.reply.send(result);
    }
}

impl PartitionLeader {
    /// First record with timestamp >= `ts` (or, with `exact_max`, the record holding the maximum).
    fn find_by_timestamp(&self, ts: i64, upper: i64, exact_max: bool) -> Option<OffsetAnswer> {
        if ts < 0 {
            return None;
        }
        let (_, batch) = self.log.batch_for_timestamp(ts).ok()??;
        // Streams through the records: a compressed batch is never held decompressed.
        let found = records::find_record(&batch, upper, |t| if exact_max { t == ts } else { t >= ts });
        let (offset, timestamp) =
            found.inspect_err(|e| tracing::warn!(partition = %self.name, "ListOffsets by time: {e}")).ok()??;
        Some(OffsetAnswer { error_code: 0, offset, timestamp })
    }
}

impl Handler<WriteMarker> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: WriteMarker, ctx: &mut Self::Context) {
        if self.failed {
            let _ = msg.reply.send(ResponseError::KafkaStorageError.code());
            return;
        }
        // eos-rules 46-48: epoch checks by the marker's transaction version.
        if let Err(e) =
            self.producers.check_marker(msg.producer_id, msg.producer_epoch, msg.coordinator_epoch, msg.txn_version)
        {
            tracing::info!(partition = %self.name, producer_id = msg.producer_id, "marker refused: {e}");
            let _ = msg.reply.send(e.code());
            return;
        }
        let marker = control::Marker { commit: msg.commit, coordinator_epoch: msg.coordinator_epoch };
        let now = now_ms();
        match self.log.append(control::marker_batch(msg.producer_id, msg.producer_epoch, marker, now)) {
            Ok(h) => {
                // eos-rules 49: the marker ends the open transaction; aborts enter the index.
                let done = self.producers.record_marker(
                    msg.producer_id,
                    msg.producer_epoch,
                    msg.coordinator_epoch,
                    h.base_offset,
                    msg.commit,
                    now,
                );
                self.aborted.extend(done.filter(|t| t.aborted));
                self.pending.push_back((h.last_offset(), Waiter::Marker(msg.reply)));
                self.request_sync(ctx);
            }
            Err(LogError::InvalidBatch(e)) => {
                tracing::error!(partition = %self.name, "marker refused by the log: {e}");
                let _ = msg.reply.send(ResponseError::UnknownServerError.code());
            }
            Err(e) => {
                // As for appends: not written, the coordinator retries the marker.
                tracing::error!(partition = %self.name, "marker not written: {e}");
                let _ = msg.reply.send(ResponseError::KafkaStorageError.code());
            }
        }
    }
}

impl Handler<BeginVerification> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: BeginVerification, _: &mut Self::Context) {
        let _ = msg.reply.send(self.producers.begin_verification(msg.producer_id, msg.producer_epoch));
    }
}

impl Handler<FenceEpoch> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: FenceEpoch, _: &mut Self::Context) {
        self.producers.fence(msg.producer_id, msg.epoch, now_ms());
    }
}

impl Handler<Shutdown> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: Shutdown, ctx: &mut Self::Context) {
        if !self.failed {
            let mut synced = true;
            for f in self.log.sync_handles() {
                if let Err(e) = f.sync_data() {
                    tracing::error!(partition = %self.name, "final fsync: {e}");
                    synced = false;
                }
            }
            if synced {
                if let Err(e) = self.log.checkpoint_recovery_point(self.log.next_offset()) {
                    tracing::warn!(partition = %self.name, "recovery point not written: {e}");
                }
            }
            self.write_snapshot();
        }
        let _ = msg.reply.send(());
        ctx.stop();
    }
}

impl Handler<InspectProducers> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: InspectProducers, _: &mut Self::Context) {
        let _ = msg.reply.send(self.producers.entries().cloned().collect());
    }
}
