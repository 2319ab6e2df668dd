//! KIP-227 incremental fetch sessions, as Apache Kafka's FetchSession/FetchSessionCache do it.
//! Pure: no I/O, the caller passes the time. A Fetch `begin`s (which picks the partitions to
//! read: the request's, or the whole session's) and `finish`es with what was read (which picks
//! the partitions an incremental response carries and remembers what it said).
//!
//! Bounds: at most `slots` sessions (max_incremental_fetch_session_cache_slots) and
//! MAX_CACHED_PARTITIONS partitions over all sessions; sessions unused for EVICTION are dropped.
//! kaas has no follower fetches, so every session is a consumer's (Kafka's "unprivileged").

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use thiserror::Error;

use crate::error_code::ResponseError;

/// FetchMetadata.INVALID_SESSION_ID: no session.
pub const INVALID_SESSION_ID: i32 = 0;
/// FetchMetadata.INITIAL_EPOCH: a full fetch that asks for a new session.
pub const INITIAL_EPOCH: i32 = 0;
/// FetchMetadata.FINAL_EPOCH: a full fetch without a session (closing the one named).
pub const FINAL_EPOCH: i32 = -1;
/// Kafka's min.incremental.fetch.session.eviction.ms default: a session unused this long goes.
pub const EVICTION: Duration = Duration::from_secs(120);
/// Partitions cached by all sessions together (Kafka has no bound). About 150 bytes each with
/// the index, so ~30 MiB: 20 consumers each fetching 10,000 partitions.
pub const MAX_CACHED_PARTITIONS: usize = 200_000;

#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
pub enum FetchSessionError {
    #[error("fetch session {0} not found")]
    NotFound(i32),
    #[error("fetch session {id} expects epoch {expected}, not {got}")]
    InvalidEpoch { id: i32, expected: i32, got: i32 },
}

impl FetchSessionError {
    pub fn code(&self) -> i16 {
        match self {
            FetchSessionError::NotFound(_) => ResponseError::FetchSessionIdNotFound.code(),
            FetchSessionError::InvalidEpoch { .. } => ResponseError::InvalidFetchSessionEpoch.code(),
        }
    }
}

/// FetchMetadata.nextEpoch: FINAL stays FINAL, i32::MAX wraps to 1 (0 means "new session").
pub fn next_epoch(epoch: i32) -> i32 {
    match epoch {
        e if e < 0 => FINAL_EPOCH,
        i32::MAX => 1,
        e => e + 1,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PartitionKey {
    pub topic: Arc<str>,
    pub partition: i32,
}

/// What a fetch asks of one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPartition {
    pub key: PartitionKey,
    pub fetch_offset: i64,
    pub log_start_offset: i64,
    pub max_bytes: i32,
    /// The leader epoch the client knows (-1: none, Fetch before v9); Kafka's session keeps it.
    pub current_leader_epoch: i32,
}

/// What was read for one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answered {
    pub error_code: i16,
    pub has_records: bool,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
}

/// What the session last told the client of a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Last {
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
}

impl Last {
    /// A partition not answered yet: any answer differs from it.
    const UNKNOWN: Last = Last { high_watermark: -1, last_stable_offset: -1, log_start_offset: -1 };

    /// Kafka's CachedPartition.maybeUpdateResponseData: records, an error or changed offsets.
    /// (Kafka compares the high watermark and log start; the last stable offset is compared too,
    /// which only ever adds a partition.)
    fn must_respond(&self, a: &Answered) -> bool {
        a.has_records
            || a.error_code != 0
            || self.high_watermark != a.high_watermark
            || self.last_stable_offset != a.last_stable_offset
            || self.log_start_offset != a.log_start_offset
    }

    /// After an error the high watermark is forgotten, so the partition is sent again once the
    /// error is gone (as Kafka does).
    fn after(a: &Answered) -> Last {
        let high_watermark = if a.error_code != 0 { -1 } else { a.high_watermark };
        Last { high_watermark, last_stable_offset: a.last_stable_offset, log_start_offset: a.log_start_offset }
    }
}

#[derive(Debug, Clone)]
struct Cached {
    fetch_offset: i64,
    log_start_offset: i64,
    max_bytes: i32,
    current_leader_epoch: i32,
    last: Last,
}

#[derive(Debug)]
struct Entry {
    /// The epoch the next request must carry.
    epoch: i32,
    /// In fetch order; partitions that returned data move to the end (Kafka: fairness).
    partitions: IndexMap<PartitionKey, Cached>,
    created: Instant,
    last_used: Instant,
    /// Older than EVICTION at its last use: a bigger new session may evict it (evictableByAll).
    evictable: bool,
}

/// The requests' session fields and partitions.
#[derive(Debug, Clone)]
pub struct SessionRequest {
    pub session_id: i32,
    pub epoch: i32,
    pub partitions: Vec<FetchPartition>,
    pub forgotten: Vec<PartitionKey>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Sessionless,
    /// Create a session from what is answered.
    Full,
    /// `epoch` is the session's after this request; `last` is aligned with the partitions.
    Incremental {
        id: i32,
        epoch: i32,
        last: Vec<Last>,
    },
}

/// What one Fetch reads, and how its answer is shaped.
#[derive(Debug, Clone)]
pub struct Plan {
    kind: Kind,
    pub partitions: Vec<FetchPartition>,
}

impl Plan {
    pub fn is_incremental(&self) -> bool {
        matches!(self.kind, Kind::Incremental { .. })
    }
}

/// The response's session id, and which of the plan's partitions it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub session_id: i32,
    pub include: Vec<bool>,
}

#[derive(Debug)]
pub struct FetchSessionCache {
    slots: usize,
    max_partitions: usize,
    eviction: Duration,
    sessions: HashMap<i32, Entry>,
    by_last_used: BTreeSet<(Instant, i32)>,
    /// Partitions cached by all sessions.
    partitions: usize,
}

impl FetchSessionCache {
    pub fn new(slots: usize, max_partitions: usize, eviction: Duration) -> FetchSessionCache {
        FetchSessionCache {
            slots,
            max_partitions,
            eviction,
            sessions: HashMap::new(),
            by_last_used: BTreeSet::new(),
            partitions: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    pub fn cached_partitions(&self) -> usize {
        self.partitions
    }

    pub fn contains(&self, id: i32) -> bool {
        self.sessions.contains_key(&id)
    }

    /// Kafka's FetchManager.newContext.
    pub fn begin(&mut self, req: SessionRequest, now: Instant) -> Result<Plan, FetchSessionError> {
        self.expire(now);
        let SessionRequest { session_id: id, epoch, partitions, forgotten } = req;
        if epoch == INITIAL_EPOCH || epoch == FINAL_EPOCH {
            // A full fetch closes the session it names; INITIAL asks for a new one.
            self.remove(id);
            let kind = if epoch == FINAL_EPOCH { Kind::Sessionless } else { Kind::Full };
            return Ok(Plan { kind, partitions });
        }
        let entry = self.sessions.get_mut(&id).ok_or(FetchSessionError::NotFound(id))?;
        if entry.epoch != epoch {
            return Err(FetchSessionError::InvalidEpoch { id, expected: entry.epoch, got: epoch });
        }
        let before = entry.partitions.len();
        for p in &partitions {
            let cached = entry.partitions.entry(p.key.clone()).or_insert(Cached {
                fetch_offset: p.fetch_offset,
                log_start_offset: p.log_start_offset,
                max_bytes: p.max_bytes,
                current_leader_epoch: p.current_leader_epoch,
                last: Last::UNKNOWN,
            });
            cached.fetch_offset = p.fetch_offset;
            cached.log_start_offset = p.log_start_offset;
            cached.max_bytes = p.max_bytes;
            cached.current_leader_epoch = p.current_leader_epoch;
        }
        for k in &forgotten {
            entry.partitions.shift_remove(k);
        }
        let after = entry.partitions.len();
        self.partitions = self.partitions - before + after;
        if after == 0 {
            // Kafka: nothing left, the session closes and the request is sessionless.
            self.remove(id);
            return Ok(Plan { kind: Kind::Sessionless, partitions });
        }
        if self.partitions > self.max_partitions {
            // Over the cache's bound: the session goes; the client starts over with a full fetch.
            self.remove(id);
            return Err(FetchSessionError::NotFound(id));
        }
        let epoch = self.touch(id, now).unwrap_or(FINAL_EPOCH);
        let entry = self.sessions.get(&id).ok_or(FetchSessionError::NotFound(id))?;
        let mut last = Vec::with_capacity(after);
        let mut all = Vec::with_capacity(after);
        for (key, c) in &entry.partitions {
            last.push(c.last);
            all.push(FetchPartition {
                key: key.clone(),
                fetch_offset: c.fetch_offset,
                log_start_offset: c.log_start_offset,
                max_bytes: c.max_bytes,
                current_leader_epoch: c.current_leader_epoch,
            });
        }
        Ok(Plan { kind: Kind::Incremental { id, epoch, last }, partitions: all })
    }

    /// Kafka's FetchContext.updateAndGenerateResponseData. `answered` is aligned with
    /// `plan.partitions`.
    pub fn finish(&mut self, plan: &Plan, answered: &[Answered], now: Instant) -> Result<Reply, FetchSessionError> {
        let all = vec![true; plan.partitions.len()];
        match &plan.kind {
            Kind::Sessionless => Ok(Reply { session_id: INVALID_SESSION_ID, include: all }),
            Kind::Full => Ok(Reply { session_id: self.create(&plan.partitions, answered, now), include: all }),
            Kind::Incremental { id, epoch, last } => {
                let include: Vec<bool> = last.iter().zip(answered).map(|(l, a)| l.must_respond(a)).collect();
                // A session closed or evicted meanwhile still answers this request, as in Kafka.
                if let Some(entry) = self.sessions.get_mut(id) {
                    if entry.epoch != *epoch {
                        // Another request of the session came between (a duplicate).
                        return Err(FetchSessionError::InvalidEpoch { id: *id, expected: entry.epoch, got: *epoch });
                    }
                    remember(entry, &plan.partitions, answered, &include);
                }
                Ok(Reply { session_id: *id, include })
            }
        }
    }

    /// Kafka's maybeCreateSession: a new session if there is room or a session can be evicted.
    fn create(&mut self, partitions: &[FetchPartition], answered: &[Answered], now: Instant) -> i32 {
        let mut map = IndexMap::with_capacity(partitions.len());
        for (p, a) in partitions.iter().zip(answered) {
            let c = Cached {
                fetch_offset: p.fetch_offset,
                log_start_offset: p.log_start_offset,
                max_bytes: p.max_bytes,
                current_leader_epoch: p.current_leader_epoch,
                last: Last::after(a),
            };
            map.insert(p.key.clone(), c);
        }
        let size = map.len();
        if size > self.max_partitions {
            return INVALID_SESSION_ID;
        }
        while self.sessions.len() >= self.slots || self.partitions + size > self.max_partitions {
            if !self.try_evict(size, now) {
                return INVALID_SESSION_ID;
            }
        }
        let id = self.new_id();
        let entry =
            Entry { epoch: next_epoch(INITIAL_EPOCH), partitions: map, created: now, last_used: now, evictable: false };
        self.sessions.insert(id, entry);
        self.by_last_used.insert((now, id));
        self.partitions += size;
        id
    }

    /// Kafka's tryEvict: the least recently used session if stale, else the smallest evictable
    /// session when the new one is bigger.
    fn try_evict(&mut self, size: usize, now: Instant) -> bool {
        let Some(&(used, oldest)) = self.by_last_used.first() else {
            return false;
        };
        if now.saturating_duration_since(used) > self.eviction {
            self.remove(oldest);
            return true;
        }
        let smallest = self.sessions.iter().filter(|(_, e)| e.evictable).map(|(id, e)| (e.partitions.len(), *id)).min();
        match smallest {
            Some((victim_size, victim)) if size > victim_size => {
                self.remove(victim);
                true
            }
            _ => false,
        }
    }

    /// Drops the sessions unused for longer than the eviction time (bounded memory).
    fn expire(&mut self, now: Instant) {
        while let Some(&(used, id)) = self.by_last_used.first() {
            if now.saturating_duration_since(used) <= self.eviction {
                break;
            }
            self.remove(id);
        }
    }

    fn remove(&mut self, id: i32) {
        if let Some(e) = self.sessions.remove(&id) {
            self.by_last_used.remove(&(e.last_used, id));
            self.partitions -= e.partitions.len();
        }
    }

    /// Marks a session used and advances its epoch; returns the new epoch.
    fn touch(&mut self, id: i32, now: Instant) -> Option<i32> {
        let e = self.sessions.get_mut(&id)?;
        self.by_last_used.remove(&(e.last_used, id));
        e.last_used = now;
        e.evictable = now.saturating_duration_since(e.created) > self.eviction;
        e.epoch = next_epoch(e.epoch);
        self.by_last_used.insert((now, id));
        Some(e.epoch)
    }

    /// A random positive id no session has (Kafka: ThreadLocalRandom in [1, i32::MAX)).
    fn new_id(&self) -> i32 {
        loop {
            let id = (uuid::Uuid::new_v4().as_u128() as u32 & 0x7fff_ffff) as i32;
            if id != INVALID_SESSION_ID && !self.sessions.contains_key(&id) {
                return id;
            }
        }
    }
}

/// Records what an incremental response said and moves the partitions that returned data to
/// the end, so the others are read first next time (Kafka's IncrementalFetchContext).
fn remember(entry: &mut Entry, partitions: &[FetchPartition], answered: &[Answered], include: &[bool]) {
    let mut moved = HashSet::new();
    for ((p, a), _) in partitions.iter().zip(answered).zip(include).filter(|(_, inc)| **inc) {
        if let Some(c) = entry.partitions.get_mut(&p.key) {
            c.last = Last::after(a);
            if a.has_records {
                moved.insert(p.key.clone());
            }
        }
    }
    if !moved.is_empty() {
        let (stay, went): (Vec<_>, Vec<_>) =
            std::mem::take(&mut entry.partitions).into_iter().partition(|(k, _)| !moved.contains(k));
        entry.partitions = stay.into_iter().chain(went).collect();
    }
}

/// The broker-wide cache, shared by every connection's thread.
#[derive(Debug, Clone)]
pub struct FetchSessions {
    cache: Arc<Mutex<FetchSessionCache>>,
}

impl FetchSessions {
    pub fn new(slots: usize) -> FetchSessions {
        let cache = FetchSessionCache::new(slots, MAX_CACHED_PARTITIONS, EVICTION);
        FetchSessions { cache: Arc::new(Mutex::new(cache)) }
    }

    fn lock(&self) -> MutexGuard<'_, FetchSessionCache> {
        // No call panics while holding the lock; a poisoned one still holds a consistent cache.
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn begin(&self, req: SessionRequest) -> Result<Plan, FetchSessionError> {
        self.lock().begin(req, Instant::now())
    }

    pub fn finish(&self, plan: &Plan, answered: &[Answered]) -> Result<Reply, FetchSessionError> {
        self.lock().finish(plan, answered, Instant::now())
    }
}

#[cfg(test)]
mod tests;
