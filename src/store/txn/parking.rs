//! Calls that would be answered CONCURRENT_TRANSACTIONS while their transactional id is
//! completing (a state write under way, or markers being written) wait for the completion
//! instead, for a bounded time. A client told CONCURRENT_TRANSACTIONS retries after its own
//! backoff (the Java producer: `retry.backoff.ms`, 100 ms; Produce v12's implicit add: 20 ms
//! in the broker), and the retry is decided against the state of that moment; deciding the
//! parked call when the completion lands gives the very answer the retry would get, without
//! the backoff. A call still blocked at its deadline is answered CONCURRENT_TRANSACTIONS as
//! before, so a transaction stuck in its marker phase (a peer down) keeps Kafka's answer.
//! Bounded per id and in total: beyond that calls are answered at once.

use std::collections::HashMap;

use super::{TxnEntry, TxnError};

/// How long a call waits for its id's completion before CONCURRENT_TRANSACTIONS.
pub const PARK_MS: i64 = 200;
/// Calls parked per transactional id (one producer has at most a few in flight).
pub const MAX_PARKED_PER_ID: usize = 8;
/// Calls parked per coordinator shard.
pub const MAX_PARKED: usize = 1024;

/// Whether an answer is one a completing entry would not give once complete: the call may wait.
pub fn waits_for_completion(entry: Option<&TxnEntry>, answer: &Result<impl Sized, TxnError>) -> bool {
    matches!(answer, Err(TxnError::ConcurrentTransactions)) && entry.is_some_and(|e| e.pending || e.state.is_prepare())
}

/// The parked calls of one shard, by transactional id, each with the time it must be answered by.
#[derive(Debug)]
pub struct Parked<C> {
    calls: HashMap<String, Vec<(C, i64)>>,
    total: usize,
}

impl<C> Default for Parked<C> {
    fn default() -> Self {
        Parked { calls: HashMap::new(), total: 0 }
    }
}

impl<C> Parked<C> {
    /// Parks `call` until `deadline_ms` (the caller's monotonic clock); gives it back when the id or the shard is full.
    pub fn park(&mut self, id: &str, call: C, deadline_ms: i64) -> Result<(), C> {
        let queue = self.calls.entry(id.to_string()).or_default();
        if queue.len() >= MAX_PARKED_PER_ID || self.total >= MAX_PARKED {
            if queue.is_empty() {
                self.calls.remove(id);
            }
            return Err(call);
        }
        queue.push((call, deadline_ms));
        self.total += 1;
        Ok(())
    }

    /// Every call parked for `id`, in arrival order, with its deadline (to decide them again).
    pub fn take(&mut self, id: &str) -> Vec<(C, i64)> {
        let calls = self.calls.remove(id).unwrap_or_default();
        self.total -= calls.len();
        calls
    }

    /// The calls of `id` whose deadline has come, in arrival order; the others stay.
    pub fn take_due(&mut self, id: &str, now_ms: i64) -> Vec<(C, i64)> {
        let Some(queue) = self.calls.get_mut(id) else { return Vec::new() };
        let (due, keep): (Vec<_>, Vec<_>) = std::mem::take(queue).into_iter().partition(|(_, d)| *d <= now_ms);
        if keep.is_empty() {
            self.calls.remove(id);
        } else {
            *queue = keep;
        }
        self.total -= due.len();
        due
    }

    /// The earliest deadline among the calls parked for `id`.
    pub fn next_deadline(&self, id: &str) -> Option<i64> {
        self.calls.get(id).and_then(|q| q.iter().map(|(_, d)| *d).min())
    }

    /// Every parked call (a hand-over answers them all).
    pub fn drain(&mut self) -> Vec<C> {
        self.total = 0;
        self.calls.drain().flat_map(|(_, q)| q.into_iter().map(|(c, _)| c)).collect()
    }

    pub fn len(&self) -> usize {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::txn::{TxnEntry, TxnState, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TV_2};

    fn entry(state: TxnState, pending: bool) -> TxnEntry {
        TxnEntry {
            transactional_id: "t".into(),
            producer_id: 1,
            producer_epoch: 0,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            prev_producer_id: 1,
            next_producer_id: NO_PRODUCER_ID,
            state,
            partitions: Default::default(),
            timeout_ms: 60_000,
            txn_start_ms: -1,
            last_update_ms: 0,
            txn_version: TV_2,
            pending,
        }
    }

    #[test]
    fn concurrent_transactions_while_completing_waits_for_the_completion() {
        let busy: Result<(), TxnError> = Err(TxnError::ConcurrentTransactions);
        assert!(waits_for_completion(Some(&entry(TxnState::PrepareCommit, true)), &busy));
        assert!(waits_for_completion(Some(&entry(TxnState::PrepareAbort, false)), &busy));
        assert!(waits_for_completion(Some(&entry(TxnState::Ongoing, true)), &busy), "a state write under way");
        assert!(!waits_for_completion(Some(&entry(TxnState::Ongoing, false)), &busy), "nothing will change it");
        assert!(!waits_for_completion(None, &busy));
        let fenced: Result<(), TxnError> = Err(TxnError::ProducerFenced);
        assert!(
            !waits_for_completion(Some(&entry(TxnState::PrepareCommit, true)), &fenced),
            "only CONCURRENT_TRANSACTIONS"
        );
        assert!(!waits_for_completion(Some(&entry(TxnState::PrepareCommit, true)), &Ok::<(), TxnError>(())));
    }

    #[test]
    fn parked_calls_come_back_in_arrival_order() {
        let mut p = Parked::default();
        p.park("a", 1, 100).unwrap();
        p.park("b", 2, 100).unwrap();
        p.park("a", 3, 50).unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p.take("a"), vec![(1, 100), (3, 50)]);
        assert_eq!(p.len(), 1);
        assert!(p.take("a").is_empty());
        assert_eq!(p.drain(), vec![2]);
        assert!(p.is_empty());
    }

    #[test]
    fn only_due_calls_are_taken_at_their_deadline() {
        let mut p = Parked::default();
        p.park("a", 1, 100).unwrap();
        p.park("a", 2, 300).unwrap();
        assert!(p.take_due("a", 99).is_empty());
        assert_eq!(p.next_deadline("a"), Some(100));
        assert_eq!(p.take_due("a", 100), vec![(1, 100)]);
        assert_eq!(p.len(), 1);
        assert_eq!(p.next_deadline("a"), Some(300));
        assert_eq!(p.take_due("a", 300), vec![(2, 300)]);
        assert!(p.is_empty());
        assert!(p.take_due("nobody", 1_000).is_empty());
    }

    #[test]
    fn parking_is_bounded_per_id_and_per_shard() {
        let mut p = Parked::default();
        for i in 0..MAX_PARKED_PER_ID {
            p.park("a", i, 100).unwrap();
        }
        assert_eq!(p.park("a", 99, 100), Err(99), "the id is full: answered at once");
        let mut n = 0;
        while p.len() < MAX_PARKED {
            p.park(&format!("id-{n}"), n, 100).unwrap();
            n += 1;
        }
        assert_eq!(p.park("another", 7, 100), Err(7), "the shard is full");
        assert!(p.take("another").is_empty());
    }
}
