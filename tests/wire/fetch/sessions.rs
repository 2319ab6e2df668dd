//! KIP-227 incremental fetch sessions against the real binary: a full fetch with epoch 0 opens a
//! session; incremental fetches answer only partitions with new data (and still long-poll);
//! FETCH_SESSION_ID_NOT_FOUND (70), INVALID_FETCH_SESSION_EPOCH (71), ForgottenTopics, and
//! epoch -1 closing the session.

use crate::common;

use std::time::{Duration, Instant};

use common::{batch, create_topic, Broker, Client};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

const FETCH_VERSION: i16 = 12;

fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}

/// `n` one-record batches (non-idempotent batches of several records are refused).
fn produce(c: &mut Client, topic: &str, n: usize) {
    for _ in 0..n {
        produce_one(c, topic);
    }
}

fn produce_one(c: &mut Client, topic: &str) {
    let resp = common::produce_one(c, 9, None, name(topic), 0, batch(-1, -1, -1, 1, "v"));
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
}

/// A Fetch with session fields; `parts` are (topic, fetch offset) of partition 0.
fn fetch(c: &mut Client, id: i32, epoch: i32, parts: &[(&str, i64)], forget: &[&str], wait_ms: i32) -> FetchResponse {
    let mut req = FetchRequest::default();
    req.replica_id = BrokerId(-1);
    req.max_wait_ms = wait_ms;
    req.min_bytes = 1;
    req.max_bytes = 1 << 20;
    req.session_id = id;
    req.session_epoch = epoch;
    for (topic, offset) in parts {
        let mut p = FetchPartition::default();
        p.partition = 0;
        p.fetch_offset = *offset;
        p.partition_max_bytes = 1 << 20;
        p.log_start_offset = -1;
        p.current_leader_epoch = -1;
        let mut t = FetchTopic::default();
        t.topic = name(topic);
        t.partitions = vec![p];
        req.topics.push(t);
    }
    for topic in forget {
        let mut f = ForgottenTopic::default();
        f.topic = name(topic);
        f.partitions = vec![0];
        req.forgotten_topics_data.push(f);
    }
    c.call(ApiKey::Fetch, FETCH_VERSION, req)
}

/// (topic, partition, record bytes) the response carries.
fn answered(resp: &FetchResponse) -> Vec<(String, i32, usize)> {
    let mut out = Vec::new();
    for t in &resp.responses {
        for p in &t.partitions {
            assert_eq!(p.error_code, 0, "{}-{}", t.topic.0, p.partition_index);
            out.push((t.topic.0.to_string(), p.partition_index, p.records.as_ref().map_or(0, |r| r.len())));
        }
    }
    out
}

fn topics(resp: &FetchResponse) -> Vec<String> {
    answered(resp).into_iter().map(|(t, _, _)| t).collect()
}

#[test]
fn incremental_fetches_answer_only_partitions_that_changed() {
    let broker = Broker::start();
    let mut c = broker.client();
    for t in ["s1", "s2", "s3"] {
        create_topic(&mut c, t);
    }
    produce(&mut c, "s1", 3);

    // Epoch 0: a full fetch that opens a session; every partition is answered.
    let resp = fetch(&mut c, 0, 0, &[("s1", 0), ("s2", 0), ("s3", 0)], &[], 100);
    assert_eq!(resp.error_code, 0);
    let id = resp.session_id;
    assert_ne!(id, 0, "a session was created");
    let got = answered(&resp);
    assert_eq!(got.iter().map(|(t, _, _)| t.as_str()).collect::<Vec<_>>(), ["s1", "s2", "s3"]);
    assert!(got[0].2 > 0 && got[1].2 == 0 && got[2].2 == 0);

    // Epoch 1: the client moved s1 on; nothing is new, so nothing is answered, after the long poll.
    let started = Instant::now();
    let resp = fetch(&mut c, id, 1, &[("s1", 3)], &[], 300);
    assert_eq!((resp.error_code, resp.session_id), (0, id));
    assert!(resp.responses.is_empty(), "unchanged partitions are left out: {:?}", answered(&resp));
    assert!(started.elapsed() >= Duration::from_millis(250), "an incremental fetch long-polls like any");

    // Epoch 2: new data in s2 only; the request names no partition, the session has them all.
    produce(&mut c, "s2", 2);
    let resp = fetch(&mut c, id, 2, &[], &[], 1000);
    let got = answered(&resp);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].0.as_str(), got[0].1), ("s2", 0));
    assert!(got[0].2 > 0);

    // Epoch 3: s1 was read up to 3 by the session's cached offset; new data there is answered.
    produce(&mut c, "s1", 1);
    let resp = fetch(&mut c, id, 3, &[("s2", 2)], &[], 1000);
    assert_eq!(topics(&resp), ["s1"]);

    // An incremental request added to the session is answered on its first fetch.
    create_topic(&mut c, "s4");
    let resp = fetch(&mut c, id, 4, &[("s1", 4), ("s4", 0)], &[], 100);
    assert_eq!(topics(&resp), ["s4"]);
}

#[test]
fn unknown_session_id_and_wrong_epoch_are_errors_70_and_71() {
    let broker = Broker::start();
    let mut c = broker.client();
    create_topic(&mut c, "e1");
    let id = fetch(&mut c, 0, 0, &[("e1", 0)], &[], 10).session_id;
    assert_ne!(id, 0);

    let other = if id == i32::MAX { 1 } else { id + 1 };
    let resp = fetch(&mut c, other, 1, &[], &[], 10);
    assert_eq!((resp.error_code, resp.session_id), (70, 0));
    assert!(resp.responses.is_empty());

    let resp = fetch(&mut c, id, 5, &[], &[], 10);
    assert_eq!((resp.error_code, resp.session_id), (71, 0));
    assert!(resp.responses.is_empty());

    // The wrong epoch did not close the session: the expected one still works.
    let resp = fetch(&mut c, id, 1, &[], &[], 10);
    assert_eq!((resp.error_code, resp.session_id), (0, id));
}

#[test]
fn forgotten_topics_leave_the_session_and_final_epoch_closes_it() {
    let broker = Broker::start();
    let mut c = broker.client();
    for t in ["f1", "f2"] {
        create_topic(&mut c, t);
    }
    let id = fetch(&mut c, 0, 0, &[("f1", 0), ("f2", 0)], &[], 10).session_id;
    assert_ne!(id, 0);

    // f1 is forgotten: its new data is no longer answered; f2's is.
    let resp = fetch(&mut c, id, 1, &[], &["f1"], 10);
    assert_eq!(resp.error_code, 0);
    produce(&mut c, "f1", 2);
    produce(&mut c, "f2", 2);
    let resp = fetch(&mut c, id, 2, &[], &[], 1000);
    assert_eq!(topics(&resp), ["f2"]);

    // Epoch -1 with the id closes the session: a sessionless full fetch answers everything asked.
    let resp = fetch(&mut c, id, -1, &[("f1", 0)], &[], 10);
    assert_eq!((resp.error_code, resp.session_id), (0, 0));
    assert_eq!(topics(&resp), ["f1"]);
    assert_eq!(fetch(&mut c, id, 3, &[], &[], 10).error_code, 70);

    // A request without a session (id 0, epoch -1) is today's full fetch.
    let resp = fetch(&mut c, 0, -1, &[("f1", 0), ("f2", 0)], &[], 10);
    assert_eq!((resp.error_code, resp.session_id), (0, 0));
    assert_eq!(topics(&resp), ["f1", "f2"]);
}

#[test]
fn a_full_session_cache_answers_a_full_fetch_without_a_session() {
    let broker = Broker::start_with_env(&[("KAAS_MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS", "1")]);
    let mut c = broker.client();
    create_topic(&mut c, "c1");
    produce(&mut c, "c1", 1);
    let first = fetch(&mut c, 0, 0, &[("c1", 0)], &[], 10);
    assert_ne!(first.session_id, 0);
    // The only slot holds a session younger than the eviction time: no session, a full answer.
    let mut other = broker.client();
    let second = fetch(&mut other, 0, 0, &[("c1", 0)], &[], 10);
    assert_eq!((second.error_code, second.session_id), (0, 0));
    assert_eq!(answered(&second).len(), 1);
    assert!(answered(&second)[0].2 > 0);
    // The first session is still there.
    assert_eq!(fetch(&mut c, first.session_id, 1, &[], &[], 10).session_id, first.session_id);
}
