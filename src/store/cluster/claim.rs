//! Ownership by epoch, claimed exclusively. A partition or a coordinator unit is
//! served under an epoch; a broker takes it by claiming the next epoch: it creates the claim
//! file `<lease>.e<E>` with link(2), which refuses a name that exists (atomic on NFS v3+,
//! JuiceFS, CephFS and local file systems), so at most one broker ever holds an epoch, however
//! stale its view of the cluster. Claims are never rewritten; a holder that hands the resource
//! over creates `<lease>.e<E>.released`. The lease file itself (`<lease>`, replaced by rename)
//! is only a hint of the newest epoch: readers probe the claims above it.
//!
//! Whether to claim is one rule (`next_step`, pure): a resource whose holder handed it over, or
//! whose holder is not live, is claimed at the next epoch, the holder fenced first when it did
//! not hand over (store::cluster::fence); a live holder is waited for.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Who holds a lease (or held it last), and at which epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseRecord {
    pub node_id: i32,
    pub epoch: i32,
    /// Its holder handed it over (flushed and stopped first): the next holder need not fence
    /// it. Without it, the holder died, stalled or was cut off from the disk. Read from the
    /// epoch's release mark (older kaas versions wrote it into the lease file).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub released: bool,
}

impl LeaseRecord {
    pub fn new(node_id: i32, epoch: i32) -> LeaseRecord {
        LeaseRecord { node_id, epoch, released: false }
    }
}

/// What a broker does about a resource placement gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Serve it under the epoch it already holds (its own, after a clean restart).
    Keep(LeaseRecord),
    /// Claim `epoch`; `fence`: the node that held it without handing it over, fenced first.
    Claim { epoch: i32, fence: Option<i32> },
    /// A live broker holds it: wait until it hands it over.
    Wait,
}

/// The claim rule. `current`: the newest claim (None: never claimed); `holder_live`: whether
/// the holder is live, asked after `current` was read (a broker that registered since the
/// last look at the cluster is live: it may have claimed in between); `keep_own`: this node's
/// previous process stopped cleanly, so what it held is this process's to go on with;
/// `first_epoch`: the epoch of a first claim.
pub fn next_step(
    current: Option<LeaseRecord>,
    me: i32,
    holder_live: impl FnOnce(i32) -> bool,
    keep_own: bool,
    first_epoch: i32,
) -> Step {
    let Some(c) = current else {
        return Step::Claim { epoch: first_epoch, fence: None };
    };
    let next = c.epoch.saturating_add(1);
    if c.node_id == me {
        // A released epoch may have been read as free by a taker already: never serve it again.
        // After an unclean stop the previous process may still write its files (it was fenced
        // at registration): a new epoch, sealing them.
        return if keep_own && !c.released { Step::Keep(c) } else { Step::Claim { epoch: next, fence: None } };
    }
    if c.released {
        return Step::Claim { epoch: next, fence: None };
    }
    if holder_live(c.node_id) {
        return Step::Wait;
    }
    Step::Claim { epoch: next, fence: Some(c.node_id) }
}

/// The claim file of `epoch` of the lease at `lease`.
pub fn claim_path(lease: &Path, epoch: i32) -> PathBuf {
    let name = lease.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    lease.with_file_name(format!("{name}.e{epoch}"))
}

/// The release mark of `epoch` of the lease at `lease`.
pub fn released_path(lease: &Path, epoch: i32) -> PathBuf {
    let name = lease.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    lease.with_file_name(format!("{name}.e{epoch}.released"))
}

/// Claims beyond the hint a reader follows before it stops: a lease moves one epoch per claim,
/// and a hint is at most a few claims behind (it is replaced right after each claim).
const MAX_PROBE: i32 = 1_000;

fn read_json(path: &Path) -> std::io::Result<Option<LeaseRecord>> {
    match std::fs::read(path) {
        Ok(b) => Ok(serde_json::from_slice(&b).ok()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The newest claim of the lease at `lease`: the hint there (else `first`, the holder a
/// resource has before any claim: a partition's first leader, placed at creation), followed up
/// through the claims above it; `first_epoch`: where claims start when there is neither.
/// An unreadable claim (a file system without hard links, its writer between create and write)
/// is an error: its holder is unknown, so nobody may take the resource.
pub fn current(lease: &Path, first: Option<LeaseRecord>, first_epoch: i32) -> std::io::Result<Option<LeaseRecord>> {
    let hint = read_json(lease)?.or(first);
    let mut newest = hint;
    let mut epoch = hint.map_or(first_epoch, |h| h.epoch.saturating_add(1));
    for _ in 0..MAX_PROBE {
        let path = claim_path(lease, epoch);
        match std::fs::read(&path) {
            Ok(b) => {
                let r: LeaseRecord = serde_json::from_slice(&b)
                    .map_err(|e| std::io::Error::other(format!("unreadable claim {}: {e}", path.display())))?;
                newest = Some(LeaseRecord { released: false, ..r });
                epoch = epoch.saturating_add(1);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(e) => return Err(e),
        }
    }
    let Some(n) = newest else { return Ok(None) };
    let marked = std::fs::symlink_metadata(released_path(lease, n.epoch)).is_ok();
    // A hint of an older kaas version carries the mark itself.
    let legacy = hint.is_some_and(|h| h == LeaseRecord { released: true, ..n });
    Ok(Some(LeaseRecord { released: marked || legacy, ..n }))
}

/// Claims `record.epoch` of the lease at `lease` for `record.node_id`: false when another broker
/// claimed it first. The claim is durable when this returns, and the hint names it.
pub fn claim(lease: &Path, record: LeaseRecord) -> std::io::Result<bool> {
    let record = LeaseRecord { released: false, ..record };
    let bytes = serde_json::to_vec(&record).map_err(std::io::Error::other)?;
    if !exclusive_create(&claim_path(lease, record.epoch), &bytes)? {
        return Ok(false);
    }
    // The hint, not synced: a reader that finds an older one (or none) follows the claims up.
    crate::store::durable::write_replace(lease, &bytes)?;
    Ok(true)
}

/// Creates `path` with `bytes` unless it exists, exclusively between brokers, durably.
fn exclusive_create(path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    use std::io::Write;
    if crate::store::durable::create_linked(path, bytes)? {
        return Ok(true);
    }
    if path.exists() {
        return Ok(false);
    }
    // No hard links on this file system: O_EXCL, also exclusive (a reader may see the file
    // before its content: `current` then refuses to guess).
    let mut f = match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(e),
    };
    f.write_all(bytes)?;
    f.sync_all()?;
    crate::store::durable::sync_dir(path.parent().unwrap_or(Path::new(".")))?;
    Ok(true)
}

/// Records that `record`'s holder handed it over (it flushed and stopped what it served).
pub fn mark_released(lease: &Path, record: LeaseRecord) -> std::io::Result<()> {
    let path = released_path(lease, record.epoch);
    // A first leader placed at creation claimed nothing: its directory may not exist yet.
    crate::store::durable::create_dir_all_durable(path.parent().unwrap_or(Path::new(".")))?;
    std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path)?;
    crate::store::durable::sync_dir(path.parent().unwrap_or(Path::new(".")))
}

/// Removes every claim and release mark of the lease at `lease` (its partition was deleted).
/// Claims are contiguous from the first one (epoch 0 or 1: a partition's epoch 0 may be its
/// creation's, with no claim file) up to the newest, so they are found without listing a
/// directory that holds every partition's, and the walk ends at the first epoch above 0 with
/// neither a claim nor a mark: bounded by the files there, never by a number read from disk.
pub fn remove_all(lease: &Path) -> std::io::Result<()> {
    let gone = |p: PathBuf| match std::fs::remove_file(p) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    };
    let mut epoch = 0i32;
    loop {
        let claimed = gone(claim_path(lease, epoch))?;
        let marked = gone(released_path(lease, epoch))?;
        if !claimed && !marked && epoch > 0 || epoch == i32::MAX {
            break;
        }
        epoch += 1;
    }
    gone(lease.to_path_buf()).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(node_id: i32, epoch: i32, released: bool) -> LeaseRecord {
        LeaseRecord { node_id, epoch, released }
    }

    #[test]
    fn a_resource_never_claimed_is_claimed_at_the_first_epoch() {
        assert_eq!(next_step(None, 1, |n| [1].contains(&n), true, 3), Step::Claim { epoch: 3, fence: None });
    }

    #[test]
    fn a_clean_restart_keeps_its_own_epoch() {
        assert_eq!(next_step(Some(rec(1, 4, false)), 1, |n| [1].contains(&n), true, 0), Step::Keep(rec(1, 4, false)));
    }

    #[test]
    fn an_own_epoch_after_an_unclean_stop_is_followed_by_a_new_one_without_fencing_itself() {
        assert_eq!(
            next_step(Some(rec(1, 4, false)), 1, |n| [1].contains(&n), false, 0),
            Step::Claim { epoch: 5, fence: None }
        );
    }

    #[test]
    fn an_own_epoch_once_released_is_never_served_again() {
        assert_eq!(
            next_step(Some(rec(1, 4, true)), 1, |n| [1, 2].contains(&n), true, 0),
            Step::Claim { epoch: 5, fence: None }
        );
    }

    #[test]
    fn a_released_lease_is_claimed_without_a_fence() {
        assert_eq!(
            next_step(Some(rec(2, 4, true)), 1, |n| [1, 2].contains(&n), true, 0),
            Step::Claim { epoch: 5, fence: None }
        );
    }

    #[test]
    fn a_live_holder_is_waited_for() {
        assert_eq!(next_step(Some(rec(2, 4, false)), 1, |n| [1, 2].contains(&n), true, 0), Step::Wait);
    }

    #[test]
    fn a_holder_not_live_that_did_not_hand_over_is_fenced_before_the_claim() {
        assert_eq!(
            next_step(Some(rec(2, 4, false)), 1, |n| [1, 3].contains(&n), true, 0),
            Step::Claim { epoch: 5, fence: Some(2) }
        );
    }

    #[test]
    fn an_epoch_is_claimed_by_one_broker_only() {
        let dir = tempfile::tempdir().unwrap();
        let lease = dir.path().join("t-0.lease");
        assert!(claim(&lease, rec(1, 1, false)).unwrap());
        assert!(!claim(&lease, rec(2, 1, false)).unwrap(), "a second claim of epoch 1 must lose");
        assert_eq!(current(&lease, None, 0).unwrap(), Some(rec(1, 1, false)));
    }

    #[test]
    fn readers_follow_the_claims_above_a_stale_hint() {
        let dir = tempfile::tempdir().unwrap();
        let lease = dir.path().join("t-0.lease");
        assert!(claim(&lease, rec(1, 1, false)).unwrap());
        let stale_hint = std::fs::read(&lease).unwrap();
        assert!(claim(&lease, rec(2, 2, false)).unwrap());
        assert!(claim(&lease, rec(3, 3, false)).unwrap());
        std::fs::write(&lease, stale_hint).unwrap();
        assert_eq!(current(&lease, None, 0).unwrap(), Some(rec(3, 3, false)));
        // no hint at all: from the first leader placed at creation
        std::fs::remove_file(&lease).unwrap();
        assert_eq!(current(&lease, Some(rec(9, 0, false)), 0).unwrap(), Some(rec(3, 3, false)));
    }

    #[test]
    fn a_release_mark_belongs_to_its_epoch_only() {
        let dir = tempfile::tempdir().unwrap();
        let lease = dir.path().join("t-0.lease");
        assert!(claim(&lease, rec(1, 1, false)).unwrap());
        mark_released(&lease, rec(1, 1, false)).unwrap();
        assert_eq!(current(&lease, None, 0).unwrap(), Some(rec(1, 1, true)));
        assert!(claim(&lease, rec(2, 2, false)).unwrap());
        // a late mark of the old epoch changes nothing about the new one
        mark_released(&lease, rec(1, 1, false)).unwrap();
        assert_eq!(current(&lease, None, 0).unwrap(), Some(rec(2, 2, false)));
    }

    #[test]
    fn a_first_leader_without_files_is_current_until_claimed() {
        let dir = tempfile::tempdir().unwrap();
        let lease = dir.path().join("t-0.lease");
        assert_eq!(current(&lease, Some(rec(2, 0, false)), 0).unwrap(), Some(rec(2, 0, false)));
        assert_eq!(current(&lease, None, 0).unwrap(), None);
        remove_all(&lease).unwrap();
    }

    #[test]
    fn removing_a_lease_removes_its_claims_and_marks() {
        let dir = tempfile::tempdir().unwrap();
        let lease = dir.path().join("t-1.lease");
        let other = dir.path().join("t-10.lease");
        assert!(claim(&lease, rec(1, 1, false)).unwrap());
        mark_released(&lease, rec(1, 1, false)).unwrap();
        assert!(claim(&lease, rec(2, 2, false)).unwrap());
        assert!(claim(&lease, rec(3, 3, false)).unwrap());
        std::fs::remove_file(&lease).unwrap(); // a hint lost to a power loss
        assert!(claim(&other, rec(1, 1, false)).unwrap());
        remove_all(&lease).unwrap();
        assert_eq!(current(&lease, Some(rec(9, 0, false)), 0).unwrap(), Some(rec(9, 0, false)));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "only t-10's claim and hint are left");
        assert_eq!(current(&other, None, 0).unwrap(), Some(rec(1, 1, false)), "t-10 is not t-1's");
    }
}
