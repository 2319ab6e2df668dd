//! PartitionLeader: the actor around one partition's functional core (store::partition). It
//! turns messages into calls on `Partition` and runs the fsync round trip: appends are written
//! at once and answered after the syncer has made them durable; the high watermark only covers
//! durable data, so consumers never see what a crash could take back.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, ActorContext, ActorState, AsyncContext, Context, Handler, Message, SpawnHandle};

use super::cleaner::LogCleaner;
use super::messages::*;
use super::syncer::{SyncFailure, SyncJob, SyncWindow, Synced, Syncer};
use crate::error_code::ResponseError;
use crate::metrics::{Metrics, TopicMeter};
use crate::store::clock::now_ms;
use crate::store::log::file_range::{Stored, MAX_STAND_IN};
use crate::store::log::LogError;
use crate::store::partition::{DeleteRecordsError, DeletionError, Partition, PartitionError, Produced};

/// Appends waiting for their fsync; beyond this the mailbox stops being drained fast enough and
/// senders see a full mailbox (backpressure).
pub const MAILBOX_CAPACITY: usize = 1024;

/// Someone waiting for an offset to become durable.
enum Waiter {
    Append(Reply<AppendAck>, AppendAck),
    Marker(Reply<i16>),
}

pub struct PartitionLeader {
    name: String,
    partition: Partition,
    pending: VecDeque<(i64, Waiter)>,
    waiters: Vec<(i64, Reply<()>)>,
    /// The fsyncs in flight, acknowledged in order (actors::syncer).
    syncs: SyncWindow,
    syncer: Syncer,
    retention_check: Duration,
    producer_expiration_ms: i64,
    meters: LeaderMeters,
    /// This leader's share of the broker's producer-id gauge.
    reported_producers: i64,
    /// Batches (appends, markers) written since the last sync was asked for
    /// (kaas_log_group_commit_batches).
    unsynced_batches: u64,
    /// A `StartSync` is queued behind the messages already in the mailbox.
    sync_scheduled: bool,
    /// The log cleaner's threads, this leader's key there, the timer that checks whether the
    /// log needs cleaning (a compacted topic only), and the stop flag of a pass in flight.
    cleaner: LogCleaner,
    cleaner_id: u64,
    cleaner_timer: Option<SpawnHandle>,
    cleaning: Option<Arc<AtomicBool>>,
}

/// What a leader counts into: its topic's counters and the broker's metrics.
#[derive(Debug, Clone, Default)]
pub struct LeaderMeters {
    pub topic: TopicMeter,
    pub broker: Metrics,
}

/// The periods a leader runs its housekeeping on (the broker's settings).
#[derive(Debug, Clone, Copy)]
pub struct LeaderTimers {
    pub retention_check: Duration,
    pub producer_expiration_ms: i64,
}

impl PartitionLeader {
    /// The leader of `partition` (opened by recovery, or offline), named `<topic>-<p>` in logs.
    pub fn new(
        name: String,
        partition: Partition,
        syncer: Syncer,
        cleaner: LogCleaner,
        timers: LeaderTimers,
        meters: LeaderMeters,
    ) -> PartitionLeader {
        let cleaner_id = cleaner.register();
        PartitionLeader {
            name,
            partition,
            pending: VecDeque::new(),
            waiters: Vec::new(),
            syncs: syncer.window(),
            syncer,
            retention_check: timers.retention_check,
            producer_expiration_ms: timers.producer_expiration_ms,
            meters,
            reported_producers: 0,
            unsynced_batches: 0,
            sync_scheduled: false,
            cleaner,
            cleaner_id,
            cleaner_timer: None,
            cleaning: None,
        }
    }

    /// A compacted topic's leader checks every `log_cleaner_backoff_ms` whether its log needs
    /// cleaning; any other leader runs no timer for it.
    fn schedule_cleaning(&mut self, ctx: &mut Context<Self>) {
        let compacted = self.partition.dirtiness(now_ms()).is_some();
        match (compacted && self.cleaner.enabled(), self.cleaner_timer.is_some()) {
            (true, false) => {
                let every = self.cleaner.backoff();
                self.cleaner_timer = Some(ctx.run_interval(every, |act, ctx| act.check_cleaning(ctx)));
            }
            (false, true) => {
                if let Some(t) = self.cleaner_timer.take() {
                    ctx.cancel_future(t);
                }
                self.cleaner.withdraw(self.cleaner_id);
            }
            _ => {}
        }
    }

    /// eos-rules 62: offers the log to the cleaner threads when it needs a pass.
    fn check_cleaning(&mut self, ctx: &mut Context<Self>) {
        let now = now_ms();
        self.partition.roll_for_compaction(now);
        if self.cleaning.is_some() {
            return;
        }
        let dirtiness = self.partition.dirtiness(now);
        tracing::debug!(partition = %self.name, ?dirtiness, "cleaning check");
        match dirtiness {
            Some((d, _)) if self.partition.needs_cleaning(now) => {
                let addr = ctx.address();
                self.cleaner.offer(self.cleaner_id, &self.name, &d, addr.clone().recipient(), addr.recipient());
            }
            _ => self.cleaner.withdraw(self.cleaner_id),
        }
    }

    /// Brings the broker's producer-id gauge up to this partition's count (a length, no scan).
    fn report_producers(&mut self) {
        let now = i64::try_from(self.partition.producer_count()).unwrap_or(i64::MAX);
        if now != self.reported_producers {
            self.meters.broker.producer_ids().inc_by(now - self.reported_producers);
            self.reported_producers = now;
        }
    }

    fn error_ack(&self, e: &PartitionError) -> AppendAck {
        AppendAck {
            error_code: e.code(),
            base_offset: -1,
            log_append_time: -1,
            // eos-rules 22
            log_start_offset: if e.carries_log_start() { self.partition.log_start_offset() } else { -1 },
        }
    }

    /// Asks for a sync once the messages already in the mailbox are handled: actix runs what
    /// `notify` queues after it has drained the mailbox, so appends that arrived together (a
    /// connection's pipelined requests, several producers) share one fsync instead of the first
    /// taking one alone and the others waiting for it to finish before theirs starts.
    fn schedule_sync(&mut self, ctx: &mut Context<Self>) {
        if !self.sync_scheduled {
            self.sync_scheduled = true;
            ctx.notify(StartSync);
        }
    }

    fn request_sync(&mut self, ctx: &mut Context<Self>) {
        let upto = self.partition.log_end_offset();
        if !self.partition.needs_sync() || !self.syncs.may_start(upto, self.partition.high_watermark()) {
            return;
        }
        let files = self.partition.sync_handles();
        let seq = self.syncs.start(upto, std::mem::take(&mut self.unsynced_batches));
        let job = SyncJob { seq, files, reply: ctx.address().recipient() };
        if let Err(e) = self.syncer.submit(job) {
            self.fail(e);
        }
    }

    /// A failed fsync leaves the log in an unknown state: stop acknowledging (KAFKA_STORAGE_ERROR).
    fn fail(&mut self, why: String) {
        tracing::error!(partition = %self.name, "log failure, partition offline: {why}");
        let ack = self.error_ack(&PartitionError::Offline);
        self.refuse_pending(ack, ResponseError::KafkaStorageError);
    }

    /// This broker was fenced (store::cluster::fence): what waits for its fsync is never
    /// acknowledged (NOT_LEADER_OR_FOLLOWER: the client finds the new leader) and the high
    /// watermark stays; the broker stops (actors::membership).
    fn fenced(&mut self, why: &str) {
        tracing::error!(partition = %self.name, "fenced, nothing more is acknowledged: {why}");
        let error = ResponseError::NotLeaderOrFollower;
        let ack = AppendAck { error_code: error.code(), base_offset: -1, log_append_time: -1, log_start_offset: -1 };
        self.refuse_pending(ack, error);
    }

    /// Takes the partition offline and answers everything waiting for an fsync with `ack`
    /// (appends) or `marker` (markers).
    fn refuse_pending(&mut self, ack: AppendAck, marker: ResponseError) {
        self.partition.go_offline();
        self.syncs.clear();
        for (_, waiter) in self.pending.drain(..) {
            match waiter {
                Waiter::Append(reply, _) => {
                    let _ = reply.send(ack);
                }
                Waiter::Marker(reply) => {
                    let _ = reply.send(marker.code());
                }
            }
        }
    }

    /// A pass in flight is abandoned before it names a file; the cleaner forgets this leader.
    fn stop_cleaning(&mut self) {
        if let Some(stop) = self.cleaning.take() {
            stop.store(true, Ordering::Release);
        }
        self.cleaner.withdraw(self.cleaner_id);
    }

    fn housekeeping(&mut self) {
        let now = now_ms();
        if let Some(deletion) = self.partition.enforce_retention(now) {
            let segments = deletion.segments().len();
            tracing::info!(partition = %self.name, segments, log_start = deletion.log_start, "retention removed segments");
            // The start is fsynced, then the files unlinked (which frees the blocks
            // synchronously, seconds with discard): not on this thread.
            let fence = self.syncer.fence();
            spawn_file_work(self.name.clone(), "retention", move || deletion.run(&fence));
        }
        self.partition.expire_producers(now, self.producer_expiration_ms);
        self.report_producers();
        // Everything below the high watermark is on disk: the next recovery starts there.
        if let Err(e) = self.partition.checkpoint_recovery_point(self.partition.high_watermark()) {
            tracing::warn!(partition = %self.name, "recovery point not written: {e}");
        }
        // Bound the replay after a crash: snapshot the producer state when the log moved. A
        // durable one (the log start has moved) is fsynced: not on this thread.
        match self.partition.snapshot_if_changed() {
            None => {}
            Some(Err(e)) => tracing::warn!(partition = %self.name, "{e}"),
            Some(Ok(write)) if write.is_durable() => {
                spawn_file_work(self.name.clone(), "producer snapshot not written", move || write.run());
            }
            Some(Ok(write)) => {
                if let Err(e) = write.run() {
                    tracing::warn!(partition = %self.name, "producer snapshot not written: {e}");
                }
            }
        }
    }
}

/// Runs file work that fsyncs or unlinks on the blocking pool (never on the partition's thread),
/// logging a failure as `what`.
fn spawn_file_work<E, F>(name: String, what: &'static str, work: F)
where
    E: std::fmt::Display + Send + 'static,
    F: FnOnce() -> Result<(), E> + Send + 'static,
{
    actix::spawn(async move {
        match tokio::task::spawn_blocking(work).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(partition = %name, "{what}: {e}"),
            Err(e) => tracing::warn!(partition = %name, "{what}: {e}"),
        }
    });
}

impl Actor for PartitionLeader {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(MAILBOX_CAPACITY);
        ctx.run_interval(self.retention_check, |act, _| act.housekeeping());
        self.schedule_cleaning(ctx);
        self.meters.broker.partitions().inc();
        self.report_producers();
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        self.stop_cleaning();
        self.meters.broker.partitions().dec();
        self.meters.broker.producer_ids().dec_by(self.reported_producers);
        self.reported_producers = 0;
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
        match self.partition.append(data, &header, verified, now_ms()) {
            Err(e) => {
                match &e {
                    PartitionError::Offline => {}
                    PartitionError::Rejected(_) | PartitionError::Shape(_) => {
                        tracing::debug!(partition = %self.name, "append refused: {e}")
                    }
                    PartitionError::LogRefused(_) => tracing::warn!(partition = %self.name, "append {e}"),
                    _ => tracing::error!(partition = %self.name, "append {e}"),
                }
                answer(reply, self.error_ack(&e))
            }
            Ok(Produced::Duplicate(m)) => {
                // eos-rules 19: answer with the original offset once it is durable, and (as Kafka
                // does for a duplicate) the original batch's max timestamp as LogAppendTime.
                let ack = AppendAck {
                    error_code: 0,
                    base_offset: m.first_offset,
                    log_append_time: m.timestamp,
                    log_start_offset: self.partition.log_start_offset(),
                };
                match reply {
                    Some(r) if m.last_offset >= self.partition.high_watermark() => {
                        self.pending.push_back((m.last_offset, Waiter::Append(r, ack)))
                    }
                    other => answer(other, ack),
                }
            }
            Ok(Produced::Appended(h)) => {
                self.meters.topic.bytes_in.inc_by(h.total_size() as u64);
                self.meters.topic.messages_in.inc_by(u64::try_from(h.records_count).unwrap_or(0));
                self.unsynced_batches += 1;
                self.report_producers();
                if let Some(r) = reply {
                    let ack = AppendAck {
                        error_code: 0,
                        base_offset: h.base_offset,
                        log_append_time: -1,
                        log_start_offset: self.partition.log_start_offset(),
                    };
                    self.pending.push_back((h.last_offset(), Waiter::Append(r, ack)));
                }
                self.schedule_sync(ctx);
            }
        }
    }
}

impl Handler<Synced> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: Synced, ctx: &mut Self::Context) {
        if self.partition.is_offline() {
            // Failed or fenced before: nothing in flight is acknowledged.
            return;
        }
        match msg.result {
            Ok(()) => {}
            Err(SyncFailure::Io(e)) => return self.fail(format!("fsync: {e}")),
            Err(SyncFailure::Fenced(e)) => return self.fenced(&e),
        }
        let Some(durable) = self.syncs.finish(msg.seq) else {
            // An older sync is still out: its files may not be durable yet.
            return self.request_sync(ctx);
        };
        if durable.batches > 0 {
            self.meters.broker.group_commit_batches().observe(durable.batches);
        }
        self.partition.advance_high_watermark(durable.upto);
        let hw = self.partition.high_watermark();
        while let Some((last, _)) = self.pending.front() {
            if *last >= hw {
                break;
            }
            match self.pending.pop_front() {
                Some((_, Waiter::Append(reply, mut ack))) => {
                    ack.log_start_offset = self.partition.log_start_offset();
                    let _ = reply.send(ack);
                }
                Some((_, Waiter::Marker(reply))) => {
                    let _ = reply.send(0);
                }
                None => break,
            }
        }
        let (ready, waiting): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.waiters).into_iter().partition(|(o, _)| *o < hw);
        self.waiters = waiting;
        for (_, w) in ready {
            let _ = w.send(());
        }
        self.schedule_sync(ctx);
    }
}

/// Starts the sync `schedule_sync` asked for.
#[derive(Message)]
#[rtype(result = "()")]
struct StartSync;

impl Handler<StartSync> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, _: StartSync, ctx: &mut Self::Context) {
        self.sync_scheduled = false;
        // A leader stopping made its final fsync itself (Shutdown).
        if ctx.state() == ActorState::Running {
            self.request_sync(ctx);
        }
    }
}

impl Handler<Read> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: Read, _: &mut Self::Context) {
        let p = &self.partition;
        let mut result = ReadResult {
            error_code: 0,
            high_watermark: p.high_watermark(),
            last_stable_offset: p.last_stable_offset(),
            log_start_offset: p.log_start_offset(),
            records: Stored::default(),
            aborted: Vec::new(),
        };
        match p.read_stored(msg.offset, msg.max_bytes, msg.isolation_level) {
            Ok(fetched) => {
                self.meters.topic.bytes_out.inc_by(fetched.records.len() as u64);
                result.records = match fetched.records {
                    // A range no stand-in covers (file_range::MAX_STAND_IN) goes in memory, and so
                    // does one the open-file cache lent no descriptor for (file_cache: a wide
                    // fetch must not run the broker out of them).
                    Stored::File(r) if r.len > MAX_STAND_IN || r.loan.is_none() => match r.load() {
                        Ok(b) => {
                            if r.loan.is_none() {
                                self.meters.broker.fetch_copied_reads().inc();
                            }
                            Stored::Mem(b)
                        }
                        Err(e) => {
                            tracing::error!(partition = %self.name, "read: {e}");
                            result.error_code = PartitionError::Read(LogError::Io(e)).code();
                            Stored::default()
                        }
                    },
                    records => records,
                };
                result.aborted = fetched.aborted;
            }
            Err(e) => {
                if matches!(e, PartitionError::Read(_)) {
                    tracing::error!(partition = %self.name, "{e}");
                }
                result.error_code = e.code();
            }
        }
        let _ = msg.reply.send(result);
    }
}

impl Handler<WaitForData> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: WaitForData, _: &mut Self::Context) {
        if msg.offset < self.partition.high_watermark() || self.partition.is_offline() {
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
        let answer = match self.partition.list_offset(msg.timestamp, msg.isolation_level) {
            Ok((offset, timestamp)) => OffsetAnswer { error_code: 0, offset, timestamp },
            // A batch the time index found but whose records cannot be walked: not found.
            Err(e @ PartitionError::Records(_)) => {
                tracing::warn!(partition = %self.name, "ListOffsets by time: {e}");
                OffsetAnswer { error_code: 0, offset: -1, timestamp: -1 }
            }
            Err(e) => OffsetAnswer { error_code: e.code(), offset: -1, timestamp: -1 },
        };
        let _ = msg.reply.send(answer);
    }
}

impl Handler<WriteMarkers> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: WriteMarkers, ctx: &mut Self::Context) {
        let written = self.partition.write_marker(
            msg.producer_id,
            msg.producer_epoch,
            msg.commit,
            msg.coordinator_epoch,
            msg.txn_version,
            now_ms(),
        );
        match written {
            Ok(h) => {
                self.unsynced_batches += 1;
                self.pending.push_back((h.last_offset(), Waiter::Marker(msg.reply)));
                self.schedule_sync(ctx);
            }
            Err(e) => {
                match &e {
                    PartitionError::Offline => {}
                    PartitionError::Rejected(_) => {
                        tracing::info!(partition = %self.name, producer_id = msg.producer_id, "marker refused: {e}")
                    }
                    _ => tracing::error!(partition = %self.name, "marker {e}"),
                }
                let _ = msg.reply.send(e.marker_code());
            }
        }
    }
}

impl Handler<BeginVerification> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: BeginVerification, _: &mut Self::Context) {
        let begun = self.partition.begin_verification(
            msg.producer_id,
            msg.producer_epoch,
            msg.base_sequence,
            msg.tv2,
            now_ms(),
        );
        let _ = msg.reply.send(begun);
    }
}

impl Handler<FenceEpoch> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: FenceEpoch, _: &mut Self::Context) {
        self.partition.fence(msg.producer_id, msg.epoch, now_ms());
        self.report_producers();
    }
}

impl Handler<SetLogConfig> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: SetLogConfig, ctx: &mut Self::Context) {
        self.partition.set_log_config(msg.config);
        self.schedule_cleaning(ctx);
    }
}

impl Handler<BeginCleaning> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: BeginCleaning, _: &mut Self::Context) {
        let work = if self.cleaning.is_some() {
            None
        } else {
            self.partition.plan_cleaning(now_ms(), msg.dedupe_buffer_bytes, msg.max_decoded_bytes)
        };
        if work.is_some() {
            self.cleaning = Some(msg.stop);
        }
        let _ = msg.reply.send(work);
    }
}

impl Handler<FinishCleaning> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: FinishCleaning, _: &mut Self::Context) {
        self.cleaning = None;
        let Ok(cleaned) = msg.result else { return };
        let files = self.partition.install_cleaned(cleaned);
        self.meters.broker.cleaner().passes.inc();
        if files.is_empty() {
            return;
        }
        // eos-rules 68: the replaced files go once this broker is known not to be fenced.
        let fence = self.syncer.fence();
        spawn_file_work(self.name.clone(), "cleaned segments not deleted", move || files.run(&fence));
    }
}

impl Handler<Shutdown> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: Shutdown, ctx: &mut Self::Context) {
        if !self.partition.is_offline() {
            let synced = match self.partition.sync_handles().sync() {
                Ok(()) => true,
                Err(e) => {
                    tracing::error!(partition = %self.name, "final fsync: {e}");
                    false
                }
            };
            // A DeleteRecords whose file work still runs: its start is made durable here, before
            // another broker may open the partition.
            if let Err(e) = self.partition.persist_log_start() {
                tracing::error!(partition = %self.name, "log start not written at stop: {e}");
            }
            // A sync still in flight may not have made its files durable (nor will it, if the
            // machine stops now): the recovery point and snapshot would then vouch for data that
            // is not on disk, so the next start validates the tail instead.
            if synced && self.syncs.in_flight() == 0 {
                if let Err(e) = self.partition.checkpoint_at_stop() {
                    tracing::warn!(partition = %self.name, "{e}");
                }
            }
            // Zeros left only cost the next start a read of them (store::log::segment).
            if let Err(e) = self.partition.trim_zeros() {
                tracing::debug!(partition = %self.name, "zeros ahead left at stop: {e}");
            }
        }
        self.stop_cleaning();
        let _ = msg.reply.send(());
        ctx.stop();
    }
}

impl Handler<LogSize> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: LogSize, _: &mut Self::Context) {
        let _ = msg.reply.send(self.partition.log_size());
    }
}

impl Handler<InspectProducers> for PartitionLeader {
    type Result = ();

    fn handle(&mut self, msg: InspectProducers, _: &mut Self::Context) {
        let _ = msg.reply.send(self.partition.producers());
    }
}

impl Handler<DeleteRecordsBefore> for PartitionLeader {
    type Result = ();

    /// Moves the log start at once (reads see it, as in Kafka) and answers once the new start is
    /// durable; the fsync and the segment deletion run on the blocking pool.
    fn handle(&mut self, msg: DeleteRecordsBefore, _: &mut Self::Context) {
        let DeleteRecordsBefore { offset, reply } = msg;
        let deletion = match self.partition.delete_records_before(offset) {
            Ok(d) => d,
            Err(e) => {
                if !matches!(e, DeleteRecordsError::InvalidOffset(_) | DeleteRecordsError::AboveHighWatermark { .. }) {
                    tracing::warn!(partition = %self.name, "DeleteRecords: {e}");
                }
                let _ = reply.send(DeleteRecordsAnswer { error_code: e.code(), low_watermark: -1 });
                return;
            }
        };
        let name = self.name.clone();
        let low_watermark = deletion.log_start;
        if !deletion.segments().is_empty() {
            tracing::info!(partition = %name, log_start = low_watermark, segments = deletion.segments().len(), "DeleteRecords removes segments");
        }
        let fence = self.syncer.fence();
        actix::spawn(async move {
            let ok = DeleteRecordsAnswer { error_code: 0, low_watermark };
            let answer = match tokio::task::spawn_blocking(move || deletion.run(&fence)).await {
                Ok(Ok(())) => ok,
                Ok(Err(e @ DeletionError::Cleanup(_))) => {
                    tracing::warn!(partition = %name, "{e}");
                    ok
                }
                Ok(Err(e @ DeletionError::Fenced(_))) => {
                    tracing::error!(partition = %name, "DeleteRecords: {e}");
                    DeleteRecordsAnswer { error_code: ResponseError::NotLeaderOrFollower.code(), low_watermark: -1 }
                }
                Ok(Err(e)) => {
                    tracing::error!(partition = %name, "DeleteRecords: {e}");
                    DeleteRecordsAnswer { error_code: ResponseError::KafkaStorageError.code(), low_watermark: -1 }
                }
                Err(e) => {
                    tracing::error!(partition = %name, "DeleteRecords: {e}");
                    DeleteRecordsAnswer { error_code: ResponseError::KafkaStorageError.code(), low_watermark: -1 }
                }
            };
            let _ = reply.send(answer);
        });
    }
}
