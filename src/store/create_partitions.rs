//! CreatePartitions (KIP-195): the rules a request to add partitions to a topic must pass, as
//! Apache Kafka's controller checks them (ControllerApis.createPartitions,
//! ReplicationControlManager.createPartitions), and the topic metadata that results. No I/O.

use std::collections::HashSet;

use thiserror::Error;

use crate::error_code::ResponseError;

use crate::store::placement::{self, Scheme};
use crate::store::topics::{AddedPartitions, LimitError, TopicMeta};

/// A refusal of one topic of a CreatePartitions request; `code` is what Kafka answers.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CreatePartitionsError {
    /// Kafka's ControllerApis answers every repeated name once, before anything else.
    #[error("Duplicate topic name.")]
    DuplicateTopic,
    /// Kafka answers it without a message.
    #[error("This server does not host this topic-partition.")]
    UnknownTopic,
    #[error("Topic already has {current} partition(s).")]
    AlreadyHas { current: i32 },
    #[error("The topic {topic} currently has {current} partition(s); {requested} would not be an increase.")]
    NotAnIncrease { topic: String, current: i32, requested: i32 },
    #[error("Attempted to add {additional} additional partition(s), but only {given} assignment(s) were specified.")]
    AssignmentCount { additional: i32, given: usize },
    /// CreateTopics: an assignment of more than one replica, answered as a replication factor
    /// other than 1 is (the topic's first partitions have no "previous" ones to compare with).
    #[error("Replication factor must be 1 on kaas, got {0}.")]
    CreationReplicationFactor(usize),
    /// CreateTopics: the assignments' partition indexes must be 0..n, each once.
    #[error("partitions should be a consecutive 0-based integer sequence")]
    NotConsecutive,
    #[error("The manual partition assignment includes an empty replica list.")]
    EmptyAssignment,
    #[error("The manual partition assignment includes broker {0}, but no such broker is registered.")]
    UnregisteredBroker(i32),
    #[error("The manual partition assignment includes the broker {0} more than once.")]
    DuplicateBroker(i32),
    /// kaas keeps one copy of every partition (on the shared disk): replication factor 1.
    #[error(
        "The manual partition assignment includes a partition with {0} replica(s), but this is not consistent \
         with previous partitions, which have 1 replica(s)."
    )]
    ReplicationFactor(usize),
    /// kaas places partitions on brokers itself (rendezvous hashing over the live brokers); an
    /// assignment is honoured only where it names the broker placement picks.
    #[error(
        "kaas places partitions on brokers itself: partition {partition} would be led by broker {placed}, not by \
         broker {asked}."
    )]
    NotPlacedThere { partition: i32, asked: i32, placed: i32 },
    /// Kafka would grow them; kaas's coordinators hash onto a fixed number of them (50 offsets
    /// partitions, one transaction-state partition per shard), so they cannot grow here.
    #[error("The partitions of internal topic {0} are fixed on kaas (its coordinators hash onto them).")]
    InternalTopic(String),
    #[error("{0}")]
    Limit(LimitError),
}

impl CreatePartitionsError {
    /// The answer's error message, as Kafka's controller gives it (none for an unknown topic).
    pub fn message(&self) -> Option<String> {
        match self {
            CreatePartitionsError::UnknownTopic => None,
            e => Some(e.to_string()),
        }
    }

    pub fn code(&self) -> i16 {
        use CreatePartitionsError::*;
        match self {
            DuplicateTopic | InternalTopic(_) => ResponseError::InvalidRequest.code(),
            CreationReplicationFactor(_) => ResponseError::InvalidReplicationFactor.code(),
            UnknownTopic => ResponseError::UnknownTopicOrPartition.code(),
            AlreadyHas { .. } | NotAnIncrease { .. } => ResponseError::InvalidPartitions.code(),
            AssignmentCount { .. }
            | NotConsecutive
            | EmptyAssignment
            | UnregisteredBroker(_)
            | DuplicateBroker(_)
            | ReplicationFactor(_)
            | NotPlacedThere { .. } => ResponseError::InvalidReplicaAssignment.code(),
            Limit(e) => e.code(),
        }
    }
}

/// The names that occur more than once in one request (each answered once with INVALID_REQUEST,
/// and none of their entries is applied).
pub fn duplicate_topics<'a>(names: impl IntoIterator<Item = &'a str>) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut repeated = HashSet::new();
    for n in names {
        if !seen.insert(n) {
            repeated.insert(n.to_string());
        }
    }
    repeated
}

/// Kafka's internal topics (shown in Metadata, served by the coordinators) cannot grow on kaas.
pub fn check_not_internal(topic: &str) -> Result<(), CreatePartitionsError> {
    if crate::store::topics::is_internal(topic) {
        return Err(CreatePartitionsError::InternalTopic(topic.to_string()));
    }
    Ok(())
}

/// The new count must be larger than the current one; returns how many partitions are added.
pub fn partitions_to_add(topic: &str, current: i32, requested: i32) -> Result<i32, CreatePartitionsError> {
    if requested == current {
        return Err(CreatePartitionsError::AlreadyHas { current });
    }
    if requested < current {
        return Err(CreatePartitionsError::NotAnIncrease { topic: topic.to_string(), current, requested });
    }
    Ok(requested - current)
}

/// A manual assignment (one broker list per new partition, `current` being the first new one):
/// checked as Kafka checks it (count, empty list, broker registered, duplicate, replication
/// factor), then against kaas's placement over the `live` brokers.
pub fn check_assignments(
    topic: &str,
    scheme: Scheme,
    current: i32,
    additional: i32,
    assignments: &[Vec<i32>],
    live: &[i32],
) -> Result<(), CreatePartitionsError> {
    if usize::try_from(additional).ok() != Some(assignments.len()) {
        return Err(CreatePartitionsError::AssignmentCount { additional, given: assignments.len() });
    }
    for (partition, brokers) in (current..).zip(assignments) {
        let mut sorted = brokers.clone();
        sorted.sort_unstable();
        let Some(&asked) = sorted.first() else {
            return Err(CreatePartitionsError::EmptyAssignment);
        };
        // In id order, as Kafka reports them: an unknown broker, then one named twice.
        let mut previous = None;
        for b in &sorted {
            if !live.contains(b) {
                return Err(CreatePartitionsError::UnregisteredBroker(*b));
            }
            if previous == Some(*b) {
                return Err(CreatePartitionsError::DuplicateBroker(*b));
            }
            previous = Some(*b);
        }
        if sorted.len() != 1 {
            return Err(CreatePartitionsError::ReplicationFactor(sorted.len()));
        }
        match placement::partition_leader(scheme, topic, partition, live, live) {
            Some(placed) if placed != asked => {
                return Err(CreatePartitionsError::NotPlacedThere { partition, asked, placed });
            }
            _ => {}
        }
    }
    Ok(())
}

/// The manual assignment of a CreateTopics request (`(partition index, brokers)` in request
/// order), checked as Kafka's controller checks it: the indexes are 0..n in any order, each
/// once; then every
/// list as [`check_assignments`] checks those of new partitions. Returns the partition count.
pub fn check_creation_assignments(
    topic: &str,
    scheme: Scheme,
    assignments: &[(i32, Vec<i32>)],
    live: &[i32],
) -> Result<i32, CreatePartitionsError> {
    let mut sorted: Vec<&(i32, Vec<i32>)> = assignments.iter().collect();
    sorted.sort_by_key(|(p, _)| *p);
    if sorted.iter().enumerate().any(|(i, (p, _))| usize::try_from(*p).ok() != Some(i)) {
        return Err(CreatePartitionsError::NotConsecutive);
    }
    let count = i32::try_from(sorted.len()).map_err(|_| CreatePartitionsError::NotConsecutive)?;
    let lists: Vec<Vec<i32>> = sorted.iter().map(|(_, b)| b.clone()).collect();
    check_assignments(topic, scheme, 0, count, &lists, live).map_err(|e| match e {
        CreatePartitionsError::ReplicationFactor(n) => CreatePartitionsError::CreationReplicationFactor(n),
        e => e,
    })?;
    Ok(count)
}

/// The topic with `count` partitions: the new ones are first led by the brokers placement picks
/// among those `live` now (the existing ones keep the brokers of their own creation).
pub fn grown(meta: &TopicMeta, count: i32, live: &[i32]) -> TopicMeta {
    let mut out = meta.clone();
    if count > meta.partitions {
        out.added.push(AddedPartitions { from: meta.partitions, placed_on: live.to_vec() });
        out.partitions = count;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn meta(partitions: i32) -> TopicMeta {
        TopicMeta {
            name: "t".into(),
            id: uuid::Uuid::new_v4(),
            partitions,
            configs: BTreeMap::new(),
            placed_on: vec![0],
            added: vec![],
            placement: Scheme::RoundRobin,
            leases: crate::store::topics::LeaseNames::ById,
        }
    }

    #[test]
    fn a_repeated_topic_name_is_an_invalid_request() {
        let d = duplicate_topics(["a", "b", "a", "c", "a"]);
        assert_eq!(d, HashSet::from(["a".to_string()]));
        assert_eq!(CreatePartitionsError::DuplicateTopic.code(), ResponseError::InvalidRequest.code());
        assert_eq!(CreatePartitionsError::DuplicateTopic.to_string(), "Duplicate topic name.");
        assert!(duplicate_topics(["a", "b"]).is_empty());
    }

    #[test]
    fn the_same_count_is_invalid_partitions() {
        let e = partitions_to_add("t", 3, 3).unwrap_err();
        assert_eq!((e.code(), e.to_string().as_str()), (37, "Topic already has 3 partition(s)."));
    }

    #[test]
    fn a_smaller_count_is_invalid_partitions() {
        for requested in [1, 0, -1, i32::MIN] {
            let e = partitions_to_add("t", 3, requested).unwrap_err();
            assert_eq!(e.code(), ResponseError::InvalidPartitions.code());
            assert_eq!(
                e.to_string(),
                format!("The topic t currently has 3 partition(s); {requested} would not be an increase.")
            );
        }
    }

    #[test]
    fn a_larger_count_adds_the_difference() {
        assert_eq!(partitions_to_add("t", 3, 5), Ok(2));
        assert_eq!(partitions_to_add("t", 1, i32::MAX), Ok(i32::MAX - 1));
    }

    #[test]
    fn an_unknown_topic_is_unknown_topic_or_partition() {
        assert_eq!(CreatePartitionsError::UnknownTopic.code(), ResponseError::UnknownTopicOrPartition.code());
        assert_eq!(CreatePartitionsError::UnknownTopic.message(), None, "Kafka sends no message");
        assert_eq!(CreatePartitionsError::DuplicateTopic.message().as_deref(), Some("Duplicate topic name."));
    }

    #[test]
    fn assignments_must_cover_every_new_partition() {
        let e = check_assignments("t", Scheme::RoundRobin, 1, 2, &[vec![0]], &[0]).unwrap_err();
        assert_eq!(e, CreatePartitionsError::AssignmentCount { additional: 2, given: 1 });
        assert_eq!(e.code(), ResponseError::InvalidReplicaAssignment.code());
        assert_eq!(
            e.to_string(),
            "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."
        );
    }

    #[test]
    fn an_empty_assignment_is_invalid_replica_assignment() {
        let e = check_assignments("t", Scheme::RoundRobin, 1, 1, &[vec![]], &[0]).unwrap_err();
        assert_eq!((e.clone(), e.code()), (CreatePartitionsError::EmptyAssignment, 39));
    }

    #[test]
    fn a_broker_that_does_not_exist_is_invalid_replica_assignment() {
        let e = check_assignments("t", Scheme::RoundRobin, 1, 1, &[vec![7]], &[0]).unwrap_err();
        assert_eq!(e, CreatePartitionsError::UnregisteredBroker(7));
        assert_eq!(e.code(), ResponseError::InvalidReplicaAssignment.code());
        assert_eq!(
            e.to_string(),
            "The manual partition assignment includes broker 7, but no such broker is registered."
        );
    }

    #[test]
    fn a_broker_named_twice_is_invalid_replica_assignment() {
        let e = check_assignments("t", Scheme::RoundRobin, 1, 1, &[vec![0, 0]], &[0]).unwrap_err();
        assert_eq!((e.clone(), e.code()), (CreatePartitionsError::DuplicateBroker(0), 39));
    }

    #[test]
    fn more_than_one_replica_is_invalid_replica_assignment() {
        let e = check_assignments("t", Scheme::RoundRobin, 1, 1, &[vec![0, 1]], &[0, 1]).unwrap_err();
        assert_eq!((e.clone(), e.code()), (CreatePartitionsError::ReplicationFactor(2), 39));
    }

    #[test]
    fn an_assignment_is_honoured_only_where_placement_agrees() {
        let live = [0, 1];
        let placed: Vec<i32> =
            (1..3).map(|p| placement::partition_leader(Scheme::RoundRobin, "t", p, &live, &live).unwrap()).collect();
        let agreeing: Vec<Vec<i32>> = placed.iter().map(|b| vec![*b]).collect();
        assert_eq!(check_assignments("t", Scheme::RoundRobin, 1, 2, &agreeing, &live), Ok(()));
        let other = if placed[0] == 0 { 1 } else { 0 };
        let e = check_assignments("t", Scheme::RoundRobin, 1, 2, &[vec![other], vec![placed[1]]], &live).unwrap_err();
        assert_eq!(e, CreatePartitionsError::NotPlacedThere { partition: 1, asked: other, placed: placed[0] });
        assert_eq!(e.code(), ResponseError::InvalidReplicaAssignment.code());
        // A single broker leads everything: assigning it is always honoured.
        assert_eq!(check_assignments("t", Scheme::RoundRobin, 1, 3, &[vec![0], vec![0], vec![0]], &[0]), Ok(()));
    }

    #[test]
    fn creation_assignments_must_number_partitions_from_zero() {
        let one = |p: i32| (p, vec![0]);
        for bad in [vec![one(0), one(2)], vec![one(1), one(2)], vec![one(0), one(0)], vec![one(-1), one(0)]] {
            let e = check_creation_assignments("t", Scheme::RoundRobin, &bad, &[0]).unwrap_err();
            assert_eq!((e.clone(), e.code()), (CreatePartitionsError::NotConsecutive, 39), "{bad:?}");
            assert_eq!(e.to_string(), "partitions should be a consecutive 0-based integer sequence");
        }
        assert_eq!(check_creation_assignments("t", Scheme::RoundRobin, &[one(0), one(1), one(2)], &[0]), Ok(3));
        assert_eq!(check_creation_assignments("t", Scheme::RoundRobin, &[one(1), one(0)], &[0]), Ok(2), "any order");
    }

    #[test]
    fn creation_assignments_are_checked_as_new_partitions_are() {
        let e = check_creation_assignments("t", Scheme::RoundRobin, &[(0, vec![0]), (1, vec![7])], &[0]).unwrap_err();
        assert_eq!(e, CreatePartitionsError::UnregisteredBroker(7));
        let e = check_creation_assignments("t", Scheme::RoundRobin, &[(0, vec![])], &[0]).unwrap_err();
        assert_eq!(e, CreatePartitionsError::EmptyAssignment);
        let e = check_creation_assignments("t", Scheme::RoundRobin, &[(0, vec![0, 1, 2])], &[0, 1, 2]).unwrap_err();
        assert_eq!((e.code(), e.to_string().as_str()), (38, "Replication factor must be 1 on kaas, got 3."));
    }

    #[test]
    fn the_broker_partition_limit_is_a_policy_violation() {
        let e = CreatePartitionsError::Limit(LimitError::BrokerLimit { requested: 2, total: 11, max: 10 });
        assert_eq!(e.code(), ResponseError::PolicyViolation.code());
    }

    #[test]
    fn internal_topics_cannot_grow() {
        for name in ["__consumer_offsets", "__transaction_state"] {
            let e = check_not_internal(name).unwrap_err();
            assert_eq!((e.code(), e.message().is_some()), (ResponseError::InvalidRequest.code(), true));
        }
        assert_eq!(check_not_internal("__consumer_offsets2"), Ok(()));
        assert_eq!(check_not_internal("t"), Ok(()));
    }

    #[test]
    fn new_partitions_are_placed_among_the_brokers_live_now() {
        let m = meta(2);
        let g = grown(&m, 5, &[0, 1]);
        assert_eq!(g.partitions, 5);
        assert_eq!(g.added, vec![AddedPartitions { from: 2, placed_on: vec![0, 1] }]);
        assert_eq!((g.placed_on_for(1), g.placed_on_for(2), g.placed_on_for(4)), (&[0][..], &[0, 1][..], &[0, 1][..]));
        let again = grown(&g, 6, &[1]);
        assert_eq!((again.placed_on_for(4), again.placed_on_for(5)), (&[0, 1][..], &[1][..]));
        assert_eq!(grown(&m, 2, &[0, 1]), m, "no growth, no change");
        assert_eq!((g.id, g.configs), (m.id, m.configs), "the topic id and configs stay");
    }
}
