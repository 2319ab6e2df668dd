//! The accepted differences (tests/conformance/accepted.toml): divergence classes that are
//! explained, each with its reason and the rule it follows. A divergence whose signature no
//! entry matches fails the run.

use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub struct Accepted {
    pub id: String,
    /// A regular expression over the divergence signature (`answer::signature`).
    pub signature: String,
    /// Optionally also a regular expression over both answers of the diverging step,
    /// "<Apache Kafka answer> | <kaas answer>" (the `sent=` field shows the resolved request).
    #[serde(default)]
    pub answers: Option<String>,
    /// Transaction versions it applies to (all when empty).
    #[serde(default)]
    pub tv: Vec<i16>,
    pub reason: String,
    /// Whether both brokers are in the same state after the difference (a read, or an answer
    /// field only): the sequence then goes on; else it stops there (what follows would differ
    /// as a consequence).
    #[serde(default)]
    pub same_state: bool,
    /// A link to the rule (docs/eos-rules.md#...) or the Kafka issue.
    pub rule: String,
    /// Only a Produce of a zombie: the batch's producer epoch is below the latest epoch
    /// InitProducerId moved its producer id to in the sequence (`Facts::zombie`).
    #[serde(default)]
    pub zombie: bool,
    /// Only a Produce whose batch is its producer id's first on the partition at kaas, at a
    /// sequence other than 0 (`Facts::first_write`).
    #[serde(default)]
    pub first_write: bool,
}

/// What the client models of both brokers know about the diverging step, beyond its answers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Facts {
    /// The step sent a batch whose epoch is below the latest one InitProducerId moved its
    /// producer id to (on both brokers: `exec::Grants::fenced`).
    pub zombie: bool,
    /// The step sent a batch at a sequence other than 0 for a producer id that no batch or
    /// WriteTxnMarkers step kaas accepted in the sequence had put on that partition
    /// (`exec::Exec::first_write`).
    pub first_write: bool,
}

#[derive(Debug, Deserialize)]
struct File {
    #[serde(default)]
    difference: Vec<Accepted>,
}

pub struct AcceptedList {
    entries: Vec<(Accepted, regex::Regex, Option<regex::Regex>)>,
}

impl AcceptedList {
    pub fn load() -> AcceptedList {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/accepted.toml");
        let text = std::fs::read_to_string(&path).expect("read tests/conformance/accepted.toml");
        AcceptedList::parse(&text)
    }

    fn parse(text: &str) -> AcceptedList {
        let file: File = toml::from_str(text).expect("parse tests/conformance/accepted.toml");
        let entries = file
            .difference
            .into_iter()
            .map(|a| {
                assert!(
                    !a.reason.trim().is_empty() && !a.rule.trim().is_empty(),
                    "{}: reason and rule are required",
                    a.id
                );
                let re =
                    regex::Regex::new(&a.signature).unwrap_or_else(|e| panic!("{}: bad signature regex: {e}", a.id));
                let answers = a
                    .answers
                    .as_ref()
                    .map(|r| regex::Regex::new(r).unwrap_or_else(|e| panic!("{}: bad answers regex: {e}", a.id)));
                (a, re, answers)
            })
            .collect();
        AcceptedList { entries }
    }

    /// The entry explaining this divergence, if any.
    pub fn explain(&self, tv: i16, signature: &str, answers: &str, facts: Facts) -> Option<&Accepted> {
        self.entries
            .iter()
            .find(|(a, re, ans)| {
                (a.tv.is_empty() || a.tv.contains(&tv))
                    && re.is_match(signature)
                    && ans.as_ref().is_none_or(|r| r.is_match(answers))
                    && (!a.zombie || facts.zombie)
                    && (!a.first_write || facts.first_write)
            })
            .map(|(a, _, _)| a)
    }
}

#[cfg(test)]
mod tests {
    use super::{AcceptedList, Facts};
    use crate::exec::Grants;

    const PID: i64 = 4242;
    const FENCED: &str = "Produce: err: 0 vs 47";

    /// The accepted entry for a Produce that Apache Kafka appends and kaas refuses with 47, the
    /// batch sent at `epoch` by a producer InitProducerId gave epoch 0, then (re-init) epoch 1.
    fn explained(epoch: i16) -> Option<String> {
        let mut grants = Grants::default();
        grants.grant(PID, 0);
        grants.grant(PID, 1);
        let facts = Facts { zombie: grants.fenced(PID, epoch), first_write: false };
        let answers = format!(
            "err=0 base=3 log_start=0 append_time=-1 sent=P1/e{epoch}/s0 | \
             err=47 base=-1 log_start=0 append_time=-1 sent=P1/e{epoch}/s0"
        );
        let list = AcceptedList::load();
        [1, 2].iter().map(|&tv| list.explain(tv, FENCED, &answers, facts).map(|a| a.id.clone())).reduce(|a, b| {
            assert_eq!(a, b, "the same on both transaction versions");
            a
        })?
    }

    #[test]
    fn a_zombie_batch_refused_with_47_is_accepted() {
        assert_eq!(explained(0).as_deref(), Some("fenced-producer-batch-refused-everywhere"));
    }

    #[test]
    fn a_47_at_the_producers_current_epoch_is_not_accepted() {
        assert_eq!(explained(1), None);
        assert_eq!(explained(2), None, "an epoch above the granted one is no zombie either");
    }

    #[test]
    fn an_epoch_only_counts_as_fenced_for_its_own_producer_id() {
        let mut grants = Grants::default();
        grants.grant(PID, 3);
        assert!(grants.fenced(PID, 2));
        assert!(!grants.fenced(PID, 3));
        assert!(!grants.fenced(PID + 1, 0), "no epoch handed out for that id");
        // A new producer id after exhaustion starts at 0 again: the old id's epoch is not its.
        grants.grant(PID + 1, 0);
        assert!(!grants.fenced(PID + 1, 0));
        // A fence seen late (DescribeTransactions after a 51) never moves an epoch back.
        grants.grant(PID, 5);
        grants.grant(PID, 4);
        assert!(grants.fenced(PID, 4));
    }

    #[test]
    fn a_zombie_entry_needs_the_fact() {
        let list = AcceptedList::parse(
            "[[difference]]\nid = \"z\"\nsignature = '^Produce: err: 0 vs 47$'\nzombie = true\n\
             reason = \"r\"\nrule = \"r\"\n",
        );
        assert!(list.explain(1, FENCED, "", Facts { zombie: true, first_write: false }).is_some());
        assert!(list.explain(1, FENCED, "", Facts { zombie: false, first_write: false }).is_none());
    }
}
