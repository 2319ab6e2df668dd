//! DescribeQuorum on a shared-disk cluster. Apache Kafka answers it from the KRaft leader of the
//! `__cluster_metadata` log (brokers forward it to the controller). kaas has no metadata log and
//! no election: every live broker (one holding its `brokers/<id>.lock`) reads the cluster's
//! metadata from the shared directory itself. So the truthful description is: every live broker
//! is a voter, none is an observer; the broker Metadata and DescribeCluster name as controller
//! (the lowest live node id) is the leader; nothing is replicated, so no offset exists (-1, as
//! Kafka reports an unknown offset) and no voter lags. Pure functions, no I/O.

/// The topic and partition Kafka's metadata quorum is (the Java admin client asks for these).
pub const METADATA_TOPIC: &str = "__cluster_metadata";
pub const METADATA_PARTITION: i32 = 0;

/// kaas is never elected, so the epoch never grows past this.
pub const LEADER_EPOCH: i32 = 0;

/// Kafka's value for an offset that does not exist (a replica with no known end offset, a leader
/// with no high watermark yet); kaas has no metadata log at all.
pub const NO_OFFSET: i64 = -1;

/// Kafka's value for a timestamp that never happened (a voter that never fetched).
pub const NEVER: i64 = -1;

/// One voter (or observer) as DescribeQuorum reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replica {
    pub node_id: i32,
    pub log_end_offset: i64,
    pub last_fetch_ms: i64,
    pub last_caught_up_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quorum {
    pub leader_id: i32,
    pub leader_epoch: i32,
    pub high_watermark: i64,
    pub voters: Vec<Replica>,
    pub observers: Vec<Replica>,
}

/// Whether a request names exactly the metadata partition, the one partition Kafka's quorum
/// answers for (KafkaRaftClient: otherwise each partition asked gets UNKNOWN_TOPIC_OR_PARTITION).
pub fn asks_for_metadata_partition(topics: &[(String, Vec<i32>)]) -> bool {
    matches!(topics, [(name, partitions)] if name == METADATA_TOPIC && partitions.as_slice() == [METADATA_PARTITION])
}

/// The quorum of `live` brokers (node ids) led by `leader`. As Kafka, the leader's own fetch and
/// caught-up times are `now_ms`; the other voters never fetch (they read the shared directory),
/// so theirs are NEVER. Voters are listed by node id, the leader first when it is the lowest.
pub fn describe(live: &[i32], leader: i32, now_ms: i64) -> Quorum {
    let mut ids: Vec<i32> = live.to_vec();
    if !ids.contains(&leader) {
        ids.push(leader);
    }
    ids.sort_unstable();
    ids.dedup();
    let voters = ids
        .into_iter()
        .map(|node_id| {
            let seen = if node_id == leader { now_ms } else { NEVER };
            Replica { node_id, log_end_offset: NO_OFFSET, last_fetch_ms: seen, last_caught_up_ms: seen }
        })
        .collect();
    Quorum { leader_id: leader, leader_epoch: LEADER_EPOCH, high_watermark: NO_OFFSET, voters, observers: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(topic: &str, partitions: &[i32]) -> Vec<(String, Vec<i32>)> {
        vec![(topic.to_string(), partitions.to_vec())]
    }

    #[test]
    fn only_the_metadata_partition_is_described() {
        assert!(asks_for_metadata_partition(&ask("__cluster_metadata", &[0])));
        assert!(!asks_for_metadata_partition(&ask("__cluster_metadata", &[1])));
        assert!(!asks_for_metadata_partition(&ask("__cluster_metadata", &[0, 0])));
        assert!(!asks_for_metadata_partition(&ask("other", &[0])));
        assert!(!asks_for_metadata_partition(&[]));
        let mut two = ask("__cluster_metadata", &[0]);
        two.extend(ask("__cluster_metadata", &[0]));
        assert!(!asks_for_metadata_partition(&two));
    }

    #[test]
    fn every_live_broker_is_a_voter_and_the_controller_leads() {
        let q = describe(&[3, 1, 2], 1, 1000);
        assert_eq!(q.leader_id, 1);
        assert_eq!(q.voters.iter().map(|r| r.node_id).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(q.observers.is_empty());
        assert_eq!(q.leader_epoch, LEADER_EPOCH);
    }

    #[test]
    fn the_leader_is_always_among_the_voters() {
        // The tool looks the leader up among the voters; a table that lost it still names it.
        let q = describe(&[], 7, 1000);
        assert_eq!(q.voters.iter().map(|r| r.node_id).collect::<Vec<_>>(), [7]);
    }

    #[test]
    fn nothing_is_replicated_so_no_offset_and_no_lag() {
        let q = describe(&[1, 2], 1, 1000);
        assert_eq!(q.high_watermark, NO_OFFSET);
        assert!(q.voters.iter().all(|r| r.log_end_offset == q.high_watermark));
        assert_eq!((q.voters[0].last_fetch_ms, q.voters[0].last_caught_up_ms), (1000, 1000), "the leader: now");
        assert_eq!((q.voters[1].last_fetch_ms, q.voters[1].last_caught_up_ms), (NEVER, NEVER), "never fetches");
    }
}
