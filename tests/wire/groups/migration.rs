//! KIP-848 online migration between the classic and the consumer group protocols on the wire,
//! against the real binary (store::group::migration): an Empty classic group with committed
//! offsets becomes a consumer group on the first ConsumerGroupHeartbeat and keeps its offsets
//! (rule 1, whatever `group_consumer_migration_policy` says); a classic group with members is not
//! upgraded when the policy disables it (GROUP_ID_NOT_FOUND and Kafka's message, rule 2); a
//! classic JoinGroup of another protocol type on a consumer group with members is
//! INCONSISTENT_GROUP_PROTOCOL (rule 4), and once it is Empty the group becomes classic again with
//! its offsets (rule 3). Mixed mode itself is in tests/wire/groups/mixed_protocols.rs.

use crate::common;

use common::groups::{classic_leave, consumer_leave, group_type, join_request, start_with_topic, str_bytes as s};
use common::{Broker, Client};
use kafka_protocol::messages::offset_fetch_request::{OffsetFetchRequestGroup, OffsetFetchRequestTopics};
use kafka_protocol::messages::*;

const TOPIC: &str = "tmig";
const GROUP_ID_NOT_FOUND: i16 = 69;
const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;

fn start(policy: &str) -> (Broker, Client) {
    start_with_topic(
        &[("KAAS_GROUP_INITIAL_REBALANCE_DELAY_MS", "0"), ("KAAS_GROUP_CONSUMER_MIGRATION_POLICY", policy)],
        TOPIC,
    )
}

/// A classic consumer joins `group` (JoinGroup v3: no MEMBER_ID_REQUIRED round) and syncs.
fn classic_join(c: &mut Client, group: &str, protocol_type: &str) -> (i16, String, i32) {
    let j: JoinGroupResponse = c.call(ApiKey::JoinGroup, 3, join_request(group, "", protocol_type, Vec::new()));
    if j.error_code != 0 {
        return (j.error_code, String::new(), -1);
    }
    let mut sync = SyncGroupRequest::default();
    sync.group_id = GroupId(s(group));
    sync.generation_id = j.generation_id;
    sync.member_id = j.member_id.clone();
    let resp: SyncGroupResponse = c.call(ApiKey::SyncGroup, 3, sync);
    assert_eq!(resp.error_code, 0);
    (0, j.member_id.to_string(), j.generation_id)
}

fn commit(c: &mut Client, group: &str, member: &str, generation: i32, offset: i64) -> i16 {
    common::groups::commit(c, group, TOPIC, member, generation, offset)
}

fn committed(c: &mut Client, group: &str) -> i64 {
    let mut t = OffsetFetchRequestTopics::default();
    t.name = TopicName(s(TOPIC));
    t.partition_indexes = vec![0];
    let mut g = OffsetFetchRequestGroup::default();
    g.group_id = GroupId(s(group));
    g.member_epoch = -1;
    g.topics = Some(vec![t]);
    let mut req = OffsetFetchRequest::default();
    req.groups = vec![g];
    let resp: OffsetFetchResponse = c.call(ApiKey::OffsetFetch, 8, req);
    assert_eq!(resp.groups[0].error_code, 0);
    resp.groups[0].topics[0].partitions[0].committed_offset
}

fn consumer_join(c: &mut Client, group: &str, member: &str) -> ConsumerGroupHeartbeatResponse {
    let mut req = ConsumerGroupHeartbeatRequest::default();
    req.group_id = GroupId(s(group));
    req.member_id = s(member);
    req.member_epoch = 0;
    req.rebalance_timeout_ms = 30_000;
    req.subscribed_topic_names = Some(vec![TopicName(s(TOPIC))]);
    req.topic_partitions = Some(vec![]);
    c.call(ApiKey::ConsumerGroupHeartbeat, 1, req)
}

#[test]
fn an_empty_classic_group_becomes_a_consumer_group_with_its_offsets_then_classic_again() {
    let (broker, mut c) = start("bidirectional");
    let (code, member, generation) = classic_join(&mut c, "gm", "consumer");
    assert_eq!((code, generation), (0, 1));
    assert_eq!(commit(&mut c, "gm", &member, generation, 42), 0);

    // Empty: the first heartbeat makes it a consumer group (rule 1); the offsets stay.
    classic_leave(&mut c, "gm", &member);
    let r = consumer_join(&mut c, "gm", "kip848-a");
    assert_eq!((r.error_code, r.member_epoch), (0, 1), "a new consumer group starts at epoch 0 and the join bumps it");
    assert_eq!(group_type(&mut c, "gm"), "consumer");
    assert_eq!(committed(&mut c, "gm"), 42);

    // A classic member of another protocol type cannot join it (rule 4; tests/wire/groups/mixed_protocols.rs
    // has the classic members of the `consumer` type).
    assert_eq!(classic_join(&mut c, "gm", "connect").0, INCONSISTENT_GROUP_PROTOCOL);
    // Once Empty, a classic JoinGroup makes it classic again (rule 3), generation 1, offsets kept.
    consumer_leave(&mut c, "gm", "kip848-a");
    let (code, _, generation) = classic_join(&mut c, "gm", "consumer");
    assert_eq!((code, generation), (0, 1));
    assert_eq!(group_type(&mut c, "gm"), "classic");
    assert_eq!(committed(&mut c, "gm"), 42);
    broker.finish();
}

#[test]
fn the_migration_policy_does_not_hold_back_an_empty_group() {
    let (broker, mut c) = start("disabled");
    let (_, member, generation) = classic_join(&mut c, "gd", "consumer");
    assert_eq!(commit(&mut c, "gd", &member, generation, 7), 0);
    // With members, the policy decides (rule 2): disabled, so no online upgrade.
    let r = consumer_join(&mut c, "gd", "kip848-b");
    assert_eq!(r.error_code, GROUP_ID_NOT_FOUND);
    assert_eq!(
        r.error_message.as_ref().map(|m| m.to_string()).as_deref(),
        Some("Cannot upgrade classic group gd to consumer group because online upgrade is disabled.")
    );
    classic_leave(&mut c, "gd", &member);
    assert_eq!(consumer_join(&mut c, "gd", "kip848-b").error_code, 0);
    assert_eq!(committed(&mut c, "gd"), 7);
    // A group of another protocol type in use is not a consumer group either.
    assert_eq!(classic_join(&mut c, "gc", "connect").0, 0);
    assert_eq!(consumer_join(&mut c, "gc", "kip848-c").error_code, GROUP_ID_NOT_FOUND);
    broker.finish();
}

#[test]
fn an_unknown_migration_policy_is_refused_at_start() {
    let bin = env!("CARGO_BIN_EXE_kaas");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(bin)
        .env("KAAS_GROUP_CONSUMER_MIGRATION_POLICY", "sideways")
        .args(["serve", "--data-dir"])
        .arg(dir.path())
        .args(["--listen", &format!("127.0.0.1:{}", common::free_port())])
        .output()
        .expect("run kaas");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("group_consumer_migration_policy"), "{err}");
}
