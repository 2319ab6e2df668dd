//! DescribeTransactions / ListTransactions views.

use super::*;
use TxnState::*;

#[test]
fn state_names_are_kafkas() {
    let names: Vec<&str> = TxnState::ALL.iter().map(|s| s.name()).collect();
    let kafka = ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort"];
    assert_eq!(names[..6], kafka);
    assert_eq!(names[6..], ["PrepareEpochFence", "Dead"]);
    for s in TxnState::ALL {
        assert_eq!(TxnState::from_name(s.name()), Some(s));
    }
    assert_eq!(TxnState::from_name("ongoing"), None);
}

#[test]
fn list_transactions_filters() {
    let ongoing = entry(Ongoing, PID, 5); // started at 1000
    assert!(ListFilter::default().matches(&ongoing, NOW));
    let states = ListFilter { states: vec!["Ongoing".into(), "Bogus".into()], ..ListFilter::default() };
    assert!(states.matches(&ongoing, NOW));
    assert!(!states.matches(&entry(Empty, PID, 5), NOW));
    assert_eq!(states.unknown_states(), vec!["Bogus".to_string()]);
    let pids = ListFilter { producer_ids: vec![PID + 1], ..ListFilter::default() };
    assert!(!pids.matches(&ongoing, NOW));
    let long = ListFilter { min_duration_ms: Some(5_000), ..ListFilter::default() };
    assert!(long.matches(&ongoing, 6_000));
    assert!(!long.matches(&ongoing, 5_999));
    assert!(!long.matches(&entry(Empty, PID, 5), NOW), "never started");
}
