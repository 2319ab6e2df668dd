//! Topic names as Apache Kafka 4.4 takes them (checked against it with confluent-kafka's
//! AdminClient): a name of the full 249 characters is a topic like any other, through its
//! deletion and creation again; a name that differs from an existing topic only by '.' against
//! '_' is refused with INVALID_TOPIC_EXCEPTION ("collides with existing topic"), also after a
//! restart, and created once the other topic is gone; its auto-creation through Metadata
//! creates nothing and answers UNKNOWN_TOPIC_OR_PARTITION, as Kafka's Metadata does.

use super::create_topics_bounds::{create, metadata, produce};
use crate::common;

use common::Broker;

const INVALID_TOPIC_EXCEPTION: i16 = 17;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

#[test]
fn a_topic_name_of_249_characters_is_created_written_deleted_and_created_again() {
    let mut broker = Broker::start();
    let long = "n".repeat(249);
    let mut c = broker.client();
    assert_eq!(create(&mut c, &long, 2, &[]), (0, String::new()));
    assert_eq!(produce(&mut c, &long, 1), (0, 0));
    assert_eq!(produce(&mut c, &long, 1), (0, 1));
    common::delete_topic_named(&mut c, &long);
    assert_eq!(create(&mut c, &long, 2, &[]).0, 0, "created again after its deletion");
    assert_eq!(produce(&mut c, &long, 1), (0, 0), "a new topic, a new log");

    broker.crash_and_restart();
    let mut c = broker.client();
    assert_eq!(produce(&mut c, &long, 1), (0, 1));
    let (code, msg) = create(&mut c, &"n".repeat(250), 1, &[]);
    assert_eq!(code, INVALID_TOPIC_EXCEPTION);
    assert!(msg.ends_with("is longer than the max allowed length 249"), "{msg}");
}

#[test]
fn a_name_colliding_with_a_topic_by_dot_and_underscore_is_invalid_topic_exception() {
    let mut broker = Broker::start();
    let mut c = broker.client();
    assert_eq!(create(&mut c, "metrics.eu", 1, &[]).0, 0);
    let refused = (INVALID_TOPIC_EXCEPTION, "Topic 'metrics_eu' collides with existing topic: metrics.eu".to_string());
    assert_eq!(create(&mut c, "metrics_eu", 1, &[]), refused);
    // Auto-creation through Metadata creates nothing, and the answer is Kafka's
    // UNKNOWN_TOPIC_OR_PARTITION (its controller refuses the creation it started).
    assert_eq!(metadata(&mut c, "metrics_eu", true), UNKNOWN_TOPIC_OR_PARTITION);
    assert_eq!(metadata(&mut c, "metrics_eu", false), UNKNOWN_TOPIC_OR_PARTITION);
    // Kafka's internal topics count (kaas always has them).
    let internal = create(&mut c, "__consumer.offsets", 1, &[]);
    assert_eq!(internal.0, INVALID_TOPIC_EXCEPTION, "{internal:?}");

    broker.crash_and_restart();
    let mut c = broker.client();
    assert_eq!(create(&mut c, "metrics_eu", 1, &[]), refused);
    common::delete_topic_named(&mut c, "metrics.eu");
    assert_eq!(create(&mut c, "metrics_eu", 1, &[]).0, 0, "no collision once the other topic is gone");
    assert_eq!(produce(&mut c, "metrics_eu", 0), (0, 0));
}
