//! The self-fence through the real binary: a broker that finds itself fenced (another broker took
//! over what it served while it was cut off from the shared disk: store::cluster::fence)
//! acknowledges nothing more after its fsync and stops: by default it re-executes itself in
//! place (`when_fenced = rejoin`), with `exit` it exits with code 75; its next start is a new
//! incarnation that takes its partitions at a new leader epoch and seals their files.

use crate::common;

use std::time::Duration;

use common::cluster::{self, leader_epoch, produce, NOT_LEADER_OR_FOLLOWER};
use common::{batch, Broker};

fn incarnation(data_dir: &std::path::Path, node: i32) -> u64 {
    let json: serde_json::Value = serde_json::from_slice(
        &std::fs::read(data_dir.join("__cluster/brokers").join(format!("{node}.json"))).unwrap(),
    )
    .unwrap();
    json["incarnation"].as_u64().expect("incarnation")
}

fn fence(data_dir: &std::path::Path, node: i32) {
    let dir = data_dir.join("__cluster/fenced");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{node}-{:016x}", incarnation(data_dir, node))), b"").unwrap();
}

/// A broker started with `env` (its ERROR lines matching `allowed` expected) serving the
/// cluster topic with `n` records of producer 9 on partition 0: it, its client, and partition
/// 0's leader epoch.
fn serving_records(env: &[(&str, &str)], allowed: &str, n: usize) -> (Broker, common::Client, i32) {
    let mut broker = Broker::start_with_env(env);
    broker.allow_log_errors(allowed);
    let mut c = broker.client();
    cluster::create(&mut c);
    assert_eq!(produce(&mut c, 0, batch(9, 0, 0, n, "before")).0, 0);
    let epoch = leader_epoch(&mut c, 0);
    (broker, c, epoch)
}

#[test]
fn a_fenced_broker_acknowledges_nothing_more_and_its_next_start_takes_over_at_a_new_epoch() {
    // A membership tick far away: the fence is found by the check after the fsync, not by the
    // tick that stops the broker (a_fenced_broker_stops_with_exit_code_75).
    let (mut broker, mut c, epoch_before) =
        serving_records(&[("KAAS_CLUSTER_TICK_MS", "600000")], "fenced, nothing more is acknowledged", 3);
    fence(&broker.data_dir(), 0);
    // Written and fsynced, then the fence check: never a success.
    assert_eq!(
        produce(&mut c, 0, batch(9, 0, 3, 3, "after")).0,
        NOT_LEADER_OR_FOLLOWER,
        "a fenced broker acknowledged a write"
    );
    assert!(broker.log().contains("was fenced by a broker that took over from it"), "{}", broker.log());
    // A fenced broker's stop is not clean: the next start is a new incarnation, not fenced, and
    // takes its partitions at a new epoch (its predecessor might still write the old epoch's files).
    broker.stop_clean(Duration::from_secs(15));
    broker.restart_in_place();
    let mut c = broker.client();
    assert_eq!(produce(&mut c, 0, batch(10, 0, 0, 2, "restarted")).0, 0);
    assert!(leader_epoch(&mut c, 0) > epoch_before, "the partition was taken at a new leader epoch");
    assert!(broker.log().contains("took the partition over"), "{}", broker.log());
    broker.finish();
}

#[test]
fn a_fenced_broker_stops_with_exit_code_75() {
    let mut broker = Broker::start_with_env(&[("KAAS_CLUSTER_TICK_MS", "100"), ("KAAS_WHEN_FENCED", "exit")]);
    broker.allow_log_errors("stopping: this broker");
    fence(&broker.data_dir(), 0);
    let status = broker.exited_within(Duration::from_secs(10)).expect("a fenced broker stops");
    assert_eq!(status.code(), Some(75), "{}", broker.log());
    assert!(broker.log().contains("was fenced by a broker that took over from it"), "{}", broker.log());
}

#[test]
fn a_clean_restart_keeps_the_leader_epoch_and_an_unclean_one_moves_it() {
    let mut broker = Broker::start();
    let mut c = broker.client();
    cluster::create(&mut c);
    assert_eq!(produce(&mut c, 0, batch(9, 0, 0, 1, "a")).0, 0);
    let first = leader_epoch(&mut c, 0);
    broker.stop_clean(Duration::from_secs(15));
    broker.restart_in_place();
    let mut c = broker.client();
    assert_eq!(leader_epoch(&mut c, 0), first, "a clean restart goes on with its files");
    broker.crash_and_restart();
    let mut c = broker.client();
    assert_eq!(leader_epoch(&mut c, 0), first + 1, "after kill -9 the old process is fenced and its files sealed");
    assert_eq!(produce(&mut c, 0, batch(11, 0, 0, 1, "b")).0, 0);
    broker.finish();
}

#[test]
fn a_fenced_broker_rejoins_in_place_as_a_new_incarnation() {
    let (mut broker, _, epoch_before) = serving_records(&[("KAAS_CLUSTER_TICK_MS", "100")], "stopping: this broker", 1);
    let data_dir = broker.data_dir();
    let fenced = incarnation(&data_dir, 0);
    fence(&data_dir, 0);
    // The same process (the exec keeps the pid) registers again under a new incarnation.
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while incarnation(&data_dir, 0) == fenced || common::api_versions_problem(broker.port).is_some() {
        assert!(std::time::Instant::now() < deadline, "no new incarnation serving:\n{}", broker.log());
        assert!(broker.is_running(), "a fenced broker with when_fenced = rejoin exited:\n{}", broker.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(broker.log().contains("rejoining the cluster as a new incarnation"), "{}", broker.log());
    let mut c = broker.client();
    assert_eq!(produce(&mut c, 0, batch(10, 0, 0, 1, "rejoined")).0, 0);
    assert!(leader_epoch(&mut c, 0) > epoch_before, "the fenced incarnation's epoch is not kept");
    broker.finish();
}

#[test]
fn a_fetch_with_another_leader_epoch_is_refused_before_its_offset_is_looked_at() {
    // Kafka's leader checks the consumer's current_leader_epoch first: a stale one is
    // FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH (both retried after a metadata
    // refresh), never OFFSET_OUT_OF_RANGE (which would reset the consumer's position).
    const FENCED_LEADER_EPOCH: i16 = 74;
    const UNKNOWN_LEADER_EPOCH: i16 = 75;
    let mut broker = Broker::start();
    let mut c = broker.client();
    cluster::create(&mut c);
    assert_eq!(produce(&mut c, 0, batch(9, 0, 0, 3, "a")).0, 0);
    broker.crash_and_restart();
    let mut c = broker.client();
    let epoch = leader_epoch(&mut c, 0);
    assert!(epoch >= 1, "an unclean restart moved the epoch");
    let fetch = |c: &mut common::Client, current: i32, offset: i64| {
        let mut req = common::fetch::fetch_request(cluster::TOPIC, 0, offset, 0);
        req.topics[0].partitions[0].current_leader_epoch = current;
        let resp: kafka_protocol::messages::FetchResponse = c.call(kafka_protocol::messages::ApiKey::Fetch, 12, req);
        resp.responses[0].partitions[0].error_code
    };
    assert_eq!(fetch(&mut c, epoch, 0), 0);
    assert_eq!(fetch(&mut c, -1, 0), 0, "no epoch: no check");
    assert_eq!(fetch(&mut c, epoch - 1, 0), FENCED_LEADER_EPOCH);
    assert_eq!(fetch(&mut c, epoch + 1, 1_000), UNKNOWN_LEADER_EPOCH, "not OFFSET_OUT_OF_RANGE");
    assert_eq!(fetch(&mut c, epoch, 1_000), 1, "the offset is checked once the epoch matches");
    broker.finish();
}
