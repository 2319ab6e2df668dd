//! What DescribeTransactions (key 65) and ListTransactions (key 66) show of an entry: Kafka's
//! state names and ListTransactions' filters. The handlers fetch the entries and encode.

use super::{TxnEntry, TxnState};

impl TxnState {
    /// Every state, in AK's `TransactionState` order.
    pub const ALL: [TxnState; 8] = [
        TxnState::Empty,
        TxnState::Ongoing,
        TxnState::PrepareCommit,
        TxnState::PrepareAbort,
        TxnState::CompleteCommit,
        TxnState::CompleteAbort,
        TxnState::PrepareEpochFence,
        TxnState::Dead,
    ];

    /// Kafka's name for the state (`TransactionState.stateName`).
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::PrepareEpochFence => "PrepareEpochFence",
            TxnState::Dead => "Dead",
        }
    }

    /// The state Kafka calls `name`, if any.
    pub fn from_name(name: &str) -> Option<TxnState> {
        TxnState::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// ListTransactions' filters; an empty list matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// StateFilters, as sent (names Kafka does not know match nothing).
    pub states: Vec<String>,
    pub producer_ids: Vec<i64>,
    /// v1 DurationFilter when >= 0: only transactions running for at least this many ms.
    pub min_duration_ms: Option<i64>,
}

impl ListFilter {
    /// The state filters that name no state: the response's UnknownStateFilters.
    pub fn unknown_states(&self) -> Vec<String> {
        self.states.iter().filter(|f| TxnState::from_name(f).is_none()).cloned().collect()
    }

    /// Whether `entry` is listed at `now_ms`.
    pub fn matches(&self, entry: &TxnEntry, now_ms: i64) -> bool {
        let name = entry.state.name();
        if !self.states.is_empty() && !self.states.iter().any(|f| f == name) {
            return false;
        }
        if !self.producer_ids.is_empty() && !self.producer_ids.contains(&entry.producer_id) {
            return false;
        }
        match self.min_duration_ms {
            // not started, or started less than the duration ago
            Some(min) => entry.txn_start_ms >= 0 && now_ms - entry.txn_start_ms >= min,
            None => true,
        }
    }
}
