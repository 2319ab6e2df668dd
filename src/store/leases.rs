//! Ownership on the shared disk. A broker registers in `<data>/__cluster/brokers/` (its lock
//! `<id>.lock`, its address and incarnation `<id>.json`, its heartbeat `<id>.alive`); it is live
//! while its lock is held and its heartbeat moves (store::cluster::liveness). It serves a
//! partition or a coordinator unit under an epoch it claimed exclusively
//! (store::cluster::claim): `<data>/__cluster/leases/.../<resource>.lease.e<E>`. Nothing is
//! locked per resource: a broker that placement gives a resource waits while its holder is
//! live, and otherwise fences the holder (store::cluster::fence) and claims the next epoch.
//! What keeps a stale holder from losing acknowledged data is the fence and the epoch-owned
//! files (store::cluster::seal), not a lock.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use super::cluster::claim::LeaseRecord;
use super::cluster::claim::{self, Step};
use super::cluster::fence::{self, SelfFence};
use super::cluster::file_lock;
use super::cluster::liveness::{self, Heartbeat};
use super::durable::create_dir_all_durable;
use super::durable::write_atomic;
use super::ownership::Broker;
use super::placement::CoordinatorUnit;
use super::topics::{LeaseNames, TopicMeta};
use uuid::Uuid;

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

fn partition_leases_dir(data_dir: &Path) -> PathBuf {
    cluster_dir(data_dir).join("leases").join("partitions")
}

fn by_name(data_dir: &Path, topic: &str, p: i32) -> PathBuf {
    partition_leases_dir(data_dir).join(format!("{topic}-{p}.lease"))
}

fn by_id_dir(data_dir: &Path, id: Uuid) -> PathBuf {
    partition_leases_dir(data_dir).join(id.simple().to_string())
}

/// The lease file of partition `p` of `meta` (the hint of its newest claim:
/// store::cluster::claim): under the topic's id, or its name for topics of older kaas
/// (`LeaseNames`).
pub fn partition_lease_path(data_dir: &Path, meta: &TopicMeta, p: i32) -> PathBuf {
    match meta.leases {
        LeaseNames::ById => by_id_dir(data_dir, meta.id).join(format!("{p}.lease")),
        LeaseNames::ByName => by_name(data_dir, &meta.name, p),
    }
}

/// A lease this broker holds: its claim of an epoch. Nothing is locked; a broker that sees this
/// one live waits for its hand-over, one that does not fences it before it claims the next
/// epoch (store::cluster::claim).
#[derive(Debug)]
pub struct HeldLease {
    /// Its lease file (`partition_lease_path`, `unit_lease_path`).
    pub path: PathBuf,
    pub record: LeaseRecord,
    /// The holder before this broker, when it did not hand the resource over: it was fenced
    /// before the claim, so before anything of the resource is read (store::cluster::fence).
    pub unreleased_predecessor: Option<LeaseRecord>,
}

impl HeldLease {
    /// Hands the resource over: marks its epoch released, durably. The caller flushed and
    /// stopped what it ran first. Nothing is written when this broker was fenced: a broker took
    /// over without waiting for it, and what it ran may have been cut short.
    pub fn release(self, fence: &SelfFence) -> Result<(), LeaseError> {
        let path = &self.path;
        fence.check().map_err(|e| LeaseError::Io(path.clone(), std::io::Error::other(e)))?;
        claim::mark_released(path, self.record).map_err(io(path))
    }
}

/// The lease of a coordinator unit; its epoch is the coordinator epoch markers carry.
pub fn unit_lease_path(data_dir: &Path, unit: CoordinatorUnit) -> PathBuf {
    match unit {
        CoordinatorUnit::Txn(n) => cluster_dir(data_dir).join("leases").join("txn").join(format!("{n}.lease")),
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

/// Tries to take partition `what` for `node_id`: None while a broker in `live` holds it (or
/// another broker claimed its next epoch first). The leader epoch grows when the partition
/// changes hands, and when this broker takes it back after its previous process did not stop
/// cleanly (`keep_own` false: that process may still write its files); it stays when the same
/// broker takes it back after a clean stop, so a single broker keeps epoch 0. `first` is the
/// lease the partition has while nothing was claimed (`first_lease`); `path` its lease file
/// (`partition_lease_path`).
pub fn try_acquire(
    data_dir: &Path,
    path: &Path,
    node_id: i32,
    first: Option<LeaseRecord>,
    keep_own: bool,
    expired: &Expired,
) -> Result<Option<HeldLease>, LeaseError> {
    acquire(data_dir, path, node_id, first, 0, keep_own, expired)
}

/// `try_acquire` of a coordinator unit's lease at `path`; its first claim (no holder before)
/// is `first_epoch`.
pub fn try_acquire_from(
    data_dir: &Path,
    path: &Path,
    node_id: i32,
    first_epoch: i32,
    keep_own: bool,
    expired: &Expired,
) -> Result<Option<HeldLease>, LeaseError> {
    acquire(data_dir, path, node_id, None, first_epoch, keep_own, expired)
}

fn acquire(
    data_dir: &Path,
    path: &Path,
    node_id: i32,
    first: Option<LeaseRecord>,
    first_epoch: i32,
    keep_own: bool,
    expired: &Expired,
) -> Result<Option<HeldLease>, LeaseError> {
    let current = claim::current(path, first, first_epoch).map_err(io(path))?;
    let holder_live = |node| holder_live(data_dir, node, expired);
    let (epoch, fenced) = match claim::next_step(current, node_id, holder_live, keep_own, first_epoch) {
        Step::Wait => return Ok(None),
        Step::Keep(record) => {
            return Ok(Some(HeldLease { path: path.to_path_buf(), record, unreleased_predecessor: None }))
        }
        Step::Claim { epoch, fence } => (epoch, fence),
    };
    // The holder that did not hand over acknowledges nothing from here on; fenced before the
    // claim, so a fence that cannot be written leaves nothing claimed.
    let before = match fenced {
        Some(node) => Some(fence_predecessor(data_dir, node)?),
        None => None,
    };
    if let Some(dir) = path.parent() {
        create_dir_all_durable(dir).map_err(io(dir))?;
    }
    if !claim::claim(path, LeaseRecord::new(node_id, epoch)).map_err(io(path))? {
        return Ok(None);
    }
    if let (Some(node), Some(incarnation)) = (fenced, before) {
        // The node may have started again between the fence and the claim, and its new process
        // kept the epoch (a clean restart): it registered before it read the claims, so it is
        // the registration now, and it is fenced too. (If this fence fails, the error leaves
        // the claim unopened; a later tick keeps it without this check: a double fault, noted
        // in docs/cluster.md, "Known limits".)
        if broker_incarnation(data_dir, node)? != incarnation {
            fence_predecessor(data_dir, node)?;
        }
    }
    let unreleased_predecessor = fenced.and(current);
    Ok(Some(HeldLease { path: path.to_path_buf(), record: LeaseRecord::new(node_id, epoch), unreleased_predecessor }))
}

/// The peers whose heartbeat the membership saw stand still for a whole timeout, with the
/// incarnation it saw (store::cluster::liveness). Empty on a broker that just started.
pub type Expired = [(i32, u64)];

/// Whether the holder `node` of a claim just read is live: its broker lock is held now (a
/// process that died released it) and its current incarnation is not one whose heartbeat
/// expired. A broker registered since the membership last looked counts as live: it may have
/// claimed since. Anything that cannot be read counts as live: nobody is fenced on a guess.
fn holder_live(data_dir: &Path, node: i32, expired: &Expired) -> bool {
    if !held_by_another(&brokers_dir(data_dir).join(format!("{node}.lock"))) {
        return false;
    }
    match expired.iter().find(|(n, _)| *n == node) {
        Some((_, incarnation)) => broker_incarnation(data_dir, node).map_or(true, |now| now != *incarnation),
        None => true,
    }
}

/// The lease partition `p` of `meta` has before any lease file says otherwise: the broker
/// placement picked among the brokers live at its creation, at epoch 0 (`TopicMeta::placed_on_for`).
pub fn first_lease(meta: &TopicMeta, p: i32) -> Option<LeaseRecord> {
    let node_id = super::placement::leader_of(meta, p, meta.placed_on_for(p))?;
    Some(LeaseRecord::new(node_id, 0))
}

/// Removes the lease files (claims and marks) of `partitions` of the deleted topic `topic`
/// with id `id`, whichever way they are named (`LeaseNames`): a topic created again under its
/// name starts from its own first leases. Those of a topic created again meanwhile are under
/// its own id, never touched here.
pub fn remove_partition_leases(data_dir: &Path, topic: &str, id: Uuid, partitions: &[i32]) -> std::io::Result<()> {
    let dir = by_id_dir(data_dir, id);
    for p in partitions {
        claim::remove_all(&dir.join(format!("{p}.lease")))?;
        claim::remove_all(&by_name(data_dir, topic, *p))?;
    }
    // Gone once every broker removed its share (fails while a partition's files remain).
    let _ = std::fs::remove_dir(&dir);
    Ok(())
}

/// Who holds (or last held) the lease at `path`: its newest claim, else `first`.
pub fn read_lease(path: &Path, first: Option<LeaseRecord>) -> Option<LeaseRecord> {
    claim::current(path, first, 0).ok().flatten()
}

/// Hands over, on its behalf, a lease whose newest claim is this node's (`me`) while this
/// process does not hold it: a claim of this node's previous process, which stopped (cleanly,
/// or not and was fenced when this one registered). Left unreleased, the broker placement now
/// gives the resource to would wait for ever: this node's lock is held (by this process), so
/// the holder looks live. `newest`: the lease's newest claim (`read_lease`), of a resource this
/// process holds no claim of and is not handing over. `fence` is checked after it was read: a claim read before a check that passes was made
/// before any newer process of this node registered (which fences this one first), so a
/// fenced process (a zombie) never releases a newer process's claim. True when it released.
pub fn release_previous_process(
    path: &Path,
    newest: Option<LeaseRecord>,
    me: i32,
    fence: &SelfFence,
) -> Result<bool, LeaseError> {
    let Some(record) = newest.filter(|r| r.node_id == me && !r.released) else { return Ok(false) };
    fence.check().map_err(|e| LeaseError::Io(path.to_path_buf(), std::io::Error::other(e)))?;
    claim::mark_released(path, record).map_err(io(path))?;
    Ok(true)
}

/// The newest claim of the lease at `path` (a coordinator unit's).
pub fn read_lease_at(path: &Path) -> Option<LeaseRecord> {
    claim::current(path, None, 0).ok().flatten()
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
    /// This incarnation's heartbeat, for the thread that renews it (store::cluster::liveness).
    pub heartbeat: Option<liveness::HeartbeatWriter>,
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
        endpoints: broker.endpoints.clone(),
        incarnation: fence::new_incarnation(),
        clean_stop: false,
    };
    // Beating before the registration names this incarnation: a peer that reads the one
    // finds the other.
    let heartbeat = liveness::HeartbeatWriter::create(data_dir, broker.node_id, record.incarnation)
        .map_err(io(&liveness::heartbeat_path(data_dir, broker.node_id)))?;
    let bytes = serde_json::to_vec(&record).map_err(|e| LeaseError::Io(json_path.clone(), e.into()))?;
    write_atomic(&json_path, &bytes).map_err(io(&json_path))?;
    Ok(Registration { _lock: lock, json_path, record, previous_clean, heartbeat: Some(heartbeat) })
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct BrokerRecord {
    node_id: i32,
    host: String,
    port: i32,
    /// Every listener's advertised address (none in files of older kaas versions).
    #[serde(default)]
    endpoints: Vec<crate::store::ownership::Endpoint>,
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

/// A registered peer as read from the shared disk.
#[derive(Debug, Clone)]
pub struct PeerState {
    pub broker: Broker,
    /// Its process holds its broker lock.
    pub lock_held: bool,
    pub heartbeat: Option<Heartbeat>,
}

/// Every registered broker but `me`, with its lock and its heartbeat as read now.
pub fn peers(data_dir: &Path, me: i32) -> Result<Vec<PeerState>, LeaseError> {
    let dir = brokers_dir(data_dir);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(LeaseError::Io(dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else { continue };
        let Ok(r) = serde_json::from_slice::<BrokerRecord>(&bytes) else { continue };
        if r.node_id == me {
            continue;
        }
        let lock_held = held_by_another(&dir.join(format!("{}.lock", r.node_id)));
        let heartbeat = liveness::read_heartbeat(&liveness::heartbeat_path(data_dir, r.node_id));
        out.push(PeerState {
            broker: Broker { node_id: r.node_id, host: r.host, port: r.port, rack: None, endpoints: r.endpoints },
            lock_held,
            heartbeat,
        });
    }
    out.sort_by_key(|p| p.broker.node_id);
    Ok(out)
}

/// The brokers live at start-up, before any heartbeat was watched: this one and every
/// registered broker whose lock is held.
pub fn live_brokers(data_dir: &Path, me: &Broker) -> Result<Vec<Broker>, LeaseError> {
    let mut out = vec![me.clone()];
    out.extend(peers(data_dir, me.node_id)?.into_iter().filter(|p| p.lock_held).map(|p| p.broker));
    out.sort_by_key(|b| b.node_id);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn broker(id: i32) -> Broker {
        Broker { node_id: id, host: "127.0.0.1".into(), port: 9000 + id, rack: None, endpoints: Vec::new() }
    }

    fn part(dir: &Path) -> PathBuf {
        by_id_dir(dir, Uuid::nil()).join("0.lease")
    }

    fn txn(dir: &Path, n: u32) -> PathBuf {
        unit_lease_path(dir, CoordinatorUnit::Txn(n))
    }

    #[test]
    fn a_lease_held_by_a_live_broker_is_waited_for_and_a_hand_over_bumps_the_epoch() {
        let dir = tempfile::tempdir().unwrap();
        let _broker1 = register(dir.path(), &broker(1)).unwrap();
        let held = try_acquire(dir.path(), &part(dir.path()), 1, None, true, &[]).unwrap().expect("free");
        assert_eq!(held.record, LeaseRecord::new(1, 0));
        assert!(try_acquire(dir.path(), &part(dir.path()), 2, None, true, &[]).unwrap().is_none(), "broker 1 is live");
        assert_eq!(read_lease(&part(dir.path()), None), Some(LeaseRecord::new(1, 0)));
        held.release(&SelfFence::unchecked()).unwrap();
        let taken = try_acquire(dir.path(), &part(dir.path()), 2, None, true, &[]).unwrap().expect("handed over");
        assert_eq!(taken.record, LeaseRecord::new(2, 1), "a new holder bumps the epoch");
        assert_eq!(taken.unreleased_predecessor, None);
        assert!(!fence::fence_path(dir.path(), 1, 0).exists(), "a holder that handed over is not fenced");
    }

    #[test]
    fn the_first_leader_chosen_at_creation_writes_no_lease_file_and_a_successor_bumps_its_epoch() {
        let dir = tempfile::tempdir().unwrap();
        let first = Some(LeaseRecord::new(1, 0));
        let held = try_acquire(dir.path(), &part(dir.path()), 1, first, true, &[]).unwrap().expect("free");
        assert_eq!(held.record, LeaseRecord::new(1, 0));
        assert!(!part(dir.path()).exists(), "nothing written");
        assert_eq!(read_lease(&part(dir.path()), first), first);
        let taken = try_acquire(dir.path(), &part(dir.path()), 2, first, true, &[]).unwrap().expect("broker 1 gone");
        assert_eq!(taken.record, LeaseRecord::new(2, 1));
        assert_eq!(read_lease(&part(dir.path()), first), Some(LeaseRecord::new(2, 1)));
    }

    #[test]
    fn the_same_broker_taking_a_lease_back_after_a_clean_stop_keeps_its_epoch() {
        let dir = tempfile::tempdir().unwrap();
        let path = txn(dir.path(), 3);
        assert!(try_acquire_from(dir.path(), &path, 1, 0, true, &[]).unwrap().is_some());
        let again = try_acquire_from(dir.path(), &path, 1, 0, true, &[]).unwrap().expect("its own");
        assert_eq!(again.record.epoch, 0);
        assert!(try_acquire_from(dir.path(), &path, 2, 0, true, &[]).unwrap().is_some(), "broker 1 gone");
        let back = try_acquire_from(dir.path(), &path, 1, 0, true, &[]).unwrap().expect("broker 2 gone");
        assert_eq!(back.record.epoch, 2);
        assert_eq!(
            try_acquire_from(dir.path(), &txn(dir.path(), 4), 1, 4, true, &[]).unwrap().unwrap().record.epoch,
            4
        );
    }

    #[test]
    fn a_lease_of_this_nodes_previous_process_is_handed_over_for_the_broker_placement_now_picks() {
        let dir = tempfile::tempdir().unwrap();
        let path = part(dir.path());
        // Broker 1's previous process claimed it; broker 1 is back (its lock held: it looks live)
        // and placement now gives the partition to broker 2, which waits for the holder.
        assert!(try_acquire(dir.path(), &path, 1, None, true, &[]).unwrap().is_some());
        let reg = register(dir.path(), &broker(1)).unwrap();
        assert!(try_acquire(dir.path(), &path, 2, None, true, &[]).unwrap().is_none(), "broker 1 looks live");
        let me = SelfFence::new(dir.path(), 1, reg.incarnation());
        // Another node's claim, and a claim already released, are left alone.
        assert!(!release_previous_process(&path, read_lease(&path, None), 3, &me).unwrap());
        assert!(release_previous_process(&path, read_lease(&path, None), 1, &me).unwrap());
        assert!(!release_previous_process(&path, read_lease(&path, None), 1, &me).unwrap(), "released once");
        let taken = try_acquire(dir.path(), &path, 2, None, true, &[]).unwrap().expect("handed over");
        assert_eq!((taken.record, taken.unreleased_predecessor), (LeaseRecord::new(2, 1), None));
        // A fenced process (a zombie of broker 2 here) releases nothing.
        let zombie = SelfFence::new(dir.path(), 2, 9);
        fence::fence_broker(dir.path(), 2, 9).unwrap();
        assert!(release_previous_process(&path, read_lease(&path, None), 2, &zombie).is_err());
        assert!(!read_lease(&path, None).unwrap().released);
    }

    #[test]
    fn a_broker_back_after_an_unclean_stop_takes_its_leases_at_a_new_epoch() {
        // Its previous process may still write the old epoch's files (store::cluster::seal).
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(try_acquire(dir.path(), &part(dir.path()), 1, None, true, &[]).unwrap().unwrap().record.epoch, 0);
        let again = try_acquire(dir.path(), &part(dir.path()), 1, None, false, &[]).unwrap().unwrap();
        assert_eq!(again.record, LeaseRecord::new(1, 1));
        assert_eq!(again.unreleased_predecessor, None, "it does not fence itself");
    }

    #[test]
    fn a_holder_that_is_not_live_and_did_not_hand_over_is_fenced_before_the_claim() {
        let dir = tempfile::tempdir().unwrap();
        let reg = register(dir.path(), &broker(1)).unwrap();
        assert!(try_acquire(dir.path(), &part(dir.path()), 1, None, true, &[]).unwrap().is_some());
        assert!(try_acquire(dir.path(), &part(dir.path()), 2, None, true, &[]).unwrap().is_none(), "broker 1 is live");
        // Broker 1 still runs (a stall: its lock is held) but its heartbeat expired.
        let expired = [(1, reg.incarnation())];
        let taken = try_acquire(dir.path(), &part(dir.path()), 2, None, true, &expired).unwrap().unwrap();
        assert_eq!(taken.unreleased_predecessor, Some(LeaseRecord::new(1, 0)));
        assert!(fence::fence_path(dir.path(), 1, reg.incarnation()).exists(), "fenced");
        taken.release(&SelfFence::unchecked()).unwrap();
        let back = try_acquire(dir.path(), &part(dir.path()), 3, None, true, &[]).unwrap().unwrap();
        assert_eq!(back.unreleased_predecessor, None, "broker 2 handed it over");
        assert_eq!(back.record, LeaseRecord::new(3, 2));
    }

    #[test]
    fn two_takers_of_one_epoch_one_wins() {
        let dir = tempfile::tempdir().unwrap();
        let path = part(dir.path());
        // Broker 3 read the same current record and claimed epoch 1 first.
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        assert!(claim::claim(&path, LeaseRecord::new(3, 1)).unwrap());
        // Broker 2, acting on the record it read before (epoch 0), loses; broker 3 being live,
        // it then waits.
        assert!(!claim::claim(&path, LeaseRecord::new(2, 1)).unwrap());
        let _broker3 = register(dir.path(), &broker(3)).unwrap();
        assert!(try_acquire(dir.path(), &part(dir.path()), 2, Some(LeaseRecord::new(1, 0)), true, &[])
            .unwrap()
            .is_none());
    }

    #[test]
    fn the_deletion_of_a_topic_leaves_the_leases_of_the_topic_created_again_under_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let meta = |id| TopicMeta {
            name: "t".into(),
            id,
            partitions: 1,
            configs: Default::default(),
            placed_on: vec![1],
            added: vec![],
            placement: Default::default(),
            leases: LeaseNames::ById,
        };
        let (old, new) = (meta(Uuid::new_v4()), meta(Uuid::new_v4()));
        let old_path = partition_lease_path(dir.path(), &old, 0);
        let new_path = partition_lease_path(dir.path(), &new, 0);
        assert!(try_acquire(dir.path(), &old_path, 1, None, true, &[]).unwrap().is_some());
        // "t" is created again and its partition claimed before a peer finishes deleting the
        // old "t" (removing its lease files).
        assert!(try_acquire(dir.path(), &new_path, 2, None, false, &[]).unwrap().is_some());
        assert_eq!(read_lease(&new_path, None), Some(LeaseRecord::new(2, 0)));
        remove_partition_leases(dir.path(), "t", old.id, &[0]).unwrap();
        assert_eq!(read_lease(&old_path, None), None, "the old topic's claims are gone");
        assert_eq!(read_lease(&new_path, None), Some(LeaseRecord::new(2, 0)), "the new topic's claim stays");
        // Topics of older kaas are named by topic: removed by name too.
        let legacy = TopicMeta { leases: LeaseNames::ByName, ..old.clone() };
        let legacy_path = partition_lease_path(dir.path(), &legacy, 0);
        assert_eq!(legacy_path, by_name(dir.path(), "t", 0));
        assert!(try_acquire(dir.path(), &legacy_path, 1, None, true, &[]).unwrap().is_some());
        remove_partition_leases(dir.path(), "t", old.id, &[0]).unwrap();
        assert_eq!(read_lease(&legacy_path, None), None);
    }

    #[test]
    fn a_fenced_broker_marks_nothing_released() {
        let dir = tempfile::tempdir().unwrap();
        let own = try_acquire(dir.path(), &txn(dir.path(), 0), 2, None, true, &[]).unwrap().unwrap();
        let fenced = SelfFence::new(dir.path(), 2, 5);
        fence::fence_broker(dir.path(), 2, 5).unwrap();
        assert!(own.release(&fenced).is_err());
        assert_eq!(read_lease_at(&txn(dir.path(), 0)), Some(LeaseRecord::new(2, 0)));
    }

    #[test]
    fn peers_are_read_with_their_lock_and_heartbeat() {
        let dir = tempfile::tempdir().unwrap();
        let reg1 = register(dir.path(), &broker(1)).unwrap();
        let reg2 = register(dir.path(), &broker(2)).unwrap();
        let ids = |v: Vec<Broker>| v.into_iter().map(|b| b.node_id).collect::<Vec<_>>();
        // Registrations in one process are separate open files, so each sees the other's lock.
        assert_eq!(ids(live_brokers(dir.path(), &broker(1)).unwrap()), vec![1, 2]);
        let p = peers(dir.path(), 1).unwrap();
        assert_eq!(p.len(), 1);
        assert!(p[0].lock_held);
        assert_eq!(p[0].heartbeat.map(|h| (h.incarnation, h.counter)), Some((reg2.incarnation(), 1)));
        drop(reg2);
        assert_eq!(ids(live_brokers(dir.path(), &broker(1)).unwrap()), vec![1]);
        assert!(matches!(register(dir.path(), &broker(1)), Err(LeaseError::NodeTaken(_))));
        drop(reg1);
        assert!(register(dir.path(), &broker(1)).is_ok(), "the node id is free again");
    }

    #[test]
    fn a_holder_registered_again_since_its_heartbeat_expired_is_live() {
        let dir = tempfile::tempdir().unwrap();
        let old = register(dir.path(), &broker(1)).unwrap();
        let expired = [(1, old.incarnation())];
        assert!(!holder_live(dir.path(), 1, &expired));
        drop(old);
        assert!(!holder_live(dir.path(), 1, &[]), "its lock is released");
        let _new = register(dir.path(), &broker(1)).unwrap();
        assert!(holder_live(dir.path(), 1, &expired), "a new process of the node, not the one seen expire");
        assert!(holder_live(dir.path(), 1, &[]));
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
