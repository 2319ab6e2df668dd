//! Cluster-unique producer ids without coordination: broker N hands out idempotent ids from its
//! own range `N << 40 ..`, and transaction-coordinator shard S (whichever broker owns it) from
//! `2^50 + (S << 40) ..`. Blocks are reserved on disk before use, so no id is reused after a
//! restart; each process of a broker and each epoch of a shard reserves in its own file.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::durable::write_atomic;

pub const BLOCK_SIZE: i64 = 1000;
const RANGE_BITS: u32 = 40;
const TXN_RANGES_START: i64 = 1 << 50;
/// Brokers 0..=1023 have ranges below the transaction shards' (node_id << 40 < 2^50).
pub const MAX_NODE_ID: i32 = (1 << (50 - RANGE_BITS)) - 1;
/// Shard ranges end far below i64::MAX (2^50 + 1024 * 2^40 = 2^51).
pub const MAX_TXN_SHARDS: usize = 1024;

#[derive(Debug, Serialize, Deserialize)]
struct Reserved {
    /// Every id below this (in this broker's range) may have been handed out.
    next_block_start: i64,
}

#[derive(Debug)]
pub struct ProducerIdAllocator {
    path: PathBuf,
    next: i64,
    block_end: i64,
    /// First id of the next range: this one never hands it out.
    range_end: i64,
}

impl ProducerIdAllocator {
    /// The idempotent-producer range of broker `node_id`, for its process `incarnation`.
    pub fn open(data_dir: &Path, node_id: i32, incarnation: u64) -> std::io::Result<Self> {
        let start = (node_id.clamp(0, MAX_NODE_ID) as i64) << RANGE_BITS;
        Self::open_range(data_dir, &format!("{node_id}"), &format!("i{incarnation:016x}"), start)
    }

    /// The range of transaction-coordinator shard `shard` (moves with the shard) at coordinator
    /// `epoch`.
    pub fn open_txn_shard(data_dir: &Path, shard: u32, epoch: i32) -> std::io::Result<Self> {
        let shard = shard.min(MAX_TXN_SHARDS as u32 - 1) as i64;
        Self::open_range(
            data_dir,
            &format!("txn-shard-{shard}"),
            &format!("e{epoch}"),
            TXN_RANGES_START + (shard << RANGE_BITS),
        )
    }

    /// Each writer of a range (a broker's process, a shard's epoch) reserves in a file of its
    /// own, `<name>.<tag>.json` (a stalled or cut-off predecessor's late write can then
    /// never move the reservation back); a reader starts above every file of the range
    /// (`<name>.json`: an older kaas).
    fn open_range(data_dir: &Path, name: &str, tag: &str, range_start: i64) -> std::io::Result<Self> {
        let dir = data_dir.join("__cluster").join("producer_ids");
        let path = dir.join(format!("{name}.{tag}.json"));
        let mut start = range_start;
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => Some(e),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        for entry in entries.into_iter().flatten() {
            let entry = entry?;
            let file = entry.file_name().to_string_lossy().into_owned();
            // `<name>.json` and `<name>.<tag>.json`; temporary files start with a dot.
            if !(file.starts_with(&format!("{name}.")) && file.ends_with(".json")) {
                continue;
            }
            let bytes = match std::fs::read(entry.path()) {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            let reserved = serde_json::from_slice::<Reserved>(&bytes)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
            start = start.max(reserved.next_block_start);
        }
        let range_end = range_start + (1 << RANGE_BITS);
        Ok(ProducerIdAllocator { path, next: start, block_end: start, range_end })
    }

    /// Makes sure the next id is already reserved on disk, so that `next_id` cannot fail.
    pub fn ensure_reserved(&mut self) -> std::io::Result<()> {
        if self.next >= self.block_end {
            let end = (self.next + BLOCK_SIZE).min(self.range_end);
            if self.next >= end {
                // 2^40 ids later: refuse rather than hand out another broker's or shard's ids.
                return Err(std::io::Error::other(format!("producer id range exhausted at {}", self.next)));
            }
            let bytes = serde_json::to_vec(&Reserved { next_block_start: end })
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
            write_atomic(&self.path, &bytes)?;
            self.block_end = end;
        }
        Ok(())
    }

    /// The next id; reserves (durably) a new block when the current one is used up.
    pub fn next_id(&mut self) -> std::io::Result<i64> {
        self.ensure_reserved()?;
        let id = self.next;
        self.next += 1;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_1_producer_ids_are_never_reused_after_restart() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = ProducerIdAllocator::open(dir.path(), 0, 1).unwrap();
        let first: Vec<i64> = (0..3).map(|_| a.next_id().unwrap()).collect();
        assert_eq!(first, vec![0, 1, 2]);
        drop(a);
        let mut b = ProducerIdAllocator::open(dir.path(), 0, 2).unwrap();
        assert_eq!(b.next_id().unwrap(), BLOCK_SIZE);
    }

    #[test]
    fn rule_1_a_predecessors_late_reservation_never_moves_the_range_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut stale = ProducerIdAllocator::open_txn_shard(dir.path(), 3, 1).unwrap();
        let first = stale.next_id().unwrap();
        // The shard moves to epoch 2 and reserves twice; then the stalled epoch-1 holder's
        // buffered reservation of its first block lands again, late.
        let mut taker = ProducerIdAllocator::open_txn_shard(dir.path(), 3, 2).unwrap();
        let taken = taker.next_id().unwrap();
        assert_eq!(taken, first + BLOCK_SIZE);
        taker.next = taker.block_end;
        taker.next_id().unwrap();
        let late = serde_json::to_vec(&Reserved { next_block_start: first + BLOCK_SIZE }).unwrap();
        write_atomic(&stale.path, &late).unwrap();
        let mut next = ProducerIdAllocator::open_txn_shard(dir.path(), 3, 3).unwrap();
        assert_eq!(next.next_id().unwrap(), first + 3 * BLOCK_SIZE, "above every epoch's reservation");
        // An older kaas kept one file per range: read too.
        write_atomic(
            &dir.path().join("__cluster/producer_ids/txn-shard-3.json"),
            &serde_json::to_vec(&Reserved { next_block_start: first + 9 * BLOCK_SIZE }).unwrap(),
        )
        .unwrap();
        assert_eq!(
            ProducerIdAllocator::open_txn_shard(dir.path(), 3, 4).unwrap().next_id().unwrap(),
            first + 9 * BLOCK_SIZE
        );
        assert_eq!(
            ProducerIdAllocator::open_txn_shard(dir.path(), 30, 4).unwrap().next_id().unwrap() >> 40,
            (1 << 10) + 30,
            "shard 30 is not shard 3"
        );
    }

    #[test]
    fn rule_1_each_broker_has_its_own_range() {
        let dir = tempfile::tempdir().unwrap();
        let mut n0 = ProducerIdAllocator::open(dir.path(), 0, 1).unwrap();
        let mut n1 = ProducerIdAllocator::open(dir.path(), 1, 1).unwrap();
        assert_ne!(n0.next_id().unwrap(), n1.next_id().unwrap());
        assert_eq!(ProducerIdAllocator::open(dir.path(), 1, 1).unwrap().next_id().unwrap(), (1 << 40) + BLOCK_SIZE);
        let t0 = ProducerIdAllocator::open_txn_shard(dir.path(), 0, 0).unwrap().next_id().unwrap();
        let t1 = ProducerIdAllocator::open_txn_shard(dir.path(), 1, 0).unwrap().next_id().unwrap();
        assert!(t0 >= 1 << 50 && t1 > t0 && t1 - t0 == 1 << 40);
    }

    #[test]
    fn rule_1_ranges_never_overlap_or_overflow() {
        let dir = tempfile::tempdir().unwrap();
        let last_broker = ProducerIdAllocator::open(dir.path(), MAX_NODE_ID, 1).unwrap();
        let first_shard = ProducerIdAllocator::open_txn_shard(dir.path(), 0, 0).unwrap();
        assert!(last_broker.range_end <= first_shard.next);
        let last_shard = ProducerIdAllocator::open_txn_shard(dir.path(), MAX_TXN_SHARDS as u32 - 1, 0).unwrap();
        assert!(last_shard.range_end > last_shard.next, "no overflow");
    }

    #[test]
    fn rule_1_an_exhausted_range_refuses_instead_of_overlapping() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = ProducerIdAllocator::open(dir.path(), 0, 1).unwrap();
        a.next = a.range_end - 2;
        assert_eq!(a.next_id().unwrap(), a.range_end - 2);
        assert_eq!(a.next_id().unwrap(), a.range_end - 1);
        assert!(a.next_id().is_err());
    }
}
