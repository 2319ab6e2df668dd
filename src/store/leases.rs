//! Ownership on the shared disk. A broker is live while it holds the lock of
//! `<data>/__cluster/brokers/<id>.lock` (its address is in `<id>.json`); it serves a partition or
//! a coordinator shard while it holds the lock of that resource's lease file under
//! `<data>/__cluster/leases/`, which also records the holder and the leader epoch. The kernel
//! (or the NFS v4 server, when a client's lease expires) drops the locks of a process that dies,
//! so exactly one broker can hold each at a time: the lock, not a heartbeat, is what keeps two
//! brokers from writing one partition. The locks are OFD fcntl locks (store::file_lock), which
//! NFS v4 arbitrates between machines.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::durable::create_dir_all_durable;
use super::file_lock;
use super::ownership::{Broker, Owned};
use super::placement::CoordinatorUnit;
use super::topics::write_atomic;

#[derive(Debug, Error)]
pub enum LeaseError {
    #[error("io on {0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("another kaas process holds {0} (same data dir and node id)")]
    NodeTaken(PathBuf),
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
    _file: File,
    pub record: LeaseRecord,
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

/// Tries to take `what` for `node_id`: None while another broker holds it. The leader epoch
/// grows when the resource changes hands and stays when the same broker takes it back (a
/// restart), so a single broker keeps epoch 0.
pub fn try_acquire(data_dir: &Path, what: &Owned, node_id: i32) -> Result<Option<HeldLease>, LeaseError> {
    try_acquire_at(&lease_path(data_dir, what), node_id)
}

/// `try_acquire` of the lease file at `path`.
pub fn try_acquire_at(path: &Path, node_id: i32) -> Result<Option<HeldLease>, LeaseError> {
    try_acquire_from(path, node_id, 0)
}

/// `try_acquire_at` whose first record (no holder before) starts at `first_epoch`.
pub fn try_acquire_from(path: &Path, node_id: i32, first_epoch: i32) -> Result<Option<HeldLease>, LeaseError> {
    let path = path.to_path_buf();
    let dir = path.parent().unwrap_or(Path::new("."));
    create_dir_all_durable(dir).map_err(io(dir))?;
    let mut file =
        OpenOptions::new().create(true).truncate(false).read(true).write(true).open(&path).map_err(io(&path))?;
    if !file_lock::try_lock(&file).map_err(io(&path))? {
        return Ok(None);
    }
    let record = match read_record(&mut file) {
        None => LeaseRecord { node_id, epoch: first_epoch },
        Some(old) if old.node_id == node_id => old,
        Some(old) => LeaseRecord { node_id, epoch: old.epoch.saturating_add(1) },
    };
    let bytes = serde_json::to_vec(&record).map_err(|e| LeaseError::Io(path.clone(), e.into()))?;
    file.set_len(0).map_err(io(&path))?;
    file.seek(SeekFrom::Start(0)).map_err(io(&path))?;
    file.write_all(&bytes).map_err(io(&path))?;
    // The epoch must be on disk before anything is served under it.
    file.sync_all().map_err(io(&path))?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(Some(HeldLease { _file: file, record }))
}

/// Who holds (or last held) `what`, as its lease file says.
pub fn read_lease(data_dir: &Path, what: &Owned) -> Option<LeaseRecord> {
    read_lease_at(&lease_path(data_dir, what))
}

pub fn read_lease_at(path: &Path) -> Option<LeaseRecord> {
    let mut file = File::open(path).ok()?;
    read_record(&mut file)
}

/// This broker's membership; dropping it leaves the cluster.
#[derive(Debug)]
pub struct Registration {
    _lock: File,
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
    let record = BrokerRecord { node_id: broker.node_id, host: broker.host.clone(), port: broker.port };
    let json_path = dir.join(format!("{}.json", broker.node_id));
    let bytes = serde_json::to_vec(&record).map_err(|e| LeaseError::Io(json_path.clone(), e.into()))?;
    write_atomic(&json_path, &bytes).map_err(io(&json_path))?;
    Ok(Registration { _lock: lock })
}

#[derive(Debug, Serialize, Deserialize)]
struct BrokerRecord {
    node_id: i32,
    host: String,
    port: i32,
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
        let held = try_acquire(dir.path(), &part(), 1).unwrap().expect("free");
        assert_eq!(held.record, LeaseRecord { node_id: 1, epoch: 0 });
        assert!(try_acquire(dir.path(), &part(), 2).unwrap().is_none(), "held by broker 1");
        assert_eq!(read_lease(dir.path(), &part()), Some(LeaseRecord { node_id: 1, epoch: 0 }));
        drop(held);
        let taken = try_acquire(dir.path(), &part(), 2).unwrap().expect("given up");
        assert_eq!(taken.record, LeaseRecord { node_id: 2, epoch: 1 }, "a new holder bumps the epoch");
    }

    #[test]
    fn the_same_broker_taking_a_lease_back_keeps_its_epoch() {
        let dir = tempfile::tempdir().unwrap();
        drop(try_acquire(dir.path(), &Owned::TxnShard(3), 1).unwrap());
        let again = try_acquire(dir.path(), &Owned::TxnShard(3), 1).unwrap().expect("free");
        assert_eq!(again.record.epoch, 0);
        drop(again);
        drop(try_acquire(dir.path(), &Owned::TxnShard(3), 2).unwrap());
        let back = try_acquire(dir.path(), &Owned::TxnShard(3), 1).unwrap().expect("free");
        assert_eq!(back.record.epoch, 2);
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
}
