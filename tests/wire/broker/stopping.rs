//! Requests that reach a partition while the broker stops (SIGTERM: its leaders stop before its
//! connections close) get Kafka's answer for a partition led elsewhere, NOT_LEADER_OR_FOLLOWER:
//! never UNKNOWN_TOPIC_OR_PARTITION for a topic that exists, and never an OffsetForLeaderEpoch
//! answer without an error and with an undefined end offset, which the Java consumer takes for a
//! truncation and resets its position for (SubscriptionState.maybeCompleteValidation). A
//! Metadata answer says LEADER_NOT_AVAILABLE for the topic then, never that it is unknown.

use std::time::Duration;

use bytes::{Buf, BytesMut};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{OffsetForLeaderPartition, OffsetForLeaderTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use crate::common;
use common::{batch, create_topic_with, Broker, Client};

const TOPIC: &str = "stopping";
const PARTITIONS: i32 = 64;

fn name() -> TopicName {
    TopicName(StrBytes::from_static_str(TOPIC))
}

/// Sends `req` over one connection, again and again, until the broker closes it; every
/// partition's answer as `answers` reads it (error code, an offset).
fn until_closed<Req: Encodable, Resp: Decodable>(
    port: u16,
    key: ApiKey,
    version: i16,
    req: Req,
    answers: impl Fn(&Resp) -> Vec<(i16, i64)>,
) -> Vec<(i16, i64)> {
    let mut client = Client::connect(port);
    let mut body = BytesMut::new();
    req.encode(&mut body, version).expect("body");
    let mut got = Vec::new();
    while let Some(mut buf) = client.try_call_raw(key, version, &body) {
        let resp = Resp::decode(&mut buf, version).expect("response");
        assert_eq!(buf.remaining(), 0);
        got.extend(answers(&resp));
    }
    got
}

fn offset_for_leader_epoch() -> OffsetForLeaderEpochRequest {
    let mut t = OffsetForLeaderTopic::default();
    t.topic = name();
    t.partitions = (0..PARTITIONS)
        .map(|p| {
            let mut part = OffsetForLeaderPartition::default();
            part.partition = p;
            part.current_leader_epoch = -1;
            part.leader_epoch = 0;
            part
        })
        .collect();
    let mut req = OffsetForLeaderEpochRequest::default();
    req.replica_id = BrokerId(-1);
    req.topics = vec![t];
    req
}

fn fetch() -> FetchRequest {
    let mut t = FetchTopic::default();
    t.topic = name();
    t.partitions = (0..PARTITIONS)
        .map(|p| {
            let mut fp = FetchPartition::default();
            fp.partition = p;
            fp.partition_max_bytes = 1 << 16;
            fp.current_leader_epoch = -1;
            fp.log_start_offset = -1;
            fp
        })
        .collect();
    let mut req = FetchRequest::default();
    req.replica_id = BrokerId(-1);
    req.max_bytes = 1 << 20;
    req.topics = vec![t];
    req
}

fn produce() -> ProduceRequest {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    let mut t = TopicProduceData::default();
    t.name = name();
    t.partition_data = (0..PARTITIONS)
        .map(|p| {
            let mut pd = PartitionProduceData::default();
            pd.index = p;
            pd.records = Some(batch(-1, -1, -1, 1, "v"));
            pd
        })
        .collect();
    let mut req = ProduceRequest::default();
    req.acks = -1;
    req.timeout_ms = 30_000;
    req.topic_data = vec![t];
    req
}

fn metadata() -> MetadataRequest {
    let mut t = kafka_protocol::messages::metadata_request::MetadataRequestTopic::default();
    t.name = Some(name());
    let mut req = MetadataRequest::default();
    req.topics = Some(vec![t]);
    req
}

#[test]
fn requests_to_stopping_leaders_answer_not_leader_or_follower() {
    let mut broker = Broker::start();
    let mut c = broker.client();
    create_topic_with(&mut c, TOPIC, PARTITIONS);
    for p in 0..PARTITIONS {
        let resp = common::produce_one(&mut c, 9, None, name(), p, batch(-1, -1, -1, 1, "v"));
        assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
    }
    let port = broker.port;
    let askers = [
        std::thread::spawn(move || {
            until_closed(
                port,
                ApiKey::OffsetForLeaderEpoch,
                4,
                offset_for_leader_epoch(),
                |r: &OffsetForLeaderEpochResponse| {
                    r.topics[0].partitions.iter().map(|e| (e.error_code, e.end_offset)).collect()
                },
            )
        }),
        std::thread::spawn(move || {
            until_closed(port, ApiKey::Fetch, 12, fetch(), |r: &FetchResponse| {
                r.responses[0].partitions.iter().map(|p| (p.error_code, p.high_watermark)).collect()
            })
        }),
        std::thread::spawn(move || {
            until_closed(
                port,
                ApiKey::ListOffsets,
                7,
                common::latest_offsets_request(name(), PARTITIONS),
                |r: &ListOffsetsResponse| r.topics[0].partitions.iter().map(|p| (p.error_code, p.offset)).collect(),
            )
        }),
        std::thread::spawn(move || {
            until_closed(port, ApiKey::Produce, 9, produce(), |r: &ProduceResponse| {
                r.responses[0].partition_responses.iter().map(|p| (p.error_code, p.base_offset)).collect()
            })
        }),
        std::thread::spawn(move || {
            until_closed(port, ApiKey::Metadata, 9, metadata(), |r: &MetadataResponse| {
                r.topics.iter().map(|t| (t.error_code, 0)).collect()
            })
        }),
    ];
    std::thread::sleep(Duration::from_millis(500));
    broker.stop_clean(Duration::from_secs(30));
    let [epochs, fetches, offsets, produced, topics] = askers.map(|t| t.join().expect("asker"));
    // NOT_LEADER_OR_FOLLOWER for a partition; LEADER_NOT_AVAILABLE for a topic (Metadata).
    let apis = [
        ("OffsetForLeaderEpoch", &epochs, 6),
        ("Fetch", &fetches, 6),
        ("ListOffsets", &offsets, 6),
        ("Produce", &produced, 6),
        ("Metadata", &topics, 5),
    ];
    let retried = apis.map(|(_, a, code)| a.iter().filter(|(e, _)| *e == code).count());
    println!("answers: {:?}, of them retriable {retried:?}", apis.map(|(_, a, _)| a.len()));
    assert!(epochs.iter().all(|&(e, end)| e != 0 || end >= 1), "an OffsetForLeaderEpoch answer read as a truncation");
    for (api, answers, code) in apis {
        assert!(
            answers.iter().all(|&(e, _)| e == 0 || e == code),
            "{api}: {:?}",
            answers.iter().find(|a| a.0 != 0 && a.0 != code)
        );
        assert!(!answers.is_empty(), "{api}: no answer before the broker closed");
    }
}
