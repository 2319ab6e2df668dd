//! PartitionLeader: owns one partition's Log and ProducerStateTable. Appends are written at once
//! and answered after the syncer has made them durable; the high watermark only covers durable
//! data, so consumers never see what a crash could take back.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix::{Actor, ActorContext, AsyncContext, Context, Handler};
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::messages::*;
use super::syncer::{SyncJob, Syncer};
use crate::store::log::{Log, LogError};
use crate::store::producer_state::{AppendDecision, ProducerStateTable};
use crate::store::topics::write_atomic;

const SNAPSHOT_FILE: &str = "producer-state.json";
/// Appends waiting for their fsync; beyond this the mailbox stops being drained fast enough and
/// senders see a full mailbox (backpressure).
pub const MAILBOX_CAPACITY: usize = 1024;

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[derive(Serialize, Deserialize)]
struct Snapshot {
    /// The table reflects every batch below this offset.
    offset: i64,
    table: ProducerStateTable,
}

pub struct PartitionLeader {
    name: String,
    dir: PathBuf,
    log: Log,
    producers: ProducerStateTable,
    /// Everything below is durable and readable.
    high_watermark: i64,
    pending: VecDeque<(i64, Reply<AppendAck>, AppendAck)>,
    waiters: Vec<(i64, Reply<()>)>,
    sync_in_flight: bool,
    failed: bool,
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
        let snapshot: Option<Snapshot> = std::fs::read(dir.join(SNAPSHOT_FILE))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let (mut producers, from) = match snapshot {
            Some(s) if s.offset <= end => (s.table, s.offset),
            _ => (ProducerStateTable::new(), log.log_start_offset()),
        };
        let now = now_ms();
        for h in log.headers_from(from)? {
            if !h.is_control() {
                producers.record_append(&h, now);
            }
        }
        Ok(PartitionLeader {
            name,
            dir,
            high_watermark: end,
            log,
            producers,
            pending: VecDeque::new(),
            waiters: Vec::new(),
            sync_in_flight: false,
            failed: false,
            syncer,
            retention_check,
            producer_expiration_ms,
        })
    }

    fn log_start(&self) -> i64 {
        self.log.log_start_offset()
    }

    fn last_stable_offset(&self) -> i64 {
        self.producers
            .first_unstable_offset()
            .map_or(self.high_watermark, |f| f.min(self.high_watermark))
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
        let files = match self.log.sync_handles() {
            Ok(f) => f,
            Err(e) => return self.fail(format!("sync handle: {e}")),
        };
        self.sync_in_flight = true;
        let job = SyncJob {
            files,
            upto: self.log.next_offset(),
            partition: ctx.address(),
        };
        if let Err(e) = self.syncer.submit(job) {
            self.fail(e);
        }
    }

    /// A failed fsync leaves the log in an unknown state: stop acknowledging (KAFKA_STORAGE_ERROR).
    fn fail(&mut self, why: String) {
        tracing::error!(partition = %self.name, "log failure, partition offline: {why}");
        self.failed = true;
        let ack = self.error_ack(56, false);
        for (_, reply, _) in self.pending.drain(..) {
            let _ = reply.send(ack);
        }
    }

    fn write_snapshot(&self) {
        let snap = Snapshot {
            offset: self.log.next_offset(),
            table: self.producers.clone(),
        };
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
            }
            Err(e) => tracing::warn!(partition = %self.name, "retention: {e}"),
        }
        self.producers.expire(now_ms(), self.producer_expiration_ms);
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
        let Append {
            data,
            header,
            reply,
        } = msg;
        let answer = |reply: Option<Reply<AppendAck>>, ack: AppendAck| {
            if let Some(r) = reply {
                let _ = r.send(ack);
            }
        };
        if self.failed {
            return answer(reply, self.error_ack(56, false));
        }
        // eos-rules 14: shape checks answer with LogStartOffset (rule 22).
        if let Err(e) = ProducerStateTable::check_client_batch_shape(&header) {
            return answer(reply, self.error_ack(e.code(), true));
        }
        match self.producers.check_append(&header) {
            Err(e) => {
                tracing::debug!(partition = %self.name, "append refused: {e}");
                answer(reply, self.error_ack(e.code(), true))
            }
            Ok(AppendDecision::Duplicate(m)) => {
                // eos-rules 19: answer with the original offset once it is durable.
                let ack = AppendAck {
                    error_code: 0,
                    base_offset: m.first_offset,
                    log_append_time: -1,
                    log_start_offset: self.log_start(),
                };
                match reply {
                    Some(r) if m.last_offset >= self.high_watermark => {
                        self.pending.push_back((m.last_offset, r, ack))
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
                        self.pending.push_back((h.last_offset(), r, ack));
                    }
                    self.request_sync(ctx);
                }
                Err(e) => {
                    self.fail(format!("append: {e}"));
                    answer(reply, self.error_ack(56, false));
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
        while let Some((last, _, _)) = self.pending.front() {
            if *last >= self.high_watermark {
                break;
            }
            if let Some((_, reply, mut ack)) = self.pending.pop_front() {
                ack.log_start_offset = self.log_start();
                let _ = reply.send(ack);
            }
        }
        let hw = self.high_watermark;
        let (ready, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.waiters)
            .into_iter()
            .partition(|(o, _)| *o < hw);
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
        let upper = if msg.isolation_level == 1 {
            self.last_stable_offset()
        } else {
            self.high_watermark
        };
        let mut result = ReadResult {
            error_code: 0,
            high_watermark: self.high_watermark,
            last_stable_offset: self.last_stable_offset(),
            log_start_offset: self.log_start(),
            records: Bytes::new(),
        };
        if self.failed {
            result.error_code = 56;
        } else {
            match self.log.read(msg.offset, upper, msg.max_bytes) {
                Ok(records) => result.records = records,
                Err(LogError::OffsetOutOfRange { .. }) => result.error_code = 1,
                Err(e) => {
                    tracing::error!(partition = %self.name, "read: {e}");
                    result.error_code = 56;
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
        let latest = if msg.isolation_level == 1 {
            self.last_stable_offset()
        } else {
            self.high_watermark
        };
        let answer = |offset, timestamp| OffsetAnswer {
            error_code: 0,
            offset,
            timestamp,
        };
        let result = match msg.timestamp {
            -1 => answer(latest, -1),
            -2 | -4 => answer(self.log_start(), -1),
            -3 => {
                let max = self.log.max_timestamp();
                self.find_by_timestamp(max, latest, true)
                    .unwrap_or(answer(-1, -1))
            }
            ts if ts >= 0 => self
                .find_by_timestamp(ts, latest, false)
                .unwrap_or(answer(-1, -1)),
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
        let mut buf = batch.clone();
        let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut buf).ok()?;
        set.records
            .iter()
            .filter(|r| r.offset < upper)
            .find(|r| {
                if exact_max {
                    r.timestamp == ts
                } else {
                    r.timestamp >= ts
                }
            })
            .map(|r| OffsetAnswer {
                error_code: 0,
                offset: r.offset,
                timestamp: r.timestamp,
            })
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
            match self.log.sync_handles() {
                Ok(files) => {
                    for f in files {
                        if let Err(e) = f.sync_data() {
                            tracing::error!(partition = %self.name, "final fsync: {e}");
                        }
                    }
                }
                Err(e) => tracing::error!(partition = %self.name, "final fsync: {e}"),
            }
            self.write_snapshot();
        }
        let _ = msg.reply.send(());
        ctx.stop();
    }
}
