//! The producer state of the `__consumer_offsets` partitions: what Kafka's producer-state
//! manager of each offsets log holds for the transactional producers that commit offsets there
//! (TxnOffsetCommit appends, transaction markers). kaas keeps offsets in the group coordinator's
//! database, not in a log, so the group coordinator keeps this table itself; the rules are the
//! partition's (eos-rules 18, 46-48), applied to the offsets partition.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::store::producer_state::{check_marker_against, MarkerFloor, ProducerStateError};

/// One producer on one offsets partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffsetsProducer {
    pub epoch: i16,
    /// -1 until a marker is written.
    pub coordinator_epoch: i32,
    /// A TxnOffsetCommit of the producer is waiting for its marker here.
    pub txn_open: bool,
    pub last_update_ms: i64,
}

/// (offsets partition, producer id).
pub type OffsetsProducerKey = (i32, i64);

/// The table of one group coordinator, every offsets partition it runs.
#[derive(Debug, Default)]
pub struct OffsetsProducers {
    entries: BTreeMap<OffsetsProducerKey, OffsetsProducer>,
}

impl OffsetsProducers {
    pub fn get(&self, key: OffsetsProducerKey) -> Option<&OffsetsProducer> {
        self.entries.get(&key)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// An entry read back after a restart.
    pub fn restore(&mut self, key: OffsetsProducerKey, entry: OffsetsProducer) {
        self.entries.insert(key, entry);
    }

    /// Before the transaction coordinator is asked about a TxnOffsetCommit (Kafka 4.4's
    /// UnifiedLog.maybeStartTransactionVerification on the offsets partition). eos-rules 18: an
    /// epoch below the producer's is INVALID_PRODUCER_EPOCH, whatever the coordinator would say.
    /// Ok(true): a transaction of this producer at this epoch is already open here, so the
    /// coordinator is not asked again.
    pub fn begin_txn_offset_commit(&self, key: OffsetsProducerKey, epoch: i16) -> Result<bool, ProducerStateError> {
        let Some(e) = self.entries.get(&key) else {
            return Ok(false);
        };
        if epoch < e.epoch {
            return Err(ProducerStateError::InvalidProducerEpoch { got: epoch, current: e.epoch });
        }
        Ok(e.txn_open && e.epoch == epoch)
    }

    /// The TxnOffsetCommit's append: the epoch is checked again (a marker may have come in
    /// since) and becomes the producer's; its transaction is open here until the marker.
    pub fn append_txn_offset_commit(
        &mut self,
        key: OffsetsProducerKey,
        epoch: i16,
        now_ms: i64,
    ) -> Result<(), ProducerStateError> {
        self.begin_txn_offset_commit(key, epoch)?;
        let e = self.entries.entry(key).or_insert(OffsetsProducer {
            epoch,
            coordinator_epoch: -1,
            txn_open: false,
            last_update_ms: now_ms,
        });
        e.epoch = epoch;
        e.txn_open = true;
        e.last_update_ms = now_ms;
        Ok(())
    }

    /// eos-rules 46-48 for a marker on the offsets partition, as on any partition.
    pub fn check_marker(
        &self,
        key: OffsetsProducerKey,
        marker_epoch: i16,
        coordinator_epoch: i32,
        txn_version: i8,
    ) -> Result<(), ProducerStateError> {
        let Some(e) = self.entries.get(&key) else {
            return Ok(());
        };
        let floor = MarkerFloor { epoch: e.epoch, coordinator_epoch: e.coordinator_epoch, txn_open: e.txn_open };
        check_marker_against(floor, marker_epoch, coordinator_epoch, txn_version)
    }

    /// A marker written (eos-rules 49): its epoch and coordinator epoch become the producer's
    /// here and its transaction is closed. A marker for a producer never seen here makes an
    /// entry too, as Kafka's append of the marker does.
    pub fn record_marker(&mut self, key: OffsetsProducerKey, marker_epoch: i16, coordinator_epoch: i32, now_ms: i64) {
        self.entries.insert(
            key,
            OffsetsProducer { epoch: marker_epoch, coordinator_epoch, txn_open: false, last_update_ms: now_ms },
        );
    }

    /// producer.id.expiration.ms: a producer without an open transaction that has not written
    /// here for that long is forgotten (Kafka's ProducerStateManager.removeExpiredProducers).
    /// Returns the keys removed.
    pub fn expire(&mut self, now_ms: i64, expiration_ms: i64) -> Vec<OffsetsProducerKey> {
        let expired: Vec<_> = self
            .entries
            .iter()
            .filter(|(_, e)| !e.txn_open && now_ms.saturating_sub(e.last_update_ms) >= expiration_ms)
            .map(|(k, _)| *k)
            .collect();
        for k in &expired {
            self.entries.remove(k);
        }
        expired
    }
}

/// The database key of an entry: partition and producer id, big-endian.
pub fn key_bytes(key: OffsetsProducerKey) -> [u8; 12] {
    let mut b = [0u8; 12];
    b[..4].copy_from_slice(&key.0.to_be_bytes());
    b[4..].copy_from_slice(&key.1.to_be_bytes());
    b
}

/// The inverse of [`key_bytes`]; None for anything else.
pub fn key_from_bytes(b: &[u8]) -> Option<OffsetsProducerKey> {
    let partition = i32::from_be_bytes(b.get(..4)?.try_into().ok()?);
    let producer_id = i64::from_be_bytes(b.get(4..12)?.try_into().ok()?);
    (b.len() == 12).then_some((partition, producer_id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error_code::ResponseError;
    use crate::store::producer_state::TV2;

    const K: OffsetsProducerKey = (7, 1000);

    #[test]
    fn rule_18_lower_epoch_refused_before_the_coordinator() {
        let mut t = OffsetsProducers::default();
        assert_eq!(t.begin_txn_offset_commit(K, 0), Ok(false), "unknown producer: the coordinator decides");
        t.record_marker(K, 1, 0, 10);
        let err = t.begin_txn_offset_commit(K, 0).unwrap_err();
        assert_eq!(err.error(), ResponseError::InvalidProducerEpoch);
        assert_eq!(t.begin_txn_offset_commit(K, 1), Ok(false), "same epoch, no open transaction: verify");
        assert_eq!(t.begin_txn_offset_commit(K, 2), Ok(false));
        assert_eq!(t.begin_txn_offset_commit((8, 1000), 0), Ok(false), "another offsets partition");
    }

    #[test]
    fn open_transaction_at_its_epoch_skips_the_coordinator() {
        let mut t = OffsetsProducers::default();
        t.append_txn_offset_commit(K, 3, 10).unwrap();
        assert_eq!(t.begin_txn_offset_commit(K, 3), Ok(true));
        assert_eq!(t.begin_txn_offset_commit(K, 4), Ok(false), "a higher epoch is verified");
        t.record_marker(K, 3, 0, 20);
        assert_eq!(t.begin_txn_offset_commit(K, 3), Ok(false), "the marker closed it");
    }

    #[test]
    fn append_rechecks_the_epoch_and_takes_a_higher_one() {
        let mut t = OffsetsProducers::default();
        t.append_txn_offset_commit(K, 2, 10).unwrap();
        assert!(t.append_txn_offset_commit(K, 1, 11).is_err());
        t.append_txn_offset_commit(K, 5, 12).unwrap();
        assert_eq!(t.get(K).map(|e| (e.epoch, e.txn_open, e.last_update_ms)), Some((5, true, 12)));
    }

    #[test]
    fn rule_46_legacy_marker_below_the_epoch_refused() {
        let mut t = OffsetsProducers::default();
        t.append_txn_offset_commit(K, 2, 10).unwrap();
        assert_eq!(t.check_marker(K, 1, 0, 0).unwrap_err().error(), ResponseError::InvalidProducerEpoch);
        assert_eq!(t.check_marker(K, 2, 0, 0), Ok(()));
        assert_eq!(t.check_marker((7, 1), 0, 0, 0), Ok(()), "an unknown producer's marker is written");
    }

    #[test]
    fn rule_47_tv2_marker_must_be_above_the_epoch_unless_a_retry() {
        let mut t = OffsetsProducers::default();
        t.append_txn_offset_commit(K, 2, 10).unwrap();
        assert!(t.check_marker(K, 2, 0, TV2).is_err(), "open transaction at the marker's epoch");
        assert_eq!(t.check_marker(K, 3, 0, TV2), Ok(()));
        t.record_marker(K, 3, 0, 11);
        assert_eq!(t.check_marker(K, 3, 0, TV2), Ok(()), "the retry of the marker just written");
        assert!(t.check_marker(K, 2, 0, TV2).is_err());
    }

    #[test]
    fn rule_48_older_coordinator_fenced() {
        let mut t = OffsetsProducers::default();
        t.record_marker(K, 1, 5, 10);
        let err = t.check_marker(K, 2, 4, 0).unwrap_err();
        assert_eq!(err.error(), ResponseError::TransactionCoordinatorFenced);
        assert_eq!(t.check_marker(K, 2, 5, 0), Ok(()));
    }

    #[test]
    fn expiry_keeps_open_transactions() {
        let mut t = OffsetsProducers::default();
        t.append_txn_offset_commit(K, 1, 0).unwrap();
        t.record_marker((7, 2), 1, 0, 0);
        t.record_marker((7, 3), 1, 0, 90);
        assert_eq!(t.expire(100, 50), vec![(7, 2)]);
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn keys_round_trip() {
        for k in [(0, 0), (49, i64::MAX), (-1, -1), (7, 1000)] {
            assert_eq!(key_from_bytes(&key_bytes(k)), Some(k));
        }
        assert_eq!(key_from_bytes(b"group-id"), None);
        assert_eq!(key_from_bytes(&[0u8; 13]), None);
    }
}
