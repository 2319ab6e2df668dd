//! Kafka's internal topics against the real binary. kaas keeps group offsets and transaction
//! state in its coordinators, not in `__consumer_offsets` / `__transaction_state`, yet clients
//! see those topics as on Apache Kafka: in Metadata (by name and by topic id), as empty
//! partitions for ListOffsets and Fetch, and in a KIP-848 group's server-side regex, which
//! Apache Kafka 4.4 matches against internal topics too (its TopicRegexResolver; franz-go's
//! Test848RegexBrokerResolves relies on it).

use crate::common;

use common::{Broker, Client};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

const OFFSETS: &str = "__consumer_offsets";

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn metadata(c: &mut Client, name: Option<&str>, id: Uuid) -> metadata_response::MetadataResponseTopic {
    let mut t = MetadataRequestTopic::default();
    t.name = name.map(|n| TopicName(s(n)));
    t.topic_id = id;
    let mut req = MetadataRequest::default();
    req.topics = Some(vec![t]);
    let resp: MetadataResponse = c.call(ApiKey::Metadata, 12, req);
    resp.topics.into_iter().next().expect("one topic")
}

#[test]
fn internal_topics_are_found_by_id_and_read_as_empty_partitions() {
    let broker = Broker::start();
    let mut c = broker.client();
    let by_name = metadata(&mut c, Some(OFFSETS), Uuid::nil());
    assert_eq!((by_name.error_code, by_name.is_internal, by_name.partitions.len()), (0, true, 50));
    assert!(!by_name.topic_id.is_nil());
    let by_id = metadata(&mut c, None, by_name.topic_id);
    assert_eq!(by_id.error_code, 0, "an internal topic's id resolves (KIP-848 assignments name topics by id)");
    assert_eq!(by_id.name.as_ref().map(|n| n.0.as_str()), Some(OFFSETS));

    // ListOffsets: earliest and latest 0, a timestamp finds nothing, partition 50 does not exist.
    let mut t = ListOffsetsTopic::default();
    t.name = TopicName(s(OFFSETS));
    t.partitions = [(0, -2), (1, -1), (2, 0), (50, -1)]
        .into_iter()
        .map(|(p, ts)| {
            let mut lp = ListOffsetsPartition::default();
            lp.partition_index = p;
            lp.timestamp = ts;
            lp
        })
        .collect();
    let mut req = ListOffsetsRequest::default();
    req.replica_id = BrokerId(-1);
    req.topics = vec![t];
    let resp: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 7, req);
    let got: Vec<(i16, i64)> = resp.topics[0].partitions.iter().map(|p| (p.error_code, p.offset)).collect();
    assert_eq!(got, vec![(0, 0), (0, 0), (0, -1), (3, -1)]);

    // Fetch from 0: no error, no records; from 5: out of range.
    let mut t = FetchTopic::default();
    t.topic = TopicName(s(OFFSETS));
    t.partitions = [(0, 0), (1, 5)]
        .into_iter()
        .map(|(p, offset)| {
            let mut fp = FetchPartition::default();
            fp.partition = p;
            fp.fetch_offset = offset;
            fp.partition_max_bytes = 1 << 20;
            fp
        })
        .collect();
    let mut req = FetchRequest::default();
    req.replica_id = BrokerId(-1);
    req.max_wait_ms = 10;
    req.max_bytes = 1 << 20;
    req.topics = vec![t];
    let resp: FetchResponse = c.call(ApiKey::Fetch, 12, req);
    let parts = &resp.responses[0].partitions;
    assert_eq!((parts[0].error_code, parts[0].high_watermark), (0, 0));
    assert!(parts[0].records.as_ref().is_none_or(|r| r.is_empty()));
    assert_eq!(parts[1].error_code, 1, "OFFSET_OUT_OF_RANGE");
    assert!(!broker.log().contains("panicked"));
}

#[test]
fn a_consumer_group_regex_matches_internal_topics_as_apache_kafka_does() {
    let broker = Broker::start();
    let mut c = broker.client();
    let offsets_id = metadata(&mut c, Some(OFFSETS), Uuid::nil()).topic_id;
    let mut req = ConsumerGroupHeartbeatRequest::default();
    req.group_id = GroupId(s("regex-internal"));
    req.member_id = s("m1");
    req.member_epoch = 0;
    req.rebalance_timeout_ms = 30_000;
    req.subscribed_topic_regex = Some(s("__consumer_offs.*"));
    req.topic_partitions = Some(vec![]);
    let mut assigned = 0;
    let mut epoch = 0;
    // The group's topic image is refreshed about once a second.
    for _ in 0..50 {
        let mut r = req.clone();
        r.member_epoch = epoch;
        let resp: ConsumerGroupHeartbeatResponse = c.call(ApiKey::ConsumerGroupHeartbeat, 1, r);
        assert_eq!(resp.error_code, 0, "{:?}", resp.error_message);
        epoch = resp.member_epoch;
        if let Some(a) = &resp.assignment {
            assert!(a.topic_partitions.iter().all(|tp| tp.topic_id == offsets_id), "only the internal topic matches");
            assigned = a.topic_partitions.iter().map(|tp| tp.partitions.len()).sum();
            if assigned > 0 {
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(assigned, 50, "every __consumer_offsets partition goes to the one member");
    assert!(!broker.log().contains("panicked"));
}
