//! Three kaas brokers on one data directory form a cluster against the real binary:
//! Metadata lists the live brokers and spreads partition leaders over them; a non-leader answers
//! NOT_LEADER_OR_FOLLOWER; when a leader is killed -9 the others take its partitions over with
//! everything it acknowledged (an idempotent retry is still recognised as a duplicate); the
//! coordinators move too; a restarted broker rejoins and gets its share back.

use crate::common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::cluster::*;
use common::{batch, Broker, Client};
use kafka_protocol::messages::*;

#[test]
fn three_brokers_share_one_disk_and_take_over_a_killed_one() {
    let shared = tempfile::tempdir().expect("shared dir");
    let env = [("KAAS_CLUSTER_TICK_MS", TICK)];
    let mut brokers: Vec<Broker> = (1..=3).map(|id| Broker::start_member(shared.path(), id, &env)).collect();
    let all: BTreeSet<i32> = [1, 2, 3].into();
    wait_for(Duration::from_secs(10), "three live brokers", || {
        (metadata(&mut brokers[0].client()).0.keys().copied().collect::<BTreeSet<_>>() == all).then_some(())
    });
    create(&mut brokers[0].client());
    let (ports, leaders) = wait_for(Duration::from_secs(10), "every partition led", || settled(&brokers[0], &all));
    let leading: BTreeSet<i32> = leaders.values().copied().collect();
    assert!(leading.len() > 1, "leaders spread over the brokers: {leaders:?}");
    // Every broker tells the same story.
    for b in &brokers[1..] {
        assert_eq!(wait_for(Duration::from_secs(5), "the same leaders", || settled(b, &all)).1, leaders);
    }

    // Each partition takes writes at its leader only.
    let client_of = |node: i32| Client::connect(ports[&node]);
    let records: Vec<Bytes> = (0..PARTITIONS).map(|p| batch(1000 + i64::from(p), 0, 0, 3, "before")).collect();
    for p in 0..PARTITIONS {
        let leader = leaders[&p];
        assert_eq!(produce(&mut client_of(leader), p, records[p as usize].clone()), (0, 0), "partition {p}");
        let other = *all.iter().find(|n| **n != leader).expect("another broker");
        assert_eq!(produce(&mut client_of(other), p, batch(9, 0, 0, 1, "x")).0, NOT_LEADER_OR_FOLLOWER);
    }
    // The coordinators spread too: the transaction shards and the group coordinator.
    let coordinators =
        wait_for(Duration::from_secs(10), "every coordinator running", || coordinator_map(&brokers[0], &all));
    let running: BTreeSet<i32> = coordinators.values().copied().collect();
    assert!(running.len() > 1, "the coordinators spread over the brokers: {coordinators:?}");
    for b in &brokers[1..] {
        assert_eq!(coordinator_map(b, &all).as_ref(), Some(&coordinators), "one answer cluster-wide");
    }
    // A transactional id's state moves with its shard.
    let tx_node = coordinators["tx-0"];
    let (pid, epoch) = init_producer_id(&mut client_of(tx_node), "tx-0");

    // Kill the broker running tx-0's shard (it leads partitions too, or another leader if it leads none).
    let victim: i32 = if leading.contains(&tx_node) { tx_node } else { leaders[&0] };
    eprintln!("leaders {leaders:?}; coordinators {coordinators:?}; killing broker {victim}");
    let killed_at = Instant::now();
    brokers[(victim - 1) as usize].kill();
    let live: BTreeSet<i32> = all.iter().copied().filter(|n| *n != victim).collect();
    let survivor = &brokers[(*live.iter().next().expect("a survivor") - 1) as usize];
    let (_, after) = wait_for(Duration::from_secs(20), "the killed broker's partitions taken over", || {
        let (ports, leaders) = settled(survivor, &live)?;
        // Served, not just announced: the new leader answers a fetch with the data.
        leaders
            .iter()
            .all(|(p, l)| high_watermark(&mut Client::connect(ports[l]), *p) == (0, 3))
            .then_some(((), leaders))
    });
    let failover = killed_at.elapsed();
    eprintln!("failover: every partition served again {} ms after kill -9", failover.as_millis());
    // A moved partition has a new leader epoch, which consumers validate their position with.
    let (&moved_p, &new_leader) = after.iter().find(|(p, _)| leaders[*p] == victim).expect("a moved partition");
    let mut at_new = Client::connect(ports[&new_leader]);
    let lepoch = leader_epoch(&mut at_new, moved_p);
    assert!(lepoch > 0, "a takeover bumps the leader epoch");
    assert_eq!(epoch_end_offset(&mut at_new, moved_p, lepoch, 0), (0, 0, 3), "epoch 0 ends at the log end");
    assert_eq!(epoch_end_offset(&mut at_new, moved_p, lepoch - 1, 0).0, 74, "FENCED_LEADER_EPOCH");
    assert_eq!(epoch_end_offset(&mut at_new, moved_p, lepoch + 1, 0).0, 75, "UNKNOWN_LEADER_EPOCH");
    // What the first leader wrote keeps its epoch, 0.
    assert_eq!(last_stored_leader_epoch(&mut at_new, moved_p), 0);
    let moved = wait_for(Duration::from_secs(20), "the coordinators taken over", || coordinator_map(survivor, &live));
    eprintln!("every coordinator running again {} ms after kill -9: {moved:?}", killed_at.elapsed().as_millis());
    let bumped = init_producer_id(&mut client_of(moved["tx-0"]), "tx-0");
    assert_eq!(bumped, (pid, epoch + 1), "the new owner of the shard has its state");

    // What the dead broker acknowledged is there, and an idempotent retry of it is recognised.
    for (p, leader) in &after {
        let mut c = Client::connect(ports[leader]);
        assert_eq!(produce(&mut c, *p, records[*p as usize].clone()), (0, 0), "partition {p}: a retry is a duplicate");
        assert_eq!(high_watermark(&mut c, *p), (0, 3), "partition {p}: nothing written twice");
    }

    // The killed broker comes back (same node id) and gets its share back.
    brokers[(victim - 1) as usize] = Broker::start_member(shared.path(), victim, &env);
    // Placement is a function of the live brokers: the same leaders as before the kill.
    wait_for(Duration::from_secs(20), "the restarted broker leading its share again", || {
        let (_, now) = settled(&brokers[0], &all)?;
        (now == leaders).then_some(())
    });
    for (p, leader) in &leaders {
        let port = metadata(&mut brokers[0].client()).0[leader];
        assert_eq!(high_watermark(&mut Client::connect(port), *p), (0, 3), "partition {p} after the hand-back");
    }
    // The coordinators it ran come back to it too (handed over by their owners, state and all).
    wait_for(Duration::from_secs(20), "the coordinators handed back", || {
        (coordinator_map(&brokers[0], &all)? == coordinators).then_some(())
    });
    let port = metadata(&mut brokers[0].client()).0[&tx_node];
    assert_eq!(init_producer_id(&mut Client::connect(port), "tx-0"), (pid, epoch + 2), "handed back with its state");
    // Handed back, the partition has a third epoch, and what its leader appends now carries it.
    let port = metadata(&mut brokers[0].client()).0[&leaders[&moved_p]];
    let mut at_leader = Client::connect(port);
    let now_epoch = leader_epoch(&mut at_leader, moved_p);
    assert!(now_epoch > lepoch, "the hand-back bumps the epoch again");
    assert_eq!(produce(&mut at_leader, moved_p, batch(77, 0, 0, 1, "after")), (0, 3));
    assert_eq!(last_stored_leader_epoch(&mut at_leader, moved_p), now_epoch);
}

#[test]
fn an_epoch_bump_fences_the_zombie_on_a_partition_another_broker_leads() {
    let shared = tempfile::tempdir().expect("shared dir");
    let env = [("KAAS_CLUSTER_TICK_MS", TICK), ("KAAS_FENCE_POLL_INTERVAL_MS", "200")];
    let mut brokers: Vec<Broker> = (1..=2).map(|id| Broker::start_member(shared.path(), id, &env)).collect();
    let all: BTreeSet<i32> = [1, 2].into();
    wait_for(Duration::from_secs(10), "two live brokers", || {
        (metadata(&mut brokers[0].client()).0.keys().copied().collect::<BTreeSet<_>>() == all).then_some(())
    });
    create(&mut brokers[0].client());
    let (ports, leaders) = wait_for(Duration::from_secs(10), "every partition led", || settled(&brokers[0], &all));
    let coordinator_node = coordinator(&mut brokers[0].client(), "zombie", 1);
    let mut coordinator_client = Client::connect(ports[&coordinator_node]);
    // A partition led by the other broker: the bump reaches it only through the fence file.
    let (p, leader) =
        leaders.iter().find(|(_, l)| **l != coordinator_node).map(|(p, l)| (*p, *l)).expect("a partition elsewhere");
    let mut at_leader = Client::connect(ports[&leader]);

    let (pid, epoch) = init_producer_id(&mut coordinator_client, "zombie");
    assert_eq!(produce(&mut at_leader, p, batch(pid, epoch, 0, 1, "old session")), (0, 0));
    let bumped = init_producer_id(&mut coordinator_client, "zombie");
    assert_eq!(bumped, (pid, epoch + 1), "the new session bumps the epoch");
    let fenced_at = Instant::now();
    // The old session's next batch: accepted until the fence arrives, then refused for good.
    let mut seq = 1;
    let code = wait_for(Duration::from_secs(10), "the zombie fenced on the other broker", || {
        let (code, _) = produce(&mut at_leader, p, batch(pid, epoch, seq, 1, "zombie"));
        if code == 0 {
            seq += 1;
            return None;
        }
        Some(code)
    });
    eprintln!(
        "fence propagation: partition {p} on broker {leader} refused the old epoch {} ms after the bump on broker {coordinator_node}",
        fenced_at.elapsed().as_millis()
    );
    assert_eq!(code, 47, "INVALID_PRODUCER_EPOCH for an epoch below the fenced one (eos-rules 18)");

    // The leader dies before the new session wrote there: its log knows only the old epoch. The
    // coordinator's broker takes the partition over and still refuses the zombie.
    brokers[(leader - 1) as usize].kill();
    let survivor: BTreeSet<i32> = [coordinator_node].into();
    wait_for(Duration::from_secs(20), "the partition taken over", || {
        settled(&brokers[(coordinator_node - 1) as usize], &survivor)
    });
    let (code, _) = produce(&mut coordinator_client, p, batch(pid, epoch, seq, 1, "zombie after takeover"));
    assert_eq!(code, 47, "the fence survives the takeover");
    assert_eq!(produce(&mut coordinator_client, p, batch(pid, epoch + 1, 0, 1, "new session")).0, 0);
}

fn cluster_id(c: &mut Client) -> String {
    let mut req = MetadataRequest::default();
    req.topics = Some(vec![]);
    let resp: MetadataResponse = c.call(ApiKey::Metadata, 9, req);
    resp.cluster_id.map(|s| s.to_string()).unwrap_or_default()
}

#[test]
fn brokers_started_at_once_on_a_fresh_directory_form_one_cluster() {
    let shared = tempfile::tempdir().expect("shared dir");
    let env = [("KAAS_CLUSTER_TICK_MS", TICK)];
    // All three create the cluster's files at the same moment.
    let (path, env) = (shared.path(), &env);
    let brokers: Vec<Broker> = std::thread::scope(|s| {
        let started: Vec<_> = (1..=3).map(|id| s.spawn(move || Broker::start_member(path, id, env))).collect();
        started.into_iter().map(|h| h.join().expect("broker started")).collect()
    });
    let ids: BTreeSet<String> = brokers.iter().map(|b| cluster_id(&mut b.client())).collect();
    assert_eq!(ids.len(), 1, "one cluster id: {ids:?}");
    let all: BTreeSet<i32> = [1, 2, 3].into();
    wait_for(Duration::from_secs(10), "three live brokers", || {
        brokers
            .iter()
            .all(|b| metadata(&mut b.client()).0.keys().copied().collect::<BTreeSet<_>>() == all)
            .then_some(())
    });
    // Producer ids are unique cluster-wide: idempotent ones from every broker, transactional
    // ones from every shard, wherever it runs.
    let mut pids = BTreeSet::new();
    for b in &brokers {
        for _ in 0..3 {
            let mut req = InitProducerIdRequest::default();
            req.transactional_id = None;
            req.transaction_timeout_ms = 60_000;
            req.producer_id = ProducerId(-1);
            req.producer_epoch = -1;
            let resp: InitProducerIdResponse = b.client().call(ApiKey::InitProducerId, 4, req);
            assert_eq!(resp.error_code, 0);
            assert!(pids.insert(resp.producer_id.0), "producer id {} given twice", resp.producer_id.0);
        }
    }
    let ports = metadata(&mut brokers[0].client()).0;
    for key in (0..32).map(|i| format!("tx-{i}")) {
        // Brokers that started together still hand coordinators to each other for a moment:
        // NOT_COORDINATOR sends a client back to FindCoordinator, as here.
        let (pid, _) = wait_for(Duration::from_secs(10), "the transaction's coordinator", || {
            let node = coordinator(&mut brokers[0].client(), &key, 1);
            let port = ports.get(&node)?;
            let (code, ids) = try_init_producer_id(&mut Client::connect(*port), &key);
            (code == 0).then_some(ids)
        });
        assert!(pids.insert(pid), "producer id {pid} given twice ({key})");
    }
}

#[test]
fn a_paused_broker_keeps_its_partitions_so_there_is_never_a_second_writer() {
    let shared = tempfile::tempdir().expect("shared dir");
    let env = [("KAAS_CLUSTER_TICK_MS", TICK)];
    let brokers: Vec<Broker> = (1..=2).map(|id| Broker::start_member(shared.path(), id, &env)).collect();
    let all: BTreeSet<i32> = [1, 2].into();
    wait_for(Duration::from_secs(10), "two live brokers", || {
        (metadata(&mut brokers[0].client()).0.keys().copied().collect::<BTreeSet<_>>() == all).then_some(())
    });
    create(&mut brokers[0].client());
    let (ports, leaders) = wait_for(Duration::from_secs(10), "every partition led", || settled(&brokers[0], &all));
    let (p, _) = leaders.iter().find(|(_, l)| **l == 2).map(|(p, l)| (*p, *l)).expect("a partition on broker 2");
    let mut at_2 = Client::connect(ports[&2]);
    assert_eq!(produce(&mut at_2, p, batch(5, 0, 0, 1, "before")), (0, 0));

    // SIGSTOP shorter than broker_session_timeout_ms (6 s): ten ticks later broker 1 has not
    // taken the partition (its heartbeat has not expired yet), so nothing moves for a short pause.
    signal(brokers[1].pid(), "-STOP");
    std::thread::sleep(Duration::from_millis(2_000));
    let mut at_1 = brokers[0].client();
    let (_, now) = metadata(&mut at_1);
    assert_eq!(now.get(&p), Some(&2), "the paused broker still leads partition {p}");
    assert_eq!(produce(&mut at_1, p, batch(6, 0, 0, 1, "elsewhere")).0, NOT_LEADER_OR_FOLLOWER);

    // SIGCONT: it goes on where it stopped, with the same log.
    signal(brokers[1].pid(), "-CONT");
    assert_eq!(produce(&mut at_2, p, batch(5, 0, 1, 1, "after")), (0, 1));
    assert_eq!(high_watermark(&mut at_2, p), (0, 2));
}

#[test]
fn a_topic_a_peer_just_created_is_known_at_once() {
    let shared = tempfile::tempdir().expect("shared dir");
    // A long tick: the second broker has not read the topics directory when it is asked.
    let env = [("KAAS_CLUSTER_TICK_MS", "60000")];
    let brokers: Vec<Broker> = (1..=2).map(|id| Broker::start_member(shared.path(), id, &env)).collect();
    create(&mut brokers[0].client());
    // Metadata with auto-creation at the other broker: the topic, not an error and not a second
    // creation (Apache Kafka never answers TOPIC_ALREADY_EXISTS in Metadata).
    let mut t = kafka_protocol::messages::metadata_request::MetadataRequestTopic::default();
    t.name = Some(TopicName(kafka_protocol::protocol::StrBytes::from_static_str(TOPIC)));
    let mut req = MetadataRequest::default();
    req.topics = Some(vec![t]);
    req.allow_auto_topic_creation = true;
    let resp: MetadataResponse = brokers[1].client().call(ApiKey::Metadata, 9, req);
    assert_eq!(resp.topics[0].error_code, 0, "the topic as the other broker sees it");
    assert_eq!(resp.topics[0].partitions.len(), PARTITIONS as usize);
}

#[test]
fn a_topic_deleted_at_one_broker_is_removed_by_every_broker_that_led_a_share() {
    let shared = tempfile::tempdir().expect("shared dir");
    let env = [("KAAS_CLUSTER_TICK_MS", TICK)];
    let brokers: Vec<Broker> = (1..=2).map(|id| Broker::start_member(shared.path(), id, &env)).collect();
    let all: BTreeSet<i32> = [1, 2].into();
    wait_for(Duration::from_secs(10), "two live brokers", || {
        (metadata(&mut brokers[0].client()).0.keys().copied().collect::<BTreeSet<_>>() == all).then_some(())
    });
    create(&mut brokers[0].client());
    let (ports, leaders) = wait_for(Duration::from_secs(10), "every partition led", || settled(&brokers[0], &all));
    assert!(leaders.values().collect::<BTreeSet<_>>().len() == 2, "both brokers lead a share: {leaders:?}");
    for (p, l) in &leaders {
        assert_eq!(produce(&mut Client::connect(ports[l]), *p, batch(500 + i64::from(*p), 0, 0, 2, "d")), (0, 0));
    }
    let mut req = DeleteTopicsRequest::default();
    req.topic_names = vec![TopicName(kafka_protocol::protocol::StrBytes::from_static_str(TOPIC))];
    req.timeout_ms = 10_000;
    let resp: DeleteTopicsResponse = brokers[0].client().call(ApiKey::DeleteTopics, 5, req);
    assert_eq!(resp.responses[0].error_code, 0);
    // Each broker removes its share once its leaders stopped; nothing is left, nothing fails
    // (the brokers' logs hold no ERROR line, which the Broker checks when dropped).
    let topics_dir = shared.path().join("topics");
    wait_for(Duration::from_secs(10), "every partition directory removed", || {
        let left: Vec<String> = std::fs::read_dir(&topics_dir)
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        left.iter().all(|n| !n.starts_with(&format!("{TOPIC}-"))).then_some(())
    });
    assert!(!shared.path().join("__cluster").join("topics").join(format!("{TOPIC}.json")).exists());
}
