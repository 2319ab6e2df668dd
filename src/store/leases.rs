//! Ownership on the shared disk. A broker is live while it holds the lock of
//! `<data>/__cluster/brokers/<id>.lock` (its address is in `<id>.json`); it serves a partition or
//! a coordinator shard while it holds the lock of that resource's lease file under
//! `<data>/__cluster/leases/`, which also records the holder and the leader epoch. The kernel
//! (or the NFS v4 server, when a client's lease expires) drops the locks of a process that dies,
//! so exactly one broker can hold each at a time: the lock, not a heartbeat, is what keeps two
//! brokers from writing one partition. The locks are OFD fcntl locks (store::file_lock), which
//! NFS v4 arbitrates between machines. A coordinator unit's lock is its whole lease file; a
//! partition's is the byte of its slot (placement::slot; the partitions of a slot move
//! together) in one of the `leases/locks/<n>.lock` files, so a broker leading 100,000
//! partitions holds at most 16,384 locks through 128 descriptors.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::cluster::fence::{self, SelfFence};
use super::durable::create_dir_all_durable;
use super::file_lock;
use super::ownership::{Broker, Owned};
use super::placement::{self, CoordinatorUnit};
use super::topics::{write_atomic, TopicMeta};

#[derive(Debug, Error)]
pub enum LeaseError {
    #[error("io on {0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("another kaas process holds {0} (same data dir and node id)")]
    NodeTaken(PathBuf),
    /// The lease record names another holder or epoch than the one this broker wrote.
    #[error("{0} was taken over meanwhile: no release mark written")]
    Superseded(PathBuf),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LeaseError + '_ {
    move |e| LeaseError::Io(path.to_path_buf(), e)
}

fn cluster_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("__cluster")
}

fn brokers_dir(data_dir: &Path) -> PathBuf {
    cluster_dir(data_dir).join("brokers")
}

/// Who held a lease last, and at which epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseRecord {
    pub node_id: i32,
    pub epoch: i32,
    /// Its holder handed it over (flushed and stopped first): the next holder need not fence
    /// it. Without it, the holder died or was cut off from the disk (store::cluster::fence).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub released: bool,
}

impl LeaseRecord {
    pub fn new(node_id: i32, epoch: i32) -> LeaseRecord {
        LeaseRecord { node_id, epoch, released: false }
    }
}

/// The lease file of `what`.
pub fn lease_path(data_dir: &Path, what: &Owned) -> PathBuf {
    let leases = cluster_dir(data_dir).join("leases");
    match what {
        Owned::Partition { topic, partition } => leases.join("partitions").join(format!("{topic}-{partition}.lease")),
        Owned::TxnShard(n) => leases.join("txn").join(format!("{n}.lease")),
        Owned::GroupShard(n) => leases.join("groups").join(format!("{n}.lease")),
    }
}

/// A lease this broker holds; dropping it gives the resource up.
#[derive(Debug)]
pub struct HeldLease {
    _lock: Hold,
    pub record: LeaseRecord,
    /// The record before this broker took it, when another holder had it and did not hand it
    /// over: that holder was fenced before the new record was written, so before anything of
    /// the resource is read (store::cluster::fence).
    pub unreleased_predecessor: Option<LeaseRecord>,
}

impl HeldLease {
    /// Hands the resource over: records that it was released (durably, under its lock), then
    /// lets the lock go. The caller flushed and stopped what it ran first. `path`: the lease
    /// file (`lease_path`, `unit_lease_path`). Nothing is written when this broker was fenced,
    /// or when the record is no longer the one it wrote (a broker that took over while this
    /// one was cut off from the disk): a stale release mark over a newer record would let the
    /// next holder skip fencing that newer holder and reuse its epoch.
    pub fn release(mut self, path: &Path, fence: &SelfFence) -> Result<(), LeaseError> {
        let current = match &mut self._lock {
            Hold::File { _file: file } => read_record(file),
            Hold::Byte { .. } => read_lease_at(path),
        };
        if current.is_some_and(|c| c != self.record) {
            return Err(LeaseError::Superseded(path.to_path_buf()));
        }
        fence.check().map_err(|e| LeaseError::Io(path.to_path_buf(), std::io::Error::other(e)))?;
        let record = LeaseRecord { released: true, ..self.record };
        let bytes = serde_json::to_vec(&record).map_err(|e| LeaseError::Io(path.to_path_buf(), e.into()))?;
        match &mut self._lock {
            // The lock belongs to this very file, which a rename would replace: in place.
            Hold::File { _file: file } => {
                file.set_len(0).map_err(io(path))?;
                file.seek(SeekFrom::Start(0)).map_err(io(path))?;
                file.write_all(&bytes).map_err(io(path))?;
                file.sync_all().map_err(io(path))?;
            }
            Hold::Byte { .. } => write_atomic(path, &bytes).map_err(io(path))?,
        }
        drop(self);
        Ok(())
    }
}

#[derive(Debug)]
enum Hold {
    /// The whole lease file is locked; closing it releases the lock.
    File { _file: File },
    /// One byte of the partitions' lock file.
    Byte { _byte: ByteLock },
}

/// Lock files the partitions' slot locks (placement::PARTITION_SLOTS) are spread over: the
/// kernel checks a new lock against every lock of its file, so each file holds at most 128.
pub const LOCK_FILES: u64 = 128;

/// The open `leases/locks/<n>.lock` files through which this broker holds its partitions' locks
/// (opened when first used).
#[derive(Debug, Clone)]
pub struct PartitionLocks {
    dir: PathBuf,
    files: Arc<Mutex<HashMap<u64, Arc<LockFile>>>>,
}

#[derive(Debug)]
struct LockFile {
    file: File,
    path: PathBuf,
    /// Byte (slot) -> partitions of this broker holding it: the partitions of one slot share
    /// its lock, which is released with the last of them.
    holders: Mutex<HashMap<i64, u32>>,
}

#[derive(Debug)]
struct ByteLock {
    file: Arc<LockFile>,
    offset: i64,
}

impl Drop for ByteLock {
    fn drop(&mut self) {
        let mut holders = self.file.holders.lock().unwrap_or_else(PoisonError::into_inner);
        let left = holders.get(&self.offset).map_or(0, |n| n.saturating_sub(1));
        if left > 0 {
            holders.insert(self.offset, left);
            return;
        }
        holders.remove(&self.offset);
        if let Err(e) = file_lock::unlock_byte(&self.file.file, self.offset) {
            tracing::error!(path = %self.file.path.display(), offset = self.offset, "releasing a partition lock: {e}");
        }
    }
}

impl PartitionLocks {
    pub fn open(data_dir: &Path) -> Result<PartitionLocks, LeaseError> {
        let dir = cluster_dir(data_dir).join("leases").join("locks");
        create_dir_all_durable(&dir).map_err(io(&dir))?;
        Ok(PartitionLocks { dir, files: Arc::new(Mutex::new(HashMap::new())) })
    }

    fn file(&self, offset: i64) -> Result<Arc<LockFile>, LeaseError> {
        let n = offset.unsigned_abs() % LOCK_FILES;
        let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(f) = files.get(&n) {
            return Ok(f.clone());
        }
        let path = self.dir.join(format!("{n}.lock"));
        let file =
            OpenOptions::new().create(true).truncate(false).read(true).write(true).open(&path).map_err(io(&path))?;
        let f = Arc::new(LockFile { file, path, holders: Mutex::new(HashMap::new()) });
        files.insert(n, f.clone());
        Ok(f)
    }

    /// Takes the lock of `what`'s byte unless another broker holds it.
    fn try_lock(&self, what: &Owned) -> Result<Option<ByteLock>, LeaseError> {
        let offset = placement::lock_offset(what);
        let file = self.file(offset)?;
        let mut holders = file.holders.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = holders.get_mut(&offset) {
            *n += 1;
        } else {
            if !file_lock::try_lock_byte(&file.file, offset).map_err(io(&file.path))? {
                return Ok(None);
            }
            holders.insert(offset, 1);
        }
        drop(holders);
        Ok(Some(ByteLock { file, offset }))
    }
}

fn read_record(file: &mut File) -> Option<LeaseRecord> {
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.read_to_end(&mut bytes).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The lease of a coordinator unit; its epoch is the coordinator epoch markers carry.
pub fn unit_lease_path(data_dir: &Path, unit: CoordinatorUnit) -> PathBuf {
    match unit {
        CoordinatorUnit::Txn(n) => lease_path(data_dir, &Owned::TxnShard(n)),
        CoordinatorUnit::Groups => cluster_dir(data_dir).join("leases").join("groups.lease"),
    }
}

/// The first epoch of a coordinator unit's lease: above the one lease all coordinators shared
/// before they moved one by one (`coordinators.lease`, kaas 0.x), so partitions that saw
/// markers under it accept the new ones (eos-rules 48).
pub fn unit_first_epoch(data_dir: &Path) -> i32 {
    let legacy = cluster_dir(data_dir).join("leases").join("coordinators.lease");
    read_lease_at(&legacy).map_or(0, |r| r.epoch.saturating_add(1))
}

/// Tries to take partition `what` for `node_id`: None while another broker holds it. The
/// leader epoch grows when the partition changes hands, and when this broker takes it back
/// after its previous process did not stop cleanly (`keep_own` false: that process may still
/// write its files); it stays when the same broker takes it back after a clean stop, so a
/// single broker keeps epoch 0. `first` is the lease the partition has while it has no lease
/// file (`TopicMeta::first_lease`).
pub fn try_acquire(
    locks: &PartitionLocks,
    data_dir: &Path,
    what: &Owned,
    node_id: i32,
    first: Option<LeaseRecord>,
    keep_own: bool,
) -> Result<Option<HeldLease>, LeaseError> {
    let Some(lock) = locks.try_lock(what)? else {
        return Ok(None);
    };
    let path = lease_path(data_dir, what);
    let old = read_lease_at(&path).or(first);
    let unreleased_predecessor = fence_unreleased(data_dir, old, node_id)?;
    let record = write_record(&path, node_id, old, keep_own)?;
    Ok(Some(HeldLease { _lock: Hold::Byte { _byte: lock }, record, unreleased_predecessor }))
}

/// `try_acquire` of a coordinator unit's lease file at `path` (the whole file is its lock);
/// its first record (no holder before) starts at `first_epoch`.
pub fn try_acquire_from(
    data_dir: &Path,
    path: &Path,
    node_id: i32,
    first_epoch: i32,
) -> Result<Option<HeldLease>, LeaseError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_dir_all_durable(dir).map_err(io(dir))?;
    let mut file =
        OpenOptions::new().create(true).truncate(false).read(true).write(true).open(path).map_err(io(path))?;
    if !file_lock::try_lock(&file).map_err(io(path))? {
        return Ok(None);
    }
    let old = read_record(&mut file);
    let unreleased_predecessor = fence_unreleased(data_dir, old, node_id)?;
    let (record, changed) = next_record(old, node_id, first_epoch, true);
    if changed {
        let bytes = serde_json::to_vec(&record).map_err(|e| LeaseError::Io(path.to_path_buf(), e.into()))?;
        // Written in place: the lock belongs to this file, which a rename would replace.
        file.set_len(0).map_err(io(path))?;
        file.seek(SeekFrom::Start(0)).map_err(io(path))?;
        file.write_all(&bytes).map_err(io(path))?;
        // The epoch must be on disk before anything is served under it.
        file.sync_all().map_err(io(path))?;
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(Some(HeldLease { _lock: Hold::File { _file: file }, record, unreleased_predecessor }))
}

/// Under the lock of a lease last held as `old`, before `node_id` writes its own record: a
/// holder that did not hand it over (it died, or was cut off from the disk and may still run)
/// is fenced first. Returns that holder's record. A holder that cannot be fenced makes the
/// taking fail: nothing is written, and the next tick tries again.
fn fence_unreleased(
    data_dir: &Path,
    old: Option<LeaseRecord>,
    node_id: i32,
) -> Result<Option<LeaseRecord>, LeaseError> {
    let unreleased = old.filter(|o| o.node_id != node_id && !o.released);
    if let Some(o) = unreleased {
        fence_predecessor(data_dir, o.node_id)?;
    }
    Ok(unreleased)
}

/// The record of `node_id` taking a lease last held as `old`, and whether it differs: the epoch
/// grows when the lease changes hands and stays when its holder takes it back with `keep_own`
/// (a clean restart); a release mark is dropped.
fn next_record(old: Option<LeaseRecord>, node_id: i32, first_epoch: i32, keep_own: bool) -> (LeaseRecord, bool) {
    match old {
        None => (LeaseRecord::new(node_id, first_epoch), true),
        Some(old) if old.node_id == node_id && keep_own => (LeaseRecord::new(node_id, old.epoch), old.released),
        Some(old) => (LeaseRecord::new(node_id, old.epoch.saturating_add(1)), true),
    }
}

/// Under a partition's lock: the record of `node_id` taking it from `old`, written durably
/// unless it already says so (neither a clean restart nor the first leader chosen at creation
/// writes anything).
fn write_record(
    path: &Path,
    node_id: i32,
    old: Option<LeaseRecord>,
    keep_own: bool,
) -> Result<LeaseRecord, LeaseError> {
    let (record, changed) = next_record(old, node_id, 0, keep_own);
    if changed {
        let bytes = serde_json::to_vec(&record).map_err(|e| LeaseError::Io(path.to_path_buf(), e.into()))?;
        // The epoch must be on disk before anything is served under it (write_atomic fsyncs the
        // file and its directory); a reader never sees half a record.
        write_atomic(path, &bytes).map_err(io(path))?;
    }
    Ok(record)
}

/// The lease partition `p` of `meta` has before any lease file says otherwise: the broker
/// placement picked among the brokers live at its creation, at epoch 0 (`TopicMeta::placed_on_for`).
pub fn first_lease(meta: &TopicMeta, p: i32) -> Option<LeaseRecord> {
    let what = Owned::Partition { topic: meta.name.clone(), partition: p };
    let node_id = placement::desired_owner(&what, meta.placed_on_for(p))?;
    Some(LeaseRecord::new(node_id, 0))
}

/// Removes the lease files of `partitions` of a deleted `topic`: a topic created again under
/// its name starts from its own first leases.
pub fn remove_partition_leases(data_dir: &Path, topic: &str, partitions: &[i32]) -> std::io::Result<()> {
    for p in partitions {
        let what = Owned::Partition { topic: topic.to_string(), partition: *p };
        match std::fs::remove_file(lease_path(data_dir, &what)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// Who holds (or last held) `what`, as its lease file says, else `first`.
pub fn read_lease(data_dir: &Path, what: &Owned, first: Option<LeaseRecord>) -> Option<LeaseRecord> {
    read_lease_at(&lease_path(data_dir, what)).or(first)
}

pub fn read_lease_at(path: &Path) -> Option<LeaseRecord> {
    let mut file = File::open(path).ok()?;
    read_record(&mut file)
}

/// This broker's membership; dropping it leaves the cluster.
#[derive(Debug)]
pub struct Registration {
    _lock: File,
    json_path: PathBuf,
    record: BrokerRecord,
    /// Whether this node's previous process stopped cleanly (or there was none): then its
    /// files are this process's to go on with; else it may still run, cut off from the disk,
    /// and was fenced at registration (store::cluster::fence).
    pub previous_clean: bool,
}

impl Registration {
    /// This process's incarnation (store::cluster::fence).
    pub fn incarnation(&self) -> u64 {
        self.record.incarnation
    }

    /// At the end of a clean stop (every partition flushed and stopped): the next process of
    /// this node goes on with its partitions' epochs.
    pub fn mark_clean_stop(&self) -> Result<(), LeaseError> {
        let record = BrokerRecord { clean_stop: true, ..self.record.clone() };
        let bytes = serde_json::to_vec(&record).map_err(|e| LeaseError::Io(self.json_path.clone(), e.into()))?;
        write_atomic(&self.json_path, &bytes).map_err(io(&self.json_path))
    }
}

/// Joins the cluster: takes `brokers/<id>.lock` (refused while another process has this node
/// id; retried for two seconds, the time a predecessor with this id takes to exit) and writes
/// the address to `brokers/<id>.json`.
pub fn register(data_dir: &Path, broker: &Broker) -> Result<Registration, LeaseError> {
    let dir = brokers_dir(data_dir);
    create_dir_all_durable(&dir).map_err(io(&dir))?;
    let lock_path = dir.join(format!("{}.lock", broker.node_id));
    let lock = OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path).map_err(io(&lock_path))?;
    let deadline = Instant::now() + Duration::from_secs(2);
    while !file_lock::try_lock(&lock).map_err(io(&lock_path))? {
        if Instant::now() >= deadline {
            return Err(LeaseError::NodeTaken(lock_path));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let json_path = dir.join(format!("{}.json", broker.node_id));
    let previous = std::fs::read(&json_path).ok().and_then(|b| serde_json::from_slice::<BrokerRecord>(&b).ok());
    let previous_clean = previous.as_ref().is_none_or(|p| p.clean_stop);
    if let Some(p) = previous.as_ref().filter(|p| !p.clean_stop) {
        // It may still run, cut off from the disk: it acknowledges nothing from now on.
        fence::fence_broker(data_dir, broker.node_id, p.incarnation)
            .map_err(|e| LeaseError::Io(json_path.clone(), std::io::Error::other(e)))?;
    }
    let record = BrokerRecord {
        node_id: broker.node_id,
        host: broker.host.clone(),
        port: broker.port,
        incarnation: fence::new_incarnation(),
        clean_stop: false,
    };
    let bytes = serde_json::to_vec(&record).map_err(|e| LeaseError::Io(json_path.clone(), e.into()))?;
    write_atomic(&json_path, &bytes).map_err(io(&json_path))?;
    Ok(Registration { _lock: lock, json_path, record, previous_clean })
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct BrokerRecord {
    node_id: i32,
    host: String,
    port: i32,
    /// Drawn at each start (store::cluster::fence); 0 in files of older kaas versions.
    #[serde(default)]
    incarnation: u64,
    /// Written at the end of a clean stop.
    #[serde(default)]
    clean_stop: bool,
}

/// The incarnation `node_id` registered last: the one a broker taking over from it fences (0
/// for a broker that never registered here, or registered before incarnations existed). An
/// unreadable registration is an error: the taker cannot fence it, so it must not take over.
pub fn broker_incarnation(data_dir: &Path, node_id: i32) -> Result<u64, LeaseError> {
    let path = brokers_dir(data_dir).join(format!("{node_id}.json"));
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(LeaseError::Io(path, e)),
    };
    let record: BrokerRecord = serde_json::from_slice(&bytes).map_err(|e| LeaseError::Io(path, e.into()))?;
    Ok(record.incarnation)
}

/// Fences the broker that held a lease without handing it over (`HeldLease::unreleased_predecessor`)
/// before its resource is read: its current incarnation acknowledges nothing from then on.
/// Returns the incarnation fenced.
pub fn fence_predecessor(data_dir: &Path, node_id: i32) -> Result<u64, LeaseError> {
    let incarnation = broker_incarnation(data_dir, node_id)?;
    fence::fence_broker(data_dir, node_id, incarnation)
        .map_err(|e| LeaseError::Io(fence::fence_path(data_dir, node_id, incarnation), std::io::Error::other(e)))?;
    Ok(incarnation)
}

/// Whether another process holds `lock_path` (a live broker); the probe never takes the lock.
fn held_by_another(lock_path: &Path) -> bool {
    let Ok(f) = OpenOptions::new().write(true).open(lock_path) else { return false };
    file_lock::locked_by_another(&f).unwrap_or(false)
}

/// The live brokers: this one (always) and every registered broker whose lock is held.
pub fn live_brokers(data_dir: &Path, me: &Broker) -> Result<Vec<Broker>, LeaseError> {
    let dir = brokers_dir(data_dir);
    let mut out = vec![me.clone()];
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(LeaseError::Io(dir, e)),
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else { continue };
        let Ok(r) = serde_json::from_slice::<BrokerRecord>(&bytes) else { continue };
        if r.node_id == me.node_id || !held_by_another(&dir.join(format!("{}.lock", r.node_id))) {
            continue;
        }
        out.push(Broker { node_id: r.node_id, host: r.host, port: r.port, rack: None });
    }
    out.sort_by_key(|b| b.node_id);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn broker(id: i32) -> Broker {
        Broker { node_id: id, host: "127.0.0.1".into(), port: 9000 + id, rack: None }
    }

    fn part() -> Owned {
        Owned::Partition { topic: "t".into(), partition: 0 }
    }

    #[test]
    fn a_lease_is_held_by_one_broker_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let (b1, b2) = (PartitionLocks::open(dir.path()).unwrap(), PartitionLocks::open(dir.path()).unwrap());
        let held = try_acquire(&b1, dir.path(), &part(), 1, None, true).unwrap().expect("free");
        assert_eq!(held.record, LeaseRecord::new(1, 0));
        assert!(try_acquire(&b2, dir.path(), &part(), 2, None, true).unwrap().is_none(), "held by broker 1");
        assert_eq!(read_lease(dir.path(), &part(), None), Some(LeaseRecord::new(1, 0)));
        drop(held);
        let taken = try_acquire(&b2, dir.path(), &part(), 2, None, true).unwrap().expect("given up");
        assert_eq!(taken.record, LeaseRecord::new(2, 1), "a new holder bumps the epoch");
    }

    #[test]
    fn the_first_leader_chosen_at_creation_writes_no_lease_file_and_a_successor_bumps_its_epoch() {
        let dir = tempfile::tempdir().unwrap();
        let (b1, b2) = (PartitionLocks::open(dir.path()).unwrap(), PartitionLocks::open(dir.path()).unwrap());
        let first = Some(LeaseRecord::new(1, 0));
        let held = try_acquire(&b1, dir.path(), &part(), 1, first, true).unwrap().expect("free");
        assert_eq!(held.record, LeaseRecord::new(1, 0));
        assert!(!lease_path(dir.path(), &part()).exists(), "nothing written");
        assert_eq!(read_lease(dir.path(), &part(), first), first);
        drop(held);
        let taken = try_acquire(&b2, dir.path(), &part(), 2, first, true).unwrap().expect("given up");
        assert_eq!(taken.record, LeaseRecord::new(2, 1));
        assert_eq!(read_lease(dir.path(), &part(), first), Some(LeaseRecord::new(2, 1)));
    }

    #[test]
    fn partition_locks_share_one_file_and_are_released_one_by_one() {
        let dir = tempfile::tempdir().unwrap();
        let (b1, b2) = (PartitionLocks::open(dir.path()).unwrap(), PartitionLocks::open(dir.path()).unwrap());
        let p = |n| Owned::Partition { topic: "t".into(), partition: n };
        // 100 partitions in 100 different slots, and one sharing the first one's slot.
        let mut seen = HashMap::new();
        let mut alone = Vec::new();
        let mut twin = None;
        for n in 0.. {
            match seen.entry(placement::slot("t", n)) {
                std::collections::hash_map::Entry::Vacant(v) if alone.len() < 100 => {
                    v.insert(n);
                    alone.push(n);
                }
                std::collections::hash_map::Entry::Occupied(o) if *o.get() == alone[0] => twin = Some(n),
                _ => {}
            }
            if alone.len() == 100 && twin.is_some() {
                break;
            }
        }
        let twin = twin.unwrap();
        let leases: Vec<HeldLease> =
            alone.iter().map(|&n| try_acquire(&b1, dir.path(), &p(n), 1, None, true).unwrap().unwrap()).collect();
        assert!(alone.iter().all(|&n| try_acquire(&b2, dir.path(), &p(n), 2, None, true).unwrap().is_none()));
        let twin_lease =
            try_acquire(&b1, dir.path(), &p(twin), 1, None, true).unwrap().expect("its slot is this broker's");
        let mut leases = leases.into_iter();
        drop(leases.next());
        // The partitions of one slot share its lock: it is released with the last of them.
        assert!(
            try_acquire(&b2, dir.path(), &p(alone[0]), 2, None, true).unwrap().is_none(),
            "the twin still holds it"
        );
        drop(twin_lease);
        assert!(try_acquire(&b2, dir.path(), &p(alone[0]), 2, None, true).unwrap().is_some(), "given up alone");
        assert!(try_acquire(&b2, dir.path(), &p(alone[1]), 2, None, true).unwrap().is_none(), "the others stay held");
        drop(leases);
        assert!(try_acquire(&b2, dir.path(), &p(alone[1]), 2, None, true).unwrap().is_some());
    }

    #[test]
    fn the_same_broker_taking_a_lease_back_keeps_its_epoch_and_rewrites_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = lease_path(dir.path(), &Owned::TxnShard(3));
        drop(try_acquire_from(dir.path(), &path, 1, 0).unwrap());
        let again = try_acquire_from(dir.path(), &path, 1, 0).unwrap().expect("free");
        assert_eq!(again.record.epoch, 0);
        drop(again);
        drop(try_acquire_from(dir.path(), &path, 2, 0).unwrap());
        let back = try_acquire_from(dir.path(), &path, 1, 0).unwrap().expect("free");
        assert_eq!(back.record.epoch, 2);
        assert_eq!(next_record(Some(LeaseRecord::new(1, 7)), 1, 0, true), (LeaseRecord::new(1, 7), false));
        assert_eq!(next_record(None, 1, 4, true), (LeaseRecord::new(1, 4), true));
    }

    #[test]
    fn a_broker_back_after_an_unclean_stop_takes_its_leases_at_a_new_epoch() {
        // Its previous process may still write the old epoch's files (store::cluster::seal).
        assert_eq!(next_record(Some(LeaseRecord::new(1, 7)), 1, 0, false), (LeaseRecord::new(1, 8), true));
        let released = LeaseRecord { released: true, ..LeaseRecord::new(1, 7) };
        assert_eq!(next_record(Some(released), 1, 0, true), (LeaseRecord::new(1, 7), true));
    }

    #[test]
    fn only_a_predecessor_that_did_not_hand_over_is_named_for_fencing() {
        let dir = tempfile::tempdir().unwrap();
        let (b1, b2) = (PartitionLocks::open(dir.path()).unwrap(), PartitionLocks::open(dir.path()).unwrap());
        let held = try_acquire(&b1, dir.path(), &part(), 1, None, true).unwrap().unwrap();
        assert_eq!(held.unreleased_predecessor, None);
        drop(held);
        let taken = try_acquire(&b2, dir.path(), &part(), 2, None, true).unwrap().unwrap();
        assert_eq!(taken.unreleased_predecessor, Some(LeaseRecord::new(1, 0)), "broker 1 died holding it");
        assert!(fence::fence_path(dir.path(), 1, 0).exists(), "fenced before the new record was written");
        taken.release(&lease_path(dir.path(), &part()), &SelfFence::unchecked()).unwrap();
        let back = try_acquire(&b1, dir.path(), &part(), 1, None, true).unwrap().unwrap();
        assert_eq!(back.unreleased_predecessor, None, "broker 2 handed it over");
        assert_eq!(back.record, LeaseRecord::new(1, 2));
    }

    #[test]
    fn a_release_mark_is_never_written_over_a_newer_holders_record() {
        let dir = tempfile::tempdir().unwrap();
        let (b1, b2) = (PartitionLocks::open(dir.path()).unwrap(), PartitionLocks::open(dir.path()).unwrap());
        let path = lease_path(dir.path(), &part());
        let stale = try_acquire(&b1, dir.path(), &part(), 1, Some(LeaseRecord::new(1, 3)), true).unwrap().unwrap();
        // Broker 1 is cut off (its lock lost: here a lock taken behind it) and broker 2 takes over.
        let newer = LeaseRecord::new(2, 4);
        write_atomic(&path, &serde_json::to_vec(&newer).unwrap()).unwrap();
        assert!(matches!(stale.release(&path, &SelfFence::unchecked()), Err(LeaseError::Superseded(_))));
        assert_eq!(read_lease_at(&path), Some(newer));
        // A fenced broker writes no release mark either.
        let own = try_acquire(&b2, dir.path(), &Owned::TxnShard(0), 2, None, true).unwrap().unwrap();
        let fenced = SelfFence::new(dir.path(), 2, 5);
        fence::fence_broker(dir.path(), 2, 5).unwrap();
        assert!(own.release(&lease_path(dir.path(), &Owned::TxnShard(0)), &fenced).is_err());
        assert_eq!(read_lease_at(&lease_path(dir.path(), &Owned::TxnShard(0))), Some(LeaseRecord::new(2, 0)));
    }

    #[test]
    fn live_brokers_are_those_holding_their_lock() {
        let dir = tempfile::tempdir().unwrap();
        let reg1 = register(dir.path(), &broker(1)).unwrap();
        let reg2 = register(dir.path(), &broker(2)).unwrap();
        let ids = |v: Vec<Broker>| v.into_iter().map(|b| b.node_id).collect::<Vec<_>>();
        // Registrations in one process are separate open files, so each sees the other's lock.
        assert_eq!(ids(live_brokers(dir.path(), &broker(1)).unwrap()), vec![1, 2]);
        drop(reg2);
        assert_eq!(ids(live_brokers(dir.path(), &broker(1)).unwrap()), vec![1]);
        assert!(matches!(register(dir.path(), &broker(1)), Err(LeaseError::NodeTaken(_))));
        drop(reg1);
        assert!(register(dir.path(), &broker(1)).is_ok(), "the node id is free again");
    }

    #[test]
    fn an_unreadable_registration_is_not_fenced_by_guess() {
        let dir = tempfile::tempdir().unwrap();
        let reg = register(dir.path(), &broker(1)).unwrap();
        assert_eq!(fence_predecessor(dir.path(), 1).unwrap(), reg.incarnation());
        assert!(fence::fence_path(dir.path(), 1, reg.incarnation()).exists());
        assert_eq!(broker_incarnation(dir.path(), 9).unwrap(), 0, "never registered here");
        std::fs::write(brokers_dir(dir.path()).join("2.json"), b"{torn").unwrap();
        assert!(fence_predecessor(dir.path(), 2).is_err());
    }
}
