//! What requests get while partitions stop under them. At SIGTERM the broker closes its
//! connections before its leaders stop, in Apache Kafka's order (`SocketServer.stopProcessingRequests`
//! first), so an answer it still gives is a partition's ordinary answer. A partition handed to a
//! peer while requests reach it answers Kafka's NOT_LEADER_OR_FOLLOWER: never
//! UNKNOWN_TOPIC_OR_PARTITION for a topic that exists, and never an OffsetForLeaderEpoch answer
//! without an error and with an undefined end offset, which the Java consumer takes for a
//! truncation and resets its position for (SubscriptionState.maybeCompleteValidation).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{OffsetForLeaderPartition, OffsetForLeaderTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use crate::common;
use common::cluster::{metadata_of, wait_for, TICK};
use common::{batch, create_topic_with, Broker, Client};

const TOPIC: &str = "stopping";
const PARTITIONS: i32 = 64;

fn name() -> TopicName {
    TopicName(StrBytes::from_static_str(TOPIC))
}

/// Where the askers stand: whether to stop, and how many have had an answer.
#[derive(Clone, Default)]
struct Asking {
    stop: Arc<AtomicBool>,
    answered: Arc<AtomicUsize>,
}

impl Asking {
    /// Waits until every one of the five askers has had an answer (a loaded machine may take
    /// longer than any fixed pause to answer the first acks=all Produce of 64 partitions).
    fn wait_answered(&self) {
        wait_for(Duration::from_secs(30), "an answer to every asker", || {
            (self.answered.load(Ordering::Relaxed) == 5).then_some(())
        });
    }
}

/// Sends `req` over one connection, again and again, until the broker closes it or `stop` is
/// set; every partition's answer as `answers` reads it (error code, an offset).
fn until_closed<Req: Encodable, Resp: Decodable>(
    port: u16,
    key: ApiKey,
    version: i16,
    req: Req,
    asking: Asking,
    answers: impl Fn(&Resp) -> Vec<(i16, i64)>,
) -> Vec<(i16, i64)> {
    let stop = asking.stop;
    let mut client = Client::connect(port);
    let mut body = BytesMut::new();
    req.encode(&mut body, version).expect("body");
    let mut got = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let Some(mut buf) = client.try_call_raw(key, version, &body) else { break };
        let resp = Resp::decode(&mut buf, version).expect("response");
        assert_eq!(buf.remaining(), 0);
        if got.is_empty() {
            asking.answered.fetch_add(1, Ordering::Relaxed);
        }
        got.extend(answers(&resp));
    }
    got
}

/// Each answer of one partition (one topic for Metadata): error code, an offset.
type Answered = Vec<(i16, i64)>;

/// What each API was answered, per partition (per topic for Metadata).
struct Answers {
    epochs: Answered,
    fetches: Answered,
    offsets: Answered,
    produced: Answered,
    topics: Answered,
}

impl Answers {
    /// The answers of each API with the error code a partition led elsewhere gets:
    /// NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE for a topic (Metadata).
    fn by_api(&self) -> [(&'static str, &Answered, i16); 5] {
        [
            ("OffsetForLeaderEpoch", &self.epochs, 6),
            ("Fetch", &self.fetches, 6),
            ("ListOffsets", &self.offsets, 6),
            ("Produce", &self.produced, 6),
            ("Metadata", &self.topics, 5),
        ]
    }

    /// Asserts every answer is no error or one of `allowed(api's retriable code)`, that each API
    /// was answered, and that no OffsetForLeaderEpoch answer reads as a truncation.
    fn check(&self, allowed: impl Fn(i16) -> Vec<i16>) -> [usize; 5] {
        let apis = self.by_api();
        let retried = apis.map(|(_, a, code)| a.iter().filter(|(e, _)| *e == code).count());
        println!("answers: {:?}, of them retriable {retried:?}", apis.map(|(_, a, _)| a.len()));
        assert!(
            self.epochs.iter().all(|&(e, end)| e != 0 || end >= 1),
            "an OffsetForLeaderEpoch answer read as a truncation"
        );
        for (api, answers, code) in apis {
            let ok = allowed(code);
            assert!(
                answers.iter().all(|(e, _)| *e == 0 || ok.contains(e)),
                "{api}: {:?}",
                answers.iter().find(|a| a.0 != 0 && !ok.contains(&a.0))
            );
            assert!(!answers.is_empty(), "{api}: no answer");
        }
        retried
    }
}

/// Five connections asking the broker on `port` about every partition of the topic (one API
/// each) until it closes them or `stop` is set.
fn ask(port: u16, asking: &Asking) -> impl FnOnce() -> Answers {
    let s = [0; 5].map(|_| asking.clone());
    let [s0, s1, s2, s3, s4] = s;
    let askers = (
        std::thread::spawn(move || {
            until_closed(
                port,
                ApiKey::OffsetForLeaderEpoch,
                4,
                offset_for_leader_epoch(),
                s0,
                |r: &OffsetForLeaderEpochResponse| {
                    r.topics[0].partitions.iter().map(|e| (e.error_code, e.end_offset)).collect()
                },
            )
        }),
        std::thread::spawn(move || {
            until_closed(port, ApiKey::Fetch, 12, fetch(), s1, |r: &FetchResponse| {
                r.responses[0].partitions.iter().map(|p| (p.error_code, p.high_watermark)).collect()
            })
        }),
        std::thread::spawn(move || {
            let req = common::latest_offsets_request(name(), PARTITIONS);
            until_closed(port, ApiKey::ListOffsets, 7, req, s2, |r: &ListOffsetsResponse| {
                r.topics[0].partitions.iter().map(|p| (p.error_code, p.offset)).collect()
            })
        }),
        std::thread::spawn(move || {
            until_closed(port, ApiKey::Produce, 9, produce(), s3, |r: &ProduceResponse| {
                r.responses[0].partition_responses.iter().map(|p| (p.error_code, p.base_offset)).collect()
            })
        }),
        std::thread::spawn(move || {
            until_closed(port, ApiKey::Metadata, 9, metadata(), s4, |r: &MetadataResponse| {
                r.topics.iter().map(|t| (t.error_code, 0)).collect()
            })
        }),
    );
    move || Answers {
        epochs: askers.0.join().expect("asker"),
        fetches: askers.1.join().expect("asker"),
        offsets: askers.2.join().expect("asker"),
        produced: askers.3.join().expect("asker"),
        topics: askers.4.join().expect("asker"),
    }
}

/// Creates the topic through `broker` and writes one record to each partition at its leader.
fn fill(broker: &Broker) {
    create_topic_with(&mut broker.client(), TOPIC, PARTITIONS);
    let (ports, leaders) = wait_for(Duration::from_secs(20), "every partition led", || {
        let (ports, leaders) = metadata_of(&mut broker.client(), TOPIC);
        let led = leaders.len() == PARTITIONS as usize && leaders.values().all(|n| ports.contains_key(n));
        led.then_some((ports, leaders))
    });
    for (p, node) in leaders {
        let mut c = Client::connect(ports[&node]);
        let resp = common::produce_one(&mut c, 9, None, name(), p, batch(-1, -1, -1, 1, "v"));
        assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
    }
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
fn a_stopping_broker_closes_its_connections_before_its_leaders_stop() {
    let mut broker = Broker::start();
    fill(&broker);
    let asking = Asking::default();
    let answers = ask(broker.port, &asking);
    asking.wait_answered();
    std::thread::sleep(Duration::from_millis(200));
    broker.stop_clean(Duration::from_secs(30));
    // Every answer came from a running leader: no partition stopped under a connection.
    answers().check(|_| Vec::new());
}

#[test]
fn requests_to_leaders_handed_to_a_peer_answer_not_leader_or_follower() {
    let shared = tempfile::tempdir().expect("shared dir");
    let env = [("KAAS_CLUSTER_TICK_MS", TICK)];
    let first = Broker::start_member(shared.path(), 1, &env);
    let mut second = Broker::start_member(shared.path(), 2, &env);
    let port = first.port;
    let led_by_2 = |want: usize| {
        move || {
            let (_, leaders) = metadata_of(&mut Client::connect(port), TOPIC);
            (leaders.len() == PARTITIONS as usize && leaders.values().filter(|n| **n == 2).count() == want)
                .then_some(())
        }
    };
    wait_for(Duration::from_secs(20), "broker 1 sees broker 2", || {
        (metadata_of(&mut first.client(), "none").0.len() == 2).then_some(())
    });
    fill(&first);
    // Broker 2's partitions go to broker 1 while it is gone, and back when it returns: broker 1
    // then stops their leaders under the requests.
    second.kill();
    wait_for(Duration::from_secs(30), "every partition led by broker 1", led_by_2(0));
    let asking = Asking::default();
    let answers = ask(first.port, &asking);
    asking.wait_answered();
    second.restart_in_place();
    wait_for(Duration::from_secs(30), "half the partitions led by broker 2", led_by_2(PARTITIONS as usize / 2));
    std::thread::sleep(Duration::from_millis(300));
    asking.stop.store(true, Ordering::Relaxed);
    let retried = answers().check(|code| vec![code]);
    assert!(retried[..4].iter().all(|n| *n > 0), "no partition answered as led elsewhere: {retried:?}");
    second.finish();
    first.finish();
}
