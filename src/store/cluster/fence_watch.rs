//! The fence watcher's core (the shared-disk cluster): given the peers' fence files read
//! in one poll (store::cluster::fence_log::read_peers), which (producer id, epoch) fences this broker's
//! partitions must apply now. Pure: actors::fence_watcher reads the files and sends the fences.
//!
//! A fence is applied once; a later higher epoch for the same producer is applied once more; a
//! lower or equal epoch never is; when several peers name a producer the highest epoch wins.
//! Memory stays bounded by the peers' files: a producer no peer names any more is forgotten
//! (the writers prune fences older than producer_id_expiration_ms).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::fence_log::{FenceFile, UnreadablePeer};

#[derive(Debug, Default)]
pub struct FenceWatch {
    /// Each peer's fences as last read. A file that does not read this poll keeps its last
    /// contents: a torn read must neither forget its producers nor make them fire again later.
    peers: BTreeMap<i32, BTreeMap<i64, i16>>,
    /// producer id -> highest epoch applied here, for producers some peer still names.
    applied: HashMap<i64, i16>,
}

impl FenceWatch {
    pub fn new() -> FenceWatch {
        FenceWatch::default()
    }

    /// One poll: `files` are the peer files that read, `unreadable` the nodes whose file did not
    /// (their last contents stand). A peer with no file at all is gone. Returns the fences to
    /// apply now, ordered by producer id.
    pub fn tick(&mut self, files: Vec<(i32, FenceFile)>, unreadable: impl IntoIterator<Item = i32>) -> Vec<(i64, i16)> {
        let mut peers: BTreeMap<i32, BTreeMap<i64, i16>> = BTreeMap::new();
        for (node, file) in files {
            // Two names for one node (from-7.json, from-07.json): both count.
            let fences = peers.entry(node).or_default();
            for (pid, epoch) in file.fences {
                raise(fences, pid, epoch);
            }
        }
        for node in unreadable {
            if let Some(last) = self.peers.remove(&node) {
                peers.entry(node).or_insert(last);
            }
        }
        self.peers = peers;

        let mut wanted: BTreeMap<i64, i16> = BTreeMap::new();
        for (&pid, &epoch) in self.peers.values().flatten() {
            // Producer ids and epochs are never negative; such an entry is not a fence.
            if pid >= 0 && epoch >= 0 {
                raise(&mut wanted, pid, epoch);
            }
        }
        let apply: Vec<(i64, i16)> = wanted
            .iter()
            .filter(|(pid, epoch)| self.applied.get(pid).is_none_or(|done| done < epoch))
            .map(|(pid, epoch)| (*pid, *epoch))
            .collect();
        self.applied.retain(|pid, _| wanted.contains_key(pid));
        self.applied.extend(apply.iter().copied());
        apply
    }

    /// Producers remembered as applied (bounded by what the peers' files name).
    pub fn remembered(&self) -> usize {
        self.applied.len()
    }
}

fn raise<K: Ord>(map: &mut BTreeMap<K, i16>, key: K, epoch: i16) {
    let e = map.entry(key).or_insert(epoch);
    *e = (*e).max(epoch);
}

/// Rate limit for warnings about unreadable files: once per file until its bytes (or the error)
/// change; a file that reads again, or is gone, is forgotten.
#[derive(Debug, Default)]
pub struct WarnOnce {
    warned: HashMap<PathBuf, u64>,
}

impl WarnOnce {
    pub fn new() -> WarnOnce {
        WarnOnce::default()
    }

    /// The unreadable files of this poll worth a warning now.
    pub fn report<'a>(&mut self, unreadable: &'a [UnreadablePeer]) -> Vec<&'a UnreadablePeer> {
        let fresh = unreadable.iter().filter(|u| self.warned.get(&u.path) != Some(&u.fingerprint)).collect();
        self.warned = unreadable.iter().map(|u| (u.path.clone(), u.fingerprint)).collect();
        fresh
    }

    /// The same for one path outside a poll's list (the directory itself); `report` forgets it
    /// again once a poll reads the directory.
    pub fn report_one(&mut self, path: &Path, fingerprint: u64) -> bool {
        self.warned.insert(path.to_path_buf(), fingerprint) != Some(fingerprint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::cluster::fence_log::{fences_dir, fingerprint, read_peers, FenceLog};

    const DAY: i64 = 86_400_000;

    fn file(fences: &[(i64, i16)]) -> FenceFile {
        FenceFile { fences: fences.iter().copied().collect(), fenced_at: BTreeMap::new() }
    }

    fn tick(w: &mut FenceWatch, peers: &[(i32, &[(i64, i16)])]) -> Vec<(i64, i16)> {
        w.tick(peers.iter().map(|(n, f)| (*n, file(f))).collect(), [])
    }

    #[test]
    fn applies_peer_fences() {
        let mut w = FenceWatch::new();
        assert_eq!(tick(&mut w, &[(1, &[(7, 3), (9, 1)]), (2, &[(11, 0)])]), vec![(7, 3), (9, 1), (11, 0)]);
        assert_eq!(tick(&mut w, &[]), vec![]);
    }

    #[test]
    fn skips_self_file() {
        // End to end: files on disk, read as the watcher reads them, our own file not among them.
        let dir = tempfile::tempdir().unwrap();
        FenceLog::open(dir.path(), 0).unwrap().append(5, 9, 0, DAY).unwrap();
        FenceLog::open(dir.path(), 3).unwrap().append(6, 2, 0, DAY).unwrap();
        let peers = read_peers(dir.path(), 0).unwrap();
        assert!(peers.unreadable.is_empty());
        let mut w = FenceWatch::new();
        assert_eq!(w.tick(peers.files, []), vec![(6, 2)]);
        // Broker 3 sees broker 0's fence and not its own.
        let mut w3 = FenceWatch::new();
        assert_eq!(w3.tick(read_peers(dir.path(), 3).unwrap().files, []), vec![(5, 9)]);
    }

    #[test]
    fn dedupe_across_ticks() {
        let mut w = FenceWatch::new();
        assert_eq!(tick(&mut w, &[(1, &[(7, 3)])]), vec![(7, 3)]);
        assert_eq!(tick(&mut w, &[(1, &[(7, 3)])]), vec![]);
        // A second peer naming the same fence does not fire it again either.
        assert_eq!(tick(&mut w, &[(1, &[(7, 3)]), (2, &[(7, 3)])]), vec![]);
    }

    #[test]
    fn higher_epoch_after_first_apply_fires_once_more() {
        let mut w = FenceWatch::new();
        assert_eq!(tick(&mut w, &[(1, &[(7, 3)])]), vec![(7, 3)]);
        assert_eq!(tick(&mut w, &[(1, &[(7, 5)])]), vec![(7, 5)]);
        assert_eq!(tick(&mut w, &[(1, &[(7, 5)])]), vec![]);
    }

    #[test]
    fn lower_or_equal_epoch_never_fires() {
        let mut w = FenceWatch::new();
        assert_eq!(tick(&mut w, &[(1, &[(7, 5)])]), vec![(7, 5)]);
        // Another peer with an older fence for the same producer, then the first one pruned it.
        assert_eq!(tick(&mut w, &[(1, &[(7, 5)]), (2, &[(7, 4)])]), vec![]);
        assert_eq!(tick(&mut w, &[(1, &[]), (2, &[(7, 4)])]), vec![]);
        assert_eq!(tick(&mut w, &[(2, &[(7, 5)])]), vec![]);
    }

    #[test]
    fn highest_epoch_wins_across_peers() {
        let mut w = FenceWatch::new();
        assert_eq!(tick(&mut w, &[(1, &[(7, 2)]), (2, &[(7, 6)]), (3, &[(7, 4)])]), vec![(7, 6)]);
    }

    #[test]
    fn producers_no_peer_names_are_forgotten() {
        let mut w = FenceWatch::new();
        tick(&mut w, &[(1, &[(7, 3), (8, 1)]), (2, &[(9, 1)])]);
        assert_eq!(w.remembered(), 3);
        // Peer 1 pruned producer 7; peer 2's file is gone.
        tick(&mut w, &[(1, &[(8, 1)])]);
        assert_eq!(w.remembered(), 1);
        // A fence for a forgotten producer is new again (its state expired everywhere by then).
        assert_eq!(tick(&mut w, &[(1, &[(7, 3), (8, 1)])]), vec![(7, 3)]);
    }

    #[test]
    fn an_unreadable_file_keeps_its_last_fences() {
        let mut w = FenceWatch::new();
        assert_eq!(tick(&mut w, &[(1, &[(7, 3)])]), vec![(7, 3)]);
        // Peer 1's file is half-written this poll: producer 7 is neither forgotten...
        assert_eq!(w.tick(vec![], [1]), vec![]);
        assert_eq!(w.remembered(), 1);
        // ...nor applied again when the file reads once more.
        assert_eq!(tick(&mut w, &[(1, &[(7, 3)])]), vec![]);
        // A node never read before that does not read has nothing to offer.
        assert_eq!(w.tick(vec![], [4]), vec![]);
    }

    #[test]
    fn negative_ids_and_epochs_are_not_fences() {
        let mut w = FenceWatch::new();
        assert_eq!(tick(&mut w, &[(1, &[(-1, 3), (7, -1), (8, 0)])]), vec![(8, 0)]);
    }

    #[test]
    fn a_bad_file_is_reported_once_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let fences = fences_dir(dir.path());
        std::fs::create_dir_all(&fences).unwrap();
        let bad = fences.join("from-8.json");
        let mut warn = WarnOnce::new();
        let mut poll = || {
            let peers = read_peers(dir.path(), 0).unwrap();
            warn.report(&peers.unreadable).iter().map(|u| u.node).collect::<Vec<_>>()
        };
        std::fs::write(&bad, b"{\"fences\":").unwrap();
        assert_eq!(poll(), vec![8]);
        assert_eq!(poll(), Vec::<i32>::new());
        std::fs::write(&bad, b"garbage").unwrap();
        assert_eq!(poll(), vec![8]);
        std::fs::write(&bad, br#"{"fences":{"1":1}}"#).unwrap();
        assert_eq!(poll(), Vec::<i32>::new());
        // Broken again with the bytes already reported once: it was fine in between, so again.
        std::fs::write(&bad, b"garbage").unwrap();
        assert_eq!(poll(), vec![8]);
    }

    #[test]
    fn the_directory_error_is_reported_once() {
        let mut warn = WarnOnce::new();
        let dir = Path::new("/x");
        assert!(warn.report_one(dir, fingerprint(b"EIO")));
        assert!(!warn.report_one(dir, fingerprint(b"EIO")));
        assert!(warn.report_one(dir, fingerprint(b"ESTALE")));
        let none: Vec<UnreadablePeer> = vec![];
        assert!(warn.report(&none).is_empty());
        assert!(warn.report_one(dir, fingerprint(b"ESTALE")), "forgotten once the directory read");
    }
}
