//! Answers of the cluster-admin APIs that have nothing to change on a shared-disk cluster: one
//! copy of each partition, led by the broker holding its lock, so it is always its preferred
//! replica; no reassignments; no client quotas configured. Kafka's answers for that state, from
//! its controller (ReplicationControlManager, ClientQuotaControlManager).

use crate::error_code::ResponseError;

/// ElectLeaders' election types.
pub const ELECTION_PREFERRED: i8 = 0;
pub const ELECTION_UNCLEAN: i8 = 1;

/// One partition's ElectLeaders answer. `known`: the topic has that partition; `led`: a broker
/// holds its lock. The leader is the only replica, so nothing is ever elected: Kafka answers
/// ELECTION_NOT_NEEDED when the preferred (or, unclean, any) leader already leads, and when
/// none can lead PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE.
pub fn election_outcome(known: bool, led: bool, election_type: i8) -> ResponseError {
    if !known {
        return ResponseError::UnknownTopicOrPartition;
    }
    match (led, election_type) {
        (true, _) => ResponseError::ElectionNotNeeded,
        (false, ELECTION_UNCLEAN) => ResponseError::EligibleLeadersNotAvailable,
        (false, _) => ResponseError::PreferredLeaderNotAvailable,
    }
}

/// Whether an election type is one Kafka knows (INVALID_REQUEST otherwise).
pub fn valid_election_type(election_type: i8) -> bool {
    matches!(election_type, ELECTION_PREFERRED | ELECTION_UNCLEAN)
}

/// DescribeClientQuotas' filter components: entity type and match type as Kafka checks them.
/// Match types: 0 exact name (name required), 1 the default entity (no name), 2 any specified.
pub fn check_quota_filter(components: &[(String, i8, Option<String>)]) -> Result<(), String> {
    let mut seen = Vec::new();
    for (entity_type, match_type, name) in components {
        if !matches!(entity_type.as_str(), "user" | "client-id" | "ip") {
            return Err(format!("Custom entity type '{entity_type}' not supported"));
        }
        if seen.contains(&entity_type) {
            return Err(format!("Duplicate filter for entity type {entity_type}"));
        }
        seen.push(entity_type);
        match (match_type, name) {
            (0, Some(_)) | (1, None) | (2, None) => {}
            (0, None) => return Err(format!("Entity type {entity_type} exact match requires a name")),
            (1 | 2, Some(_)) => return Err(format!("Entity type {entity_type} match type {match_type} takes no name")),
            _ => return Err(format!("Unknown match type {match_type}")),
        }
    }
    Ok(())
}

/// Each topic's partition range on a page, and where the next page starts.
pub type Page = (Vec<(String, std::ops::Range<i32>)>, Option<(String, i32)>);

/// DescribeTopicPartitions' page: Kafka caps a response at this many partitions whatever the
/// client asks (`max.request.partition.size.limit`).
pub const MAX_PARTITIONS_PER_PAGE: i32 = 2000;

/// One page of DescribeTopicPartitions over `topics` (name, partition count; sorted by name):
/// from `cursor` (a topic and first partition; a topic not listed is INVALID_REQUEST), at most
/// `limit` partitions (capped as Kafka does). Returns each topic's partition range on this page
/// and where the next page starts, if anything is left.
pub fn partitions_page(topics: &[(String, i32)], cursor: Option<(&str, i32)>, limit: i32) -> Result<Page, String> {
    let mut left = limit.clamp(1, MAX_PARTITIONS_PER_PAGE);
    let (start_topic, mut first) = match cursor {
        Some((t, p)) => {
            let Some(i) = topics.iter().position(|(n, _)| n == t) else {
                return Err(format!("The cursor topic {t} is not among the topics asked about"));
            };
            (i, p.max(0))
        }
        None => (0, 0),
    };
    let mut page = Vec::new();
    for (name, count) in topics.iter().skip(start_topic) {
        if left == 0 {
            return Ok((page, Some((name.clone(), 0))));
        }
        let end = (*count).min(first.saturating_add(left));
        let from = first.min(end);
        page.push((name.clone(), from..end));
        left -= end - from;
        if end < *count {
            return Ok((page, Some((name.clone(), end))));
        }
        first = 0;
    }
    Ok((page, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_topic_partitions_pages_by_partition_count_with_a_cursor() {
        let topics = vec![("a".to_string(), 3), ("b".to_string(), 2), ("c".to_string(), 1)];
        let (page, next) = partitions_page(&topics, None, 4).unwrap();
        assert_eq!(page, vec![("a".into(), 0..3), ("b".into(), 0..1)]);
        assert_eq!(next, Some(("b".into(), 1)));
        let (page, next) = partitions_page(&topics, Some(("b", 1)), 4).unwrap();
        assert_eq!(page, vec![("b".into(), 1..2), ("c".into(), 0..1)]);
        assert_eq!(next, None);
        let (page, next) = partitions_page(&topics, None, 3).unwrap();
        assert_eq!((page, next), (vec![("a".into(), 0..3)], Some(("b".into(), 0))), "a full page ends at a topic");
        assert!(partitions_page(&topics, Some(("zz", 0)), 4).is_err(), "a cursor outside the topics asked");
        let (page, _) = partitions_page(&topics, None, i32::MAX).unwrap();
        assert_eq!(page.len(), 3, "capped at Kafka's 2000, which holds all of these");
    }

    #[test]
    fn a_led_partition_needs_no_election() {
        assert_eq!(election_outcome(true, true, ELECTION_PREFERRED), ResponseError::ElectionNotNeeded);
        assert_eq!(election_outcome(true, true, ELECTION_UNCLEAN), ResponseError::ElectionNotNeeded);
    }

    #[test]
    fn a_partition_nobody_leads_has_no_leader_to_elect() {
        assert_eq!(election_outcome(true, false, ELECTION_PREFERRED), ResponseError::PreferredLeaderNotAvailable);
        assert_eq!(election_outcome(true, false, ELECTION_UNCLEAN), ResponseError::EligibleLeadersNotAvailable);
    }

    #[test]
    fn an_unknown_partition_is_unknown() {
        assert_eq!(election_outcome(false, false, ELECTION_PREFERRED), ResponseError::UnknownTopicOrPartition);
        assert!(valid_election_type(0) && valid_election_type(1) && !valid_election_type(2));
    }

    #[test]
    fn quota_filters_are_checked_as_kafka_does() {
        let c = |t: &str, m: i8, n: Option<&str>| (t.to_string(), m, n.map(str::to_string));
        assert!(check_quota_filter(&[]).is_ok());
        assert!(check_quota_filter(&[c("user", 0, Some("alice")), c("client-id", 2, None)]).is_ok());
        assert!(check_quota_filter(&[c("user", 1, None)]).is_ok());
        assert!(check_quota_filter(&[c("group", 2, None)]).is_err(), "unknown entity type");
        assert!(check_quota_filter(&[c("user", 0, None)]).is_err(), "exact match without a name");
        assert!(check_quota_filter(&[c("user", 2, None), c("user", 1, None)]).is_err(), "duplicate entity type");
        assert!(check_quota_filter(&[c("ip", 7, None)]).is_err(), "unknown match type");
    }
}
