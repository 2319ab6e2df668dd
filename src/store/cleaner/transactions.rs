//! Which transactional batches and markers a cleaning pass may drop (Kafka's
//! CleanedTransactionMetadata), walking a log in offset order. eos-rules 63/64: the data of an
//! aborted transaction goes; a marker stays while a batch of its transaction stays (the pass
//! kept one before it, an emptied last batch of its producer too). Kafka keeps a marker while
//! the pass met a batch of its transaction, kept or not, so its markers go one pass later.

use std::collections::{HashMap, HashSet};

use crate::store::batch::BatchHeader;
use crate::store::control::Marker;
use crate::store::producer_state::CompletedTxn;

#[derive(Debug, Default)]
pub struct CleanedTransactions {
    /// Aborted transactions not yet reached, by first offset (from the aborted index).
    aborted: Vec<CompletedTxn>,
    next_aborted: usize,
    /// Producer id -> (the offset of its ongoing aborted transaction's marker, whether a batch
    /// of that transaction stays). A batch after the marker's offset is not part of it, also
    /// once a pass removed the marker (an aborted transaction is known by its offsets, as in
    /// the aborted index, not by meeting its marker).
    ongoing_aborted: HashMap<i64, (i64, bool)>,
    /// Producers whose ongoing (not aborted) transaction has a batch that stays.
    ongoing_committed: HashSet<i64>,
}

impl CleanedTransactions {
    /// `aborted`: the aborted transactions of the log (the partition's aborted index).
    pub fn new(mut aborted: Vec<CompletedTxn>) -> CleanedTransactions {
        aborted.retain(|t| t.aborted);
        aborted.sort_by_key(|t| t.first_offset);
        CleanedTransactions { aborted, ..CleanedTransactions::default() }
    }

    fn reach(&mut self, offset: i64) {
        while let Some(t) = self.aborted.get(self.next_aborted).filter(|t| t.first_offset <= offset) {
            self.ongoing_aborted.insert(t.producer_id, (t.last_offset, false));
            self.next_aborted += 1;
        }
    }

    /// A data batch: true when it belongs to an aborted transaction (all its records go).
    pub fn on_batch(&mut self, h: &BatchHeader) -> bool {
        self.reach(h.last_offset());
        h.is_transactional() && self.aborted_entry(h).is_some()
    }

    /// The ongoing aborted transaction `h` belongs to (one whose marker is gone ends here).
    fn aborted_entry(&mut self, h: &BatchHeader) -> Option<&mut (i64, bool)> {
        let ended = self.ongoing_aborted.get(&h.producer_id).is_some_and(|(marker, _)| h.base_offset > *marker);
        if ended {
            self.ongoing_aborted.remove(&h.producer_id);
        }
        self.ongoing_aborted.get_mut(&h.producer_id)
    }

    /// The pass keeps (some of) the data batch `h`: its transaction's marker stays.
    pub fn retained(&mut self, h: &BatchHeader) {
        if !h.is_transactional() {
            return;
        }
        match self.aborted_entry(h) {
            Some((_, kept)) => *kept = true,
            None => {
                self.ongoing_committed.insert(h.producer_id);
            }
        }
    }

    /// A control batch (`marker`: its marker, None when it holds none): true when the marker
    /// may go (no data of its transaction is left before it in the log).
    pub fn on_control(&mut self, h: &BatchHeader, marker: Option<Marker>) -> bool {
        self.reach(h.last_offset());
        match marker {
            Some(Marker { commit: false, .. }) => {
                !self.ongoing_aborted.remove(&h.producer_id).is_some_and(|(_, kept)| kept)
            }
            Some(Marker { commit: true, .. }) => !self.ongoing_committed.remove(&h.producer_id),
            // An empty control batch was already cleaned (Kafka discards it).
            None => true,
        }
    }
}
