//! The cleaner's key map (Kafka's SkimpyOffsetMap): for each key of the dirty part of a log,
//! the offset of its latest record. Keys are kept as 128 bits of their SHA-256, so an entry
//! costs a fixed amount whatever the key's size, and the map holds at most as many entries as
//! `log.cleaner.dedupe.buffer.size` allows (24 bytes each, 90% load, as Kafka counts); a log with
//! more keys is cleaned in several passes.

use std::collections::HashMap;

/// Bytes Kafka counts per entry: a 16-byte hash and an 8-byte offset.
const ENTRY_BYTES: usize = 24;
/// Kafka's log.cleaner.io.buffer.load.factor.
const LOAD_FACTOR: f64 = 0.9;

#[derive(Debug)]
pub struct OffsetMap {
    map: HashMap<u128, i64>,
    capacity: usize,
    /// The last offset put (-1: none).
    latest: i64,
}

/// 128 bits of the key's SHA-256: two keys collide with negligible odds, also on purpose.
pub fn key_hash(key: &[u8]) -> u128 {
    let d = ring::digest::digest(&ring::digest::SHA256, key);
    let mut h = [0u8; 16];
    h.copy_from_slice(&d.as_ref()[..16]);
    u128::from_be_bytes(h)
}

impl OffsetMap {
    /// A map for a dedupe buffer of `buffer_bytes` (at least one entry).
    pub fn new(buffer_bytes: usize) -> OffsetMap {
        let capacity = ((buffer_bytes / ENTRY_BYTES) as f64 * LOAD_FACTOR) as usize;
        OffsetMap { map: HashMap::new(), capacity: capacity.max(1), latest: -1 }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Whether `more` new keys still fit.
    pub fn has_room_for(&self, more: usize) -> bool {
        self.map.len().saturating_add(more) <= self.capacity
    }

    /// Records that `key`'s latest record is at `offset` (offsets are put in increasing order).
    /// False, and nothing changes, when the key is new and the map is full.
    pub fn put(&mut self, key: &[u8], offset: i64) -> bool {
        let h = key_hash(key);
        if !self.map.contains_key(&h) && self.map.len() >= self.capacity {
            return false;
        }
        self.map.insert(h, offset);
        self.latest = self.latest.max(offset);
        true
    }

    /// The offset of `key`'s latest record in the mapped part (-1: not mapped).
    pub fn get(&self, key: &[u8]) -> i64 {
        self.map.get(&key_hash(key)).copied().unwrap_or(-1)
    }

    /// The last offset put: records after it were not mapped and are kept (-1: none).
    pub fn latest_offset(&self) -> i64 {
        self.latest
    }

    /// Marks everything up to `offset` as mapped (a stretch with no key).
    pub fn advance_to(&mut self, offset: i64) {
        self.latest = self.latest.max(offset);
    }

    /// Share of the capacity used, 0..=1 (Kafka's max-buffer-utilization-percent / 100).
    pub fn utilization(&self) -> f64 {
        self.map.len() as f64 / self.capacity as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_offset_of_each_key_wins_and_a_full_map_refuses_new_keys() {
        let mut m = OffsetMap::new(ENTRY_BYTES * 3);
        assert_eq!(m.capacity(), 2);
        assert!(m.put(b"a", 1) && m.put(b"b", 2) && m.put(b"a", 3));
        assert!(!m.put(b"c", 4), "full");
        assert!(m.put(b"b", 5), "a known key still updates");
        assert_eq!((m.get(b"a"), m.get(b"b"), m.get(b"c"), m.latest_offset()), (3, 5, -1, 5));
    }
}
